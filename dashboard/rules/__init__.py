"""The rules engine: which (model, TP) pairs each serving framework accepts, and why not.

Public API (the contract in the team preamble)
-----------------------------------------------
* :func:`check` -- one catalog record under one framework and parallel layout -> :class:`Verdict`
  (failing rules with the framework's own message and source, warnings, suggestions).
* :func:`grid` -- the whole catalog x TP sizes x frameworks -> tidy DataFrame, vectorized with numpy
  (no per-cell Python in the hot path).
* :data:`RULES` -- every rule as data (:class:`~dashboard.rules.common.Rule`), one module per framework
  (:mod:`.vllm`, :mod:`.sglang`, :mod:`.transformers`, :mod:`.trtllm`, :mod:`.megatron`).

``check`` runs the very same vectorized predicates on a one-row frame; there is one implementation.
Pure: no I/O, no Panel.
"""

from __future__ import annotations

import functools

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard import schema, sharding
from dashboard.rules import megatron as _megatron
from dashboard.rules import megatron_executed as _megatron_executed
from dashboard.rules import sglang as _sglang
from dashboard.rules import sglang_executed as _sglang_executed
from dashboard.rules import transformers as _transformers
from dashboard.rules import transformers_executed as _transformers_executed
from dashboard.rules import trtllm as _trtllm
from dashboard.rules import versions as _versions
from dashboard.rules import vllm as _vllm
from dashboard.rules.common import KINDS, Ctx, Rule

__all__ = [
    "RULES",
    "RULES_BY_FRAMEWORK",
    "KINDS",
    "Rule",
    "RuleHit",
    "Verdict",
    "check",
    "grid",
    "layout_grid",
    "rules_for",
    "rules_frame",
    "rules_markdown",
]

#: Every rule, in evaluation order within each framework.
RULES: list[Rule] = [
    *_vllm.RULES,
    *_sglang.RULES,
    *_sglang_executed.RULES,
    *_transformers.RULES,
    *_transformers_executed.RULES,
    *_trtllm.RULES,
    *_megatron.RULES,
    *_megatron_executed.RULES,
]

RULES_BY_FRAMEWORK: dict[str, list[Rule]] = {fw: [r for r in RULES if r.framework == fw] for fw in schema.FRAMEWORKS}

#: Frameworks that replicate KV heads when kv < attention-TP (status ``valid_replicated``).
_REPLICATING = {"vllm", "sglang", "tensorrt-llm"}


@dataclass(frozen=True)
class RuleHit:
    """One rule that fired for a record: the framework's message with its numbers filled in."""

    rule_id: str
    framework: str
    kind: str
    message: str
    source_url: str
    severity: str  # "error" | "warning"
    location: str = ""  # raise site "path/in/package.py:line" in the release, where known
    exc_type: str = ""  # the exception the framework raises ("" for warnings / our own messages)
    evidence: str = "source"  # "executed" (a conformance table reproduces it) or "source"
    ours: bool = False  # the message is this project's words, not the framework's
    condition: str = ""  # the rule's condition in words (what is wrong, for messages that say nothing)


@dataclass(frozen=True)
class Verdict:
    """What a framework does with one (model, parallel layout).

    ``valid`` is True exactly when ``failures`` is empty. ``status`` is one of
    :data:`dashboard.schema.CELL_STATUSES`; read it too: ``status == "unknown"`` means the record lacks
    fields some rules need (they were skipped; a warning ``engine.missing_fields`` names them), so
    ``valid`` then only says that no *checkable* rule failed. Per-rank counts are heads (not bytes); ``None`` when the
    record lacks the heads. ``attn_tp`` is the TP degree of the attention layers (``tp / dp`` under
    SGLang DP-attention for model files on the attention-TP group -- from SGLang 0.5.23 per model file,
    the full TP for Llama, Qwen2, Gemma, ... --, 1 under TensorRT-LLM attention-DP).
    """

    model_id: str
    framework: str
    version: str | None
    tp: int
    pp: int
    dp: int
    ep: int
    dp_attention: bool
    valid: bool
    status: str
    failures: tuple[RuleHit, ...]
    warnings: tuple[RuleHit, ...]
    suggestions: tuple[str, ...]
    q_heads_per_rank: int | None
    kv_heads_per_rank: int | None
    kv_replicas: int | None
    attn_tp: int
    release: str | None = None  # the release whose rules were applied (a date maps to one)
    executed: bool = False  # that release was run through the conformance harness
    notice: str = ""  # how ``version`` was mapped to ``release``, when it was not the identity
    expert_parallel: bool = False  # vLLM --enable-expert-parallel (EP size = tp x dp)

    @property
    def evidence(self) -> str:
        """``executed`` when the verdict and its first error (the one a user sees) were reproduced by
        running the framework's own code at ``release``: an executed release, and no failing rule or a
        first failing rule with executed evidence (the further failing rules the engine lists may be
        read from source: the framework stops at the first); else ``source``."""
        if not self.executed:
            return "source"
        return "executed" if not self.failures or self.failures[0].evidence == "executed" else "source"


# ----------------------------------------------------------------------------------------------------
# version handling
# ----------------------------------------------------------------------------------------------------


def _parse_version(version: str | None):
    if version is None:
        return None
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging ships with pip/setuptools
        return None
    text = str(version).strip().lstrip("v")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)*((a|b|rc|\.post|\.dev)\d+)*(\+[\w.]+)?", text):
        return None  # dates ("2025-05"), bare years, words ("seed") are not release numbers
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _rule_applies_to_version(rule: Rule, version: str | None) -> bool:
    """A rule holds for ``version`` when its specifier contains it. ``None`` (or a version that is not a
    PEP 440 version, e.g. a date) means "the current release": every rule without an upper bound."""
    if not rule.versions:
        return True
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(rule.versions)
    v = _parse_version(version)
    if v is None:
        return not any(s.operator in ("<", "<=", "==", "~=") for s in spec)
    return spec.contains(v, prereleases=True)


