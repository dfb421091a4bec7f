"""Dashboard state: what one browser session has chosen, and the process-wide read-only data.

Two halves, neither imports Panel:

* :class:`PlannerState` -- a ``param.Parameterized`` holding every choice a user makes (models,
  frameworks, TP sizes, PP/DP/EP, dtypes, GPU, context length, catalog filters, the open tab and the
  selected cell). One instance per session; the views' widgets are generated from its parameters.
  :meth:`PlannerState.to_query` / :meth:`PlannerState.apply_query` turn it into a URL query string and
  back (model ids containing ``/`` round-trip; malformed or hostile values fall back to defaults and
  come back as human-readable notices, never as exceptions).
* :class:`AppData` -- the catalog and its precomputed validity grid, loaded once per process by
  :func:`load_app_data` and treated as read-only by every session (views filter copies, never mutate).

The catalog path comes from the ``TP_PLANNER_CATALOG`` environment variable when set (a parquet file
written by :func:`dashboard.catalog.write_catalog`), else the shipped ``data/catalog.parquet``.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import param

from dashboard import frameworks, schema
from dashboard.rules import versions as _versions

#: Environment variable naming a catalog parquet file the dashboard opens instead of the shipped one.
CATALOG_ENV = "TP_PLANNER_CATALOG"

#: TP sizes a user can pick (the grid is precomputed over all of them once per process).
TP_CHOICES: tuple[int, ...] = tuple(sorted({*schema.DEFAULT_TP_SIZES, 5, 7, 10, 24, 48}))

#: Frameworks shown side by side by default.
DEFAULT_FRAMEWORKS: tuple[str, ...] = ("vllm", "sglang")

#: Weight dtypes: ``checkpoint`` means "as the config says" (``weight_dtype=None`` in dashboard.memory).
WEIGHT_DTYPES: tuple[str, ...] = ("checkpoint", "bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4")
KV_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8")

TABS: tuple[str, ...] = ("validity", "layout", "memory", "plan", "catalog")
TAB_LABELS: dict[str, str] = {
    "validity": "Validity",
    "layout": "Per-rank layout",
    "memory": "Memory",
    "plan": "Plan",
    "catalog": "Catalog",
}

#: Frameworks the Plan tab can plan (those with launch commands: :data:`dashboard.planner.PLAN_FRAMEWORKS`,
#: spelled out here so the state does not import the planner).
PLAN_FRAMEWORKS: tuple[str, ...] = ("vllm", "sglang", "tensorrt-llm")
#: Most concurrent sequences the Plan tab's minimum accepts.
MAX_MIN_SEQUENCES = 1_000_000

#: How the heatmap rows and the catalog table are ordered (:func:`order_catalog`), and each order's label.
SORT_LABELS: dict[str, str] = {
    "family": "Family, then size",
    "name": "Name (A–Z)",
    "size": "Size (total parameters)",
    "org": "Organisation, then name",
}
SORT_CHOICES: tuple[str, ...] = tuple(SORT_LABELS)

#: Tri-state filter values of the catalog view.
TRISTATE: tuple[str, ...] = ("any", "yes", "no")

#: Frameworks whose rules are keyed by release, and the state parameter (and URL key) naming each one's.
VERSION_PARAMS: dict[str, str] = {f.name: f.version_param for f in frameworks.all_frameworks() if f.version_param}
#: Release each framework's rules are evaluated at by default: the newest run through the conformance harness.
DEFAULT_VERSIONS: dict[str, str] = {fw: _versions.newest_executed(fw) or "" for fw in VERSION_PARAMS}
DEFAULT_VLLM_VERSION: str = DEFAULT_VERSIONS["vllm"]
DEFAULT_SGLANG_VERSION: str = DEFAULT_VERSIONS["sglang"]

#: Most Hub ids one link may add (``add=``).
MAX_LINK_ADDS = 5
#: Start of the ids of uploaded configs (:data:`dashboard.addmodel.UPLOAD_ORG`).
UPLOAD_PREFIX = "(upload)/"
#: Largest per-GPU memory a calibration figure may name, GiB (dashboard.memory.OTHER_GIB_RANGE's top).
MAX_GPU_GIB = 4096.0

#: Longest query value accepted (characters); longer values are rejected with a notice.
MAX_QUERY_VALUE = 4000
#: Most models one URL may select.
MAX_MODELS = 200


# ------------------------------------------------------------------------------------------------
# Process-wide data
# ------------------------------------------------------------------------------------------------


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
             vllm_version: str | None = None, sglang_version: str | None = None, frameworks=None) -> pd.DataFrame:
        """Validity grid over the whole catalog x :data:`TP_CHOICES` x ``frameworks`` (default: every one).

        Each framework's part is computed by :func:`dashboard.rules.grid` once per distinct setting (see
        :func:`rule_args`: for vLLM the release ``vllm_version`` resolves to and EP on/off, for SGLang the
        release ``sglang_version`` resolves to; for all ``(pp, dp, ep, dp_attention)``) and kept for the life
        of the process (at most 64 parts; oldest dropped), so another vLLM or SGLang release computes only
        that framework's part, when first asked for. Read-only:
        callers filter, never assign into it. Framework-major, then catalog order, then TP.
        """
        fws = tuple(schema.FRAMEWORKS if frameworks is None else frameworks)
        if not fws:
            raise ValueError("no frameworks given")
        keys = [_part_key(fw, pp, dp, ep, dp_attention, vllm_version, sglang_version) for fw in fws]
        if len(keys) == 1:
            return self._part(keys[0])
        return self.memo(("grid", *keys), lambda: _concat([self._part(k) for k in keys]), maxsize=64)

    def _part(self, key: tuple) -> pd.DataFrame:
        """One framework's grid for a :func:`_part_key` (cached)."""
        return self._cached_part(key, lambda: self._grid_of(self.catalog, key))

    @staticmethod
    def _grid_of(catalog: pd.DataFrame, key: tuple) -> pd.DataFrame:
        """:func:`dashboard.rules.grid` of ``catalog`` for one :func:`_part_key`."""
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
    versions."""
    return rule_args(framework, pp=state.pp, dp=state.dp, ep=state.ep, dp_attention=state.dp_attention,
                     **state_versions(state))


def state_versions(state: PlannerState) -> dict[str, str]:
    """``{"vllm_version": ..., "sglang_version": ...}``: the releases ``state`` selects (see
    :data:`VERSION_PARAMS`)."""
    return {p: getattr(state, p) for p in VERSION_PARAMS.values()}


def state_version(state: PlannerState, framework: str) -> str:
    """The release ``state`` selects for ``framework``; "" for frameworks whose rules are not keyed by release."""
    p = VERSION_PARAMS.get(framework)
    return getattr(state, p) if p else ""


def state_grid_args(state: PlannerState) -> dict[str, Any]:
    """Keyword arguments of :meth:`AppData.grid` for ``state`` (its parallel settings and versions)."""
    return {"pp": state.pp, "dp": state.dp, "ep": state.ep, "dp_attention": bool(state.dp_attention),
            **state_versions(state)}


def _part_key(framework: str, pp, dp, ep, dp_attention, vllm_version, sglang_version=None) -> tuple:
    """Cache key of one framework's grid: the framework and its :func:`rule_args` (a version as the
    release it resolves to, so "", None and the newest executed release share one entry)."""
    kw = rule_args(framework, pp=pp, dp=dp, ep=ep, dp_attention=dp_attention, vllm_version=vllm_version,
                   sglang_version=sglang_version)
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


# ------------------------------------------------------------------------------------------------
# Per-session state
# ------------------------------------------------------------------------------------------------


def calibration_problem(gib: Any, gpu: str) -> str:
    """Why ``gib`` (a measured KV-cache memory per GPU, GiB) cannot calibrate the memory model on ``gpu``
    (a GPU id, ``other:<GiB>``, or empty for the default card), or ``""`` when it can: it must be a finite
    number > 0 and at most the card's memory (``data/gpus.csv`` ``memory_bytes``). An unknown GPU is not
    this value's problem: only the positive, finite check applies then."""
    try:
        v = float(gib)
    except (TypeError, ValueError):
        return "expected a number of GiB"
    if not (v == v and v not in (float("inf"), float("-inf"))):
        return "expected a finite number of GiB"
    if v <= 0:
        return "the measured KV-cache memory must be more than 0 GiB"
    try:
        from dashboard import memory

        name = gpu or "H100-80GB"
        row = memory.gpu_row(name)
        cap = float(row["memory_bytes"]) / float(1 << 30)
    except Exception:  # noqa: BLE001 -- no GPU table / unknown id: nothing to compare with
        return ""
    if v > cap:
        return (f"{v:g} GiB of KV cache is more than the {cap:.1f} GiB of memory of one {_short(str(name), 40)}; "
                "enter the per-GPU figure from the engine's log")
    return ""



