"""vLLM 0.33.0's checks that differ by GPU platform (issue 23): the predicates of the rules
``vllm.attention_backend.*``, ``vllm.quantization.min_capability`` and ``vllm.kernel.fp8_moe_backend``
(declared, in construction order, in :mod:`dashboard.frameworks.vllm.rules_executed`). Each reads
``Ctx.platform`` (and ``Ctx.device_name`` for the messages that print the GPU). Pure.
"""

from __future__ import annotations

import numpy as np

from dashboard.rules.common import Ctx, not_multiple

#: Platforms whose attention-backend facts were executed (``data/conformance/attention/``).
ATTN_PLATFORMS = ("cuda-sm75", "cuda-sm80", "cuda-sm89", "cuda-sm90", "cuda-sm100", "cuda-sm120")


#: Catalog columns :func:`dashboard.frameworks.vllm.attention.layer_configs` reads.
_ATTN_COLUMNS = ("architectures", "model_type", "text_model_type", "torch_dtype", "num_full_attention_layers",
                 "num_sliding_window_layers", "kv_cache_quant", "quant_method", "bidirectional_attention",
                 "has_vision", "num_attention_heads", "is_mla", "kv_lora_rank", "qk_rope_head_dim",
                 "qk_nope_head_dim", "v_head_dim", "index_n_heads", "head_dim", "global_head_dim")


def _attention_first_errors(ctx: Ctx) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, the first attention-backend error vLLM raises on ``ctx.platform``: its raise site and message
    (both "" where every layer gets a backend, or the port cannot tell).
    :func:`dashboard.frameworks.vllm.attention.first_error`, per model and TP size (the TP size matters only
    through the MLA heads per rank)."""
    from dashboard.frameworks.vllm import attention as A

    def compute():
        sites = np.full(ctx.n, "", dtype=object)
        msgs = np.full(ctx.n, "", dtype=object)
        if A.facts(ctx.platform) is None:
            return sites, msgs
        cols = {c: ctx.models[c].tolist() if c in ctx.models.columns else [None] * ctx.n_models
                for c in _ATTN_COLUMNS}
        for m in range(ctx.n_models):
            rec = {c: v[m] for c, v in cols.items()}
            seen: dict = {}
            for j, tp in enumerate(ctx.tp_sizes):
                tp = int(tp)
                cfg_key = tp if rec.get("is_mla") is True else 0
                if cfg_key not in seen:
                    seen[cfg_key] = A.first_error(rec, ctx.platform, tp, ctx.device_name, ctx.kv_cache_dtype)
                e = seen[cfg_key]
                if e is not None and e.decided and e.message:
                    sites[m * ctx.n_tp + j] = e.site
                    msgs[m * ctx.n_tp + j] = e.message
        return sites, msgs

    return ctx.memo(("vllm.attention_first_errors", ctx.platform, ctx.device_name, ctx.kv_cache_dtype), compute)


def quant_min_capability(ctx: Ctx):
    """``vllm/config/vllm.py:927-935`` on ``ctx.platform``: per model (the layout does not matter)."""
    from dashboard import gpus
    from dashboard.frameworks.vllm import quantization as Q

    def per_model():
        cap = tuple(gpus.platform(ctx.platform).capability)
        if gpus.platform(ctx.platform).is_rocm:
            return np.full(ctx.n_models, "", dtype=object)
        cols = {c: ctx.models[c].tolist() if c in ctx.models.columns else [None] * ctx.n_models
                for c in ("quant_method", "quant_format", "architectures")}
        return np.array([Q.refusal({c: v[m] for c, v in cols.items()}, cap) for m in range(ctx.n_models)],
                        dtype=object)

    msgs = np.repeat(ctx.model_level(("vllm.quant_min_capability", ctx.platform), per_model), ctx.n_tp)
    return msgs != "", {"message": msgs}


def attention(site: str):
    def pred(ctx: Ctx):
        sites, msgs = _attention_first_errors(ctx)
        return sites == site, {"message": msgs}
    return pred


def fp8_moe_no_backend(ctx: Ctx):
    """``select_fp8_moe_backend`` (``fused_moe/oracle/fp8.py:398-546``) finds no kernel: the checkpoint block
    was refined to the TP shard (``refine_fp8_moe_block_shape``, ``oracle/fp8.py:293-317``), and "only
    Triton-based kernels can consume the refined block shape" -- whose FP8 needs SM 8.9 (no native FP8 below:
    Marlin, the FP8 path there, takes 128x128 blocks only). Raised ``NotImplementedError`` on CUDA."""
    from dashboard import gpus

    cap = tuple(gpus.platform(ctx.platform).capability)
    if gpus.platform(ctx.platform).is_rocm or cap >= (8, 9):
        return np.zeros(ctx.n, dtype=bool), {}
    applies, _ispp, refined = fp8_moe_block(ctx)
    return applies & refined, {}


def fp8_moe_block(ctx: Ctx) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Block FP8 fused MoE per cell: ``(applies, ispp, refined)`` -- block-FP8 experts whose MoE-TP divides the
    expert width, the per-partition width ``ispp`` (elements), and whether ``refine_fp8_moe_block_shape``
    (``fused_moe/oracle/fp8.py:293-317``, ``moe_backend="auto"``) refines the checkpoint block to
    ``gcd(block_n, block_k, ispp, hidden)`` (>= 32, needed when ispp is not a multiple of the block; Fp8Config
    only: compressed-tensors FP8 MoE validates without refining, ``compressed_tensors_moe_w8a8_fp8.py``)."""
    from dashboard.frameworks.vllm.rules_executed import fp8_mlp, moe_tp

    bn, bk = ctx.i("weight_block_n"), ctx.i("weight_block_k")
    mt = moe_tp(ctx)
    m = ctx.i("moe_intermediate_size")
    applies = fp8_mlp(ctx) & ctx.is_moe() & ctx.has("moe_intermediate_size") & ~not_multiple(m, mt)
    ispp = m // np.maximum(mt, 1)
    needed = not_multiple(ispp, bn) | ((mt > 1) & not_multiple(ispp, bk))
    hidden = ctx.i("hidden_size")
    g = np.gcd(np.gcd(np.gcd(np.maximum(bn, 1), np.maximum(bk, 1)), ispp), np.maximum(hidden, 1))
    refined = needed & (g >= 32) & ctx.str_in("quant_method", ("fp8",))
    return applies, ispp, refined