_REPO_URL = {"vllm": "https://github.com/vllm-project/vllm/blob",
             "sglang": "https://github.com/sgl-project/sglang/blob/v{release}/python",
             "transformers-native-tp": _transformers_executed.REPO,
             "transformers-cb-cache": _transformers_executed.REPO,
             "megatron-core": "https://github.com/NVIDIA/Megatron-LM/blob/core_v{release}"}


def resolve_version(framework: str, version: str | None) -> _versions.Resolved:
    """What ``version`` means for ``framework`` (see :func:`dashboard.rules.versions.resolve`)."""
    if framework not in RULES_BY_FRAMEWORK:
        raise ValueError(f"unknown framework {framework!r}; expected one of {schema.FRAMEWORKS}")
    return _versions.resolve(framework, version)


_RULES_CACHE: dict[tuple[str, str | None], list[Rule]] = {}


def _rules_for(framework: str, version: str | None) -> list[Rule]:
    """The framework's rules that hold at ``version``, each as it reads in the resolved release."""
    res = resolve_version(framework, version)
    key = (framework, res.release if framework in _versions.EXECUTED else version)
    if key not in _RULES_CACHE:
        rel = res.release if framework in _versions.EXECUTED else version
        picked = [r for r in RULES_BY_FRAMEWORK[framework] if _rule_applies_to_version(r, rel)]
        if framework in _versions.EXECUTED:
            picked = [r.for_release(res.release, _REPO_URL.get(framework, "")) for r in picked]
        _RULES_CACHE[key] = picked
    return _RULES_CACHE[key]


# ----------------------------------------------------------------------------------------------------
# core evaluation (shared by grid and check)
# ----------------------------------------------------------------------------------------------------


@dataclass
class _Eval:
    rules: list[Rule]
    fire: list[np.ndarray]
    fields: list[dict[str, np.ndarray]]
    unknown: np.ndarray
    padded: np.ndarray
    replicated: np.ndarray
    q_per_rank: np.ndarray
    kv_per_rank: np.ndarray
    kv_rep: np.ndarray
    has_q: np.ndarray
    has_kv: np.ndarray
    attn_tp: np.ndarray


def _scatter(sub: Ctx, cells: np.ndarray, n: int, fire_sub, fields_sub: dict) -> tuple[np.ndarray, dict]:
    """A predicate's result over a sub-Ctx (:meth:`Ctx.subset`) as arrays over the ``n`` cells of the whole
    Ctx. Message fields are read only where the rule fires, so they are scattered only then."""
    f_sub = np.broadcast_to(np.asarray(fire_sub, dtype=bool), (sub.n,))
    f = np.zeros(n, dtype=bool)
    f[cells] = f_sub
    flds: dict = {}
    if f_sub.any():
        for name, v in fields_sub.items():
            if np.ndim(v):
                v = np.broadcast_to(np.asarray(v), (sub.n,))
                flds[name] = np.zeros(n, dtype=v.dtype)
                flds[name][cells] = v
            else:
                flds[name] = v
    return f, flds


def _evaluate(ctx: Ctx, framework: str, version: str | None) -> _Eval:
    rules = _rules_for(framework, version)
    fire, fields = [], []
    unknown = np.zeros(ctx.n, dtype=bool)
    padded = np.zeros(ctx.n, dtype=bool)
    never = np.zeros(ctx.n, dtype=bool)
    subs: dict[tuple, tuple[Ctx, np.ndarray]] = {}
    for r in rules:
        scoped = bool(r.architectures or r.exclude_architectures)
        scope = ctx.arch_in(r.architectures, r.exclude_architectures) if scoped else True
        in_scope = ctx.arch_models(r.architectures, r.exclude_architectures) if scoped else None
        n_in = ctx.n_models if in_scope is None else int(in_scope.sum())
        if n_in == 0:
            # no cell's architecture is in the rule's scope: it cannot fire and needs nothing (no unknown
            # cells); skipping its predicate is what keeps one model's plan fast (most rules are per class)
            fire.append(never)
            fields.append({})
            continue
        if in_scope is not None and n_in * 2 <= ctx.n_models:
            # a few architectures of a big catalog: run the predicate over their cells only
            key = (r.architectures, r.exclude_architectures)
            if key not in subs:
                subs[key] = ctx.subset(np.flatnonzero(in_scope))
            sub, cells = subs[key]
            f, flds = _scatter(sub, cells, ctx.n, *r.predicate(sub))
        else:
            f, flds = r.predicate(ctx)
            f = np.asarray(f, dtype=bool)
            if f.shape != (ctx.n,):
                f = np.broadcast_to(f, (ctx.n,)).copy()
            if scoped:
                f = f & scope
        fire.append(f)
        fields.append(flds)
        for col in r.needs:
            unknown |= ~ctx.has(col) & scope
        if r.effect == "padded":
            padded |= f
    from dashboard import frameworks  # the framework defines attention-TP and the KV split

    fw = frameworks.get(framework)
    t = ctx.attention_tp_of(framework, resolve_version(framework, version).release)
    h = ctx.i("num_attention_heads")
    kv = np.maximum(ctx.i("num_key_value_heads"), 1)
    has_q = ctx.has("num_attention_heads")
    mla = ctx.is_mla()
    has_kv = ctx.has("num_key_value_heads") | (mla & has_q)
    q_per_rank = fw.q_heads_per_rank(h, t)
    kv_per_rank = fw.kv_heads_per_rank(kv, t, heads=h, is_mla=mla)
    kv_rep = fw.kv_replicas(kv, t, heads=h, is_mla=mla)
    replicated = fw.kv_replicated(ctx.i("num_key_value_heads"), t, is_mla=mla) & ctx.has("num_key_value_heads")
    return _Eval(rules, fire, fields, unknown, padded, replicated, q_per_rank, kv_per_rank, kv_rep, has_q,
                 has_kv, t)


