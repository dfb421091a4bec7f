"""Memory model per rank: KV-cache bytes per token, linear-attention state per sequence, weight bytes,
and how many KV-cache tokens fit on a GPU under each framework's budget rule.

Pure: numpy/pandas only, no Panel, no I/O except :func:`load_gpus` (reads ``data/gpus.csv``).

Units are in every name: ``*_bytes`` are bytes (never GiB), ``*_per_token`` is per token of one
sequence, ``*_per_sequence`` per sequence, ``*_per_rank`` on one TP rank (= one GPU), ``params`` are
parameter counts. ``GiB`` = 2**30 bytes.

Every public function has a scalar form (one record: a ``dict``, a ``pandas.Series`` or a one-row
frame of catalog columns, see :mod:`dashboard.schema`) and shares its arithmetic with the vectorized
:func:`memory_grid` (catalog x TP sizes x frameworks, numpy over columns, no per-row Python).

Sources (read upstream, pinned)
-------------------------------
KV cache page per layer, vLLM ``FullAttentionSpec.real_page_size_bytes`` =
``block_size * num_kv_heads * (head_size + head_size_v) * dtype_size`` and ``MLAAttentionSpec`` =
``block_size * 1 * (kv_lora_rank + qk_rope_head_dim) * dtype_size``:
    https://github.com/vllm-project/vllm/blob/001cabc1be16a59a70d720ed61a13b678c060a18/vllm/v1/kv_cache_interface.py
vLLM KV budget, ``Worker.determine_available_memory``: ``requested_memory = total_memory *
gpu_memory_utilization``; ``available_kv = requested_memory - (weights + peak_activation +
non_torch_increase)``:
    https://github.com/vllm-project/vllm/blob/35d5cda123ec28581759b6d34cde8052314fb1e6/vllm/v1/worker/gpu_worker.py
vLLM Mamba / GDN / KDA state shapes, ``MambaStateShapeCalculator`` and dtypes
``MambaStateDtypeCalculator`` (KDA recurrent state is float32):
    https://github.com/vllm-project/vllm/blob/02d710837549a368073552333f66d714477415d2/vllm/model_executor/layers/mamba/mamba_utils.py
SGLang ``profile_max_num_token``: ``cell_size = num_kv_heads(attn_tp) * (head_dim + v_head_dim) *
layers * dtype_size`` (MLA: ``(kv_lora_rank + qk_rope_head_dim) * layers * dtype_size``);
``rest_memory = available_after_weights - total * (1 - mem_fraction_static)``:
    https://github.com/sgl-project/sglang/blob/226149ac457bd1a1b5d450f55c01f72f604320d6/python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
SGLang default ``mem_fraction_static`` (``ServerArgs._handle_gpu_memory_settings``, PR #10975):
``reserved_mib = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp * pp / 8 *
1024`` (floor 10 GiB above 60 GiB cards); ``mem_fraction_static = round((gpu_mib - reserved_mib) /
gpu_mib, 3)``:
    https://github.com/sgl-project/sglang/blob/469c63e54e7d94591617ef9590c6aa26d54dc1bb/python/sglang/srt/server_args.py
TensorRT-LLM (PyTorch backend) ``KvCacheCreator._cal_max_memory``: ``available_kv_mem = (total -
peak_memory) * free_gpu_memory_fraction`` (default 0.9) -- a fraction of what is *free after* weights
and the profiled peak; KV heads per rank ``ceil(kv / tp)`` (1 when attention-DP: ``tp_size = 1``):
    https://github.com/NVIDIA/TensorRT-LLM/blob/0004396720054fd8e205cbf616f21f0b57c6b412/tensorrt_llm/_torch/pyexecutor/_util.py
transformers continuous batching ``PagedAttentionMemoryHandler``: ``(total - max(allocated,
reserved)) * max_memory_percent`` (default 0.9):
    https://github.com/huggingface/transformers/blob/3f17daf89935cfac6c1b70500cf9bd5720f2c14e/src/transformers/generation/continuous_batching/cache.py
Measured vLLM 0.19.0 on one H100 80GB (the oracle the tests check): Llama-3.1-8B-Instruct at
``gpu_memory_utilization=0.95`` -> weights 14.99 GiB, peak activation 1.89 GiB, non-torch 0.25 GiB
(2.07-2.13 GiB at TP 2-4), KV cache 58.11 GiB = 476,016 tokens; activation 0.75-2.29 GiB across
dense models, scaling with vocabulary size:
    llm-d/llm-d-benchmark capacity-planner accuracy report (vLLM v0.19.0, H100), search-index file
    id 53125280591; llm-d/llm-d-benchmark@259334868c50 config_explorer/empirical-vllm-memory-results.md

Modelling choices (documented constants, not measurements of your machine)
----------------------------------------------------------------------------
* GPU memory is ``data/gpus.csv`` ``memory_bytes`` (NVML / ``get_device_properties`` total). On an
  H100 ``cudaMemGetInfo`` reports ~0.46 GiB less (79.19 GiB), so vLLM/SGLang budgets here are ~0.6 %
  high on that card.
* vLLM reserve (one rule, read from vLLM 0.33.0, global parameters fitted on the 0.19 logs of
  ``/work/shared/oracles/kv-capacity.csv``, see the constants' comments): peak activation
  :func:`_activation_bytes` (:data:`VLLM_SAMPLER_BYTES_PER_LOGIT`, :data:`VLLM_PROFILE_LIVE_BYTES`,
  :data:`VLLM_MOE_WORKSPACE_FACTOR`), non-torch :data:`VLLM_NON_TORCH_BYTES`, CUDA graphs
  :data:`VLLM_CUDAGRAPH_BYTES` (charged to the budget from vLLM 0.21, ``gpu_worker.py:719-734``); KV tokens from
  the hybrid KV manager's groups and pages, :func:`_vllm_kv_groups`. SGLang: ``mem_fraction_static x
  pre_model_load_memory - weights`` (:data:`SGLANG_STARTUP_BYTES`, :data:`SGLANG_LOAD_EXTRA_BYTES`,
  ``mem_cache/kv_cache_configurator.py:2990-3060`` of 0.5.23). ``capacity(..., measured_kv_bytes=...)``
  replaces the estimate with a logged figure. ``tests/test_kv_oracles.py`` checks every oracle row.
* TensorRT-LLM reuses the vLLM activation and non-torch estimates (not separately calibrated).
* transformers native TP and Megatron-Core have no pre-allocated KV pool: the cache grows until
  out-of-memory, so their budget is everything left after weights, activation and non-torch memory.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard import schema, sharding

GiB = 1 << 30
MiB = 1 << 20

GPUS_CSV = Path(__file__).resolve().parents[1] / "data" / "gpus.csv"

#: Bytes per element of a KV-cache dtype name.
KV_DTYPE_BYTES: dict[str, float] = {
    "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "half": 2, "fp32": 4, "float32": 4,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1,
}

#: Bytes per weight element of a (quantized) weight format, scales included where fixed.
#: 4-bit group formats add their per-group scales in :func:`_quant_weight_bytes`.
WEIGHT_DTYPE_BYTES: dict[str, float] = {
    "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "fp32": 4, "float32": 4,
    "fp8": 1, "int8": 1, "w8a8": 1,
    "nvfp4": 0.5 + 1 / 16,  # e2m1 + one fp8 scale per 16 elements
    "mxfp4": 0.5 + 1 / 32,  # e2m1 + one e8m0 scale per 32 elements
    "int4": 0.5 + (2 + 0.5) / 128, "awq": 0.5 + (2 + 0.5) / 128, "gptq": 0.5 + (2 + 0.5) / 128,
}

#: ``weight_dtype`` values that are the serving dtype itself (``--dtype``), not a quantization: every
#: tensor is stored in them, the embedding and LM head included.
UNQUANTIZED_WEIGHT_DTYPES = ("bf16", "bfloat16", "fp16", "float16", "fp32", "float32")

#: KV-cache block granularity in tokens (vLLM ``block_size`` 16, TensorRT-LLM ``tokens_per_block``
#: 32, SGLang page size 1, transformers continuous batching ``block_size`` 256).
TOKENS_PER_BLOCK: dict[str, int] = {
    "vllm": 16, "sglang": 1, "tensorrt-llm": 32, "transformers-cb-cache": 256,
    "transformers-native-tp": 1, "megatron-core": 1,
}

#: Budget rule per framework, in words (shown by the dashboard).
BUDGET_RULES: dict[str, str] = {
    "vllm": "gpu_memory_utilization x total - weights - peak activation - non-torch - CUDA graphs (vLLM >= 0.21)",
    "sglang": "mem_fraction_static x (total - startup) - weights",
    "tensorrt-llm": "free_gpu_memory_fraction x (total - weights - peak activation - non-torch)",
    "transformers-cb-cache": "max_memory_percent x (total - weights) - activation",
    "transformers-native-tp": "total - weights - activation - non-torch (no pre-allocated pool)",
    "megatron-core": "total - weights - activation - non-torch (no pre-allocated pool)",
}

#: Default fraction of the budget rule per framework (SGLang's is computed per GPU, see
#: :func:`sglang_default_mem_fraction_static`).
DEFAULT_FRACTION: dict[str, float | None] = {
    "vllm": 0.9, "sglang": None, "tensorrt-llm": 0.9, "transformers-cb-cache": 0.9,
    "transformers-native-tp": 1.0, "megatron-core": 1.0,
}

_MLA_LATENT_FRAMEWORKS = ("vllm", "sglang", "tensorrt-llm")
_NUMERIC = (
    "hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size", "max_position_embeddings",
    "num_attention_heads", "num_key_value_heads", "head_dim", "v_head_dim",
    "num_full_attention_layers", "num_sliding_window_layers", "num_linear_attention_layers",
    "sliding_window", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
    "num_experts", "num_experts_per_tok", "moe_intermediate_size", "num_shared_experts",
    "shared_expert_intermediate_size", "num_dense_layers", "num_moe_layers",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "mamba_n_groups", "ssm_state_size", "vision_num_heads",
    "quant_bits", "quant_group_size", "weight_block_n", "weight_block_k",
    "params_total", "params_active", "params_vision", "moe_latent_size",
    "quant_attention_fraction", "quant_linear_attention_fraction", "quant_dense_mlp_fraction",
    "quant_shared_experts_fraction", "quant_experts_fraction", "quant_lm_head_fraction", "quant_router_fraction",
    "quant_vision_fraction",
    "learned_position_embeddings", "global_head_dim", "num_global_key_value_heads", "index_n_heads",
    "index_head_dim", "num_indexer_layers", "params_vision_embed", "params_vision_connector",
    "hidden_size_per_layer_input", "vocab_size_per_layer_input", "o_lora_rank", "o_groups",
    "num_compressor_layers", "hc_mult", "num_attention_heads_mean",
)
_BOOL = ("tie_word_embeddings", "is_mla", "is_moe", "has_linear_attention", "has_vision", "is_quantized",
         "linear_bias", "attn_output_gate", "attn_head_gate", "mlp_gated")
_STR = ("model_id", "model_type", "text_model_type", "linear_attention_kind", "quant_method", "quant_format", "torch_dtype", "status",
        "quant_attention_format", "quant_linear_attention_format", "quant_dense_mlp_format", "quant_shared_experts_format",
        "quant_experts_format", "quant_lm_head_format", "quant_router_format", "quant_vision_format")


# --------------------------------------------------------------------------------------------
# Column access: one record or a whole catalog, as float arrays (NaN = unknown)
# --------------------------------------------------------------------------------------------
def _as_frame(obj: Any) -> pd.DataFrame:
    if isinstance(obj, pd.DataFrame):
        return obj
    if isinstance(obj, pd.Series):
        return obj.to_frame().T
    if isinstance(obj, Mapping):
        return pd.DataFrame([dict(obj)])
    if hasattr(obj, "_asdict"):
        return pd.DataFrame([obj._asdict()])
    raise TypeError(f"expected a catalog record (dict / Series) or DataFrame, got {type(obj).__name__}")


def _cols(obj: Any) -> dict[str, np.ndarray]:
    """Columns needed by the memory model as 1-D arrays (float64 with NaN for numbers/flags)."""
    df = _as_frame(obj)
    n = len(df)
    out: dict[str, np.ndarray] = {}
    for name in _NUMERIC:
        if name in df.columns:
            out[name] = pd.to_numeric(df[name], errors="coerce").astype("float64").to_numpy()
        else:
            out[name] = np.full(n, np.nan)
    for name in _BOOL:
        if name in df.columns:
            vals = df[name].astype(object).to_numpy()
            na = pd.isna(vals)
            out[name] = np.where(na, np.nan, np.where(na, False, vals).astype(bool).astype(np.float64))
        else:
            out[name] = np.full(n, np.nan)
    for name in _STR:
        if name in df.columns:
            out[name] = df[name].astype(object).where(df[name].notna(), "").astype(str).str.lower().to_numpy()
        else:
            out[name] = np.full(n, "", dtype=object)
    return out


def _nz(x: np.ndarray, default: float = 0.0) -> np.ndarray:
    return np.where(np.isnan(x), default, x)


def _flag(x: np.ndarray) -> np.ndarray:
    return _nz(x, 0.0) > 0.5


def _cdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Ceil division on float arrays (NaN propagates)."""
    return np.ceil(a / b)