class PlannerState(param.Parameterized):
    """Everything one session has chosen. Every parameter is in the URL (see :meth:`to_query`)."""

    # --- which models ---------------------------------------------------------------------------
    search = param.String(
        default="",
        doc="Model-name filter: case-insensitive substrings separated by spaces or commas; a model "
        "matches when its id contains any of them. Empty: every model.",
    )
    models = param.List(
        default=[],
        item_type=str,
        doc="Models picked explicitly (catalog table selection or the model picker). When non-empty the "
        "heatmaps show exactly these (still narrowed by the name filter).",
    )
    sort = param.Selector(
        default="family", objects=list(SORT_CHOICES),
        doc="Order of the heatmap rows and the catalog table (see order_catalog): family (the text model's "
        "model_type) then total parameters; name (the repo name after the organisation, case-insensitive); "
        "size (total parameters, smallest first); or org (organisation, then name).",
    )
    add = param.List(
        default=[],
        item_type=str,
        doc="Hub model ids (org/name) added to this session's catalog with \"Add a model\"; a link carrying "
        "them makes the page fetch them again (anonymously; see dashboard.addmodel). Uploaded configs are "
        "never here: they cannot travel in a link.",
    )
    # --- what to check --------------------------------------------------------------------------
    frameworks = param.ListSelector(
        default=list(DEFAULT_FRAMEWORKS),
        objects=list(schema.FRAMEWORKS),
        doc="Frameworks whose heatmaps are shown side by side (ids of dashboard.schema.FRAMEWORKS).",
    )
    vllm_version = param.String(
        default=DEFAULT_VLLM_VERSION,
        doc="vLLM release whose rules the vLLM cells follow (a release of data/releases/vllm.csv). The "
        "default is the newest release run through the conformance harness; in a link, a date such as "
        "2025-05 means the release current then.",
    )
    sglang_version = param.String(
        default=DEFAULT_SGLANG_VERSION,
        doc="SGLang release whose rules the SGLang cells follow (a release of data/releases/sglang.txt). The "
        "default is the newest release run through the conformance harness. SGLang has no release-date "
        "table here, so a link must name an exact release (no dates).",
    )
    disagreement = param.Boolean(
        default=False,
        doc="Show one heatmap of where the selected frameworks disagree instead of one per framework.",
    )
    tp_sizes = param.ListSelector(
        default=list(schema.DEFAULT_TP_SIZES),
        objects=list(TP_CHOICES),
        doc="Tensor-parallel sizes on the heatmaps' x axis.",
    )
    pp = param.Integer(default=1, bounds=(1, 128), doc="Pipeline-parallel size (stages).")
    dp = param.Integer(default=1, bounds=(1, 128), doc="Data-parallel size (replicas; attention-DP under DP-attention).")
    ep = param.Integer(default=1, bounds=(1, 1024), doc="Expert-parallel size (MoE).")
    dp_attention = param.Boolean(
        default=False, doc="SGLang DP-attention: attention runs with attn_tp = tp / dp instead of tp."
    )
    # --- memory ---------------------------------------------------------------------------------
    weight_dtype = param.Selector(
        default="checkpoint", objects=list(WEIGHT_DTYPES), doc="Weight dtype; `checkpoint` uses the config's."
    )
    kv_dtype = param.Selector(default="bf16", objects=list(KV_DTYPES), doc="KV-cache dtype.")
    gpu = param.String(default="", doc="GPU type (gpu column of data/gpus.csv), or other:<GiB> for a card given by "
                       "its memory per GPU (e.g. other:24); empty: the default GPU.")
    gpu_count = param.Integer(default=8, bounds=(1, 4096), doc="GPUs in the deployment (TP x PP x DP usually).")
    context_len = param.Integer(
        default=32768, bounds=(1, 10_000_000), doc="Context length (tokens per sequence) for concurrency."
    )
    kv_measured_gib = param.Number(
        default=None, allow_None=True, bounds=(0.0, MAX_GPU_GIB), inclusive_bounds=(False, True),
        doc="Memory view calibration: the KV-cache memory per GPU your engine logged, GiB (vLLM 'Available KV "
        "cache memory: 54.12 GiB'; SGLang K size + V size). Empty: not given, the model's reserve estimate is "
        "used. Must be > 0 and at most the chosen GPU's memory (a link with more is refused with a notice).")
    # --- plan ---------------------------------------------------------------------------------------
    gpus_per_node = param.Integer(
        default=0, bounds=(0, 1024),
        doc="Plan: GPUs per node (0: the GPU table's value for the chosen GPU, e.g. 8 on an HGX board). "
        "The cluster is gpu_count GPUs, i.e. ceil(gpu_count / gpus_per_node) nodes.")
    min_sequences = param.Integer(
        default=1, bounds=(1, MAX_MIN_SEQUENCES),
        doc="Plan: concurrent context_len-token sequences a layout must hold to count as fitting.")
    plan_frameworks = param.ListSelector(
        default=list(PLAN_FRAMEWORKS), objects=list(PLAN_FRAMEWORKS),
        doc="Plan: frameworks whose layouts are planned (ids of PLAN_FRAMEWORKS).")
    # --- selection (the tapped cell) ------------------------------------------------------------
    model = param.String(default="", doc="Selected model id (tapped cell / table row); empty: none yet.")
    framework = param.Selector(
        default="vllm", objects=list(schema.FRAMEWORKS), doc="Framework of the selected cell."
    )
    tp = param.Integer(default=8, bounds=(1, 4096), doc="TP size of the selected cell.")
    # --- catalog filters ------------------------------------------------------------------------
    org = param.String(default="", doc="Catalog filter: organisation (exact, case-insensitive); empty: any.")
    model_type = param.String(default="", doc="Catalog filter: model_type (exact, case-insensitive); empty: any.")
    min_params_b = param.Number(default=0.0, bounds=(0, None), doc="Catalog filter: minimum total parameters, billions.")
    max_params_b = param.Number(default=0.0, bounds=(0, None), doc="Catalog filter: maximum total parameters, billions; 0: no maximum.")
    heads = param.Integer(default=0, bounds=(0, None), doc="Catalog filter: num_attention_heads equals this; 0: any.")
    kv_heads = param.Integer(default=0, bounds=(0, None), doc="Catalog filter: num_key_value_heads equals this; 0: any.")
    moe = param.Selector(default="any", objects=list(TRISTATE), doc="Catalog filter: mixture of experts.")
    mla = param.Selector(default="any", objects=list(TRISTATE), doc="Catalog filter: multi-head latent attention.")
    linear = param.Selector(default="any", objects=list(TRISTATE), doc="Catalog filter: linear attention / SSM layers.")
    vision = param.Selector(default="any", objects=list(TRISTATE), doc="Catalog filter: vision encoder.")
    quant = param.String(default="", doc="Catalog filter: quant_method (exact; `none` for unquantized); empty: any.")
    # --- page -----------------------------------------------------------------------------------
    tab = param.Selector(default="validity", objects=list(TABS), doc="Open view.")

    # URL keys are the parameter names; ``models``, ``frameworks`` and ``tp_sizes`` are comma lists
    # (Hub repo ids cannot contain commas).

    # ---- URL ----------------------------------------------------------------------------------
    def to_query(self) -> dict[str, str]:
        """Non-default parameters as ``{key: value}`` strings for a URL query (defaults omitted)."""
        out: dict[str, str] = {}
        for name in self.param:
            if name == "name":
                continue
            p = self.param[name]
            v = getattr(self, name)
            if _equal(v, p.default):
                continue
            if name in ("models", "frameworks", "tp_sizes", "plan_frameworks", "add"):
                out[name] = ",".join(str(x) for x in v)
            elif isinstance(v, bool):
                out[name] = "1" if v else "0"
            elif isinstance(v, float):
                out[name] = f"{v:g}"
            else:
                out[name] = str(v)
        return out

    def query_string(self) -> str:
        """``?a=b&...`` for :attr:`pn.state.location.search` (empty string when all defaults).

        ``/`` is left unescaped (legal in a query) so model ids stay readable in shared links.
        """
        q = self.to_query()
        return ("?" + urllib.parse.urlencode(q, safe="/,:")) if q else ""

    def apply_query(self, query: str | Mapping[str, Any], *, known_models: frozenset[str] | None = None,
                    known_values: Mapping[str, Any] | None = None) -> list[str]:
        """Set parameters from a URL query; return notices for every value that was refused.

        Parameters
        ----------
        query : str or mapping
            The raw ``search`` string (``?a=b``) or a mapping key -> str / list of str / bytes.
        known_models : frozenset of str, optional
            Catalog model ids; unknown ids in ``models`` / ``model`` are dropped with a notice.
        known_values : mapping of str to iterable of str, optional
            Accepted values of free-text settings, e.g. ``{"org": [...], "model_type": [...], "quant":
            [...], "gpu": [...]}`` (see :func:`catalog_choices`). A value of one of these keys is matched
            case-insensitively, ignoring surrounding spaces, and replaced by the listed spelling (``qwen``
            -> ``Qwen``); a value not listed is refused with a notice. An empty value is always accepted
            (the setting's default).

        Returns
        -------
        list of str
            Plain-text notices (untrusted fragments included verbatim: escape before rendering). A
            refused value leaves that parameter at its default. Never raises.
        """
        notices: list[str] = []
        try:
            lists = _query_lists(query)
        except Exception as exc:  # noqa: BLE001 -- any garbage in the URL is a notice, not a crash
            return [f"Could not read the link's query string ({type(exc).__name__}); showing defaults."]
        pairs = {k: v[-1] for k, v in lists.items()}
        if known_models is not None and "add" in pairs and len(pairs["add"]) <= MAX_QUERY_VALUE:
            # models the link adds (fetched once the page is up) may be selected by the same link
            known_models = frozenset(known_models) | frozenset(added_ids(pairs["add"]))
        updates: dict[str, Any] = {}
        for key, raw in pairs.items():
            if key not in self.param or key == "name" or key.startswith("_"):
                if not key.strip():
                    notices.append(f"Ignored {_short('=' + raw)!r} in the link: a value with no setting name before "
                                   "the '='.")
                else:
                    notices.append(f"Ignored {_short(key)!r} in the link: this page has no setting by that name.")
                continue
            if len(lists[key]) > 1:
                shown = ", ".join(repr(_short(v, 40)) for v in lists[key][:5]) + (", ..." if len(lists[key]) > 5 else "")
                notices.append(f"The link sets {key!r} {len(lists[key])} times ({shown}): only the last one, "
                               f"{key}={_short(raw)!r}, is used.")
            if len(raw) > MAX_QUERY_VALUE:
                notices.append(f"Ignored link parameter {key!r}: value longer than {MAX_QUERY_VALUE} characters.")
                continue
            try:
                value = self._parse(key, raw, known_models, notices)
                if key == "gpu" and isinstance(value, str) and value.strip().lower().startswith("other:"):
                    from dashboard.memory import resolve_gpu_id

                    value = resolve_gpu_id(value)  # a card given by its memory: other:<GiB>
                elif known_values is not None and key in known_values and isinstance(value, str):
                    value = _canonical_choice(key, value, known_values[key])
            except (ValueError, TypeError, OverflowError) as exc:
                notices.append(f"Ignored link parameter {key}={_short(raw)!r}: {exc}")
                continue
            if value is _SKIP:
                continue
            # Validate against the parameter's own checks (bounds, objects) without touching self.
            try:
                self.param[key]._validate(value)
            except Exception as exc:  # noqa: BLE001
                # "Integer parameter 'PlannerState.tp' must be at least 1, not 0." -> "must be at least 1, not 0."
                why = re.sub(r"^\w+ parameter '[^']*' ", "", str(exc))
                notices.append(f"Ignored link parameter {key}={_short(raw)!r}: {_short(why, 160)}")
                continue
            updates[key] = value
        if updates.get("kv_measured_gib") is not None:
            why = calibration_problem(updates["kv_measured_gib"], updates.get("gpu", self.gpu))
            if why:
                notices.append(f"Ignored link parameter kv_measured_gib={_short(pairs['kv_measured_gib'])!r}: {why}")
                del updates["kv_measured_gib"]
        try:
            self.param.update(**updates)
        except Exception as exc:  # noqa: BLE001 -- defensive: a combination param rejects
            notices.append(f"Could not apply the link's settings ({_short(str(exc), 160)}); showing defaults.")
        return notices

    def _parse(self, key: str, raw: str, known: frozenset[str] | None, notices: list[str]) -> Any:
        p = self.param[key]
        if key == "models":
            ids = [s.strip() for s in raw.split(",") if s.strip()]
            if len(ids) > MAX_MODELS:
                raise ValueError(f"more than {MAX_MODELS} models")
            if known is not None:
                unknown = [m for m in ids if m not in known]
                for m in unknown[:5]:
                    notices.append(f"Model {_short(m)!r} from the link is not in the catalog; dropped.")
                if len(unknown) > 5:
                    notices.append(f"... and {len(unknown) - 5} more unknown models dropped.")
                ids = [m for m in ids if m in known]
            return list(dict.fromkeys(ids))
        if key == "add":
            ids = added_ids(raw, notices)
            return ids
        if key == "model":
            if raw and known is not None and raw not in known:
                if raw.startswith(UPLOAD_PREFIX):
                    notices.append(f"Model {_short(raw)!r} was an uploaded config.json, which cannot travel in a "
                                   "link: upload it again on this page; none selected.")
                    return _SKIP
                notices.append(f"Model {_short(raw)!r} from the link is not in the catalog; none selected.")
                return _SKIP
            return raw
        if key in _VERSION_KEYS:
            return framework_release(_VERSION_KEYS[key], raw, notices)
        if key == "frameworks":
            vals = [s.strip() for s in raw.split(",") if s.strip()]
            bad = [v for v in vals if v not in schema.FRAMEWORKS]
            if bad:
                raise ValueError(f"unknown framework(s) {', '.join(_short(b, 40) for b in bad)}")
            return list(dict.fromkeys(vals))
        if key == "plan_frameworks":
            vals = [s.strip() for s in raw.split(",") if s.strip()]
            bad = [v for v in vals if v not in PLAN_FRAMEWORKS]
            if bad:
                raise ValueError(f"unknown or unplanned framework(s) {', '.join(_short(b, 40) for b in bad)} "
                                 f"(the plan covers {', '.join(PLAN_FRAMEWORKS)})")
            return [f for f in PLAN_FRAMEWORKS if f in vals]
        if key == "tp_sizes":
            vals = [int(s) for s in raw.split(",") if s.strip()]
            bad = [v for v in vals if v not in TP_CHOICES]
            if bad:
                raise ValueError(f"TP sizes must be among {', '.join(map(str, TP_CHOICES))}")
            return sorted(set(vals))
        if isinstance(p, param.Boolean):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected 1 or 0")
        if isinstance(p, param.Integer):
            if re.fullmatch(r"[+-]?\d+", raw.strip()) and not re.fullmatch(r"[+-]?\d{1,9}", raw.strip()):
                lo, hi = (p.bounds or (None, None))
                rng = f"{lo}..{hi}" if lo is not None and hi is not None else "a smaller number"
                raise ValueError(f"out of range (expected {rng})")
            if not re.fullmatch(r"[+-]?\d{1,9}", raw.strip()):
                raise ValueError("expected a whole number")
            return int(raw)
        if key == "kv_measured_gib" and not raw.strip():
            return None  # an empty box: not given
        if isinstance(p, param.Number):
            v = float(raw)
            if v != v or v in (float("inf"), float("-inf")):
                raise ValueError("expected a finite number")
            return v
        if isinstance(p, param.Selector):
            if raw not in p.objects:
                raise ValueError(f"expected one of {', '.join(map(str, p.objects))}")
            return raw
        if isinstance(p, param.String):
            if any(ord(c) < 32 and c not in "\t" for c in raw):
                raise ValueError("control characters")
            return raw
        raise ValueError("not settable from a link")

    # ---- derived ------------------------------------------------------------------------------
    def search_terms(self) -> list[str]:
        """Lower-cased non-empty terms of :attr:`search`."""
        return [t for t in re.split(r"[\s,]+", self.search.lower()) if t]