def _status(any_error: np.ndarray, ev: _Eval) -> np.ndarray:
    """Cell status codes into schema.CELL_STATUSES (worst wins: invalid > unknown > padded > replicated)."""
    st = np.zeros(any_error.shape, dtype=np.int8)  # valid
    st[ev.replicated] = 1
    st[ev.padded] = 2
    st[ev.unknown] = 4
    st[any_error] = 3
    return st


_STATUS_CATS = list(schema.CELL_STATUSES)


def _to_ctx(records: pd.DataFrame | Mapping | pd.Series, tp_sizes, **kw) -> Ctx:
    if isinstance(records, pd.DataFrame):
        df = records.reset_index(drop=True)
    elif isinstance(records, pd.Series):
        df = records.to_frame().T.reset_index(drop=True)
    elif isinstance(records, Mapping):
        df = pd.DataFrame([dict(records)])
    else:
        raise TypeError(f"record must be a mapping, Series or DataFrame, got {type(records).__name__}")
    return Ctx(df, sharding.parallel_sizes(tp_sizes, "TP size"), **kw)


# ----------------------------------------------------------------------------------------------------
# grid
# ----------------------------------------------------------------------------------------------------


def _factorize_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the distinct rows of ``cols`` (equal-length int arrays) and the index of each distinct
    row's first occurrence. Vectorized: per-column factorization combined in a mixed radix."""
    key = np.zeros(cols[0].shape[0], dtype=np.int64)
    space = 1
    for c in cols:
        codes, uniq = pd.factorize(np.asarray(c))
        radix = max(len(uniq), 1)
        if space * radix >= 2**62:
            key, u = pd.factorize(key)
            space = max(len(u), 1)
        key = key * radix + codes
        space *= radix
    codes, uniq = pd.factorize(key)
    first = np.full(len(uniq), -1, dtype=np.int64)
    order = np.arange(codes.shape[0])[::-1]
    first[codes[order]] = order  # last write wins -> first occurrence
    return codes.astype(np.int64), first


class _Strings:
    """Interned message strings (the categories of the grid's message columns)."""

    def __init__(self) -> None:
        self.strings: list[str] = [""]
        self.index: dict[str, int] = {"": 0}

    def code(self, s: str) -> int:
        c = self.index.get(s)
        if c is None:
            c = len(self.strings)
            self.index[s] = c
            self.strings.append(s)
        return c


def _message_codes(rule: Rule, fire: np.ndarray, fields: dict[str, np.ndarray], interned: _Strings) -> np.ndarray:
    """Per-cell code of the rule's formatted message (0 = "" where it did not fire). Messages are
    formatted once per distinct combination of field values."""
    codes = np.zeros(fire.shape, dtype=np.int64)
    idx = np.flatnonzero(fire)
    if idx.size == 0:
        return codes
    names = rule.message_fields
    if not names:
        codes[idx] = interned.code(rule.message)
        return codes
    cols = [np.asarray(fields[n])[idx] if np.ndim(fields[n]) else np.full(idx.size, fields[n]) for n in names]
    local, first = _factorize_rows(cols)
    mapping = np.array(
        [interned.code(rule.format({n: c[j] for n, c in zip(names, cols)})) for j in first], dtype=np.int64
    )
    codes[idx] = mapping[local]
    return codes


def _join_codes(code_arrays: list[np.ndarray], interned: _Strings) -> np.ndarray:
    """Code of the "\\n"-joined messages of every failing rule, per cell (0 where none); each distinct
    combination of per-rule codes is joined once."""
    n = code_arrays[0].shape[0]
    n_hit = np.zeros(n, dtype=np.int8)
    single = np.zeros(n, dtype=np.int64)
    for c in code_arrays:
        hit = c > 0
        n_hit += hit
        np.maximum(single, c, out=single)  # the code of the only failing rule where exactly one fails
    out = np.where(n_hit == 1, single, 0)
    idx = np.flatnonzero(n_hit > 1)  # only cells where several rules fail need joining
    if idx.size == 0:
        return out
    cols = [c[idx] for c in code_arrays]
    local, first = _factorize_rows(cols)
    strs = np.array(interned.strings, dtype=object)
    acc = np.full(first.size, "", dtype=object)
    nonempty = np.zeros(first.size, dtype=bool)
    for c in cols:  # vectorized over the distinct combinations (object-array concatenation)
        cj = c[first]
        hit = cj > 0
        if not hit.any():
            continue
        both = hit & nonempty
        acc[both] = acc[both] + "\n" + strs[cj[both]]
        only = hit & ~nonempty
        acc[only] = strs[cj[only]]
        nonempty |= hit
    mapping = np.array([interned.code(x) for x in acc], dtype=np.int64)
    out[idx] = mapping[local]
    return out


