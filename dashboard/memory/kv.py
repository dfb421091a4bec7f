"""KV cache and linear-attention state per rank: attention-TP, KV heads per rank, KV-cache bytes per token and
recurrent-state bytes per sequence (formulas and sources in each docstring and in :mod:`dashboard.memory`).

Pure: numpy only. Shapes: the ``*_matrix`` functions take the columns of :func:`~dashboard.memory.columns.model_columns`
(one entry per model) and return ``(models, len(tp))`` float arrays, NaN where shapes are unknown.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dashboard import frameworks
from dashboard.memory.columns import (KV_DTYPE_BYTES, cdiv, check_context_len, check_sizes, dtype_bytes, head_dims,
                                      is_set, layer_counts, model_columns, nz)


def attention_tp(framework: str, tp: Any, dp: Any = 1, dp_attention: bool = False) -> np.ndarray:
    """Ranks the attention heads are split over (int array).

    The KV-pool attention-TP of the framework (:meth:`dashboard.frameworks.base.Framework.kv_pool_tp`):
    SGLang DP-attention ``tp // dp`` (its pool is sized with ``get_attention_tp_size()`` for every model
    file); TensorRT-LLM attention-DP ``1`` (every rank holds all heads, ``tp_size = 1 if
    mapping.enable_attention_dp``); otherwise ``tp``.
    """
    from dashboard import frameworks

    t = np.asarray(tp, dtype=np.int64)
    return frameworks.get(framework).kv_pool_tp(t, dp, dp_attention).astype(np.int64) + np.zeros_like(t)


def _kv_heads_per_rank(c: dict[str, np.ndarray], framework: str, attn_tp: np.ndarray) -> np.ndarray:
    """KV heads stored per rank, float array, broadcast (models x tp): the framework's
    :meth:`dashboard.frameworks.base.Framework.kv_cache_heads_per_rank` (``ceil(kv / tp)``; transformers:
    ``kv / tp`` when it divides, else every head)."""
    from dashboard import frameworks

    kv = c["num_key_value_heads"]
    kv = np.where(np.isnan(kv), c["num_attention_heads"], kv)[:, None]
    t = np.atleast_1d(np.asarray(attn_tp, dtype=np.float64))[None, :]
    return frameworks.get(framework).kv_cache_heads_per_rank(kv, t)


#: Public name of :func:`_kv_heads_per_rank` (the function keeps its name: the sharding work rewrites its body).
kv_heads_per_rank = _kv_heads_per_rank


# --------------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------------
def kv_bytes_matrix(c: dict[str, np.ndarray], framework: str, tp: np.ndarray, *, kv_bytes: float,
                     context_len: float | None, dp: int = 1, dp_attention: bool = False) -> np.ndarray:
    """KV-cache bytes per token per rank, shape (models, len(tp)). NaN where shapes are unknown."""
    tp = np.atleast_1d(np.asarray(tp, dtype=np.int64))
    atp = attention_tp(framework, tp, dp, dp_attention)
    full, swa, _ = layer_counts(c)
    hd, vhd = head_dims(c)
    kvr = _kv_heads_per_rank(c, framework, atp)
    gqa = kvr * (hd + vhd)[:, None]
    is_mla = is_set(c["is_mla"])[:, None]
    if frameworks.get(framework).caches_mla_latent:
        mla = np.broadcast_to((c["kv_lora_rank"] + c["qk_rope_head_dim"])[:, None], gqa.shape)
    else:
        # transformers / Megatron cache the up-projected per-head K (nope + rope) and V.
        heads = c["num_attention_heads"][:, None]
        t = atp.astype(np.float64)[None, :]
        hpr = np.where(np.mod(heads, t) == 0, heads / t, heads)
        mla = hpr * (hd + vhd)[:, None]
    per_layer = np.where(is_mla, mla, gqa) * kv_bytes
    if context_len is None:
        swa_frac = np.ones_like(swa)
    else:  # scalar or one context length per model
        ctx = np.broadcast_to(np.asarray(context_len, dtype=np.float64), swa.shape)
        win = np.where(np.isnan(c["sliding_window"]), ctx, c["sliding_window"])
        swa_frac = np.minimum(win, ctx) / ctx
    layers = full + swa * swa_frac
    return per_layer * layers[:, None]


def kv_cache_bytes_per_token_per_rank(record: Any, framework: str, tp: int, *, kv_dtype: str = "bf16",
                                      context_len: int | None = None, dp: int = 1,
                                      dp_attention: bool = False) -> float:
    """KV-cache bytes one token of one sequence occupies on one TP rank (bytes, float).

    Formula, summed over softmax-attention layers (linear-attention / Mamba layers hold no per-token
    KV; cross-attention caches encoder tokens and is not counted):

    * GQA/MHA: ``kv_heads_per_rank * (head_dim + v_head_dim) * dtype_bytes`` per layer (= ``2 * kv *
      head_dim * bytes`` when d_k = d_v), with ``kv_heads_per_rank``: vLLM/SGLang/Megatron ``max(1, kv
      // attn_tp)`` (replicated when ``attn_tp > kv``), TensorRT-LLM ``ceil(kv / attn_tp)``,
      transformers ``kv / tp`` when it divides, else all ``kv`` heads (k/v not sharded). For a layout
      vLLM/SGLang refuse (neither divides the other) the value is ``ceil(kv / attn_tp)``: what an even
      split would need, so per-rank bytes x TP never falls below the unreplicated total.
    * MLA: vLLM, SGLang, TensorRT-LLM cache the latent ``(kv_lora_rank + qk_rope_head_dim) *
      dtype_bytes`` per layer on *every* rank (no division by TP); transformers and Megatron-Core cache
      the up-projected K and V per local head: ``heads / tp * (qk_head_dim + v_head_dim) * bytes``.
    * Sliding-window layers: with ``context_len`` given, a sequence of ``context_len`` tokens keeps
      ``min(sliding_window, context_len)`` tokens in those layers, so they count ``min(window, ctx) /
      ctx`` of a layer per token (the average over the sequence). With ``context_len=None`` every layer
      counts fully (the cost of a token while the sequence is shorter than the window).

    Parameters
    ----------
    record : one catalog record (dict / Series with :mod:`dashboard.schema` columns).
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    tp : tensor-parallel size (>= 1).
    kv_dtype : ``bf16``, ``fp16``, ``fp8`` (1 byte), ``fp32``; see :data:`KV_DTYPE_BYTES`.
    context_len : tokens per sequence for the sliding-window cap, or ``None``.
    dp, dp_attention : SGLang DP-attention (``attn_tp = tp // dp``) / TensorRT-LLM attention-DP.

    Returns
    -------
    float bytes per token per rank; ``nan`` when the record lacks the shapes.

    Raises
    ------
    ValueError for an unknown framework or dtype, or ``tp < 1``.

    Sources: vLLM ``FullAttentionSpec`` / ``MLAAttentionSpec`` page sizes, SGLang ``cell_size``,
    TensorRT-LLM ``get_cache_size_per_token`` (URLs in the module docstring).
    """
    tp, dp = check_sizes(framework, tp, dp=dp)
    if context_len is not None:
        context_len = check_context_len(context_len)
    c = model_columns(record)
    return float(kv_bytes_matrix(c, framework, np.array([tp]), kv_bytes=dtype_bytes(kv_dtype, KV_DTYPE_BYTES, "kv_dtype"),
                                  context_len=context_len, dp=dp, dp_attention=dp_attention)[0, 0])


def state_bytes_matrix(c: dict[str, np.ndarray], tp: np.ndarray, *, state_bytes: float) -> np.ndarray:
    """Linear-attention / SSM state bytes per sequence per rank, shape (models, len(tp))."""
    tp = np.atleast_1d(np.asarray(tp, dtype=np.float64))[None, :]
    kind = c["linear_attention_kind"]
    _, _, lin = layer_counts(c)
    lin = np.where(is_set(c["has_linear_attention"]) | (lin > 0), lin, 0.0)[:, None]
    nk = c["linear_num_key_heads"][:, None]
    nv = c["linear_num_value_heads"][:, None]
    dk = c["linear_key_head_dim"][:, None]
    dv = c["linear_value_head_dim"][:, None]
    ker = nz(c["linear_conv_kernel_dim"], 4.0)[:, None]
    # GDN (vLLM gated_delta_net_state_shape): conv (k-1, (2*nk*dk + nv*dv)/tp), temporal (nv/tp, dv, dk)
    gdn = ((ker - 1) * cdiv(2 * nk * dk + nv * dv, tp) + cdiv(nv, tp) * dv * dk) * state_bytes
    # KDA (vLLM kda_state_shape): conv (k-1, (nv*dv + 2*nk*dk)/tp) model dtype; recurrent fp32
    nk_kda = np.where(np.isnan(nk), nv, nk)
    dk_kda = np.where(np.isnan(dk), dv, dk)
    kda = (ker - 1) * cdiv(nv * dv + 2 * nk_kda * dk_kda, tp) * state_bytes + cdiv(nv, tp) * dv * dv * 4.0
    # Mamba2 (vLLM mamba2_state_shape): groups padded to tp when they do not divide
    ng = nz(c["mamba_n_groups"], 1.0)[:, None]
    ng_eff = np.where(np.mod(ng, tp) == 0, ng, np.maximum(ng, tp))
    ds = c["ssm_state_size"][:, None]
    mamba = ((ker - 1) * cdiv(nv * dv + 2 * ng_eff * ds, tp) + cdiv(nv, tp) * dv * ds) * state_bytes
    per_layer = np.select([(kind == "gdn")[:, None], (kind == "kda")[:, None], (kind == "mamba2")[:, None]],
                          [gdn, kda, mamba], default=np.nan)
    return np.where(lin > 0, per_layer * lin, 0.0)


def linear_state_bytes_per_sequence_per_rank(record: Any, framework: str, tp: int, *,
                                             state_dtype: str = "bf16") -> float:
    """Fixed-size recurrent state of the linear-attention / Mamba layers, bytes per sequence per rank.

    Per layer (vLLM ``MambaStateShapeCalculator``): GDN ``(conv_kernel - 1) * (2 * nk * dk + nv * dv) /
    tp + nv / tp * dv * dk`` elements; KDA ``(conv_kernel - 1) * (nv * dv + 2 * nk * dk) / tp``
    elements of ``state_dtype`` plus a float32 recurrent state ``nv / tp * dv * dv``; Mamba2
    ``(conv_kernel - 1) * (nv * dv + 2 * n_groups' * state) / tp + nv / tp * dv * state`` with
    ``n_groups'`` padded to ``tp`` when ``n_groups`` does not divide it (replicated groups). The same
    shapes are used for every framework. Returns 0.0 for models without such layers, ``nan`` when the
    kind or shapes are unknown. ``state_dtype`` is vLLM's default ``mamba_ssm_cache_dtype="auto"`` (the
    model dtype).
    """
    (tp,) = check_sizes(framework, tp)
    c = model_columns(record)
    return float(state_bytes_matrix(c, np.array([tp]), state_bytes=dtype_bytes(state_dtype, KV_DTYPE_BYTES, "state_dtype"))[0, 0])