def added_ids(raw: str, notices: list[str] | None = None) -> list[str]:
    """Hub ids of a link's ``add=`` value (comma-separated ``org/name``), de-duplicated, in order: at most
    :data:`MAX_LINK_ADDS`; anything that is not a Hub model id is dropped with a notice in ``notices``."""
    from dashboard.addmodel import is_hub_id

    out: list[str] = []
    for item in (s.strip() for s in str(raw).split(",")):
        if not item or item in out:
            continue
        if not is_hub_id(item):
            if notices is not None:
                why = ("an uploaded config.json cannot travel in a link: upload it again" if item.startswith(UPLOAD_PREFIX)
                       else "not a Hub model id (org/name)")
                notices.append(f"Ignored {_short(item)!r} in the link's add=: {why}.")
            continue
        if len(out) >= MAX_LINK_ADDS:
            if notices is not None:
                notices.append(f"The link adds more than {MAX_LINK_ADDS} models: only the first {MAX_LINK_ADDS} "
                               "are fetched.")
            break
        out.append(item)
    return out


def framework_releases(framework: str) -> list[tuple[str, str, bool]]:
    """``(release, first upload date YYYY-MM-DD or "", executed)`` of every release of ``framework`` (one
    of :data:`VERSION_PARAMS`) its selector offers: the releases run through the conformance harness first
    (newest first), then every other listed release (:func:`dashboard.rules.versions.listed`: for vLLM
    ``data/releases/vllm.csv``, with dates; for SGLang ``data/releases/sglang.txt``, without), newest first."""
    from packaging.version import InvalidVersion, Version

    executed = list(_versions.EXECUTED.get(framework, ()))
    dates = {v: t[:10] for v, t in _versions.releases(framework)}

    def order(v: str):
        try:
            return (1, Version(v))
        except InvalidVersion:
            return (0, Version("0"))

    rest = sorted((v for v in set(_versions.listed(framework)) if v not in executed), key=order, reverse=True)
    return ([(v, dates.get(v, ""), True) for v in sorted(executed, key=order, reverse=True)]
            + [(v, dates.get(v, ""), False) for v in rest])


