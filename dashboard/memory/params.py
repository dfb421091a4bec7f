"""Parameters of a model by part (attention, MLP, experts, embedding, vision, ...) and bytes per element of
each part's (quantized) format, plus the per-architecture weight-layout tables read from vLLM 0.33.0.

Pure: numpy only. Arrays are per model (the columns of :func:`~dashboard.memory.columns.model_columns`);
counts are parameters, ``*_bytes`` bytes per element. Sources in each docstring.
"""

from __future__ import annotations

import numpy as np

from dashboard import frameworks
from dashboard.memory.columns import WEIGHT_DTYPE_BYTES, head_dims, is_set, layer_counts, nz, text_model_type


#: Frameworks that keep a float32 checkpoint in float32 (the serving engines load it in 16-bit): derived
#: from each framework's ``keeps_fp32_weights``.
KEEP_FP32_FRAMEWORKS = frozenset(f.name for f in frameworks.all_frameworks() if f.keeps_fp32_weights)


def base_weight_bytes(c: dict[str, np.ndarray], framework: str) -> np.ndarray:
    """Unquantized tensor bytes: 2 (serving frameworks load float32 checkpoints in 16-bit; transformers
    and Megatron keep float32)."""
    fp32 = np.isin(c["torch_dtype"], ["float32", "fp32"])
    if frameworks.get(framework).keeps_fp32_weights:
        return np.where(fp32, 4.0, 2.0)
    return np.full(len(fp32), 2.0)


def quant_weight_bytes(c: dict[str, np.ndarray], base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes per quantized linear weight element, experts_only flag) from the checkpoint's config."""
    method, fmt = c["quant_method"], c["quant_format"]
    bits = c["quant_bits"]
    gs = np.where(nz(c["quant_group_size"], 128.0) > 0, nz(c["quant_group_size"], 128.0), np.inf)
    blk = c["weight_block_n"] * c["weight_block_k"]
    fp8_scale = np.where(np.isnan(blk), 0.0, 4.0 / blk)
    nvfp4 = np.char.find(fmt.astype(str), "nvfp4") >= 0
    nvfp4 |= np.char.find(method.astype(str), "fp4") >= 0
    mxfp4 = (method == "mxfp4") | (np.char.find(fmt.astype(str), "mxfp4") >= 0)
    fp8 = (method == "fp8") | (np.char.find(fmt.astype(str), "float-quantized") >= 0) | (np.char.find(fmt.astype(str), "fp8") >= 0)
    four_bit = (nz(bits) == 4) | np.isin(method, ["awq", "gptq", "bitsandbytes"])
    eight_bit = nz(bits) == 8
    out = np.select(
        [mxfp4, nvfp4, fp8, four_bit, eight_bit],
        [np.full_like(base, WEIGHT_DTYPE_BYTES["mxfp4"]), np.full_like(base, WEIGHT_DTYPE_BYTES["nvfp4"]),
         1.0 + fp8_scale, 0.5 + 2.5 / gs, np.ones_like(base)],
        default=base,
    )
    quantized = is_set(c["is_quantized"]) | (method != "")
    return np.where(quantized, out, base), mxfp4


#: Parts whose quantization the catalog describes (``quant_<part>_fraction`` / ``quant_<part>_format``,
#: see :mod:`dashboard.quant_coverage`).
QUANT_PARTS = ("attention", "linear_attention", "dense_mlp", "shared_experts", "experts", "lm_head", "router", "vision")


def format_bytes(fmt: np.ndarray, c: dict[str, np.ndarray], base: np.ndarray) -> np.ndarray:
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
    gs = np.where(nz(c["quant_group_size"], np.inf) > 0, nz(c["quant_group_size"], np.inf), np.inf)
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


