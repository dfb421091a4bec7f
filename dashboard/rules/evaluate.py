"""Evaluation: one framework's rules over the cells of a :class:`~dashboard.rules.common.Ctx`.

Shared by :func:`dashboard.rules.grid`, :func:`dashboard.rules.layout_grid` and
:func:`dashboard.rules.check` (one implementation). Pure: no I/O, no Panel.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from dashboard import schema, sharding
from dashboard.rules.common import Ctx, Rule
from dashboard.rules.releases import resolve_version, rules_at


@dataclass
class _Eval:
    """What :func:`evaluate` found: per rule its fire array and message fields, and per cell arrays."""

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


def scatter(sub: Ctx, cells: np.ndarray, n: int, fire_sub, fields_sub: dict) -> tuple[np.ndarray, dict]:
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


def evaluate(ctx: Ctx, framework: str, version: str | None) -> _Eval:
    """Every rule of ``framework`` at ``version`` over the cells of ``ctx``: which fire (and their message
    fields), which cells are unknown / padded / replicated, and the per-rank heads (heads, not bytes).
    ValueError for an unknown framework."""
    rules = rules_at(framework, version)
    fire, fields = [], []
    unknown = np.zeros(ctx.n, dtype=bool)
    padded = np.zeros(ctx.n, dtype=bool)
    never = np.zeros(ctx.n, dtype=bool)
    subs: dict[tuple, tuple[Ctx, np.ndarray]] = {}
    for r in rules:
        if r.platforms and ctx.platform not in r.platforms:  # another GPU family's check
            fire.append(never)
            fields.append({})
            continue
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
            f, flds = scatter(sub, cells, ctx.n, *r.predicate(sub))
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


def status_codes(any_error: np.ndarray, ev: _Eval) -> np.ndarray:
    """Cell status codes into schema.CELL_STATUSES (worst wins: invalid > unknown > padded > replicated)."""
    st = np.zeros(any_error.shape, dtype=np.int8)  # valid
    st[ev.replicated] = 1
    st[ev.padded] = 2
    st[ev.unknown] = 4
    st[any_error] = 3
    return st


#: Status names by code (:func:`status_codes`).
STATUS_CATS = list(schema.CELL_STATUSES)


#: One record's frame and its per-model memo, kept for the last few records checked: a ``check`` or a
#: plan asks the rules about the same record at many layouts (the verdict, then each suggestion), and
#: the per-model derived columns (the pandas work, ~80 columns) need computing once, not per layout.
_RECORD_FRAMES: "OrderedDict[str, tuple[pd.DataFrame, dict]]" = OrderedDict()
_RECORD_FRAMES_MAX = 16
_SMALL_FRAME = 4  # frames up to this many rows are memoized by content; a catalog is not


def _record_frame(records: pd.DataFrame | Mapping | pd.Series) -> tuple[pd.DataFrame, dict]:
    """The frame of a record (or of a small frame) and the memo shared by every Ctx over it. Keyed by the
    contents (``repr`` of the items, with the dtypes for a frame), so a changed record is a new entry,
    never a stale one."""
    if isinstance(records, pd.DataFrame):
        key = repr((list(records.columns), [str(t) for t in records.dtypes], records.to_numpy(object).tolist()))
    else:
        items = records.to_dict() if isinstance(records, pd.Series) else dict(records)
        key = repr(sorted(items.items(), key=lambda kv: str(kv[0])))
    hit = _RECORD_FRAMES.get(key)
    if hit is None:
        if isinstance(records, pd.DataFrame):
            df = records.reset_index(drop=True)
        elif isinstance(records, pd.Series):
            df = records.to_frame().T.reset_index(drop=True)
        else:
            df = pd.DataFrame([items])
        hit = (df, {})
        _RECORD_FRAMES[key] = hit
        while len(_RECORD_FRAMES) > _RECORD_FRAMES_MAX:
            _RECORD_FRAMES.popitem(last=False)
    else:
        _RECORD_FRAMES.move_to_end(key)
    return hit


def to_ctx(records: pd.DataFrame | Mapping | pd.Series, tp_sizes, **kw) -> Ctx:
    """A :class:`Ctx` over one record (mapping / Series) or a frame, at ``tp_sizes`` (``kw``: the other
    parallel settings). TypeError for another type; ValueError for a size out of range. Ctxs over the same
    record or small frame (equal contents; up to :data:`_SMALL_FRAME` rows) share its frame and per-model
    memo (:func:`_record_frame`)."""
    if not isinstance(records, (pd.DataFrame, pd.Series, Mapping)):
        raise TypeError(f"record must be a mapping, Series or DataFrame, got {type(records).__name__}")
    if isinstance(records, pd.DataFrame) and len(records) > _SMALL_FRAME:
        return Ctx(records.reset_index(drop=True), sharding.parallel_sizes(tp_sizes, "TP size"), **kw)
    df, memo = _record_frame(records)
    return Ctx(df, sharding.parallel_sizes(tp_sizes, "TP size"), model_memo=memo, **kw)


#: The evaluation result's type (public name of :class:`_Eval`).
Eval = _Eval

__all__ = ["Eval", "evaluate", "scatter", "status_codes", "STATUS_CATS", "to_ctx"]