def vllm_releases() -> list[tuple[str, str, bool]]:
    """:func:`framework_releases` of vLLM."""
    return framework_releases("vllm")


def sglang_releases() -> list[tuple[str, str, bool]]:
    """:func:`framework_releases` of SGLang (no dates: SGLang has no release-date table)."""
    return framework_releases("sglang")


_DATE = re.compile(r"\d{4}(-\d{1,2}){0,2}")
#: URL key -> framework of :data:`VERSION_PARAMS`.
_VERSION_KEYS: dict[str, str] = {p: fw for fw, p in VERSION_PARAMS.items()}


def framework_release(framework: str, raw: str, notices: list[str] | None = None) -> str:
    """The release of ``framework`` (one of :data:`VERSION_PARAMS`) a link's version value names, spelled
    as in :func:`framework_releases`.

    Accepts a listed release (``0.22.0``, ``v0.22.0``; PEP 440 spellings of a listed release) or, for a
    framework with a release-date table (vLLM), a date (``2025``, ``2025-05``, ``2025-05-20``: the newest
    release uploaded by then, see :func:`dashboard.rules.versions.release_at`; a notice in ``notices``
    says which). A framework without one (SGLang) accepts exact releases only. An empty value is the
    default (:data:`DEFAULT_VERSIONS`). Raises ValueError for anything else (its text names no part of
    ``raw``: the caller's notice quotes it).
    """
    from packaging.version import InvalidVersion, Version

    key, label, default = VERSION_PARAMS[framework], schema.FRAMEWORK_LABELS[framework], DEFAULT_VERSIONS[framework]
    text = raw.strip()
    if not text:
        return default
    if any(ord(c) < 32 for c in text):
        raise ValueError("control characters")
    listed = framework_releases(framework)
    dated = _versions.has_dates(framework)
    if _DATE.fullmatch(text):
        if not dated:
            raise ValueError(f"{label} has no release-date table here, so a date cannot name one of its releases: "
                             f"give an exact release such as {default}; the default, {default}, is used")
        rel = _versions.release_at(framework, text)
        if rel is None:
            first = min((d for _v, d, _ex in listed if d), default="?")
            raise ValueError(f"no {label} release by that date (the first is from {first}); the default is used")
        if notices is not None:
            notices.append(f"{key}={text}: the link names a date; {label} {rel}, the release current then, "
                           "is shown.")
        return rel
    by_version = {}
    for v, _date, _ex in listed:
        try:
            by_version.setdefault(Version(v), v)
        except InvalidVersion:
            continue
    try:
        hit = by_version.get(Version(text[1:] if text[:1] in "vV" else text))
    except InvalidVersion:
        hit = None
    if hit is None:
        span = f"releases {by_version[min(by_version)]} to {by_version[max(by_version)]}" if by_version else ""
        if dated:
            raise ValueError(f"not a {label} release or a date such as 2025-05{f' ({span})' if span else ''}; "
                             f"the default, {default}, is used")
        raise ValueError(f"not a listed {label} release ({span + '; ' if span else ''}exact releases only: {label} has "
                         f"no release-date table here, so dates are not accepted); the default, {default}, is used")
    return hit