def part_quant(c: dict[str, np.ndarray], base: np.ndarray, qb: np.ndarray,
                experts_only: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per part of :data:`QUANT_PARTS`: (quantized share 0-1, bytes per quantized element), 1-D arrays.

    Where the catalog derived the part's coverage (``quant_<part>_fraction`` not NA, see
    :mod:`dashboard.quant_coverage`) it is used with its ``quant_<part>_format``; otherwise the
    checkpoint-wide rule: every linear part quantized at ``qb`` (:func:`quant_weight_bytes`; MXFP4:
    the routed experts only), LM head, router and vision tower in 16-bit."""
    legacy_lin = np.where(experts_only | (qb == base), 0.0, 1.0)
    legacy = {"attention": legacy_lin, "linear_attention": legacy_lin, "dense_mlp": legacy_lin,
              "shared_experts": legacy_lin, "experts": np.where(qb == base, 0.0, 1.0),
              "lm_head": np.zeros_like(base), "router": np.zeros_like(base), "vision": np.zeros_like(base)}
    out = {}
    for part in QUANT_PARTS:
        f = c[f"quant_{part}_fraction"]
        qf = format_bytes(c[f"quant_{part}_format"], c, base)
        known = ~np.isnan(f)
        frac = np.where(known, np.clip(np.nan_to_num(f), 0.0, 1.0), legacy[part])
        qbytes = np.where(known & ~np.isnan(qf), qf, qb)
        out[part] = (frac, qbytes)
    return out


def mix_bytes(part: tuple[np.ndarray, np.ndarray], base: np.ndarray) -> np.ndarray:
    """Bytes per element of a part: quantized share x quantized bytes + the rest x 16-bit bytes."""
    f, q = part
    return f * q + (1.0 - f) * base


def global_attn(c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(full-attention layers with their own shapes, their head dim, their KV heads) per model.

    Gemma-4's full-attention layers use ``global_head_dim`` and ``num_global_key_value_heads``
    (vllm/model_executor/models/gemma4.py:365-437); elsewhere the count is 0 and the shapes are the
    ordinary ``head_dim`` / ``num_key_value_heads``."""
    hd, _ = head_dims(c)
    kv = np.where(np.isnan(c["num_key_value_heads"]), c["num_attention_heads"], c["num_key_value_heads"])
    full, _, _ = layer_counts(c)
    has = ~np.isnan(c["global_head_dim"]) | ~np.isnan(c["num_global_key_value_heads"])
    ghd = np.where(np.isnan(c["global_head_dim"]), hd, c["global_head_dim"])
    gkv = np.where(np.isnan(c["num_global_key_value_heads"]), kv, c["num_global_key_value_heads"])
    return np.where(has & ~is_set(c["is_mla"]), full, 0.0), ghd, gkv


def mlp_matrices(c: dict[str, np.ndarray]) -> np.ndarray:
    """Weight matrices per MLP / expert: 3 when gated (gate, up, down; also when unknown), 2 for
    non-gated activations such as Nemotron-H's relu2 (catalog ``mlp_gated``)."""
    return np.where(np.isnan(c["mlp_gated"]) | is_set(c["mlp_gated"]), 3.0, 2.0)


def _shared_intermediate(c: dict[str, np.ndarray]) -> np.ndarray:
    """Total shared-expert width per MoE layer (elements): ``shared_expert_intermediate_size``, else
    ``num_shared_experts x moe_intermediate_size``."""
    return np.where(np.isnan(c["shared_expert_intermediate_size"]),
                    nz(c["num_shared_experts"]) * nz(c["moe_intermediate_size"]), c["shared_expert_intermediate_size"])