def _layer_counts(c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(full-attention layers, sliding-window layers, linear/SSM layers) per model."""
    L = c["num_hidden_layers"]
    swa = _nz(c["num_sliding_window_layers"])
    lin = _nz(c["num_linear_attention_layers"])
    full = np.where(np.isnan(c["num_full_attention_layers"]), L - swa - lin, c["num_full_attention_layers"])
    return np.maximum(full, 0), swa, lin


def _head_dims(c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    hd = c["head_dim"]
    hd = np.where(np.isnan(hd), c["hidden_size"] / c["num_attention_heads"], hd)
    vhd = np.where(np.isnan(c["v_head_dim"]), hd, c["v_head_dim"])
    return hd, vhd


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


def _dtype_bytes(name: str, table: Mapping[str, float], what: str) -> float:
    key = str(name).strip().lower()
    if key not in table:
        raise ValueError(f"unknown {what} {name!r}; expected one of {sorted(table)}")
    return float(table[key])


# --------------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------------
def _kv_bytes_matrix(c: dict[str, np.ndarray], framework: str, tp: np.ndarray, *, kv_bytes: float,
                     context_len: float | None, dp: int = 1, dp_attention: bool = False) -> np.ndarray:
    """KV-cache bytes per token per rank, shape (models, len(tp)). NaN where shapes are unknown."""
    tp = np.atleast_1d(np.asarray(tp, dtype=np.int64))
    atp = attention_tp(framework, tp, dp, dp_attention)
    full, swa, _ = _layer_counts(c)
    hd, vhd = _head_dims(c)
    kvr = _kv_heads_per_rank(c, framework, atp)
    gqa = kvr * (hd + vhd)[:, None]
    is_mla = _flag(c["is_mla"])[:, None]
    if framework in _MLA_LATENT_FRAMEWORKS:
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
    tp, dp = _check(framework, tp, dp=dp)
    if context_len is not None:
        context_len = _check_context_len(context_len)
    c = _cols(record)
    return float(_kv_bytes_matrix(c, framework, np.array([tp]), kv_bytes=_dtype_bytes(kv_dtype, KV_DTYPE_BYTES, "kv_dtype"),
                                  context_len=context_len, dp=dp, dp_attention=dp_attention)[0, 0])


def _state_bytes_matrix(c: dict[str, np.ndarray], tp: np.ndarray, *, state_bytes: float) -> np.ndarray:
    """Linear-attention / SSM state bytes per sequence per rank, shape (models, len(tp))."""
    tp = np.atleast_1d(np.asarray(tp, dtype=np.float64))[None, :]
    kind = c["linear_attention_kind"]
    _, _, lin = _layer_counts(c)
    lin = np.where(_flag(c["has_linear_attention"]) | (lin > 0), lin, 0.0)[:, None]
    nk = c["linear_num_key_heads"][:, None]
    nv = c["linear_num_value_heads"][:, None]
    dk = c["linear_key_head_dim"][:, None]
    dv = c["linear_value_head_dim"][:, None]
    ker = _nz(c["linear_conv_kernel_dim"], 4.0)[:, None]
    # GDN (vLLM gated_delta_net_state_shape): conv (k-1, (2*nk*dk + nv*dv)/tp), temporal (nv/tp, dv, dk)
    gdn = ((ker - 1) * _cdiv(2 * nk * dk + nv * dv, tp) + _cdiv(nv, tp) * dv * dk) * state_bytes
    # KDA (vLLM kda_state_shape): conv (k-1, (nv*dv + 2*nk*dk)/tp) model dtype; recurrent fp32
    nk_kda = np.where(np.isnan(nk), nv, nk)
    dk_kda = np.where(np.isnan(dk), dv, dk)
    kda = (ker - 1) * _cdiv(nv * dv + 2 * nk_kda * dk_kda, tp) * state_bytes + _cdiv(nv, tp) * dv * dv * 4.0
    # Mamba2 (vLLM mamba2_state_shape): groups padded to tp when they do not divide
    ng = _nz(c["mamba_n_groups"], 1.0)[:, None]
    ng_eff = np.where(np.mod(ng, tp) == 0, ng, np.maximum(ng, tp))
    ds = c["ssm_state_size"][:, None]
    mamba = ((ker - 1) * _cdiv(nv * dv + 2 * ng_eff * ds, tp) + _cdiv(nv, tp) * dv * ds) * state_bytes
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
    (tp,) = _check(framework, tp)
    c = _cols(record)
    return float(_state_bytes_matrix(c, np.array([tp]), state_bytes=_dtype_bytes(state_dtype, KV_DTYPE_BYTES, "state_dtype"))[0, 0])


# --------------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------------
#: Frameworks that keep a float32 checkpoint in float32 (the serving engines load it in 16-bit).
KEEP_FP32_FRAMEWORKS = frozenset({"transformers-native-tp", "transformers-cb-cache", "megatron-core"})


def _base_weight_bytes(c: dict[str, np.ndarray], framework: str) -> np.ndarray:
    """Unquantized tensor bytes: 2 (serving frameworks load float32 checkpoints in 16-bit; transformers
    and Megatron keep float32)."""
    fp32 = np.isin(c["torch_dtype"], ["float32", "fp32"])
    if framework in KEEP_FP32_FRAMEWORKS:
        return np.where(fp32, 4.0, 2.0)
    return np.full(len(fp32), 2.0)


def _quant_weight_bytes(c: dict[str, np.ndarray], base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes per quantized linear weight element, experts_only flag) from the checkpoint's config."""
    method, fmt = c["quant_method"], c["quant_format"]
    bits = c["quant_bits"]
    gs = np.where(_nz(c["quant_group_size"], 128.0) > 0, _nz(c["quant_group_size"], 128.0), np.inf)
    blk = c["weight_block_n"] * c["weight_block_k"]
    fp8_scale = np.where(np.isnan(blk), 0.0, 4.0 / blk)
    nvfp4 = np.char.find(fmt.astype(str), "nvfp4") >= 0
    nvfp4 |= np.char.find(method.astype(str), "fp4") >= 0
    mxfp4 = (method == "mxfp4") | (np.char.find(fmt.astype(str), "mxfp4") >= 0)
    fp8 = (method == "fp8") | (np.char.find(fmt.astype(str), "float-quantized") >= 0) | (np.char.find(fmt.astype(str), "fp8") >= 0)
    four_bit = (_nz(bits) == 4) | np.isin(method, ["awq", "gptq", "bitsandbytes"])
    eight_bit = _nz(bits) == 8
    out = np.select(
        [mxfp4, nvfp4, fp8, four_bit, eight_bit],
        [np.full_like(base, WEIGHT_DTYPE_BYTES["mxfp4"]), np.full_like(base, WEIGHT_DTYPE_BYTES["nvfp4"]),
         1.0 + fp8_scale, 0.5 + 2.5 / gs, np.ones_like(base)],
        default=base,
    )
    quantized = _flag(c["is_quantized"]) | (method != "")
    return np.where(quantized, out, base), mxfp4


#: Parts whose quantization the catalog describes (``quant_<part>_fraction`` / ``quant_<part>_format``,
#: see :mod:`dashboard.quant_coverage`).
QUANT_PARTS = ("attention", "linear_attention", "dense_mlp", "shared_experts", "experts", "lm_head", "router", "vision")


def _format_bytes(fmt: np.ndarray, c: dict[str, np.ndarray], base: np.ndarray) -> np.ndarray:
    """Bytes per weight element (scales included) of each ``quant_<part>_format`` token, as vLLM 0.33.0
    allocates them (NaN for an empty / unknown token):

    * ``nvfp4``: uint8 ``[N, K / 2]`` + float8_e4m3fn scales ``[N, K / 16]`` (``modelopt.py:2023-2066``
      ``KNvfp4Static``; MoE ``:912-1037``) = 0.5625 B; the float32 per-tensor / per-expert global scales
      are a few bytes per module and left out;
    * ``mxfp4``: uint8 ``[N, K / 2]`` + uint8 e8m0 scales ``[N, K / 32]`` = 0.53125 B (``mxfp4.py``);
    * ``mxfp8``: float8_e4m3fn ``[N, K]`` + uint8 scales ``[N, K / 32]`` = 1.03125 B (``modelopt.py:2309-2364``);
    * ``fp8``: 1 B + one float32 scale per tensor (left out); ``fp8-channel``: 1 B + a float32 scale per
      output row, ``4 / K`` B per element, taken as ``4 / hidden_size``; ``fp8-block``: 1 B + a float32
      scale per ``weight_block_n x weight_block_k`` block (``fp8.py``);
    * ``int4`` / ``int8`` (compressed-tensors WNA16 ``pack-quantized``, symmetric): int32-packed
      weights (``bits / 8`` B) + a 16-bit scale per ``quant_group_size`` group (``2 / group_size``;
      per-channel when the group size is unknown).
    """
    gs = np.where(_nz(c["quant_group_size"], np.inf) > 0, _nz(c["quant_group_size"], np.inf), np.inf)
    blk = c["weight_block_n"] * c["weight_block_k"]
    H = c["hidden_size"]
    return np.select(
        [fmt == "nvfp4", fmt == "mxfp4", fmt == "mxfp8", fmt == "fp8", fmt == "fp8-channel", fmt == "fp8-block",
         fmt == "int4", fmt == "int8"],
        [np.full_like(base, WEIGHT_DTYPE_BYTES["nvfp4"]), np.full_like(base, WEIGHT_DTYPE_BYTES["mxfp4"]),
         np.full_like(base, 1.0 + 1.0 / 32), np.ones_like(base), 1.0 + np.where(np.isnan(H), 0.0, 4.0 / H),
         1.0 + np.where(np.isnan(blk), 0.0, 4.0 / blk), 0.5 + 2.0 / gs, 1.0 + 2.0 / gs],
        default=np.nan,
    )


def _part_quant(c: dict[str, np.ndarray], base: np.ndarray, qb: np.ndarray,
                experts_only: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per part of :data:`QUANT_PARTS`: (quantized share 0-1, bytes per quantized element), 1-D arrays.

    Where the catalog derived the part's coverage (``quant_<part>_fraction`` not NA, see
    :mod:`dashboard.quant_coverage`) it is used with its ``quant_<part>_format``; otherwise the
    checkpoint-wide rule: every linear part quantized at ``qb`` (:func:`_quant_weight_bytes`; MXFP4:
    the routed experts only), LM head, router and vision tower in 16-bit."""
    legacy_lin = np.where(experts_only | (qb == base), 0.0, 1.0)
    legacy = {"attention": legacy_lin, "linear_attention": legacy_lin, "dense_mlp": legacy_lin,
              "shared_experts": legacy_lin, "experts": np.where(qb == base, 0.0, 1.0),
              "lm_head": np.zeros_like(base), "router": np.zeros_like(base), "vision": np.zeros_like(base)}
    out = {}
    for part in QUANT_PARTS:
        f = c[f"quant_{part}_fraction"]
        qf = _format_bytes(c[f"quant_{part}_format"], c, base)
        known = ~np.isnan(f)
        frac = np.where(known, np.clip(np.nan_to_num(f), 0.0, 1.0), legacy[part])
        qbytes = np.where(known & ~np.isnan(qf), qf, qb)
        out[part] = (frac, qbytes)
    return out


def _mix(part: tuple[np.ndarray, np.ndarray], base: np.ndarray) -> np.ndarray:
    """Bytes per element of a part: quantized share x quantized bytes + the rest x 16-bit bytes."""
    f, q = part
    return f * q + (1.0 - f) * base


def _global_attn(c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(full-attention layers with their own shapes, their head dim, their KV heads) per model.

    Gemma-4's full-attention layers use ``global_head_dim`` and ``num_global_key_value_heads``
    (vllm/model_executor/models/gemma4.py:365-437); elsewhere the count is 0 and the shapes are the
    ordinary ``head_dim`` / ``num_key_value_heads``."""
    hd, _ = _head_dims(c)
    kv = np.where(np.isnan(c["num_key_value_heads"]), c["num_attention_heads"], c["num_key_value_heads"])
    full, _, _ = _layer_counts(c)
    has = ~np.isnan(c["global_head_dim"]) | ~np.isnan(c["num_global_key_value_heads"])
    ghd = np.where(np.isnan(c["global_head_dim"]), hd, c["global_head_dim"])
    gkv = np.where(np.isnan(c["num_global_key_value_heads"]), kv, c["num_global_key_value_heads"])
    return np.where(has & ~_flag(c["is_mla"]), full, 0.0), ghd, gkv


def _text_model_type(c: dict[str, np.ndarray]) -> np.ndarray:
    """The language model's ``model_type`` (catalog ``text_model_type``, else ``model_type``)."""
    return c["text_model_type"] if "text_model_type" in c else c["model_type"]


def _mlp_matrices(c: dict[str, np.ndarray]) -> np.ndarray:
    """Weight matrices per MLP / expert: 3 when gated (gate, up, down; also when unknown), 2 for
    non-gated activations such as Nemotron-H's relu2 (catalog ``mlp_gated``)."""
    return np.where(np.isnan(c["mlp_gated"]) | _flag(c["mlp_gated"]), 3.0, 2.0)


def _shared_intermediate(c: dict[str, np.ndarray]) -> np.ndarray:
    """Total shared-expert width per MoE layer (elements): ``shared_expert_intermediate_size``, else
    ``num_shared_experts x moe_intermediate_size``."""
    return np.where(np.isnan(c["shared_expert_intermediate_size"]),
                    _nz(c["num_shared_experts"]) * _nz(c["moe_intermediate_size"]), c["shared_expert_intermediate_size"])


def _param_parts(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Parameter counts by how vLLM 0.33.0 partitions them (1-D arrays, one entry per model).

    Keys: ``embed`` / ``lm_head`` (vocab-parallel), ``attn_sharded`` (q incl. an output gate, o, MLA
    q_b / kv_b / o: split over attention-TP), ``kv_proj``, ``mla_replicated`` (MLA q_a / kv_a latent
    projections, ``ReplicatedLinear``), ``experts``, ``router``, ``sharded_mlp`` (shared experts, dense
    MLPs, GDN mixers, column-parallel biases and the unexplained remainder: split over TP), ``norms``,
    ``replicated`` (16-bit tensors whole on every rank: learned position embeddings -- GPT-2 ``wpe``,
    ``models/gpt2.py:210`` --; biases of row-parallel layers, which ``RowParallelLinear`` keeps at
    full output size, ``layers/linear.py:1757-1758``; the DSA indexer's fused ``wk_weights_proj`` (``disable_tp``,
    ``quant_config=None``) and ``k_norm``, ``vllm/models/deepseek_v32/attention.py:79-87``), ``replicated_linear``
    (replicated weights that follow the checkpoint's linear quantization: the DSA indexer's ``wq_b``
    ``ReplicatedLinear``, ``vllm/models/deepseek_v32/attention.py:71-77``), ``vision`` and ``vision_replicated`` (the
    part of ``params_vision`` never split: patch / position embeddings, see
    :func:`_vision_replicated`), ``ple_embed`` (Gemma-4's vocab-parallel per-layer embedding table,
    ``vocab_size_per_layer_input x layers x hidden_size_per_layer_input``, ``models/gemma4.py:1023``;
    its per-layer gate / projection are in ``replicated_linear``, ``models/gemma4.py:682-698``),
    ``replicated_fp32`` (DeepSeek-V4's float32 hyper-connection mixing weights). DeepSeek-V4 adds its
    replicated ``fused_wqa_wkv`` to ``replicated_linear`` and its KV compressors to ``replicated``. Counts
    are parameters (not bytes) of the whole model.
    """
    H, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = np.where(np.isnan(c["num_key_value_heads"]), heads, c["num_key_value_heads"])
    hd, vhd = _head_dims(c)
    full, swa, lin = _layer_counts(c)
    n_attn = full + swa
    n_glob, ghd, gkv = _global_attn(c)
    n_loc = n_attn - n_glob
    is_mla = _flag(c["is_mla"])
    is_moe = _flag(c["is_moe"]) & (_nz(c["num_experts"]) > 0)
    gate = np.where(_flag(c["attn_output_gate"]), 1.0, 0.0)
    embed = V * H
    lm_head = np.where(_flag(c["tie_word_embeddings"]), 0.0, V * H)
    # softmax attention (GQA/MHA): q (+ its output gate, models/qwen3_next.py:315-322) and o sharded by head,
    # k/v by KV head; Gemma-4 full-attention layers with their own head dim / KV heads. Query heads averaged
    # over the layers where they vary (Laguna, models/laguna.py:490-501), whose per-head gate projection
    # g_proj (hidden -> heads, ColumnParallelLinear, models/laguna.py:327-351) is split with them
    qh = np.where(np.isnan(c["num_attention_heads_mean"]), heads, c["num_attention_heads_mean"])
    head_gate = np.where(_flag(c["attn_head_gate"]), 1.0, 0.0)
    q_o = (n_loc * (H * qh * hd * (1 + gate) + qh * vhd * H + H * qh * head_gate)
           + n_glob * (H * qh * ghd * (1 + gate) + qh * ghd * H + H * qh * head_gate))
    kv_proj = n_loc * H * kv * (hd + vhd) + n_glob * H * gkv * 2 * ghd
    # MLA: q_a / kv_a latent projections replicated (vLLM ReplicatedLinear), the rest sharded
    ql = c["q_lora_rank"]
    mla_rep = n_attn * (np.where(np.isnan(ql), 0.0, H * ql + ql) + H * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) + c["kv_lora_rank"])
    mla_shard = n_attn * (np.where(np.isnan(ql), H * heads * hd, ql * heads * hd)
                     + c["kv_lora_rank"] * heads * (_nz(c["qk_nope_head_dim"]) + vhd) + heads * vhd * H)
    # DeepSeek-V4 (vllm/models/deepseek_v4/attention.py:252-287): fused_wqa_wkv (hidden -> q_lora_rank +
    # one shared KV head) replicated (disable_tp) and quantized; wq_b, wo_a (grouped low-rank o) and
    # wo_b split over TP
    ol, og = c["o_lora_rank"], _nz(c["o_groups"], 1.0)
    v4 = ~is_mla & ~np.isnan(ql) & ~np.isnan(ol)
    v4_qa = np.where(v4, n_attn * H * (_nz(ql) + kv * hd), 0.0)
    v4_shard = n_attn * (_nz(ql) * heads * hd + heads * vhd * _nz(ol) + og * _nz(ol) * H)
    attn_sharded = np.where(is_mla, mla_shard, np.where(v4, v4_shard, q_o))
    kv_proj = np.where(is_mla | v4, 0.0, kv_proj)
    mla_rep = np.where(is_mla, mla_rep, 0.0)
    # DSA indexer (vllm/models/deepseek_v32/attention.py:71-87): wq_b (q_lora_rank -> heads x dim) replicated and
    # quantized like the other linears; wk_weights_proj (hidden -> dim + heads) and k_norm replicated.
    # DeepSeek-V4's (deepseek_v4/attention.py:989-1045): wq_b likewise, weights_proj (hidden -> heads) and
    # its compressor (hidden -> 4 x dim, compressor.py:271-279) replicated in 16-bit
    n_idx = _nz(c["num_indexer_layers"])
    inh, ihd = _nz(c["index_n_heads"]), _nz(c["index_head_dim"])
    idx_ok = (is_mla | v4) & (n_idx > 0) & ~np.isnan(ql)
    idx_q = np.where(idx_ok, n_idx * _nz(ql) * inh * ihd, 0.0)
    idx_rep = np.where(idx_ok, n_idx * np.where(v4, H * inh + 4 * H * ihd, H * (ihd + inh) + 2 * ihd), 0.0)
    # MiniMax-M3's index branch, fused into qkv_proj (layers/linear.py:1365-1440): index_q (index heads =
    # KV heads) sharded and replicated exactly like the KV heads, index_k (one head) on every rank, both
    # quantized with qkv_proj; index q / k norms replicated
    gqa_idx = ~is_mla & ~v4 & (n_idx > 0) & (inh > 0) & (ihd > 0)
    idx_kv = np.where(gqa_idx, n_idx * H * inh * ihd, 0.0)
    idx_q = idx_q + np.where(gqa_idx, n_idx * H * ihd, 0.0)
    idx_rep = idx_rep + np.where(gqa_idx, n_idx * 2 * ihd, 0.0)
    # DeepSeek-V4 KV compressors (compressor.py:239-280): fused wkv + wgate, hidden -> 2 x coff x head_dim
    # (coff 2 on the ratio-4 layers, which are the indexer layers), 16-bit, replicated (disable_tp)
    v4_comp = np.where(v4, _nz(c["num_compressor_layers"]) * 2 * H * hd + n_idx * 2 * H * hd, 0.0)
    # DeepSeek-V4 hyper-connections (deepseek_v4/nvidia/model.py:617-665, 883-903): float32, replicated
    m = _nz(c["hc_mult"])
    mix = (2 + m) * m
    hc = np.where(m > 0, L * 2 * (mix * m * H + mix + 3) + m * m * H + m + 1, 0.0)
    # MoE (matrices per MLP: 3 when gated, 2 for non-gated activations such as Nemotron-H's relu2)
    mats = _mlp_matrices(c)
    n_moe = np.where(np.isnan(c["num_moe_layers"]), L - _nz(c["num_dense_layers"]), c["num_moe_layers"])
    n_moe = np.where(is_moe, n_moe, 0.0)
    E = _nz(c["num_experts"])
    # latent MoE: experts run at moe_latent_size between two replicated hidden <-> latent projections
    # (vLLM ReplicatedLinear: nemotron_h.py:195-212 fc1/fc2_latent_proj, kimi_k3/nvidia/model.py:478-505)
    latent = c["moe_latent_size"]
    expert_h = np.where(np.isnan(latent), H, latent)
    experts = n_moe * E * mats * expert_h * _nz(c["moe_intermediate_size"])
    moe_rep = n_moe * 2 * H * _nz(latent)
    router = n_moe * H * E
    shared_i = _shared_intermediate(c)
    shared = n_moe * mats * H * shared_i
    # layers with a dense MLP: the catalog's count (hybrids: Mamba / attention-only blocks have none)
    n_dense = np.where(np.isnan(c["num_dense_layers"]) | ~is_moe, L - n_moe, c["num_dense_layers"])
    dense = n_dense * mats * H * _nz(c["intermediate_size"])
    norms = (2 * L + 1) * H
    # GDN mixers (Qwen3-Next / Qwen3.5, models/qwen3_next.py GatedDeltaNet): in_proj_qkvz, in_proj_ba,
    # conv1d, A_log, dt_bias and out_proj split over TP; the gated norm (value head dim) replicated
    nk, nv = _nz(c["linear_num_key_heads"]), _nz(c["linear_num_value_heads"])
    dk, dv = _nz(c["linear_key_head_dim"]), _nz(c["linear_value_head_dim"])
    kc = _nz(c["linear_conv_kernel_dim"], 4.0)
    gdn = c["linear_attention_kind"] == "gdn"
    gdn_shard = np.where(gdn, lin * (H * (2 * nk * dk + 2 * nv * dv) + H * 2 * nv + (2 * nk * dk + nv * dv) * kc
                                     + nv * dv * H + 2 * nv), 0.0)
    gdn_rep = np.where(gdn, lin * dv, 0.0)
    # learned absolute positions and row-parallel biases (o_proj / down_proj): whole on every rank;
    # the column-parallel biases (q/k/v, up) are split with their layers
    pos = _nz(c["learned_position_embeddings"]) * H
    bias = _flag(c["linear_bias"])
    row_bias = np.where(bias, n_attn * H + (L - n_moe) * H, 0.0)
    col_bias = np.where(bias, n_attn * (qh * hd + 2 * kv * hd), 0.0)
    # Gemma-4 per-layer input embeddings (models/gemma4.py:1019-1052, 674-703): the table is
    # vocab-parallel (``ple_embed``, placed with the embedding), per_layer_model_projection column-parallel,
    # the per-layer gate / projection ReplicatedLinear (quantized like the other linears), norms replicated
    ple = _nz(c["hidden_size_per_layer_input"])
    has_ple = (ple > 0) & ~np.isnan(c["vocab_size_per_layer_input"])
    ple_embed = np.where(has_ple, _nz(c["vocab_size_per_layer_input"]) * L * ple, 0.0)
    ple_shard = np.where(has_ple, H * L * ple, 0.0)
    ple_rep_lin = np.where(has_ple, L * 2 * H * ple, 0.0)
    ple_rep = np.where(has_ple, L * H + ple, 0.0)
    replicated = pos + row_bias + idx_rep + gdn_rep + ple_rep + v4_comp
    vision = _nz(c["params_vision"])
    known = (embed + lm_head + attn_sharded + kv_proj + mla_rep + experts + moe_rep + router + shared + dense + norms
             + idx_q + idx_kv + replicated + gdn_shard + col_bias + ple_embed + ple_shard + ple_rep_lin + v4_qa + hc)
    # Reconcile with the catalog's parameter estimate (text model = params_total - params_vision):
    # what the shapes do not explain (other linear-attention kinds, MLP biases, extra blocks) is a
    # TP-sharded remainder; when the shapes over-count (e.g. hybrids whose MLP is not in every layer,
    # 2-matrix MLPs), the dense MLP is reduced first, then every part is scaled down.
    text = c["params_total"] - vision
    has_total = ~np.isnan(text)
    other = np.where(has_total, np.maximum(text - known, 0.0), 0.0)
    excess = np.where(has_total, np.maximum(known - text, 0.0), 0.0)
    cut = np.minimum(excess, dense)
    dense = dense - cut
    known = known - cut
    scale = np.where(has_total & (known > 0) & (known > text), text / np.where(known > 0, known, 1.0), 1.0)
    parts = {
        "embed": embed, "lm_head": lm_head, "attn_sharded": attn_sharded, "kv_proj": kv_proj,
        "mla_replicated": mla_rep, "experts": experts, "moe_replicated": moe_rep, "router": router,
        "sharded_mlp": shared + dense + other + gdn_shard + col_bias + ple_shard, "norms": norms,
        # the pieces of sharded_mlp, for per-part quantization (:func:`_part_quant`)
        "shared_mlp": shared, "dense_mlp": dense, "other": other, "gdn_shard": gdn_shard,
        "col_bias": col_bias, "ple_shard": ple_shard,
        "replicated": replicated, "replicated_linear": idx_q + ple_rep_lin + v4_qa, "ple_embed": ple_embed,
        "replicated_fp32": hc, "index_kv": idx_kv,
    }
    out = {k: v * scale for k, v in parts.items()}
    out.update({"vision": vision, "vision_replicated": _vision_replicated(c), "num_experts": E,
                "kv_heads": kv, "layers": L, "n_attn": n_attn, "scale": scale})
    return out


#: Architectures (catalog ``model_type``) whose whole vision tower vLLM 0.33.0 builds unsplit, so every
#: rank holds all of ``params_vision``: Gemma-4 instantiates the Hugging Face tower
#: (``AutoModel.from_config``) and swaps its linears for ``ReplicatedLinear``.
VISION_UNSHARDED_MODEL_TYPES: dict[str, str] = {
    "gemma4": "vllm/model_executor/models/gemma4_mm.py:1102-1113 (and the ReplicatedLinear projection, :1010)",
}

#: Architectures whose vision-to-text connector is a ``ReplicatedLinear`` (whole on every rank); the
#: other towers' mergers (Qwen-VL ``PatchMerger``) are column / row parallel.
VISION_REPLICATED_CONNECTOR_MODEL_TYPES: dict[str, str] = {
    "idefics3": "vllm/model_executor/models/idefics3.py:356-364 (Idefics3SimpleMLP.proj)",
    "kimi_k25": "vllm/model_executor/models/kimi_k25_vit.py:910-946 (KimiK25MultiModalProjector)",
    "kimi_k3": "vllm/model_executor/models/kimi_k25_vit.py:910-946 (KimiK25MultiModalProjector, kimi_k3/nvidia/model.py)",
}


def _vision_replicated(c: dict[str, np.ndarray]) -> np.ndarray:
    """Vision parameters every TP rank holds whole (count per model).

    The patch embedding (``Conv2dLayer`` / ``Conv3dLayer``) and the learned position table
    (``nn.Embedding``: ``models/qwen3_vl.py:617``, ``models/idefics2_vision_model.py:65-75``) are never
    split (``params_vision_embed``); :data:`VISION_REPLICATED_CONNECTOR_MODEL_TYPES` add their connector
    (``params_vision_connector``); :data:`VISION_UNSHARDED_MODEL_TYPES` keep the whole tower."""
    vision = _nz(c["params_vision"])
    rep = _nz(c["params_vision_embed"])
    rep = rep + np.where(np.isin(c["model_type"], list(VISION_REPLICATED_CONNECTOR_MODEL_TYPES)),
                         _nz(c["params_vision_connector"]), 0.0)
    rep = np.where(np.isin(c["model_type"], list(VISION_UNSHARDED_MODEL_TYPES)), vision, rep)
    return np.minimum(rep, vision)


#: Architectures whose MoE router (``gate``) vLLM 0.33.0 allocates in float32 (``GateLinear(...,
#: params_dtype=torch.float32)``), keyed by catalog ``text_model_type``; the rest use the model dtype.
FP32_ROUTER_MODEL_TYPES: dict[str, str] = {
    "minimax_m2": "vllm/model_executor/models/minimax_m2.py:114",
    "minimax_m3_vl": "vllm/models/minimax_m3/nvidia/model.py:232-239 (text config of MiniMaxM3SparseForConditionalGeneration)",
    "mimo_v2_flash": "vllm/model_executor/models/mimo_v2.py:159 (moe_router_dtype, default float32)",
    "glm4_moe": "vllm/model_executor/models/glm4_moe.py:145",
    "ernie4_5_moe": "vllm/model_executor/models/ernie45_moe.py:160",
    "step3p5": "vllm/model_executor/models/step3p5.py:343",
    "afmoe": "vllm/model_executor/models/afmoe.py:90",
    "hy_v3": "vllm/model_executor/models/hy_v3.py:159",
    "glm4v_moe_text": "vllm/model_executor/models/glm4_moe.py:145 (GLM-4.5V's text model is Glm4MoeForCausalLM, "
                      "glm4_1v.py:1803)",
}


#: Architectures whose vision encoder honours ``--mm-encoder-tp-mode data`` (``supports_encoder_tp_data
#: = True``): the whole tower is then replicated on every rank instead of split over TP. Keyed by
#: catalog ``model_type``; elsewhere vLLM 0.33.0 ignores the flag (``interfaces.py:196``, default False).
VISION_ENCODER_DP_MODEL_TYPES: dict[str, str] = {
    "qwen2_5_vl": "vllm/model_executor/models/qwen2_5_vl.py:1324",
    "qwen3_vl": "vllm/model_executor/models/qwen3_vl.py:1962",
    "qwen3_vl_moe": "vllm/model_executor/models/qwen3_vl.py:1962 (Qwen3VLMoeForConditionalGeneration subclass)",
    "qwen3_5": "vllm/model_executor/models/qwen3_vl.py:1962 (qwen3_5.py:473 subclass)",
    "qwen3_5_moe": "vllm/model_executor/models/qwen3_vl.py:1962 (qwen3_5.py:703 subclass)",
    "glm4v_moe": "vllm/model_executor/models/glm4_1v.py:1762",
    "kimi_k25": "vllm/model_executor/models/kimi_k25.py:307",
    "kimi_k3": "vllm/models/kimi_k3/nvidia/model.py:1581",
    "llama4": "vllm/model_executor/models/mllama4.py:742",
    "minimax_m3_vl": "vllm/models/minimax_m3/nvidia/model.py:1122",
}

#: Architectures whose vision encoder also falls back to data parallelism (whole tower on every rank)
#: when its attention heads (catalog ``vision_num_heads``) do not divide the TP size, with or without
#: ``--mm-encoder-tp-mode data``: they call ``is_vit_use_data_parallel(num_heads)``
#: (``vllm/model_executor/models/vision.py:141-156``). Keyed by catalog ``model_type``.
VISION_HEADS_DP_FALLBACK_MODEL_TYPES: dict[str, str] = {
    "kimi_k25": "vllm/model_executor/models/kimi_k25.py:344-346 (MoonViT, kimi_k25_vit.py:388)",
    "kimi_k3": "vllm/models/kimi_k3/nvidia/model.py:1612-1614",
}

#: Architectures that pad each rank's routed-expert intermediate size up to a minimum when plain TP
#: (no ``--enable-expert-parallel``) would cut it thinner: if ``moe_intermediate_size // tp < min``
#: vLLM builds the experts with ``min * tp`` (``padded_moe_intermediate_size``), split as usual over
#: the MoE-TP ranks (``tp * dp``). Keyed by catalog ``text_model_type``: (minimum, source). The
#: minimum is the config's ``min_moe_intermediate_per_partition``, default 256; no catalog config sets it.
MOE_MIN_INTERMEDIATE_PER_PARTITION: dict[str, tuple[int, str]] = {
    "kimi_linear": (256, "vllm/models/kimi_k3/nvidia/model.py:417-428 (KimiMoE; Kimi-Linear and Kimi-K3)"),
}


#: Architectures whose block-FP8 shared-expert MLP vLLM 0.33.0 pads to whole weight blocks per rank:
#: ``n_local = cdiv(intermediate // block_n, tp)`` blocks, so the layer is built ``n_local * block_n * tp``
#: wide and stops shrinking once ``tp`` exceeds the block count (trailing ranks zero-filled). Keyed by
#: catalog ``text_model_type``.
BLOCK_PADDED_SHARED_MLP_MODEL_TYPES: dict[str, str] = {
    "deepseek_v4": "vllm/models/deepseek_v4/nvidia/model.py:145-151 (DeepseekV4MLP)",
}


#: Architectures whose dense MLP vLLM 0.33.0 keeps whole on every rank: GPTBigCodeForCausalLM is served by
#: the Transformers modeling backend (``models/registry.py:753``), which shards what the Hugging Face
#: ``tp_plan`` names and what it fuses (attention, gate/up pairs); GPTBigCode has no ``tp_plan`` and its
#: non-gated ``c_fc`` / ``c_proj`` MLP matches no fusion, so both stay ``ReplicatedLinear``
#: (``models/transformers/base.py:491-571``; measured: WizardCoder-15B at TP 4 holds all 40 x 2 MLP
#: matrices). Keyed by catalog ``text_model_type``; other frameworks are unaffected.
REPLICATED_DENSE_MLP_MODEL_TYPES: dict[str, str] = {
    "gpt_bigcode": "vllm/model_executor/models/transformers/base.py:491-571 (no tp_plan, MLP not fused)",
}


def _shared_mlp_padding(c: dict[str, np.ndarray], framework: str, t: np.ndarray) -> np.ndarray:
    """Growth factor (models x tp) of the shared-expert MLP under :data:`BLOCK_PADDED_SHARED_MLP_MODEL_TYPES`
    (1 elsewhere, and for frameworks other than vLLM)."""
    one = np.ones((len(c["hidden_size"]), t.shape[-1]))
    if framework != "vllm":
        return one
    mt = _text_model_type(c)
    bn = c["weight_block_n"][:, None]
    ish = _shared_intermediate(c)[:, None]
    sel = (np.isin(mt, list(BLOCK_PADDED_SHARED_MLP_MODEL_TYPES))
           & (c["quant_shared_experts_format"] == "fp8-block"))[:, None] & ~np.isnan(bn) & (bn > 0) & (ish > 0)
    bn_ = np.where(sel, bn, 1.0)
    ish_ = np.where(sel, ish, 1.0)
    padded = np.ceil(np.floor(ish_ / bn_) / t) * bn_ * t
    return np.where(sel, np.maximum(padded, ish_) / ish_, one)


def _router_bytes(c: dict[str, np.ndarray]) -> np.ndarray:
    """Bytes per router element: 4 for :data:`FP32_ROUTER_MODEL_TYPES`, else 0 (= the model dtype)."""
    mt = _text_model_type(c)
    return np.where(np.isin(mt, list(FP32_ROUTER_MODEL_TYPES)), 4.0, 0.0)


def _block_fp8(c: dict[str, np.ndarray]) -> np.ndarray:
    """Block-FP8 checkpoints (``fp8`` / compressed-tensors float with a ``weight_block_size``)."""
    fmt, method = c["quant_format"].astype(str), c["quant_method"]
    fp8 = (method == "fp8") | (np.char.find(fmt, "float-quantized") >= 0) | (np.char.find(fmt, "fp8") >= 0)
    return fp8 & ~np.isnan(c["weight_block_n"]) & ~np.isnan(c["weight_block_k"])


def _fp8_moe_scale_count(c: dict[str, np.ndarray], moe_tp: np.ndarray,
                         intermediate: np.ndarray | None = None) -> np.ndarray:
    """float32 block scales per expert per rank of a block-FP8 MoE layer (models x tp).

    vLLM 0.33.0 ``Fp8MoEMethod.create_weights`` (``layers/quantization/fp8.py:619-632``): ``w13`` holds
    ``2 * ceil(I_p / block_n) * ceil(H / block_k)`` scales and ``w2`` ``ceil(H / block_n) * ceil(I_p /
    block_k)``, for ``I_p = moe_intermediate_size / moe_tp`` (``intermediate``, models x tp, replaces
    ``moe_intermediate_size`` when the architecture pads it, :func:`_moe_intermediate_matrix`). When ``I_p`` is not a multiple of the
    block (``fp8.py:559-566``), ``refine_fp8_moe_block_shape`` (``layers/fused_moe/oracle/fp8.py:
    314-321``) refines the grid to ``gcd(block_n, block_k, I_p, H)`` square blocks (>= 32; below that
    vLLM refuses the layout).
    """
    H = c["hidden_size"][:, None]
    bn = c["weight_block_n"][:, None]
    bk = c["weight_block_k"][:, None]
    Ip = (c["moe_intermediate_size"][:, None] if intermediate is None else intermediate) / moe_tp
    ok = ~(np.isnan(bn) | np.isnan(bk) | np.isnan(Ip) | np.isnan(H))
    Ipi, Hi = np.where(ok, Ip, 1).astype(np.int64), np.where(ok, H, 1).astype(np.int64)
    bni, bki = np.where(ok, bn, 1).astype(np.int64), np.where(ok, bk, 1).astype(np.int64)
    g = np.gcd(np.gcd(bni, bki), np.gcd(Ipi, Hi)).astype(np.float64)
    refine = (np.mod(Ip, bn) != 0) | ((moe_tp > 1) & (np.mod(Ip, bk) != 0))
    bn_ = np.where(refine & (g >= 32), g, bn)
    bk_ = np.where(refine & (g >= 32), g, bk)
    n = 2 * np.ceil(Ip / bn_) * np.ceil(H / bk_) + np.ceil(H / bn_) * np.ceil(Ip / bk_)
    return np.where(ok, n, 0.0)


#: vLLM 0.33.0 pads an MXFP4 expert's intermediate size per rank to this multiple on the default
#: (Triton) MoE backend (``layers/fused_moe/oracle/mxfp4.py:915-916``).
MXFP4_MOE_ALIGN = 64


def _moe_layout(framework: str, t: np.ndarray, *, ep: int = 1, dp: int = 1,
                expert_parallel: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(EP size, MoE-TP size) for TP sizes ``t`` (float arrays broadcastable with ``t``).

    vLLM 0.33.0 ``FusedMoEParallelConfig.make`` (``layers/fused_moe/config.py:1198-1243``): the MoE
    layer flattens TP across DP (``flatten_tp_across_dp_and_pcp``: ``tp * dp`` ranks). Without
    ``--enable-expert-parallel`` every expert is split over those ``tp * dp`` ranks (MoE-TP = tp * dp,
    EP 1); with it, EP = tp * dp and MoE-TP = 1. ``expert_parallel=True`` applies that rule to every
    framework; otherwise an explicit ``ep`` keeps the generic layout (EP ``ep``, MoE-TP ``tp // ep``),
    and for vLLM ``ep == 1`` means MoE-TP ``tp * dp``.
    """
    if np.ndim(dp) or np.ndim(ep) or np.ndim(expert_parallel):  # one value per layout (arrays aligned with t)
        d = np.maximum(np.asarray(dp, dtype=np.float64), 1.0)
        e = np.maximum(np.asarray(ep, dtype=np.float64), 1.0)
        epf = np.asarray(expert_parallel, dtype=bool)
        gen_e, gen_mt = e * np.ones_like(t), np.maximum(1.0, np.floor(t / e))
        if framework == "vllm":
            gen_e, gen_mt = np.where(e == 1, 1.0, gen_e), np.where(e == 1, t * d, gen_mt)
        return np.where(epf, t * d, gen_e), np.where(epf, 1.0, gen_mt)
    d = float(max(int(dp), 1))
    if expert_parallel:
        return t * d, np.ones_like(t)
    e = float(max(int(ep), 1))
    if framework == "vllm" and e == 1:
        return np.ones_like(t), t * d
    return np.full_like(t, e), np.maximum(1.0, np.floor(t / e))


def _moe_intermediate_matrix(c: dict[str, np.ndarray], framework: str, t: np.ndarray, *,
                             expert_parallel: bool = False) -> np.ndarray:
    """Routed-expert intermediate size vLLM builds the experts with, shape (models, len(tp)) (elements).

    ``moe_intermediate_size``, except for :data:`MOE_MIN_INTERMEDIATE_PER_PARTITION` architectures on
    vLLM without expert parallelism at ``tp > 1``: when ``moe_intermediate_size // tp`` is below the
    minimum, ``min * tp`` (``vllm/models/kimi_k3/nvidia/model.py:417-428``; the padding rows are
    zero-filled, ``model.py:589-601``). It depends on TP only, not on DP, although the experts are
    then split over ``tp * dp`` ranks (Kimi-Linear at TP 8: 1024 -> 2048, 256 per rank; at TP 8 x DP 2,
    128 per rank).
    """
    inter = np.broadcast_to(c["moe_intermediate_size"][:, None], (len(c["moe_intermediate_size"]), t.shape[-1]))
    if framework != "vllm" or (np.ndim(expert_parallel) == 0 and expert_parallel):
        return inter
    mt = _text_model_type(c)
    lo = np.array([float(MOE_MIN_INTERMEDIATE_PER_PARTITION.get(str(m), (np.nan,))[0]) for m in mt])[:, None]
    pad = ~np.isnan(lo) & (t > 1) & (np.floor(inter / t) < lo) & ~np.asarray(expert_parallel, dtype=bool)
    return np.where(pad, lo * t, inter)


_PARTS_MEMO: "OrderedDict[tuple, tuple]" = OrderedDict()
_PARTS_LOCK = threading.Lock()


def _checkpoint_weight_parts(c: dict[str, np.ndarray], framework: str) -> tuple:
    """(``_param_parts``, base bytes, quantized bytes, experts-only flag, ``_part_quant``) of the
    checkpoint's own dtypes: they depend on the models alone, so they are memoized per columns dict (the
    planner reuses one dict for a model across GPU counts and frameworks). The entry holds ``c`` itself, so
    its ``id`` cannot be reused while the entry lives; the columns dicts are never changed in place."""
    key = (id(c), framework in KEEP_FP32_FRAMEWORKS)
    with _PARTS_LOCK:
        hit = _PARTS_MEMO.get(key)
        if hit is not None and hit[0] is c:
            _PARTS_MEMO.move_to_end(key)
            return hit[1]
    p = _param_parts(c)
    base = _base_weight_bytes(c, framework)
    qb, experts_only = _quant_weight_bytes(c, base)
    out = (p, base, qb, experts_only, _part_quant(c, base, qb, experts_only))
    with _PARTS_LOCK:
        _PARTS_MEMO[key] = (c, out)
        while len(_PARTS_MEMO) > 32:
            _PARTS_MEMO.popitem(last=False)
    return out


def _weight_bytes_matrix(c: dict[str, np.ndarray], framework: str, tp: np.ndarray, *, pp: int = 1,
                         ep: int = 1, weight_dtype: str | None = None, dp: int = 1,
                         dp_attention: bool = False, expert_parallel: bool = False,
                         vision_dp: bool = False) -> np.ndarray:
    """Weight bytes per rank on the most loaded pipeline stage, shape (models, len(tp))."""
    tp = np.atleast_1d(np.asarray(tp, dtype=np.float64))
    t = tp[None, :]
    atp = attention_tp(framework, tp.astype(np.int64), dp, dp_attention).astype(np.float64)[None, :]
    if weight_dtype is None:
        p, base, qb, experts_only, pq = _checkpoint_weight_parts(c, framework)
    else:
        p = _param_parts(c)
        base = _base_weight_bytes(c, framework)
        qb = np.full_like(base, _dtype_bytes(weight_dtype, WEIGHT_DTYPE_BYTES, "weight_dtype"))
        if str(weight_dtype).strip().lower() in UNQUANTIZED_WEIGHT_DTYPES:
            # ``--dtype float32`` / ``float16``: every tensor (embedding, LM head, norms too) is in it
            base = qb.copy()
        experts_only = np.zeros(len(base), dtype=bool)
        one, zero = np.ones_like(base), np.zeros_like(base)
        pq = {k: ((zero if k in ("lm_head", "router", "vision") else one), qb) for k in QUANT_PARTS}
    # bytes per element of each part (models, 1): quantized share at its format, the rest 16-bit
    attn_b = _mix(pq["attention"], base)[:, None]
    dense_b = _mix(pq["dense_mlp"], base)[:, None]
    shared_b = _mix(pq["shared_experts"], base)[:, None]
    # the unexplained remainder (linear-attention projections, DSA indexer, ...) follows the layers'
    # token mixer: the linear-attention part when the model has one, else the attention part
    has_lin = (_flag(c["has_linear_attention"]) | (_nz(c["num_linear_attention_layers"]) > 0))
    other_b = np.where(has_lin, _mix(pq["linear_attention"], base), _mix(pq["attention"], base))[:, None]
    base_ = base[:, None]
    col = lambda k: p[k][:, None]  # noqa: E731
    # vocab-parallel embedding / LM head: vLLM and SGLang pad the vocabulary to a multiple of 64
    V = c["vocab_size"][:, None]
    Vp = sharding.pad_to_multiple(np.nan_to_num(V).astype(np.int64), 64).astype(np.float64) if framework in ("vllm", "sglang") else V
    Vp = np.where(np.isnan(V), np.nan, Vp)
    vocab_rows = np.ceil(Vp / t)
    H = c["hidden_size"][:, None]
    sc = col("scale")
    embed_r = vocab_rows * H * base_ * sc
    # Gemma-4 per-layer embedding table: vocab-parallel like the embedding, padded the same way
    Vl = c["vocab_size_per_layer_input"][:, None]
    Vlp = sharding.pad_to_multiple(np.nan_to_num(Vl).astype(np.int64), 64).astype(np.float64) if framework in ("vllm", "sglang") else Vl
    ple_w = np.where(np.isnan(Vl) | (col("ple_embed") == 0), 0.0, col("ple_embed") / np.where(np.isnan(Vl) | (Vl == 0), 1.0, Vl))
    embed_r = embed_r + np.ceil(np.nan_to_num(Vlp) / t) * ple_w * base_
    lm_r = np.where(col("lm_head") > 0, vocab_rows * H * _mix(pq["lm_head"], base)[:, None] * sc, 0.0)
    # attention: heads split over attention-TP; KV heads per rank with replication
    kvr = _kv_heads_per_rank(c, framework, atp[0].astype(np.int64))
    hd, vhd = _head_dims(c)
    n_glob, ghd, gkv = _global_attn(c)
    gkvr = _kv_heads_per_rank({**c, "num_key_value_heads": gkv}, framework, atp[0].astype(np.int64))
    kv_layers = (col("n_attn") - n_glob[:, None]) * H * kvr * (hd + vhd)[:, None] + n_glob[:, None] * H * gkvr * 2 * ghd[:, None]
    # MLA and DeepSeek-V4 (its one KV head is in the replicated fused_wqa_wkv) have no k/v projections
    kv_r = np.where(_flag(c["is_mla"])[:, None] | (col("kv_proj") == 0), 0.0, kv_layers * attn_b * sc)
    # MiniMax-M3's index_q heads follow the KV heads per rank (replicated with them above TP = KV heads)
    kv_tot = c["num_key_value_heads"][:, None]
    kv_r = kv_r + np.where(col("index_kv") > 0, col("index_kv") * kvr / np.where(kv_tot > 0, kv_tot, 1.0) * attn_b, 0.0)
    attn_r = col("attn_sharded") / atp * attn_b + col("mla_replicated") * attn_b
    # experts: ceil(E / ep) experts per EP rank, each split over moe_tp
    e, moe_tp = _moe_layout(framework, t, ep=ep, dp=dp, expert_parallel=expert_parallel)
    E = col("num_experts")
    per_expert = np.where(E > 0, col("experts") / np.where(E > 0, E, 1.0), 0.0)
    local_experts = np.ceil(E / e)
    # architectures that pad a thin per-rank expert shard (:func:`_moe_intermediate_matrix`)
    I_moe = c["moe_intermediate_size"][:, None]
    I_eff = _moe_intermediate_matrix(c, framework, t, expert_parallel=expert_parallel)
    grow = np.where(I_moe > 0, I_eff / np.where(I_moe > 0, I_moe, 1.0), 1.0)
    per_expert = per_expert * grow
    ef, eq = pq["experts"]
    ef, eq = ef[:, None], eq[:, None]
    experts_fmt = c["quant_experts_format"]
    known_e = ~np.isnan(c["quant_experts_fraction"])
    experts_q = local_experts * per_expert / moe_tp * eq
    # NVFP4 experts (ModelOptNvFp4FusedMoE.create_weights, layers/quantization/modelopt.py:946-985): the
    # down projection's packed weight and fp8 block scales run along the per-rank intermediate width
    # I_p, with ``I_p // 2`` bytes and ``I_p // 16`` scales per row, so a rank whose I_p is not a
    # multiple of 16 holds fewer scale bytes than 0.5625 B per element (e.g. Qwen3-235B at MoE-TP 128:
    # I_p = 12, no scales at all)
    mats_ = _mlp_matrices(c)[:, None]
    Ip_n = I_eff / moe_tp
    nv_e = (np.where(known_e, experts_fmt == "nvfp4", qb == WEIGHT_DTYPE_BYTES["nvfp4"]) & (weight_dtype is None))[:, None]
    Ip_s = np.where(nv_e & (Ip_n > 0), Ip_n, 1.0)
    w2_b = (np.floor(Ip_s / 2) + np.floor(Ip_s / 16)) / Ip_s  # bytes per w2 element
    nv_bytes = ((mats_ - 1) * WEIGHT_DTYPE_BYTES["nvfp4"] + w2_b) / mats_
    experts_q = np.where(nv_e & (eq == WEIGHT_DTYPE_BYTES["nvfp4"]), local_experts * per_expert / moe_tp * nv_bytes,
                         experts_q)
    # MXFP4 experts: vLLM 0.33.0 rounds each rank's intermediate shard up to the MoE kernel's tile,
    # 64 for the default (Triton) backend a Hopper GPU selects
    # (``layers/fused_moe/oracle/mxfp4.py:915-916``, via ``Mxfp4MoEMethod.maybe_roundup_sizes``,
    # ``layers/quantization/mxfp4.py:185-198``): e.g. gpt-oss's 2880 / 4 = 720 -> 768 per rank.
    Ip = I_eff / moe_tp
    Ip_ok = ~np.isnan(Ip) & (Ip > 0)
    pad = np.where(Ip_ok, np.ceil(np.where(Ip_ok, Ip, 1.0) / MXFP4_MOE_ALIGN) * MXFP4_MOE_ALIGN
                   / np.where(Ip_ok, Ip, 1.0), 1.0)
    mx_pad = np.where(known_e, experts_fmt == "mxfp4", experts_only) & (weight_dtype is None)
    experts_q = np.where(mx_pad[:, None], experts_q * pad, experts_q)
    # block-FP8 experts: 1 B weights + float32 scales on the per-partition block grid (exact, not 4/blk)
    blk_fp8 = (np.where(known_e, experts_fmt == "fp8-block", _block_fp8(c)) & (weight_dtype is None))[:, None]
    scales = _fp8_moe_scale_count(c, moe_tp, I_eff)
    experts_fp8 = local_experts * (per_expert / moe_tp * 1.0 + scales * 4.0)
    experts_q = np.where(blk_fp8 & (E > 0), experts_fp8, experts_q)
    experts_r = ef * experts_q + (1.0 - ef) * local_experts * per_expert / moe_tp * base_
    rf, rq = pq["router"]
    router_r = col("router") * (rf * rq + (1.0 - rf) * np.maximum(base, _router_bytes(c)))[:, None]
    # latent-MoE projections, whole on every rank, quantized like the shared experts' linears
    moe_rep_r = col("moe_replicated") * shared_b
    lin_attn_b = _mix(pq["linear_attention"], base)[:, None]
    shared_pad = _shared_mlp_padding(c, framework, t) if weight_dtype is None else 1.0
    dense_rep = (np.isin(_text_model_type(c), list(REPLICATED_DENSE_MLP_MODEL_TYPES))
                 if framework == "vllm" else np.zeros(len(base), bool))[:, None]
    mlp_r = (col("dense_mlp") * dense_b / np.where(dense_rep, 1.0, t)
             + (col("shared_mlp") * shared_b * shared_pad + col("other") * other_b
                + col("gdn_shard") * lin_attn_b + col("ple_shard") * dense_b + col("col_bias") * base_) / t)
    norms_r = col("norms") * base_
    # replicated on every rank: 16-bit tensors (positions, row-parallel biases, DSA wk_weights_proj) and
    # replicated linears that follow the checkpoint's quantization (DSA wq_b); see _param_parts
    rep_r = col("replicated") * base_ + col("replicated_linear") * attn_b + col("replicated_fp32") * 4.0
    # vision tower: split over TP except its patch / position embeddings (and the towers vLLM never
    # splits, _vision_replicated), or whole on every rank under ``mm_encoder_tp_mode="data"``
    # (and on vLLM for the architectures that fall back to it when the vision heads do not divide TP)
    vdp = (np.isin(c["model_type"], list(VISION_ENCODER_DP_MODEL_TYPES)) if vision_dp else np.zeros(len(base), bool))[:, None]
    if framework == "vllm":
        vh = c["vision_num_heads"][:, None]
        vdp = vdp | (np.isin(c["model_type"], list(VISION_HEADS_DP_FALLBACK_MODEL_TYPES))[:, None]
                     & ~np.isnan(vh) & (np.mod(_nz(vh, 1.0), t) != 0))
    v_rep = col("vision_replicated")
    vision_r = ((col("vision") - v_rep) / np.where(vdp, 1.0, t) + v_rep) * _mix(pq["vision"], base)[:, None]
    layer_part = kv_r + attn_r + experts_r + moe_rep_r + router_r + mlp_r + norms_r + rep_r
    stages = np.maximum(np.asarray(pp, dtype=np.float64), 1.0)  # a scalar, or one per layout
    if np.all(stages == 1):
        return layer_part + embed_r + lm_r + vision_r
    L = col("layers")
    frac = np.ceil(L / stages) / L
    # first stage: embedding + vision tower; last stage: LM head (its own copy when tied)
    last = np.where(col("lm_head") > 0, lm_r, embed_r)
    staged = layer_part * frac + np.maximum(embed_r + vision_r, last)
    return np.where(stages == 1, layer_part + embed_r + lm_r + vision_r, staged) if np.ndim(stages) else staged


def weight_bytes_per_rank(record: Any, framework: str, tp: int, *, pp: int = 1, ep: int = 1,
                          weight_dtype: str | None = None, dp: int = 1, dp_attention: bool = False,
                          expert_parallel: bool = False, vision_dp: bool = False) -> float:
    """Weight bytes one GPU holds (bytes, float): the most loaded pipeline stage's TP shard.

    Partitioning (shapes from the record; anything in ``params_total`` the shapes do not explain, e.g.
    KDA / Mamba projections, is treated as TP-sharded):

    * embedding and LM head vocab-parallel: ``ceil(vocab' / tp)`` rows, ``vocab'`` = vocab padded to a
      multiple of 64 for vLLM/SGLang; a tied LM head costs nothing extra unless ``pp > 1`` (the last
      stage keeps its own copy); both stay in the checkpoint's 16-bit dtype;
    * attention q/o (and MLA q_b/kv_b/o) split over attention-TP; k/v over KV heads with the
      framework's per-rank KV heads (replicated when ``tp > kv``); MLA ``q_a``/``kv_a`` latent
      projections replicated on every rank;
    * routed experts (:func:`_moe_layout`, vLLM 0.33.0 ``layers/fused_moe/config.py:1198-1243``):
      without expert parallelism vLLM splits every expert over MoE-TP = ``tp * dp`` ranks (TP flattened
      across DP); with ``expert_parallel=True`` (``--enable-expert-parallel``) EP = ``tp * dp`` and rank
      0 holds ``ceil(num_experts / EP)`` whole experts (``determine_expert_map``,
      ``layers/fused_moe/expert_map_manager.py:67-69``: the first ``E % EP`` ranks get one more). An
      explicit ``ep`` > 1 without the flag keeps the generic layout (EP ``ep``, MoE-TP ``tp // ep``).
      Block-FP8 experts are 1 B per weight plus float32 scales on the per-partition block grid, refined
      to ``gcd`` blocks when the shard is not a block multiple (:func:`_fp8_moe_scale_count`,
      ``quantization/fp8.py:554-632``). Each expert is ``3`` (gated, catalog ``mlp_gated``) or ``2``
      matrices of ``moe_latent_size`` (when set, else ``hidden_size``) x ``moe_intermediate_size``;
      :data:`MOE_MIN_INTERMEDIATE_PER_PARTITION` architectures (KimiMoE) widen the intermediate size to
      ``min * tp`` when plain TP would cut it below ``min`` per rank (:func:`_moe_intermediate_matrix`);
    * latent-MoE projections (``2 * hidden * moe_latent_size`` per MoE layer: Nemotron-H
      ``fc1/fc2_latent_proj``, Kimi-K3 ``routed_expert_down/up_proj``) are ``ReplicatedLinear``: whole
      on every rank, TP and DP alike;
    * router replicated, in float32 for :data:`FP32_ROUTER_MODEL_TYPES` (``GateLinear(params_dtype=
      torch.float32)``), else the model dtype; shared experts and dense MLPs split over TP;
    * norms replicated, and whole on every rank as well (see :func:`_param_parts`): learned position
      tables (GPT-2 ``wpe``), row-parallel biases, the DSA indexer (``wq_b`` in the linear layers'
      quantized dtype, ``wk_weights_proj`` in 16-bit), Gemma-4's per-layer gate / projection; the
      attention output gate (Qwen3-Next / Qwen3.5) widens q; Gemma-4's full-attention layers use
      their own head dim and KV heads; Gemma-4's per-layer embedding table is vocab-parallel;
    * vision tower (``params_vision``) split over TP except its patch / position embeddings (and the
      connector / whole tower of :data:`VISION_REPLICATED_CONNECTOR_MODEL_TYPES` /
      :data:`VISION_UNSHARDED_MODEL_TYPES`), on the first PP stage; with ``vision_dp=True``
      (``--mm-encoder-tp-mode data``) whole on every rank for the architectures in
      :data:`VISION_ENCODER_DP_MODEL_TYPES` (others ignore the flag), and on vLLM also whole when the
      vision heads do not divide TP for :data:`VISION_HEADS_DP_FALLBACK_MODEL_TYPES` (MoonViT,
      ``models/vision.py:141-156``);
    * PP: ``ceil(layers / pp)`` layers on the heaviest stage plus the larger of (embedding + vision) and
      LM head.

    ``weight_dtype`` ``None`` reads the checkpoint. Where the catalog derived which parts vLLM quantizes
    (``quant_<part>_fraction`` / ``quant_<part>_format``, :mod:`dashboard.quant_coverage`: attention,
    linear attention, dense MLP, shared experts, routed experts, LM head, router, vision tower), each
    part costs ``share x format bytes + (1 - share) x 16-bit bytes`` (:func:`_format_bytes`: NVFP4
    ``0.5625`` B, MXFP4 ``0.53125``, MXFP8 ``1.03125``, FP8 1 B (+ float32 channel / block scales),
    int4 ``0.5 + 2 / group_size``); the unexplained remainder of ``params_total`` follows the token
    mixer (linear-attention part when the model has one, else attention). Otherwise the
    checkpoint-wide rule: ``fp8`` 1 B (+ fp32 block scales ``4 / (block_n * block_k)``),
    AWQ/GPTQ/int4 ``0.5 + 2.5 / group_size`` B, NVFP4 ``0.5625`` B, MXFP4 ``0.53125`` B (experts only,
    as gpt-oss keeps attention in 16-bit), otherwise 2 B, with the LM head, router and vision tower in
    16-bit. MXFP4 experts have each rank's intermediate shard padded to a multiple of
    :data:`MXFP4_MOE_ALIGN` (``layers/fused_moe/oracle/mxfp4.py:915-916``). An explicit
    ``weight_dtype`` (see :data:`WEIGHT_DTYPE_BYTES`) applies to every linear layer.

    ``dp`` is the data-parallel size (dense layers are replicated across DP; it only matters for the
    MoE layout above and SGLang / TensorRT-LLM ``dp_attention``).

    Checked against vLLM 0.33.0's own rank-0 parameter bytes for every built cell of the conformance
    table (``tests/test_memory_conformance.py``: within 1 % except the documented expected misses).

    Returns ``nan`` when the record lacks shapes. Raises ``ValueError`` for an unknown framework /
    dtype or ``tp < 1``.
    """
    tp, pp, ep, dp = _check(framework, tp, pp=pp, ep=ep, dp=dp)
    c = _cols(record)
    return float(_weight_bytes_matrix(c, framework, np.array([tp]), pp=pp, ep=ep, weight_dtype=weight_dtype,
                                      dp=dp, dp_attention=dp_attention, expert_parallel=expert_parallel,
                                      vision_dp=vision_dp)[0, 0])


# --------------------------------------------------------------------------------------------
# GPUs and budgets
# --------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _gpus_cached(path: str) -> pd.DataFrame:
    strings = ("gpu", "name", "vendor", "memory_figure", "source_url", "memory_source", "compute_capability",
               "form_factor", "platform_source")
    df = pd.read_csv(path, dtype={c: "string" for c in strings})
    df["memory_bytes"] = df["memory_bytes"].astype("int64")
    if "gpus_per_node" in df.columns:
        df["gpus_per_node"] = df["gpus_per_node"].astype("Int64")
    if "mem_get_info_gib" in df.columns:
        df["mem_get_info_gib"] = pd.to_numeric(df["mem_get_info_gib"], errors="coerce").astype("float64")
    return df


def load_gpus(path: str | Path | None = None) -> pd.DataFrame:
    """The GPU table ``data/gpus.csv``: one row per GPU (32 cards; sources and date in ``data/README.md``).

    Columns: ``gpu`` (id used everywhere, e.g. ``H100-80GB``), ``name`` (as the driver names it),
    ``vendor``, ``memory_bytes`` (total device memory in bytes, the figure the engines size against:
    ``nvidia-smi memory.total`` MiB x 2^20 = NVML total; ``rocm-smi`` VRAM Total for AMD; or a spec-sheet
    figure, see ``memory_figure``), ``memory_mib``, ``memory_gib``, ``memory_figure`` (where the figure
    comes from: ``nvidia-smi`` / ``torch`` / ``rocm-smi`` -- a driver figure -- or ``spec-sheet``: the
    vendor's decimal GB rounded down to whole MiB, a lower bound 2-7 % below what drivers report where both
    are known), ``source_url`` (public page showing the figure), ``memory_source`` (the figure in words),
    ``mem_get_info_gib`` (float, GiB: ``cudaMemGetInfo`` total where a public log shows it, else NaN),
    ``compute_capability`` (string: NVIDIA CUDA compute capability ``"major.minor"`` such as ``"9.0"``, or
    the AMD LLVM target such as ``"gfx942"``), ``gpus_per_node`` (Int64: GPUs in one node of the usual
    platform -- 8 on an HGX board, 72 in an NVL72 rack, 4 or 8 in a PCIe server), ``form_factor`` (that
    platform in words), ``platform_source`` (where the capability and GPU count come from).
    Returns a copy (the cached table stays read-only). A card not in the table is given by its memory:
    see :func:`gpu_row` (``"other:24"``).
    """
    return _gpus_cached(str(path or GPUS_CSV)).copy()


#: Prefix of a GPU given by its memory alone: ``"other:24"`` is a card with 24 GiB per GPU.
OTHER_PREFIX = "other:"
#: Accepted memory range of an ``other:`` GPU, GiB per GPU.
OTHER_GIB_RANGE = (1.0, 4096.0)


def other_gpu(gib: float) -> str:
    """The canonical id of a GPU given by its memory: ``other_gpu(24)`` -> ``"other:24"`` (GiB per GPU,
    up to three decimals). Raises ``ValueError`` outside :data:`OTHER_GIB_RANGE`."""
    try:
        v = float(gib)
    except (TypeError, ValueError):
        raise ValueError(f"GPU memory must be a number of GiB, got {gib!r}") from None
    lo, hi = OTHER_GIB_RANGE
    if not math.isfinite(v) or not lo <= v <= hi:
        raise ValueError(f"GPU memory must be {lo:g} to {hi:g} GiB per GPU, got {gib!r}")
    return f"{OTHER_PREFIX}{round(v, 3):g}"


def parse_other_gpu(text: Any) -> float | None:
    """GiB per GPU of an ``"other:<GiB>"`` id (case-insensitive, spaces ignored), ``None`` when ``text`` does
    not start with ``other:``. Raises ``ValueError`` with the expected spelling when the number is missing,
    not a number or outside :data:`OTHER_GIB_RANGE`."""
    if not isinstance(text, str):
        return None
    t = text.strip().lower().replace(" ", "")
    if not t.startswith(OTHER_PREFIX):
        return None
    num = t[len(OTHER_PREFIX):]
    lo, hi = OTHER_GIB_RANGE
    hint = (f"after 'other:' give the memory per GPU in GiB, a number from {lo:g} to {hi:g} "
            "(e.g. other:24 for a 24 GiB card)")
    try:
        v = float(num)
    except ValueError:
        raise ValueError(f"GPU {text.strip()[:40]!r}: {hint}") from None
    if not math.isfinite(v) or not lo <= v <= hi:
        raise ValueError(f"GPU {text.strip()[:40]!r}: {hint}")
    return v


def gpu_row(gpu: Any) -> dict:
    """The GPU table row of ``gpu`` as a dict, for a table id (case-insensitive, e.g. ``"h100-80gb"``) or
    ``"other:<GiB>"`` (a card given by its memory: ``memory_bytes`` = GiB x 2^30 rounded down to whole
    MiB, ``compute_capability`` empty -- unknown, so no dtype is refused --, ``gpus_per_node`` ``None``,
    ``memory_figure`` ``"user"``). Raises ``ValueError`` naming the known ids (and the ``other:`` spelling)
    for anything else."""
    gib = parse_other_gpu(gpu)
    if gib is not None:
        gid = other_gpu(gib)
        mib = int(gib * 1024)
        return {"gpu": gid, "name": f"Other GPU ({gib:g} GiB)", "vendor": "", "memory_bytes": mib * MiB,
                "memory_mib": mib, "memory_gib": mib / 1024, "memory_figure": "user", "source_url": "",
                "memory_source": "given by the user", "mem_get_info_gib": float("nan"), "compute_capability": "",
                "gpus_per_node": None, "form_factor": "", "platform_source": ""}
    rows = _gpu_rows(str(GPUS_CSV))
    hit = rows.get(str(gpu).strip().lower())
    if hit is None:
        known = ", ".join(r["gpu"] for r in rows.values())
        raise ValueError(f"unknown GPU {str(gpu)[:60]!r}; known: {known}; or other:<GiB> "
                         "for a card given by its memory (e.g. other:24)")
    return dict(hit)


@lru_cache(maxsize=1)
def _gpu_rows(path: str) -> dict[str, dict]:
    """The GPU table's rows as dicts by lower-cased id, in table order (built once; callers copy)."""
    return {str(r["gpu"]).lower(): r for r in _gpus_cached(path).to_dict("records")}


def resolve_gpu_id(gpu: Any) -> str:
    """The canonical spelling of a GPU id (``"h100-80GB"`` -> ``"H100-80GB"``, ``"Other: 24.0"`` ->
    ``"other:24"``). Raises ``ValueError`` as :func:`gpu_row`."""
    return str(gpu_row(gpu)["gpu"])


def _gpu_memory(gpu: Any) -> tuple[str, int]:
    if isinstance(gpu, (int, np.integer)):
        return f"{int(gpu)} B", int(gpu)
    if isinstance(gpu, (pd.Series, Mapping)):
        return str(gpu["gpu"]), int(gpu["memory_bytes"])
    row = gpu_row(gpu)
    return str(row["gpu"]), int(row["memory_bytes"])


#: SGLang 0.4.x default ``mem_fraction_static`` by TP size (``ServerArgs.__post_init__``: TP >= 16 0.79,
#: >= 8 0.81, >= 4 0.85, >= 2 0.87, else 0.88); releases before 0.5 use it.
SGLANG_04_FRACTIONS = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))