def _grid_arrays(ctx: Ctx, framework: str, version: str | None, interned: _Strings,
                 rule_ids: _Strings, detail: bool = False, messages: bool = True) -> dict[str, np.ndarray]:
    ev = _evaluate(ctx, framework, version)
    n = ctx.n
    errors = [(r, f, fl) for r, f, fl in zip(ev.rules, ev.fire, ev.fields) if r.severity == "error"]
    first_rule = np.zeros(n, dtype=np.int64)
    first_msg = np.zeros(n, dtype=np.int64)
    n_fail = np.zeros(n, dtype=np.int64)
    code_arrays, fired = [], []
    for r, f, fl in errors:
        if not f.any():  # most rules fire nowhere: no message codes to build
            continue
        if not messages:  # verdicts only: the first failing rule, no message text
            first_rule[f & (first_rule == 0)] = rule_ids.code(r.id)
            n_fail += f
            continue
        codes = _message_codes(r, f, fl, interned)
        code_arrays.append(codes)
        fired.append(r)
        newly = f & (first_rule == 0)
        first_rule[newly] = rule_ids.code(r.id)
        first_msg[newly] = codes[newly]
        n_fail += f
    any_error = n_fail > 0
    all_msgs = _join_codes(code_arrays, interned) if code_arrays else np.zeros(n, dtype=np.int64)
    extra: dict[str, np.ndarray] = {}
    if detail:  # per cell: every failing rule as (rule id, message), in evaluation order
        hits: list[list[tuple[str, str]]] = [[] for _ in range(n)]
        for r, codes in zip(fired, code_arrays):
            for i in np.flatnonzero(codes):
                hits[i].append((r.id, interned.strings[codes[i]]))
        extra["failures"] = np.array([tuple(h) for h in hits] + [None], dtype=object)[:-1]
        extra["attn_tp"] = np.asarray(ev.attn_tp, dtype=np.int64)
    return {**extra,
        "framework": np.full(n, schema.FRAMEWORKS.index(framework), dtype=np.int64),
        "tp": ctx.tp,
        "valid": ~any_error,
        "status": _status(any_error, ev).astype(np.int64),
        "rule_id": first_rule,
        "message": first_msg,
        "n_failures": n_fail,
        "messages": all_msgs,
        "q": ev.q_per_rank,
        "q_na": ~ev.has_q,
        "kv": ev.kv_per_rank,
        "rep": ev.kv_rep,
        "kv_na": ~ev.has_kv,
    }


def grid(
    catalog_df: pd.DataFrame,
    tp_sizes: Sequence[int] = schema.DEFAULT_TP_SIZES,
    frameworks: Iterable[str] = schema.FRAMEWORKS,
    *,
    pp: int = 1,
    dp: int = 1,
    ep: int = 1,
    dp_attention: bool = False,
    vision_dp: bool = False,
    version: str | None = None,
    expert_parallel: bool = False,
) -> pd.DataFrame:
    """Validity of every catalog model at every TP size under every framework.

    Parameters
    ----------
    catalog_df : catalog records (schema columns; a missing column counts as NA).
    tp_sizes : TP sizes (>= 1), in display order.
    frameworks : framework ids from :data:`dashboard.schema.FRAMEWORKS`.
    pp, dp, ep, dp_attention, vision_dp : the other parallel settings, the same for every cell.
    version : framework release (PEP 440), a date ("2025-05": the release current then) or None for
        the newest release run through the conformance harness (vLLM) / the current rules (others).
    expert_parallel : vLLM ``--enable-expert-parallel``: the EP size is ``tp x dp`` for each cell
        (use this rather than ``ep`` for vLLM, whose EP size is derived, not chosen).

    Returns
    -------
    DataFrame, one row per (model_id, framework, tp), framework-major then model then TP:
    ``model_id, framework, tp, valid, status, rule_id, message, n_failures, messages,
    q_heads_per_rank, kv_heads_per_rank, kv_replicas``. ``rule_id``/``message`` are the first failing
    rule ("" if none); ``messages`` joins every failing rule's message with "\\n". String columns are
    categoricals; per-rank counts are nullable Int64 (heads, not bytes).

    Raises
    ------
    ValueError for an unknown framework or a size that is not a whole number in
    ``1 .. dashboard.sharding.MAX_PARALLEL``.
    """
    tps = sharding.parallel_sizes(list(tp_sizes), "TP size")  # never truncated: 4.5 is an error
    models = catalog_df.reset_index(drop=True)
    ids = (
        models["model_id"].astype("string").fillna("").to_numpy(dtype=object)
        if "model_id" in models.columns
        else np.array([f"row{i}" for i in range(len(models))], dtype=object)
    )
    ctx = Ctx(models, tps, pp=pp, dp=dp, ep=ep, dp_attention=dp_attention, vision_dp=vision_dp,
              expert_parallel=expert_parallel)
    fws = list(frameworks)
    if not fws:
        raise ValueError("no frameworks given")
    interned, rule_ids = _Strings(), _Strings()
    parts = [_grid_arrays(ctx, fw, version, interned, rule_ids) for fw in fws]
    # one preallocated column per key, filled part by part, in the narrowest dtype that holds the codes
    narrow = {"framework": np.int8, "status": np.int8, "n_failures": np.int16,
              "rule_id": np.int32, "message": np.int32, "messages": np.int32}
    cat = {}
    for k in list(parts[0]):
        out = np.empty(sum(p[k].shape[0] for p in parts), dtype=narrow.get(k, parts[0][k].dtype))
        pos = 0
        for p in parts:
            out[pos:pos + p[k].shape[0]] = p[k]
            pos += p[k].shape[0]
        cat[k] = out
        for p in parts:  # free each part's column as soon as it is copied
            del p[k]
    id_codes, id_cats = pd.factorize(pd.Series(ids, dtype=object), sort=False)
    model_codes = np.tile(np.repeat(id_codes, ctx.n_tp), len(fws))
    msg_cats = pd.Index(interned.strings, dtype=object)
    return pd.DataFrame(
        {
            "model_id": pd.Categorical.from_codes(model_codes, categories=pd.Index(id_cats, dtype=object)),
            "framework": pd.Categorical.from_codes(cat["framework"], categories=list(schema.FRAMEWORKS)),
            "tp": cat["tp"],
            "valid": cat["valid"],
            "status": pd.Categorical.from_codes(cat["status"], categories=_STATUS_CATS),
            "rule_id": pd.Categorical.from_codes(cat["rule_id"], categories=pd.Index(rule_ids.strings, dtype=object)),
            "message": pd.Categorical.from_codes(cat["message"], categories=msg_cats),
            "n_failures": cat["n_failures"],
            "messages": pd.Categorical.from_codes(cat["messages"], categories=msg_cats),
            "q_heads_per_rank": pd.arrays.IntegerArray(np.where(cat["q_na"], 0, cat["q"]), cat["q_na"]),
            "kv_heads_per_rank": pd.arrays.IntegerArray(np.where(cat["kv_na"], 0, cat["kv"]), cat["kv_na"].copy()),
            "kv_replicas": pd.arrays.IntegerArray(np.where(cat["kv_na"], 0, cat["rep"]), cat["kv_na"].copy()),
        },
        copy=False,  # every column above is freshly built: no defensive copy
    )