def vllm_release(raw: str, notices: list[str] | None = None) -> str:
    """:func:`framework_release` of vLLM."""
    return framework_release("vllm", raw, notices)


def sglang_release(raw: str, notices: list[str] | None = None) -> str:
    """:func:`framework_release` of SGLang (exact releases only: no date table)."""
    return framework_release("sglang", raw, notices)


#: How a refused free-text value is named in its notice.
_CHOICE_LABELS: dict[str, str] = {
    "org": "organisation in the catalog",
    "model_type": "model_type in the catalog",
    "quant": "quantization method in the catalog",
    "gpu": "GPU in the GPU table",
}


def _canonical_choice(key: str, value: str, choices: Any) -> str:
    """``value`` spelled as in ``choices`` (case-insensitive, surrounding spaces ignored); ``""`` stays
    ``""``. Raises ValueError naming the accepted values when ``value`` is not one of them."""
    v = value.strip()
    if not v:
        return ""
    options = [str(c) for c in choices if str(c)]
    by_lower = {}
    for c in options:
        by_lower.setdefault(c.strip().lower(), c)
    hit = by_lower.get(v.lower())
    if hit is None:
        listed = ", ".join(options[:12]) + (", ..." if len(options) > 12 else "")
        raise ValueError(f"not a known {_CHOICE_LABELS.get(key, key + ' value')} (known: {listed}); "
                         "the default is used")
    return hit


