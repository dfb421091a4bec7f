"""Parameter counts from the shapes (``params_total``, ``params_active``; plain counts, float64). The
convention (embedding, LM head unless tied, every decoder layer and the vision tower; MTP layers
excluded) is in :mod:`dashboard.catalog`'s docstring; each family formula cites its source.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.catalog.fields import Reader
from dashboard.catalog.quirks import NONGATED_ACTS, decilm_blocks, quirks_of


def _mlp_params(hidden: int, inter: int, gated: bool) -> int:
    return (3 if gated else 2) * hidden * inter


def fill_params(rec: dict, r: Reader, cfg: Mapping, notes: list[str]) -> None:
    """Parameter estimate from the shapes (see the module docstring for the convention)."""
    h = rec["hidden_size"]
    n = rec["num_hidden_layers"]
    heads = rec["num_attention_heads"]
    kv = rec["num_key_value_heads"]
    hd = rec["head_dim"]
    vocab = rec["vocab_size"]
    fam = quirks_of((rec["text_model_type"] or rec["model_type"] or "").lower())
    act = r.get("hidden_act") or r.get("activation_function") or r.get("mlp_hidden_act") or r.get("hidden_activation")
    gated = fam.gated_mlp and not (isinstance(act, str) and act in NONGATED_ACTS)
    if fam.nongated_when is not None and fam.nongated_when(r, notes):
        gated = False
    rec["mlp_gated"] = gated
    if not (h and n and vocab):
        return

    # --- attention mixer (per softmax-attention layer)
    attn = 0
    if rec["is_mla"] and heads:
        qk = (rec["qk_nope_head_dim"] or 0) + (rec["qk_rope_head_dim"] or 0)
        vd = rec["v_head_dim"] or 0
        ql = rec["q_lora_rank"]
        kvl = rec["kv_lora_rank"] or 0
        rope = rec["qk_rope_head_dim"] or 0
        q = (h * ql + ql + ql * heads * qk) if ql else h * heads * qk
        attn = q + h * (kvl + rope) + kvl + kvl * heads * ((rec["qk_nope_head_dim"] or 0) + vd) + heads * vd * h
        if r.get("mla_use_output_gate") is True:
            # Kimi-K3 MLA output gate: hidden -> heads x v_head_dim, fused with q_a / kv_a
            # (vLLM models/kimi_k3/nvidia/mla.py:220-250 fused_qkv_a_g_proj)
            attn += h * heads * vd
    elif heads and kv and hd:
        heads = rec["num_attention_heads_mean"] or heads  # q / o / gates: heads averaged over the layers
        vd = rec["v_head_dim"] or hd
        ql = r.int("q_lora_rank", fallback_top=False)
        q = (h * ql + ql * heads * hd) if ql else h * heads * hd
        ol = r.int("o_lora_rank", fallback_top=False)
        o = heads * vd * h
        if ol:
            og = r.int("o_groups", fallback_top=False) or 1
            # DeepSeek-V4 grouped low-rank output: og groups of (heads*vd/og -> ol), then og*ol -> hidden
            o = heads * vd * ol + og * ol * h
        # DeepSeek-V4 (o_lora_rank): one projection wkv serves as K and V (fused_wqa_wkv,
        # vllm/models/deepseek_v4/attention.py:252-258)
        attn = q + h * kv * hd + (0 if ol else h * kv * vd) + o
        if rec["attn_output_gate"]:
            attn += h * heads * hd  # q_proj emits heads x head_dim gate values too
        if rec["attn_head_gate"]:
            attn += h * heads  # g_proj: one gate per head
    attn_full = attn
    ghd, gkv = rec["global_head_dim"], rec["num_global_key_value_heads"]
    if (ghd or gkv) and heads and kv and hd and not rec["is_mla"]:
        # Gemma-4 full-attention layers: q/o of heads x global_head_dim, k and v of the global KV heads
        # (vLLM allocates v even for attention_k_eq_v, whose checkpoint ships k only: gemma4.py:90-118)
        g, gk = ghd or hd, gkv or kv
        attn_full = 2 * h * heads * g + 2 * h * gk * g
    if rec["linear_bias"] and heads and kv and hd:
        attn += heads * hd + 2 * kv * hd + h
        attn_full += heads * hd + 2 * kv * hd + h
    norms = 2 * h

    # --- linear mixers
    lin = 0
    kind = rec["linear_attention_kind"]
    if kind == "gdn":
        nk, nv = rec["linear_num_key_heads"] or 0, rec["linear_num_value_heads"] or 0
        dk, dv = rec["linear_key_head_dim"] or 0, rec["linear_value_head_dim"] or 0
        kc = rec["linear_conv_kernel_dim"] or 4
        conv_dim = 2 * nk * dk + nv * dv
        lin = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + conv_dim * kc + nv * dv * h + 2 * nv + dv
    elif kind == "kda":
        nh, d = rec["linear_num_value_heads"] or 0, rec["linear_value_head_dim"] or 0
        kc = rec["linear_conv_kernel_dim"] or 4
        proj = nh * d
        lin = 3 * h * proj + 3 * proj * kc + 2 * (h * d + d * proj) + h * nh + proj * h + 2 * nh
        lac = r.get("linear_attn_config")
        if isinstance(lac, Mapping) and lac.get("use_full_rank_gate") is True:
            # Kimi-K3 KDA: the output gate is one hidden -> heads x head_dim projection instead of the
            # low-rank g_a / g_b pair (vLLM models/kimi_k3/nvidia/kda.py:625-660, in_proj_qkvgfab)
            lin += h * proj - (h * d + d * proj)
    elif kind == "mamba2":
        nh, d = rec["linear_num_value_heads"] or 0, rec["linear_value_head_dim"] or 0
        g, s = rec["mamba_n_groups"] or 1, rec["ssm_state_size"] or 0
        kc = rec["linear_conv_kernel_dim"] or 4
        inner = nh * d
        lin = h * (2 * inner + 2 * g * s + nh) + (inner + 2 * g * s) * kc + inner * h + 3 * nh + inner

    # --- MLPs
    inter = rec["intermediate_size"]
    dense_mlp = _mlp_params(h, inter, gated) if inter else 0
    moe_total = moe_active = 0
    if rec["is_moe"]:
        e, k = rec["num_experts"] or 0, rec["num_experts_per_tok"] or 0
        mi = rec["moe_intermediate_size"] or 0
        latent = rec["moe_latent_size"]
        eh = latent or h
        one = _mlp_params(eh, mi, gated)
        proj = 2 * h * latent if latent else 0
        shared = _mlp_params(h, rec["shared_expert_intermediate_size"], gated) if rec["shared_expert_intermediate_size"] else 0
        router = h * e
        moe_total = e * one + shared + router + proj
        moe_active = k * one + shared + router + proj
        if r.get("enable_moe_block") is True:
            # Gemma 4: every MoE layer keeps its dense MLP next to the experts (Gemma4TextDecoderLayer)
            moe_total += dense_mlp
            moe_active += dense_mlp

    # --- per-layer kinds
    n_attn = (rec["num_full_attention_layers"] or 0) + (rec["num_sliding_window_layers"] or 0)
    n_lin = rec["num_linear_attention_layers"] or 0
    n_cross = rec["num_cross_attention_layers"] or 0
    n_moe = rec["num_moe_layers"] or 0 if rec["is_moe"] else 0
    n_dense = rec["num_dense_layers"] if rec["num_dense_layers"] is not None else n
    if not rec["is_moe"]:
        n_dense = n
    n_full = rec["num_full_attention_layers"] or 0
    mixers = (n_attn - n_full) * attn + n_full * attn_full + n_lin * lin + n_cross * attn
    if rec["num_indexer_layers"] and not rec["is_mla"] and not rec["q_lora_rank"] and rec["index_n_heads"]:
        # MiniMax-M3: index_q (heads x dim) and index_k (one head) in qkv_proj, plus their q / k norms
        inh, ihd = rec["index_n_heads"], rec["index_head_dim"]
        mixers += rec["num_indexer_layers"] * (h * inh * ihd + h * ihd + 2 * ihd)
    if rec["num_indexer_layers"] and rec["q_lora_rank"] and rec["is_mla"]:
        # DSA indexer (vllm/models/deepseek_v32/attention.py:71-87): wq_b q_lora_rank -> heads x dim, fused
        # wk + weights_proj hidden -> dim + heads, k_norm LayerNorm (weight and bias)
        inh, ihd = rec["index_n_heads"], rec["index_head_dim"]
        mixers += rec["num_indexer_layers"] * (rec["q_lora_rank"] * inh * ihd + h * (ihd + inh) + 2 * ihd)
    if rec["o_lora_rank"] and hd:
        # DeepSeek-V4 KV compressors (vllm/models/deepseek_v4/compressor.py:239-280): fused wkv + wgate,
        # hidden -> 2 x coff x head_dim (coff 2 on the overlapping ratio-4 layers), a norm; ape not counted
        n_c, n_i = rec["num_compressor_layers"] or 0, rec["num_indexer_layers"] or 0
        mixers += n_c * (2 * h * hd + hd) + n_i * 2 * h * hd
        if n_i and rec["index_n_heads"] and rec["index_head_dim"] and rec["q_lora_rank"]:
            # V4 indexer (attention.py:989-1045): wq_b, weights_proj (hidden -> heads), its own compressor
            inh, ihd = rec["index_n_heads"], rec["index_head_dim"]
            mixers += n_i * (rec["q_lora_rank"] * inh * ihd + h * inh + 4 * h * ihd + ihd)
    hc = rec["hc_mult"]
    if hc:
        # DeepSeek-V4 hyper-connections (vllm/models/deepseek_v4/nvidia/model.py:617-665, 883-903):
        # per layer hc_attn_* and hc_ffn_* = 2 x ((2 + m) m x m hidden + (2 + m) m + 3), head m x m hidden + m + 1
        mix = (2 + hc) * hc
        mixers += n * 2 * (mix * hc * h + mix + 3) + hc * hc * h + hc + 1
    if fam.short_conv_blocks:
        # LFM2 short-convolution blocks (Lfm2ShortConv): in_proj h -> 3*conv_dim, depthwise conv of
        # conv_L_cache taps, out_proj conv_dim -> h
        n_conv = n - n_attn - n_lin - n_cross
        cd = r.int("conv_dim", fallback_top=False) or h
        taps = r.int("conv_L_cache", fallback_top=False) or 3
        mixers += max(n_conv, 0) * (3 * h * cd + cd * taps + cd * h)
    hybrid_blocks = fam.hybrid_blocks or isinstance(r.get("hybrid_override_pattern"), str) or isinstance(r.get("layers_block_type"), list)
    if hybrid_blocks:
        # Nemotron-H: each block is one of mamba / attention / mlp / moe, one norm each
        mlp_blocks = rec["num_dense_layers"] or 0
        total = mixers + mlp_blocks * dense_mlp + n_moe * moe_total + n * h
        active = mixers + mlp_blocks * dense_mlp + n_moe * moe_active + n * h
    elif isinstance(r.get("block_configs"), list):
        total = active = decilm_blocks(r.get("block_configs"), h, heads or 0, hd or 0, notes) + n * norms
    else:
        total = mixers + n_dense * dense_mlp + n_moe * moe_total + n * norms
        active = mixers + n_dense * dense_mlp + n_moe * moe_active + n * norms
    if rec["linear_bias"] and inter:
        # up (and gate) and down biases of the dense MLPs
        b = (2 if gated else 1) * inter + h
        total += n_dense * b
        active += n_dense * b
    embed = vocab * h + (rec["learned_position_embeddings"] or 0) * h
    ple, ple_v = rec["hidden_size_per_layer_input"], rec["vocab_size_per_layer_input"]
    if ple and ple_v:
        # Gemma-4 PLE (vllm models/gemma4.py:1019-1052, 674-703): embed_tokens_per_layer (pv x n*ple),
        # per_layer_model_projection (h -> n*ple), its norm, and per layer a gate (h -> ple), a
        # projection (ple -> h) and a norm
        per_layer = 2 * h * ple + h
        total += n * per_layer
        active += n * per_layer
        embed += ple_v * n * ple + h * n * ple + ple
    head = 0 if rec["tie_word_embeddings"] else vocab * h
    pv = rec["params_vision"] or 0.0
    rec["params_total"] = float(total + embed + head + h) + pv
    rec["params_active"] = float(active + embed + head + h) + pv
    nextn = r.int("num_nextn_predict_layers", lo=0, fallback_top=False) or r.int("mtp_num_hidden_layers", lo=0, fallback_top=False)
    if nextn:
        notes.append(f"{nextn} MTP/nextn layer(s) not counted in params_total")
