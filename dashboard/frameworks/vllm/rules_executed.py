"""vLLM rules for the releases run through the conformance harness (``versions=">=0.22.0"``).

Each rule was checked by building every catalog model with vLLM's own constructors under simulated
layouts (``python -m conformance``; tables in ``data/conformance/``): the rule fires exactly where vLLM
refused, with vLLM's message and raise site. The list order is vLLM's construction order, so the first
rule that fires is the error a user sees first:

1. engine start (``vllm serve`` builds its config): the architecture registry, the attention-heads
   check, expert parallelism on a dense model;
2. the vision tower (multimodal classes build it before the language model);
3. ``embed_tokens`` (the vocabulary split);
4. decoder layer 0: linear attention / Mamba mixers (hybrids start with them), softmax attention
   (the model class's bare ``assert`` on KV heads, else ``QKVParallelLinear``'s ``divide``), its
   block-FP8 projections, then the MLP (dense, or the fused MoE and its shared experts).

Bare ``assert`` statements print no message: vLLM's log shows ``AssertionError`` and the traceback's
last line, so the message is written ``AssertionError (no message) at <file>:<line>``. Raise sites
are per release (:attr:`Rule.sites`); the engine fills them in for the release asked about.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dashboard import frameworks as _frameworks
from dashboard.rules import executed as X
from dashboard.rules.executed import BARE, DIVIDE, FP8_BLOCK_K, FP8_BLOCK_N, UNKNOWN_MODEL_TYPE
from dashboard.rules import preds as P
from dashboard.rules.common import Ctx, Rule, not_multiple
from dashboard.frameworks.vllm.rules_platform import (  # the rules keyed by GPU platform
    ATTN_PLATFORMS as _ATTN_PLATFORMS,
    attention as _attention,
    fp8_moe_block,
    fp8_moe_no_backend,
    quant_min_capability,
)

FW = "vllm"
V = ">=0.22.0"
EXECUTED: tuple[str, ...] = _frameworks.get(FW).executed_releases

DIVIDE_SITE = {"0.22.0": "vllm/distributed/utils.py:55", "0.33.0": "vllm/distributed/utils.py:53"}
SRC = "https://github.com/vllm-project/vllm/blob/v0.33.0/"


@lru_cache(maxsize=None)
def registry(release: str) -> dict:
    """The release's model registry as the harness read it (``<release>-architectures.json``)."""
    return X.read_registry(f"vllm-{release}-architectures.json",
                           {"architectures": [], "previously_supported": {}, "out_of_tree": {}})


# ----------------------------------------------------------------------------------------------------
# architecture groups (vLLM 0.33.0 model classes; each group's behaviour was seen in the table)
# ----------------------------------------------------------------------------------------------------

#: Vision towers built with ``dist_utils.divide(num_heads, tp)`` before the language model.
QWEN_VIT = ("Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration",
            "Qwen3VLMoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration")
GLM4V = ("Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration")
#: SigLIP / Idefics3-style vision towers (gemma3_mm, idefics3): ``divide(num_heads, tp)``.
SIGLIP = ("Gemma3ForConditionalGeneration", "Idefics3ForConditionalGeneration")
#: Llama-4's vision encoder: ``assert self.num_heads % self.tp_size == 0`` (mllama4.py).
LLAMA4_VISION = ("Llama4ForConditionalGeneration",)

#: Vision towers that raise no TP error: MoonViT switches to data-parallel by itself (its MLP rule is
#: separate), Gemma-4's tower is an unsharded HF module, Mllama is refused by the registry.
VISION_NO_HEAD_CHECK = ("KimiK25ForConditionalGeneration", "KimiK3ForConditionalGeneration",
                        "Gemma4ForConditionalGeneration", "MllamaForConditionalGeneration")
_VISION_KNOWN = QWEN_VIT + GLM4V + LLAMA4_VISION + VISION_NO_HEAD_CHECK

#: MLPs built from one ``ColumnParallelLinear`` (no gate): ``divide(intermediate, tp)`` gives a message.
NON_GATED = ("GPT2LMHeadModel", "GPTJForCausalLM", "GPTNeoXForCausalLM", "GPTBigCodeForCausalLM",
             "FalconForCausalLM", "RWForCausalLM", "CodeGenForCausalLM", "PhiForCausalLM",
             "StarCoder2ForCausalLM", "BloomForCausalLM", "OPTForCausalLM", "MPTForCausalLM")

#: Attention classes that check KV heads with bare asserts before building QKVParallelLinear:
#: ``assert total_num_kv_heads % tp == 0`` (kv >= tp) and ``assert tp % total_num_kv_heads == 0``
#: (kv < tp). Sites per release.
KV_ASSERTS: dict[str, dict[str, tuple[str, str]]] = {
    "llama": {"0.33.0": ("vllm/model_executor/models/llama.py:151", "vllm/model_executor/models/llama.py:155")},
    "qwen2": {"0.33.0": ("vllm/model_executor/models/qwen2.py:144", "vllm/model_executor/models/qwen2.py:148")},
    "qwen3": {"0.33.0": ("vllm/model_executor/models/qwen3.py:94", "vllm/model_executor/models/qwen3.py:98")},
    "minimax_m2": {"0.33.0": ("vllm/model_executor/models/minimax_m2.py:164",
                              "vllm/model_executor/models/minimax_m2.py:168")},
    "mixtral": {"0.33.0": ("vllm/model_executor/models/mixtral.py:166", "vllm/model_executor/models/mixtral.py:170")},
    "gemma": {"0.33.0": ("vllm/model_executor/models/gemma.py:149", "vllm/model_executor/models/gemma.py:153")},
    "gemma2": {"0.33.0": ("vllm/model_executor/models/gemma2.py:120", "vllm/model_executor/models/gemma2.py:124")},
    "gemma3": {"0.33.0": ("vllm/model_executor/models/gemma3.py:121", "vllm/model_executor/models/gemma3.py:125")},
    "exaone4": {"0.33.0": ("vllm/model_executor/models/exaone4.py:133", "vllm/model_executor/models/exaone4.py:137")},
    "granite": {"0.33.0": ("vllm/model_executor/models/granite.py:174", "vllm/model_executor/models/granite.py:178")},
    "granitemoe": {"0.33.0": ("vllm/model_executor/models/granitemoe.py:164",
                              "vllm/model_executor/models/granitemoe.py:168")},
    "glm4_moe": {"0.33.0": ("vllm/model_executor/models/glm4_moe.py:249",
                            "vllm/model_executor/models/glm4_moe.py:253")},
    "chatglm": {"0.33.0": ("vllm/model_executor/models/chatglm.py:69", "vllm/model_executor/models/chatglm.py:73")},
    "internlm2": {"0.33.0": ("vllm/model_executor/models/internlm2.py:113",
                             "vllm/model_executor/models/internlm2.py:117")},
    "lfm2": {"0.33.0": ("vllm/model_executor/models/lfm2.py:129", "vllm/model_executor/models/lfm2.py:133")},
    "llama4": {"0.33.0": ("vllm/model_executor/models/llama4.py:195", "vllm/model_executor/models/llama4.py:199")},
    "nemotron_h": {"0.33.0": ("vllm/model_executor/models/nemotron_h.py:446",
                              "vllm/model_executor/models/nemotron_h.py:450")},
    "falcon": {"0.33.0": ("vllm/model_executor/models/falcon.py:125", "vllm/model_executor/models/falcon.py:129")},
    "qwen2_moe": {"0.33.0": ("vllm/model_executor/models/qwen2_moe.py:219",
                             "vllm/model_executor/models/qwen2_moe.py:223")},
}

