"""Attention shapes of one config: query / KV heads (MQA, GQA, MLA, per-layer KV lists), head_dim, the
MLA ranks, biases, gating, positions, DeepSeek sparse-attention indexers and compressors. Writes into a
record (:func:`fill_attention`, :func:`fill_extra_shapes`) and notes every inference.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.catalog.aliases import MAX_HEADS, MAX_SIZE
from dashboard.catalog.values import as_bool, as_int, short_repr
from dashboard.catalog.fields import Reader
from dashboard.catalog.quirks import quirks_of


def fill_attention(rec: dict, r: Reader, cfg: Mapping, notes: list[str]) -> None:
    """Query / KV heads, head_dim, MLA ranks and attention kinds of one config into ``rec`` (counts; ``None`` when
    unusable, noted). Raises nothing on bad input."""
    heads = r.int("num_attention_heads", hi=MAX_HEADS)
    if heads is None:
        notes.append("num_attention_heads missing or unusable")
    rec["num_attention_heads"] = heads

    kv: int | None = None
    v, key = r.raw("num_key_value_heads")
    if key == "multi_query_group_num" and not r.get("multi_query_attention", False):
        v, key = None, None  # ChatGLM: the group count only applies with multi_query_attention
    if key is not None:
        kv = as_int(v, "num_key_value_heads", notes, hi=MAX_HEADS)
    if kv is None:
        mq = r.get("multi_query")
        nda = r.get("new_decoder_architecture")
        if mq is True and not nda:
            kv = 1
            notes.append("num_key_value_heads = 1 from multi_query")
    # nemotron-nas (DeciLM): per-block n_heads_in_group
    if kv is None and heads and isinstance(r.get("block_configs"), list):
        groups = []
        for b in r.get("block_configs"):
            att = b.get("attention") if isinstance(b, Mapping) else None
            if isinstance(att, Mapping) and not att.get("no_op") and not att.get("replace_with_linear"):
                g = as_int(att.get("n_heads_in_group"), "block_configs.n_heads_in_group", notes)
                if g:
                    groups.append(g)
        if groups:
            common = max(set(groups), key=groups.count)
            if heads % common == 0:
                kv = heads // common
                notes.append(f"num_key_value_heads = {kv} from block_configs n_heads_in_group={common}")
            if len(set(groups)) > 1:
                notes.append(f"n_heads_in_group varies per block: {sorted(set(groups))}")
    if kv is None and heads is not None:
        kv = heads
        notes.append("num_key_value_heads absent: set to num_attention_heads")
    rec["num_key_value_heads"] = kv

    # MLA
    kv_lora = r.int("kv_lora_rank", fallback_top=False)
    q_lora = r.int("q_lora_rank", fallback_top=False)
    rope = r.int("qk_rope_head_dim", fallback_top=False)
    nope = r.int("qk_nope_head_dim", fallback_top=False)
    vhd = r.int("v_head_dim", fallback_top=False)
    is_mla = kv_lora is not None
    rec["is_mla"] = is_mla
    rec["q_lora_rank"] = q_lora
    rec["kv_lora_rank"] = kv_lora
    rec["qk_rope_head_dim"] = rope
    rec["qk_nope_head_dim"] = nope

    hd_cfg = r.int("head_dim", hi=1 << 16)
    hidden = rec["hidden_size"]
    head_dim: int | None
    if is_mla and rope is not None and nope is not None:
        head_dim = nope + rope
        if hd_cfg is not None and hd_cfg != head_dim:
            notes.append(f"MLA: head_dim = qk_nope_head_dim + qk_rope_head_dim = {head_dim} (config head_dim {hd_cfg} ignored)")
    elif hd_cfg is not None:
        head_dim = hd_cfg
    elif hidden and heads:
        head_dim = hidden // heads
        notes.append(f"head_dim absent or null: hidden_size // num_attention_heads = {head_dim}")
        if hidden % heads:
            notes.append(f"hidden_size {hidden} not divisible by num_attention_heads {heads}")
        if head_dim == 0:
            head_dim = None
            notes.append("head_dim would be 0: left empty")
    else:
        head_dim = None
        notes.append("head_dim cannot be derived")
    rec["head_dim"] = head_dim
    rec["v_head_dim"] = vhd if vhd is not None else head_dim

    if is_mla:
        rec["attention_kind"] = "mla"
    elif heads is not None and kv is not None:
        rec["attention_kind"] = "mha" if kv == heads else ("mqa" if kv == 1 else "gqa")

    # per-layer heterogeneous head counts (Laguna ``num_attention_heads_per_layer``, one entry per decoder
    # layer, vLLM models/laguna.py:490-501): keep the headline value, note the spread, and average the
    # query heads over the layers for the parameter counts (q / o / gate widths scale with them)
    rec["num_attention_heads_mean"] = float(heads) if heads is not None else None
    per_layer = r.get("num_attention_heads_per_layer")
    if isinstance(per_layer, list) and per_layer:
        ints = [x for x in per_layer if isinstance(x, int) and not isinstance(x, bool) and 0 < x <= MAX_SIZE]
        vals = sorted(set(ints))
        if len(vals) > 1:
            notes.append(f"attention heads vary per layer: {vals[:6]}")
        n_layers = rec["num_hidden_layers"]
        if len(ints) == len(per_layer) and n_layers and len(ints) == n_layers:
            rec["num_attention_heads_mean"] = sum(ints) / len(ints)
        else:
            notes.append(f"num_attention_heads_per_layer ignored: {len(per_layer)} entries, "
                         f"{len(ints)} valid, {n_layers} layers")
    gkv = r.get("num_global_key_value_heads")
    if gkv is not None and gkv != kv:
        notes.append(f"full-attention layers use num_global_key_value_heads={short_repr(gkv, 20)}"
                     f" (global_head_dim={short_repr(r.get('global_head_dim'), 20)}); num_key_value_heads is the sliding layers'")
    swa_h = r.get("swa_num_attention_heads")
    swa_kv = r.get("swa_num_key_value_heads")
    if (swa_h is not None and swa_h != heads) or (swa_kv is not None and swa_kv != kv):
        notes.append(f"sliding-window layers use {swa_h} heads / {swa_kv} KV heads")


def _index_layers(r: Reader, n: int | None, notes: list[str]) -> int | None:
    """Decoder layers that build a DSA indexer, as vLLM 0.33.0 decides per layer.

    ``vllm/models/deepseek_v32/attention.py:166-190`` (DeepseekV32ForCausalLM and GlmMoeDsaForCausalLM,
    ``model_executor/models/registry.py:95-98, 126``): with ``index_topk_pattern`` (one letter per layer) a layer
    whose letter is ``S`` shares the previous indexer's top-k and builds none; otherwise a layer skips
    when ``max(layer - index_skip_topk_offset + 1, 0) % index_topk_freq != 0`` (defaults: offset 2,
    freq 1, i.e. every layer has one). MTP layers always have one but are not decoder layers here.
    """
    if n is None:
        return None
    pat = r.get("index_topk_pattern")
    if isinstance(pat, (list, str)) and pat:
        if len(pat) < n:
            notes.append(f"index_topk_pattern has {len(pat)} entries for {n} layers: the rest counted as indexer layers")
        return sum(1 for i in range(n) if not (i < len(pat) and pat[i] == "S"))
    freq = r.int("index_topk_freq", fallback_top=False, tf=False)
    off = r.int("index_skip_topk_offset", lo=0, fallback_top=False, tf=False)
    freq = freq or 1
    off = 2 if off is None else off
    return sum(1 for i in range(n) if max(i - off + 1, 0) % freq == 0)


def _compress_ratios(r: Reader, n: int | None, notes: list[str]) -> list[int] | None:
    """DeepSeek-V4 per-layer KV compress ratios of the ``n`` decoder layers (0 / 1 = none), as vLLM 0.33.0
    reads them (``transformers_utils/deepseek_v4_utils.py:6-18``: ``compress_ratios``, else
    ``compress_rates[layer_type]``); ``[]`` when the config has neither, None when unreadable."""
    cr = r.get("compress_ratios")
    if cr is None and isinstance(r.get("compress_rates"), Mapping) and isinstance(r.get("layer_types"), list):
        rates = r.get("compress_rates")
        cr = [rates.get(t, 0) if isinstance(t, str) else 0 for t in r.get("layer_types")]
    if cr is None:
        return []
    if not isinstance(cr, list) or n is None or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in cr):
        notes.append("compress_ratios unreadable: KV compressors not counted")
        return None
    if len(cr) < n:
        notes.append(f"compress_ratios has {len(cr)} entries for {n} layers: the rest counted as uncompressed")
    return list(cr[:n])


def fill_extra_shapes(rec: dict, r: Reader, notes: list[str]) -> None:
    """Shapes that change the parameter count but not the KV cache: learned positions, biases, Gemma-4's
    full-attention head dims, Qwen3-Next's output gate, the DeepSeek sparse-attention indexer."""
    fam = quirks_of((rec["text_model_type"] or rec["model_type"] or "").lower())
    n = rec["num_hidden_layers"]
    # learned absolute positions
    pos = None
    pet = r.get("position_embedding_type")
    if isinstance(pet, str) and pet.lower() in ("rope", "rotary", "alibi", "none"):
        pos = 0
    elif fam.learned_position_offset is not None or (isinstance(pet, str) and pet.lower() in ("absolute", "learned")):
        rows = r.int("max_position_embeddings")
        if rows is None:
            notes.append("learned position embeddings without a length (n_positions / max_position_embeddings): not counted")
        else:
            pos = rows + (fam.learned_position_offset or 0)
    else:
        pos = 0
    rec["learned_position_embeddings"] = pos
    # biases on every linear layer
    bias = None
    for key in ("bias", "use_bias", "add_bias_linear"):
        v = r.get(key)
        if v is not None:
            bias = as_bool(v, key, notes)
            break
    if bias is None and r.get("attention_bias") is not None and r.get("mlp_bias") is not None:
        bias = bool(r.get("attention_bias") is True and r.get("mlp_bias") is True)
    if bias is None and fam.bias_key:
        bias = r.get(fam.bias_key, True) is True
    if bias is None:
        bias = fam.linear_bias
    rec["linear_bias"] = bias
    # Gemma-4 / Gemma-3n per-layer input embeddings (PLE)
    ple = r.int("hidden_size_per_layer_input", lo=0, fallback_top=False, tf=False)
    rec["hidden_size_per_layer_input"] = ple or 0
    if ple:
        pv = r.int("vocab_size_per_layer_input", fallback_top=False, tf=False)
        rec["vocab_size_per_layer_input"] = pv if pv is not None else rec["vocab_size"]
        if pv is None:
            notes.append("vocab_size_per_layer_input absent: vocab_size used")
    else:
        rec["vocab_size_per_layer_input"] = None
    # Gemma-4: the full-attention layers have their own head dim and KV heads
    hd, kv = rec["head_dim"], rec["num_key_value_heads"]
    ghd = r.int("global_head_dim", fallback_top=False, tf=False)
    gkv = r.int("num_global_key_value_heads", fallback_top=False, tf=False)
    rec["global_head_dim"] = ghd if ghd is not None and ghd != hd else None
    rec["num_global_key_value_heads"] = gkv if gkv is not None and gkv != kv else None
    # per-head output gate folded into q_proj (Qwen3-Next: always; Qwen3.5: attn_output_gate)
    gate = r.get("attn_output_gate")
    if gate is None:
        rec["attn_output_gate"] = fam.output_gate
    else:
        rec["attn_output_gate"] = as_bool(gate, "attn_output_gate", notes)
    # Laguna's separate output-gate projection g_proj (vLLM models/laguna.py:327-351): ``gating`` true or
    # "per-head" -> hidden -> heads (one gate per head); "per-element" -> hidden -> heads x head_dim,
    # counted like attn_output_gate
    rec["attn_head_gate"] = False
    lg = r.get(fam.gate_key) if fam.gate_key else None
    if lg is True or lg == "per-head":
        rec["attn_head_gate"] = True
    elif lg == "per-element":
        rec["attn_output_gate"] = True
    elif lg not in (None, False):
        notes.append(f"gating={short_repr(lg, 20)} not understood: no output gate counted")
    # DeepSeek-V4: grouped low-rank output, per-layer KV compressors, hyper-connections
    ol = r.int("o_lora_rank", fallback_top=False, tf=False)
    rec["o_lora_rank"] = ol
    rec["o_groups"] = (r.int("o_groups", fallback_top=False, tf=False) or 1) if ol else None
    rec["hc_mult"] = r.int("hc_mult", lo=0, hi=1024, fallback_top=False, tf=False) or 0
    ratios = _compress_ratios(r, n, notes)
    rec["num_compressor_layers"] = sum(1 for x in ratios if x > 1) if ratios is not None else None
    # DeepSeek sparse attention (DSA) indexer
    inh = r.int("index_n_heads", fallback_top=False, tf=False, hi=MAX_HEADS)
    ihd = r.int("index_head_dim", fallback_top=False, tf=False, hi=1 << 16)
    rec["index_n_heads"], rec["index_head_dim"] = inh, ihd
    sac = r.get("sparse_attention_config")
    if inh is None and isinstance(sac, Mapping) and sac.get("use_sparse_attention") is True:
        # MiniMax-M3 block-sparse attention: the layers with a non-zero sparse_attention_freq entry fuse
        # index_q (sparse_num_index_heads = KV heads, sharded like them) and one replicated index_k head of
        # sparse_index_dim into qkv_proj (vLLM models/minimax_m3/nvidia/model.py:98-106, 433-446;
        # layers/linear.py:1365-1440 MinimaxM3QKVParallelLinearWithIndexer)
        inh = as_int(sac.get("sparse_num_index_heads"), "sparse_num_index_heads", notes, hi=MAX_HEADS)
        ihd = as_int(sac.get("sparse_index_dim"), "sparse_index_dim", notes, hi=1 << 16)
        freq = sac.get("sparse_attention_freq")
        rec["index_n_heads"], rec["index_head_dim"] = inh, ihd
        if inh and ihd and isinstance(freq, list) and len(freq) <= (1 << 20):
            rec["num_indexer_layers"] = sum(1 for x in freq if x not in (0, None, False))
        else:
            rec["num_indexer_layers"] = None
            notes.append("sparse_attention_config without a readable sparse_attention_freq: indexer layers not counted")
    elif inh and ihd and r.get("index_topk") is not None:
        if rec["is_mla"] and rec["q_lora_rank"]:
            rec["num_indexer_layers"] = _index_layers(r, n, notes)
        elif ol and rec["q_lora_rank"] and ratios is not None:
            # DeepSeek-V4: only the compress-ratio-4 layers have an indexer
            # (vllm/models/deepseek_v4/attention.py:302-320)
            rec["num_indexer_layers"] = sum(1 for x in ratios if x == 4)
        else:
            rec["num_indexer_layers"] = None
            notes.append("DSA indexer outside an MLA or DeepSeek-V4 attention: its layers are not counted")
    else:
        rec["num_indexer_layers"] = 0