def layout_grid(
    catalog_df: pd.DataFrame | Mapping | pd.Series,
    layouts: pd.DataFrame | Mapping[str, Sequence],
    frameworks: Iterable[str] = schema.FRAMEWORKS,
    *,
    versions: Mapping[str, str | None] | None = None,
    vision_dp: bool = False,
    detail: bool = False,
    model_memo: dict | None = None,
    messages: bool = True,
) -> pd.DataFrame:
    """Validity of every catalog model under many parallel layouts at once (one evaluation per framework).

    :func:`grid` varies only the TP size; here every entry of ``layouts`` is a whole layout -- its own
    ``tp``, ``pp``, ``dp``, ``ep``, ``dp_attention`` and ``expert_parallel`` -- and the rules run once per
    framework over all (model, layout) cells, vectorized (:class:`~dashboard.rules.common.Ctx` with
    per-layout arrays). Each cell's verdict equals :func:`check` at that layout (``valid``, ``status``,
    first failing rule and its message, every failing message); suggestions are not computed.

    Parameters
    ----------
    catalog_df : catalog records (a DataFrame, or one record as a mapping / Series).
    layouts : DataFrame or mapping of equal-length columns: ``tp`` (required), ``pp``, ``dp``, ``ep``
        (default 1), ``dp_attention``, ``expert_parallel`` (default False). Sizes are whole numbers in
        ``1 .. dashboard.sharding.MAX_PARALLEL``; meanings as in :func:`check`.
    frameworks : framework ids from :data:`dashboard.schema.FRAMEWORKS`.
    versions : framework -> release / date / None (see :func:`check`); a framework not named uses None
        (the newest executed release, or the current rules).
    vision_dp : the vision encoder runs data-parallel, for every cell.
    detail : also return ``failures`` (per cell a tuple of ``(rule_id, message)`` for every failing rule,
        in the order the framework reaches them) and ``attn_tp`` (the attention-TP degree). Python objects
        per cell: meant for one model, not a whole catalog.
    model_memo : a dict the per-model derived columns are kept in across calls over the *same*
        ``catalog_df`` frame (see :class:`~dashboard.rules.common.Ctx`); None: recomputed per call.
    messages : build the message columns; False leaves ``message`` and ``messages`` empty (verdicts,
        statuses and first failing rules only: a whole catalog's plan needs no text).

    Returns
    -------
    DataFrame, one row per (framework, model, layout), framework-major then model then layout:
    ``model_id, framework, layout`` (row position in ``layouts``), ``tp, pp, dp, ep, dp_attention,
    expert_parallel``, then the :func:`grid` columns ``valid, status, rule_id, message, n_failures,
    messages, q_heads_per_rank, kv_heads_per_rank, kv_replicas`` (+ ``failures``, ``attn_tp`` with
    ``detail``).

    Raises
    ------
    ValueError for an unknown framework, no frameworks, no ``tp`` column, columns of unequal length, or a
    size that is not a whole number in ``1 .. MAX_PARALLEL``; TypeError for a record of another type.
    """
    lc = sharding.layout_columns(layouts)  # a missing entry (NaN) is the default (1, False)
    tp, pp, dp, ep = lc["tp"], lc["pp"], lc["dp"], lc["ep"]
    dpa, epf = lc["dp_attention"], lc["expert_parallel"]
    n_lay = len(tp)
    if isinstance(catalog_df, pd.DataFrame):
        models = catalog_df.reset_index(drop=True)
    else:
        models = _to_ctx(catalog_df, [1]).models
    fws = list(frameworks)
    if not fws:
        raise ValueError("no frameworks given")
    for fw in fws:
        if fw not in RULES_BY_FRAMEWORK:
            raise ValueError(f"unknown framework {fw!r}; expected one of {schema.FRAMEWORKS}")
    versions = dict(versions or {})
    ids = (models["model_id"].astype("string").fillna("").to_numpy(dtype=object) if "model_id" in models.columns
           else np.array([f"row{i}" for i in range(len(models))], dtype=object))
    empty = n_lay == 0 or len(models) == 0
    ctx = None if empty else Ctx(models, tp, pp=pp, dp=dp, ep=ep, dp_attention=dpa, vision_dp=vision_dp,
                                 expert_parallel=epf, model_memo=model_memo)
    interned, rule_ids = _Strings(), _Strings()
    n_cells = len(models) * n_lay
    parts = [] if empty else [_grid_arrays(ctx, fw, versions.get(fw), interned, rule_ids, detail,
                                           messages or detail)
                              for fw in fws]

    def cat_col(key: str, dtype=np.int64) -> np.ndarray:
        if not parts:
            return np.zeros(0, dtype=dtype)
        return np.concatenate([np.asarray(p[key]) for p in parts]).astype(dtype, copy=False)

    id_codes, id_cats = pd.factorize(pd.Series(ids, dtype=object), sort=False)
    k = len(fws) if parts else 0
    rep_lay = lambda a: np.tile(a, len(models) * k)  # noqa: E731
    msg_cats = pd.Index(interned.strings, dtype=object)
    q_na, kv_na = cat_col("q_na", bool), cat_col("kv_na", bool)
    out = {
        "model_id": pd.Categorical.from_codes(np.tile(np.repeat(id_codes, n_lay), k),
                                              categories=pd.Index(id_cats, dtype=object)),
        "framework": pd.Categorical.from_codes(np.repeat([schema.FRAMEWORKS.index(f) for f in fws[:k]], n_cells)
                                               .astype(np.int8), categories=list(schema.FRAMEWORKS)),
        "layout": rep_lay(np.arange(n_lay, dtype=np.int64)),
        "tp": rep_lay(tp), "pp": rep_lay(pp), "dp": rep_lay(dp), "ep": rep_lay(ep),
        "dp_attention": rep_lay(dpa), "expert_parallel": rep_lay(epf),
        "valid": cat_col("valid", bool),
        "status": pd.Categorical.from_codes(cat_col("status", np.int8), categories=_STATUS_CATS),
        "rule_id": pd.Categorical.from_codes(cat_col("rule_id", np.int32),
                                             categories=pd.Index(rule_ids.strings, dtype=object)),
        "message": pd.Categorical.from_codes(cat_col("message", np.int32), categories=msg_cats),
        "n_failures": cat_col("n_failures", np.int16),
        "messages": pd.Categorical.from_codes(cat_col("messages", np.int32), categories=msg_cats),
        "q_heads_per_rank": pd.arrays.IntegerArray(np.where(q_na, 0, cat_col("q")), q_na),
        "kv_heads_per_rank": pd.arrays.IntegerArray(np.where(kv_na, 0, cat_col("kv")), kv_na),
        "kv_replicas": pd.arrays.IntegerArray(np.where(kv_na, 0, cat_col("rep")), kv_na.copy()),
    }
    if detail:
        out["failures"] = cat_col("failures", object) if parts else np.zeros(0, dtype=object)
        out["attn_tp"] = cat_col("attn_tp")
    return pd.DataFrame(out)