#: Architectures whose decoder attention is each module's class (text decoders of multimodal
#: classes included).
KV_ASSERT_ARCHS: dict[str, tuple[str, ...]] = {
    "llama": ("LlamaForCausalLM", "MistralForCausalLM", "LlavaLlamaForCausalLM", "SmolLM3ForCausalLM",
              "Phi3ForCausalLM",
              "DeciLMForCausalLM", "InternLMForCausalLM", "Idefics3ForConditionalGeneration"),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2_5_VLForConditionalGeneration"),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3VLForConditionalGeneration"),
    "minimax_m2": ("MiniMaxM2ForCausalLM",),
    "mixtral": ("MixtralForCausalLM",),
    "gemma": ("GemmaForCausalLM",),
    "gemma2": ("Gemma2ForCausalLM",),
    "gemma3": ("Gemma3ForConditionalGeneration", "Gemma3ForCausalLM"),
    "exaone4": ("Exaone4ForCausalLM",),
    "granite": ("GraniteForCausalLM",),
    "granitemoe": ("GraniteMoeForCausalLM",),
    "glm4_moe": ("Glm4MoeForCausalLM", "Glm4vMoeForConditionalGeneration"),
    "chatglm": ("ChatGLMModel", "ChatGLMForConditionalGeneration"),
    "internlm2": ("InternLM2ForCausalLM",),
    "lfm2": ("Lfm2ForCausalLM",),
    "llama4": ("Llama4ForConditionalGeneration", "Llama4ForCausalLM"),
    "nemotron_h": ("NemotronHForCausalLM",),
    "falcon": ("FalconForCausalLM", "RWForCausalLM"),
    "qwen2_moe": ("Qwen2MoeForCausalLM",),
}
_KV_ASSERT_ALL = tuple(a for archs in KV_ASSERT_ARCHS.values() for a in archs)


# ----------------------------------------------------------------------------------------------------
# predicates (vectorized; see dashboard.rules.common.Ctx)
# ----------------------------------------------------------------------------------------------------


def _none(ctx: Ctx):
    return np.zeros(ctx.n, dtype=bool), {}


def _arch_names(ctx: Ctx) -> np.ndarray:
    """Per model: every architecture the config lists."""

    def fn() -> list[list[str]]:
        if "architectures" not in ctx.models.columns:
            return [[] for _ in range(ctx.n_models)]
        return [[a.strip() for a in str(s).split(",") if a.strip()] if isinstance(s, str) else []
                for s in ctx.models["architectures"].astype(object).where(ctx.models["architectures"].notna(), "")]

    return ctx.model_level(("arch_lists",), fn)  # type: ignore[return-value]


def _registry_state(release: str, kind: str):
    """Per model: ``kind`` = "unsupported" (no listed architecture is known and none was dropped or
    moved out of tree), "previous" (the first listed one was dropped), or "oot"."""

    def pred(ctx: Ctx):
        reg = registry(release)
        known = set(reg["architectures"])
        if not known:
            return _none(ctx)
        prev, oot = reg["previously_supported"], reg["out_of_tree"]
        fire_m = np.zeros(ctx.n_models, dtype=bool)
        names = np.full(ctx.n_models, "", dtype=object)
        vers = np.full(ctx.n_models, "", dtype=object)
        for i, archs in enumerate(_arch_names(ctx)):
            if not archs or any(a in known for a in archs):
                continue
            dropped = next((a for a in archs if a in prev), None)
            moved = next((a for a in archs if a in oot), None)
            if kind == "previous" and dropped:
                fire_m[i], names[i], vers[i] = True, dropped, prev[dropped]
            elif kind == "oot" and not dropped and moved:
                fire_m[i], names[i], vers[i] = True, moved, oot[moved]
            elif kind == "unsupported" and not dropped and not moved:
                fire_m[i], names[i] = True, repr(archs)
        rep = (lambda a: np.repeat(a, ctx.n_tp))
        supported = np.empty(ctx.n, dtype=object)  # one shared str: np.full would copy a ~30 kB string per cell
        supported.fill("dict_keys(" + repr(list(reg["architectures"])) + ")")
        fields = {"arch": rep(names), "prev": rep(vers), "url": rep(vers), "archs": rep(names),
                  "supported": supported}
        return rep(fire_m) & ctx.has("num_attention_heads"), fields

    return pred


def gptq_bits(ctx: Ctx):
    """GPTQ checkpoints: (bits, sym) must be (4, True) or (8, True) (``GPTQConfig.TYPE_MAP``)."""
    bits = ctx.i("quant_bits")
    fire = ctx.str_in("quant_method", ("gptq",)) & ctx.has("quant_bits") & ~np.isin(bits, (4, 8))
    return fire, {"bits": bits}


def chatglm_v1(ctx: Ctx):
    """ChatGLM-6B v1 configs (``inner_hidden_size``, noted by the normalizer): vLLM's ChatGLM class
    reads ChatGLM2+ keys such as ``original_rope``."""

    def fn(df):
        if "parse_notes" not in df.columns:
            return np.zeros(len(df), dtype=bool)
        return df["parse_notes"].astype("string").fillna("").str.contains("chatglm v1", regex=False).to_numpy(
            dtype=bool)

    return ctx.flag("chatglm_v1", fn) & ctx.arch_in(("ChatGLMModel", "ChatGLMForConditionalGeneration")), {}




def _unknown_model_type(release: str):
    """The config's ``model_type`` is neither one of vLLM's own config classes nor known to the
    transformers the release installs (:func:`dashboard.rules.preds.unknown_model_type` over the
    release's registry)."""
    return P.unknown_model_type(lambda: registry(release).get("model_types", []))