def sglang_default_mem_fraction_static(memory_bytes: int, tp: int = 1, pp: int = 1, *, dp: int = 1,
                                       dp_attention: bool = False, version: str | None = None) -> float:
    """SGLang's default ``mem_fraction_static`` for a GPU of ``memory_bytes`` (fraction of TOTAL memory).

    ``ServerArgs._handle_gpu_memory_settings``: buckets by memory (MiB) give ``chunked_prefill_size`` /
    ``cuda_graph_max_bs`` (< 35 GiB: 2048 / 8, < 60 GiB: 4096 / 32 (160 at tp >= 4), < 160 GiB: 8192
    / 256 (512 at tp >= 4), else 16384 / 512); ``reserved = 512 + max(chunked, 2048) * 1.5 + bs * 2 +
    tp * pp / 8 * 1024`` MiB (+ ``bs * dp * 3`` (+ ``bs * dp * 1.5`` when bs > 300) under
    DP-attention), at least 10 GiB on cards above 60 GiB; result ``round((mem - reserved) / mem, 3)``.
    The multimodal reduction (``adjust_mem_fraction_for_vlm``) is not modelled.

    ``version`` (e.g. ``"0.4.3.post4"``; default the 0.5.23 release read): releases before 0.5 used a table by
    TP size alone, :data:`SGLANG_04_FRACTIONS` (oracle O72: 0.85 printed at TP 4). Which 0.5.x release
    switched to the formula above was not checked (0.5.22 and 0.5.23 have it).
    """
    if _version_tuple(version, "sglang") < (0, 5):
        return next(f for lo, f in SGLANG_04_FRACTIONS if tp >= lo)
    mem = memory_bytes / MiB
    gib = 1024
    if mem < 35 * gib:
        chunked, bs = 2048, 8
    elif mem < 60 * gib:
        chunked, bs = 4096, (32 if tp < 4 else 160)
    elif mem < 160 * gib:
        chunked, bs = 8192, (256 if tp < 4 else 512)
    else:
        chunked, bs = 16384, 512
    reserved = 512 + max(chunked, 2048) * 1.5 + bs * 2 + tp * pp / 8 * 1024
    if dp_attention:
        reserved += bs * dp * 3 + (bs * dp * 1.5 if bs > 300 else 0)
    if mem > 60 * gib:
        reserved = max(reserved, 10 * gib)
    return round((mem - reserved) / mem, 3)