def param_parts(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
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
    hd, vhd = head_dims(c)
    full, swa, lin = layer_counts(c)
    n_attn = full + swa
    n_glob, ghd, gkv = global_attn(c)
    n_loc = n_attn - n_glob
    is_mla = is_set(c["is_mla"])
    is_moe = is_set(c["is_moe"]) & (nz(c["num_experts"]) > 0)
    gate = np.where(is_set(c["attn_output_gate"]), 1.0, 0.0)
    embed = V * H
    lm_head = np.where(is_set(c["tie_word_embeddings"]), 0.0, V * H)
    # softmax attention (GQA/MHA): q (+ its output gate, models/qwen3_next.py:315-322) and o sharded by head,
    # k/v by KV head; Gemma-4 full-attention layers with their own head dim / KV heads. Query heads averaged
    # over the layers where they vary (Laguna, models/laguna.py:490-501), whose per-head gate projection
    # g_proj (hidden -> heads, ColumnParallelLinear, models/laguna.py:327-351) is split with them
    qh = np.where(np.isnan(c["num_attention_heads_mean"]), heads, c["num_attention_heads_mean"])
    head_gate = np.where(is_set(c["attn_head_gate"]), 1.0, 0.0)
    q_o = (n_loc * (H * qh * hd * (1 + gate) + qh * vhd * H + H * qh * head_gate)
           + n_glob * (H * qh * ghd * (1 + gate) + qh * ghd * H + H * qh * head_gate))
    kv_proj = n_loc * H * kv * (hd + vhd) + n_glob * H * gkv * 2 * ghd
    # MLA: q_a / kv_a latent projections replicated (vLLM ReplicatedLinear), the rest sharded
    ql = c["q_lora_rank"]
    mla_rep = n_attn * (np.where(np.isnan(ql), 0.0, H * ql + ql) + H * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) + c["kv_lora_rank"])
    mla_shard = n_attn * (np.where(np.isnan(ql), H * heads * hd, ql * heads * hd)
                     + c["kv_lora_rank"] * heads * (nz(c["qk_nope_head_dim"]) + vhd) + heads * vhd * H)
    # DeepSeek-V4 (vllm/models/deepseek_v4/attention.py:252-287): fused_wqa_wkv (hidden -> q_lora_rank +
    # one shared KV head) replicated (disable_tp) and quantized; wq_b, wo_a (grouped low-rank o) and
    # wo_b split over TP
    ol, og = c["o_lora_rank"], nz(c["o_groups"], 1.0)
    v4 = ~is_mla & ~np.isnan(ql) & ~np.isnan(ol)
    v4_qa = np.where(v4, n_attn * H * (nz(ql) + kv * hd), 0.0)
    v4_shard = n_attn * (nz(ql) * heads * hd + heads * vhd * nz(ol) + og * nz(ol) * H)
    attn_sharded = np.where(is_mla, mla_shard, np.where(v4, v4_shard, q_o))
    kv_proj = np.where(is_mla | v4, 0.0, kv_proj)
    mla_rep = np.where(is_mla, mla_rep, 0.0)
    # DSA indexer (vllm/models/deepseek_v32/attention.py:71-87): wq_b (q_lora_rank -> heads x dim) replicated and
    # quantized like the other linears; wk_weights_proj (hidden -> dim + heads) and k_norm replicated.
    # DeepSeek-V4's (deepseek_v4/attention.py:989-1045): wq_b likewise, weights_proj (hidden -> heads) and
    # its compressor (hidden -> 4 x dim, compressor.py:271-279) replicated in 16-bit
    n_idx = nz(c["num_indexer_layers"])
    inh, ihd = nz(c["index_n_heads"]), nz(c["index_head_dim"])
    idx_ok = (is_mla | v4) & (n_idx > 0) & ~np.isnan(ql)
    idx_q = np.where(idx_ok, n_idx * nz(ql) * inh * ihd, 0.0)
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
    v4_comp = np.where(v4, nz(c["num_compressor_layers"]) * 2 * H * hd + n_idx * 2 * H * hd, 0.0)
    # DeepSeek-V4 hyper-connections (deepseek_v4/nvidia/model.py:617-665, 883-903): float32, replicated
    m = nz(c["hc_mult"])
    mix = (2 + m) * m
    hc = np.where(m > 0, L * 2 * (mix * m * H + mix + 3) + m * m * H + m + 1, 0.0)
    # MoE (matrices per MLP: 3 when gated, 2 for non-gated activations such as Nemotron-H's relu2)
    mats = mlp_matrices(c)
    n_moe = np.where(np.isnan(c["num_moe_layers"]), L - nz(c["num_dense_layers"]), c["num_moe_layers"])
    n_moe = np.where(is_moe, n_moe, 0.0)
    E = nz(c["num_experts"])
    # latent MoE: experts run at moe_latent_size between two replicated hidden <-> latent projections
    # (vLLM ReplicatedLinear: nemotron_h.py:195-212 fc1/fc2_latent_proj, kimi_k3/nvidia/model.py:478-505)
    latent = c["moe_latent_size"]
    expert_h = np.where(np.isnan(latent), H, latent)
    experts = n_moe * E * mats * expert_h * nz(c["moe_intermediate_size"])
    moe_rep = n_moe * 2 * H * nz(latent)
    router = n_moe * H * E
    shared_i = _shared_intermediate(c)
    shared = n_moe * mats * H * shared_i
    # layers with a dense MLP: the catalog's count (hybrids: Mamba / attention-only blocks have none)
    n_dense = np.where(np.isnan(c["num_dense_layers"]) | ~is_moe, L - n_moe, c["num_dense_layers"])
    dense = n_dense * mats * H * nz(c["intermediate_size"])
    norms = (2 * L + 1) * H
    # GDN mixers (Qwen3-Next / Qwen3.5, models/qwen3_next.py GatedDeltaNet): in_proj_qkvz, in_proj_ba,
    # conv1d, A_log, dt_bias and out_proj split over TP; the gated norm (value head dim) replicated
    nk, nv = nz(c["linear_num_key_heads"]), nz(c["linear_num_value_heads"])
    dk, dv = nz(c["linear_key_head_dim"]), nz(c["linear_value_head_dim"])
    kc = nz(c["linear_conv_kernel_dim"], 4.0)
    gdn = c["linear_attention_kind"] == "gdn"
    gdn_shard = np.where(gdn, lin * (H * (2 * nk * dk + 2 * nv * dv) + H * 2 * nv + (2 * nk * dk + nv * dv) * kc
                                     + nv * dv * H + 2 * nv), 0.0)
    gdn_rep = np.where(gdn, lin * dv, 0.0)
    # learned absolute positions and row-parallel biases (o_proj / down_proj): whole on every rank;
    # the column-parallel biases (q/k/v, up) are split with their layers
    pos = nz(c["learned_position_embeddings"]) * H
    bias = is_set(c["linear_bias"])
    row_bias = np.where(bias, n_attn * H + (L - n_moe) * H, 0.0)
    col_bias = np.where(bias, n_attn * (qh * hd + 2 * kv * hd), 0.0)
    # Gemma-4 per-layer input embeddings (models/gemma4.py:1019-1052, 674-703): the table is
    # vocab-parallel (``ple_embed``, placed with the embedding), per_layer_model_projection column-parallel,
    # the per-layer gate / projection ReplicatedLinear (quantized like the other linears), norms replicated
    ple = nz(c["hidden_size_per_layer_input"])
    has_ple = (ple > 0) & ~np.isnan(c["vocab_size_per_layer_input"])
    ple_embed = np.where(has_ple, nz(c["vocab_size_per_layer_input"]) * L * ple, 0.0)
    ple_shard = np.where(has_ple, H * L * ple, 0.0)
    ple_rep_lin = np.where(has_ple, L * 2 * H * ple, 0.0)
    ple_rep = np.where(has_ple, L * H + ple, 0.0)
    replicated = pos + row_bias + idx_rep + gdn_rep + ple_rep + v4_comp
    vision = nz(c["params_vision"])
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
        # the pieces of sharded_mlp, for per-part quantization (:func:`part_quant`)
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
    vision = nz(c["params_vision"])
    rep = nz(c["params_vision_embed"])
    rep = rep + np.where(np.isin(c["model_type"], list(VISION_REPLICATED_CONNECTOR_MODEL_TYPES)),
                         nz(c["params_vision_connector"]), 0.0)
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