def rules_for(framework: str, version: str | None = None) -> list[Rule]:
    """The rules of ``framework`` that hold at ``version``, each as it reads in the resolved release
    (message ``{site}`` filled, ``location``, ``source_url`` and ``evidence`` for that release), in the
    order the framework reaches them. ValueError for an unknown framework."""
    return list(_rules_for(framework, version))


# ----------------------------------------------------------------------------------------------------
# check
# ----------------------------------------------------------------------------------------------------


def _hits(ev: _Eval, row: int) -> tuple[list[RuleHit], list[RuleHit]]:
    failures, warnings = [], []
    for r, f, flds in zip(ev.rules, ev.fire, ev.fields):
        if not f[row]:
            continue
        vals = {k: (np.asarray(v)[row] if np.ndim(v) else v) for k, v in flds.items()}
        hit = RuleHit(r.id, r.framework, r.kind, r.format(vals), r.source_url, r.severity, r.location,
                      r.exc_type, r.evidence, r.ours, r.condition)
        (failures if r.severity == "error" else warnings).append(hit)
        if r.severity == "error" and r.effect == "run_time":
            warnings.append(
                RuleHit(
                    r.id,
                    r.framework,
                    r.kind,
                    "Passes the config check and loads, fails when the model is built/run (forward pass).",
                    r.source_url,
                    "warning",
                )
            )
    return failures, warnings


def _ok_sizes(record, framework: str, version, sizes: np.ndarray, **kw) -> np.ndarray:
    ctx = _to_ctx(record, sizes, **kw)
    ev = _evaluate(ctx, framework, version)
    err = np.zeros(ctx.n, dtype=bool)
    for r, f in zip(ev.rules, ev.fire):
        if r.severity == "error":
            err |= f
    st = _status(err, ev)
    return sizes[(st != 3) & (st != 4)]


