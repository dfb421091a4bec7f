"""Per-family conventions the config keys alone do not tell, as a registry keyed by ``model_type``.

Data first (like vLLM's ``model_arch_config_convertor.py``): :data:`FAMILIES` maps a model type (or a
model-type prefix ending in ``*``) to a :class:`Quirks` record; :func:`quirks_of` looks one up. The
functions below it compute the few family conventions that are formulas (LFM2's MLP width, DeciLM's
per-block FFN widths); the normalizer modules ask the registry instead of naming families.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dashboard.catalog.values import as_int
from dashboard.catalog.fields import Reader


#: Activations that mark a non-gated MLP whatever the family (``up -> act -> down``).
NONGATED_ACTS = frozenset({"relu2", "gelu_new", "gelu_pytorch_tanh_nongated", "relu", "gelu_fast"})

#: Pre-transformers model types whose config transformers later took over under another name: used
#: only to look up that type's class defaults (``tie_word_embeddings``) in the snapshot. Keyed by the
#: config's ``model_type`` as written (case kept).
LEGACY_TYPES = {"RefinedWeb": "falcon", "RefinedWebModel": "falcon"}


@dataclass(frozen=True)
class Quirks:
    """What one model family does that its config keys do not say (each field's default: nothing special).

    Looked up by :func:`quirks_of` with the text model type, lower-cased (the SSM check: the top-level
    ``model_type`` as written). Every use notes what it inferred in ``parse_notes``.
    """

    #: False: the MLP has no gate (``up -> act -> down``; transformers' modeling code for the family).
    gated_mlp: bool = True
    #: Every attention and MLP linear layer carries a bias while the config has no flag saying so
    #: (transformers hard-codes it: GPT-2 Conv1D c_attn / c_proj / c_fc, GPT-BigCode, GPT-NeoX, BLOOM,
    #: Phi-1/2, OPT, CodeShell).
    linear_bias: bool = False
    #: Config key that switches those biases (OPT ``enable_bias``, default True); read first.
    bias_key: str | None = None
    #: Learned absolute position table (``wpe`` / ``embed_positions``) when the config says nothing
    #: else: its rows are ``max_position_embeddings`` plus this offset (OPT's
    #: ``OPTLearnedPositionalEmbedding`` has 2 extra rows). None: no such table by default.
    learned_position_offset: int | None = None
    #: A per-head output gate folded into ``q_proj`` when ``attn_output_gate`` is absent (Qwen3-Next).
    output_gate: bool = False
    #: Config key of a separate output-gate projection ``g_proj`` (Laguna ``gating``, vLLM
    #: models/laguna.py:327-351).
    gate_key: str | None = None
    #: Sliding and full layers alternate when no pattern is given (Gemma-2, Cohere-2: odd layers slide).
    alternating_sliding: bool = False
    #: ``attention_chunk_size`` means chunked local attention on the RoPE layers (Llama 4).
    chunked_local_attention: bool = False
    #: One shared expert of ``intermediate_size`` when the config names none (Llama 4).
    implicit_shared_expert: bool = False
    #: The MLP width is computed, not read: ``f(reader, notes) -> int | None`` (LFM2 ``Lfm2MLP``).
    mlp_width: Callable[[Reader, list[str]], int | None] | None = None
    #: The config's MLP width is rewritten: ``f(intermediate_size, notes) -> width`` (Qwen v1 ``QWenMLP``).
    mlp_width_adjust: Callable[[int, list[str]], int] | None = None
    #: ``f(reader, notes) -> True`` when this config of the family has a non-gated MLP (ChatGLM-6B v1).
    nongated_when: Callable[[Reader, list[str]], bool] | None = None
    #: Gated short-convolution blocks (``Lfm2ShortConv``) fill the layers that are not attention.
    short_conv_blocks: bool = False
    #: Each block is one of mamba / attention / mlp / moe, one norm each (Nemotron-H).
    hybrid_blocks: bool = False
    #: Mamba / SSM mixers even when the config has no ``ssm_state_size`` / ``mamba_num_heads``.
    ssm_mixer: bool = False


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



def qwen_v1_mlp_width(inter: int, notes: list[str]) -> int:
    """Qwen (v1, remote code ``QWenMLP``): w1 and w2 are each ``intermediate_size // 2`` wide and c_proj maps
    ``intermediate_size // 2`` back, so the config value counts gate and up together: the gated MLP width
    is half of it (noted)."""
    half = inter // 2
    notes.append(f"qwen (v1): config intermediate_size {inter} spans w1 and w2 together "
                 f"(QWenMLP): the gated MLP width is {half}")
    return half


def chatglm_v1_nongated(r: Reader, notes: list[str]) -> bool:
    """ChatGLM-6B (v1, ``inner_hidden_size``): dense_h_to_4h -> GELU -> dense_4h_to_h (its "GLU" class has no
    gate); ChatGLM2/3 (``ffn_hidden_size``) use SwiGLU with dense_h_to_4h of 2 x ffn_hidden_size."""
    if r.get("inner_hidden_size") is not None and r.get("ffn_hidden_size") is None:
        notes.append("chatglm v1 (inner_hidden_size): non-gated GELU MLP")
        return True
    return False


_NONGATED = Quirks(gated_mlp=False)
_NONGATED_BIASED = Quirks(gated_mlp=False, linear_bias=True)

#: model_type (lower case) -> its quirks; a key ending in ``*`` matches every type with that prefix.
#: An exact key wins over a prefix key (and then carries the prefix's settings too: checked by
#: ``tests/catalog/test_catalog_quirks.py``).
FAMILIES: dict[str, Quirks] = {
    # non-gated MLPs (transformers' modeling code); remote-code families read as JSON only: Falcon's
    # pre-transformers RW types and CodeShell (GPT-BigCode-style c_fc / c_proj MLP). stablelm_epoch is
    # *not* here: StableLM-3B-4E1T / stable-code-3b use a SwiGLU gate_proj / up_proj / down_proj MLP.
    "gpt2": Quirks(gated_mlp=False, linear_bias=True, learned_position_offset=0),
    "gpt2*": _NONGATED,
    "gpt_bigcode": Quirks(gated_mlp=False, linear_bias=True, learned_position_offset=0),
    "gpt_neox": _NONGATED_BIASED,
    "gpt_neo": _NONGATED,
    "gptj": _NONGATED,
    "falcon": _NONGATED,
    "bloom": _NONGATED_BIASED,
    "opt": Quirks(gated_mlp=False, linear_bias=True, bias_key="enable_bias", learned_position_offset=2),
    "starcoder2": _NONGATED,
    "phi": _NONGATED_BIASED,
    "mpt": _NONGATED,
    "codegen": _NONGATED,
    "nemotron": _NONGATED,
    "bert": _NONGATED,
    "roberta": _NONGATED,
    "t5": _NONGATED,
    "persimmon": _NONGATED,
    "olmo_hf": _NONGATED,
    "refinedweb": _NONGATED,
    "refinedwebmodel": _NONGATED,
    "codeshell": _NONGATED_BIASED,
    "biogpt": Quirks(learned_position_offset=2),
    "chatglm": Quirks(nongated_when=chatglm_v1_nongated),
    "qwen": Quirks(mlp_width_adjust=qwen_v1_mlp_width),
    "qwen3_next": Quirks(output_gate=True),
    "laguna": Quirks(gate_key="gating"),
    "gemma2*": Quirks(alternating_sliding=True),
    "cohere2*": Quirks(alternating_sliding=True),
    "llama4*": Quirks(chunked_local_attention=True, implicit_shared_expert=True),
    "lfm2*": Quirks(mlp_width=lfm2_ff_dim, short_conv_blocks=True),
    "nemotron_h*": Quirks(hybrid_blocks=True, ssm_mixer=True),
    "mamba*": Quirks(ssm_mixer=True),
    "falcon_h*": Quirks(ssm_mixer=True),
    "jamba*": Quirks(ssm_mixer=True),
    "zamba*": Quirks(ssm_mixer=True),
    "granitemoehybrid*": Quirks(ssm_mixer=True),
}

#: The quirks of a model type no family entry names.
NO_QUIRKS = Quirks()

_EXACT = {k: v for k, v in FAMILIES.items() if not k.endswith("*")}
_PREFIXES = tuple((k[:-1], v) for k, v in FAMILIES.items() if k.endswith("*"))


def quirks_of(model_type: str | None) -> Quirks:
    """The :class:`Quirks` of ``model_type`` (compared as given: callers pass the lower-cased text model
    type): its exact :data:`FAMILIES` entry, else the entry of the first prefix it starts with, else
    :data:`NO_QUIRKS`. Never raises."""
    mt = model_type or ""
    q = _EXACT.get(mt)
    if q is not None:
        return q
    for prefix, pq in _PREFIXES:
        if mt.startswith(prefix):
            return pq
    return NO_QUIRKS


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
