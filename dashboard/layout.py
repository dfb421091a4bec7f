"""Per-rank layout: which query, KV, linear-attention and vision heads each tensor-parallel rank holds.

Pure (pandas only). Every split is the framework's own (:mod:`dashboard.frameworks`); :func:`heads_per_rank_counts`
gives the per-rank counts of many cells at once (vectorized) and :func:`rank_layout` returns a tidy frame with one row per (rank,
component, head, replica):

* ``rank`` -- global TP rank ``0 .. tp-1``;
* ``component`` -- ``query``, ``kv``, ``linear_key``, ``linear_value`` or ``vision``;
* ``head`` -- global head index of that component (MLA latent: ``0``);
* ``replica`` -- 0-based number of this copy of the head among the ranks that hold it;
* ``dummy`` -- True for SGLang's padding vision heads (indices ``>= vision_num_heads``).

When a framework could not build the layout (heads that neither divide the attention-TP size nor, for
KV heads, are divided by it), :func:`rank_layout` raises :class:`LayoutError` (a ``ValueError``) whose
message says which count does not divide which size -- it never returns a layout the framework would
refuse. The rules engine (:mod:`dashboard.rules`) is the place that reports validity; this module only
draws what a valid configuration puts where.

Sources
-------
* vLLM ``QKVParallelLinear``: query heads ``heads / tp`` contiguous per rank; KV heads ``kv / tp`` per
  rank, or when ``tp >= kv`` one KV head per rank replicated on ``tp / kv`` consecutive ranks
  (``num_kv_head_replicas = divide(tp, kv)``); vision encoders shard heads over TP and reject heads
  that do not divide unless the encoder runs data-parallel (``mm_encoder_tp_mode="data"``).
  https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/linear.py
* SGLang: the same QKV arithmetic over the model file's attention-TP (``tp / dp`` under DP-attention
  for files on the attention-TP group -- Qwen3, DeepSeek, GLM-4-MoE, gpt-oss ...; the full TP for
  Llama, Qwen2, Gemma, Mixtral ...: ``models/llama.py:181``), each DP group holding every head; its KV
  POOL is sized with the attention-TP size regardless (``pool_configurator.py:356``), see
  :meth:`dashboard.frameworks.base.Framework.kv_pool_heads_per_rank`; vision attention pads heads with
  dummy heads up to the next multiple of TP.
  https://github.com/sgl-project/sglang/blob/v0.5.4/python/sglang/srt/layers/linear.py
* TensorRT-LLM: ``ceil(kv / tp)`` KV heads per rank (duplicated when ``tp > kv``); attention-DP keeps
  every head on every rank.
  https://github.com/NVIDIA/TensorRT-LLM/blob/v1.0.0/tensorrt_llm/_torch/modules/attention.py
* transformers native TP (``tp_plan="auto"``) and its continuous-batching cache: a head count that
  divides the TP size is split, one that does not is not split (gathered / no-attention / embedding-only
  plans run at every TP; the rules refuse the plans that would fail), so every rank holds every head.
* Megatron-Core (>= 0.16): KV query groups a multiple or a divisor of TP (replicated like vLLM's).
* Vision towers whose heads do not divide TP run unsharded (vLLM's MoonViT switches to data-parallel by
  itself, HF towers outside the TP plan): every rank holds every vision head.
* MLA (DeepSeek-V2/V3 style): query heads split; the compressed KV latent is on every rank (one
  ``kv`` row per rank, head 0, replica = rank) for vLLM, SGLang and TensorRT-LLM; transformers and
  Megatron-Core cache up-projected per-head K/V, split like the query heads.
* Linear attention (vLLM ``MambaStateShapeCalculator``): GDN key/value heads and KDA / Mamba2 heads
  split over TP; Mamba2 ``n_groups`` split, or replicated when ``tp % n_groups == 0`` (vLLM
  ``extra_groups_for_head_shards``).
  https://github.com/vllm-project/vllm/blob/02d710837549a368073552333f66d714477415d2/vllm/model_executor/layers/mamba/mamba_utils.py
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dashboard import frameworks, records, sharding
from dashboard.frameworks import Layout

COMPONENTS = ("query", "kv", "linear_key", "linear_value", "vision")
_COLUMNS = ("rank", "component", "head", "replica", "dummy")


class LayoutError(ValueError):
    """The framework could not place these heads on this many ranks (message says why)."""


def _split_mode(fw: frameworks.Framework, n: np.ndarray, ranks: np.ndarray, *, replicate: bool) -> np.ndarray:
    """Per cell how ``n`` heads go on ``ranks`` ranks: 0 none, 1 divided, 2 replicated (``ranks % n == 0``,
    one head per rank), 3 whole (every head on every rank), -1 impossible."""
    n_, r = np.asarray(n, dtype=np.int64), np.maximum(np.asarray(ranks, dtype=np.int64), 1)
    safe = np.maximum(n_, 1)
    out = np.where(n_ % r == 0, 1, -1)
    if replicate:
        out = np.where((out < 0) & (r % safe == 0), 2, out)
    if fw.uneven_heads_whole:
        out = np.where(out < 0, 3, out)
    return np.where(n_ < 1, 0, out)


def heads_per_rank_counts(models: Any, framework: str, tp: Any, *, dp: Any = 1, dp_attention: Any = False,
                          vision_dp: Any = False, release: str | None = None) -> dict[str, np.ndarray]:
    """Per cell (one catalog row per cell, or one row broadcast over the ``tp`` array) the heads one rank
    of :func:`rank_layout` holds, computed from the framework's sharding methods without building rows.

    Returns int64 arrays ``attn_tp`` (the model file's attention-TP), ``q`` (query heads per rank),
    ``kv`` (KV heads per rank: the MLA latent counts 1), ``kv_replicas``, ``kv_pool`` (KV heads per rank
    the KV pool is sized for, :meth:`~dashboard.frameworks.base.Framework.kv_pool_heads_per_rank`),
    ``vision`` (real vision heads of rank 0) and bool ``ok`` (False where :func:`rank_layout` raises
    :class:`LayoutError`) and ``has_q`` (the row has ``num_attention_heads``). Raises ValueError for an
    unknown framework."""
    fw = frameworks.get(framework)
    df = records.frame(models)
    tp = np.asarray(tp, dtype=np.int64)
    shape = np.broadcast(np.zeros(len(df)), tp, np.asarray(dp), np.asarray(dp_attention)).shape

    def b(a: Any) -> np.ndarray:  # one value per cell (a one-row frame broadcasts over the layouts)
        a = np.asarray(a)
        return np.broadcast_to(a[0] if a.ndim and len(a) == 1 and len(df) == 1 else a, shape)

    tp_, dp_, dpa = b(tp), b(dp).astype(np.int64), b(dp_attention).astype(bool)
    col = lambda name: b(records.count(df, name))  # noqa: E731
    heads, has_q = col("num_attention_heads"), b(records.present(df, "num_attention_heads"))
    kv = np.where(col("num_key_value_heads") > 0, col("num_key_value_heads"), heads)
    mla = b(records.flag(df, "is_mla"))
    arch = b(np.array([a.split(",")[0].strip() for a in records.text(df, "architectures", lower=False)], dtype=object))
    t = fw.attention_tp(tp_, dp_, dpa, arch=arch, release=release)
    ok = has_q & (tp_ % np.maximum(t, 1) == 0)
    if fw.attention_dp_groups:
        ok &= ~dpa | (tp_ % np.maximum(dp_, 1) == 0)
    ok &= _split_mode(fw, heads, t, replicate=False) >= 0
    n_kv = np.where(mla, heads, kv)
    latent = mla & fw.mla_latent
    ok &= latent | (_split_mode(fw, n_kv, t, replicate=fw.replicates_kv) >= 0)
    kind = records.text(df, "linear_attention_kind")
    kind = b(kind)
    nv, nk, ng = col("linear_num_value_heads"), col("linear_num_key_heads"), col("mamba_n_groups")
    keys = np.where(kind == "mamba2", np.maximum(ng, 1), np.where(nk > 0, nk, nv))
    lin = kind != ""
    lt = t if fw.linear_on_attention_tp else tp_
    ok &= ~lin | ((_split_mode(fw, keys, lt, replicate=True) >= 0) & (_split_mode(fw, nv, lt, replicate=False) >= 0))
    vh = col("vision_num_heads")
    vreal, _ = fw.vision_heads_per_rank(vh, tp_, vision_dp=vision_dp)
    if fw.vision_split == "divide":
        ok &= (vh < 1) | np.asarray(vision_dp, dtype=bool) | (vh % tp_ == 0) | fw.vision_unsharded_when_uneven(arch)
    return {
        "attn_tp": t, "q": np.where(has_q, fw.q_heads_per_rank(heads, t), 0),
        "kv": np.where(has_q, fw.kv_heads_per_rank(kv, t, heads=heads, is_mla=mla), 0),
        "kv_replicas": fw.kv_replicas(kv, t, heads=heads, is_mla=mla),
        "kv_pool": np.where(has_q, fw.kv_pool_heads_per_rank(kv, tp_, dp_, dpa, heads=heads, is_mla=mla, release=release), 0),
        "vision": vreal, "ok": ok, "has_q": has_q,
    }


def _split(fw: frameworks.Framework, n: int, ranks: int, component: str, what: str, *, replicate: bool) -> list[tuple[int, int, int]]:
    """(local rank, head, replica) rows for ``n`` heads over ``ranks`` ranks, as the framework splits them."""
    mode = int(_split_mode(fw, n, ranks, replicate=replicate))
    if mode == 0:
        return []
    if mode == 1:
        per = n // ranks
        return [(r, r * per + i, 0) for r in range(ranks) for i in range(per)]
    if mode == 2:
        rep = ranks // n
        return [(r, r // rep, r % rep) for r in range(ranks)]
    if mode == 3:
        return [(r, h, r) for r in range(ranks) for h in range(n)]
    if replicate:
        raise LayoutError(
            f"{fw.name}: {what} ({n}) must divide the attention-TP size ({ranks}) or be divisible by it "
            f"(neither {n} % {ranks} == 0 nor {ranks} % {n} == 0)")
    raise LayoutError(f"{fw.name}: {what} ({n}) is not divisible by the TP size ({ranks}); "
                      f"{fw.name} cannot replicate {component} heads")


def rank_layout(record: Any, framework: str, tp: int | None = None, *, dp: int = 1, dp_attention: bool = False,
                vision_dp: bool = False, layout: Layout | None = None, release: str | None = None) -> pd.DataFrame:
    """Which heads each of the ``tp`` ranks holds, as the framework splits them.

    Parameters
    ----------
    record : one catalog record (dict / ``pandas.Series`` with :mod:`dashboard.schema` columns).
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    tp : tensor-parallel size (ranks ``0 .. tp-1``).
    dp, dp_attention : DP-attention. The attention heads are split over the model file's attention-TP
        (:meth:`dashboard.frameworks.base.Framework.attention_tp`: SGLang ``tp // dp`` for files on the
        attention-TP group, the full TP for Llama / Qwen2 / Gemma ...; TensorRT-LLM attention-DP 1);
        rank ``r`` is local rank ``r % attn_tp`` of group ``r // attn_tp``; every group holds all heads.
    vision_dp : the vision encoder runs data-parallel (vLLM ``mm_encoder_tp_mode="data"``): every rank
        holds every vision head (replica = rank).
    layout : a :class:`dashboard.frameworks.Layout` instead of ``tp`` / ``dp`` / ``dp_attention`` /
        ``vision_dp`` (the keywords are then ignored).
    release : framework release (None: the newest executed one).

    Returns
    -------
    DataFrame with columns ``rank`` (int64), ``component`` (string), ``head`` (int64), ``replica``
    (int64), ``dummy`` (bool), ordered by rank, component, head. Components the model lacks are absent.
    Its per-rank counts are :func:`heads_per_rank_counts`.

    Raises
    ------
    LayoutError (a ValueError) when the framework cannot lay the heads out on ``tp`` ranks (the message
    names the count and the size), or when ``dp`` does not divide ``tp`` under SGLang DP-attention;
    ValueError for an unknown framework, a ``tp``/``dp`` that is not a whole number in ``1 ..
    dashboard.sharding.MAX_PARALLEL``, or a record without ``num_attention_heads``.
    """
    fw = frameworks.get(framework)
    if layout is not None:
        L = Layout.of(layout)
        tp, dp, dp_attention, vision_dp = L.tp, L.dp, L.dp_attention, L.vision_dp
    if tp is None:
        raise ValueError("rank_layout needs tp (or layout=)")
    tp = sharding.parallel_size(tp, "tp")  # whole number in 1 .. MAX_PARALLEL: 4.5 is refused, not truncated
    dp = sharding.parallel_size(dp, "dp")
    heads = records.int_of(record, "num_attention_heads")
    if heads is None:
        raise ValueError("record has no num_attention_heads: no layout can be drawn")
    kv = records.int_of(record, "num_key_value_heads") or heads
    arch = (records.text_of(record, "architectures") or "").split(",")[0].strip()
    if dp_attention and fw.attention_dp_groups and tp % dp:
        raise LayoutError(f"{fw.name}: DP-attention needs dp ({dp}) to divide tp ({tp})")
    attn_tp = int(fw.attention_tp(np.array([tp]), np.array([dp]), np.array([bool(dp_attention)]),
                                  arch=np.array([arch], dtype=object), release=release)[0])
    groups = tp // attn_tp

    rows: list[tuple[int, str, int, int, bool]] = []

    def add(component: str, local: list[tuple[int, int, int]], *, replicas_per_group: int = 1) -> None:
        # place the attention-TP layout in every DP group; replicas count across groups
        for g in range(groups):
            for r, h, rep in local:
                rows.append((g * attn_tp + r, component, h, rep + g * replicas_per_group, False))

    # query heads
    q = _split(fw, heads, attn_tp, "query", "num_attention_heads", replicate=False)
    add("query", q, replicas_per_group=attn_tp if q and q[0][2] == 0 and len(q) > heads else 1)
    # KV heads / MLA latent
    is_mla = records.flag_of(record, "is_mla")
    if is_mla and fw.mla_latent:
        add("kv", [(r, 0, r) for r in range(attn_tp)], replicas_per_group=attn_tp)
    else:
        n_kv = heads if is_mla else kv
        local = _split(fw, n_kv, attn_tp, "kv", "num_key_value_heads", replicate=fw.replicates_kv)
        add("kv", local, replicas_per_group=int(fw.kv_replicas(n_kv, attn_tp)))
    # linear attention: over the full TP group (SGLang: the attention-TP group, in every DP group)
    kind = records.text_of(record, "linear_attention_kind", lower=True) or ""
    if kind:
        lt = attn_tp if fw.linear_on_attention_tp else tp
        nv = records.int_of(record, "linear_num_value_heads")
        nk = records.int_of(record, "linear_num_key_heads")
        if kind == "mamba2":
            keys = _split(fw, records.int_of(record, "mamba_n_groups") or 1, lt, "linear_key", "mamba_n_groups",
                          replicate=True)
        else:
            keys = _split(fw, nk or nv or 0, lt, "linear_key", "linear_num_key_heads", replicate=True)
        values = _split(fw, nv or 0, lt, "linear_value", "linear_num_value_heads", replicate=False)
        for g in range(tp // lt):
            rows += [(g * lt + r, "linear_key", h, rep + g * (lt if lt > (nk or nv or 1) else 1), False) for r, h, rep in keys]
            rows += [(g * lt + r, "linear_value", h, rep + g, False) for r, h, rep in values]
    # vision heads
    vh = records.int_of(record, "vision_num_heads")
    if vh:
        if (fw.vision_split == "divide" and not vision_dp and vh % tp
                and not bool(fw.vision_unsharded_when_uneven(np.array([arch], dtype=object))[0])):
            raise LayoutError(f"{fw.name}: vision_num_heads ({vh}) is not divisible by the TP size ({tp}); "
                              "run the vision encoder data-parallel (vision_dp=True) or pick a TP size that divides it")
        real, dummy = (int(x) for x in fw.vision_heads_per_rank(vh, tp, vision_dp=vision_dp))
        if vision_dp or (fw.vision_split == "divide" and tp > 1 and vh % tp):  # every head on every rank
            rows.extend((r, "vision", h, r, False) for r in range(tp) for h in range(vh))
        else:
            per = real + dummy
            rows.extend((r, "vision", r * per + i, 0, r * per + i >= vh) for r in range(tp) for i in range(per))

    order = {c: i for i, c in enumerate(COMPONENTS)}
    if rows:
        rank_a, comp_a, head_a, rep_a, dummy_a = (np.asarray(x) for x in zip(*rows))
    else:
        rank_a = head_a = rep_a = np.zeros(0, dtype=np.int64)
        comp_a, dummy_a = np.zeros(0, dtype=object), np.zeros(0, dtype=bool)
    comp_code = np.array([order[c] for c in comp_a], dtype=np.int64)
    idx = np.lexsort((rep_a, head_a, comp_code, rank_a))
    return pd.DataFrame({
        "rank": rank_a[idx].astype(np.int64),
        "component": pd.array(np.asarray(comp_a, dtype=object)[idx], dtype="string"),
        "head": head_a[idx].astype(np.int64),
        "replica": rep_a[idx].astype(np.int64),
        "dummy": dummy_a[idx].astype(bool),
    })


def heads_per_rank(layout: pd.DataFrame) -> pd.DataFrame:
    """Count of heads per (rank, component) of a :func:`rank_layout` frame, dummies counted apart.

    Returns a frame indexed by rank with one column per component present plus ``<component>_dummy``
    columns where padding exists.
    """
    real = layout[~layout["dummy"]].groupby(["rank", "component"]).size().unstack(fill_value=0)
    dummy = layout[layout["dummy"]].groupby(["rank", "component"]).size().unstack(fill_value=0)
    if not dummy.empty:
        real = real.join(dummy.add_suffix("_dummy"), how="outer").fillna(0).astype("int64")
    return real
