"""vLLM's memory rules: its KV-cache budget (``gpu_memory_utilization``, CUDA graphs charged from 0.21) and its
hybrid KV-cache manager (groups, pages, blocks per request). Called by :class:`dashboard.frameworks.vllm.VLLM`
(imported lazily: this module imports the memory model).

Units: bytes per GPU; arrays ``(models, layouts)``. Sources: vLLM ``Worker.determine_available_memory``
(``vllm/v1/worker/gpu_worker.py``), ``kv_cache_planning.py`` / ``kv_cache_utils.py`` of vLLM 0.33.0 (line
numbers in each docstring); the constants' fits are documented where they are defined.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dashboard.memory.columns import GiB, is_set, layer_counts, nz
from dashboard.memory.kv import kv_bytes_matrix

#: vLLM CUDA-graph memory (``profile_cudagraph_memory``): base + per decoder layer on the stage, + MoE
#: extra, bytes. Fitted on the logged "Estimated CUDA graph memory" of the dense vLLM 0.19 runs (0.49-0.84
#: GiB for 8-42 layers, within 0.15 GiB); MoE runs logged 0.82-1.39 GiB.
VLLM_CUDAGRAPH_BYTES = {"base": 0.45 * GiB, "per_layer": 0.009 * GiB, "moe": 0.35 * GiB}
#: vLLM release from which the CUDA-graph estimate is charged to the KV budget
#: (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` default on, ``envs.py:329``, ``gpu_worker.py:719-734``: "default
#: since v0.21.0"); before it, graphs were captured out of the unrequested ``1 - utilization`` share.
VLLM_CUDAGRAPH_IN_BUDGET_SINCE = (0, 21)


def cuda_graph_bytes(c: dict[str, np.ndarray], t: np.ndarray, pp: Any = 1) -> np.ndarray:
    """vLLM CUDA-graph memory per GPU, bytes, shape (models, len(tp)): :data:`VLLM_CUDAGRAPH_BYTES`."""
    L = c["num_hidden_layers"][:, None]
    stage_layers = np.ceil(L / np.maximum(np.asarray(pp, dtype=np.float64), 1.0))
    moe = (is_set(c["is_moe"]) & (nz(c["num_experts"]) > 0))[:, None]
    g = VLLM_CUDAGRAPH_BYTES["base"] + VLLM_CUDAGRAPH_BYTES["per_layer"] * stage_layers + np.where(moe, VLLM_CUDAGRAPH_BYTES["moe"], 0.0)
    return np.broadcast_to(g, np.broadcast_shapes(g.shape, t.shape)).astype(np.float64)


def kv_budget(b: dict[str, Any]) -> dict[str, Any]:
    """vLLM ``Worker.determine_available_memory``: ``budget = fraction x M - weights - activation - non_torch -
    CUDA graphs`` (graphs :func:`cuda_graph_bytes`, charged from :data:`VLLM_CUDAGRAPH_IN_BUDGET_SINCE`; before
    that release they come out of the unrequested share), reserve = the charged parts. Keys of ``b`` as
    :meth:`dashboard.frameworks.base.Framework.kv_budget`."""
    weights, act, nt, frac = b["weights"], b["activation"], b["non_torch"], b["fraction"]
    graph = np.broadcast_to(cuda_graph_bytes(b["c"], b["t"], b["pp"]), weights.shape)
    charged = graph if b["version"] >= VLLM_CUDAGRAPH_IN_BUDGET_SINCE else np.zeros(weights.shape)
    return {"budget": b["memory_bytes"] * frac - weights - act - nt - charged, "reserve": act + nt + charged,
            "fraction": frac, "cuda_graph": graph}


def kv_pool_capacity(b: dict[str, Any]) -> dict[str, Any]:
    """Tokens, whole sequences, blocks and KV-cache groups per GPU of vLLM's hybrid KV manager
    (:func:`vllm_kv_groups`): ``num_blocks = budget // bytes_per_block``; concurrency ``num_blocks /
    blocks_per_request``; tokens ``concurrency x ctx`` (what vLLM prints as "GPU KV cache size"). Arrays
    ``(models, layouts)``, NaN where the page size is unknown."""
    c, budget, kv_tok, state, ctx = b["c"], b["budget"], b["kv_tok"], b["state"], b["ctx"]
    full, swa, _ = layer_counts(c)
    n_attn = (full + swa)[:, None]
    kv_layer = kv_bytes_matrix(c, "vllm", b["tp"], kv_bytes=b["kvb"], context_len=None, dp=b["dp"],
                               dp_attention=b["dp_attention"])
    kv_layer = np.where(n_attn > 0, kv_layer / np.where(n_attn > 0, n_attn, 1.0), 0.0)
    _, _, lin = layer_counts(c)
    st_layer = np.where(lin[:, None] > 0, state / np.where(lin[:, None] > 0, lin[:, None], 1.0), 0.0)
    g = vllm_kv_groups(c, kv_layer, st_layer, pp=b["pp"], ctx=ctx, tokens=b["tokens"], block=b["block"])
    blocks = np.floor(np.maximum(budget, 0) / g["bytes_per_block"])
    ok = (g["bytes_per_block"] > 0) & np.isfinite(blocks)
    conc = blocks / g["blocks_per_request"]
    tokens = np.where(ok & (kv_tok > 0), np.floor(conc * ctx[:, None] + 1e-6), np.nan)
    seqs = np.where(ok, np.floor(conc + 1e-9), np.nan)
    blocks = np.where(ok, blocks, np.nan)
    return {"tokens": tokens, "seqs": seqs, "blocks": blocks, "groups": g["groups"]}


def vllm_kv_groups(c: dict[str, np.ndarray], kv_per_layer: np.ndarray, state_per_layer: np.ndarray, *,
                    pp: Any, ctx: np.ndarray, tokens: float, block: int = 16) -> dict[str, np.ndarray]:
    """vLLM 0.33.0's KV-cache groups, page and blocks per request, arrays (models, layouts).

    * Layer types: full attention, sliding window / chunked-local (``SlidingWindowSpec`` /
      ``ChunkedLocalAttentionSpec``, the catalog's ``num_sliding_window_layers`` with ``sliding_window``
      the window or chunk), Mamba / linear attention (``MambaSpec``); per PP stage ``ceil(n / pp)`` of each.
    * Groups (``kv_cache_planning.py:416-566``): ``group_size`` = the fewest layers of any type (the most
      when that is < 1.5 x the fewest); each type gets ``ceil(n / group_size)`` groups (padded).
    * One page size (``unify_kv_cache_spec_page_size``, ``kv_cache_planning.py:346-413``): attention pages are
      ``block x bytes per token per layer``; with Mamba layers the attention block grows to the smallest
      multiple of 16 whose page holds a Mamba state (``HybridAttentionMambaModelConfig``) and the Mamba page
      is padded to it.
    * ``num_blocks = available // (group_size x page)`` (``get_kv_cache_config_from_groups``,
      ``kv_cache_planning.py:642-667``).
    * Blocks one request of ``ctx`` tokens takes (``get_max_concurrency_for_kv_cache_config``,
      ``kv_cache_utils.py:1061-1093``): full ``cdiv(ctx, block)``; sliding / chunked ``cdiv(min(window - 1 +
      max_num_batched_tokens, ctx), block) + 1``; Mamba 1; summed over groups.

    Returns ``bytes_per_block``, ``blocks_per_request``, ``groups`` and ``block_size`` (tokens per attention block).
    """
    full, swa, lin = layer_counts(c)
    p = np.maximum(np.asarray(pp, dtype=np.float64), 1.0)
    lin = np.where(is_set(c["has_linear_attention"]) | (lin > 0), lin, 0.0)
    shape = np.broadcast_shapes((len(full), 1), np.shape(p) if np.ndim(p) else (1,), np.shape(kv_per_layer),
                                np.shape(state_per_layer))
    F, S, M = (np.broadcast_to(np.ceil(x[:, None] / p), shape) for x in (full, swa, lin))
    counts = np.stack(np.broadcast_arrays(F, S, M))  # (3, models, layouts)
    present = counts > 0
    big = np.where(present, counts, np.inf).min(axis=0)
    most = np.where(present, counts, 0).max(axis=0)
    gsize = np.where(most < 1.5 * big, most, big)
    gsize = np.where(np.isfinite(gsize) & (gsize > 0), gsize, 1.0)
    groups_t = np.where(present, np.ceil(counts / gsize), 0.0)
    kv_l = np.broadcast_to(kv_per_layer, F.shape)
    st_l = np.broadcast_to(state_per_layer, F.shape)
    has_attn = (F + S) > 0
    mult = np.where((M > 0) & has_attn & (kv_l > 0), np.ceil(st_l / np.where(kv_l > 0, kv_l * block, 1.0)), 1.0)
    blk = block * np.maximum(mult, 1.0)
    page = np.where(has_attn, blk * kv_l, st_l)
    win = np.broadcast_to(nz(c["sliding_window"], np.inf)[:, None], F.shape)
    ctx2 = np.broadcast_to(np.asarray(ctx, dtype=np.float64)[:, None] if np.ndim(ctx) else float(ctx), F.shape)
    swa_need = np.ceil(np.minimum(win - 1 + tokens, ctx2) / blk) + 1
    per_req = groups_t[0] * np.ceil(ctx2 / blk) + groups_t[1] * swa_need + groups_t[2] * 1.0
    return {"bytes_per_block": gsize * page, "blocks_per_request": per_req, "groups": groups_t.sum(axis=0),
            "block_size": blk}
