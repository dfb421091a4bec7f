"""Per-family conventions the config keys alone do not tell, as a registry keyed by ``model_type``.

Data first (like vLLM's ``model_arch_config_convertor.py``): :data:`FAMILIES` maps a model type (or a
model-type prefix ending in ``*``) to a :class:`Quirks` record; :func:`quirks_of` looks one up. The
functions below it compute the few family conventions that are formulas (LFM2's MLP width, DeciLM's
per-block FFN widths); the normalizer modules ask the registry instead of naming families.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dashboard.catalog.values import as_int
from dashboard.catalog.fields import Reader


NONGATED_TYPES = frozenset({
    "gpt2", "gpt_neox", "gpt_neo", "gptj", "falcon", "bloom", "opt", "gpt_bigcode", "starcoder2", "phi",
    "mpt", "codegen", "nemotron", "bert", "roberta", "t5", "persimmon", "olmo_hf",
    # remote-code families (read as JSON only): Falcon's pre-transformers RW types and CodeShell
    # (GPT-BigCode-style c_fc / c_proj MLP). stablelm_epoch is *not* here: StableLM-3B-4E1T /
    # stable-code-3b use a SwiGLU gate_proj / up_proj / down_proj MLP.
    "refinedweb", "refinedwebmodel", "codeshell",
})

#: Pre-transformers model types whose config transformers later took over under another name: used
#: only to look up that type's class defaults (``tie_word_embeddings``) in the snapshot.
LEGACY_TYPES = {"RefinedWeb": "falcon", "RefinedWebModel": "falcon"}
NONGATED_ACTS = frozenset({"relu2", "gelu_new", "gelu_pytorch_tanh_nongated", "relu", "gelu_fast"})


#: Model types whose every attention and MLP linear layer carries a bias while the config has no
#: flag saying so (transformers' modeling code hard-codes it): GPT-2 (Conv1D c_attn / c_proj / c_fc),
#: GPT-BigCode, GPT-NeoX, BLOOM, Phi-1/2, OPT (``enable_bias``, default True), CodeShell.
FULL_BIAS_TYPES = frozenset({"gpt2", "gpt_bigcode", "gpt_neox", "bloom", "phi", "opt", "codeshell"})
#: Model types with a learned absolute position table (``wpe`` / ``embed_positions``) when the config
#: says nothing else; OPT's table has 2 extra rows (``OPTLearnedPositionalEmbedding`` offset).
LEARNED_POSITION_TYPES = {"gpt2": 0, "gpt_bigcode": 0, "opt": 2, "biogpt": 2}


def lfm2_ff_dim(r: Reader, notes: list[str]) -> int | None:
    """LFM2 MLP width (transformers ``Lfm2MLP``): ``intermediate_size`` (older configs: ``block_ff_dim``),
    and when ``block_auto_adjust_ff_dim``: ``int(2 * size / 3)``; then, when ``block_ffn_dim_multiplier``
    is set, times it and rounded up to a multiple of ``block_multiple_of``."""
    key = "intermediate_size" if r.get("intermediate_size") is not None else "block_ff_dim"
    base = as_int(r.get(key), key, notes)
    if base is None or r.get("block_auto_adjust_ff_dim") is not True:
        return base
    size = int(2 * base / 3)
    how = "2/3"
    mult = r.get("block_ffn_dim_multiplier")
    if isinstance(mult, (int, float)) and not isinstance(mult, bool) and math.isfinite(mult) and 0 < mult < 100:
        mo = as_int(r.get("block_multiple_of"), "block_multiple_of", notes) or 1
        size = int(mult * size)
        size = mo * ((size + mo - 1) // mo)
        how += f", x block_ffn_dim_multiplier {mult}, multiple of {mo}"
    notes.append(f"intermediate_size = {size} from {key}={base} (Lfm2MLP block_auto_adjust_ff_dim: {how})")
    return size


def decilm_blocks(blocks: list, h: int, heads: int, hd: int, notes: list[str]) -> int:
    """DeciLM / Nemotron-NAS blocks: per-block attention (``n_heads_in_group``) and FFN (``ffn_mult``).

    FFN width follows DeciLM's ``_ffn_mult_to_intermediate_size``: ``int(2 * ffn_mult * hidden / 3)``
    rounded up to a multiple of 256.
    """
    total = 0
    for b in blocks:
        att = b.get("attention") if isinstance(b, Mapping) else None
        if isinstance(att, Mapping) and not att.get("no_op"):
            if att.get("replace_with_linear"):
                total += h * h
            else:
                g = att.get("n_heads_in_group")
                kvb = heads // g if isinstance(g, int) and not isinstance(g, bool) and g > 0 else heads
                total += 2 * h * heads * hd + 2 * h * kvb * hd
        ffn = b.get("ffn") if isinstance(b, Mapping) else None
        if not isinstance(ffn, Mapping) or ffn.get("no_op"):
            continue
        if ffn.get("replace_with_linear"):
            total += h * h
            continue
        mult = ffn.get("ffn_mult")
        if isinstance(mult, (int, float)) and not isinstance(mult, bool) and math.isfinite(mult) and 0 < mult < 1000:
            inter = int(2 * mult * h / 3)
            inter = -(-inter // 256) * 256
            total += 3 * h * inter
    notes.append("per-block FFN widths from block_configs (ffn_mult)")
    return total