# --------------------------------------------------------------------------------------------
# Reserve: activation peak, non-torch memory, CUDA graphs (one rule per engine, global parameters)
# --------------------------------------------------------------------------------------------
#: Engine releases whose source the rules below were read from (``engine_version=None`` means these).
ENGINE_RELEASES: dict[str, str] = {"vllm": "0.33.0", "sglang": "0.5.23"}

#: vLLM: bytes of sampler working memory per (sequence x vocabulary entry) in the profile run's dummy
#: sampler pass (``gpu_model_runner.py:5866-5925``: logits, their float32 copy, sorted top-k/top-p values
#: and the probabilities over ``max_num_seqs`` rows). Fitted: the logged "torch peak memory increase" of
#: the four sampler-bound vLLM 0.19 runs (Llama-3.1-8B 1.89, Qwen2.5-7B 2.21, phi-4 1.52, gemma-2-9b 3.65
#: GiB at 1024 sequences) lie on ``14 B x seqs x vocab + 0.15 GiB`` within 3 %. A float32 model adds 2 B.
VLLM_SAMPLER_BYTES_PER_LOGIT = 14.0
#: vLLM: live profile-run buffers (hidden states of the dummy batch) under the sampler peak, bytes (the
#: intercept of the same fit).
VLLM_PROFILE_LIVE_BYTES = 0.15 * GiB
#: vLLM MoE forward: activation bytes per batched token per (top-k x hidden) element, in units of the
#: activation dtype (fused-MoE workspaces, permuted copies, router logits; not itemized). Least-squares fit
#: on the three logged MoE runs (Qwen3-30B-A3B 2.68, DeepSeek-V2-Lite 1.93, Mixtral-8x7B TP 2 1.21 GiB).
VLLM_MOE_WORKSPACE_FACTOR = 8.5
#: vLLM non-torch memory increase during profiling, bytes: TP 1 (cuBLAS / allocator workspaces), TP > 1
#: (NCCL and custom all-reduce buffers), pipeline-only (TP 1, PP > 1: the communicators exist before the
#: baseline snapshot). Logged: 0.24-0.27 (granite 0.46) GiB, 2.06-2.13 GiB, 0.07 GiB.
VLLM_NON_TORCH_BYTES = {"tp1": 0.25 * GiB, "tp": 2.1 * GiB, "pp_only": 0.07 * GiB}
#: vLLM CUDA-graph memory (``profile_cudagraph_memory``): base + per decoder layer on the stage, + MoE
#: extra, bytes. Fitted on the logged "Estimated CUDA graph memory" of the dense vLLM 0.19 runs (0.49-0.84
#: GiB for 8-42 layers, within 0.15 GiB); MoE runs logged 0.82-1.39 GiB.
VLLM_CUDAGRAPH_BYTES = {"base": 0.45 * GiB, "per_layer": 0.009 * GiB, "moe": 0.35 * GiB}
#: vLLM release from which the CUDA-graph estimate is charged to the KV budget
#: (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` default on, ``envs.py:329``, ``gpu_worker.py:719-734``: "default
#: since v0.21.0"); before it, graphs were captured out of the unrequested ``1 - utilization`` share.
VLLM_CUDAGRAPH_IN_BUDGET_SINCE = (0, 21)
#: SGLang: memory in use before the weights load (CUDA context; NCCL and custom all-reduce at TP > 1), bytes:
#: ``pre_model_load_memory`` (``distributed/bootstrap.py:193-212``) is the free memory then, not the card
#: total. Fitted on the two SGLang oracles: O73 (H100, TP 1) 63.48 GB free after 15.11 GB of weights ->
#: 78.59 of 79.19 GiB, 0.6 GiB in use; O72 (L4, TP 4) "avail mem=21.63 GB" of 23034 MiB (22.49 GiB), 0.86.
SGLANG_STARTUP_BYTES = {"tp1": 0.6 * GiB, "tp": 0.86 * GiB}
#: SGLang: what its "Load weight end ... mem usage" adds to the parameter bytes (rotary caches, allocator
#: rounding), bytes: logged 15.11 vs 14.96 GiB (Llama-3.1-8B TP 1), 15.54 vs 15.26 GiB (QwQ-32B TP 4).
SGLANG_LOAD_EXTRA_BYTES = 0.2 * GiB


