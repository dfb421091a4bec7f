"""Which parts of a quantized checkpoint vLLM 0.33.0 really quantizes, and in which format.

A checkpoint's ``quantization_config`` rarely covers every linear layer: ModelOpt exports list the
modules they leave in 16-bit (``ignore`` / ``exclude_modules``, shell wildcards) or name a format per
module (``quant_algo: MIXED_PRECISION`` + ``quantized_layers``); compressed-tensors configs target
modules by class (``"Linear"``), name or ``re:`` regex (``config_groups.*.targets``) and skip others
(``ignore``); ``fp8`` configs skip ``modules_to_not_convert``; DeepSeek-V4 keeps its routed experts in
FP4 (``expert_dtype``) beside block-FP8 attention. vLLM decides per module by matching those lists
against ITS OWN module names (after renaming the config's names with the model's
``hf_to_vllm_mapper``), so this module generates, per decoder layer and per part, the vLLM names of the
part's main linear modules (:data:`ARCH_NAMES`, cited from each vLLM model file) and replays vLLM's
matching rules on them:

* ModelOpt (``layers/quantization/modelopt.py:191-226`` ``is_layer_excluded``: exact match with fused
  shards and the ``experts`` rule of ``utils/quant_utils.py:619-693`` ``is_layer_skipped``, then
  substring, then ``fnmatch``; ``:266-286`` rewrites ``name*`` to ``name`` + ``name.*``;
  ``:228-264`` ``get_quant_method`` also keeps ``vision_tower`` / ``vision_model`` in 16-bit;
  MIXED_PRECISION ``:1748-1842`` ``_resolve_quant_algo``; NVFP4 W4A4 without input activations in
  every group becomes W4A16, ``:785-806``);
* compressed-tensors (``compressed_tensors/compressed_tensors.py:159-219`` ``get_quant_method``,
  ``:998-1031`` ``get_scheme_dict``, ``compressed_tensors/utils.py`` ``should_ignore_layer`` /
  ``find_matched_target``; routed experts are matched through their unfused checkpoint names
  ``{prefix}.0.{gate,up,down}`` (``compressed_tensors_moe/compressed_tensors_moe.py:28-58``), and a
  ``"Linear"`` target reaches them only through the ``RoutedExperts`` alias of ``:221-233``);
* ``fp8`` (``fp8.py:177-207``: ``ignored_layers`` / ``modules_to_not_convert``, exact match; the LM
  head is never quantized) and its DeepSeek-V4 subclass (``models/deepseek_v41/quant_config.py``:
  routed experts MXFP4 when ``expert_dtype == "fp4"``, NVFP4 when ``moe_quant_algo == "NVFP4"`` unless
  the ModelOpt ``ignore`` globs name ``layers.{i}.ffn.experts``; block-FP8 when ``expert_dtype ==
  "fp8"``);
* ``mxfp4`` (``mxfp4.py:91-113``: routed experts only).

Untrusted input: lists are capped (:data:`MAX_LIST` entries of at most :data:`MAX_NAME` characters),
patterns go through :mod:`dashboard.safe_match` (no :mod:`re` on config text, linear-time matching),
layers are capped (:data:`MAX_LAYERS`) and the whole matching job is priced up front
(:data:`MAX_WORK`); anything unreadable or too large yields NA columns and a note, never an exception.

Pure: no I/O.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dashboard.safe_match import PatternError, compile_regex, glob_match

#: Parts of a model whose quantization is described (catalog columns ``quant_<part>_fraction`` and
#: ``quant_<part>_format``).
PARTS: tuple[str, ...] = ("attention", "linear_attention", "dense_mlp", "shared_experts", "experts",
                          "lm_head", "router", "vision")

#: Weight formats (``quant_<part>_format``): what vLLM allocates per quantized weight element.
FORMATS: dict[str, str] = {
    "nvfp4": "uint8 packed e2m1 (0.5 B) + float8_e4m3fn scale per 16 + float32 per-tensor scales",
    "mxfp4": "uint8 packed e2m1 (0.5 B) + uint8 e8m0 scale per 32",
    "mxfp8": "float8_e4m3fn (1 B) + uint8 e8m0 scale per 32",
    "fp8": "float8_e4m3fn (1 B) + one float32 scale per tensor",
    "fp8-channel": "float8_e4m3fn (1 B) + float32 scale per output channel",
    "fp8-block": "float8_e4m3fn (1 B) + float32 scale per weight_block_n x weight_block_k block",
    "int4": "4-bit integers packed in int32 + 16-bit scale per group (quant_group_size)",
    "int8": "8-bit integers + 16-bit scale per group or channel",
}

MAX_LIST = 100_000      # entries read from one config list
MAX_LAYERS = 4096       # decoder layers examined
MAX_NAME = 300          # characters of one config entry
#: Matching budget: candidate module names x per-name cost (1 per plain substring test, 4 per shell
#: wildcard, 40 per ``re:`` pattern). Real checkpoints stay below 1e6; a config above the budget gets
#: NA columns and a note instead of minutes of matching.
MAX_WORK = 30_000_000


# ----------------------------------------------------------------------------------------------
# vLLM module names per architecture
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArchNames:
    """vLLM 0.33.0 module names of one architecture (``{i}`` = decoder layer index).

    ``attention`` etc. are linear modules under the layer prefix (their main projections; small side
    projections such as GDN ``in_proj_ba`` are left out). ``experts`` is the ``RoutedExperts`` prefix
    under the layer and ``expert_proj`` its checkpoint (gate, up, down) names. ``router`` is the gate
    module when vLLM builds it with the quantization config, ``None`` when it never does
    (``GateLinear`` without ``quant_config``). ``rename`` is the prefix / substring renaming of the
    model class's ``hf_to_vllm_mapper.get_rename_mapper()`` (``None``: the class has no mapper, so
    vLLM never calls ``apply_vllm_mapper``). ``vision_skip``: quantization methods (``quant_method``
    values, ``"*"`` = all) for which vLLM builds the vision tower without the quantization config.
    """
    source: str
    layer: str = "model.layers.{i}"
    attention: tuple[str, ...] = ("self_attn.qkv_proj", "self_attn.o_proj")
    linear_attention: tuple[str, ...] = ()
    dense_mlp: tuple[str, ...] = ("mlp.gate_up_proj", "mlp.down_proj")
    shared_experts: tuple[str, ...] = ("mlp.shared_experts.gate_up_proj", "mlp.shared_experts.down_proj")
    experts: str = "mlp.experts"
    expert_proj: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")
    router: str | None = None
    lm_head: str = "lm_head"
    vision: tuple[str, ...] = ()
    vision_skip: tuple[str, ...] = ()
    packed: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {
        "qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")})
    rename: tuple[tuple[str, str, str], ...] | None = None


_MLA = ("self_attn.fused_qkv_a_proj", "self_attn.q_b_proj", "self_attn.kv_b_proj", "self_attn.o_proj")
_MLA_NO_QLORA = ("self_attn.q_proj", "self_attn.kv_a_proj_with_mqa", "self_attn.kv_b_proj", "self_attn.o_proj")
_DSV2_PACKED = {"gate_up_proj": ("gate_proj", "up_proj"), "fused_qkv_a_proj": ("q_a_proj", "kv_a_proj_with_mqa"),
                "qkv_proj": ("q_proj", "k_proj", "v_proj")}
_DSV2 = ArchNames("models/deepseek_v2.py:1872-1915 (DeepseekV2ForCausalLM: GateLinear router without quant_config, "
                  ":321; no hf_to_vllm_mapper)", attention=_MLA, packed=_DSV2_PACKED)
_QWEN3_VL_RENAME = (("prefix", "model.visual.", "visual."), ("prefix", "lm_head.", "language_model.lm_head."),
                    ("prefix", "model.language_model.", "language_model.model."))
_QWEN35_PACKED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj"),
                  "in_proj_qkvz": ("in_proj_qkv", "in_proj_z"), "in_proj_ba": ("in_proj_b", "in_proj_a")}
_QWEN35 = ArchNames(
    "models/qwen3_5.py:473-484 (Qwen3_5(Moe)ForConditionalGeneration: Qwen3-VL mapper qwen3_vl.py:1969-1975; "
    "GDN layers/mamba/gdn/qwen_gdn_linear_attn.py:601-682; GateLinear router qwen3_next.py:191)",
    layer="language_model.model.layers.{i}",
    linear_attention=("linear_attn.in_proj_qkvz", "linear_attn.out_proj"),
    shared_experts=("mlp.shared_expert.gate_up_proj", "mlp.shared_expert.down_proj"),
    lm_head="language_model.lm_head", vision=("visual.blocks.0.attn.qkv", "visual.blocks.0.mlp.linear_fc1"),
    packed=_QWEN35_PACKED, rename=_QWEN3_VL_RENAME)

#: Architectures whose vLLM module names are modelled, keyed by catalog ``model_type``.
ARCH_NAMES: dict[str, ArchNames] = {
    "deepseek_v2": _DSV2, "deepseek_v3": _DSV2, "deepseek_v32": _DSV2, "kimi_k2": _DSV2,
    "glm_moe_dsa": replace(_DSV2, source="models/registry.py:126 GlmMoeDsaForCausalLM(DeepseekV2ForCausalLM), "
                                          "models/deepseek_v2.py:1872-1915"),
    "kimi_k25": replace(_DSV2, source="models/kimi_k25.py:300-390 (KimiK25ForConditionalGeneration: mapper "
                                      "language_model.layers. -> language_model.model.layers.; language model "
                                      "DeepseekV2ForCausalLM; MoonViT vision_tower without a compressed-tensors "
                                      "config, _maybe_ignore_quant_config)", vision_skip=("compressed-tensors",),
                        layer="language_model.model.layers.{i}", lm_head="language_model.lm_head",
                        vision=("vision_tower.encoder.blocks.0.wqkv", "vision_tower.encoder.blocks.0.mlp.fc0"),
                        rename=(("prefix", "language_model.layers.", "language_model.model.layers."),
                                ("prefix", "mm_projector.proj.0", "mm_projector.linear_1"),
                                ("prefix", "mm_projector.proj.2", "mm_projector.linear_2"))),
    "minimax_m2": ArchNames(
        "models/minimax_m2.py:324-330, 429-436 (block_sparse_moe with w1/w3/w2 experts; float32 GateLinear router)",
        dense_mlp=(), shared_experts=(), experts="block_sparse_moe.experts", expert_proj=("w1", "w3", "w2"),
        rename=()),
    "minimax_m3_vl": ArchNames(
        "models/minimax_m3/nvidia/model.py:1042-1175 (MiniMaxM3SparseForConditionalGeneration: language_model. "
        "prefix, fused qkv_proj with the indexer, block_sparse_moe w1/w3/w2 experts, GateLinear router)",
        layer="language_model.model.layers.{i}",
        shared_experts=("block_sparse_moe.shared_experts.gate_up_proj", "block_sparse_moe.shared_experts.down_proj"),
        experts="block_sparse_moe.experts", expert_proj=("w1", "w3", "w2"), lm_head="language_model.lm_head",
        vision=("vision_tower.vision_model.encoder.layers.0.self_attn.qkv_proj",),
        rename=(("prefix", "multi_modal_projector.", "vision_tower.multi_modal_projector."),
                ("prefix", "patch_merge_mlp.", "vision_tower.patch_merge_mlp."),
                ("substr", ".mlp.fc1.", ".fc1."), ("substr", ".mlp.fc2.", ".fc2."))),
    "qwen3_5": _QWEN35, "qwen3_5_moe": _QWEN35,
    "qwen3_moe": ArchNames("models/qwen3_moe.py:170-212, 436, 552 (GateLinear router; shared_expert)",
                           shared_experts=("mlp.shared_expert.gate_up_proj", "mlp.shared_expert.down_proj"), rename=()),
    "deepseek_v4": ArchNames(
        "models/deepseek_v4/nvidia/model.py:1203-1327 (attn.fused_wqa_wkv / wq_b / wo_a / wo_b, ffn.experts "
        "w1/w3/w2, ffn.shared_experts; mapper layers. -> model.layers., head -> lm_head)",
        attention=("attn.fused_wqa_wkv", "attn.wq_b", "attn.wo_a", "attn.wo_b"), dense_mlp=(),
        shared_experts=("ffn.shared_experts.gate_up_proj", "ffn.shared_experts.down_proj"),
        experts="ffn.experts", expert_proj=("w1", "w3", "w2"),
        packed={"gate_up_proj": ("w1", "w3"), "fused_wqa_wkv": ("wq_a", "wkv"), "fused_wkv_wgate": ("wkv", "wgate")},
        rename=(("prefix", "layers.", "model.layers."), ("prefix", "embed.", "model.embed."),
                ("prefix", "norm.", "model.norm."), ("prefix", "hc_head", "model.hc_head"),
                ("prefix", "mtp.", "model.mtp."), ("suffix", "head.weight", "lm_head.weight"),
                ("suffix", "embed.weight", "embed_tokens.weight"),
                ("substr", ".shared_experts.w2", ".shared_experts.down_proj"))),
    "llama4": ArchNames(
        "models/mllama4.py:737-790 (vision_model and projector built with quant_config=None), models/llama4.py:"
        "101-142, 338-356 (feed_forward: router GateLinear, shared_expert, experts)",
        layer="language_model.model.layers.{i}", dense_mlp=("feed_forward.gate_up_proj", "feed_forward.down_proj"),
        shared_experts=("feed_forward.shared_expert.gate_up_proj", "feed_forward.shared_expert.down_proj"),
        experts="feed_forward.experts", lm_head="language_model.lm_head",
        vision=("vision_model.model.layers.0.self_attn.qkv_proj",), vision_skip=("*",)),
    "laguna": ArchNames(
        "models/laguna.py:90-111, 176-222, 314-347, 570-576, 700 (self_attn qkv/o/g_proj, unfused gate/up/down "
        "MLPs, mlp.shared_expert, GateLinear router; stacked-only mapper)",
        attention=("self_attn.qkv_proj", "self_attn.o_proj", "self_attn.g_proj"),
        dense_mlp=("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"),
        shared_experts=("mlp.shared_expert.gate_proj", "mlp.shared_expert.up_proj", "mlp.shared_expert.down_proj"),
        rename=()),
    "gemma4": ArchNames(
        "models/gemma4_mm.py:1053-1075 (mapper model.vision_tower -> vision_tower, model.language_model. -> "
        "language_model.model.), models/gemma4.py:592-696 (self_attn, mlp, router, experts)",
        layer="language_model.model.layers.{i}", shared_experts=(), experts="experts",
        lm_head="language_model.lm_head", vision=("vision_tower.encoder.layers.0.self_attn.q_proj",),
        rename=(("prefix", "model.vision_tower", "vision_tower"), ("prefix", "model.embed_vision", "embed_vision"),
                ("prefix", "model.audio_tower.", "audio_tower."), ("prefix", "model.embed_audio.", "embed_audio."),
                ("prefix", "model.language_model.", "language_model.model."),
                ("prefix", "lm_head.", "language_model.lm_head."))),
    "gpt_oss": ArchNames("models/gpt_oss.py:144-152, 382-397, 547-549, 1373 (attn.qkv_proj/o_proj, mlp.router, "
                         "mlp.experts w1/w3/w2)",
                         attention=("attn.qkv_proj", "attn.o_proj"), dense_mlp=(), shared_experts=(),
                         expert_proj=("w1", "w3", "w2"), rename=()),
    "kimi_k3": ArchNames(
        "models/kimi_k3/nvidia/model.py:935-941, 1298-1300, 1584-1590, 1882-1887 (KimiK3ForConditionalGeneration: "
        "language_model. prefix; MLA and KDA both under self_attn; block_sparse_moe experts w1/w3/w2 and "
        "shared_experts; MoonViT without a compressed-tensors config)",
        layer="language_model.model.layers.{i}",
        attention=("self_attn.fused_qkv_a_g_proj", "self_attn.q_b_proj", "self_attn.kv_b_proj", "self_attn.o_proj"),
        linear_attention=("self_attn.in_proj_qkvgfab", "self_attn.o_proj"),
        shared_experts=("block_sparse_moe.shared_experts.gate_up_proj", "block_sparse_moe.shared_experts.down_proj"),
        experts="block_sparse_moe.experts", expert_proj=("w1", "w3", "w2"), lm_head="language_model.lm_head",
        vision=("vision_tower.encoder.blocks.0.wqkv",), vision_skip=("compressed-tensors",),
        packed={"gate_up_proj": ("gate_proj", "up_proj"),
                "in_proj_qkvgfab": ("q_proj", "k_proj", "v_proj", "b_proj", "f_a_proj"),
                "fused_qkv_a_proj": ("q_a_proj", "kv_a_proj_with_mqa"),
                "fused_qkv_a_g_proj": ("q_a_proj", "kv_a_proj_with_mqa", "g_proj")},
        rename=(("prefix", "language_model.layers.", "language_model.model.layers."),
                ("prefix", "mm_projector.proj.0", "mm_projector.linear_1"),
                ("prefix", "mm_projector.proj.2", "mm_projector.linear_2"))),
}


def _generic(model_type: str) -> ArchNames:
    return ArchNames(f"generic Llama-style names (model_type {model_type!r} not in ARCH_NAMES)")


# ----------------------------------------------------------------------------------------------
# Layer plan: which decoder layers have which parts
# ----------------------------------------------------------------------------------------------
def _ints(v: Any, n: int) -> list[int] | None:
    if not isinstance(v, list):
        return None
    return [x for x in v[:MAX_LIST] if isinstance(x, int) and not isinstance(x, bool)]


def layer_plan(text: Mapping, n: int, is_moe: bool, num_linear: int) -> tuple[list[str], list[bool], list[bool], list[str]]:
    """Per decoder layer: attention kind (``attention`` / ``linear_attention`` / ``none``), has a dense
    MLP, has routed experts; plus notes. Mirrors the catalog's layer counting (``catalog._layers`` /
    ``_moe``) but keeps positions, which per-layer name lists need."""
    notes: list[str] = []
    attn = ["attention"] * n
    lt, lbt, hop = text.get("layer_types"), text.get("layers_block_type"), text.get("hybrid_override_pattern")
    lac, fai = text.get("linear_attn_config"), text.get("full_attention_interval")
    if isinstance(lt, list) and lt:
        for i, t in enumerate(lt[:n]):
            s = t.lower() if isinstance(t, str) else ""
            if s in ("conv", "short_conv", "shortconv"):
                attn[i] = "none"
            elif any(k in s for k in ("linear", "mamba", "ssm", "kda", "gdn", "delta")):
                attn[i] = "linear_attention"
    elif isinstance(lbt, list) and lbt:
        for i, t in enumerate(lbt[:n]):
            s = str(t).lower()
            attn[i] = ("linear_attention" if s in ("mamba", "m", "ssm", "linear_attention") else
                       "attention" if s in ("attention", "*", "full_attention") else "none")
    elif isinstance(hop, str) and hop:
        for i, ch in enumerate(hop[:n]):
            attn[i] = "linear_attention" if ch == "M" else "attention" if ch == "*" else "none"
    elif isinstance(lac, Mapping) and (lac.get("kda_layers") is not None or lac.get("full_attn_layers") is not None):
        kda = _ints(lac.get("kda_layers"), n)
        full = _ints(lac.get("full_attn_layers"), n)
        if kda is not None:  # 1-based (transformers_utils/configs/kimi_linear.py:160)
            ks = set(kda)
            attn = ["linear_attention" if (i + 1) in ks else "attention" for i in range(n)]
        elif full is not None:
            fs = set(full)
            attn = ["attention" if (i + 1) in fs else "linear_attention" for i in range(n)]
    elif isinstance(fai, int) and not isinstance(fai, bool) and fai > 0:
        attn = ["attention" if (i + 1) % fai == 0 else "linear_attention" for i in range(n)]
    elif num_linear:
        attn = ["linear_attention"] * num_linear + ["attention"] * (n - num_linear)
        notes.append("positions of the linear-attention layers unknown: the first ones assumed")

    dense = [not is_moe] * n
    moe = [is_moe] * n
    if is_moe:
        mlt, ml, mlf = text.get("mlp_layer_types"), text.get("moe_layers"), text.get("moe_layer_freq")
        fkd, mol, dss = text.get("first_k_dense_replace"), text.get("mlp_only_layers"), text.get("decoder_sparse_step")
        ils = text.get("interleave_moe_layer_step")
        if text.get("enable_moe_block") is True:
            dense = [True] * n  # Gemma-4: a dense MLP beside the experts in every layer
        elif isinstance(lbt, list) and lbt:
            moe = [str(t).lower() in ("moe", "e") for t in lbt[:n]] + [False] * max(0, n - len(lbt))
            dense = [str(t).lower() in ("mlp", "-", "dense") for t in lbt[:n]] + [False] * max(0, n - len(lbt))
        elif isinstance(hop, str) and hop:
            moe = [hop[i] == "E" if i < len(hop) else False for i in range(n)]
            dense = [hop[i] == "-" if i < len(hop) else False for i in range(n)]
        elif isinstance(mlt, list) and mlt:
            dense = [str(mlt[i]).lower() in ("dense", "mlp") if i < len(mlt) else False for i in range(n)]
            moe = [not d for d in dense]
        elif isinstance(ml, list):
            s = set(_ints(ml, n) or [])
            moe = [i in s for i in range(n)]
            dense = [not m for m in moe]
        elif isinstance(mlf, list) and mlf:
            moe = [bool(mlf[i]) if i < len(mlf) else False for i in range(n)]
            dense = [not m for m in moe]
        else:
            if isinstance(fkd, int) and not isinstance(fkd, bool) and fkd > 0:
                for i in range(min(fkd, n)):
                    moe[i] = False
            for step in (mlf, dss, ils):
                if isinstance(step, int) and not isinstance(step, bool) and step > 1:
                    off = 0 if step is mlf else 1
                    for i in range(n):
                        if (i + off) % step != 0:
                            moe[i] = False
            for i in _ints(mol, n) or []:
                if 0 <= i < n:
                    moe[i] = False
            dense = [not m for m in moe]
    return attn, dense, moe, notes


# ----------------------------------------------------------------------------------------------
# Pattern lists
# ----------------------------------------------------------------------------------------------
class _Bad(Exception):
    """The config cannot be evaluated (reason in args[0])."""


def _str_list(v: Any, what: str, notes: list[str]) -> list[str]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise _Bad(f"{what} is not a list")
    out = [x for x in v[:MAX_LIST] if isinstance(x, str) and len(x) <= MAX_NAME]
    if len(out) != min(len(v), MAX_LIST):
        notes.append(f"{what}: {min(len(v), MAX_LIST) - len(out)} entries not strings or longer than {MAX_NAME} characters ignored")
    if len(v) > MAX_LIST:
        notes.append(f"{what}: only the first {MAX_LIST} of {len(v)} entries read")
    return out


def _rename(name: str, rules: tuple[tuple[str, str, str], ...] | None) -> str:
    """``WeightsMapper._map_name_with_shard`` for the renaming rules kept by ``get_rename_mapper``
    (``models/utils.py:89-145, 180-199``): substrings, then prefixes, then suffixes."""
    if not rules:
        return name
    for kind, old, new in rules:
        if kind == "substr" and old in name:
            name = name.replace(old, new, 1)
    for kind, old, new in rules:
        if kind == "prefix" and name.startswith(old):
            name = name.replace(old, new, 1)
    for kind, old, new in rules:
        if kind == "suffix" and name.endswith(old):
            name = new.join(name.rsplit(old, 1))
    return name


class _Regexes:
    """``re:`` patterns compiled once with :mod:`dashboard.safe_match`; unsupported ones are noted and
    never match."""

    def __init__(self, notes: list[str]):
        self.cache: dict[str, Any] = {}
        self.notes = notes

    def match(self, pattern: str, name: str) -> bool:
        p = self.cache.get(pattern)
        if p is None:
            try:
                p = compile_regex(pattern)
            except PatternError as e:
                self.notes.append(f"quantization pattern 're:{pattern[:60]}' not evaluated ({e})")
                p = False
            self.cache[pattern] = p
        return bool(p) and p.match(name)


def _eq_or_re(name: str, target: str, rx: _Regexes) -> bool:
    """vLLM ``is_equal_or_regex_match`` without ``check_contains`` (``utils/config_utils.py:432-452``)."""
    if target.startswith("re:"):
        return rx.match(target[3:], name)
    return target == name


# ----------------------------------------------------------------------------------------------
# Formats
# ----------------------------------------------------------------------------------------------
_MODELOPT_FORMATS = {"NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8-channel",
                     "FP8_PB_WO": "fp8-block", "FP8_BLOCK_SCALES": "fp8-block", "MXFP8": "mxfp8"}


def _ct_format(w: Mapping, fmt: str | None) -> str | None:
    """compressed-tensors weight arguments -> format token (``_get_scheme_from_parts``)."""
    bits, typ = w.get("num_bits"), str(w.get("type") or "int").lower()
    strategy, gs = str(w.get("strategy") or "").lower(), w.get("group_size")
    fmt = (fmt or "").lower()
    if typ == "float" and bits == 4:
        if gs == 32 or "mxfp4" in fmt or "uint8" in str(w.get("scale_dtype") or ""):
            return "mxfp4"
        return "nvfp4"
    if typ == "float" and bits == 8:
        if strategy == "block" or w.get("block_structure") is not None:
            return "fp8-block"
        if strategy == "channel":
            return "fp8-channel"
        if strategy == "group" and gs == 32:
            return "mxfp8"
        return "fp8"
    if typ == "int" and bits in (4, 8):
        return f"int{bits}"
    return None


# ----------------------------------------------------------------------------------------------
# One quantization method's decision for one module
# ----------------------------------------------------------------------------------------------
@dataclass
class _Module:
    name: str          # full vLLM prefix
    kind: str          # "linear", "experts", "lm_head", "router", "vision"


def _class_name(m: _Module) -> str:
    if m.kind == "experts":
        return "RoutedExperts"
    if m.kind == "lm_head":
        return "ParallelLMHead"
    if m.kind == "router":
        return "ReplicatedLinear"
    last = m.name.rsplit(".", 1)[-1]
    if last.endswith("qkv_proj") or last in ("qkv",):
        return "QKVParallelLinear"
    if last.startswith(("gate_up", "fused", "in_proj")):
        return "MergedColumnParallelLinear"
    if last in ("o_proj", "down_proj", "out_proj", "wo_b", "proj", "fc2", "linear_fc2", "wo"):
        return "RowParallelLinear"
    return "ColumnParallelLinear"


class _Method:
    """Base: ``decide(module) -> format token or None (16-bit)``."""

    def __init__(self, arch: ArchNames, notes: list[str]):
        self.arch = arch
        self.notes = notes
        self.rx = _Regexes(notes)

    def decide(self, m: _Module) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def cost_per_name(self) -> int:
        """Upper bound of the pattern tests one module name costs (see :data:`MAX_WORK`)."""
        return 1

    def skipped_exact(self, prefix: str, ignored: list[str] | set[str]) -> bool:
        """``is_layer_skipped(match_mode="exact")`` (``utils/quant_utils.py:619-693``)."""
        packed = self.arch.packed
        proj = prefix.rsplit(".", 1)[-1]
        if proj in packed and prefix in ignored:
            return True
        if proj in packed:
            shards = [prefix.replace(proj, s) in ignored for s in packed[proj]]
            if any(shards) and not all(shards):
                self.notes.append(f"{prefix}: only some shards of a fused layer listed (vLLM refuses this)")
            return all(shards)
        if "experts" in prefix:
            return any(prefix in x for x in ignored if "experts" in x)
        return prefix in ignored


class _ModelOpt(_Method):
    def __init__(self, q: Mapping, arch: ArchNames, notes: list[str]):
        super().__init__(arch, notes)
        src = q.get("quantization") if isinstance(q.get("quantization"), Mapping) else q
        algo = src.get("quant_algo")
        if not isinstance(algo, str) or not algo:
            raise _Bad("ModelOpt quant_algo missing")
        self.algo = algo.upper()
        key = "exclude_modules" if src is not q else ("ignore" if "ignore" in q else "exclude_modules")
        excl = _str_list(src.get(key), key, notes)
        if arch.rename is not None:  # apply_vllm_mapper (modelopt.py:266-286)
            split: list[str] = []
            for e in excl:
                if len(e) >= 2 and e[-1] == "*" and e[-2] != ".":
                    split += [e[:-1], e[:-1] + ".*"]
                else:
                    split.append(e)
            excl = [_rename(e, arch.rename) for e in split]
        self.excl = excl
        self.excl_set = set(excl)
        self.excl_plain = [e for e in excl if not any(ch in e for ch in "*?[")]
        self.excl_glob = [e for e in excl if any(ch in e for ch in "*?[")]
        self.mixed = self.algo == "MIXED_PRECISION"
        self.layers: dict[str, str] = {}
        self.sorted_keys: list[str] = []
        if self.mixed:
            ql = src.get("quantized_layers")
            if not isinstance(ql, Mapping) or not ql:
                raise _Bad("MIXED_PRECISION without a quantized_layers mapping")
            for i, (k, v) in enumerate(ql.items()):
                if i >= MAX_LIST:
                    notes.append(f"quantized_layers: only the first {MAX_LIST} entries read")
                    break
                a = v.get("quant_algo") if isinstance(v, Mapping) else None
                if isinstance(k, str) and len(k) <= MAX_NAME and isinstance(a, str):
                    name = _rename(k, arch.rename) if arch.rename is not None else k
                    self.layers[name] = a.upper()
            if not self.layers:
                raise _Bad("quantized_layers has no usable entry")
            self.sorted_keys = sorted(self.layers)
            self.single = None
        else:
            if self.algo not in _MODELOPT_FORMATS:
                raise _Bad(f"ModelOpt quant_algo {self.algo} not modelled")
            self.single = _MODELOPT_FORMATS[self.algo]

    def cost_per_name(self) -> int:
        return 1 + len(self.excl_plain) + 4 * len(self.excl_glob)

    def excluded(self, prefix: str) -> bool:
        """``ModelOptQuantConfigBase.is_layer_excluded`` (``modelopt.py:191-226``)."""
        if not self.excl:
            return False
        if self.skipped_exact(prefix, self.excl_set):
            return True
        stripped = prefix[len("language_model."):] if prefix.startswith("language_model.") else None
        for e in self.excl_plain:
            if e != prefix and (e in prefix or (stripped is not None and e in stripped)):
                return True
        for e in self.excl_glob:
            if e != prefix and (e in prefix or (stripped is not None and e in stripped)):
                return True
            if glob_match(prefix, e):
                return True
        return False

    @staticmethod
    def _candidates(prefix: str) -> list[str]:
        c = [prefix]
        if prefix.endswith(".lm_head"):
            c.append("lm_head")
        if prefix.startswith("language_model.model."):
            c.append("model.language_model." + prefix[len("language_model.model."):])
        elif prefix.startswith("model.language_model."):
            c.append("language_model.model." + prefix[len("model.language_model."):])
        return list(dict.fromkeys(c))

    def _under(self, prefix: str) -> str | None:
        """Algo of a ``quantized_layers`` key starting with ``prefix + "."`` (vLLM takes the first in
        dict order; here the first in sorted order, the same whenever the keys under one module agree)."""
        dot = prefix + "."
        j = bisect.bisect_left(self.sorted_keys, dot)
        if j < len(self.sorted_keys) and self.sorted_keys[j].startswith(dot):
            return self.layers[self.sorted_keys[j]]
        return None

    def resolve(self, prefix: str) -> str | None:
        """``ModelOptMixedPrecisionConfig._resolve_quant_algo`` (``modelopt.py:1748-1825``)."""
        for c in self._candidates(prefix):
            if c in self.layers:
                return self.layers[c]
        proj = prefix.rsplit(".", 1)[-1]
        if proj in self.arch.packed:
            base = prefix.rsplit(".", 1)[0]
            algos = {self.layers[f"{b}.{s}"] for b in self._candidates(base) for s in self.arch.packed[proj]
                     if f"{b}.{s}" in self.layers}
            if len(algos) == 1:
                return algos.pop()
            if algos:
                self.notes.append(f"{prefix}: mixed quant_algo within a fused layer (vLLM refuses this)")
                return min(algos)
        for c in self._candidates(prefix):
            a = self._under(c)
            if a is not None:
                return a
        if prefix.endswith(".experts"):
            a = self._under(prefix.rsplit(".experts", 1)[0])
            if a is not None:
                return a
        shards = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}.get(proj)
        if shards:
            for c in self._candidates(prefix):
                parent = c.rsplit(".", 1)[0]
                algos = {self.layers[f"{parent}.{s}"] for s in shards if f"{parent}.{s}" in self.layers}
                if algos:
                    return min(algos)
        return None

    def decide(self, m: _Module) -> str | None:
        if m.kind == "router" and self.arch.router is None:
            return None
        if self.excluded(m.name):
            return None
        if self.mixed:
            algo = self.resolve(m.name)
            return _MODELOPT_FORMATS.get(algo or "")
        if any(k in m.name for k in ("vision_tower", "vision_model", "vit_large_projector")):
            return None  # modelopt.py:247-254
        return self.single


class _CompressedTensors(_Method):
    def __init__(self, q: Mapping, arch: ArchNames, notes: list[str]):
        super().__init__(arch, notes)
        groups = q.get("config_groups")
        if not isinstance(groups, Mapping):
            raise _Bad("compressed-tensors config without config_groups")
        gfmt = q.get("format") if isinstance(q.get("format"), str) else None
        self.targets: dict[str, str | None] = {}
        for gi, (gname, g) in enumerate(groups.items()):
            if gi >= 64:
                notes.append("config_groups: only the first 64 groups read")
                break
            if not isinstance(g, Mapping):
                continue
            tg = _str_list(g.get("targets"), f"config_groups.{str(gname)[:20]}.targets", notes)
            if len(tg) == 1 and tg[0].endswith("Attention"):
                continue  # compressed_tensors.py:239-249
            w = g.get("weights")
            f = _ct_format(w, g.get("format") if isinstance(g.get("format"), str) else gfmt) if isinstance(w, Mapping) else None
            for t in tg:
                self.targets[t] = f
        ignore = _str_list(q.get("ignore"), "ignore", notes)
        if arch.rename is not None:  # apply_vllm_mapper: only dotted non-regex names (compressed_tensors.py:129-157)
            rules = arch.rename

            def ren(t: str) -> str:
                return _rename(t, rules) if ("." in t and not t.startswith("re:")) else t

            ignore = [ren(t) for t in ignore]
            self.targets = {ren(t): f for t, f in self.targets.items()}
        self.ignore = ignore
        self.ignore_set = set(ignore)
        self.ignore_re = [t for t in ignore if t.startswith("re:")]

    def cost_per_name(self) -> int:
        regexes = len(self.ignore_re) + sum(1 for t in self.targets if t.startswith("re:"))
        return 4 * (1 + len(self.targets) + 40 * regexes)  # x4: fused shards and expert projections

    def _ignored(self, name: str) -> bool:
        """``should_ignore_layer`` / ``find_matching_patterns`` (``utils/config_utils.py:384-420``)."""
        if name in self.ignore_set or any(self.rx.match(t[3:], name) for t in self.ignore_re):
            return True
        proj = name.rsplit(".", 1)[-1]
        if proj not in self.arch.packed:
            return False
        shards = [name.replace(proj, s) for s in self.arch.packed[proj]]
        hits = [s in self.ignore_set or any(self.rx.match(t[3:], s) for t in self.ignore_re) for s in shards]
        if any(hits) and not all(hits):
            self.notes.append(f"{name}: only some shards of a fused layer ignored (vLLM refuses this)")
        return all(hits)

    def _target(self, name: str, cls: str) -> tuple[bool, str | None]:
        """``find_matched_target``: name (exact / regex), fused shards, then class name (contains)."""
        for t, f in self.targets.items():
            if _eq_or_re(name, t, self.rx):
                return True, f
        proj = next((k for k in self.arch.packed if name.endswith(k)), None)
        if proj is not None:
            firsts = []
            for s in self.arch.packed[proj]:
                u = name.replace(proj, s)
                hit = next((t for t in self.targets if _eq_or_re(u, t, self.rx)), None)
                firsts.append(hit)
            if all(x is not None for x in firsts):
                return True, self.targets[firsts[0]]  # type: ignore[index]
        for t, f in self.targets.items():
            if t.startswith("re:"):
                if self.rx.match(t[3:], cls):
                    return True, f
            elif t.lower() in cls.lower():
                return True, f
        return False, None

    def scheme(self, name: str, cls: str) -> tuple[bool, str | None]:
        if self._ignored(name):
            return False, None
        return self._target(name, cls)

    def decide(self, m: _Module) -> str | None:
        if m.kind == "router" and self.arch.router is None:
            return None
        if m.kind == "experts":
            if "Linear" in self.targets and "RoutedExperts" not in self.targets:
                self.targets["RoutedExperts"] = self.targets["Linear"]
            results = [self.scheme(f"{m.name}.0.{p}", "RoutedExperts") for p in self.arch.expert_proj]
            if len({r for r in results}) > 1:
                self.notes.append(f"{m.name}: expert projections with different schemes (vLLM refuses this)")
            hit, fmt = results[-1]
            return fmt if hit else None
        hit, fmt = self.scheme(m.name, _class_name(m))
        return fmt if hit else None


class _Fp8(_Method):
    def __init__(self, q: Mapping, arch: ArchNames, notes: list[str], *, expert_dtype: Any = None, model_type: str = ""):
        super().__init__(arch, notes)
        ign = q.get("ignored_layers") or q.get("modules_to_not_convert")
        key = "ignored_layers" if q.get("ignored_layers") else "modules_to_not_convert"
        ign = _str_list(ign, key, notes)
        if arch.rename is not None:
            ign = [_rename(x, arch.rename) for x in ign]
        self.ignored = set(ign)
        wbs = q.get("weight_block_size")
        self.fmt = "fp8-block" if isinstance(wbs, list) and len(wbs) == 2 else "fp8"
        self.store_mxfp4 = q.get("store_dtype") == "mxfp4"
        self.dsv4 = model_type == "deepseek_v4"
        self.expert_dtype = expert_dtype if isinstance(expert_dtype, str) else "fp4"
        if self.dsv4 and self.expert_dtype not in ("fp4", "fp8"):
            raise _Bad(f"DeepSeek-V4 expert_dtype {str(expert_dtype)[:20]!r} (vLLM refuses it)")
        algo = q.get("moe_quant_algo")
        self.moe_nvfp4 = isinstance(algo, str) and algo.upper() == "NVFP4"
        mo = q.get("ignore")
        self.modelopt_ignore = [p for p in mo[:MAX_LIST] if isinstance(p, str) and len(p) <= MAX_NAME] if isinstance(mo, list) else []
        self.num_layers = 0

    def cost_per_name(self) -> int:
        return 1 + 4 * len(self.modelopt_ignore)

    def decide(self, m: _Module) -> str | None:
        if m.kind in ("lm_head", "vision") or (m.kind == "router" and self.arch.router is None):
            return None
        if self.skipped_exact(m.name, self.ignored):
            return None
        if m.kind != "experts":
            return self.fmt
        if self.dsv4 and self.expert_dtype == "fp4":
            # models/deepseek_v41/quant_config.py: _is_nvfp4_expert_layer, then Mxfp4MoEMethod
            if self.moe_nvfp4:
                idx = m.name.split(".layers.", 1)[-1].split(".", 1)[0]
                if not self.modelopt_ignore or not idx.isdigit():
                    return "nvfp4"
                short = f"layers.{idx}.ffn.experts"
                if not any(glob_match(short, p) for p in self.modelopt_ignore):
                    return "nvfp4"
            return "mxfp4"
        if self.store_mxfp4:
            return "mxfp4"
        return self.fmt


class _Mxfp4(_Method):
    def decide(self, m: _Module) -> str | None:
        return "mxfp4" if m.kind == "experts" else None  # mxfp4.py:91-113


# ----------------------------------------------------------------------------------------------
# Public entry point
# ----------------------------------------------------------------------------------------------
def _method(q: Mapping, arch: ArchNames, notes: list[str], model_type: str, expert_dtype: Any) -> _Method | None:
    qm = q.get("quant_method")
    qm = qm.lower() if isinstance(qm, str) else ""
    if qm.startswith("modelopt"):
        return _ModelOpt(q, arch, notes)
    if qm == "compressed-tensors":
        return _CompressedTensors(q, arch, notes)
    if qm in ("fp8", "deepseek_v4_fp8"):
        return _Fp8(q, arch, notes, expert_dtype=expert_dtype, model_type=model_type)
    if qm == "mxfp4":
        return _Mxfp4(arch, notes)
    return None


def _has_lists(q: Mapping) -> bool:
    if any(q.get(k) for k in ("ignore", "exclude_modules", "ignored_layers", "modules_to_not_convert", "quantized_layers")):
        return True
    if isinstance(q.get("quantization"), Mapping):
        return _has_lists(q["quantization"])
    groups = q.get("config_groups")
    if isinstance(groups, Mapping):
        for g in groups.values():
            if isinstance(g, Mapping) and g.get("targets") not in (["Linear"], None):
                return True
    return False


def coverage(q: Mapping, text: Mapping, top: Mapping, rec: Mapping) -> tuple[dict[str, Any], list[str]]:
    """Quantized share and format of each part in :data:`PARTS`, as vLLM 0.33.0 builds the model.

    ``q`` is the ``quantization_config``, ``text`` / ``top`` the text and top-level configs, ``rec``
    the catalog record so far (``model_type``, ``num_hidden_layers``, ``is_moe``,
    ``num_shared_experts``, ``num_linear_attention_layers``, ``has_vision``, ``q_lora_rank``,
    ``tie_word_embeddings``). Returns (``{"quant_<part>_fraction": float | None, "quant_<part>_format":
    str | None}``, notes). A fraction is the share of the decoder layers that have the part whose part
    vLLM quantizes (the mean over the part's main modules); the format is the most common format among
    them (other formats in the same part are noted). Parts the model does not have get NA; the whole
    result is NA (with a note) when the method or the architecture's names are not modelled."""
    notes: list[str] = []
    out: dict[str, Any] = {f"quant_{p}_{k}": None for p in PARTS for k in ("fraction", "format")}
    mt = str(rec.get("model_type") or "").lower()
    tmt = str(rec.get("text_model_type") or "").lower()
    arch = ARCH_NAMES.get(mt) or ARCH_NAMES.get(tmt)
    lists = _has_lists(q)
    if arch is None:
        if lists:
            notes.append(f"quantized modules not derived: vLLM module names of model type {mt[:40]!r} are not modelled "
                         "(dashboard.quant_coverage.ARCH_NAMES)")
            return out, notes
        arch = _generic(mt)
    if arch.attention == _MLA and rec.get("q_lora_rank") is None:
        arch = replace(arch, attention=_MLA_NO_QLORA)
    n = rec.get("num_hidden_layers")
    if not isinstance(n, int) or n <= 0:
        return out, notes
    if n > MAX_LAYERS:
        notes.append(f"quantized modules not derived: more than {MAX_LAYERS} layers")
        return out, notes
    try:
        method = _method(q, arch, notes, mt, top.get("expert_dtype", text.get("expert_dtype")))
        if method is None:
            return out, notes
        is_moe = bool(rec.get("is_moe"))
        attn, dense, moe, plan_notes = layer_plan(text, n, is_moe, int(rec.get("num_linear_attention_layers") or 0))
        notes += plan_notes
        shared = is_moe and (rec.get("num_shared_experts") or 0) > 0
        per_layer = max(len(arch.attention), len(arch.linear_attention)) + len(arch.dense_mlp) + 2 + len(arch.shared_experts)
        work = n * per_layer * method.cost_per_name()
        if work > MAX_WORK:
            raise _Bad(f"lists too large to match ({work:.2g} pattern tests > {MAX_WORK:.0e})")
        per_part: dict[str, list[str | None]] = {p: [] for p in PARTS}
        for i in range(n):
            root = arch.layer.format(i=i)
            mods: list[tuple[str, _Module]] = []
            if attn[i] == "attention":
                mods += [("attention", _Module(f"{root}.{x}", "linear")) for x in arch.attention]
            elif attn[i] == "linear_attention":
                mods += [("linear_attention", _Module(f"{root}.{x}", "linear")) for x in arch.linear_attention]
            if dense[i]:
                mods += [("dense_mlp", _Module(f"{root}.{x}", "linear")) for x in arch.dense_mlp]
            if moe[i]:
                mods.append(("experts", _Module(f"{root}.{arch.experts}", "experts")))
                mods.append(("router", _Module(f"{root}.{arch.router or 'mlp.gate'}", "router")))
                if shared:
                    mods += [("shared_experts", _Module(f"{root}.{x}", "linear")) for x in arch.shared_experts]
            for part, m in mods:
                per_part[part].append(method.decide(m))
        if not rec.get("tie_word_embeddings"):
            per_part["lm_head"].append(method.decide(_Module(arch.lm_head, "lm_head")))
        if rec.get("has_vision") and arch.vision:
            qm = str(q.get("quant_method") or "").lower()
            skip = "*" in arch.vision_skip or qm in arch.vision_skip
            per_part["vision"] += [None if skip else method.decide(_Module(v, "vision")) for v in arch.vision]
    except _Bad as e:
        notes.append(f"quantized modules not derived: {e.args[0]}")
        return {k: None for k in out}, notes
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:  # malformed nested values
        notes.append(f"quantized modules not derived: {type(e).__name__} reading quantization_config")
        return {k: None for k in out}, notes
    for p, fmts in per_part.items():
        if not fmts:
            continue
        q_fmts = [f for f in fmts if f is not None]
        out[f"quant_{p}_fraction"] = len(q_fmts) / len(fmts)
        if q_fmts:
            counts: dict[str, int] = {}
            for f in q_fmts:
                counts[f] = counts.get(f, 0) + 1
            best = max(counts, key=lambda k: (counts[k], k))
            out[f"quant_{p}_format"] = best
            if len(counts) > 1:
                notes.append(f"{p}: several quantized formats ({', '.join(sorted(counts))}); {best} kept")
    return out, notes
