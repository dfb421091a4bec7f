"""Weight bytes per rank: the expert layout (EP / MoE-TP), the per-part shards and the pipeline stage that
holds the most (:func:`weight_bytes_per_rank`, formulas and sources in its docstring).

Pure: numpy only. ``weight_bytes_matrix`` takes the columns of :func:`~dashboard.memory.columns.model_columns`
and returns bytes per rank, shape ``(models, len(tp))``, NaN where shapes are unknown.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from dashboard import frameworks, sharding
from dashboard.memory.columns import (UNQUANTIZED_WEIGHT_DTYPES, WEIGHT_DTYPE_BYTES, check_sizes, dtype_bytes,
                                      head_dims, is_set, model_columns, nz, text_model_type)
from dashboard.memory.kv import attention_tp, kv_heads_per_rank
from dashboard.memory.params import (MOE_MIN_INTERMEDIATE_PER_PARTITION, MXFP4_MOE_ALIGN, QUANT_PARTS,
                                     REPLICATED_DENSE_MLP_MODEL_TYPES, VISION_ENCODER_DP_MODEL_TYPES,
                                     VISION_HEADS_DP_FALLBACK_MODEL_TYPES, base_weight_bytes, block_fp8,
                                     fp8_moe_scale_count, global_attn, mix_bytes, mlp_matrices, param_parts,
                                     part_quant, quant_weight_bytes, router_bytes, shared_mlp_padding)


def moe_layout(framework: str, t: np.ndarray, *, ep: int = 1, dp: int = 1,
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
        if frameworks.get(framework).moe_tp_spans_dp:
            gen_e, gen_mt = np.where(e == 1, 1.0, gen_e), np.where(e == 1, t * d, gen_mt)
        return np.where(epf, t * d, gen_e), np.where(epf, 1.0, gen_mt)
    d = float(max(int(dp), 1))
    if expert_parallel:
        return t * d, np.ones_like(t)
    e = float(max(int(ep), 1))
    if e == 1 and frameworks.get(framework).moe_tp_spans_dp:
        return np.ones_like(t), t * d
    return np.full_like(t, e), np.maximum(1.0, np.floor(t / e))


def moe_intermediate_matrix(c: dict[str, np.ndarray], framework: str, t: np.ndarray, *,
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
    if not frameworks.get(framework).applies_architecture_weight_quirks or (np.ndim(expert_parallel) == 0 and expert_parallel):
        return inter
    mt = text_model_type(c)
    lo = np.array([float(MOE_MIN_INTERMEDIATE_PER_PARTITION.get(str(m), (np.nan,))[0]) for m in mt])[:, None]
    pad = ~np.isnan(lo) & (t > 1) & (np.floor(inter / t) < lo) & ~np.asarray(expert_parallel, dtype=bool)
    return np.where(pad, lo * t, inter)


_PARTS_MEMO: "OrderedDict[tuple, tuple]" = OrderedDict()
_PARTS_LOCK = threading.Lock()


def _checkpoint_weight_parts(c: dict[str, np.ndarray], framework: str) -> tuple:
    """(``param_parts``, base bytes, quantized bytes, experts-only flag, ``part_quant``) of the
    checkpoint's own dtypes: they depend on the models alone, so they are memoized per columns dict (the
    planner reuses one dict for a model across GPU counts and frameworks). The entry holds ``c`` itself, so
    its ``id`` cannot be reused while the entry lives; the columns dicts are never changed in place."""
    key = (id(c), frameworks.get(framework).keeps_fp32_weights)
    with _PARTS_LOCK:
        hit = _PARTS_MEMO.get(key)
        if hit is not None and hit[0] is c:
            _PARTS_MEMO.move_to_end(key)
            return hit[1]
    p = param_parts(c)
    base = base_weight_bytes(c, framework)
    qb, experts_only = quant_weight_bytes(c, base)
    out = (p, base, qb, experts_only, part_quant(c, base, qb, experts_only))
    with _PARTS_LOCK:
        _PARTS_MEMO[key] = (c, out)
        while len(_PARTS_MEMO) > 32:
            _PARTS_MEMO.popitem(last=False)
    return out


def weight_bytes_matrix(c: dict[str, np.ndarray], framework: str, tp: np.ndarray, *, pp: int = 1,
                         ep: int = 1, weight_dtype: str | None = None, dp: int = 1,
                         dp_attention: bool = False, expert_parallel: bool = False,
                         vision_dp: bool = False) -> np.ndarray:
    """Weight bytes per rank on the most loaded pipeline stage, shape (models, len(tp))."""
    fw = frameworks.get(framework)
    tp = np.atleast_1d(np.asarray(tp, dtype=np.float64))
    t = tp[None, :]
    atp = attention_tp(framework, tp.astype(np.int64), dp, dp_attention).astype(np.float64)[None, :]
    if weight_dtype is None:
        p, base, qb, experts_only, pq = _checkpoint_weight_parts(c, framework)
    else:
        p = param_parts(c)
        base = base_weight_bytes(c, framework)
        qb = np.full_like(base, dtype_bytes(weight_dtype, WEIGHT_DTYPE_BYTES, "weight_dtype"))
        if str(weight_dtype).strip().lower() in UNQUANTIZED_WEIGHT_DTYPES:
            # ``--dtype float32`` / ``float16``: every tensor (embedding, LM head, norms too) is in it
            base = qb.copy()
        experts_only = np.zeros(len(base), dtype=bool)
        one, zero = np.ones_like(base), np.zeros_like(base)
        pq = {k: ((zero if k in ("lm_head", "router", "vision") else one), qb) for k in QUANT_PARTS}
    # bytes per element of each part (models, 1): quantized share at its format, the rest 16-bit
    attn_b = mix_bytes(pq["attention"], base)[:, None]
    dense_b = mix_bytes(pq["dense_mlp"], base)[:, None]
    shared_b = mix_bytes(pq["shared_experts"], base)[:, None]
    # the unexplained remainder (linear-attention projections, DSA indexer, ...) follows the layers'
    # token mixer: the linear-attention part when the model has one, else the attention part
    has_lin = (is_set(c["has_linear_attention"]) | (nz(c["num_linear_attention_layers"]) > 0))
    other_b = np.where(has_lin, mix_bytes(pq["linear_attention"], base), mix_bytes(pq["attention"], base))[:, None]
    base_ = base[:, None]
    col = lambda k: p[k][:, None]  # noqa: E731
    # vocab-parallel embedding / LM head: vLLM and SGLang pad the vocabulary to a multiple of 64
    V = c["vocab_size"][:, None]
    vpad = fw.vocab_pad_multiple
    Vp = sharding.pad_to_multiple(np.nan_to_num(V).astype(np.int64), vpad).astype(np.float64) if vpad > 1 else V
    Vp = np.where(np.isnan(V), np.nan, Vp)
    vocab_rows = np.ceil(Vp / t)
    H = c["hidden_size"][:, None]
    sc = col("scale")
    embed_r = vocab_rows * H * base_ * sc
    # Gemma-4 per-layer embedding table: vocab-parallel like the embedding, padded the same way
    Vl = c["vocab_size_per_layer_input"][:, None]
    Vlp = sharding.pad_to_multiple(np.nan_to_num(Vl).astype(np.int64), vpad).astype(np.float64) if vpad > 1 else Vl
    ple_w = np.where(np.isnan(Vl) | (col("ple_embed") == 0), 0.0, col("ple_embed") / np.where(np.isnan(Vl) | (Vl == 0), 1.0, Vl))
    embed_r = embed_r + np.ceil(np.nan_to_num(Vlp) / t) * ple_w * base_
    lm_r = np.where(col("lm_head") > 0, vocab_rows * H * mix_bytes(pq["lm_head"], base)[:, None] * sc, 0.0)
    # attention: heads split over attention-TP; KV heads per rank with replication
    kvr = kv_heads_per_rank(c, framework, atp[0].astype(np.int64))
    hd, vhd = head_dims(c)
    n_glob, ghd, gkv = global_attn(c)
    gkvr = kv_heads_per_rank({**c, "num_key_value_heads": gkv}, framework, atp[0].astype(np.int64))
    kv_layers = (col("n_attn") - n_glob[:, None]) * H * kvr * (hd + vhd)[:, None] + n_glob[:, None] * H * gkvr * 2 * ghd[:, None]
    # MLA and DeepSeek-V4 (its one KV head is in the replicated fused_wqa_wkv) have no k/v projections
    kv_r = np.where(is_set(c["is_mla"])[:, None] | (col("kv_proj") == 0), 0.0, kv_layers * attn_b * sc)
    # MiniMax-M3's index_q heads follow the KV heads per rank (replicated with them above TP = KV heads)
    kv_tot = c["num_key_value_heads"][:, None]
    kv_r = kv_r + np.where(col("index_kv") > 0, col("index_kv") * kvr / np.where(kv_tot > 0, kv_tot, 1.0) * attn_b, 0.0)
    attn_r = col("attn_sharded") / atp * attn_b + col("mla_replicated") * attn_b
    # experts: ceil(E / ep) experts per EP rank, each split over moe_tp
    e, moe_tp = moe_layout(framework, t, ep=ep, dp=dp, expert_parallel=expert_parallel)
    E = col("num_experts")
    per_expert = np.where(E > 0, col("experts") / np.where(E > 0, E, 1.0), 0.0)
    local_experts = np.ceil(E / e)
    # architectures that pad a thin per-rank expert shard (:func:`moe_intermediate_matrix`)
    I_moe = c["moe_intermediate_size"][:, None]
    I_eff = moe_intermediate_matrix(c, framework, t, expert_parallel=expert_parallel)
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
    mats_ = mlp_matrices(c)[:, None]
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
    blk_fp8 = (np.where(known_e, experts_fmt == "fp8-block", block_fp8(c)) & (weight_dtype is None))[:, None]
    scales = fp8_moe_scale_count(c, moe_tp, I_eff)
    experts_fp8 = local_experts * (per_expert / moe_tp * 1.0 + scales * 4.0)
    experts_q = np.where(blk_fp8 & (E > 0), experts_fp8, experts_q)
    experts_r = ef * experts_q + (1.0 - ef) * local_experts * per_expert / moe_tp * base_
    rf, rq = pq["router"]
    router_r = col("router") * (rf * rq + (1.0 - rf) * np.maximum(base, router_bytes(c)))[:, None]
    # latent-MoE projections, whole on every rank, quantized like the shared experts' linears
    moe_rep_r = col("moe_replicated") * shared_b
    lin_attn_b = mix_bytes(pq["linear_attention"], base)[:, None]
    shared_pad = shared_mlp_padding(c, framework, t) if weight_dtype is None else 1.0
    dense_rep = (np.isin(text_model_type(c), list(REPLICATED_DENSE_MLP_MODEL_TYPES))
                 if fw.applies_architecture_weight_quirks else np.zeros(len(base), bool))[:, None]
    mlp_r = (col("dense_mlp") * dense_b / np.where(dense_rep, 1.0, t)
             + (col("shared_mlp") * shared_b * shared_pad + col("other") * other_b
                + col("gdn_shard") * lin_attn_b + col("ple_shard") * dense_b + col("col_bias") * base_) / t)
    norms_r = col("norms") * base_
    # replicated on every rank: 16-bit tensors (positions, row-parallel biases, DSA wk_weights_proj) and
    # replicated linears that follow the checkpoint's quantization (DSA wq_b); see param_parts
    rep_r = col("replicated") * base_ + col("replicated_linear") * attn_b + col("replicated_fp32") * 4.0
    # vision tower: split over TP except its patch / position embeddings (and the towers vLLM never
    # splits, _vision_replicated), or whole on every rank under ``mm_encoder_tp_mode="data"``
    # (and on vLLM for the architectures that fall back to it when the vision heads do not divide TP)
    vdp = (np.isin(c["model_type"], list(VISION_ENCODER_DP_MODEL_TYPES)) if vision_dp else np.zeros(len(base), bool))[:, None]
    if fw.applies_architecture_weight_quirks:
        vh = c["vision_num_heads"][:, None]
        vdp = vdp | (np.isin(c["model_type"], list(VISION_HEADS_DP_FALLBACK_MODEL_TYPES))[:, None]
                     & ~np.isnan(vh) & (np.mod(nz(vh, 1.0), t) != 0))
    v_rep = col("vision_replicated")
    vision_r = ((col("vision") - v_rep) / np.where(vdp, 1.0, t) + v_rep) * mix_bytes(pq["vision"], base)[:, None]
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


def rope_cache_bytes(c: dict[str, np.ndarray], framework: str) -> np.ndarray:
    """Bytes of the rotary cos/sin cache on every rank and pipeline stage, shape (models,): 0 unless the framework
    charges it (``Framework.charges_rope_cache``: vLLM). ``max_position_embeddings x rotary dim`` (MLA:
    ``qk_rope_head_dim``, else ``head_dim``) x 2 B (the 16-bit model dtype): vLLM's ``RotaryEmbedding``
    registers it as a GPU buffer at init (``rotary_embedding/base.py:58-63`` of 0.33.0, one per distinct rope,
    ``get_rope``'s ``_ROPE_DICT``), so "Model loading took" counts it: 32 MiB for Llama-3.1's 131,072
    positions, 2.5 GiB for Llama-4-Scout's 10,485,760. None with learned absolute positions. Not a parameter
    (``weight_bytes_per_rank`` leaves it out); partial rotary factors and a second (local) rope are not
    modelled."""
    if not frameworks.get(framework).charges_rope_cache:
        return np.zeros(len(c["hidden_size"]))
    rdim = np.where(is_set(c["is_mla"]), nz(c["qk_rope_head_dim"]), nz(c["head_dim"]))
    return np.where(nz(c["learned_position_embeddings"]) > 0, 0.0, nz(c["max_position_embeddings"]) * rdim * 2.0)


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
    * routed experts (:func:`moe_layout`, vLLM 0.33.0 ``layers/fused_moe/config.py:1198-1243``):
      without expert parallelism vLLM splits every expert over MoE-TP = ``tp * dp`` ranks (TP flattened
      across DP); with ``expert_parallel=True`` (``--enable-expert-parallel``) EP = ``tp * dp`` and rank
      0 holds ``ceil(num_experts / EP)`` whole experts (``determine_expert_map``,
      ``layers/fused_moe/expert_map_manager.py:67-69``: the first ``E % EP`` ranks get one more). An
      explicit ``ep`` > 1 without the flag keeps the generic layout (EP ``ep``, MoE-TP ``tp // ep``).
      Block-FP8 experts are 1 B per weight plus float32 scales on the per-partition block grid, refined
      to ``gcd`` blocks when the shard is not a block multiple (:func:`fp8_moe_scale_count`,
      ``quantization/fp8.py:554-632``). Each expert is ``3`` (gated, catalog ``mlp_gated``) or ``2``
      matrices of ``moe_latent_size`` (when set, else ``hidden_size``) x ``moe_intermediate_size``;
      :data:`MOE_MIN_INTERMEDIATE_PER_PARTITION` architectures (KimiMoE) widen the intermediate size to
      ``min * tp`` when plain TP would cut it below ``min`` per rank (:func:`moe_intermediate_matrix`);
    * latent-MoE projections (``2 * hidden * moe_latent_size`` per MoE layer: Nemotron-H
      ``fc1/fc2_latent_proj``, Kimi-K3 ``routed_expert_down/up_proj``) are ``ReplicatedLinear``: whole
      on every rank, TP and DP alike;
    * router replicated, in float32 for :data:`FP32_ROUTER_MODEL_TYPES` (``GateLinear(params_dtype=
      torch.float32)``), else the model dtype; shared experts and dense MLPs split over TP;
    * norms replicated, and whole on every rank as well (see :func:`param_parts`): learned position
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
    part costs ``share x format bytes + (1 - share) x 16-bit bytes`` (:func:`format_bytes`: NVFP4
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
    table (``tests/memory/test_memory_conformance.py``: within 1 % except the documented expected misses).

    Returns ``nan`` when the record lacks shapes. Raises ``ValueError`` for an unknown framework /
    dtype or ``tp < 1``.
    """
    tp, pp, ep, dp = check_sizes(framework, tp, pp=pp, ep=ep, dp=dp)
    c = model_columns(record)
    return float(weight_bytes_matrix(c, framework, np.array([tp]), pp=pp, ep=ep, weight_dtype=weight_dtype,
                                      dp=dp, dp_attention=dp_attention, expert_parallel=expert_parallel,
                                      vision_dp=vision_dp)[0, 0])
