"""Shared pieces of the memory model: the catalog columns it reads (as float / text arrays), dtype sizes and
the argument checks. Pure: numpy / pandas only.

Units: bytes; ``GiB`` = 2**30 bytes. Columns come from :mod:`dashboard.records` (``frame``) and are kept as
1-D arrays, one entry per model (NaN = unknown), so every formula runs over a whole catalog at once.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dashboard import records, schema, sharding

GiB = 1 << 30
MiB = 1 << 20

#: Bytes per element of a KV-cache dtype name.
KV_DTYPE_BYTES: dict[str, float] = {
    "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "half": 2, "fp32": 4, "float32": 4,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1,
}

#: Bytes per weight element of a (quantized) weight format, scales included where fixed.
#: 4-bit group formats add their per-group scales in :func:`quant_weight_bytes`.
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
def model_columns(obj: Any) -> dict[str, np.ndarray]:
    """Columns needed by the memory model as 1-D arrays (float64 with NaN for numbers/flags)."""
    df = records.frame(obj)
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


def nz(x: np.ndarray, default: float = 0.0) -> np.ndarray:
    """``x`` with NaN replaced by ``default`` (same shape, float)."""
    return np.where(np.isnan(x), default, x)


def is_set(x: np.ndarray) -> np.ndarray:
    """A flag column of :func:`model_columns` (1.0 / 0.0 / NaN) as bool; NaN (unknown) is False."""
    return nz(x, 0.0) > 0.5


def text_model_type(c: dict[str, np.ndarray]) -> np.ndarray:
    """The language model's ``model_type`` (catalog ``text_model_type``, else ``model_type``)."""
    return c["text_model_type"] if "text_model_type" in c else c["model_type"]


def cdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Ceil division on float arrays (NaN propagates)."""
    return np.ceil(a / b)


def layer_counts(c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(full-attention layers, sliding-window layers, linear/SSM layers) per model."""
    L = c["num_hidden_layers"]
    swa = nz(c["num_sliding_window_layers"])
    lin = nz(c["num_linear_attention_layers"])
    full = np.where(np.isnan(c["num_full_attention_layers"]), L - swa - lin, c["num_full_attention_layers"])
    return np.maximum(full, 0), swa, lin


def head_dims(c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(K head dim, V head dim) per model: ``head_dim`` (else ``hidden_size / num_attention_heads``) and
    ``v_head_dim`` (else the K head dim)."""
    hd = c["head_dim"]
    hd = np.where(np.isnan(hd), c["hidden_size"] / c["num_attention_heads"], hd)
    vhd = np.where(np.isnan(c["v_head_dim"]), hd, c["v_head_dim"])
    return hd, vhd


def dtype_bytes(name: str, table: Mapping[str, float], what: str) -> float:
    """Bytes per element of dtype ``name`` (case-insensitive) in ``table`` (:data:`KV_DTYPE_BYTES` /
    :data:`WEIGHT_DTYPE_BYTES`). Raises ValueError naming ``what`` and the known names otherwise."""
    key = str(name).strip().lower()
    if key not in table:
        raise ValueError(f"unknown {what} {name!r}; expected one of {sorted(table)}")
    return float(table[key])


def check_sizes(framework: str, tp: Any, **sizes: Any) -> list[int]:
    """Validate the framework and the parallel sizes; return ``[tp, *sizes.values()]`` as ints.

    Every size must be a whole number in ``1 .. sharding.MAX_PARALLEL`` (ValueError naming it otherwise:
    ``tp=4.5`` or ``pp=0`` used to be divided by, truncated or silently clamped)."""
    from dashboard import frameworks

    frameworks.get(framework)  # ValueError naming the known frameworks
    return [sharding.parallel_size(tp, "tp"), *(sharding.parallel_size(v, k) for k, v in sizes.items())]


def check_context_len(context_len: Any) -> int:
    """Tokens per sequence: a whole number >= 1 (0 gave NaN bytes, negatives negative sequences)."""
    return sharding.parallel_size(context_len, "context_len", hi=1 << 40)


def check_measured(x: Any) -> float | None:
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


def check_fraction(frac: Any) -> float:
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