def shared_mlp_padding(c: dict[str, np.ndarray], framework: str, t: np.ndarray) -> np.ndarray:
    """Growth factor (models x tp) of the shared-expert MLP under :data:`BLOCK_PADDED_SHARED_MLP_MODEL_TYPES`
    (1 elsewhere, and for frameworks whose ``applies_architecture_weight_quirks`` is False: all but vLLM)."""
    one = np.ones((len(c["hidden_size"]), t.shape[-1]))
    if not frameworks.get(framework).applies_architecture_weight_quirks:
        return one
    mt = text_model_type(c)
    bn = c["weight_block_n"][:, None]
    ish = _shared_intermediate(c)[:, None]
    sel = (np.isin(mt, list(BLOCK_PADDED_SHARED_MLP_MODEL_TYPES))
           & (c["quant_shared_experts_format"] == "fp8-block"))[:, None] & ~np.isnan(bn) & (bn > 0) & (ish > 0)
    bn_ = np.where(sel, bn, 1.0)
    ish_ = np.where(sel, ish, 1.0)
    padded = np.ceil(np.floor(ish_ / bn_) / t) * bn_ * t
    return np.where(sel, np.maximum(padded, ish_) / ish_, one)


def router_bytes(c: dict[str, np.ndarray]) -> np.ndarray:
    """Bytes per router element: 4 for :data:`FP32_ROUTER_MODEL_TYPES`, else 0 (= the model dtype)."""
    mt = text_model_type(c)
    return np.where(np.isin(mt, list(FP32_ROUTER_MODEL_TYPES)), 4.0, 0.0)


def block_fp8(c: dict[str, np.ndarray]) -> np.ndarray:
    """Block-FP8 checkpoints (``fp8`` / compressed-tensors float with a ``weight_block_size``)."""
    fmt, method = c["quant_format"].astype(str), c["quant_method"]
    fp8 = (method == "fp8") | (np.char.find(fmt, "float-quantized") >= 0) | (np.char.find(fmt, "fp8") >= 0)
    return fp8 & ~np.isnan(c["weight_block_n"]) & ~np.isnan(c["weight_block_k"])


def fp8_moe_scale_count(c: dict[str, np.ndarray], moe_tp: np.ndarray,
                         intermediate: np.ndarray | None = None) -> np.ndarray:
    """float32 block scales per expert per rank of a block-FP8 MoE layer (models x tp).

    vLLM 0.33.0 ``Fp8MoEMethod.create_weights`` (``layers/quantization/fp8.py:619-632``): ``w13`` holds
    ``2 * ceil(I_p / block_n) * ceil(H / block_k)`` scales and ``w2`` ``ceil(H / block_n) * ceil(I_p /
    block_k)``, for ``I_p = moe_intermediate_size / moe_tp`` (``intermediate``, models x tp, replaces
    ``moe_intermediate_size`` when the architecture pads it, :func:`moe_intermediate_matrix`). When ``I_p`` is not a multiple of the
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