def _version_tuple(version: str | None, framework: str) -> tuple[int, ...]:
    """``"0.19.0"`` -> ``(0, 19, 0)``; ``None`` -> the release the rules were read from. ValueError when
    the text has no leading ``major.minor``."""
    if version is None and framework not in ENGINE_RELEASES:
        return (1 << 30,)  # no version-dependent rule for this framework
    text = ENGINE_RELEASES[framework] if version is None else str(version).strip()
    parts = []
    for tok in text.lstrip("vV").split("."):
        digits = "".join(ch for ch in tok[:6] if ch.isdigit()) if tok[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits[:6]))
        if not tok.isdigit():
            break
    if len(parts) < 2:
        raise ValueError(f"engine_version must start with major.minor such as '0.19.0', got {str(version)[:40]!r}")
    return tuple(parts)


def vllm_batch_defaults(memory_bytes: int, gpu_name: str = "") -> tuple[int, int]:
    """vLLM's default ``(max_num_batched_tokens, max_num_seqs)`` for the OpenAI server on a GPU.

    ``EngineArgs._get_default_max_num_batched_tokens_and_seqs`` (``engine/arg_utils.py:2972-3006``): >= 160
    GiB: 16384 / 1024; >= 70 GiB and not an A100: 8192 / 1024; otherwise 2048 / 256.
    """
    if memory_bytes >= 160 * GiB:
        return 16384, 1024
    if memory_bytes >= 70 * GiB and "a100" not in str(gpu_name).lower():
        return 8192, 1024
    return 2048, 256


