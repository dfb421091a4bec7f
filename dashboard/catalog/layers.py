"""Layer counts of one config: full / sliding-window / linear-attention / cross-attention / short-conv
layers and the window (:func:`fill_layers`), MoE shapes (:func:`fill_moe`) and linear-attention / SSM
heads (:func:`fill_linear`). Writes into a record and notes every inference.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.catalog.aliases import MAX_HEADS
from dashboard.catalog.values import as_int, clean_str, short_repr
from dashboard.catalog.fields import per_layer_int, Reader
from dashboard.catalog.quirks import quirks_of


def fill_layers(rec: dict, r: Reader, notes: list[str]) -> None:
    """Counts of full / sliding / linear / cross-attention layers and the window."""
    n = rec["num_hidden_layers"]
    fam = quirks_of((rec["text_model_type"] or rec["model_type"] or "").lower())
    window = r.int("sliding_window", hi=1 << 40, fallback_top=False)
    use_sw = r.get("use_sliding_window")
    full = sliding = linear = 0
    cross = 0
    conv = 0  # LFM2 gated short-convolution blocks: no heads, no KV cache, not linear attention
    decided = False

    cal = r.get("cross_attention_layers")
    if isinstance(cal, list):
        cross = len(cal)

    lt = r.get("layer_types")
    lbt = r.get("layers_block_type")
    hop = r.get("hybrid_override_pattern")
    lac = r.get("linear_attn_config")
    if isinstance(lt, list) and lt:
        for t in lt:
            s = str(t).lower() if isinstance(t, str) else ""
            if s in ("conv", "short_conv", "shortconv"):
                conv += 1
            elif "linear" in s or "mamba" in s or "ssm" in s or "kda" in s or "gdn" in s or "delta" in s:
                linear += 1
            elif "sliding" in s or "local" in s or "chunk" in s or "swa" in s:
                sliding += 1
            elif s:
                full += 1
            else:
                notes.append("layer_types has a non-string entry")
                full += 1
        decided = True
        if n is not None and len(lt) != n:
            notes.append(f"layer_types has {len(lt)} entries for {n} layers")
    elif isinstance(lbt, list) and lbt:
        for t in lbt:
            s = str(t).lower()
            if s in ("mamba", "m", "ssm", "linear_attention"):
                linear += 1
            elif s in ("attention", "*", "full_attention"):
                full += 1
        decided = True
    elif isinstance(hop, str) and hop:
        hop = hop[:100000]
        linear = hop.count("M")
        full = hop.count("*")
        decided = True
        if n is not None and len(hop) != n:
            notes.append(f"hybrid_override_pattern has {len(hop)} entries for {n} layers")
    elif isinstance(lac, Mapping) and (lac.get("kda_layers") is not None or lac.get("full_attn_layers") is not None):
        kda = lac.get("kda_layers")
        fal = lac.get("full_attn_layers")
        linear = len(kda) if isinstance(kda, list) else 0
        full = len(fal) if isinstance(fal, list) else ((n or 0) - linear)
        decided = True
    elif n is not None and isinstance(r.get("full_attn_idxs"), list):
        # LFM2: attention only at these indices; every other block is a gated short convolution
        idx = {i for i in r.get("full_attn_idxs") if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n}
        full = len(idx)
        conv = n - full
        decided = True
    elif isinstance(r.get("hybrid_layer_pattern"), list):
        pat = r.get("hybrid_layer_pattern")
        sliding = sum(1 for x in pat if x == 1)
        full = len(pat) - sliding
        decided = True
        notes.append("hybrid_layer_pattern: 1 = sliding-window layer, 0 = full attention")
    elif isinstance(r.get("compress_ratios"), list) and n:
        cr = r.get("compress_ratios")[:n]
        sliding = sum(1 for x in cr if x == 0)
        full = len(cr) - sliding
        decided = True
        notes.append("compress_ratios: ratio 0 = sliding-window-only layer; compressed (ratio > 0) layers counted as full")
    elif n is not None and isinstance(r.get("full_attention_interval"), int) and r.get("full_attention_interval") > 0:
        k = r.get("full_attention_interval")
        full = sum(1 for i in range(n) if (i + 1) % k == 0)
        linear = n - full
        decided = True
        notes.append(f"layer kinds from full_attention_interval={k}")
    elif n is not None and window is not None and use_sw is not False:
        pat = r.get("sliding_window_pattern")
        if isinstance(pat, int) and not isinstance(pat, bool) and pat > 0:
            full = sum(1 for i in range(n) if (i + 1) % pat == 0)
            sliding = n - full
            notes.append(f"layer kinds from sliding_window_pattern={pat}")
        elif isinstance(pat, str) and pat:
            p = pat[:1000]
            seq = [p[i % len(p)] for i in range(n)]
            full = sum(1 for c in seq if c.upper() == "G")
            sliding = n - full
            notes.append(f"layer kinds from sliding_window_pattern={short_repr(pat, 20)}")
        elif fam.alternating_sliding:
            sliding = sum(1 for i in range(n) if (i + 1) % 2)
            full = n - sliding
            notes.append("gemma2: sliding and full layers alternate")
        elif use_sw is True and isinstance(r.get("max_window_layers"), int):
            mwl = max(0, min(n, r.get("max_window_layers")))
            sliding = n - mwl
            full = mwl
            notes.append(f"use_sliding_window: layers >= max_window_layers={mwl} slide")
        else:
            sliding = n
            notes.append("sliding_window set without a layer pattern: all layers assumed sliding-window")
        decided = True
    if window is not None and use_sw is False:
        notes.append(f"sliding_window={window} ignored (use_sliding_window is false)")
        window = None
    bc = r.get("block_configs")
    if not decided and n is not None and isinstance(bc, list) and bc:
        # DeciLM / Nemotron-NAS: some blocks have no attention at all (no_op / replaced by a linear layer)
        full = sum(1 for b in bc if isinstance(b, Mapping) and isinstance(b.get("attention"), Mapping)
                   and not b["attention"].get("no_op") and not b["attention"].get("replace_with_linear"))
        decided = True
        if full != n:
            notes.append(f"block_configs: {n - full} of {n} blocks have no attention")
    if not decided and n is not None:
        chunk = r.int("attention_chunk_size", fallback_top=False)
        if chunk and fam.chunked_local_attention:
            # Llama 4: RoPE layers use chunked local attention, NoPE layers are global; no_rope_layers
            # (1 = RoPE) defaults to every 4th layer being NoPE (transformers Llama4TextConfig)
            nrl = r.get("no_rope_layers")
            if isinstance(nrl, list) and len(nrl) == n:
                sliding = sum(1 for x in nrl if x == 1)
                full = n - sliding
            else:
                full = sum(1 for i in range(n) if (i + 1) % 4 == 0)
                sliding = n - full
            window = chunk
            notes.append(f"llama4 chunked attention (chunk {chunk}) counted as sliding-window layers")
        else:
            full = n
        decided = True
    if cross and n is not None and full >= cross:
        full -= cross
        notes.append(f"{cross} cross-attention layers included in num_hidden_layers")
    if n is None and not decided:
        return
    if conv:
        notes.append(f"{conv} of {n} layers are gated short-convolution blocks (conv_L_cache="
                     f"{short_repr(r.get('conv_L_cache'), 10)}): no attention heads, no KV cache; counted in no attention column")
    if sliding and window is None:
        notes.append("sliding-window layers but no sliding_window size")
    rec["num_full_attention_layers"] = full
    rec["num_sliding_window_layers"] = sliding
    rec["num_linear_attention_layers"] = linear
    rec["num_cross_attention_layers"] = cross
    rec["sliding_window"] = window if sliding else None
    bidi, _ = r.raw("use_bidirectional_attention", fallback_top=False, tf=False)
    if isinstance(bidi, bool):  # some configs (e.g. Laguna) give a flag, not Gemma's "vision" / "all"
        rec["bidirectional_attention"] = "true" if bidi else "false"
    else:
        rec["bidirectional_attention"] = clean_str(bidi, "use_bidirectional_attention", notes, cap=20) \
            if bidi is not None else None
    if window is not None and not sliding and use_sw is not False:
        notes.append(f"sliding_window={window} given but no sliding-window layers")


def fill_moe(rec: dict, r: Reader, notes: list[str]) -> None:
    """MoE shapes of one config into ``rec``: expert count, top-k, expert and shared-expert widths (elements),
    dense-layer count, and the dense MLP width (family rules from :mod:`dashboard.catalog.quirks`). Noted."""
    n = rec["num_hidden_layers"]
    experts = r.int("num_experts", fallback_top=False)
    if experts is not None and experts <= 1:
        experts = None
    topk = per_layer_int(r, "num_experts_per_tok", notes)
    moe_i = per_layer_int(r, "moe_intermediate_size", notes)
    fam = quirks_of((rec["text_model_type"] or "").lower())
    if experts is not None and moe_i is None:
        inter = r.int("intermediate_size", fallback_top=False)
        if inter is not None:
            moe_i = inter
            notes.append("moe_intermediate_size absent: experts use intermediate_size")
    is_moe = experts is not None
    if r.get("enable_moe_block") is False:
        is_moe = False
    rec["is_moe"] = is_moe
    if fam.mlp_width is not None:
        rec["intermediate_size"] = fam.mlp_width(r, notes)
    else:
        rec["intermediate_size"] = r.int("intermediate_size", fallback_top=False)
    if fam.mlp_width_adjust is not None and rec["intermediate_size"]:
        rec["intermediate_size"] = fam.mlp_width_adjust(rec["intermediate_size"], notes)
    if not is_moe:
        if rec["intermediate_size"] is None and rec["hidden_size"] and not isinstance(r.get("block_configs"), list):
            rec["intermediate_size"] = 4 * rec["hidden_size"]
            notes.append(f"intermediate_size absent: 4 x hidden_size = {rec['intermediate_size']} assumed")
        rec["num_experts"] = None
        rec["num_shared_experts"] = 0
        hop, lbt = r.get("hybrid_override_pattern"), r.get("layers_block_type")
        if isinstance(lbt, list) and lbt:
            rec["num_dense_layers"] = sum(1 for t in lbt if str(t).lower() in ("mlp", "-", "dense"))
        elif isinstance(hop, str) and hop:
            rec["num_dense_layers"] = hop.count("-")
        else:
            rec["num_dense_layers"] = n
        rec["num_moe_layers"] = 0
        return
    rec["num_experts"] = experts
    if topk is None:
        notes.append("num_experts_per_tok missing")
    elif topk > experts:
        notes.append(f"num_experts_per_tok {topk} > num_experts {experts}: contradictory")
    rec["num_experts_per_tok"] = topk
    rec["moe_intermediate_size"] = moe_i
    shared = per_layer_int(r, "num_shared_experts", notes, lo=0)
    sh_i = r.int("shared_expert_intermediate_size", lo=0, fallback_top=False) or None
    if shared is None and fam.implicit_shared_expert:
        shared, sh_i = 1, r.int("intermediate_size", fallback_top=False)
        notes.append("llama4: one shared expert of intermediate_size")
    if shared is None:
        shared = 1 if sh_i else 0
    if shared and sh_i is None and moe_i is not None:
        sh_i = shared * moe_i
        notes.append(f"shared expert width = n_shared_experts x moe_intermediate_size = {sh_i}")
    rec["num_shared_experts"] = shared
    rec["shared_expert_intermediate_size"] = sh_i if shared else None
    # latent MoE (Nemotron-H moe_latent_size, Kimi-K3 routed_expert_hidden_size): the experts run at
    # this width between a down and an up projection of hidden_size
    for key in ("moe_latent_size", "routed_expert_hidden_size"):
        latent = r.int(key, fallback_top=False)
        if latent is not None:
            rec["moe_latent_size"] = latent
            break

    # dense-layer width: some MoE configs keep it apart (MiniMax-M3 dense_intermediate_size,
    # Llama 4 intermediate_size_mlp) while intermediate_size is the expert width
    for key in ("dense_intermediate_size", "intermediate_size_mlp"):
        dense_i = r.int(key, fallback_top=False)
        if dense_i is not None:
            rec["intermediate_size"] = dense_i
            notes.append(f"intermediate_size of dense layers from {key}")
            break
    dense = 0
    if n is not None:
        fkd = r.get("first_k_dense_replace")
        mlf = r.get("moe_layer_freq")
        mol = r.get("mlp_only_layers")
        dss = r.get("decoder_sparse_step")
        ils = r.get("interleave_moe_layer_step")
        mlt = r.get("mlp_layer_types")
        lbt = r.get("layers_block_type")
        hop = r.get("hybrid_override_pattern")
        if isinstance(lbt, list) and lbt:
            moe_layers = sum(1 for t in lbt if str(t).lower() in ("moe", "e"))
            dense = sum(1 for t in lbt if str(t).lower() in ("mlp", "-", "dense"))
            rec["num_moe_layers"], rec["num_dense_layers"] = moe_layers, dense
            return
        if isinstance(hop, str) and hop:
            rec["num_moe_layers"], rec["num_dense_layers"] = hop.count("E"), hop.count("-")
            return
        if isinstance(mlt, list) and mlt:
            dense = sum(1 for t in mlt if str(t).lower() in ("dense", "mlp"))
            rec["num_dense_layers"], rec["num_moe_layers"] = dense, len(mlt) - dense
            return
        ml = r.get("moe_layers")
        if isinstance(ml, list):  # llama4: explicit MoE layer indices
            moe_layers = len({i for i in ml if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n})
            rec["num_dense_layers"], rec["num_moe_layers"] = n - moe_layers, moe_layers
            return
        if isinstance(mlf, list) and mlf:
            moe_layers = sum(1 for x in mlf[:n] if x)
            rec["num_dense_layers"], rec["num_moe_layers"] = n - moe_layers, moe_layers
            return
        is_moe_layer = [True] * n
        if isinstance(fkd, int) and not isinstance(fkd, bool) and fkd > 0:
            for i in range(min(fkd, n)):
                is_moe_layer[i] = False
        if isinstance(mlf, int) and not isinstance(mlf, bool) and mlf > 1:
            for i in range(n):
                if i % mlf != 0:
                    is_moe_layer[i] = False
        if isinstance(dss, int) and not isinstance(dss, bool) and dss > 1:
            for i in range(n):
                if (i + 1) % dss != 0:
                    is_moe_layer[i] = False
        if isinstance(ils, int) and not isinstance(ils, bool) and ils > 1:
            for i in range(n):
                if (i + 1) % ils != 0:
                    is_moe_layer[i] = False
        if isinstance(mol, list):
            for i in mol:
                if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n:
                    is_moe_layer[i] = False
        moe_layers = sum(is_moe_layer)
        rec["num_moe_layers"] = moe_layers
        rec["num_dense_layers"] = n - moe_layers


def fill_linear(rec: dict, r: Reader, notes: list[str]) -> None:
    """Linear-attention / SSM mixer shapes of one config into ``rec`` (GDN, KDA, Mamba: kind, heads, head dims,
    conv kernel); ``None`` when absent. Noted."""
    kind = ""
    lac = r.get("linear_attn_config")
    if r.get("linear_num_value_heads") is not None or r.get("linear_num_key_heads") is not None:
        kind = "gdn"
        rec["linear_num_key_heads"] = r.int("linear_num_key_heads", hi=MAX_HEADS, fallback_top=False)
        rec["linear_num_value_heads"] = r.int("linear_num_value_heads", hi=MAX_HEADS, fallback_top=False)
        rec["linear_key_head_dim"] = r.int("linear_key_head_dim", fallback_top=False)
        rec["linear_value_head_dim"] = r.int("linear_value_head_dim", fallback_top=False)
        rec["linear_conv_kernel_dim"] = r.int("linear_conv_kernel_dim", fallback_top=False)
    elif isinstance(lac, Mapping):
        kind = "kda"
        h = as_int(lac.get("num_heads"), "linear_attn_config.num_heads", notes, hi=MAX_HEADS)
        d = as_int(lac.get("head_dim"), "linear_attn_config.head_dim", notes)
        rec["linear_num_key_heads"] = h
        rec["linear_num_value_heads"] = h
        rec["linear_key_head_dim"] = d
        rec["linear_value_head_dim"] = d
        rec["linear_conv_kernel_dim"] = as_int(lac.get("short_conv_kernel_size"), "linear_attn_config.short_conv_kernel_size", notes)
    elif r.get("mamba_num_heads") is not None or r.get("ssm_state_size") is not None or quirks_of(rec["model_type"]).ssm_mixer:
        if r.get("ssm_state_size") is not None or r.get("mamba_num_heads") is not None or r.get("state_size") is not None:
            kind = "mamba2"
            hidden = rec["hidden_size"]
            nh = r.int("mamba_num_heads", hi=1 << 20, fallback_top=False)
            hd = r.int("mamba_head_dim", fallback_top=False)
            if nh is None and hidden:
                expand = r.int("expand", fallback_top=False) or r.int("mamba_expand", fallback_top=False) or 2
                hd = hd or 64
                nh = expand * hidden // hd
                notes.append(f"mamba heads inferred as expand*hidden/head_dim = {nh}")
            rec["linear_num_value_heads"] = nh
            rec["linear_value_head_dim"] = hd
            rec["mamba_n_groups"] = r.int("n_groups", fallback_top=False) or r.int("mamba_n_groups", fallback_top=False)
            rec["ssm_state_size"] = r.int("ssm_state_size", fallback_top=False) or r.int("state_size", fallback_top=False)
            rec["linear_conv_kernel_dim"] = r.int("conv_kernel", fallback_top=False) or r.int("mamba_d_conv", fallback_top=False)
    has = bool(kind) and (rec["num_linear_attention_layers"] or 0) > 0
    if kind and not has:
        if rec["num_linear_attention_layers"] in (0, None) and rec["num_hidden_layers"]:
            notes.append(f"{kind} fields present but no linear-attention layers in the layer pattern")
    rec["has_linear_attention"] = has
    rec["linear_attention_kind"] = kind if has else ""
