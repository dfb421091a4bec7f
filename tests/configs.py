"""Config dicts the tests build catalogs from (plain ``config.json`` content, no I/O)."""

from __future__ import annotations


def llama_config(h: int, kv: int, hidden: int = 4096, layers: int = 32, **extra) -> dict:
    """A Llama-style ``config.json`` with ``h`` query heads and ``kv`` KV heads; ``extra`` adds or overrides
    keys."""
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_attention_heads": h,
            "num_key_value_heads": kv, "hidden_size": hidden, "num_hidden_layers": layers,
            "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16", **extra}