def catalog_choices(catalog: pd.DataFrame) -> dict[str, list[str]]:
    """Values the catalog filters accept: ``org``, ``model_type`` (``model_type`` or ``text_model_type``)
    and ``quant`` (``none`` plus every ``quant_method``), each sorted case-insensitively."""

    def values(*cols: str) -> list[str]:
        out = set()
        for c in cols:
            if c in catalog.columns:
                out |= {str(x) for x in catalog[c].dropna().tolist() if str(x)}
        return sorted(out, key=str.lower)

    return {"org": values("org"), "model_type": values("model_type", "text_model_type"),
            "quant": ["none", *values("quant_method")]}


class _Skip:
    pass


_SKIP = _Skip()


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return a == b


def _short(s: str, n: int = 80) -> str:
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def _query_lists(query: str | Mapping[str, Any]) -> dict[str, list[str]]:
    """Every value of each key, as text, in link order. Accepts a raw search string or Panel/Tornado-style
    mappings (key -> str / bytes / list of them). A key without any value gets ``[""]``."""
    if isinstance(query, str):
        q = query[1:] if query.startswith("?") else query
        parsed = urllib.parse.parse_qs(q, keep_blank_values=True, strict_parsing=False, max_num_fields=200)
        return {k: list(v) or [""] for k, v in parsed.items()}
    out: dict[str, list[str]] = {}
    for k, v in query.items():
        vals = list(v) if isinstance(v, list | tuple) else [v]
        out[str(k)] = [x.decode("utf-8", errors="replace") if isinstance(x, bytes) else str(x) for x in vals] or [""]
    return out