def _suggestions(record, framework, version, tp, pp, dp, ep, dp_attention, vision_dp, failures,
                 expert_parallel: bool = False) -> list[str]:
    out: list[str] = []
    upper = min(max(64, 2 * tp), sharding.MAX_PARALLEL)
    sizes = np.arange(1, upper + 1, dtype=np.int64)
    base = dict(pp=pp, dp=dp, ep=ep, dp_attention=dp_attention, vision_dp=vision_dp,
                expert_parallel=expert_parallel)
    ok = _ok_sizes(record, framework, version, sizes, **base)
    if not failures:
        return out
    if any(f.rule_id.endswith("ep_without_moe") for f in failures):
        out.append("This model has no experts: launch it without expert parallelism "
                   + ("(drop --enable-expert-parallel)." if framework == "vllm" else "(ep = 1)."))
        if valid_with_ep_off(record, framework, version, tp, pp, dp, dp_attention, vision_dp):
            out.append(f"Valid at tp={tp} without expert parallelism.")
            return out
    below = ok[ok < tp]
    above = ok[ok > tp]
    near = []
    if below.size:
        near.append(int(below.max()))
    if above.size:
        near.append(int(above.min()))
    if near:
        out.append("Nearest valid TP sizes: " + " and ".join(str(x) for x in near) + ".")
    else:
        out.append(f"No TP size in 1..{upper} is valid under {framework} with these settings.")

    def valid_with(at_tp: int = tp, **over) -> bool:
        kw = dict(base, **over)
        return bool(_ok_sizes(record, framework, version, np.array([at_tp], dtype=np.int64), **kw).size)

    if framework in ("sglang", "tensorrt-llm") and not dp_attention:
        dps = [d for d in range(2, tp + 1) if tp % d == 0] if framework == "sglang" else [tp]
        for d in dps:
            if valid_with(dp=d, dp_attention=True):
                if framework == "sglang":
                    out.append(f"Valid at tp={tp} with {sglang_dp_attention_flags(version, d)} "
                               f"(attention-TP {tp // d}).")
                else:
                    out.append(f"Valid at tp={tp} with enable_attention_dp (attention-TP 1).")
                break
    if _is_moe_record(record) and ep == 1 and not expert_parallel and tp * dp > 1:
        if framework == "vllm" and valid_with(expert_parallel=True):
            out.append(f"Valid at tp={tp} with --enable-expert-parallel (EP size {tp * dp}): experts are not "
                       "TP-sliced.")
        elif framework != "vllm" and tp > 1 and valid_with(ep=tp):
            out.append(f"Valid at tp={tp} with expert parallelism (ep={tp}): experts are not TP-sliced.")
    if pp == 1:
        for t2 in sorted((d for d in range(1, tp) if tp % d == 0), reverse=True):
            if valid_with(at_tp=t2, pp=tp // t2):
                out.append(f"The same {tp} GPUs as tp={t2} x pp={tp // t2} (pipeline parallel) is valid.")
                break
    if not vision_dp and any(f.kind == "vision_heads" for f in failures) and valid_with(vision_dp=True):
        out.append(f"Valid at tp={tp} with a data-parallel vision encoder (mm_encoder_tp_mode='data').")
    return out


#: First SGLang release that spells attention-DP ``--attn-dp-size D`` (earlier: ``--enable-dp-attention --dp-size D``).
SGLANG_ATTN_DP_SIZE_FROM = "0.5.22"


def sglang_dp_attention_flags(version: str | None, dp: int) -> str:
    """SGLang's launch flags for attention-DP over ``dp`` groups, as the release ``version`` resolves to
    (:func:`resolve_version`) spells them: ``--attn-dp-size D`` from 0.5.22 on, ``--enable-dp-attention
    --dp-size D`` before."""
    if _sglang_before_attn_dp_size(version):
        return f"--enable-dp-attention --dp-size {int(dp)}"
    return f"--attn-dp-size {int(dp)}"


@functools.lru_cache(maxsize=256)
def _sglang_before_attn_dp_size(version: str | None) -> bool:
    from packaging.version import Version

    rel = resolve_version("sglang", version).release
    return rel is not None and Version(rel) < Version(SGLANG_ATTN_DP_SIZE_FROM)


def valid_with_ep_off(record, framework, version, tp, pp, dp, dp_attention, vision_dp) -> bool:
    return bool(_ok_sizes(record, framework, version, np.array([tp], dtype=np.int64), pp=pp, dp=dp, ep=1,
                          dp_attention=dp_attention, vision_dp=vision_dp, expert_parallel=False).size)


def _is_moe_record(record) -> bool:
    try:
        ctx = _to_ctx(record, [1])
        return bool(ctx.is_moe()[0])
    except Exception:  # pragma: no cover - defensive: suggestions must never break a verdict
        return False


def _opt_int(mask: bool, v) -> int | None:
    return None if mask else int(v)


def check(
    record: Mapping | pd.Series,
    framework: str,
    tp: int,
    *,
    version: str | None = None,
    pp: int = 1,
    dp: int = 1,
    ep: int = 1,
    dp_attention: bool = False,
    vision_dp: bool = False,
    expert_parallel: bool = False,
) -> Verdict:
    """Would ``framework`` accept this model at this parallel layout, and if not, what would it say?

    Parameters
    ----------
    record : one catalog record (mapping or Series of schema columns; missing keys count as NA).
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    tp, pp, dp, ep : tensor, pipeline, data and expert parallel sizes (>= 1). ``ep > 1`` means expert
        parallelism (vLLM ``--enable-expert-parallel``: experts are not TP-sliced).
    version : framework release (PEP 440, e.g. "0.22.0"), a date (``"2023-07"``: the newest release
        uploaded by then, from ``data/releases/<framework>.csv``) or None: for vLLM the newest release
        run through the conformance harness, for the others their current rules. The verdict's
        ``release``/``executed``/``notice`` say what was used.
    expert_parallel : vLLM ``--enable-expert-parallel`` (EP size = tp x dp; ``ep`` stays 1).
    dp_attention : SGLang DP-attention (``--attn-dp-size``; before 0.5.22 ``--enable-dp-attention --dp-size``; attention-TP = tp / dp) or TensorRT-LLM attention-DP.
    vision_dp : the vision encoder runs data-parallel (vLLM ``mm_encoder_tp_mode="data"``).

    Returns
    -------
    :class:`Verdict`. Quantization comes from the record (``quant_method``, block sizes, group size).

    Raises
    ------
    ValueError for an unknown framework or a parallel size that is not a whole number in
    ``1 .. dashboard.sharding.MAX_PARALLEL`` (``4.5`` is refused, not truncated); TypeError for a record
    of another type.
    """
    tp = sharding.parallel_size(tp, "tp")  # whole number in 1 .. MAX_PARALLEL (ValueError otherwise)
    pp, dp, ep = (sharding.parallel_size(v, n) for v, n in ((pp, "pp"), (dp, "dp"), (ep, "ep")))
    ctx = _to_ctx(record, [tp], pp=pp, dp=dp, ep=ep, dp_attention=dp_attention, vision_dp=vision_dp,
                  expert_parallel=expert_parallel)
    ev = _evaluate(ctx, framework, version)
    failures, warnings = _hits(ev, 0)
    res = resolve_version(framework, version)
    if res.notice:
        warnings.append(RuleHit("engine.version", framework, "attention_heads", res.notice, "", "warning",
                                ours=True))
    err = np.array([bool(failures)])
    status = _STATUS_CATS[int(_status(err, ev)[0])]
    if ev.unknown[0]:
        missing = sorted({c for r in ev.rules for c in r.needs if not ctx.has(c)[0]})
        warnings.append(
            RuleHit("engine.missing_fields", framework, "attention_heads",
                    f"Not fully checked: the record has no {', '.join(missing)}, so the rules that need "
                    f"{'it' if len(missing) == 1 else 'them'} were skipped (status unknown).",
                    "", "warning", ours=True)
        )
    suggestions = _suggestions(record, framework, version, tp, pp, dp, ep, dp_attention, vision_dp, failures,
                               expert_parallel)
    model_id = ""
    try:
        model_id = str(ctx.models["model_id"].iloc[0]) if "model_id" in ctx.models.columns else ""
    except Exception:  # pragma: no cover
        model_id = ""
    return Verdict(
        model_id=model_id,
        framework=framework,
        version=version,
        tp=tp,
        pp=int(pp),
        dp=int(dp),
        ep=int(ep),
        dp_attention=bool(dp_attention),
        valid=not failures,
        status=status,
        failures=tuple(failures),
        warnings=tuple(warnings),
        suggestions=tuple(suggestions),
        q_heads_per_rank=_opt_int(not ev.has_q[0], ev.q_per_rank[0]),
        kv_heads_per_rank=_opt_int(not ev.has_kv[0], ev.kv_per_rank[0]),
        kv_replicas=_opt_int(not ev.has_kv[0], ev.kv_rep[0]),
        attn_tp=int(ev.attn_tp[0]),
        release=res.release,
        executed=res.executed,
        notice=res.notice,
        expert_parallel=bool(expert_parallel or ep > 1),
    )


# ----------------------------------------------------------------------------------------------------
# rule documentation
# ----------------------------------------------------------------------------------------------------


def rules_frame() -> pd.DataFrame:
    """Every rule's data as a DataFrame (one row per rule; no predicates)."""
    return pd.DataFrame([r.as_dict() for r in RULES])


def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def rules_markdown() -> str:
    """The rule page (``docs/rules.md``), generated from :data:`RULES`."""
    ex = ", ".join(f"{fw} {', '.join(v)}" for fw, v in _versions.EXECUTED.items())
    lines = [
        "# TP rules, per framework",
        "",
        "Generated from `dashboard.rules.RULES` by `python -m dashboard.rules.docs` -- do not edit by hand.",
        "",
        "Each rule: id, kind, the framework releases it holds for (PEP 440 specifier; empty = every",
        "version we checked), the architectures it applies to (empty = all not excluded), the condition",
        "as the framework tests it, the message with `{fields}` the engine fills in (`{site}` = the raise",
        "site of the release asked about), the source, and the evidence:",
        "",
        f"- **executed**: a conformance table reproduces the rule (the release's own code raised it, same",
        f"  message and raise site; `data/conformance/`). Releases run so far: {ex}.",
        "- **source**: read from the release's source only (older releases, and rules the harness does not",
        "  reach).",
        "",
        "Severity `warning` = the framework runs, with a caveat. A message marked *ours* is this project's",
        "wording (the framework prints none, or only a log line). Effect `run_time` = the failure appears only",
        "when the model is built/run, not at load; `padded` = dummy heads (status `valid_padded`).",
        "",
    ]
    for fw in schema.FRAMEWORKS:
        rules = RULES_BY_FRAMEWORK.get(fw, [])
        lines += [f"## {schema.FRAMEWORK_LABELS[fw]} (`{fw}`)", ""]
        if fw.startswith("transformers"):
            vw = sorted({r.verified_with for r in rules if r.verified_with})
            if vw:
                lines += ["Checked against a real library run: " + "; ".join(vw), ""]
            else:
                lines += [
                    "Checked against a real library run: not yet -- read from the source only (pinned links "
                    "below); the transformers-matrix test (torchrun, gloo, CPU) fills in `verified_with`.",
                    "",
                ]
        lines += [
            "| id | kind | versions | architectures | severity | condition | message | source | evidence | notes |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rules:
            note = r.note
            if r.effect:
                note = (f"effect: {r.effect}. " + note).strip()
            if r.verified_with:
                note = (note + f" Verified with: {r.verified_with}").strip()
            if r.exclude_architectures:
                note = (note + " Not for: " + ", ".join(r.exclude_architectures) + ".").strip()
            src = ""
            if r.source_url:
                src = f"[{r.source_url.split('/blob/')[-1][:48]}]({r.source_url})"
            if r.sites:
                src = "; ".join(f"{k}: `{v}`" for k, v in sorted(r.sites.items())) + (f" ({src})" if src else "")
            evidence = r.evidence + (f" ({', '.join(r.executed_in)})" if r.executed_in else "")
            msg = "`" + _md_escape(r.message if len(r.message) < 700 else r.message[:700] + "...") + "`"
            if r.ours:
                msg += " *(ours)*"
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"`{r.id}`",
                        r.kind,
                        _md_escape(r.versions or "all checked"),
                        _md_escape(", ".join(r.architectures) or "all"),
                        r.severity,
                        _md_escape(r.condition),
                        msg,
                        src,
                        evidence,
                        _md_escape(note),
                    ]
                )
                + " |"
            )
        lines.append("")
    return "\n".join(lines)
