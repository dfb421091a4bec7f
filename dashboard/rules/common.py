"""Rule data model and the vectorized evaluation context shared by every framework module.

A rule is DATA (:class:`Rule`: id, framework, kind, version range, condition text, message template with
named fields, upstream source URL pinned to a commit) plus one small VECTORIZED predicate. The predicate
receives a :class:`Ctx` -- the columns of N (model, TP) cells as numpy arrays plus the parallel sizes --
and returns a boolean ``fire`` array (length N) and the integer arrays that fill the message template.

The same predicates serve the whole-catalog grid (N = models x TP sizes) and the single-record
:func:`dashboard.rules.check` (N = 1): one implementation, not two. Pure: no I/O, no Panel.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from dashboard import sharding

#: Rule kinds (the contract's vocabulary).
KINDS: tuple[str, ...] = (
    "attention_heads",
    "kv_heads",
    "vision_heads",
    "linear_attention_heads",
    "mamba_groups",
    "moe_experts",
    "moe_intermediate",
    "mlp_intermediate",
    "vocab",
    "block_fp8",
    "group_size",
    "pipeline_layers",
    "cross_attention_heads",
    "mla",
    "architecture",  # the release cannot build this model at all (registry, config class, model-level error)
    "attention_backend",  # no attention backend of this GPU takes the layer, or the chosen one refuses it
    "kernel",  # no kernel of this GPU takes the quantization scheme (MoE backend, minimum capability)
)

#: Effects a firing rule has on the cell besides validity.
EFFECTS: tuple[str, ...] = ("", "padded", "run_time")

Fields = dict[str, np.ndarray]
Predicate = Callable[["Ctx"], tuple[np.ndarray, Fields]]


@dataclass(frozen=True)
class Rule:
    """One framework check, as data.

    Attributes
    ----------
    id : stable rule id, ``<framework-short>.<kind>[.<detail>]``.
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    kind : one of :data:`KINDS`.
    versions : PEP 440 specifier of the framework versions the rule holds for ("" = every version we
        checked; the pinned ``source_url`` says which code was read).
    condition : the condition in words/arithmetic, as the upstream code tests it.
    message : message template with named ``{fields}``; for upstream errors, the exact upstream text.
    source_url : upstream source, pinned to a commit or release tag.
    severity : ``"error"`` (the framework refuses the configuration) or ``"warning"`` (it runs, with
        a caveat: dummy heads, uneven split ...).
    predicate : vectorized ``Ctx -> (fire: bool[N], fields: dict[str, int[N]])``.
    needs : columns without which the rule cannot be decided (NA there -> cell status ``unknown``).
    effect : ``"padded"`` (firing means dummy heads: status ``valid_padded``), ``"run_time"`` (the
        failure shows only when the model is built/run, not at load), or "".
    verified_with : for rules checked against a real library run, the library version and what was
        observed (filled by the transformers-matrix helper); None when only read from source.
    note : anything a reader needs to trust the rule (e.g. "upstream raises a bare assert").
    architectures : Hub ``architectures[0]`` values the rule applies to (empty = every architecture
        not excluded). Framework code differs per model class (bare asserts, vision towers).
    exclude_architectures : architectures the rule does not apply to.
    sites : release -> raise site ``"path/in/package.py:line"`` for the releases whose code was read or
        run; the engine fills ``{site}`` in the message and :attr:`location` from it.
    evidence : ``"executed"`` (a conformance table of the release reproduces the rule: same verdict,
        message and raise site) or ``"source"`` (read from the release's source only).
    executed_in : releases whose conformance tables reproduce the rule.
    exc_type : the exception the framework raises (``AssertionError``, ``ValueError`` ...); "" for
        warnings and for messages that are ours.
    ours : True when the message is written by this project (the framework prints nothing, or only a
        log line); shown as ours.
    platforms : platform ids (:data:`dashboard.gpus.PLATFORMS`) the rule is evaluated on; empty = every
        platform. A GPU of another platform never gets it (its checks there are other code).
    """

    id: str
    framework: str
    kind: str
    versions: str
    condition: str
    message: str
    source_url: str
    predicate: Predicate = field(repr=False, compare=False)
    severity: str = "error"
    needs: tuple[str, ...] = ()
    effect: str = ""
    verified_with: str | None = None
    note: str = ""
    architectures: tuple[str, ...] = ()
    exclude_architectures: tuple[str, ...] = ()
    sites: Mapping[str, str] = field(default_factory=dict, compare=False)
    evidence: str = "source"
    executed_in: tuple[str, ...] = ()
    exc_type: str = ""
    ours: bool = False
    location: str = ""
    platforms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"rule {self.id}: unknown kind {self.kind!r}")
        if self.severity not in ("error", "warning"):
            raise ValueError(f"rule {self.id}: severity must be 'error' or 'warning'")
        if self.effect not in EFFECTS:
            raise ValueError(f"rule {self.id}: unknown effect {self.effect!r}")
        if self.evidence not in ("executed", "source"):
            raise ValueError(f"rule {self.id}: evidence must be 'executed' or 'source'")

    def applies_to_arch(self, arch: str) -> bool:
        """Whether the rule covers a model whose ``architectures[0]`` is ``arch``."""
        if arch in self.exclude_architectures:
            return False
        return not self.architectures or arch in self.architectures

    def for_release(self, release: str | None, repo_url: str = "") -> "Rule":
        """The rule as it reads in ``release``: ``{site}`` filled, :attr:`location` set, the source link
        pointed at that release's file and line, evidence ``executed`` only when that release's table
        reproduces it."""
        import dataclasses

        site = _nearest_site(self.sites, release)
        msg = self.message.replace("{site}", site or "?") if "{site}" in self.message else self.message
        url = self.source_url
        if site and repo_url and release:
            path, _, line = site.rpartition(":")
            base = repo_url.format(release=release) if "{release}" in repo_url else f"{repo_url}/v{release}"
            url = f"{base}/{path}#L{line}"
        ev = "executed" if release and release in self.executed_in else "source"
        return dataclasses.replace(self, message=msg, location=site, source_url=url, evidence=ev)
    @property
    def message_fields(self) -> tuple[str, ...]:
        """Names of the ``{fields}`` in :attr:`message`."""
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.message) if f)

    def format(self, values: Mapping[str, object]) -> str:
        """The message with its fields filled (``values`` maps field name -> number)."""
        return self.message.format(**{k: _plain(values[k]) for k in self.message_fields})

    def as_dict(self) -> dict[str, object]:
        """The rule's data (everything but the predicate), for tables and docs."""
        return {
            "id": self.id,
            "framework": self.framework,
            "kind": self.kind,
            "versions": self.versions,
            "condition": self.condition,
            "message": self.message,
            "source_url": self.source_url,
            "severity": self.severity,
            "needs": ", ".join(self.needs),
            "effect": self.effect,
            "verified_with": self.verified_with,
            "note": self.note,
            "architectures": ", ".join(self.architectures),
            "exclude_architectures": ", ".join(self.exclude_architectures),
            "sites": "; ".join(f"{k}: {v}" for k, v in sorted(self.sites.items())),
            "evidence": self.evidence,
            "executed_in": ", ".join(self.executed_in),
            "exc_type": self.exc_type,
            "ours": self.ours,
            "platforms": ", ".join(self.platforms),
        }


def _nearest_site(sites: Mapping[str, str], release: str | None) -> str:
    """The raise site in ``release``; for a release whose code was not read, the site in the nearest
    read release at or below it (else the oldest above it): the file is right, the line may drift."""
    if not sites:
        return ""
    if release in sites:
        return sites[release]
    from packaging.version import InvalidVersion, Version

    try:
        known = sorted(sites, key=Version)
        if release is None:
            return sites[known[-1]]
        v = Version(release)
    except InvalidVersion:
        return ""
    below = [k for k in known if Version(k) <= v]
    return sites[below[-1]] if below else sites[known[0]]


def _plain(v: object) -> object:
    if isinstance(v, np.generic):
        return v.item()
    return v


# ----------------------------------------------------------------------------------------------------
# Evaluation context
# ----------------------------------------------------------------------------------------------------

_INT_COLS_CACHE_KEY = "__int__"


class _RowsView:
    """Some rows of a catalog frame, taken column by column on first use (a wide catalog's ``iloc`` over
    every column costs more than the few columns a rule reads). Offers what predicates use of a frame --
    ``columns``, ``len()``, ``view[name]`` (a Series with a fresh 0..n-1 index) -- and builds the whole
    sub-frame for anything else."""

    def __init__(self, df: pd.DataFrame, rows: np.ndarray) -> None:
        self._df, self._rows, self._cols = df, rows, {}
        self.columns = df.columns

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, name):
        if not isinstance(name, str):
            return self._frame()[name]
        s = self._cols.get(name)
        if s is None:
            s = self._cols[name] = self._df[name].iloc[self._rows].reset_index(drop=True)
        return s

    def _frame(self) -> pd.DataFrame:
        f = self._cols.get(None)
        if f is None:
            f = self._cols[None] = self._df.iloc[self._rows].reset_index(drop=True)
        return f

    def __getattr__(self, attr):
        return getattr(self._frame(), attr)


