"""vLLM 0.33.0's module names per architecture (:data:`ARCH_NAMES`) and the per-layer plan of which
decoder layers hold which parts (:func:`layer_plan`), used by :mod:`dashboard.catalog.quant_coverage`
to generate the names its matching rules are replayed on. Also the parts and formats described
(:data:`PARTS`, :data:`FORMATS`) and the caps on untrusted lists. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any


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


MLA_NAMES = ("self_attn.fused_qkv_a_proj", "self_attn.q_b_proj", "self_attn.kv_b_proj", "self_attn.o_proj")
MLA_NO_QLORA_NAMES = ("self_attn.q_proj", "self_attn.kv_a_proj_with_mqa", "self_attn.kv_b_proj", "self_attn.o_proj")
_DSV2_PACKED = {"gate_up_proj": ("gate_proj", "up_proj"), "fused_qkv_a_proj": ("q_a_proj", "kv_a_proj_with_mqa"),
                "qkv_proj": ("q_proj", "k_proj", "v_proj")}
_DSV2 = ArchNames("models/deepseek_v2.py:1872-1915 (DeepseekV2ForCausalLM: GateLinear router without quant_config, "
                  ":321; no hf_to_vllm_mapper)", attention=MLA_NAMES, packed=_DSV2_PACKED)
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


def generic_arch_names(model_type: str) -> ArchNames:
    """Llama-style vLLM module names for a ``model_type`` missing from :data:`ARCH_NAMES`."""
    return ArchNames(f"generic Llama-style names (model_type {model_type!r} not in ARCH_NAMES)")


# ----------------------------------------------------------------------------------------------
# Layer plan: which decoder layers have which parts
# ----------------------------------------------------------------------------------------------
def int_list(v: Any, n: int) -> list[int] | None:
    """The ints of the config list ``v`` (first :data:`MAX_LIST` entries; booleans dropped), or None when
    ``v`` is not a list. ``n`` (the layer count) is unused: kept for the callers' symmetry."""
    if not isinstance(v, list):
        return None
    return [x for x in v[:MAX_LIST] if isinstance(x, int) and not isinstance(x, bool)]


def layer_plan(text: Mapping, n: int, is_moe: bool, num_linear: int) -> tuple[list[str], list[bool], list[bool], list[str]]:
    """Per decoder layer: attention kind (``attention`` / ``linear_attention`` / ``none``), has a dense
    MLP, has routed experts; plus notes. Mirrors the catalog's layer counting (:func:`dashboard.catalog.layers.fill_layers` /
    :func:`~dashboard.catalog.layers.fill_moe`) but keeps positions, which per-layer name lists need."""
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
        kda = int_list(lac.get("kda_layers"), n)
        full = int_list(lac.get("full_attn_layers"), n)
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
            s = set(int_list(ml, n) or [])
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
            for i in int_list(mol, n) or []:
                if 0 <= i < n:
                    moe[i] = False
            dense = [not m for m in moe]
    return attn, dense, moe, notes
