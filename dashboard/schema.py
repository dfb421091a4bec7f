"""The catalog's columns: one normalized record per model.

This module is the contract between the normalizer (:mod:`dashboard.catalog`), the Hub scraper
(:mod:`dashboard.hub`), the rules engine (:mod:`dashboard.rules`), the per-rank layout
(:mod:`dashboard.layout`), the memory model (:mod:`dashboard.memory`) and the dashboard. It is pure
data: no I/O, no Panel.

Conventions
-----------
* Counts and sizes are integers stored as pandas nullable ``Int64``; ``<NA>`` means "the config does
  not say and nothing sound could be inferred" (the reason is in ``parse_notes``).
* Sizes are in *elements* (heads, channels, tokens), never bytes, unless the name ends in ``_bytes``.
* Parameter counts are plain numbers of parameters (not billions) stored as ``float64``.
* Flags are pandas nullable ``boolean``.
* Strings that came from a config or the Hub are untrusted: escape them before rendering.

Every column is listed in :data:`COLUMNS` as ``(name, dtype, description)``.
"""

from __future__ import annotations

from typing import Final

from dashboard import frameworks as _frameworks

#: Frameworks the rules engine knows, in display order: the ids of :data:`dashboard.frameworks.REGISTRY`
#: (used everywhere: rules, grid, layout, memory, dashboard URLs, tests, ``../shared/cases``).
FRAMEWORKS: Final[tuple[str, ...]] = _frameworks.names()

#: Human labels for :data:`FRAMEWORKS` (each framework's ``label``).
FRAMEWORK_LABELS: Final[dict[str, str]] = _frameworks.labels()

#: TP sizes the grid and the dashboard use by default.
DEFAULT_TP_SIZES: Final[tuple[int, ...]] = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)

#: Row statuses (one per model). Only ``ok`` rows carry shapes the rules can use.
#: Largest ``config.json`` (or quantization sidecar) read, bytes: by the scraper, ``tp-planner check`` and
#: ``plan`` (a file, standard input or the Hub). 8 MiB: the largest real config seen is 3,087,083 bytes
#: (nvidia/MiniMax-M3-NVFP4, a per-layer NVFP4 ``quantization_config``), so 2.7x headroom; a Hub file
#: announced larger is never downloaded, and a streamed read stops at the cap. (Uploads in the dashboard
#: have their own 1 MiB cap, :data:`dashboard.addmodel.MAX_CONFIG_BYTES`: they travel in a websocket message.)
MAX_CONFIG_BYTES: Final[int] = 8 << 20
STATUSES: Final[tuple[str, ...]] = ("ok", "gated", "not_found", "invalid_json", "error")

#: Cell statuses of the validity grid, worst last.
CELL_STATUSES: Final[tuple[str, ...]] = ("valid", "valid_replicated", "valid_padded", "invalid", "unknown")