class Ctx:
    """Columns of N cells (``n_models`` models x ``n_tp`` TP sizes, model-major) as numpy arrays.

    Model columns are extracted once per model and repeated lazily (``np.repeat``) on first use;
    derived arrays are memoized with :meth:`memo` so rules of several frameworks share the work.

    Parameters
    ----------
    models : DataFrame of catalog records (schema columns; missing columns count as NA).
    tp_sizes : 1-D int array of TP sizes; cell ``i`` is model ``i // n_tp`` at ``tp_sizes[i % n_tp]``.
    pp, dp, ep : pipeline, data and expert parallel sizes (>= 1): scalars (the same for every cell), or
        1-D arrays aligned with ``tp_sizes`` (one parallel layout per entry, repeated for every model;
        :func:`dashboard.rules.layout_grid`). Per-cell values are then int64 arrays of length N.
    dp_attention : SGLang DP-attention / TensorRT-LLM attention-DP flag (scalar, or a bool array aligned
        with ``tp_sizes``).
    vision_dp : the vision encoder runs data-parallel (vLLM ``mm_encoder_tp_mode="data"``; scalar).
    expert_parallel : vLLM ``--enable-expert-parallel`` (the EP size is then ``tp x dp``, per cell);
        implied by ``ep > 1``. Scalar, or a bool array aligned with ``tp_sizes``.
    model_memo : a dict to keep the per-model derived columns in (:meth:`model_level`), shared by every
        Ctx built over the very same ``models`` frame -- e.g. one model planned at many GPU counts. Only
        values that depend on the models alone go there; None: this Ctx's own memo.
    platform : the GPU platform the cells are judged for (:data:`dashboard.gpus.PLATFORMS` id; None: the
        default, :data:`dashboard.gpus.DEFAULT_PLATFORM`, an H100). Rules keyed by platform read it
        (:attr:`Rule.platforms`, kernel and attention-backend selection).
    device_name : the name the GPU reports (``torch.cuda.get_device_name()``: "NVIDIA A10"), for messages
        that print it; None: the platform's stand-in card's.
    kv_cache_dtype : the KV-cache dtype the user asks for (``--kv-cache-dtype``, the engine's spelling); None or
        ``"auto"``: the checkpoint's declared scheme, else the model dtype (rules that read it: the attention
        backends).

    With scalar sizes the attributes ``pp``, ``dp``, ``ep``, ``dp_attention``, ``expert_parallel`` are
    Python scalars (the common case, unchanged); with per-layout arrays they are per-cell numpy arrays,
    and predicates combine them elementwise (``np.any`` guards, ``& (ctx.ep > 1)`` masks).
    """

    def __init__(
        self,
        models: pd.DataFrame,
        tp_sizes: np.ndarray,
        *,
        pp: int = 1,
        dp: int = 1,
        ep: int = 1,
        dp_attention: bool = False,
        vision_dp: bool = False,
        expert_parallel: bool = False,
        model_memo: dict | None = None,
        platform: str | None = None,
        device_name: str | None = None,
        kv_cache_dtype: str | None = None,
    ) -> None:
        from dashboard import gpus

        # the user's --kv-cache-dtype (the engine's spelling; None / "auto": the checkpoint's and the model's)
        self.kv_cache_dtype = str(kv_cache_dtype) if kv_cache_dtype not in (None, "", "auto") else None

        # a card of unknown family (given by its memory) is judged as the default platform
        unknown = platform is None or platform == gpus.UNKNOWN_PLATFORM
        self.platform = gpus.DEFAULT_PLATFORM if unknown else gpus.platform(platform).id
        self.device_name = str(device_name) if device_name else None
        self.models = models
        self.n_models = len(models)
        # whole numbers in 1 .. MAX_PARALLEL, never truncated (4.5 is an error, not 4)
        self.tp_sizes = sharding.parallel_sizes(tp_sizes, "TP size")
        self.n_tp = len(self.tp_sizes)
        self.n = self.n_models * self.n_tp
        self.tp = np.tile(self.tp_sizes, self.n_models)
        self.pp = self._layout_sizes(pp, "pp")
        self.dp = self._layout_sizes(dp, "dp")
        self.ep = self._layout_sizes(ep, "ep")
        self.dp_attention = self._layout_flags(dp_attention, "dp_attention")
        self.vision_dp = bool(vision_dp)
        ep_on = self.ep > 1
        if isinstance(expert_parallel, (np.ndarray, list, tuple)) or np.ndim(ep_on):
            flags = self._layout_flags(expert_parallel, "expert_parallel")
            self.expert_parallel = np.broadcast_to(np.asarray(flags) | ep_on, (self.n,)).copy()
        else:
            self.expert_parallel = bool(expert_parallel) or bool(ep_on)
        self._memo: dict[object, object] = {}
        self._model_memo: dict[object, object] = self._memo if model_memo is None else model_memo
        self._layout_args = dict(pp=pp, dp=dp, ep=ep, dp_attention=dp_attention, vision_dp=vision_dp,
                                 expert_parallel=expert_parallel, platform=self.platform,
                                 device_name=self.device_name, kv_cache_dtype=self.kv_cache_dtype)

    def subset(self, model_rows: np.ndarray) -> tuple["Ctx", np.ndarray]:
        """A Ctx over the models at positions ``model_rows`` (same layouts), and the indices of its cells
        in this Ctx (sub-cell ``k`` is cell ``cells[k]`` here). Lets a rule scoped to a few architectures
        run over their cells only; the sub-Ctx memoizes on its own."""
        rows = np.asarray(model_rows, dtype=np.int64)
        sub = Ctx(_RowsView(self.models, rows), self.tp_sizes, **self._layout_args)
        cells = (rows[:, None] * self.n_tp + np.arange(self.n_tp)[None, :]).ravel()
        return sub, cells

    def arch_models(self, names: tuple[str, ...], exclude: tuple[str, ...] = ()) -> np.ndarray:
        """Per model (not per cell): ``architectures[0]`` is in ``names`` (any when empty) and not in
        ``exclude``."""
        k = ("mflag", f"arch:{names}:{exclude}")
        if k not in self._model_memo:
            a = self.arch()
            ok = np.isin(a, list(names)) if names else np.ones(len(a), dtype=bool)
            if exclude:
                ok &= ~np.isin(a, list(exclude))
            self._model_memo[k] = ok
        return self._model_memo[k]  # type: ignore[return-value]

    @property
    def per_layout(self) -> bool:
        """Whether any of pp / dp / ep / dp_attention / expert_parallel varies per cell (arrays)."""
        return any(np.ndim(v) for v in (self.pp, self.dp, self.ep, self.dp_attention, self.expert_parallel))

    def _layout_sizes(self, value: object, name: str):
        """A scalar size (int) or a per-layout array aligned with ``tp_sizes`` -> per-cell int64 array."""
        if isinstance(value, (np.ndarray, list, tuple)):
            arr = sharding.parallel_sizes(np.asarray(value, dtype=np.int64) if not isinstance(value, np.ndarray)
                                          else value, name)
            if arr.shape != (self.n_tp,):
                raise ValueError(f"{name} per layout must have one entry per TP size ({self.n_tp}), got {arr.shape}")
            return np.tile(arr, self.n_models)
        return sharding.parallel_size(value, name)

    def _layout_flags(self, value: object, name: str):
        """A scalar flag (bool) or a per-layout bool array aligned with ``tp_sizes`` -> per-cell array."""
        if isinstance(value, (np.ndarray, list, tuple)):
            arr = np.asarray(value, dtype=bool).ravel()
            if arr.shape != (self.n_tp,):
                raise ValueError(f"{name} per layout must have one entry per TP size ({self.n_tp}), got {arr.shape}")
            return np.tile(arr, self.n_models)
        return bool(value)

    def cells(self, value: object) -> np.ndarray:
        """``value`` (a scalar or a per-cell array) as a length-N array (read-only broadcast)."""
        return np.broadcast_to(np.asarray(value), (self.n,))

    # -- raw columns --------------------------------------------------------------------------------
    def model_level(self, key: object, fn: Callable[[], object]):
        """Memoize a value that depends on the models only (not on the TP sizes or the layout) under
        ``key``, in the shared ``model_memo`` when one was given."""
        if key not in self._model_memo:
            self._model_memo[key] = fn()
        return self._model_memo[key]

    def _model_int(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        key = ("mint", name)
        if key not in self._model_memo:
            if name not in self.models.columns:
                vals = np.zeros(self.n_models, dtype=np.int64)
                has = np.zeros(self.n_models, dtype=bool)
            else:
                s = self.models[name]
                if not pd.api.types.is_integer_dtype(s.dtype):
                    s = pd.to_numeric(s, errors="coerce")
                    s = s.where(np.isfinite(s.astype("float64")) & (s.astype("float64") % 1 == 0))
                has = s.notna().to_numpy(dtype=bool)
                vals = s.fillna(0).to_numpy(dtype=np.int64)
            self._model_memo[key] = (vals, has)
        return self._model_memo[key]  # type: ignore[return-value]

    def _rep(self, key: object, model_level: np.ndarray) -> np.ndarray:
        k = ("rep", key)
        if k not in self._memo:
            self._memo[k] = model_level if self.n_tp == 1 else np.repeat(model_level, self.n_tp)
        return self._memo[k]  # type: ignore[return-value]

    def i(self, name: str) -> np.ndarray:
        """Integer column ``name`` per cell (NA -> 0; combine with :meth:`has`)."""
        return self._rep(("i", name), self._model_int(name)[0])

    def has(self, name: str) -> np.ndarray:
        """True where column ``name`` is present (not NA) and > 0 for counts."""
        vals, has = self._model_int(name)
        return self._rep(("h", name), has & (vals > 0))

    def flag(self, key: str, fn: Callable[[pd.DataFrame], np.ndarray]) -> np.ndarray:
        """A boolean derived once per model by ``fn(models) -> bool[n_models]``, repeated per cell."""
        k = ("mflag", key)
        if k not in self._model_memo:
            self._model_memo[k] = np.asarray(fn(self.models), dtype=bool)
        return self._rep(("f", key), self._model_memo[k])  # type: ignore[arg-type]

    def bool_col(self, name: str) -> np.ndarray:
        """Boolean column per cell (NA -> False)."""

        def fn(df: pd.DataFrame) -> np.ndarray:
            if name not in df.columns:
                return np.zeros(len(df), dtype=bool)
            s = df[name]
            if s.dtype == object:
                s = s.map(lambda v: bool(v) if isinstance(v, (bool, np.bool_)) else False)
            return s.fillna(False).to_numpy(dtype=bool)

        return self.flag("bool:" + name, fn)

    def str_in(self, name: str, values: tuple[str, ...]) -> np.ndarray:
        """True where string column ``name`` (lower-cased) is one of ``values``."""

        def fn(df: pd.DataFrame) -> np.ndarray:
            if name not in df.columns:
                return np.zeros(len(df), dtype=bool)
            s = df[name].astype("string").str.lower()
            return s.isin(values).fillna(False).to_numpy(dtype=bool)

        return self.flag(f"in:{name}:{values}", fn)

    def str_startswith(self, name: str, prefixes: tuple[str, ...]) -> np.ndarray:
        """True where string column ``name`` (lower-cased) starts with one of ``prefixes``."""

        def fn(df: pd.DataFrame) -> np.ndarray:
            if name not in df.columns:
                return np.zeros(len(df), dtype=bool)
            s = df[name].astype("string").str.lower().fillna("")
            out = np.zeros(len(df), dtype=bool)
            for p in prefixes:
                out |= s.str.startswith(p).to_numpy(dtype=bool)
            return out

        return self.flag(f"sw:{name}:{prefixes}", fn)

    def arch(self) -> np.ndarray:
        """``architectures[0]`` per model (object array of str, "" when missing)."""

        def fn() -> np.ndarray:
            if "architectures" not in self.models.columns:
                return np.full(self.n_models, "", dtype=object)
            s = self.models["architectures"].astype("string").fillna("")
            return s.str.split(",").str[0].str.strip().to_numpy(dtype=object)

        return self.model_level(("arch_models",), fn)  # type: ignore[return-value]

    def arch_in(self, names: tuple[str, ...], exclude: tuple[str, ...] = ()) -> np.ndarray:
        """Per cell: ``architectures[0]`` is in ``names`` (every architecture when empty) and not in
        ``exclude``."""

        return self.flag(f"arch:{names}:{exclude}", lambda df: self.arch_models(names, exclude))

    def ep_size(self, framework: str | None = None) -> np.ndarray:
        """Expert-parallel size per cell, as ``framework`` defines it
        (:meth:`dashboard.frameworks.base.Framework.ep_size`; None: the default definition -- ``tp x dp``
        under vLLM's ``--enable-expert-parallel``, the given ``ep`` otherwise, 1 without EP)."""
        from dashboard import frameworks

        fw = frameworks.get(framework) if framework else frameworks.base.Framework()
        return self.memo(("ep_size", framework), lambda: np.broadcast_to(
            fw.ep_size(self.tp, self.cells(self.dp), self.cells(self.ep), self.cells(self.expert_parallel)),
            (self.n,)).astype(np.int64))

    def memo(self, key: object, fn: Callable[[], object]):
        """Memoize a derived array under ``key`` (shared by every rule of every framework)."""
        if key not in self._memo:
            self._memo[key] = fn()
        return self._memo[key]

    # -- shared derived quantities ------------------------------------------------------------------
    def attn_tp(self, framework: str) -> np.ndarray:
        """Attention-TP of the layout per cell, as ``framework`` defines it without a model file
        (:meth:`dashboard.frameworks.base.Framework.attention_tp`: SGLang DP-attention ``tp // dp``,
        TensorRT-LLM attention-DP 1, otherwise ``tp``)."""
        from dashboard import frameworks

        fw = frameworks.get(framework)
        return self.memo(("attn_tp", fw.name), lambda: self._cell_array(
            fw.attention_tp(self.tp, self.cells(self.dp), self.cells(self.dp_attention))))

    def attention_tp_of(self, framework: str, release: str | None = None) -> np.ndarray:
        """Attention-TP per cell of each model's own file (:meth:`Framework.attention_tp` with the
        cells' ``architectures[0]`` and ``release``)."""
        from dashboard import frameworks

        fw = frameworks.get(framework)
        return self.memo(("attn_tp_of", fw.name, release), lambda: self._cell_array(fw.attention_tp(
            self.tp, self.cells(self.dp), self.cells(self.dp_attention), arch=self._rep(("arch",), self.arch()),
            release=release)))

    def _cell_array(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.int64)
        if a.shape == (self.n,) and np.array_equal(a, self.tp):
            return self.tp  # the very array, so memo keys on id(tp) stay shared
        return np.broadcast_to(a, (self.n,)).copy()

    def not_div(self, name_or_arr, by: np.ndarray | int, key: object | None = None) -> np.ndarray:
        """``a % by != 0`` (memoized when ``name_or_arr`` is a column name or ``key`` is given)."""
        if isinstance(name_or_arr, str):
            a = self.i(name_or_arr)
            key = ("nd", name_or_arr, id(by) if isinstance(by, np.ndarray) else by)
        else:
            a = name_or_arr
        byv = np.maximum(by, 1)
        if key is None:
            return (a % byv) != 0
        return self.memo(key, lambda: (a % byv) != 0)

    def moe_tp(self, framework: str) -> np.ndarray:
        """TP degree inside one expert's MLP per cell, as ``framework`` defines it
        (:meth:`dashboard.frameworks.base.Framework.moe_tp`)."""
        from dashboard import frameworks

        fw = frameworks.get(framework)
        return self.memo(("moe_tp", fw.name), lambda: self._cell_array(
            fw.moe_tp(self.tp, self.cells(self.ep), self.cells(self.expert_parallel))))

    def is_mla(self) -> np.ndarray:
        return self.bool_col("is_mla")

    def is_moe(self) -> np.ndarray:
        return self.memo(("is_moe",), lambda: self.bool_col("is_moe") | self.has("num_experts"))

    def has_dense_mlp(self) -> np.ndarray:
        """Model has dense-MLP layers: not MoE, or MoE with ``num_dense_layers > 0``."""

        def fn() -> np.ndarray:
            dense = self.has("num_dense_layers")  # > 0
            return self.has("intermediate_size") & (~self.is_moe() | dense)

        return self.memo(("dense",), fn)

    def linear_kind(self, kind: str) -> np.ndarray:
        return self.str_in("linear_attention_kind", (kind,))

    def fp8_block(self) -> np.ndarray:
        """Block-FP8 checkpoint: ``quant_method`` fp8 (or compressed-tensors/modelopt block FP8) with a
        ``weight_block_size``."""
        return self.memo(("fp8b",), lambda: self.has("weight_block_n") & self.has("weight_block_k"))

    def group_quant(self) -> np.ndarray:
        """AWQ / GPTQ checkpoint with a positive ``group_size``."""
        return self.memo(
            ("gq",),
            lambda: self.str_in("quant_method", ("awq", "gptq", "awq_marlin", "gptq_marlin"))
            & self.has("quant_group_size"),
        )


# ----------------------------------------------------------------------------------------------------
# Small helpers for predicates
# ----------------------------------------------------------------------------------------------------


def per_rank(total: np.ndarray, tp: np.ndarray) -> np.ndarray:
    """``total // tp`` (the per-rank shard when it divides)."""
    return total // np.maximum(tp, 1)


def not_multiple(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a % b != 0`` with ``b >= 1``."""
    return (a % np.maximum(b, 1)) != 0


def divide_msg_fields(a: np.ndarray, b: np.ndarray) -> Fields:
    return {"a": a, "b": b}


def kv_partition_fail(kv: np.ndarray, tp: np.ndarray) -> tuple[np.ndarray, Fields]:
    """vLLM/SGLang ``QKVParallelLinear``: if ``tp >= kv`` then ``divide(tp, kv)`` (replication) else
    ``divide(kv, tp)``. Returns the fire mask and the ``{a} is not divisible by {b}`` fields."""
    rep = tp >= kv
    a = np.where(rep, tp, kv)
    b = np.where(rep, kv, tp)
    return not_multiple(a, b), {"a": a, "b": b}


__all__ = [
    "KINDS",
    "EFFECTS",
    "Rule",
    "Ctx",
    "per_rank",
    "not_multiple",
    "kv_partition_fail",
    "sharding",
]