def _query_pairs(query: str | Mapping[str, Any]) -> dict[str, str]:
    """Last value of each key, as text (see :func:`_query_lists`)."""
    return {k: v[-1] for k, v in _query_lists(query).items()}


def _folded(values: pd.Series) -> pd.Series:
    """Text values stripped and lower-cased for sorting; missing values as ``""``."""
    return values.astype(object).where(values.notna(), "").astype(str).str.strip().str.lower()


def order_catalog(catalog: pd.DataFrame, sort: str = "family") -> pd.DataFrame:
    """``catalog``'s rows in the order ``sort`` names (a new frame, index kept; the input is untouched).

    Orders (one of :data:`SORT_CHOICES`):

    * ``family`` -- the text model's ``model_type`` (``text_model_type``: for a multimodal model the
      language model's type, e.g. ``mistral`` for a LLaVA-style model; else ``model_type``),
      case-insensitive, then total parameters (``params_total``, a count), smallest first;
    * ``name`` -- the repo name after the organisation (``Llama-3.1-8B`` of ``meta-llama/Llama-3.1-8B``),
      case-insensitive, then the organisation;
    * ``size`` -- total parameters, smallest first;
    * ``org`` -- the organisation (the id before its first ``/``), case-insensitive, then the name.

    A row with no family or no parameter count (a config that could not be read) comes after the rows
    that have one; remaining ties fall back to the name, then the full id case-insensitively, then the
    catalog's own order (the sort is stable). Raises ValueError for an unknown ``sort``.
    """
    if sort not in SORT_CHOICES:
        raise ValueError(f"unknown order {sort!r} (expected one of {', '.join(SORT_CHOICES)})")
    ids = catalog["model_id"].astype(object).where(catalog["model_id"].notna(), "").astype(str)
    parts = ids.str.split("/", n=1)
    org = _folded(parts.str[0].where(parts.str.len() > 1, ""))
    name = _folded(parts.str[-1])
    fam = _folded(catalog["text_model_type"]) if "text_model_type" in catalog.columns else pd.Series("", index=ids.index)
    if "model_type" in catalog.columns:
        fam = fam.where(fam != "", _folded(catalog["model_type"]))
    size = pd.to_numeric(catalog.get("params_total", pd.Series(float("nan"), index=ids.index)), errors="coerce")
    size = size.astype("float64")
    keys = pd.DataFrame({
        "no_fam": fam == "", "fam": fam, "no_size": size.isna(), "size": size.fillna(0.0),
        "no_org": org == "", "org": org, "name": name, "id": _folded(ids),
    }, index=catalog.index)
    by = {"family": ["no_fam", "fam", "no_size", "size", "name", "id"],
          "name": ["name", "no_org", "org", "id"],
          "size": ["no_size", "size", "name", "id"],
          "org": ["no_org", "org", "name", "id"]}[sort]
    order = keys.sort_values(by=by, kind="stable").index
    return catalog.loc[order]