COLUMNS: Final[tuple[tuple[str, str, str], ...]] = (
    # --- identity and provenance -------------------------------------------------------------
    ("model_id", "string", "Hub repo id `org/name`; unique key of the catalog."),
    ("org", "string", "Part of model_id before the first `/`."),
    ("name", "string", "Part of model_id after the first `/`."),
    ("status", "string", "Row status, one of STATUSES. Non-ok rows keep their reason in status_reason."),
    ("status_reason", "string", "Why status is not ok (HTTP code, parse error...); empty when ok."),
    ("source", "string", "`snapshot` (built from a folder of config.json files) or `hub` (scraped)."),
    ("fetched_at", "string", "ISO-8601 UTC time the config was read or downloaded."),
    ("sha", "string", "Hub commit sha of the config's revision, where known."),
    ("last_modified", "string", "Hub last_modified (ISO-8601), where known."),
    ("downloads", "Int64", "Hub download count, where known."),
    ("likes", "Int64", "Hub like count, where known."),
    ("gated", "boolean", "Hub gating flag, where known."),
    ("safetensors_params", "float64", "Total parameter count the Hub API reports from safetensors, where known."),
    ("safetensors_params_by_dtype", "string", "JSON object dtype -> parameter count from the Hub API, where known."),
    # --- architecture --------------------------------------------------------------------------
    ("model_type", "string", "Top-level `model_type` of the config (untrusted string)."),
    ("text_model_type", "string", "`model_type` of the nested text config the shapes were read from, else = model_type."),
    ("text_config_key", "string", "Key of the nested text config used (`text_config`, `llm_config`, ...), empty when top level."),
    ("architectures", "string", "Comma-joined `architectures` list (untrusted)."),
    ("torch_dtype", "string", "Checkpoint dtype (`torch_dtype` or `dtype`), e.g. bfloat16."),
    ("hidden_size", "Int64", "Model width d_model (elements)."),
    ("num_hidden_layers", "Int64", "Decoder layers (all kinds: full, sliding-window, linear attention, Mamba)."),
    ("intermediate_size", "Int64", "Dense MLP width (elements); for MoE models the dense layers' width."),
    ("mlp_gated", "boolean", "MLPs (dense, routed and shared experts) are gated: 3 matrices (gate, up, down) of hidden x width; False for non-gated activations (relu2, gelu, ...): 2 matrices (up, down)."),
    ("vocab_size", "Int64", "Vocabulary rows of the embedding (unpadded)."),
    ("tie_word_embeddings", "boolean", "LM head shares the embedding matrix."),
    ("max_position_embeddings", "Int64", "Maximum context length the config declares (tokens)."),
    ("max_model_len_vllm", "float64", "Longest --max-model-len vLLM 0.33.0 accepts (tokens): the smallest of its length keys in the text config (model_max_length overrides), times the RoPE scaling factor except for su/longrope/llama3/yarn/deepseek_yarn/deepseek_llama_scaling and Gemma 3 (vllm/transformers_utils/model_arch_config_convertor.py:374-407, vllm/config/model.py:2545-2690; dashboard.context). NaN when no key is present (vLLM then takes any --max-model-len unchecked) or a value is unreadable."),
    ("max_model_len_key", "string", "The config key max_model_len_vllm came from (as vLLM names it, e.g. max_position_embeddings, model_max_length)."),
    ("max_model_len_vllm_source", "string", "The text vLLM prints for the derived length in its refusal, e.g. `max_position_embeddings=1024 or model_max_length=None` (a float after a RoPE factor, as vLLM computes it)."),
    ("context_length_sglang", "Int64", "Longest --context-length SGLang 0.5.23 accepts (tokens): the first of max_sequence_length, seq_length, max_seq_len, model_max_length, max_position_embeddings, times the rope_scaling factor unless it carries original_max_position_embeddings or is llama3; 2048 when none is present (sglang/srt/utils/hf_transformers/common.py:668-694). <NA> when unreadable."),
    ("learned_position_embeddings", "Int64", "Rows of a learned absolute position-embedding table (GPT-2 / GPT-BigCode `wpe` = n_positions, OPT max_position_embeddings + 2); 0 when positions are rotary, ALiBi or absent."),
    ("hidden_size_per_layer_input", "Int64", "Gemma-4 / Gemma-3n per-layer input embedding width (elements, `hidden_size_per_layer_input`); 0 when none."),
    ("vocab_size_per_layer_input", "Int64", "Rows of the per-layer input embedding table (`vocab_size_per_layer_input`, default vocab_size); NA when no per-layer embeddings."),
    ("hc_mult", "Int64", "DeepSeek-V4 hyper-connection streams (`hc_mult`): every layer mixes hc_mult copies of the residual with float32 mixing weights; 0 when none."),
    ("linear_bias", "boolean", "Every attention (q/k/v/o) and MLP (up/down) linear layer carries a bias (GPT-2, GPT-NeoX, Falcon `bias`, `attention_bias` and `mlp_bias` both true, ...); False when only some do (e.g. Qwen2's q/k/v) or none."),
    # --- softmax attention -----------------------------------------------------------------------
    ("num_attention_heads", "Int64", "Query heads of the (full/sliding) attention layers."),
    ("num_key_value_heads", "Int64", "KV heads (GQA groups); = num_attention_heads when absent (noted); 1 for MQA. For MLA the config value (usually = heads)."),
    ("head_dim", "Int64", "Per-head dim of q/k (elements): config `head_dim` when set and not null, else hidden_size // num_attention_heads (noted). For MLA: qk_nope_head_dim + qk_rope_head_dim."),
    ("v_head_dim", "Int64", "Per-head dim of v when it differs from head_dim (MLA and some others), else = head_dim."),
    ("attention_kind", "string", "`mha`, `gqa`, `mqa` or `mla`."),
    ("num_full_attention_layers", "Int64", "Layers with global softmax attention (they hold a full-length KV cache)."),
    ("num_sliding_window_layers", "Int64", "Layers with sliding-window softmax attention (KV capped at sliding_window tokens)."),
    ("num_linear_attention_layers", "Int64", "Layers with linear attention or SSM (GDN, KDA, Mamba2): fixed-size state, no per-token KV."),
    ("bidirectional_attention", "string", "Text config `use_bidirectional_attention` (Gemma 3n/4: `vision` = image tokens attend bidirectionally, `all`; a boolean flag is written `true` / `false`); NA when absent."),
    ("sliding_window", "Int64", "Window of the sliding-window layers (tokens)."),
    ("num_cross_attention_layers", "Int64", "Cross-attention layers (e.g. mllama), 0 when none."),
    ("global_head_dim", "Int64", "Per-head dim of q/k/v/o in the full-attention layers when it differs from head_dim (Gemma-4 `global_head_dim`, elements); NA when all layers use head_dim."),
    ("num_global_key_value_heads", "Int64", "KV heads of the full-attention layers when they differ from num_key_value_heads (Gemma-4 `num_global_key_value_heads`); NA when the same."),
    ("num_attention_heads_mean", "float64", "Query heads averaged over the decoder layers: = num_attention_heads unless the count varies per layer (Laguna `num_attention_heads_per_layer`); the q / o / gate parameter counts use it."),
    ("attn_head_gate", "boolean", "A separate output-gate projection with one gate per query head, hidden -> heads (Laguna `gating` true or \"per-head\", vLLM models/laguna.py:327-351)."),
    ("attn_output_gate", "boolean", "The q projection also emits a per-head output gate (Qwen3-Next / Qwen3.5 `attn_output_gate`): q_proj is 2 x heads x head_dim wide."),
    ("index_n_heads", "Int64", "DeepSeek sparse-attention (DSA) indexer heads (`index_n_heads`); NA when the model has no indexer."),
    ("index_head_dim", "Int64", "DSA indexer head dim (`index_head_dim`, elements); NA when no indexer."),
    ("o_lora_rank", "Int64", "DeepSeek-V4 grouped low-rank output projection rank per group (`o_lora_rank`, elements); NA when o is one matrix."),
    ("o_groups", "Int64", "Groups of the DeepSeek-V4 low-rank output projection (`o_groups`); NA when none."),
    ("num_compressor_layers", "Int64", "DeepSeek-V4 layers with a KV compressor (`compress_ratios` entry > 1); ratio-4 layers also own the DSA indexer. 0 when none."),
    ("num_indexer_layers", "Int64", "Decoder layers that own a DSA indexer (all unless `index_topk_freq` / `index_topk_pattern` share one across layers; DeepSeek-V4: the compress-ratio-4 layers); 0 when none, NA when not derivable."),
    # --- MLA -------------------------------------------------------------------------------------
    ("is_mla", "boolean", "Multi-head latent attention (DeepSeek-V2/V3 style): KV cache holds a latent replicated on every TP rank."),
    ("q_lora_rank", "Int64", "MLA query low-rank dim (elements); NA when q is not low-rank."),
    ("kv_lora_rank", "Int64", "MLA KV latent dim (elements)."),
    ("qk_rope_head_dim", "Int64", "MLA rotary part of q/k per head (elements)."),
    ("qk_nope_head_dim", "Int64", "MLA non-rotary part of q/k per head (elements)."),
    # --- MoE -------------------------------------------------------------------------------------
    ("is_moe", "boolean", "Mixture of experts."),
    ("num_experts", "Int64", "Routed experts per MoE layer (`num_experts`, `num_local_experts`, `n_routed_experts`)."),
    ("num_experts_per_tok", "Int64", "Routed experts active per token (top-k)."),
    ("moe_intermediate_size", "Int64", "Width of one routed expert's MLP (elements)."),
    ("num_shared_experts", "Int64", "Shared (always-on) experts per MoE layer; 0 when none."),
    ("shared_expert_intermediate_size", "Int64", "Total width of the shared expert MLP (elements); NA when none."),
    ("num_dense_layers", "Int64", "Decoder layers with a dense MLP instead of MoE (first_k_dense_replace, mlp_only_layers, ...)."),
    ("num_moe_layers", "Int64", "Decoder layers with an MoE MLP."),
    ("moe_latent_size", "Int64", "Latent width the routed experts run at (elements) when the MoE block projects hidden states down before the experts and back up after them (`moe_latent_size`, `routed_expert_hidden_size`); NA when the experts run at hidden_size."),
    # --- linear attention / SSM -------------------------------------------------------------------
    ("has_linear_attention", "boolean", "Has GDN, KDA or Mamba layers."),
    ("linear_attention_kind", "string", "`gdn`, `kda`, `mamba2`, or empty."),
    ("linear_num_key_heads", "Int64", "GDN key heads (linear_num_key_heads)."),
    ("linear_num_value_heads", "Int64", "GDN value heads (linear_num_value_heads); KDA heads; Mamba2 heads."),
    ("linear_key_head_dim", "Int64", "GDN/KDA key head dim (elements)."),
    ("linear_value_head_dim", "Int64", "GDN/KDA value head dim; Mamba2 head dim (elements)."),
    ("linear_conv_kernel_dim", "Int64", "Short-convolution kernel size of GDN/KDA/Mamba2."),
    ("mamba_n_groups", "Int64", "Mamba2 `n_groups` (B/C groups)."),
    ("ssm_state_size", "Int64", "Mamba2 state size per head (elements)."),
    # --- vision tower ----------------------------------------------------------------------------
    ("has_vision", "boolean", "Has a vision encoder (`vision_config`)."),
    ("vision_num_heads", "Int64", "Attention heads of the vision encoder."),
    ("vision_hidden_size", "Int64", "Width of the vision encoder (elements)."),
    ("vision_depth", "Int64", "Layers of the vision encoder."),
    ("vision_intermediate_size", "Int64", "MLP width of the vision encoder (elements)."),
    ("vision_position_embeddings", "Int64", "Rows of the vision encoder's learned position-embedding table (Qwen3-VL `num_position_embeddings`, SigLIP (image_size / patch_size)^2, Gemma-4 2 x position_embedding_size); 0 when none."),
    ("vision_deepstack_layers", "Int64", "Qwen3-VL deepstack patch mergers (one per `deepstack_visual_indexes` entry), each the size of the final merger; 0 when none."),
    # --- quantization ----------------------------------------------------------------------------
    ("is_quantized", "boolean", "Checkpoint has a quantization_config."),
    ("quant_method", "string", "quantization_config quant_method (fp8, awq, gptq, compressed-tensors, modelopt, mxfp4, ...)."),
    ("quant_format", "string", "Finer format where given (e.g. nvfp4, float-quantized, mxfp4-pack-quantized)."),
    ("quant_bits", "Int64", "Weight bits (4, 8, ...), where given or implied."),
    ("quant_group_size", "Int64", "AWQ/GPTQ/NVFP4 group size along the input dim (elements); -1 = per-channel (one scale per output column, GPTQ `group_size: -1`)."),
    ("kv_cache_quant", "string", "KV-cache quantization the checkpoint declares: a `kv_cache_scheme` object as `<type><num_bits>` (`float8`, `int8`; `-dynamic` when `dynamic` is true), or the lower-cased `kv_cache_quant_algo` string (`fp8`, `nvfp4`); read from `quantization_config` (and its `quantization` object, as in `hf_quant_config.json`). NA: none declared. What an engine makes of it (vLLM: `fp8_e4m3` for ModelOpt, `fp8` for compressed-tensors) is the engine's."),
    ("weight_block_n", "Int64", "Block-FP8 `weight_block_size[0]`, or compressed-tensors `config_groups.*.weights.block_structure[0]` (output dim block)."),
    ("weight_block_k", "Int64", "Block-FP8 `weight_block_size[1]`, or compressed-tensors `config_groups.*.weights.block_structure[1]` (input dim block)."),
    ("quant_attention_fraction", "float64", "Share (0-1) of the softmax-attention projections (q/k/v/o, MLA q_a/q_b/kv_a/kv_b/o, DeepSeek-V4 wq/wkv/wo) of the full and sliding-window layers that vLLM 0.33.0 quantizes: layers whose part is quantized / layers having the part (mean over the part's main modules), from the quantization_config lists matched against vLLM's own module names (dashboard.quant_coverage). NA: unquantized checkpoint, part absent, or not derived (parse_notes)."),
    ("quant_attention_format", "string", "Weight format vLLM 0.33.0 allocates for the quantized share of the softmax-attention projections (q/k/v/o, MLA q_a/q_b/kv_a/kv_b/o, DeepSeek-V4 wq/wkv/wo) of the full and sliding-window layers (dashboard.quant_coverage.FORMATS: nvfp4, mxfp4, mxfp8, fp8, fp8-channel, fp8-block, int4, int8); NA when none of it is quantized."),
    ("quant_linear_attention_fraction", "float64", "Share (0-1) of the linear-attention / SSM projections (GDN in_proj_qkvz / out_proj, KDA, Mamba in/out) of the linear-attention layers that vLLM 0.33.0 quantizes: layers whose part is quantized / layers having the part (mean over the part's main modules), from the quantization_config lists matched against vLLM's own module names (dashboard.quant_coverage). NA: unquantized checkpoint, part absent, or not derived (parse_notes)."),
    ("quant_linear_attention_format", "string", "Weight format vLLM 0.33.0 allocates for the quantized share of the linear-attention / SSM projections (GDN in_proj_qkvz / out_proj, KDA, Mamba in/out) of the linear-attention layers (dashboard.quant_coverage.FORMATS: nvfp4, mxfp4, mxfp8, fp8, fp8-channel, fp8-block, int4, int8); NA when none of it is quantized."),
    ("quant_dense_mlp_fraction", "float64", "Share (0-1) of the dense MLP (gate_up / down) of the layers that have one that vLLM 0.33.0 quantizes: layers whose part is quantized / layers having the part (mean over the part's main modules), from the quantization_config lists matched against vLLM's own module names (dashboard.quant_coverage). NA: unquantized checkpoint, part absent, or not derived (parse_notes)."),
    ("quant_dense_mlp_format", "string", "Weight format vLLM 0.33.0 allocates for the quantized share of the dense MLP (gate_up / down) of the layers that have one (dashboard.quant_coverage.FORMATS: nvfp4, mxfp4, mxfp8, fp8, fp8-channel, fp8-block, int4, int8); NA when none of it is quantized."),
    ("quant_shared_experts_fraction", "float64", "Share (0-1) of the shared-expert MLP of the MoE layers that vLLM 0.33.0 quantizes: layers whose part is quantized / layers having the part (mean over the part's main modules), from the quantization_config lists matched against vLLM's own module names (dashboard.quant_coverage). NA: unquantized checkpoint, part absent, or not derived (parse_notes)."),
    ("quant_shared_experts_format", "string", "Weight format vLLM 0.33.0 allocates for the quantized share of the shared-expert MLP of the MoE layers (dashboard.quant_coverage.FORMATS: nvfp4, mxfp4, mxfp8, fp8, fp8-channel, fp8-block, int4, int8); NA when none of it is quantized."),
    ("quant_experts_fraction", "float64", "Share (0-1) of the routed experts (the RoutedExperts module) of the MoE layers that vLLM 0.33.0 quantizes: layers whose part is quantized / layers having the part (mean over the part's main modules), from the quantization_config lists matched against vLLM's own module names (dashboard.quant_coverage). NA: unquantized checkpoint, part absent, or not derived (parse_notes)."),
    ("quant_experts_format", "string", "Weight format vLLM 0.33.0 allocates for the quantized share of the routed experts (the RoutedExperts module) of the MoE layers (dashboard.quant_coverage.FORMATS: nvfp4, mxfp4, mxfp8, fp8, fp8-channel, fp8-block, int4, int8); NA when none of it is quantized."),
    ("quant_lm_head_fraction", "float64", "Share (0-1) of the untied LM head that vLLM 0.33.0 quantizes: layers whose part is quantized / layers having the part (mean over the part's main modules), from the quantization_config lists matched against vLLM's own module names (dashboard.quant_coverage). NA: unquantized checkpoint, part absent, or not derived (parse_notes)."),
    ("quant_lm_head_format", "string", "Weight format vLLM 0.33.0 allocates for the quantized share of the untied LM head (dashboard.quant_coverage.FORMATS: nvfp4, mxfp4, mxfp8, fp8, fp8-channel, fp8-block, int4, int8); NA when none of it is quantized."),
    ("quant_router_fraction", "float64", "Share (0-1) of the MoE router / gate that vLLM 0.33.0 quantizes: layers whose part is quantized / layers having the part (mean over the part's main modules), from the quantization_config lists matched against vLLM's own module names (dashboard.quant_coverage). NA: unquantized checkpoint, part absent, or not derived (parse_notes)."),
    ("quant_router_format", "string", "Weight format vLLM 0.33.0 allocates for the quantized share of the MoE router / gate (dashboard.quant_coverage.FORMATS: nvfp4, mxfp4, mxfp8, fp8, fp8-channel, fp8-block, int4, int8); NA when none of it is quantized."),
    ("quant_vision_fraction", "float64", "Share (0-1) of the vision-tower linear layers that vLLM 0.33.0 quantizes: layers whose part is quantized / layers having the part (mean over the part's main modules), from the quantization_config lists matched against vLLM's own module names (dashboard.quant_coverage). NA: unquantized checkpoint, part absent, or not derived (parse_notes)."),
    ("quant_vision_format", "string", "Weight format vLLM 0.33.0 allocates for the quantized share of the vision-tower linear layers (dashboard.quant_coverage.FORMATS: nvfp4, mxfp4, mxfp8, fp8, fp8-channel, fp8-block, int4, int8); NA when none of it is quantized."),
    # --- size --------------------------------------------------------------------------------------
    ("params_total", "float64", "Estimated parameters from the shapes (count, not billions), text model + vision tower."),
    ("params_active", "float64", "Estimated parameters active per token (MoE: top-k routed + shared + dense); = params_total for dense."),
    ("params_vision", "float64", "Estimated parameters of the vision tower (count), 0 when none."),
    ("params_vision_embed", "float64", "Part of params_vision in the tower's input convolutions and embedding tables: patch embedding, learned position embedding and, for GLM-4.xV, the Conv2d downsample (count): modules vLLM does not split over TP; 0 when none."),
    ("params_vision_connector", "float64", "Part of params_vision in the projector / patch merger(s) into the language model (count, deepstack mergers included)."),
    ("parse_notes", "string", "`; `-joined notes: fields missing, inferred, contradictory or unreadable."),
)

COLUMN_NAMES: Final[tuple[str, ...]] = tuple(c[0] for c in COLUMNS)
COLUMN_DTYPES: Final[dict[str, str]] = {c[0]: c[1] for c in COLUMNS}
COLUMN_DOCS: Final[dict[str, str]] = {c[0]: c[2] for c in COLUMNS}