def ep_flag_without_moe(ctx: Ctx):
    """``--enable-expert-parallel`` on a model without experts (checked at every size, even 1)."""
    return ctx.expert_parallel & ~ctx.is_moe() & ctx.has("num_attention_heads"), {}


def _vision(honour_vision_dp: bool = True):
    """Vision heads % tp. ``mm_encoder_tp_mode="data"`` only takes effect for model classes with
    ``supports_encoder_tp_data = True``; vLLM falls back to TP sharding for the others
    (``config/model.py``)."""

    def pred(ctx: Ctx):
        if ctx.vision_dp and honour_vision_dp:
            return _none(ctx)
        vh = ctx.i("vision_num_heads")
        fire = ctx.has("vision_num_heads") & ctx.not_div("vision_num_heads", ctx.tp)
        return fire, {"a": vh, "b": ctx.tp}

    return pred


def moonvit_mlp(ctx: Ctx):
    """MoonViT (Kimi-K2.5/K3): ``is_vit_use_data_parallel`` switches the encoder to data-parallel by
    itself when vision heads % tp != 0; in TP mode its MLP ``fc0`` is a ColumnParallelLinear over the
    vision intermediate size: divide(intermediate, tp)."""
    if ctx.vision_dp:
        return _none(ctx)
    vi = ctx.i("vision_intermediate_size")
    tp_mode = ctx.has("vision_num_heads") & ~ctx.not_div("vision_num_heads", ctx.tp)
    fire = tp_mode & ctx.has("vision_intermediate_size") & not_multiple(vi, ctx.tp)
    return fire, {"a": vi, "b": ctx.tp}


def fp8_mlp(ctx: Ctx) -> np.ndarray:
    """Block-FP8 MLP weights: a block size, and the experts / MLPs are not NVFP4 or MXFP4 (mixed
    checkpoints keep the 128x128 FP8 blocks for attention only). DeepSeek-V4's own model class builds
    its experts in FP4 (``expert_dtype``) and its shared expert without the block check."""
    low = ctx.str_in("quant_format", ("nvfp4", "mixed-precision", "mxfp4", "mxfp4-pack-quantized"))
    return ctx.fp8_block() & ~low & ~ctx.arch_in(("DeepseekV4ForCausalLM",))


def _kv(which: str):
    """Softmax attention KV heads (not MLA). ``split``: kv >= tp and kv % tp; ``replicate``: kv < tp
    and tp % kv; ``divide``: either (QKVParallelLinear's divide, fields a/b)."""

    def pred(ctx: Ctx):
        kv = np.maximum(ctx.i("num_key_value_heads"), 1)
        t = ctx.tp
        base = ctx.has("num_key_value_heads") & ~ctx.is_mla()
        split = base & (kv >= t) & not_multiple(kv, t)
        rep = base & (kv < t) & not_multiple(t, kv)
        if which == "split":
            return split, {}
        if which == "replicate":
            return rep, {}
        return split | rep, {"a": np.where(kv >= t, kv, t), "b": np.where(kv >= t, t, kv)}

    return pred


def gdn_conv(ctx: Ctx):
    """Gated DeltaNet: ``conv1d = ColumnParallelLinear(conv_dim)``, conv_dim = 2*key_dim + value_dim."""
    kd = ctx.i("linear_num_key_heads") * ctx.i("linear_key_head_dim")
    vd = ctx.i("linear_num_value_heads") * ctx.i("linear_value_head_dim")
    conv = 2 * kd + vd
    fire = ctx.linear_kind("gdn") & ctx.has("linear_num_key_heads") & ctx.has("linear_num_value_heads") \
        & ctx.has("linear_key_head_dim") & ctx.has("linear_value_head_dim") & not_multiple(conv, ctx.tp)
    return fire, {"a": conv, "b": ctx.tp}


