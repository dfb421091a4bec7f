"""Static field tables of the catalog reader: where composite configs nest their language and vision
models (:data:`TEXT_CONFIG_KEYS`, :data:`VISION_CONFIG_KEYS`), the canonical field -> alias table
(:data:`ALIASES`), and the hard bounds every value is checked against. Data only.
"""

from __future__ import annotations

import re


#: Keys under which multimodal / composite configs nest their language model, in preference order.
TEXT_CONFIG_KEYS: tuple[str, ...] = (
    "text_config",
    "llm_config",
    "language_config",
    "language_model_config",
    "thinker_config",
    "text_model_config",
    "llm",
    "language_model",
    "decoder_config",
    "decoder",
    "text",
    "lm_config",
    "language",  # InfiMM (Flamingo-style): the whole language model's config under "language"
)

#: Keys of the vision encoder's config.
VISION_CONFIG_KEYS: tuple[str, ...] = (
    "vision_config",
    "vision_tower_config",
    "visual",
    "vit_config",
    "vision_encoder_config",
    "vision_model_config",
    "image_encoder_config",
)

#: Canonical field -> aliases, first match wins. Dotted aliases look into a nested dict.
ALIASES: dict[str, tuple[str, ...]] = {
    "num_attention_heads": (
        "num_attention_heads", "n_head", "n_heads", "num_heads", "attention_heads", "n_attention_heads",
        "num_q_heads", "decoder_attention_heads", "encoder_attention_heads",
    ),
    "num_key_value_heads": (
        "num_key_value_heads", "num_kv_heads", "n_head_kv", "n_kv_heads", "num_query_groups",
        "attn_config.kv_n_heads", "kv_n_heads", "n_kv_head", "num_kv", "multi_query_group_num",
        "num_key_value_groups_total",
    ),
    "hidden_size": ("hidden_size", "n_embd", "d_model", "model_dim", "dim", "n_embed", "embed_dim", "emb_dim"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_decoder_layers", "decoder_layers"),
    "intermediate_size": (
        "intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "d_ff", "inner_hidden_size",
        "ffn_config.ffn_hidden_size", "mlp_dim", "hidden_dim",
    ),
    "vocab_size": ("vocab_size", "padded_vocab_size", "n_vocab", "vocabulary_size"),
    "max_position_embeddings": (
        "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx",
        "max_seq_len", "model_max_length", "max_seq_length",
    ),
    "head_dim": ("head_dim", "kv_channels", "attention_head_dim", "d_head", "head_size", "attention_head_size"),
    "num_experts": (
        "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts",
        "ffn_config.moe_num_experts", "n_experts", "expert_num",
    ),
    "num_experts_per_tok": (
        "num_experts_per_tok", "num_experts_per_token", "moe_top_k", "top_k_experts", "moe_k",
        "ffn_config.moe_top_k", "num_selected_experts", "n_activated_experts", "experts_per_token",
        "moe_topk",
    ),
    "moe_intermediate_size": (
        "moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size", "ffn_config.ffn_hidden_size_moe",
    ),
    "num_shared_experts": (
        "n_shared_experts", "num_shared_experts", "shared_expert_num", "moe_num_shared_experts",
        "num_shared_expert",  # Hunyuan (a per-layer list)
    ),
    "shared_expert_intermediate_size": (
        "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size",
    ),
    "torch_dtype": ("torch_dtype", "dtype"),
    "sliding_window": ("sliding_window", "sliding_window_size", "window_size", "attention_window_size"),
}

# Hard bounds: anything outside is rejected as unreadable (keeps Int64 safe and the arithmetic sane).
MAX_HEADS = 1 << 16
MAX_SIZE = 1 << 40
MAX_STR = 200
MAX_NOTES = 4000

SAFE_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