def _activation_bytes(c: dict[str, np.ndarray], framework: str, t: np.ndarray, ep: int, memory_bytes: int, *,
                      tokens: float | None = None, seqs: float | None = None, act_bytes: float = 2.0,
                      gpu_name: str = "") -> np.ndarray:
    """Peak activation (vLLM "torch peak memory increase") per GPU, bytes, shape (models, len(tp)).

    ``max(sampler + live, forward)``: sampler = :data:`VLLM_SAMPLER_BYTES_PER_LOGIT` (+2 for a float32
    model) x ``max_num_seqs`` x vocab + :data:`VLLM_PROFILE_LIVE_BYTES`; forward over ``T =
    max_num_batched_tokens`` tokens = ``T x act_bytes x (4 x hidden + 3 x intermediate / tp)`` (dense:
    residual, normed input, q/k/v/o, gate-up and activated MLP) or ``T x act_bytes x (4 x hidden +
    VLLM_MOE_WORKSPACE_FACTOR x top_k x hidden)`` (MoE). Defaults: :func:`vllm_batch_defaults`.
    """
    d_tokens, d_seqs = vllm_batch_defaults(memory_bytes, gpu_name)
    tokens = d_tokens if tokens is None else tokens
    seqs = d_seqs if seqs is None else seqs
    if framework == "transformers-cb-cache":
        seqs, tokens = 1, 256  # PagedAttentionMemoryHandler._upper_bound_max_batch_tokens
    V = c["vocab_size"][:, None]
    H = c["hidden_size"][:, None]
    sampler = (VLLM_SAMPLER_BYTES_PER_LOGIT + (2.0 if act_bytes >= 4 else 0.0)) * seqs * V + VLLM_PROFILE_LIVE_BYTES
    I = _nz(c["intermediate_size"])[:, None]
    moe = _flag(c["is_moe"])[:, None] & (_nz(c["num_experts"])[:, None] > 0)
    moe_term = VLLM_MOE_WORKSPACE_FACTOR * _nz(c["num_experts_per_tok"])[:, None] * H
    forward = tokens * act_bytes * (4 * H + np.where(moe, moe_term, 3 * I / t))
    return np.maximum(sampler, forward)


def _non_torch_bytes(t: np.ndarray, pp: Any = 1) -> np.ndarray:
    """Non-torch memory per GPU, bytes: :data:`VLLM_NON_TORCH_BYTES` by TP / PP."""
    p = np.asarray(pp, dtype=np.float64)
    return np.where(t > 1, VLLM_NON_TORCH_BYTES["tp"],
                    np.where(p > 1, VLLM_NON_TORCH_BYTES["pp_only"], VLLM_NON_TORCH_BYTES["tp1"]))


def _cuda_graph_bytes(c: dict[str, np.ndarray], t: np.ndarray, pp: Any = 1) -> np.ndarray:
    """vLLM CUDA-graph memory per GPU, bytes, shape (models, len(tp)): :data:`VLLM_CUDAGRAPH_BYTES`."""
    L = c["num_hidden_layers"][:, None]
    stage_layers = np.ceil(L / np.maximum(np.asarray(pp, dtype=np.float64), 1.0))
    moe = (_flag(c["is_moe"]) & (_nz(c["num_experts"]) > 0))[:, None]
    g = VLLM_CUDAGRAPH_BYTES["base"] + VLLM_CUDAGRAPH_BYTES["per_layer"] * stage_layers + np.where(moe, VLLM_CUDAGRAPH_BYTES["moe"], 0.0)
    return np.broadcast_to(g, np.broadcast_shapes(g.shape, t.shape)).astype(np.float64)