def mxfp8_down_k(ctx: Ctx):
    """ModelOpt mixed checkpoints with MXFP8 MLPs (MiniMax-M3 NVFP4): every down_proj input per rank
    (dense layers first, then the shared expert of MoE layers) must be a multiple of the MXFP8 block, 32."""
    t = np.maximum(ctx.tp, 1)
    base = ctx.str_in("quant_method", ("modelopt",)) & (ctx.tp > 1)
    d, sh = ctx.i("intermediate_size"), ctx.i("shared_expert_intermediate_size")
    d_bad = ctx.has_dense_mlp() & ~not_multiple(d, t) & not_multiple(d // t, 32)
    s_bad = ctx.has("shared_expert_intermediate_size") & ~not_multiple(sh, t) & not_multiple(sh // t, 32)
    return base & (d_bad | s_bad), {"size": np.where(d_bad, d // t, sh // t)}


def wna16_moe_group(ctx: Ctx):
    """Compressed-tensors WNA16 (pack-quantized) MoE with group scales: the expert width per MoE-TP rank
    must be a multiple of group_size (compressed_tensors_moe_wna16.py)."""
    mt = moe_tp(ctx)
    m = ctx.i("moe_intermediate_size")
    g = np.maximum(ctx.i("quant_group_size"), 1)
    applies = ctx.str_in("quant_method", ("compressed-tensors",)) & ctx.str_in("quant_format", ("pack-quantized",)) \
        & ctx.has("quant_group_size") & ctx.is_moe() & ctx.has("moe_intermediate_size") & ~not_multiple(m, mt)
    ispp = m // np.maximum(mt, 1)
    return applies & not_multiple(ispp, g), {"size": ispp, "group": g}


def tp_gt_1(ctx: Ctx):
    return ctx.has("num_attention_heads") & (ctx.tp > 1), {}


def dsv4_always(ctx: Ctx):
    return ctx.has("num_attention_heads"), {}


def dsv4_compressed_tensors(ctx: Ctx):
    return ctx.str_in("quant_method", ("compressed-tensors",)), {}


def zero_kv_heads(ctx: Ctx):
    """gpt-oss passes ``num_kv_heads = total_kv // tp`` (no max(1, ...)) to ``Attention``: 0 when
    tp > KV heads, and ``num_heads % num_kv_heads`` divides by zero."""
    kv = ctx.i("num_key_value_heads")
    return ctx.has("num_key_value_heads") & (ctx.tp > kv), {}


def shared_mlp(ctx: Ctx):
    fire = ctx.is_moe() & ctx.has("shared_expert_intermediate_size") & ctx.not_div(
        "shared_expert_intermediate_size", ctx.tp)
    return fire, {}


def dsv4_mega_experts(ctx: Ctx):
    """DeepSeek-V4 MegaMoE under EP: (n_routed_experts + redundant (0)) % ep_size."""
    ep = ctx.ep_size()
    n = ctx.i("num_experts")
    fire = ctx.expert_parallel & ctx.has("num_experts") & (ep > 1) & not_multiple(n, ep)
    return fire, {"n": n, "ep": ep}


def _only_awq(ctx: Ctx, pred):
    fire, fields = pred(ctx)
    return fire & ctx.str_in("quant_method", ("awq", "awq_marlin")), fields


def moe_tp(ctx: Ctx) -> np.ndarray:
    """vLLM's MoE tensor-parallel size: ``tp x dp`` without EP (FusedMoEParallelConfig flattens TP
    across DP), 1 with ``--enable-expert-parallel``."""
    if np.ndim(ctx.expert_parallel):  # per-layout flags
        return ctx.memo(("vllm_moe_tp",), lambda: np.where(ctx.expert_parallel, 1, ctx.tp * ctx.dp))
    if ctx.expert_parallel:
        return np.ones(ctx.n, dtype=np.int64)
    return ctx.memo(("vllm_moe_tp",), lambda: ctx.tp * ctx.dp)


def moe_intermediate(ctx: Ctx):
    """``FusedMoEConfig.__post_init__``: ``assert intermediate_size % tp_size == 0`` (MoE-TP)."""
    mt = moe_tp(ctx)
    fire = ctx.is_moe() & ctx.has("moe_intermediate_size") & not_multiple(ctx.i("moe_intermediate_size"), mt)
    return fire, {"m": ctx.i("moe_intermediate_size"), "moe_tp": mt}


def moe_intermediate_kimi_k3(ctx: Ctx):
    """Kimi-K3 pads the expert width to ``256 x tp`` when ``moe_intermediate // tp < 256`` (TP > 1, no
    EP; ``min_moe_intermediate_per_partition``), then FusedMoE asserts it divides the MoE-TP size."""
    m = ctx.i("moe_intermediate_size")
    t = ctx.tp
    pad = (t > 1) & ~ctx.expert_parallel & ((m // np.maximum(t, 1)) < 256)
    padded = np.where(pad, 256 * t, m)
    mt = moe_tp(ctx)
    fire = ctx.is_moe() & ctx.has("moe_intermediate_size") & not_multiple(padded, mt)
    return fire, {"m": padded, "moe_tp": mt}


def _fp8_dense_k(shared: bool):
    """Block FP8, ``RowParallelLinear`` down_proj: input per rank % block_k (tp > 1). Merged column
    layers (gate_up) skip the check on a mismatch in this release."""
    col = "shared_expert_intermediate_size" if shared else "intermediate_size"

    def pred(ctx: Ctx):
        bk = ctx.i("weight_block_k")
        inter = ctx.i(col)
        applies = fp8_mlp(ctx) & (ctx.is_moe() & ctx.has(col) if shared else ctx.has_dense_mlp())
        applies = applies & ~not_multiple(inter, ctx.tp) & (ctx.tp > 1)
        size = inter // np.maximum(ctx.tp, 1)
        return applies & not_multiple(size, bk), {"size": size, "block": bk}

    return pred


def fp8_mla_q_n(ctx: Ctx):
    """Block FP8 MLA ``q_b_proj`` (or ``q_proj`` without q-LoRA), a plain ``ColumnParallelLinear``:
    heads/tp * qk_head_dim % block_n (tp > 1)."""
    bn = ctx.i("weight_block_n")
    h = ctx.i("num_attention_heads")
    applies = ctx.fp8_block() & ctx.is_mla() & ctx.has("num_attention_heads") & ctx.has("head_dim") \
        & (ctx.tp > 1) & ~not_multiple(h, ctx.tp)
    size = (h // np.maximum(ctx.tp, 1)) * ctx.i("head_dim")
    return applies & not_multiple(size, bn), {"size": size, "block": bn}


def fp8_o_proj_k(ctx: Ctx):
    """Block FP8 attention ``o_proj`` (RowParallel): heads/tp * v_head_dim % block_k (tp > 1)."""
    bk = ctx.i("weight_block_k")
    h = ctx.i("num_attention_heads")
    vd = np.where(ctx.has("v_head_dim"), ctx.i("v_head_dim"), ctx.i("head_dim"))
    applies = ctx.fp8_block() & ctx.has("num_attention_heads") & (ctx.tp > 1) & ~not_multiple(h, ctx.tp)
    size = (h // np.maximum(ctx.tp, 1)) * vd
    return applies & (vd > 0) & not_multiple(size, bk), {"size": size, "block": bk}


def _fp8_moe(which: str, refine: bool = True):
    """Block FP8 fused MoE (``Fp8MoEMethod.create_weights``). The checkpoint block is refined
    (:func:`fp8_moe_block`); otherwise ``validate_fp8_block_shape_moe``: ispp % block_n, then
    (global tp > 1) ispp % block_k."""

    def pred(ctx: Ctx):
        bn, bk = ctx.i("weight_block_n"), ctx.i("weight_block_k")
        applies, ispp, refined = fp8_moe_block(ctx)
        refined = refined & refine
        fail_n = applies & ~refined & not_multiple(ispp, bn)
        if which == "n":
            return fail_n, {"size": ispp, "block": bn}
        fail_k = applies & ~refined & ~fail_n & (ctx.tp > 1) & not_multiple(ispp, bk)
        return fail_k, {"size": ispp, "block": bk}

    return pred


# ----------------------------------------------------------------------------------------------------
# the rules, in construction order
# ----------------------------------------------------------------------------------------------------



def _rule(id: str, kind: str, condition: str, message: str, sites: dict[str, str], predicate, *,
          exc_type: str = "AssertionError", archs=(), exclude=(), needs=(), note: str = "",
          severity: str = "error", ours: bool = False, versions: str = V, src: str = "",
          platforms: tuple[str, ...] = ()) -> Rule:
    r = X.executed_rule(FW, EXECUTED, {}, _url, id, kind, condition, message, sites, predicate,
                        exc_type=exc_type, archs=archs, exclude=exclude, needs=needs, note=note,
                        severity=severity, ours=ours, versions=versions, src=src)
    if platforms:
        import dataclasses

        r = dataclasses.replace(r, platforms=tuple(platforms))
    return r


def _url(release: str, path: str, line: str) -> str:
    return f"https://github.com/vllm-project/vllm/blob/v{release}/{path}#L{line}"


def _kv_rules() -> list[Rule]:
    out = []
    for mod, by_rel in KV_ASSERTS.items():
        archs = KV_ASSERT_ARCHS[mod]
        out.append(_rule(
            f"vllm.kv_heads.split.{mod}", "kv_heads",
            f"{mod}.py attention: num_key_value_heads >= tp and num_key_value_heads % tp != 0 "
            "(assert self.total_num_kv_heads % tp_size == 0)",
            BARE, {r: s[0] for r, s in by_rel.items()}, _kv("split"), archs=archs, needs=("num_key_value_heads",)))
        out.append(_rule(
            f"vllm.kv_heads.replicate.{mod}", "kv_heads",
            f"{mod}.py attention: num_key_value_heads < tp and tp % num_key_value_heads != 0 "
            "(assert tp_size % self.total_num_kv_heads == 0)",
            BARE, {r: s[1] for r, s in by_rel.items()}, _kv("replicate"), archs=archs,
            needs=("num_key_value_heads",)))
    return out




#: The rules as written, before :func:`rules` binds the per-release data.
RULES_AS_WRITTEN: list[Rule] = [
    # -- 1. engine start -------------------------------------------------------------------------------
    _rule("vllm.config.unknown_model_type", "architecture",
          "the config's model_type is neither a vLLM config class nor known to the transformers release vLLM "
          "installs (with remote code allowed, a config with auto_map would load instead)",
          UNKNOWN_MODEL_TYPE, {"0.33.0": "vllm/transformers_utils/config.py:445"}, None, exc_type="ValueError"),
    _rule("vllm.architecture.removed", "architecture",
          "every architecture the config lists is unknown to this release's model registry, and one was "
          "supported by an older release (registry _PREVIOUSLY_SUPPORTED_MODELS)",
          "Model architecture {arch} was supported in vLLM until v{prev}, and is not supported anymore. Please "
          "use an older version of vLLM if you want to use this model architecture.",
          {"0.33.0": "vllm/model_executor/models/registry.py:1234"}, None, exc_type="ValueError"),
    _rule("vllm.architecture.out_of_tree", "architecture",
          "every listed architecture is unknown in-tree and one moved to an out-of-tree plugin",
          "Model architecture {arch} is not supported in-tree anymore. Please install the plugin at {url} if you "
          "want to use this model architecture.",
          {"0.33.0": "vllm/model_executor/models/registry.py:1242"}, None, exc_type="ValueError"),
    _rule("vllm.architecture.unsupported", "architecture",
          "no architecture the config lists is in this release's model registry",
          "Model architectures {archs} are not supported for now. Supported architectures: {supported}",
          {"0.33.0": "vllm/model_executor/models/registry.py:1249"}, None, exc_type="ValueError"),
    _rule("vllm.attention_heads", "attention_heads",
          "num_attention_heads % tensor_parallel_size != 0 (ModelConfig.verify_with_parallel_config at engine "
          "start; vLLM prints it inside a pydantic ValidationError for VllmConfig)",
          "Total number of attention heads ({h}) must be divisible by tensor parallel size ({tp}).",
          {"0.33.0": "vllm/config/model.py:1560"}, P.attention_heads(FW), exc_type="ValueError",
          needs=("num_attention_heads",)),
    _rule("vllm.moe_experts.ep_without_moe", "moe_experts",
          "--enable-expert-parallel on a model without experts (at any size, even tp x dp = 1)",
          "Number of experts in the model must be greater than 0 when expert parallelism is enabled.",
          {"0.33.0": "vllm/config/model.py:1500"}, ep_flag_without_moe, exc_type="ValueError",
          exclude=("NemotronHForCausalLM",),
          note="vLLM counts experts on the transformers config object: NemotronHConfig's class default "
          "n_routed_experts makes dense Nemotron-H checkpoints look like MoE, so the check passes for them"),
    _rule("vllm.quantization.gptq_bits", "group_size",
          "GPTQ checkpoint with bits other than 4 or 8 (GPTQConfig.TYPE_MAP; sym=True assumed: the catalog "
          "does not keep the sym flag)",
          "Unsupported quantization config: bits={bits}, sym=True",
          {"0.33.0": "vllm/model_executor/layers/quantization/auto_gptq.py:153"}, gptq_bits, exc_type="ValueError"),
    _rule("vllm.quantization.min_capability", "kernel",
          "the GPU's compute capability is below the resolved quantization method's get_min_capability() "
          "(executed per method; the method as vLLM resolves it: dashboard/frameworks/vllm/quantization.py)",
          "{message}", {"0.33.0": "vllm/config/vllm.py:931"}, quant_min_capability, exc_type="ValueError",
          versions=">=0.33.0"),
    _rule("vllm.architecture.chatglm_v1", "architecture",
          "ChatGLM-6B v1 config under vLLM's ChatGLM class, which reads ChatGLM2+ keys",
          "'ChatGLMConfig' object has no attribute 'original_rope'",
          {"0.33.0": "vllm/model_executor/models/chatglm.py:107"}, chatglm_v1, exc_type="AttributeError"),
    _rule("vllm.transformers_backend.no_tp", "architecture",
          "architectures this release no longer implements natively but transformers does are served by vLLM's "
          "Transformers backend, which refuses TP > 1 for a model without a base_model_tp_plan",
          "<class 'transformers.models.mllama.modeling_mllama.MllamaModel'> does not support tensor parallel. See "
          "https://docs.vllm.ai/en/latest/models/supported_models.html#writing-custom-models for instructions on how "
          "to add support yourself.", {"0.22.0": "vllm/model_executor/models/transformers/base.py:471"}, tp_gt_1,
          exc_type="ValueError", archs=("MllamaForConditionalGeneration",), versions=">=0.22.0,<0.33.0"),
    # -- 2. vision tower -------------------------------------------------------------------------------
    _rule("vllm.vision_heads.qwen_vit", "vision_heads",
          "Qwen2.5-VL-style vision attention: divide(vision num_heads, tp), unless mm_encoder_tp_mode='data'",
          DIVIDE, DIVIDE_SITE, _vision(), archs=QWEN_VIT,
          note="raised from vllm/model_executor/models/qwen2_5_vl.py:374 (also used by Qwen3-VL and Qwen3.5)"),
    _rule("vllm.vision_heads.glm4v", "vision_heads",
          "GLM-4.xV vision attention: divide(vision num_heads, tp), unless mm_encoder_tp_mode='data'",
          DIVIDE, DIVIDE_SITE, _vision(), archs=GLM4V,
          note="raised from vllm/model_executor/models/glm4_1v.py:292"),
    _rule("vllm.vision_heads.siglip", "vision_heads",
          "SigLIP-style vision attention (Gemma 3, Idefics3): divide(vision num_heads, tp), also under "
          "mm_encoder_tp_mode='data'",
          DIVIDE, DIVIDE_SITE, _vision(honour_vision_dp=False), archs=SIGLIP,
          note="these classes lack supports_encoder_tp_data: mm_encoder_tp_mode='data' falls back to TP"),
    _rule("vllm.vision_heads.moonvit", "vision_heads",
          "MoonViT (Kimi-K2.5) before the encoder switched to data-parallel by itself: divide(vision num_heads, tp), "
          "unless mm_encoder_tp_mode='data'", DIVIDE, DIVIDE_SITE, _vision(),
          archs=("KimiK25ForConditionalGeneration", "KimiK3ForConditionalGeneration"), versions=">=0.22.0,<0.33.0"),
    _rule("vllm.vision_mlp.moonvit", "vision_heads",
          "MoonViT (Kimi-K2.5/K3): vision heads % tp == 0 keeps the encoder tensor-parallel (otherwise it "
          "switches to data-parallel by itself, no error); its MLP fc0 then needs divide(vision "
          "intermediate_size, tp)", DIVIDE, DIVIDE_SITE, moonvit_mlp,
          archs=("KimiK25ForConditionalGeneration", "KimiK3ForConditionalGeneration"),
          note="raised from vllm/model_executor/models/kimi_k25_vit.py:336"),
    _rule("vllm.vision_heads.llama4", "vision_heads",
          "Llama-4 vision encoder: assert self.num_heads % self.tp_size == 0, unless mm_encoder_tp_mode='data'",
          BARE, {"0.33.0": "vllm/model_executor/models/mllama4.py:255"}, _vision(), archs=LLAMA4_VISION),
    _rule("vllm.vision_heads", "vision_heads",
          "other vision towers (most vLLM encoders shard attention heads with divide(num_heads, tp)); "
          "read from source, not checked on a catalog model of each class",
          DIVIDE, DIVIDE_SITE, _vision(), exclude=_VISION_KNOWN + SIGLIP,
          note="seen on MiniMax-M3 (minimax_m3 vision tower)"),
    # -- 3. embedding ----------------------------------------------------------------------------------
    _rule("vllm.vocab", "vocab",
          "VocabParallelEmbedding: vocab_size padded to a multiple of 64, then divide(padded, tp)",
          DIVIDE, DIVIDE_SITE, P.vocab_padded(),
          note="raised from vllm/model_executor/layers/vocab_parallel_embedding.py:111"),
    # -- 4. decoder layer 0: linear attention, attention, MLP / MoE -------------------------------------
    _rule("vllm.deepseek_v4.scale_fmt", "architecture",
          "DeepSeek-V4 model class of this release reads quantization_config['scale_fmt'], which "
          "compressed-tensors checkpoints do not have",
          "'scale_fmt'", {"0.22.0": "vllm/models/deepseek_v4/nvidia/model.py:754"}, dsv4_compressed_tensors,
          exc_type="KeyError", archs=("DeepseekV4ForCausalLM",), versions=">=0.22.0,<0.33.0"),
    _rule("vllm.falcon.rope_parameters", "architecture",
          "RefinedWeb configs (falcon-7b/40b, RWForCausalLM) lack rope_parameters, which this release's "
          "falcon.py reads", "'RWConfig' object has no attribute 'rope_parameters'",
          {"0.22.0": "vllm/model_executor/models/falcon.py:171"}, lambda ctx: (ctx.has("num_attention_heads"), {}),
          exc_type="AttributeError", archs=("RWForCausalLM",), versions=">=0.22.0,<0.33.0"),
    _rule("vllm.deepseek_v4.kv_cache_dtype", "architecture",
          "DeepSeek-V4 attention of this release needs --kv-cache-dtype fp8 (the default is auto)",
          "DeepseekV4 only supports fp8 kv-cache format for now, got auto",
          {"0.22.0": "vllm/models/deepseek_v4/attention.py:671"}, dsv4_always, exc_type="AssertionError",
          archs=("DeepseekV4ForCausalLM",), versions=">=0.22.0,<0.33.0",
          note="the harness launches with the default --kv-cache-dtype auto"),
    _rule("vllm.linear_attention_heads.gdn", "linear_attention_heads",
          "Gated DeltaNet: conv1d = ColumnParallelLinear(conv_dim), conv_dim = 2*key_heads*key_dim + "
          "value_heads*value_dim; divide(conv_dim, tp)",
          DIVIDE, DIVIDE_SITE, gdn_conv),
    _rule("vllm.linear_attention_heads.mamba", "linear_attention_heads",
          "MambaMixer2: assert num_heads % tp_size == 0",
          "Tensor parallel world size must divide num heads.",
          {"0.33.0": "vllm/model_executor/layers/mamba/mamba_mixer2.py:316"}, P.mamba_heads(FW)),
    _rule("vllm.mamba_groups", "mamba_groups",
          "MambaMixer2: assert n_groups % tp_size == 0 or n_groups == 1",
          "If tensor parallel world size does not divide num_groups, then num_groups must equal 1.",
          {"0.33.0": "vllm/model_executor/layers/mamba/mamba_mixer2.py:320"}, P.mamba_groups(FW)),
    _rule("vllm.linear_attention_heads.kda", "linear_attention_heads",
          "Kimi Delta Attention: assert self.num_heads % self.tp_size == 0",
          BARE, {"0.33.0": "vllm/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py:189"}, P.kda_heads(FW)),
    *_kv_rules(),
    _rule("vllm.kv_heads.gpt_oss_zero", "kv_heads",
          "gpt-oss: tp > num_key_value_heads gives 0 KV heads per rank; Attention computes num_heads % "
          "num_kv_heads", "integer modulo by zero",
          {"0.33.0": "vllm/model_executor/layers/attention/attention.py:329"}, zero_kv_heads,
          exc_type="ZeroDivisionError", archs=("GptOssForCausalLM",)),
    _rule("vllm.kv_heads", "kv_heads",
          "QKVParallelLinear: tp >= kv needs tp % kv == 0 (KV heads replicated), else kv % tp == 0; "
          "divide(a, b). For attention classes without their own assert.",
          DIVIDE, DIVIDE_SITE, _kv("divide"), exclude=_KV_ASSERT_ALL, needs=("num_key_value_heads",)),
    _rule("vllm.block_fp8.mla_q_n", "block_fp8",
          "block FP8 MLA: q_b_proj (ColumnParallelLinear) output per rank = heads/tp * qk_head_dim % block_n, "
          "tp > 1", FP8_BLOCK_N, {"0.33.0": "vllm/model_executor/layers/quantization/utils/fp8_utils.py:1340"},
          fp8_mla_q_n, exc_type="ValueError"),
    _rule("vllm.block_fp8.attention_k", "block_fp8",
          "block FP8: o_proj (RowParallelLinear) input per rank = heads/tp * v_head_dim % block_k, tp > 1",
          FP8_BLOCK_K, {"0.33.0": "vllm/model_executor/layers/quantization/utils/fp8_utils.py:1324"}, fp8_o_proj_k,
          exc_type="ValueError"),
    # -- the attention layers' backends: selection and construction, per GPU platform -----------------------
    _rule("vllm.attention_backend.none", "attention_backend",
          "no attention backend of the platform's priority list accepts a layer's selector config (head size, "
          "dtype, KV-cache dtype, MLA, sparse, sinks, multimodal prefix, sliding window; each backend's own "
          "answers, executed per platform: dashboard/frameworks/vllm/attention.py)",
          "{message}", {"0.33.0": "vllm/platforms/cuda.py:472"}, _attention("vllm/platforms/cuda.py:472"),
          exc_type="ValueError", platforms=_ATTN_PLATFORMS,
          versions=">=0.33.0"),
    _rule("vllm.attention_backend.triton_fp8_kv", "attention_backend",
          "the layer's backend is TRITON_ATTN, the KV cache FP8 and the GPU below SM 8.9",
          "{message}", {"0.33.0": "vllm/v1/attention/backends/triton_attn.py:520"},
          _attention("vllm/v1/attention/backends/triton_attn.py:520"), exc_type="ValueError",
          platforms=_ATTN_PLATFORMS,
          versions=">=0.33.0"),
    _rule("vllm.attention_backend.triton_mla_fp8_kv", "attention_backend",
          "the layer's backend is TRITON_MLA, the KV cache FP8 and the GPU below SM 8.9",
          "{message}", {"0.33.0": "vllm/v1/attention/backends/mla/triton_mla.py:209"},
          _attention("vllm/v1/attention/backends/mla/triton_mla.py:209"), exc_type="ValueError",
          platforms=_ATTN_PLATFORMS,
          versions=">=0.33.0"),
    _rule("vllm.mlp_intermediate", "mlp_intermediate",
          "dense gated MLP (MergedColumnParallelLinear gate_up): assert all(output_size % tp_size == 0)",
          BARE, {"0.33.0": "vllm/model_executor/layers/linear.py:731"}, P.dense_mlp(), exclude=NON_GATED),
    _rule("vllm.mlp_intermediate.non_gated", "mlp_intermediate",
          "dense MLP without gate (one ColumnParallelLinear): divide(intermediate_size, tp)",
          DIVIDE, DIVIDE_SITE, P.dense_mlp(), archs=NON_GATED),
    _rule("vllm.block_fp8.dense_k", "block_fp8",
          "block FP8 dense MLP: down_proj (RowParallelLinear) input per rank = intermediate/tp % block_k, tp > 1 "
          "(the merged gate_up skips its block_n check on a mismatch)",
          FP8_BLOCK_K, {"0.33.0": "vllm/model_executor/layers/quantization/utils/fp8_utils.py:1324"},
          _fp8_dense_k(False), exc_type="ValueError"),
    _rule("vllm.moe_experts.deepseek_v4_mega", "moe_experts",
          "DeepSeek-V4 with --enable-expert-parallel on the MegaMoE path (moe_backend=deep_gemm_mega_moe, the "
          "backend of DeepSeek-V4's EP recipes): assert n_physical_experts % ep_size == 0 (no redundant experts); "
          "with moe_backend=auto the 0.27 default path asserts the same count against tp_size",
          "n_physical_experts={n} must be divisible by ep_size={ep}. Adjust num_redundant_experts.",
          {"0.27.1": "vllm/models/deepseek_v4/nvidia/model.py:631"}, dsv4_mega_experts,
          archs=("DeepseekV4ForCausalLM",), versions="~=0.27.0",
          note="read from the 0.27.1 wheel; 0.33.0 keeps the check only on the MegaMoE path, which the "
          "harness (moe_backend=auto) does not take"),
    _rule("vllm.mxfp8.down_proj", "group_size",
          "ModelOpt MXFP8 MLP (MiniMax-M3 NVFP4 checkpoints): down_proj input per rank = intermediate/tp % 32",
          "MXFP8 requires input size divisible by 32, got {size}",
          {"0.33.0": "vllm/model_executor/layers/quantization/modelopt.py:2336"}, mxfp8_down_k, exc_type="ValueError",
          archs=("MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3ForCausalLM")),
    _rule("vllm.moe_intermediate", "moe_intermediate",
          "FusedMoEConfig: assert intermediate_size % tp_size == 0, with the MoE-TP size = tp x dp without "
          "expert parallelism (1 with --enable-expert-parallel)",
          BARE, {"0.33.0": "vllm/model_executor/layers/fused_moe/config.py:1352"}, moe_intermediate,
          exclude=("KimiK3ForConditionalGeneration",)),
    _rule("vllm.moe_intermediate.kimi_k3", "moe_intermediate",
          "Kimi-K3: the expert width is padded to 256 x tp when moe_intermediate / tp < 256 (tp > 1, no EP), "
          "then FusedMoEConfig asserts padded % (tp x dp) == 0",
          BARE, {"0.33.0": "vllm/model_executor/layers/fused_moe/config.py:1352"}, moe_intermediate_kimi_k3,
          archs=("KimiK3ForConditionalGeneration",)),
    _rule("vllm.group_size.wna16_moe", "group_size",
          "compressed-tensors WNA16 MoE with group scales: moe_intermediate / MoE-TP % group_size != 0",
          "CompressedTensors WNA16 MoE with static group scales requires the MoE intermediate size per tensor-parallel "
          "partition ({size}) to be divisible by group_size ({group}). Scale groups would otherwise cross TP shard "
          "boundaries; use a compatible TP size or enable expert parallelism.",
          {"0.33.0": "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe/"
                     "compressed_tensors_moe_wna16.py:245"}, wna16_moe_group, exc_type="ValueError", versions=">=0.33.0"),
    _rule("vllm.kernel.fp8_moe_backend", "kernel",
          "block-FP8 experts whose checkpoint block is refined to the TP shard (per-partition intermediate not a "
          "multiple of the block, gcd >= 32), on a GPU below SM 8.9: only the Triton kernels take a refined "
          "block, and their FP8 needs SM 8.9",
          "No FP8 MoE backend supports the deployment configuration.",
          {"0.33.0": "vllm/model_executor/layers/fused_moe/oracle/fp8.py:546"}, fp8_moe_no_backend,
          exc_type="NotImplementedError", platforms=("cuda-sm75", "cuda-sm80"),
          versions=">=0.33.0"),
    _rule("vllm.block_fp8.moe_n", "block_fp8",
          "block FP8 MoE: ispp = moe_intermediate / MoE-TP; no refinement (gcd(block_n, block_k, ispp, hidden) < 32, "
          "or a compressed-tensors checkpoint) and ispp % block_n != 0",
          "The output_size of gate's and up's weight = {size} is not divisible by weight quantization block_n = "
          "{block}.", {"0.33.0": "vllm/model_executor/layers/quantization/utils/fp8_utils.py:1362"}, _fp8_moe("n"),
          exc_type="ValueError", versions=">=0.33.0"),
    _rule("vllm.block_fp8.moe_k", "block_fp8",
          "block FP8 MoE: no refinement, ispp % block_n == 0, global tp > 1 and ispp % block_k != 0",
          "The input_size of down's weight = {size} is not divisible by weight quantization block_k = {block}.",
          {"0.33.0": "vllm/model_executor/layers/quantization/utils/fp8_utils.py:1370"}, _fp8_moe("k"),
          exc_type="ValueError", versions=">=0.33.0"),
    _rule("vllm.block_fp8.moe_n", "block_fp8",
          "block FP8 MoE (Fp8MoEMethod.create_weights, before block scales could be refined): ispp = "
          "moe_intermediate / MoE-TP; ispp % block_n != 0",
          "The output_size of gate's and up's weight = {size} is not divisible by weight quantization block_n = "
          "{block}.", {"0.22.0": "vllm/model_executor/layers/quantization/fp8.py:637"}, _fp8_moe("n", refine=False),
          exc_type="ValueError", versions=">=0.22.0,<0.33.0"),
    _rule("vllm.block_fp8.moe_k", "block_fp8",
          "block FP8 MoE (before refinement): ispp % block_n == 0, tp > 1 and ispp % block_k != 0",
          "The input_size of down's weight = {size} is not divisible by weight quantization block_k = {block}.",
          {"0.22.0": "vllm/model_executor/layers/quantization/fp8.py:644"}, _fp8_moe("k", refine=False),
          exc_type="ValueError", versions=">=0.22.0,<0.33.0"),
    _rule("vllm.group_size", "group_size",
          "AWQ: a row-parallel input per rank (o_proj heads/tp*head_dim, down_proj intermediate/tp, expert down "
          "moe_intermediate/MoE-TP) % group_size != 0, where the Marlin kernel cannot take the layer; no AWQ "
          "model in the catalog, so read from source",
          "The input size is not aligned with the quantized weight shape. This can be caused by too large tensor "
          "parallel size.", {}, lambda ctx: _only_awq(ctx, P.group_size_rowparallel(FW)), exc_type="ValueError",
          src=SRC + "vllm/model_executor/layers/quantization/auto_awq.py#L819-L823"),
    _rule("vllm.mlp_intermediate.shared_experts", "mlp_intermediate",
          "shared-expert MLP (MergedColumnParallelLinear): shared_expert_intermediate_size % tp != 0",
          BARE, {"0.33.0": "vllm/model_executor/layers/linear.py:731"}, shared_mlp),
    _rule("vllm.block_fp8.shared_k", "block_fp8",
          "block FP8 shared expert: down_proj input per rank % block_k, tp > 1",
          FP8_BLOCK_K, {"0.33.0": "vllm/model_executor/layers/quantization/utils/fp8_utils.py:1324"},
          _fp8_dense_k(True), exc_type="ValueError"),
    # -- warnings: runs, with a caveat ------------------------------------------------------------------
    _rule("vllm.moe_experts.uneven", "moe_experts",
          "EP size (tp x dp) does not divide the experts: the first n % ep ranks hold one expert more "
          "(expert_map_manager); runs, unbalanced",
          "{n} experts over EP size {ep}: ranks hold {lo} or {hi} experts (uneven expert split).", {},
          None, severity="warning", ours=True,
          src=SRC + "vllm/model_executor/layers/fused_moe/expert_map_manager.py#L64-L69"),
    _rule("vllm.pipeline_layers", "pipeline_layers",
          "get_pp_indices: when pp does not divide num_hidden_layers, stages -2, -3, ... take one layer more "
          "(never the last stage); runs. vLLM logs it at INFO level.",
          "{layers} layers over {pp} pipeline stages: stages hold {lo} or {hi} layers (uneven split).", {},
          P.pipeline_even(), severity="warning", ours=True, src=SRC + "vllm/distributed/utils.py#L225-L236"),
]


def _uneven(ctx: Ctx):
    ep = ctx.ep_size()
    n = ctx.i("num_experts")
    fire = ctx.is_moe() & ctx.has("num_experts") & (ep > 1) & not_multiple(n, ep)
    lo = n // np.maximum(ep, 1)
    return fire, {"n": n, "ep": ep, "lo": lo, "hi": lo + 1}


#: Raise sites in other executed releases, per rule id: from that release's conformance table where
#: the rule fired there (same message), else the same source line found in that release's file
#: (``data/conformance/vllm-<release>-evidence.json``, written by ``python -m conformance sites --version
#: <release> --write``).
SITES: dict[str, dict[str, str]] = X.release_sites(FW, EXECUTED)


#: Dropped architectures that a release still serves through its Transformers backend (seen in its
#: table: the model builds at TP 1).
TRANSFORMERS_BACKEND: dict[str, tuple[str, ...]] = {"0.22.0": ("MllamaForConditionalGeneration",)}


@lru_cache(maxsize=None)
def rules() -> list[Rule]:
    """Rules whose data is per release (the model registry, the readable model types) get one copy per
    executed release, each bound to that release's data and valid for :func:`~dashboard.rules.executed.release_range`."""
    import dataclasses

    per_release = {"vllm.config.unknown_model_type": lambda rel: _unknown_model_type(rel),
                   "vllm.architecture.removed": lambda rel: _registry_state(rel, "previous"),
                   "vllm.architecture.out_of_tree": lambda rel: _registry_state(rel, "oot"),
                   "vllm.architecture.unsupported": lambda rel: _registry_state(rel, "unsupported")}
    out: list[Rule] = []
    for r in RULES_AS_WRITTEN:
        r = X.join_release_sites(r, SITES, EXECUTED, {})
        if r.id == "vllm.moe_experts.uneven":
            out.append(dataclasses.replace(r, predicate=_uneven))
        elif r.id in per_release:
            for rel in EXECUTED:
                skip = TRANSFORMERS_BACKEND.get(rel, ()) if r.id == "vllm.architecture.removed" else ()
                out.append(dataclasses.replace(r, predicate=per_release[r.id](rel), versions=X.release_range(EXECUTED, rel),
                                               exclude_architectures=tuple(r.exclude_architectures) + skip))
        else:
            out.append(r)
    return out
