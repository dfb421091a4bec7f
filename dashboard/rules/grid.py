"""The grid: every catalog model x TP sizes (or whole layouts) x frameworks -> a tidy DataFrame.

Vectorized with numpy (no per-cell Python in the hot path): one :func:`~dashboard.rules.evaluate.evaluate`
per framework, messages formatted once per distinct combination of their fields. Pure: no I/O, no Panel.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard import frameworks as _frameworks
from dashboard import schema, sharding
from dashboard.rules.common import Ctx, Rule
from dashboard.rules.evaluate import STATUS_CATS, evaluate, status_codes, to_ctx


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
    ev = evaluate(ctx, framework, version)
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
        "status": status_codes(any_error, ev).astype(np.int64),
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
    platform: str | None = None,
    device_name: str | None = None,
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
    platform, device_name : the GPU platform the cells are judged for and the name the GPU reports
        (:class:`~dashboard.rules.common.Ctx`; None: an H100, ``cuda-sm90``).

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
              expert_parallel=expert_parallel, platform=platform, device_name=device_name)
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
            "status": pd.Categorical.from_codes(cat["status"], categories=STATUS_CATS),
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
    platform: str | None = None,
    device_name: str | None = None,
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
    platform, device_name : as in :func:`grid` (None: an H100, ``cuda-sm90``).

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
        models = to_ctx(catalog_df, [1]).models
    fws = list(frameworks)
    if not fws:
        raise ValueError("no frameworks given")
    for fw in fws:
        if _frameworks.REGISTRY.get(fw) is None:
            raise ValueError(f"unknown framework {fw!r}; expected one of {schema.FRAMEWORKS}")
    versions = dict(versions or {})
    ids = (models["model_id"].astype("string").fillna("").to_numpy(dtype=object) if "model_id" in models.columns
           else np.array([f"row{i}" for i in range(len(models))], dtype=object))
    empty = n_lay == 0 or len(models) == 0
    ctx = None if empty else Ctx(models, tp, pp=pp, dp=dp, ep=ep, dp_attention=dpa, vision_dp=vision_dp,
                                 expert_parallel=epf, model_memo=model_memo, platform=platform,
                                 device_name=device_name)
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
        "status": pd.Categorical.from_codes(cat_col("status", np.int8), categories=STATUS_CATS),
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



__all__ = ["grid", "layout_grid"]