# --------------------------------------------------------------------------------------------
# vLLM hybrid KV-cache manager
# --------------------------------------------------------------------------------------------
def _vllm_kv_groups(c: dict[str, np.ndarray], kv_per_layer: np.ndarray, state_per_layer: np.ndarray, *,
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
    full, swa, lin = _layer_counts(c)
    p = np.maximum(np.asarray(pp, dtype=np.float64), 1.0)
    lin = np.where(_flag(c["has_linear_attention"]) | (lin > 0), lin, 0.0)
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
    win = np.broadcast_to(_nz(c["sliding_window"], np.inf)[:, None], F.shape)
    ctx2 = np.broadcast_to(np.asarray(ctx, dtype=np.float64)[:, None] if np.ndim(ctx) else float(ctx), F.shape)
    swa_need = np.ceil(np.minimum(win - 1 + tokens, ctx2) / blk) + 1
    per_req = groups_t[0] * np.ceil(ctx2 / blk) + groups_t[1] * swa_need + groups_t[2] * 1.0
    return {"bytes_per_block": gsize * page, "blocks_per_request": per_req, "groups": groups_t.sum(axis=0),
            "block_size": blk}


def _capacity_matrix(c: dict[str, np.ndarray], framework: str, tp: np.ndarray, memory_bytes: int, *, pp: int = 1,
                     ep: int = 1, kv_dtype: str = "bf16", weight_dtype: str | None = None,
                     context_len: np.ndarray | float | None = None, mem_fraction: float | None = None,
                     dp: int = 1, dp_attention: bool = False, expert_parallel: bool = False,
                     vision_dp: bool = False, max_num_batched_tokens: int | None = None,
                     max_num_seqs: int | None = None, measured_kv_bytes: float | None = None,
                     engine_version: str | None = None, gpu_name: str = "") -> dict[str, np.ndarray]:
    tp = np.atleast_1d(np.asarray(tp, dtype=np.int64))
    t = tp.astype(np.float64)[None, :]
    n = len(c["hidden_size"])
    if context_len is None:
        ctx = np.where(np.isnan(c["max_position_embeddings"]), 8192.0, c["max_position_embeddings"])
    else:
        ctx = np.broadcast_to(np.asarray(context_len, dtype=np.float64), (n,)).astype(np.float64)
    kvb = _dtype_bytes(kv_dtype, KV_DTYPE_BYTES, "kv_dtype")
    version = _version_tuple(engine_version, framework)
    # per-token bytes averaged over a sequence of ctx tokens (sliding windows capped), one ctx per model
    kv_tok = _kv_bytes_matrix(c, framework, tp, kv_bytes=kvb, context_len=ctx, dp=dp, dp_attention=dp_attention)
    if np.any(np.asarray(pp) > 1):  # a stage caches only its own layers: the heaviest holds ceil(L / pp) of L
        L = c["num_hidden_layers"][:, None]
        kv_tok = kv_tok * (np.ceil(L / np.asarray(pp, dtype=np.float64)) / L)
    state = _state_bytes_matrix(c, tp, state_bytes=kvb if kvb >= 2 else 2.0)
    weights = _weight_bytes_matrix(c, framework, tp, pp=pp, ep=ep, weight_dtype=weight_dtype, dp=dp, dp_attention=dp_attention,
                                   expert_parallel=expert_parallel, vision_dp=vision_dp)
    act_bytes = 4.0 if str(weight_dtype).lower() in ("fp32", "float32") else 2.0
    d_tokens, d_seqs = vllm_batch_defaults(memory_bytes, gpu_name)
    T = float(max_num_batched_tokens) if max_num_batched_tokens is not None else float(d_tokens)
    act = _activation_bytes(c, framework, t, ep, memory_bytes, tokens=T,
                            seqs=float(max_num_seqs) if max_num_seqs is not None else None, act_bytes=act_bytes,
                            gpu_name=gpu_name)
    nt = np.broadcast_to(_non_torch_bytes(t, pp), weights.shape)
    graph = np.zeros(weights.shape)
    M = float(memory_bytes)
    frac = mem_fraction if mem_fraction is not None else DEFAULT_FRACTION[framework]
    if framework == "vllm":
        graph = np.broadcast_to(_cuda_graph_bytes(c, t, pp), weights.shape)
        charged = graph if version >= VLLM_CUDAGRAPH_IN_BUDGET_SINCE else np.zeros(weights.shape)
        budget = M * frac - weights - act - nt - charged
        reserve = act + nt + charged
    elif framework == "sglang":
        if frac is None:
            lay = np.broadcast_arrays(tp, np.asarray(pp), np.asarray(dp), np.asarray(dp_attention, dtype=bool))
            fr = np.array([[sglang_default_mem_fraction_static(memory_bytes, int(x), int(p_), dp=int(d_), dp_attention=bool(a_),
                                                               version=engine_version)
                            for x, p_, d_, a_ in zip(*lay)]])
        else:
            fr = np.full((1, len(tp)), float(frac))
        startup = np.where(t > 1, SGLANG_STARTUP_BYTES["tp"], SGLANG_STARTUP_BYTES["tp1"])
        pre_load = M - startup  # rest = (pre_load - weights) - pre_load x (1 - fraction)
        budget = pre_load * fr - weights - SGLANG_LOAD_EXTRA_BYTES
        reserve = np.broadcast_to(startup + pre_load * (1 - fr) + SGLANG_LOAD_EXTRA_BYTES, weights.shape)
        frac = fr
    elif framework == "tensorrt-llm":
        budget = (M - weights - act - nt) * frac
        reserve = act + nt
    elif framework == "transformers-cb-cache":
        budget = (M - weights) * frac - act
        reserve = act
    else:
        budget = (M - weights - act - nt) * frac
        reserve = act + nt
    budget = np.broadcast_to(budget, weights.shape).astype(np.float64)
    calibrated = np.zeros(weights.shape, dtype=bool)
    if measured_kv_bytes is not None:  # the engine's own "Available KV cache memory" replaces the estimate
        budget = np.full(weights.shape, float(measured_kv_bytes))
        calibrated = np.ones(weights.shape, dtype=bool)
        reserve = np.broadcast_to(np.maximum(M * np.asarray(frac if frac is not None else 1.0, dtype=np.float64)
                                             - weights - budget, 0.0), weights.shape)
    block = TOKENS_PER_BLOCK[framework]
    with np.errstate(divide="ignore", invalid="ignore"):
        if framework == "vllm":
            full, swa, _ = _layer_counts(c)
            n_attn = (full + swa)[:, None]
            kv_layer = _kv_bytes_matrix(c, framework, tp, kv_bytes=kvb, context_len=None, dp=dp, dp_attention=dp_attention)
            kv_layer = np.where(n_attn > 0, kv_layer / np.where(n_attn > 0, n_attn, 1.0), 0.0)
            _, _, lin = _layer_counts(c)
            st_layer = np.where(lin[:, None] > 0, state / np.where(lin[:, None] > 0, lin[:, None], 1.0), 0.0)
            g = _vllm_kv_groups(c, kv_layer, st_layer, pp=pp, ctx=ctx, tokens=T, block=block)
            blocks = np.floor(np.maximum(budget, 0) / g["bytes_per_block"])
            ok = (g["bytes_per_block"] > 0) & np.isfinite(blocks)
            conc = blocks / g["blocks_per_request"]
            tokens = np.where(ok & (kv_tok > 0), np.floor(conc * ctx[:, None] + 1e-6), np.nan)
            seqs = np.where(ok, np.floor(conc + 1e-9), np.nan)
            blocks = np.where(ok, blocks, np.nan)
            groups = g["groups"]
        else:
            tokens = np.where(kv_tok > 0, np.floor(np.maximum(budget, 0) / (kv_tok * block)) * block, np.nan)
            seq_bytes = kv_tok * ctx[:, None] + state
            seqs = np.floor(np.maximum(budget, 0) / seq_bytes)
            blocks = np.where(kv_tok > 0, tokens / block, np.nan)
            groups = np.ones(weights.shape)
    fits = (budget > 0) & (seqs >= 1) & (weights + np.broadcast_to(reserve, weights.shape) < M)
    return {
        "kv_bytes_per_token_per_rank": kv_tok, "linear_state_bytes_per_sequence_per_rank": state,
        "weight_bytes_per_gpu": weights, "activation_bytes_per_gpu": np.broadcast_to(act, weights.shape),
        "non_torch_bytes_per_gpu": nt, "cuda_graph_bytes_per_gpu": graph,
        "reserve_bytes_per_gpu": np.broadcast_to(reserve, weights.shape),
        "kv_budget_bytes_per_gpu": budget, "tokens_per_gpu": tokens, "concurrent_sequences": seqs,
        "kv_blocks_per_gpu": blocks, "kv_cache_groups": np.broadcast_to(groups, weights.shape),
        "fits": fits & ~np.isnan(budget), "fraction": np.broadcast_to(np.asarray(frac, dtype=np.float64), weights.shape),
        "context_len": np.broadcast_to(ctx[:, None], weights.shape), "calibrated": calibrated,
    }


def capacity(record: Any, framework: str, gpu: Any, tp: int, *, pp: int = 1, ep: int = 1, kv_dtype: str = "bf16",
             weight_dtype: str | None = None, context_len: int | None = None, mem_fraction: float | None = None,
             dp: int = 1, dp_attention: bool = False, expert_parallel: bool = False,
             vision_dp: bool = False, max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None,
             measured_kv_bytes: float | None = None, engine_version: str | None = None) -> dict[str, Any]:
    """How much KV cache fits on each GPU of a (model, framework, GPU, TP) deployment.

    Parameters
    ----------
    record : one catalog record.
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    gpu : GPU id from :func:`load_gpus` (e.g. ``"H100-80GB"``), ``"other:<GiB>"`` (a card given by its memory
        per GPU, e.g. ``"other:24"``), a row of that table, or total bytes.
    tp, pp, ep : parallel sizes (one GPU per rank).
    kv_dtype, weight_dtype : see :func:`kv_cache_bytes_per_token_per_rank`, :func:`weight_bytes_per_rank`.
    dp, dp_attention, expert_parallel, vision_dp : see :func:`weight_bytes_per_rank`.
    context_len : tokens per sequence (default: the model's ``max_position_embeddings``, else 8192).
    mem_fraction : the framework's budget knob: vLLM ``gpu_memory_utilization`` (default 0.9), SGLang
        ``mem_fraction_static`` (default: :func:`sglang_default_mem_fraction_static`), TensorRT-LLM
        ``free_gpu_memory_fraction`` (0.9), transformers CB ``max_memory_percent`` (0.9).
    max_num_batched_tokens, max_num_seqs : vLLM's scheduler limits the profile run uses (default
        :func:`vllm_batch_defaults` for the GPU); they size the activation reserve.
    measured_kv_bytes : the engine's own KV figure, bytes per GPU (vLLM "Available KV cache memory: 54.12
        GiB" x 2**30; SGLang ``K size + V size``). It replaces the reserve estimate: ``kv_budget_bytes_per_gpu``
        is this figure, ``calibrated`` is True, ``budget_rule`` says so, and ``reserve_bytes_per_gpu`` becomes
        what the figure implies (fraction x memory - weights - KV).
    engine_version : the engine release the deployment runs (``"0.19.0"``); default the release the rules
        were read from (:data:`ENGINE_RELEASES`). vLLM before 0.21 leaves CUDA graphs out of the budget;
        SGLang before 0.5 has the 0.4 default fraction table.

    Returns
    -------
    dict with: ``framework``, ``gpu``, ``tp``, ``pp``, ``ep``, ``context_len`` (tokens),
    ``memory_bytes`` (per GPU), ``fraction``, ``budget_rule`` (text), ``weight_bytes_per_gpu``,
    ``activation_bytes_per_gpu``, ``non_torch_bytes_per_gpu``, ``reserve_bytes_per_gpu`` (what the
    rule holds back besides weights), ``kv_budget_bytes_per_gpu``, ``kv_bytes_per_token_per_rank``,
    ``linear_state_bytes_per_sequence_per_rank``, ``tokens_per_gpu`` (KV-cache tokens, rounded down to
    the framework's block size), ``concurrent_sequences`` (whole sequences of ``context_len``), ``fits``
    (bool: weights load and at least one full-length sequence fits), ``cuda_graph_bytes_per_gpu`` (vLLM),
    ``kv_blocks_per_gpu`` (vLLM ``num_gpu_blocks``; other engines tokens / block), ``kv_cache_groups``
    (vLLM KV-cache groups), ``calibrated`` (bool: ``measured_kv_bytes`` was used).
    For vLLM, ``tokens_per_gpu`` is what vLLM 0.33 prints as "GPU KV cache size": ``max concurrency x
    context_len`` with the concurrency of :func:`_vllm_kv_groups` (= blocks x 16 for full attention).

    Raises ``ValueError`` for an unknown framework, GPU or dtype, a ``tp``/``pp``/``ep``/``dp`` that is not
    a whole number in ``1 .. dashboard.sharding.MAX_PARALLEL``, a ``context_len`` that is not a whole
    number >= 1, or a ``mem_fraction`` outside ``(0, 1]``.
    """
    tp, pp, ep, dp = _check(framework, tp, pp=pp, ep=ep, dp=dp)
    if context_len is not None:
        context_len = _check_context_len(context_len)
    if mem_fraction is not None:
        mem_fraction = _check_fraction(mem_fraction)
    batch = {k: (None if v is None else sharding.parallel_size(v, k, hi=1 << 30))
             for k, v in (("max_num_batched_tokens", max_num_batched_tokens), ("max_num_seqs", max_num_seqs))}
    measured_kv_bytes = _check_measured(measured_kv_bytes)
    name, mem = _gpu_memory(gpu)
    c = _cols(record)
    m = _capacity_matrix(c, framework, np.array([tp]), mem, pp=pp, ep=ep, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                         context_len=context_len, mem_fraction=mem_fraction, dp=dp, dp_attention=dp_attention,
                         expert_parallel=expert_parallel, vision_dp=vision_dp, measured_kv_bytes=measured_kv_bytes,
                         engine_version=engine_version, gpu_name=name, **batch)
    rule = BUDGET_RULES[framework]
    if measured_kv_bytes is not None:
        rule = f"measured: the KV memory the engine logged ({measured_kv_bytes / GiB:.2f} GiB) replaces the reserve estimate"
    out: dict[str, Any] = {"framework": framework, "gpu": name, "tp": int(tp), "pp": int(pp), "ep": int(ep),
                           "memory_bytes": mem, "budget_rule": rule}
    for k, v in m.items():
        x = v[0, 0]
        if k in ("fits", "calibrated"):
            out[k] = bool(x)
        elif k in ("tokens_per_gpu", "concurrent_sequences", "context_len", "kv_blocks_per_gpu", "kv_cache_groups"):
            out[k] = int(x) if np.isfinite(x) else None
        else:
            out[k] = float(x)
    return out


def memory_grid(catalog: pd.DataFrame, tp_sizes: Sequence[int] = schema.DEFAULT_TP_SIZES,
                frameworks: Sequence[str] = schema.FRAMEWORKS, *, gpu: Any = "H100-80GB", pp: int = 1, ep: int = 1,
                kv_dtype: str = "bf16", weight_dtype: str | None = None, context_len: int | None = None,
                mem_fraction: float | None = None) -> pd.DataFrame:
    """Vectorized memory model over a catalog x TP sizes x frameworks (numpy over columns).

    Returns a tidy frame, one row per (model_id, framework, tp), with the float columns of
    :func:`capacity` (bytes per GPU / per token / per sequence, tokens, sequences, ``fits``). Rows of
    models without shapes carry NaN (and ``fits`` False). ``mem_fraction`` applies to every framework
    when given; otherwise each framework's default.
    """
    for fw in frameworks:
        _check(fw, 1, pp=pp, ep=ep)
    tp = sharding.parallel_sizes(list(tp_sizes), "TP size")  # never truncated: 4.5 is an error
    if context_len is not None and np.ndim(context_len) == 0:
        context_len = _check_context_len(context_len)
    if mem_fraction is not None:
        mem_fraction = _check_fraction(mem_fraction)
    _, mem = _gpu_memory(gpu)
    c = _cols(catalog)
    ids = c["model_id"] if "model_id" in catalog.columns else np.arange(len(catalog)).astype(str)
    ids = catalog["model_id"].to_numpy() if "model_id" in catalog.columns else ids
    frames = []
    for fw in frameworks:
        m = _capacity_matrix(c, fw, tp, mem, pp=pp, ep=ep, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                             context_len=context_len, mem_fraction=mem_fraction)
        data = {"model_id": np.repeat(ids, len(tp)), "framework": fw, "tp": np.tile(tp, len(ids))}
        for k, v in m.items():
            data[k] = np.ascontiguousarray(np.broadcast_to(v, (len(ids), len(tp)))).ravel()
        frames.append(pd.DataFrame(data))
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(out):
        out["framework"] = out["framework"].astype("string")
        out["model_id"] = out["model_id"].astype("string")
    return out


def layout_capacity(catalog: Any, framework: str, gpu: Any, layouts: Any, *, kv_dtype: str = "bf16",
                    weight_dtype: str | None = None, context_len: int | None = None,
                    mem_fraction: float | None = None, vision_dp: bool = False,
                    cols: dict[str, np.ndarray] | None = None, measured_kv_bytes: float | None = None,
                    engine_version: str | None = None) -> dict[str, np.ndarray]:
    """:func:`capacity` for many models under many parallel layouts at once (numpy, no per-cell Python).

    Parameters
    ----------
    catalog : catalog records (DataFrame, or one record as a dict / Series).
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    gpu : GPU id, ``"other:<GiB>"``, a row of :func:`load_gpus`, or total bytes per GPU.
    layouts : DataFrame or mapping of equal-length columns ``tp`` (required), ``pp``, ``dp``, ``ep``
        (default 1), ``dp_attention``, ``expert_parallel`` (default False); meanings as in :func:`capacity`.
    kv_dtype, weight_dtype, context_len, mem_fraction, vision_dp : as in :func:`capacity`, for every cell.
    cols : the model columns already extracted by ``_cols(catalog)`` (reuse across calls); None: extracted.
    measured_kv_bytes, engine_version : as in :func:`capacity` (a measured figure applies to every cell).

    Returns
    -------
    dict of arrays of shape ``(models, layouts)``, the keys of :func:`capacity`'s numeric fields:
    ``weight_bytes_per_gpu``, ``activation_bytes_per_gpu``, ``non_torch_bytes_per_gpu``,
    ``reserve_bytes_per_gpu``, ``kv_budget_bytes_per_gpu`` (bytes per GPU), ``kv_bytes_per_token_per_rank``
    (bytes), ``linear_state_bytes_per_sequence_per_rank`` (bytes), ``tokens_per_gpu`` (KV-cache tokens a
    GPU holds, rounded down to the framework's block), ``concurrent_sequences`` (whole ``context_len``
    sequences per attention group: one TP/PP replica, or one attention-DP group), ``fits`` (bool),
    ``fraction``, ``context_len``. Cell ``[i, j]`` equals :func:`capacity` of model ``i`` at layout ``j``.

    Raises ``ValueError`` as :func:`capacity` does (unknown framework / GPU / dtype, a size that is not
    a whole number in ``1 .. MAX_PARALLEL``, a bad ``context_len`` or ``mem_fraction``).
    """
    sizes = flags = sharding.layout_columns(layouts)
    _check(framework, 1)
    if context_len is not None:
        context_len = _check_context_len(context_len)
    if mem_fraction is not None:
        mem_fraction = _check_fraction(mem_fraction)
    measured_kv_bytes = _check_measured(measured_kv_bytes)
    name, mem = _gpu_memory(gpu)
    c = _cols(catalog) if cols is None else cols
    if len(sizes["tp"]) == 0:
        return {}
    return _capacity_matrix(c, framework, sizes["tp"], mem, pp=sizes["pp"], ep=sizes["ep"], kv_dtype=kv_dtype,
                            weight_dtype=weight_dtype, context_len=context_len, mem_fraction=mem_fraction,
                            dp=sizes["dp"], dp_attention=flags["dp_attention"],
                            expert_parallel=flags["expert_parallel"], vision_dp=vision_dp,
                            measured_kv_bytes=measured_kv_bytes, engine_version=engine_version, gpu_name=name)


def _check(framework: str, tp: Any, **sizes: Any) -> list[int]:
    """Validate the framework and the parallel sizes; return ``[tp, *sizes.values()]`` as ints.

    Every size must be a whole number in ``1 .. sharding.MAX_PARALLEL`` (ValueError naming it otherwise:
    ``tp=4.5`` or ``pp=0`` used to be divided by, truncated or silently clamped)."""
    if framework not in schema.FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; expected one of {', '.join(schema.FRAMEWORKS)}")
    return [sharding.parallel_size(tp, "tp"), *(sharding.parallel_size(v, k) for k, v in sizes.items())]


def _check_context_len(context_len: Any) -> int:
    """Tokens per sequence: a whole number >= 1 (0 gave NaN bytes, negatives negative sequences)."""
    return sharding.parallel_size(context_len, "context_len", hi=1 << 40)


def _check_measured(x: Any) -> float | None:
    """A measured KV budget: None, or a finite number of bytes > 0 (ValueError otherwise)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"measured_kv_bytes must be a number of bytes > 0, got {str(x)[:40]!r}") from None
    if not (math.isfinite(f) and f > 0):
        raise ValueError(f"measured_kv_bytes must be a number of bytes > 0, got {str(x)[:40]!r}")
    return f


def _check_fraction(frac: Any) -> float:
    """A framework memory fraction (``gpu_memory_utilization`` etc.): a number in ``(0, 1]``."""
    try:
        f = float(frac)
    except (TypeError, ValueError):
        raise ValueError(f"mem_fraction must be a number in (0, 1], got {frac!r}") from None
    if not (0.0 < f <= 1.0):  # also refuses nan
        raise ValueError(f"mem_fraction must be a number in (0, 1], got {frac!r}")
    return f


def bytes_to_gib(x: float) -> float:
    """Bytes -> GiB (2**30 bytes)."""
    return x / GiB if x is not None and not (isinstance(x, float) and math.isnan(x)) else float("nan")


# --------------------------------------------------------------------------------------------
# Evidence: which attention families each engine's rule was checked on against logged runs
# --------------------------------------------------------------------------------------------
#: Shipped summary of the oracle checks, one row per logged run the memory model was compared with:
#: ``oracle_id, engine, engine_version, engine_generation, model_id, family, gpu, tp, pp, measured_tokens,
#: predicted_tokens, miss`` (predicted / measured - 1) and ``source_url`` (the public log). Written by
#: ``scripts/kv_oracle_summary.py`` from the oracle table the tests check (``tests/test_kv_oracles.py``);
#: the product reads only this file, never the oracle table.
KV_ORACLE_SUMMARY_CSV = Path(__file__).resolve().parents[1] / "data" / "kv_oracle_summary.csv"

#: Attention / KV-cache families the evidence is kept by (id -> label shown in the dashboard).
KV_FAMILIES: dict[str, str] = {
    "dense": "dense attention (MHA / GQA)",
    "moe": "mixture of experts",
    "mla": "multi-head latent attention (MLA)",
    "sliding-window": "sliding window (all layers, or 1 local : 1 global like Gemma 2)",
    "gemma3": "Gemma 3 / 4 local : global sliding window",
    "sinks": "sliding window with attention sinks (gpt-oss)",
    "chunked": "chunked-local attention (Llama 4)",
    "sliding-uneven": "sliding-window hybrid with an uneven local : global mix",
    "linear": "hybrid linear attention (Mamba / GDN / KDA)",
}

#: Engines whose allocation rule has no logged run in the oracle table: their tokens are modelled from source.
_CHECKED_ENGINES = ("vllm", "sglang")


def kv_family(record: Any) -> str:
    """The KV-cache family of one catalog record, a key of :data:`KV_FAMILIES`.

    Order: hybrid linear attention (``has_linear_attention`` or linear layers) > Llama 4 (``llama4*``
    text model type: chunked-local layers) > gpt-oss (``gpt_oss``: sliding window with sinks) > Gemma 3 / 4
    (``gemma3*`` / ``gemma4*``) > other sliding-window hybrids with unequal sliding and full layer counts >
    sliding window (every layer sliding, or as many sliding as full layers) > MLA (``is_mla``) > MoE
    (``is_moe`` with experts) > dense.
    """
    c = _cols(record)
    tmt = str(_text_model_type(c)[0])
    mt = str(c["model_type"][0])
    full, swa, lin = (float(x[0]) for x in _layer_counts(c))
    if bool(_flag(c["has_linear_attention"])[0]) or lin > 0:
        return "linear"
    if tmt.startswith("llama4") or mt.startswith("llama4"):
        return "chunked"
    if tmt.startswith("gpt_oss") or mt.startswith("gpt_oss"):
        return "sinks"
    if tmt.startswith(("gemma3", "gemma4")) or mt.startswith(("gemma3", "gemma4")):
        return "gemma3"
    if swa > 0 and full > 0 and swa != full:
        return "sliding-uneven"
    if swa > 0:
        return "sliding-window"
    if bool(_flag(c["is_mla"])[0]):
        return "mla"
    if bool(_flag(c["is_moe"])[0]) and _nz(c["num_experts"])[0] > 0:
        return "moe"
    return "dense"


@lru_cache(maxsize=4)
def _oracle_summary_cached(path: str, mtime: float) -> pd.DataFrame:
    return pd.read_csv(path)


def load_kv_oracle_summary(path: str | Path | None = None) -> pd.DataFrame:
    """The shipped oracle summary (:data:`KV_ORACLE_SUMMARY_CSV`) as a frame; empty when the file is
    missing or unreadable (the view then says no rule was checked)."""
    p = Path(path) if path is not None else KV_ORACLE_SUMMARY_CSV
    cols = ["oracle_id", "engine", "engine_version", "engine_generation", "model_id", "family", "gpu", "tp", "pp",
            "measured_tokens", "predicted_tokens", "miss", "source_url"]
    try:
        df = _oracle_summary_cached(str(p), p.stat().st_mtime)
    except (OSError, ValueError, pd.errors.ParserError):
        return pd.DataFrame(columns=cols)
    if not set(cols) <= set(df.columns):
        return pd.DataFrame(columns=cols)
    return df


def kv_evidence(record: Any, framework: str, summary: pd.DataFrame | None = None) -> dict[str, Any]:
    """Whether the KV-capacity rule for ``record`` under ``framework`` was checked against logged runs.

    ``summary`` defaults to :func:`load_kv_oracle_summary`. Only current-engine runs count (vLLM V1 and
    SGLang; the rows whose ``engine_generation`` is ``current``): legacy vLLM V0 runs are reported apart.

    Returns a dict: ``family`` (key of :data:`KV_FAMILIES`), ``family_label``, ``framework``,
    ``engine_checked`` (the engine's rule has at least one logged run, any family), ``engine_runs``,
    ``checked`` (at least one run of this family on this engine), ``runs`` (how many), ``oracle_ids``,
    ``sources`` (public log URLs), ``worst_miss`` (largest ``|predicted / measured - 1|`` of those runs, a
    fraction; None when unchecked), ``band_pct`` (the expected error band, whole percent: the worst miss
    rounded up; None when unchecked: "unknown, modelled from source"), ``legacy_runs`` (vLLM V0 runs of this
    family), ``status`` (``"checked"`` or ``"not yet checked against a log"``) and ``text`` (one plain
    sentence for the dashboard; untrusted parts none: it names only engines, families and numbers).
    """
    _check(framework, 1)
    fam = kv_family(record)
    s = load_kv_oracle_summary() if summary is None else summary
    eng = s.loc[s["engine"].astype(str) == framework] if len(s) else s
    current = eng.loc[eng["engine_generation"].astype(str) == "current"] if len(eng) else eng
    mine = current.loc[current["family"].astype(str) == fam] if len(current) else current
    legacy = eng.loc[(eng["engine_generation"].astype(str) != "current") & (eng["family"].astype(str) == fam)] \
        if len(eng) else eng
    misses = pd.to_numeric(mine["miss"], errors="coerce").abs().dropna() if len(mine) else pd.Series(dtype=float)
    checked = framework in _CHECKED_ENGINES and len(misses) > 0
    worst = float(misses.max()) if checked else None
    band = max(1, math.ceil(round(worst * 100, 6))) if worst is not None else None
    label = KV_FAMILIES[fam]
    engine_label = schema.FRAMEWORK_LABELS.get(framework, framework)
    n_engine = int(len(current)) if framework in _CHECKED_ENGINES else 0
    if checked:
        text = (f"{engine_label}'s rule for {label} was checked against {len(misses)} logged "
                f"run{'s' if len(misses) != 1 else ''}: within {worst:.1%} (expected error ±{band} %).")
    elif n_engine:
        text = (f"{label.capitalize()} on {engine_label}: not yet checked against a log (the rule was checked on "
                f"{n_engine} logged {engine_label} run{'s' if n_engine != 1 else ''} of other families); "
                "expected error unknown, modelled from source.")
    else:
        text = (f"{engine_label}: not yet checked against a log; expected error unknown, modelled from "
                "the engine's source.")
    return {
        "family": fam, "family_label": label, "framework": framework, "engine_checked": n_engine > 0,
        "engine_runs": n_engine, "checked": checked, "runs": int(len(misses)) if checked else 0,
        "oracle_ids": [str(x) for x in mine["oracle_id"]] if checked else [],
        "sources": list(dict.fromkeys(str(x) for x in mine["source_url"])) if checked else [],
        "worst_miss": worst, "band_pct": band, "legacy_runs": int(len(legacy)),
        "status": "checked" if checked else "not yet checked against a log", "text": text,
    }


# --------------------------------------------------------------------------------------------
# Per-GPU breakdown of one capacity() result
# --------------------------------------------------------------------------------------------
#: Parts of :func:`memory_breakdown`, in stacking order.
BREAKDOWN_PARTS = ("weights", "activation peak", "CUDA graphs", "non-torch", "reserve implied by your log",
                   "KV cache", "free")


def memory_breakdown(cap: Mapping[str, Any]) -> dict[str, Any]:
    """One GPU's memory, split into parts that sum to the card's memory, from a :func:`capacity` result.

    Parts (bytes per GPU, :data:`BREAKDOWN_PARTS`; a part the engine's rule does not charge is absent):

    * ``weights``: ``weight_bytes_per_gpu``.
    * ``activation peak``: vLLM, TensorRT-LLM, transformers, Megatron (``activation_bytes_per_gpu``).
    * ``CUDA graphs``: vLLM (``cuda_graph_bytes_per_gpu``).
    * ``non-torch``: vLLM, TensorRT-LLM, transformers native TP, Megatron (NCCL / cuBLAS workspaces);
      SGLang: the memory in use before the weights load plus the load extras
      (:data:`SGLANG_STARTUP_BYTES`, :data:`SGLANG_LOAD_EXTRA_BYTES`).
    * ``reserve implied by your log`` (calibrated only, replacing the three above): ``fraction x memory -
      weights - measured KV``, what the logged figure leaves for activations, graphs and non-torch memory.
    * ``KV cache``: ``kv_budget_bytes_per_gpu`` (0 when negative).
    * ``free``: the rest of the card, i.e. the share not given to the engine's pool (vLLM ``1 -
      gpu_memory_utilization``, SGLang ``1 - mem_fraction_static``: activations and graphs at run time).

    Returns ``{"parts": DataFrame(part, bytes, gib), "memory_bytes", "over_bytes" (how far the charged parts
    exceed the card, 0 when they fit), "calibrated"}``; the parts sum to ``memory_bytes`` whenever
    ``over_bytes`` is 0.
    """
    fw = str(cap["framework"])
    M = float(cap["memory_bytes"])

    def f(key: str) -> float:
        x = cap.get(key)
        return float(x) if x is not None and math.isfinite(float(x)) else 0.0

    W = f("weight_bytes_per_gpu")
    kv = max(f("kv_budget_bytes_per_gpu"), 0.0)
    calibrated = bool(cap.get("calibrated", False))
    parts: list[tuple[str, float]] = [("weights", W)]
    if calibrated:
        parts.append(("reserve implied by your log", max(f("reserve_bytes_per_gpu"), 0.0)))
    elif fw == "sglang":
        tp = int(cap.get("tp", 1) or 1)
        parts.append(("non-torch", (SGLANG_STARTUP_BYTES["tp"] if tp > 1 else SGLANG_STARTUP_BYTES["tp1"])
                      + SGLANG_LOAD_EXTRA_BYTES))
    else:
        parts.append(("activation peak", f("activation_bytes_per_gpu")))
        if fw == "vllm":
            parts.append(("CUDA graphs", f("cuda_graph_bytes_per_gpu")))
        if fw != "transformers-cb-cache":
            parts.append(("non-torch", f("non_torch_bytes_per_gpu")))
    parts.append(("KV cache", kv))
    used = sum(b for _, b in parts)
    parts.append(("free", max(M - used, 0.0)))
    frame = pd.DataFrame(parts, columns=["part", "bytes"])
    frame["gib"] = frame["bytes"] / GiB
    return {"parts": frame, "memory_bytes": M, "over_bytes": max(used - M, 0.0), "calibrated": calibrated}
