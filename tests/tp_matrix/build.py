"""Build tiny random-weight decoders with given head shapes and save them with ``save_pretrained``.

Runs in the parent (pytest) process, once per case; the torchrun workers only load them. A model is
1 decoder layer, ``hidden_size = heads * head_dim``, float32, untied LM head, seeded weights, so that
every rank of every run sees the same checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

from .cases import Case

#: Larger than transformers' 0.02 default so the reference-vs-TP logits comparison is not trivially
#: satisfied by near-zero logits.
INIT_STD = 0.2


def model_config(case: Case):
    """The transformers config object for ``case`` (``LlamaConfig`` or ``Qwen3Config``)."""
    import transformers

    cls = {"llama": transformers.LlamaConfig, "qwen3": transformers.Qwen3Config}[case.arch]
    return cls(
        vocab_size=case.vocab,
        hidden_size=case.hidden_size,
        intermediate_size=case.intermediate,
        num_hidden_layers=1,
        num_attention_heads=case.heads,
        num_key_value_heads=case.kv,
        head_dim=case.head_dim,
        max_position_embeddings=128,
        tie_word_embeddings=False,
        initializer_range=INIT_STD,
        dtype="float32",
    )


def build_model(case: Case, folder: Path) -> Path:
    """Create ``case``'s model with seeded random weights and ``save_pretrained`` it under ``folder``.

    Returns the model directory (``folder / case.case_id``). Idempotent: an existing directory with a
    ``config.json`` and weights is reused.
    """
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    path = Path(folder) / case.case_id
    if (path / "config.json").is_file() and any(path.glob("*.safetensors")):
        return path
    torch.manual_seed(1234)
    model = transformers.AutoModelForCausalLM.from_config(model_config(case), dtype=torch.float32)
    model.save_pretrained(path)
    (path / "tp_matrix_case.json").write_text(json.dumps(case.to_dict(), indent=1))
    return path