def model_order(data: AppData, sort: str = "family") -> dict[str, int]:
    """Position of each catalog model id in :func:`order_catalog` order ``sort`` (computed once per
    process and order; read-only)."""
    def build():
        ordered = order_catalog(data.catalog, sort)["model_id"].astype(str).tolist()
        return {m: i for i, m in enumerate(ordered)}

    return data.memo(("model-order", sort), build)


def filter_models(state: PlannerState, data: AppData, *, ok_only: bool = False) -> list[str]:
    """Model ids the heatmaps show for ``state``: explicit picks (or all), narrowed by the name filter.

    Order: ``state.sort`` (:func:`order_catalog`; ids not in the catalog last). ``ok_only`` drops rows
    whose config could not be read.
    """
    ids = list(state.models) if state.models else list(data.model_ids)
    terms = state.search_terms()
    if terms:
        ids = [m for m in ids if any(t in m.lower() for t in terms)]
    if ok_only:
        okset = set(data.catalog.loc[data.catalog["status"] == "ok", "model_id"].astype(str))
        ids = [m for m in ids if m in okset]
    rank = model_order(data, state.sort)
    last = len(rank)
    return sorted(ids, key=lambda m: rank.get(m, last))


def filter_catalog(state: PlannerState, catalog: pd.DataFrame) -> pd.DataFrame:
    """Catalog rows passing the catalog-view filters of ``state``, in ``state.sort`` order
    (:func:`order_catalog`; a new frame; input untouched)."""
    df = catalog
    mask = pd.Series(True, index=df.index)
    terms = state.search_terms()
    if terms:
        low = df["model_id"].astype(str).str.lower()
        m = pd.Series(False, index=df.index)
        for t in terms:
            m |= low.str.contains(t, regex=False)
        mask &= m
    if state.org:
        mask &= df["org"].astype(str).str.lower() == state.org.lower()
    if state.model_type:
        mt = state.model_type.lower()
        mask &= (df["model_type"].astype(str).str.lower() == mt) | (df["text_model_type"].astype(str).str.lower() == mt)
    params_b = df["params_total"].astype("float64") / 1e9
    if state.min_params_b:
        mask &= params_b.fillna(-1) >= state.min_params_b
    if state.max_params_b:
        mask &= params_b.fillna(float("inf")) <= state.max_params_b
    if state.heads:
        mask &= df["num_attention_heads"].astype("Float64").fillna(-1) == state.heads
    if state.kv_heads:
        mask &= df["num_key_value_heads"].astype("Float64").fillna(-1) == state.kv_heads
    for pname, col in (("moe", "is_moe"), ("mla", "is_mla"), ("linear", "has_linear_attention"), ("vision", "has_vision")):
        v = getattr(state, pname)
        if v != "any":
            flag = df[col].astype("boolean").fillna(False).astype(bool)
            mask &= flag if v == "yes" else ~flag
    if state.quant:
        q = state.quant.lower()
        qm = df["quant_method"].astype("string").fillna("").str.lower()
        mask &= (qm == "") if q == "none" else (qm == q)
    return order_catalog(df.loc[mask.astype(bool)], state.sort)
