"""Per-rank layout: which query, KV, linear-attention and vision heads each tensor-parallel rank holds.

Pure (pandas only). One function, :func:`rank_layout`, returns a tidy frame with one row per (rank,
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
* SGLang: the same QKV arithmetic over the attention-TP group (``attn_tp = tp / dp`` under
  DP-attention, each DP group holding every head); vision attention pads heads with dummy heads up to
  the next multiple of TP.
  https://github.com/sgl-project/sglang/blob/v0.5.4/python/sglang/srt/layers/linear.py
* TensorRT-LLM: ``ceil(kv / tp)`` KV heads per rank (duplicated when ``tp > kv``); attention-DP keeps
  every head on every rank.
  https://github.com/NVIDIA/TensorRT-LLM/blob/v1.0.0/tensorrt_llm/_torch/modules/attention.py
* transformers native TP (``tp_plan="auto"``) and its continuous-batching cache shard k/v column-wise
  and cannot replicate KV heads: ``kv % tp != 0`` fails (at run time for native TP).
* MLA (DeepSeek-V2/V3 style): query heads split; the compressed KV latent is on every rank (one
  ``kv`` row per rank, head 0, replica = rank) for vLLM, SGLang and TensorRT-LLM; transformers and
  Megatron-Core cache up-projected per-head K/V, split like the query heads.
* Linear attention (vLLM ``MambaStateShapeCalculator``): GDN key/value heads and KDA / Mamba2 heads
  split over TP; Mamba2 ``n_groups`` split, or replicated when ``tp % n_groups == 0`` (vLLM
  ``extra_groups_for_head_shards``).
  https://github.com/vllm-project/vllm/blob/02d710837549a368073552333f66d714477415d2/vllm/model_executor/layers/mamba/mamba_utils.py
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from dashboard import schema, sharding

COMPONENTS = ("query", "kv", "linear_key", "linear_value", "vision")
_COLUMNS = ("rank", "component", "head", "replica", "dummy")
_MLA_LATENT = ("vllm", "sglang", "tensorrt-llm")
_NO_KV_REPLICATION = ("transformers-native-tp", "transformers-cb-cache", "megatron-core")


class LayoutError(ValueError):
    """The framework could not place these heads on this many ranks (message says why)."""


def _get(record: Any, key: str) -> int | None:
    try:
        v = record[key]
    except (KeyError, IndexError, TypeError):
        v = getattr(record, key, None)
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    return int(v)


def _flag(record: Any, key: str) -> bool:
    v = _get(record, key)
    return bool(v) if v is not None else False


def _split(n: int, ranks: int, component: str, what: str, framework: str, *, allow_replication: bool) -> list[tuple[int, int, int]]:
    """(local rank, head, replica) rows for ``n`` heads over ``ranks`` ranks."""
    if n < 1:
        return []
    if n % ranks == 0:
        per = n // ranks
        return [(r, r * per + i, 0) for r in range(ranks) for i in range(per)]
    if allow_replication and ranks % n == 0:
        rep = ranks // n
        return [(r, r // rep, r % rep) for r in range(ranks)]
    if allow_replication:
        raise LayoutError(
            f"{framework}: {what} ({n}) must divide the attention-TP size ({ranks}) or be divisible by it "
            f"(neither {n} % {ranks} == 0 nor {ranks} % {n} == 0)")
    raise LayoutError(f"{framework}: {what} ({n}) is not divisible by the TP size ({ranks}); "
                      f"{framework} cannot replicate {component} heads")


def rank_layout(record: Any, framework: str, tp: int, *, dp: int = 1, dp_attention: bool = False,
                vision_dp: bool = False) -> pd.DataFrame:
    """Which heads each of the ``tp`` ranks holds.

    Parameters
    ----------
    record : one catalog record (dict / ``pandas.Series`` with :mod:`dashboard.schema` columns).
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    tp : tensor-parallel size (ranks ``0 .. tp-1``).
    dp, dp_attention : SGLang DP-attention splits attention heads over ``attn_tp = tp // dp`` ranks
        (rank ``r`` is local rank ``r % attn_tp`` of DP group ``r // attn_tp``; every group holds all
        heads); TensorRT-LLM attention-DP keeps all attention heads on every rank.
    vision_dp : the vision encoder runs data-parallel (vLLM ``mm_encoder_tp_mode="data"``): every rank
        holds every vision head (replica = rank).

    Returns
    -------
    DataFrame with columns ``rank`` (int64), ``component`` (string), ``head`` (int64), ``replica``
    (int64), ``dummy`` (bool), ordered by rank, component, head. Components the model lacks are absent.

    Raises
    ------
    LayoutError (a ValueError) when the framework cannot lay the heads out on ``tp`` ranks (the message
    names the count and the size), or when ``dp`` does not divide ``tp`` under DP-attention; ValueError
    for an unknown framework, a ``tp``/``dp`` that is not a whole number in ``1 ..
    dashboard.sharding.MAX_PARALLEL``, or a record without ``num_attention_heads``.
    """
    if framework not in schema.FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; expected one of {', '.join(schema.FRAMEWORKS)}")
    tp = sharding.parallel_size(tp, "tp")  # whole number in 1 .. MAX_PARALLEL: 4.5 is refused, not truncated
    dp = sharding.parallel_size(dp, "dp")
    heads = _get(record, "num_attention_heads")
    if heads is None:
        raise ValueError("record has no num_attention_heads: no layout can be drawn")
    kv = _get(record, "num_key_value_heads") or heads
    if dp_attention and framework == "sglang":
        if dp < 1 or tp % dp:
            raise LayoutError(f"sglang: DP-attention needs dp ({dp}) to divide tp ({tp})")
        attn_tp = tp // dp
    elif dp_attention and framework == "tensorrt-llm":
        attn_tp = 1
    else:
        attn_tp = tp
    groups = tp // attn_tp

    rows: list[tuple[int, str, int, int, bool]] = []

    def add(component: str, local: list[tuple[int, int, int]], *, replicas_per_group: int = 1, dummy_from: int | None = None) -> None:
        # place the attention-TP layout in every DP group; replicas count across groups
        for g in range(groups):
            for r, h, rep in local:
                rows.append((g * attn_tp + r, component, h, rep + g * replicas_per_group,
                             dummy_from is not None and h >= dummy_from))

    # query heads
    q = _split(heads, attn_tp, "query", "num_attention_heads", framework, allow_replication=False)
    add("query", q)
    # KV heads / MLA latent
    if _flag(record, "is_mla") and framework in _MLA_LATENT:
        add("kv", [(r, 0, r) for r in range(attn_tp)], replicas_per_group=attn_tp)
    else:
        n_kv = heads if _flag(record, "is_mla") else kv
        local = _split(n_kv, attn_tp, "kv", "num_key_value_heads", framework,
                       allow_replication=framework not in _NO_KV_REPLICATION)
        rep = max(attn_tp // n_kv, 1) if attn_tp > n_kv else 1
        add("kv", local, replicas_per_group=rep)
    # linear attention (not affected by DP-attention in this model: split over the full TP group)
    kind = str(record.get("linear_attention_kind", "") if isinstance(record, (Mapping, pd.Series)) else "") or ""
    kind = "" if kind in ("nan", "<NA>", "None") else kind.lower()
    if kind:
        nv = _get(record, "linear_num_value_heads")
        nk = _get(record, "linear_num_key_heads")
        lin_rows: list[tuple[int, str, int, int, bool]] = []
        if kind == "mamba2":
            ng = _get(record, "mamba_n_groups") or 1
            keys = _split(ng, tp, "linear_key", "mamba_n_groups", framework, allow_replication=True)
        else:
            keys = _split(nk or nv or 0, tp, "linear_key", "linear_num_key_heads", framework, allow_replication=False)
        values = _split(nv or 0, tp, "linear_value", "linear_num_value_heads", framework, allow_replication=False)
        lin_rows += [(r, "linear_key", h, rep, False) for r, h, rep in keys]
        lin_rows += [(r, "linear_value", h, rep, False) for r, h, rep in values]
        rows.extend(lin_rows)
    # vision heads
    vh = _get(record, "vision_num_heads")
    if vh:
        if vision_dp:
            rows.extend((r, "vision", h, r, False) for r in range(tp) for h in range(vh))
        elif framework == "sglang":
            padded = int(sharding.pad_to_multiple(vh, tp))
            per = padded // tp
            rows.extend((r, "vision", r * per + i, 0, r * per + i >= vh) for r in range(tp) for i in range(per))
        else:
            if vh % tp:
                raise LayoutError(f"{framework}: vision_num_heads ({vh}) is not divisible by the TP size ({tp}); "
                                  "run the vision encoder data-parallel (vision_dp=True) or pick a TP size that divides it")
            per = vh // tp
            rows.extend((r, "vision", r * per + i, 0, False) for r in range(tp) for i in range(per))

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
