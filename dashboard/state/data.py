"""The process-wide read-only data: the catalog and its validity grid (:class:`AppData`), loaded once per
process, and the rule arguments of the dashboard's parallel settings."""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass, field
from typing import Any, TYPE_CHECKING

import pandas as pd

from dashboard import frameworks, gpus, schema
from dashboard.state.choices import CATALOG_ENV, TP_CHOICES, VERSION_PARAMS

if TYPE_CHECKING:  # annotations only
    from dashboard.state.session import PlannerState


@dataclass(frozen=True)
class AppData:
    """Catalog and validity grid shared read-only by every session of one server process.

    Attributes
    ----------
    catalog : DataFrame
        One row per model, columns of :data:`dashboard.schema.COLUMN_NAMES`, indexed 0..n-1.
    path : str
        Where the catalog was read from (for the page footer and the report).
    model_ids : tuple[str, ...]
        ``catalog.model_id`` in catalog order.
    """

    catalog: pd.DataFrame
    path: str
    model_ids: tuple[str, ...]
    _records: dict[str, dict] = field(default_factory=dict, repr=False)
    _grids: dict[tuple, pd.DataFrame] = field(default_factory=dict, repr=False)
    _memo: dict[tuple, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def memo(self, key: tuple, build, maxsize: int = 64):
        """``build()`` once per ``key`` for the life of the process (read-only results, e.g. the
        heatmaps' cell frames); at most ``maxsize`` entries, oldest dropped. ``key`` must be hashable."""
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        value = build()
        with self._lock:
            if len(self._memo) >= maxsize:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = value
        return value

    def record(self, model_id: str) -> dict | None:
        """The catalog row of ``model_id`` as a plain dict (``None`` values for NA), or ``None``."""
        if model_id not in self._records:
            rows = self.catalog.loc[self.catalog["model_id"] == model_id]
            if rows.empty:
                return None
            rec = rows.iloc[0].to_dict()
            rec = {k: (None if _is_na(v) else v) for k, v in rec.items()}
            self._records[model_id] = rec
        return self._records[model_id]

    def grid(self, *, pp: int = 1, dp: int = 1, ep: int = 1, dp_attention: bool = False,
             vllm_version: str | None = None, sglang_version: str | None = None, frameworks=None,
             platform: str | None = None, device_name: str | None = None) -> pd.DataFrame:
        """Validity grid over the whole catalog x :data:`TP_CHOICES` x ``frameworks`` (default: every one).

        Each framework's part is computed by :func:`dashboard.rules.grid` once per distinct setting (see
        :func:`rule_args`: for vLLM the release ``vllm_version`` resolves to and EP on/off, for SGLang the
        release ``sglang_version`` resolves to; for all ``(pp, dp, ep, dp_attention)``) and kept for the life
        of the process (at most 64 parts; oldest dropped), so another vLLM or SGLang release computes only
        that framework's part, when first asked for. ``platform`` / ``device_name``: the GPU's (None: an H100);
        only the frameworks whose rules read it (``platform_keyed_rules``) get a part per GPU. Read-only:
        callers filter, never assign into it. Framework-major, then catalog order, then TP.
        """
        fws = tuple(schema.FRAMEWORKS if frameworks is None else frameworks)
        if not fws:
            raise ValueError("no frameworks given")
        keys = [part_key(fw, pp, dp, ep, dp_attention, vllm_version, sglang_version, platform=platform,
                         device_name=device_name) for fw in fws]
        if len(keys) == 1:
            return self._part(keys[0])
        return self.memo(("grid", *keys), lambda: _concat([self._part(k) for k in keys]), maxsize=64)

    def _part(self, key: tuple) -> pd.DataFrame:
        """One framework's grid for a :func:`part_key` (cached)."""
        return self._cached_part(key, lambda: self._grid_of(self.catalog, key))

    @staticmethod
    def _grid_of(catalog: pd.DataFrame, key: tuple) -> pd.DataFrame:
        """:func:`dashboard.rules.grid` of ``catalog`` for one :func:`part_key`."""
        from dashboard import rules  # imported lazily: the rules engine is a sibling module

        fw, kw = key[0], dict(key[1:])
        return rules.grid(catalog, tp_sizes=TP_CHOICES, frameworks=(fw,), **kw).reset_index(drop=True)

    def _cached_part(self, key: tuple, build) -> pd.DataFrame:
        """``build()`` once per ``key`` in this data's grid cache (at most 64 parts, oldest dropped)."""
        with self._lock:
            hit = self._grids.get(key)
        if hit is not None:
            return hit
        g = build()
        with self._lock:
            if len(self._grids) >= 64:
                self._grids.pop(next(iter(self._grids)))
            self._grids[key] = g
        return g


    def with_models(self, records: list[dict]) -> AppData:
        """This data plus ``records`` (catalog rows, e.g. from :func:`dashboard.addmodel.record_from_config`)
        as a new :class:`ExtendedAppData`; ``self`` is left untouched (it is shared by every session).

        A record whose ``model_id`` is already an added row replaces it (in place); one whose id is in the
        process-wide catalog is skipped (callers select that row instead). Only the added rows' validity
        grid is computed (:meth:`ExtendedAppData._part`); the process-wide grids are reused.
        """
        from dashboard.catalog import catalog_from_records

        base = self.base if isinstance(self, ExtendedAppData) else self
        known = set(base.model_ids)
        added: dict[str, dict] = {}
        if isinstance(self, ExtendedAppData):
            added = {str(r["model_id"]): r for r in self.extra_records}
        for rec in records:
            mid = str(rec["model_id"])
            if mid not in known:
                added[mid] = dict(rec)
        if not added:
            return self
        extra = catalog_from_records(list(added.values()))
        cat = pd.concat([base.catalog, extra], ignore_index=True)
        n = len(added)
        return ExtendedAppData(catalog=cat, path=f"{base.path} + {n} model{'s' if n != 1 else ''} added in this session",
                               model_ids=tuple(str(x) for x in cat["model_id"].tolist()), base=base, extra=extra,
                               extra_records=tuple(added.values()))

    @property
    def added_ids(self) -> tuple[str, ...]:
        """Ids of the models added in this session (``()`` for the process-wide data)."""
        return ()


@dataclass(frozen=True)
class ExtendedAppData(AppData):
    """One session's catalog: the process-wide :class:`AppData` (``base``, shared, never modified) plus
    rows added in the session (``extra``; see :meth:`AppData.with_models`).

    Its grids are the base's grid (cached for the process) with the added rows' grid below it, so adding a
    model computes the rules for that model only. Its memo (heatmap cells, plans) is its own.
    """

    base: AppData | None = None
    extra: pd.DataFrame | None = None
    extra_records: tuple[dict, ...] = ()

    @property
    def added_ids(self) -> tuple[str, ...]:
        return tuple(str(r["model_id"]) for r in self.extra_records)

    def _part(self, key: tuple) -> pd.DataFrame:
        """The shared grid's part plus the rules over the added rows only (cached per session)."""
        return self._cached_part(key, lambda: _concat([self.base._part(key), self._grid_of(self.extra, key)]))


def rule_args(framework: str, *, pp: int = 1, dp: int = 1, ep: int = 1, dp_attention: bool = False,
              vllm_version: str | None = None, sglang_version: str | None = None) -> dict[str, Any]:
    """Keyword arguments of :func:`dashboard.rules.check` / :func:`dashboard.rules.grid` for ``framework``
    under the dashboard's parallel settings.

    The dashboard has one EP control. For vLLM it means ``--enable-expert-parallel``: vLLM has no EP size
    of its own (its EP group spans every TP x DP rank), so any ``ep > 1`` turns the flag on and the rules
    get ``ep=1, expert_parallel=True``. The other frameworks get ``ep`` as the EP size. The frameworks of
    :data:`VERSION_PARAMS` get ``version=``: vLLM ``vllm_version``, SGLang ``sglang_version`` (``None`` or
    ``""``: the newest release run through the conformance harness); the others their current rules.
    """
    kw: dict[str, Any] = {"pp": int(pp), "dp": int(dp), "ep": int(ep), "dp_attention": bool(dp_attention)}
    fw = frameworks.get(framework)
    kw.update(fw.rule_ep(ep))
    if fw.version_param:
        kw["version"] = {"vllm_version": vllm_version, "sglang_version": sglang_version}[fw.version_param] or None
    return kw


def state_rule_args(state: PlannerState, framework: str) -> dict[str, Any]:
    """:func:`rule_args` of ``framework`` under ``state``'s PP / DP / EP / DP-attention and vLLM / SGLang
    versions, with the sidebar GPU's ``platform`` and ``device_name`` (:func:`state_gpu_args`) for
    :func:`dashboard.rules.check`."""
    return {**rule_args(framework, pp=state.pp, dp=state.dp, ep=state.ep, dp_attention=state.dp_attention,
                        **state_versions(state)), **state_gpu_args(state)}


def state_gpu_args(state: PlannerState) -> dict[str, Any]:
    """``{"platform": ..., "device_name": ...}`` of the sidebar GPU (:func:`dashboard.gpus.judged_on`): the
    platform the rules judge on and the name the GPU reports ("NVIDIA A10")."""
    return gpus.judged_on(state.gpu) if state.gpu else {"platform": None, "device_name": None}


def state_platform(state: PlannerState) -> str | None:
    """The platform id of the GPU ``state`` selects (:func:`dashboard.gpus.evidence_platform`: ``"cuda-sm90"`` for
    an H100, ``"unknown"`` for a card given by its memory, ``other:<GiB>``), None when none is selected."""
    if not state.gpu:
        return None
    try:
        return gpus.evidence_platform(state.gpu)
    except ValueError:
        return None


def state_versions(state: PlannerState) -> dict[str, str]:
    """``{"vllm_version": ..., "sglang_version": ...}``: the releases ``state`` selects (see
    :data:`VERSION_PARAMS`)."""
    return {p: getattr(state, p) for p in VERSION_PARAMS.values()}


def state_version(state: PlannerState, framework: str) -> str:
    """The release ``state`` selects for ``framework``; "" for frameworks whose rules are not keyed by release."""
    p = VERSION_PARAMS.get(framework)
    return getattr(state, p) if p else ""


def state_grid_args(state: PlannerState) -> dict[str, Any]:
    """Keyword arguments of :meth:`AppData.grid` for ``state`` (its parallel settings, versions and GPU platform).
    The process-wide grids are kept per platform, not per card: a message that prints the device names the
    platform's stand-in card there (``device_name`` None); :func:`state_rule_args` (one check) names the user's."""
    return {"pp": state.pp, "dp": state.dp, "ep": state.ep, "dp_attention": bool(state.dp_attention),
            **state_versions(state), "platform": state_gpu_args(state)["platform"], "device_name": None}


def part_key(framework: str, pp, dp, ep, dp_attention, vllm_version, sglang_version=None, *,
             platform: str | None = None, device_name: str | None = None) -> tuple:
    """Cache key of one framework's grid: the framework and its :func:`rule_args` (a version as the
    release it resolves to, so "", None and the newest executed release share one entry), plus the GPU's
    platform and name for a framework whose rules read them (``platform_keyed_rules``; an H100 and no GPU
    share one entry)."""
    kw = rule_args(framework, pp=pp, dp=dp, ep=ep, dp_attention=dp_attention, vllm_version=vllm_version,
                   sglang_version=sglang_version)
    if frameworks.get(framework).platform_keyed_rules and platform and platform not in (gpus.DEFAULT_PLATFORM,
                                                                                         gpus.UNKNOWN_PLATFORM):
        kw["platform"] = platform
        if device_name:
            kw["device_name"] = device_name
    if "version" in kw:
        from dashboard import rules

        kw["version"] = rules.resolve_version(framework, kw["version"]).release
    return (framework, *sorted(kw.items()))


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Framework grids one under the other; categorical columns stay categorical (categories united)."""
    from pandas.api.types import union_categoricals

    cols = {}
    for c in parts[0].columns:
        if isinstance(parts[0][c].dtype, pd.CategoricalDtype):
            if c == "framework":
                cols[c] = pd.Categorical(pd.concat([p[c].astype(object) for p in parts], ignore_index=True),
                                         categories=list(schema.FRAMEWORKS))
            else:
                cols[c] = union_categoricals([p[c] for p in parts], ignore_order=True)
        else:
            cols[c] = pd.concat([p[c] for p in parts], ignore_index=True)
    return pd.DataFrame(cols)


def _is_na(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def catalog_path() -> str | None:
    """Catalog path from :data:`CATALOG_ENV`, or ``None`` for the shipped catalog."""
    p = os.environ.get(CATALOG_ENV, "").strip()
    return p or None


@functools.lru_cache(maxsize=8)
def load_app_data(path: str | None = None) -> AppData:
    """Load the catalog at ``path`` (``None``: the shipped one) once per process.

    Raises whatever :func:`dashboard.catalog.load_catalog` raises for a missing or unreadable file;
    the app turns that into a visible error page.
    """
    from dashboard import catalog as cat

    df = cat.load_catalog(path) if path else cat.load_catalog()
    return app_data_from_catalog(df, path=path or "data/catalog.parquet (shipped)")


def app_data_from_catalog(df: pd.DataFrame, path: str = "<in memory>") -> AppData:
    """Wrap an already loaded catalog (tests, notebooks, benchmarks) as :class:`AppData`."""
    df = df.reset_index(drop=True)
    ids = tuple(str(x) for x in df["model_id"].tolist())
    return AppData(catalog=df, path=path, model_ids=ids)
