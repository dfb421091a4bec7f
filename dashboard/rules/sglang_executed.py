"""SGLang rules for the releases run through the conformance harness (``versions=">=0.5.21"``: 0.5.21 and
0.5.23 were run; 0.5.22 reads as 0.5.21 from source; rules that differ carry their own version range).

Each rule was checked by building every catalog model with SGLang's own code under simulated layouts
(``python -m conformance run --framework sglang``; tables in ``data/conformance/``): the rule fires
exactly where SGLang refused, with SGLang's message and raise site. The list order is SGLang's order,
so the first rule that fires is the error a user sees first:

1. the launcher (``Engine._launch_subprocesses``, before any scheduler): the config's ``model_type``,
   ``assert tp_size % attn_dp_size == 0``;
2. TP rank 0's scheduler, before the model: the initial expert-location metadata
   (``num_physical_experts % ep_size``) of model classes that declare expert locations;
3. the model class: a vision tower built before the language model, then decoder layer 0. A hybrid whose
   layer 0 is linear attention (Gated DeltaNet, KDA, Mamba-2) builds that mixer and layer 0's MLP/MoE
   before the first softmax-attention layer; the others build softmax attention (the model file's bare
   asserts on heads and KV heads, else ``QKVParallelLinear``'s ``divide``), its block-FP8 projections,
   then the MLP (``MergedColumnParallelLinear``'s bare assert) or the fused MoE and its shared experts;
   vision towers built after the language model come last;
4. the check the model runner makes right after loading (``check_quantized_moe_compatibility``).

Attention-TP is per model file: ``attn_tp = tp / attn_dp`` for files that shard attention on the
attention-TP group (Qwen3, Qwen3-MoE, DeepSeek, GLM-4-MoE, MiniMax-M2, gpt-oss, ...), the full TP for
the others (Llama, Qwen2, Gemma, Mixtral, EXAONE-4, ...). MLPs and experts shard over the full TP group
(experts: ``moe_tp = tp / ep``). Since 0.5.22 the vocabulary is padded to a multiple of the TP size, so
the embedding never refuses; 0.5.21 pads it to 64 only and divides it over the embedding's group.

Bare ``assert`` statements print no message: SGLang's log shows ``AssertionError`` and the traceback's
last line, so the message is written ``AssertionError (no message) at <file>:<line>``. ``divide()``
failures read ``{a} is not divisible by {b}`` (an ``AssertionError`` with a message, raised in
``sglang/srt/distributed/utils.py``).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dashboard import sharding
from dashboard.rules import _executed_common as X
from dashboard.rules import _preds as P
from dashboard.rules.common import Ctx, Rule, not_multiple

FW = "sglang"
V = ">=0.5.21"
EXECUTED = ("0.5.21", "0.5.23")


def release_range(release: str) -> str:
    """The releases whose behaviour the executed ``release`` stands for: from it up to the next
    executed release (releases in between were not run: evidence ``source``)."""
    return X.release_range(EXECUTED, release)


DIVIDE = "{a} is not divisible by {b}"
BARE = "AssertionError (no message) at {site}"
DIVIDE_SITE = "sglang/srt/distributed/utils.py:70"
MERGED_SITE = "sglang/srt/layers/linear.py:693"
REPO = "https://github.com/sgl-project/sglang/blob"
SRC = f"{REPO}/v0.5.23/python/"

@lru_cache(maxsize=None)
def registry(release: str) -> dict:
    """The release's model registry as the harness read it (``sglang-<release>-architectures.json``)."""
    return X.read_registry(f"sglang-{release}-architectures.json", {"architectures": [], "model_types": []})


# ----------------------------------------------------------------------------------------------------
# architecture groups (SGLang 0.5.23 model classes)
# ----------------------------------------------------------------------------------------------------

#: Softmax attention with the model file's three bare asserts (heads % T, then kv % T when kv >= T,
#: else T % kv), T = the full TP ("tp") or the attention-TP group ("attn"); sites per release.
ATTN_ASSERTS: dict[str, tuple[str, dict[str, tuple[str, str, str]]]] = {
    "llama": ("tp", {"0.5.23": ("llama.py:183", "llama.py:189", "llama.py:193")}),
    "qwen2": ("tp", {"0.5.23": ("qwen2.py:167", "qwen2.py:173", "qwen2.py:177")}),
    "qwen3": ("attn", {"0.5.23": ("qwen3.py:166", "qwen3.py:172", "qwen3.py:176")}),
    "qwen3_moe": ("attn", {"0.5.23": ("qwen3_moe.py:506", "qwen3_moe.py:512", "qwen3_moe.py:516")}),
    "qwen3_next": ("attn", {"0.5.23": ("qwen3_next.py:624", "qwen3_next.py:630", "qwen3_next.py:634")}),
    "qwen3_5": ("attn", {"0.5.23": ("qwen3_5.py:1293", "qwen3_5.py:1297", "qwen3_5.py:1299")}),
    "minimax_m2": ("attn", {"0.5.23": ("minimax_m2.py:647", "minimax_m2.py:654", "minimax_m2.py:658")}),
    "exaone4": ("tp", {"0.5.23": ("exaone4.py:116", "exaone4.py:122", "exaone4.py:126")}),
    "mixtral": ("tp", {"0.5.23": ("mixtral.py:139", "mixtral.py:145", "mixtral.py:149")}),
    "gemma": ("tp", {"0.5.23": ("gemma.py:95", "gemma.py:101", "gemma.py:105")}),
    "gemma2": ("tp", {"0.5.23": ("gemma2.py:116", "gemma2.py:122", "gemma2.py:126")}),
    "gemma3": ("tp", {"0.5.23": ("gemma3_causal.py:140", "gemma3_causal.py:149", "gemma3_causal.py:153")}),
    "gemma4": ("tp", {"0.5.23": ("gemma4_causal.py:342", "gemma4_causal.py:348", "gemma4_causal.py:350")}),
    "glm4_moe": ("attn", {"0.5.23": ("glm4_moe.py:237", "glm4_moe.py:243", "glm4_moe.py:247")}),
    "granite": ("tp", {"0.5.23": ("granite.py:143", "granite.py:149", "granite.py:153")}),
    "granitemoe": ("tp", {"0.5.23": ("granitemoe.py:223", "granitemoe.py:229", "granitemoe.py:233")}),
    "olmo2": ("tp", {"0.5.23": ("olmo2.py:85", "olmo2.py:93", "olmo2.py:97")}),
    "llama4": ("attn", {"0.5.23": ("llama4.py:224", "llama4.py:230", "llama4.py:234")}),
    "nemotron_h": ("attn", {"0.5.23": ("nemotron_h.py:696", "nemotron_h.py:702", "nemotron_h.py:706")}),
    "gpt_oss": ("attn", {"0.5.23": ("gpt_oss.py:394", "gpt_oss.py:400", "gpt_oss.py:404")}),
    "baichuan": ("tp", {"0.5.23": ("baichuan.py:139", "baichuan.py:147", "baichuan.py:151")}),
    "chatglm": ("tp", {"0.5.23": ("chatglm.py:61", "chatglm.py:72", "chatglm.py:76")}),
    "hunyuan": ("tp", {"0.5.23": ("hunyuan.py:265", "hunyuan.py:271", "hunyuan.py:275")}),
    "laguna": ("attn", {"0.5.23": ("laguna.py:262", "laguna.py:266", "laguna.py:268")}),
    "mimo_v2": ("attn", {"0.5.23": ("mimo_v2.py:691", "mimo_v2.py:697", "mimo_v2.py:701")}),
}

#: Architectures whose decoder attention is each module's class (text decoders of multimodal classes
#: included).
ATTN_ASSERT_ARCHS: dict[str, tuple[str, ...]] = {
    "llama": ("LlamaForCausalLM", "MistralForCausalLM", "LlavaLlamaForCausalLM", "Phi3ForCausalLM"),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2_5_VLForConditionalGeneration", "MiMoForCausalLM"),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3VLForConditionalGeneration"),
    "qwen3_moe": ("Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration"),
    "qwen3_next": ("Qwen3NextForCausalLM",),
    "qwen3_5": ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"),
    "minimax_m2": ("MiniMaxM2ForCausalLM",),
    "exaone4": ("Exaone4ForCausalLM",),
    "mixtral": ("MixtralForCausalLM",),
    "gemma": ("GemmaForCausalLM",),
    "gemma2": ("Gemma2ForCausalLM",),
    "gemma3": ("Gemma3ForConditionalGeneration", "Gemma3ForCausalLM"),
    "gemma4": ("Gemma4ForConditionalGeneration", "Gemma4ForCausalLM"),
    "glm4_moe": ("Glm4MoeForCausalLM", "Glm4vMoeForConditionalGeneration"),
    "granite": ("GraniteForCausalLM",),
    "granitemoe": ("GraniteMoeForCausalLM",),
    "olmo2": ("Olmo2ForCausalLM", "Olmo3ForCausalLM"),
    "llama4": ("Llama4ForConditionalGeneration", "Llama4ForCausalLM"),
    "nemotron_h": ("NemotronHForCausalLM",),
    "gpt_oss": ("GptOssForCausalLM",),
    "baichuan": ("BaichuanForCausalLM",),
    "chatglm": ("ChatGLMModel", "ChatGLMForConditionalGeneration"),
    "hunyuan": ("HunYuanMoEV1ForCausalLM",),
    "laguna": ("LagunaForCausalLM",),
    "mimo_v2": ("MiMoV2FlashForCausalLM",),
}
_ATTN_ASSERT_ALL = tuple(a for archs in ATTN_ASSERT_ARCHS.values() for a in archs)

#: Multi-head latent attention of ``deepseek_v2.py`` (``DeepseekV2AttentionMLA``):
#: ``assert num_heads % attn_tp_size == 0``.
MLA_DEEPSEEK = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM",
                "Glm4MoeLiteForCausalLM", "KimiK25ForConditionalGeneration", "KimiLinearForCausalLM",
                "KimiK3ForConditionalGeneration")

DSV4 = ("DeepseekV4ForCausalLM",)
LAGUNA = ("LagunaForCausalLM",)

#: Hybrids whose decoder layer 0 is a linear-attention / Mamba mixer: it and layer 0's MLP or MoE are
#: built before the first softmax-attention layer.
HYBRID_LINEAR_FIRST = ("KimiK3ForConditionalGeneration", "Lfm2ForCausalLM", "Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration",
                       "Qwen3_5MoeForConditionalGeneration", "KimiLinearForCausalLM", "NemotronHForCausalLM")

#: Model classes with ``get_model_config_for_expert_location``: the model runner's initial
#: expert-location metadata asserts ``num_physical_experts % ep_size == 0`` before the model exists.
EXPERT_LOCATION = ("Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration", "Qwen3NextForCausalLM",
                   "Qwen3_5MoeForConditionalGeneration", "MiniMaxM2ForCausalLM", "DeepseekV2ForCausalLM",
                   "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM",
                   "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "GptOssForCausalLM",
                   "KimiK25ForConditionalGeneration", "MiMoV2FlashForCausalLM",
                   "MiniMaxM3SparseForConditionalGeneration", "NemotronHForCausalLM", "Qwen2MoeForCausalLM")

#: Vision towers built before the language model whose ``VisionAttention`` divides the vision heads by
#: the attention-TP size (no dummy heads).
#: Vision towers built from ``models/siglip.py`` (position embeddings a VocabParallelEmbedding).
SIGLIP_TOWER = ("Gemma3ForConditionalGeneration",)
VISION_FIRST = ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
                "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                "Gemma3ForConditionalGeneration", "MllamaForConditionalGeneration", "KimiK25ForConditionalGeneration",
                "MiniMaxM3SparseForConditionalGeneration")
MLLAMA = ("MllamaForConditionalGeneration",)
#: Vision towers built first whose attention is a ``QKVParallelLinear`` over the full TP (Gemma-4's
#: encoder): divide(vision heads, tp).
VISION_FIRST_TP = ("Gemma4ForConditionalGeneration",)
#: Vision towers built after the language model (same ``VisionAttention`` divide).
VISION_AFTER = ("Qwen2_5_VLForConditionalGeneration",)
#: ``VisionAttention`` that all-reduces over the full TP group: refused when 1 < attn_tp < tp.
VISION_TP_REDUCE = ("Qwen2_5_VLForConditionalGeneration", "Gemma3ForConditionalGeneration",
                    "MllamaForConditionalGeneration")
#: Vision towers that pad the heads with dummy heads to a multiple of attention-TP
#: (``update_vit_attn_dummy_heads_config``): they run (status ``valid_padded``).
VISION_PADDED = ("Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration",
                 "InternVLChatModel", "InternS1ForConditionalGeneration", "GlmOcrForConditionalGeneration")

#: Model files without their own asserts: ``QKVParallelLinear``'s ``divide`` over the full TP.
QKV_DIVIDE_TP = ("GPTJForCausalLM", "GPTBigCodeForCausalLM", "Lfm2ForCausalLM")
#: Model files that assert only the heads (bare) before QKVParallelLinear (KV heads = heads).
HEADS_ONLY_ASSERTS: dict[str, tuple[str, dict[str, str]]] = {
    "gpt2": ("tp", {"0.5.23": "gpt2.py:55"}),
}
HEADS_ONLY_ASSERT_ARCHS: dict[str, tuple[str, ...]] = {"gpt2": ("GPT2LMHeadModel",)}
#: MLPs built from one ColumnParallelLinear (no gate): divide(intermediate, tp) gives a message.
NON_GATED = ("GPT2LMHeadModel", "GPTJForCausalLM", "GPTBigCodeForCausalLM")

#: No SGLang model class, and the Transformers class is not backend-compatible
#: (``_supports_attention_backend`` False): ``resolve_transformers_arch`` refuses it in the scheduler,
#: before the model (``model_impl="auto"``).
TF_BACKEND_INCOMPATIBLE = ("CodeGenForCausalLM", "FalconForCausalLM", "StableLMEpochForCausalLM")

#: Transformers backend (backend-compatible class) whose HF config has no ``base_model_tp_plan``:
#: ``recursive_replace`` refuses every TP size > 1, naming the HF base model class.
TF_BACKEND_NO_PLAN: dict[str, str] = {"FuyuForCausalLM": "transformers.models.fuyu.modeling_fuyu.FuyuModel"}

#: LFM2's short-convolution layers (layer 0): ``in_proj = MergedColumnParallelLinear([hidden] * 3)``.
LFM2_CONV = ("Lfm2ForCausalLM",)

#: Architectures SGLang serves through its Transformers backend (``TransformersForCausalLM``: no SGLang
#: model class), by the HF config's ``base_model_tp_plan`` style: "llama" = q/k/v/gate/up colwise and
#: o/down rowwise (``nn.Linear`` replaced in module order, each ``divide(features, tp)``), then the
#: attention instances ``divide(heads, tp)`` and ``divide(kv_heads, tp)`` (no KV replication).
TF_BACKEND_LLAMA_PLAN = ("SmolLM3ForCausalLM",)
#: GPT-NeoX's plan: query_key_value (3 x heads x head_dim) and dense_h_to_4h colwise, dense and
#: dense_4h_to_h rowwise.
TF_BACKEND_NEOX_PLAN = ("GPTNeoXForCausalLM",)


# ----------------------------------------------------------------------------------------------------
# predicates (vectorized; see dashboard.rules.common.Ctx)
# ----------------------------------------------------------------------------------------------------


def _none(ctx: Ctx):
    return np.zeros(ctx.n, dtype=bool), {}


def attn_tp(ctx: Ctx) -> np.ndarray:
    """``tp / attn_dp`` (``--attn-dp-size``; ``dp`` of the layout under DP attention): the attention-TP
    group size (:meth:`dashboard.frameworks.sglang.SGLang.kv_pool_tp`)."""
    return ctx.attn_tp(FW)


def _group(ctx: Ctx, group: str) -> np.ndarray:
    return attn_tp(ctx) if group == "attn" else ctx.tp


def moe_tp(ctx: Ctx) -> np.ndarray:
    """``moe_tp = tp / ep`` (``--ep-size``)."""
    return ctx.moe_tp(FW)


def moe_ep(ctx: Ctx) -> np.ndarray:
    """``--ep-size`` per cell (1 = off; :meth:`dashboard.frameworks.sglang.SGLang.ep_size`)."""
    return ctx.ep_size(FW)


def attention_tp_of(ctx: Ctx) -> np.ndarray:
    """Per cell, the TP degree SGLang's attention of that model class is sharded over: ``tp / attn_dp``
    for model files on the attention-TP group, the full TP for the others (Llama, Qwen2, Gemma, ...)
    (:meth:`dashboard.frameworks.sglang.SGLang.attention_tp`)."""
    return ctx.attention_tp_of(FW, EXECUTED[-1])


#: SGLang 0.5.21's ``embed_tokens`` group by model file: on the attention-TP group (``use_attn_tp_group=
#: is_dp_attention_enabled()`` or ``get_embedding_tp_kwargs()``), replicated under DP attention
#: (``enable_tp=not is_dp_attention_enabled()``), else the full TP (Llama, Mixtral, Gemma, ChatGLM, ...).
EMBED_ON_ATTN_TP = ("Qwen2ForCausalLM", "Qwen2_5_VLForConditionalGeneration", "MiMoForCausalLM", "Qwen3ForCausalLM",
                    "Qwen3VLForConditionalGeneration", "Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration",
                    "Qwen3NextForCausalLM", "MiniMaxM2ForCausalLM", "Glm4MoeForCausalLM", "Glm4vMoeForConditionalGeneration",
                    "Llama4ForConditionalGeneration", "Llama4ForCausalLM", "NemotronHForCausalLM", "GptOssForCausalLM",
                    "LagunaForCausalLM", "MiMoV2FlashForCausalLM", "KimiK3ForConditionalGeneration",
                    *(a for a in MLA_DEEPSEEK if a != "KimiLinearForCausalLM"))
EMBED_REPLICATED_UNDER_DP = ("DeepseekV4ForCausalLM", "Qwen3_5ForConditionalGeneration",
                             "Qwen3_5MoeForConditionalGeneration")


#: Catalog architectures served by SGLang's Transformers backend (no SGLang model class, and no config
#: class that renames them to one, as SGLang's Olmo3Config does): it replaces the input embedding after
#: the linear layers.
TRANSFORMERS_BACKEND = tuple(sorted({*TF_BACKEND_NO_PLAN, *TF_BACKEND_INCOMPATIBLE, *TF_BACKEND_LLAMA_PLAN,
                                     *TF_BACKEND_NEOX_PLAN, "Idefics3ForConditionalGeneration"}))


def vocab_unpadded(ctx: Ctx, backend: bool = False):
    """Before 0.5.22 (GPU): ``divide(pad64(vocab_size), T)``, T the embedding's group
    (:data:`EMBED_ON_ATTN_TP`, :data:`EMBED_REPLICATED_UNDER_DP`). ``backend``: only the architectures the
    Transformers backend serves (their embedding is replaced last), else only the others."""
    tf = ctx.arch_in(TRANSFORMERS_BACKEND)
    padded = ctx.memo(("vpad", P.VOCAB_PAD), lambda: sharding.pad_to_multiple(ctx.i("vocab_size"), P.VOCAB_PAD))
    t = np.where(ctx.arch_in(EMBED_ON_ATTN_TP), attn_tp(ctx), ctx.tp)
    on = np.asarray(ctx.dp_attention) & (np.asarray(ctx.dp) > 1)  # scalars, or per-layout arrays
    if np.any(on):
        t = np.where(ctx.arch_in(EMBED_REPLICATED_UNDER_DP) & on, 1, t)
    return ctx.has("vocab_size") & not_multiple(padded, t) & (tf if backend else ~tf), {"a": padded, "b": t}


def vision_positions(ctx: Ctx):
    """SigLIP ``position_embedding = VocabParallelEmbedding(num_patches)`` over the full TP, before 0.5.22:
    ``divide(pad64(num_patches), tp)``."""
    padded = sharding.pad_to_multiple(ctx.i("vision_position_embeddings"), P.VOCAB_PAD)
    return ctx.has("vision_position_embeddings") & not_multiple(padded, ctx.tp), {"a": padded, "b": ctx.tp}


def vision_mlp(ctx: Ctx):
    """SigLIP ``fc1 = ColumnParallelLinear(vision intermediate)`` over the full TP: ``divide(I_v, tp)``."""
    iv = ctx.i("vision_intermediate_size")
    return ctx.has("vision_intermediate_size") & not_multiple(iv, ctx.tp), {"a": iv, "b": ctx.tp}


def exaone_swa_backend(ctx: Ctx):
    """EXAONE-4 with a sliding-window pattern: the server-argument hook asserts the attention backend."""
    sw = ctx.has("num_sliding_window_layers") & (ctx.i("num_sliding_window_layers") > 0)
    return sw, tf_backend_incompatible(ctx)[1]


def unknown_model_type(release: str):
    """The config's ``model_type`` is neither one of SGLang's own config classes nor known to the
    transformers the release installs (:func:`dashboard.rules._preds.unknown_model_type` over the
    release's registry)."""
    return P.unknown_model_type(lambda: registry(release).get("model_types", []))


def dsv4_null_kv_lora_rank(ctx: Ctx):
    """DeepSeek-V4 checkpoints exported by llm-compressor (compressed-tensors) write ``"kv_lora_rank":
    null``; the catalog keeps no explicit nulls, so the export format stands for it."""
    return ctx.str_in("quant_method", ("compressed-tensors",)), {}


def gptq_not_marlin(ctx: Ctx):
    """GPTQ checkpoints SGLang cannot convert to ``gptq_marlin`` (``is_gptq_marlin_compatible``): bits
    other than 4 or 8, a group size other than -1/32/64/128, or a quantization config without
    ``quant_method`` (AutoGPTQ's ``quantize_config.json`` beside a config.json that has none: the catalog
    notes it). Plain ``gptq`` is not among 0.5.23's quantization methods."""
    bits, g = ctx.i("quant_bits"), ctx.i("quant_group_size")
    gptq = ctx.str_in("quant_method", ("gptq",))
    bad_bits = ctx.has("quant_bits") & ~np.isin(bits, (4, 8))
    bad_group = ctx.has("quant_group_size") & ~np.isin(g, (32, 64, 128))  # has() is False for -1

    def sidecar(df):
        if "parse_notes" not in df.columns:
            return np.zeros(len(df), dtype=bool)
        return df["parse_notes"].astype("string").fillna("").str.contains(
            "no quantization_config in config.json", regex=False).to_numpy(dtype=bool)

    return gptq & (bad_bits | bad_group | ctx.flag("gptq_sidecar", sidecar)), {}


def tf_backend_incompatible(ctx: Ctx):
    names = np.repeat(np.asarray([str(a) for a in ctx.arch()], dtype=object), ctx.n_tp) if ctx.n_tp > 1 \
        else np.asarray([str(a) for a in ctx.arch()], dtype=object)
    return np.ones(ctx.n, dtype=bool), {"arch": names}


def dp_attention(ctx: Ctx):
    """``assert tp_size % attn_dp_size == 0`` (any model, at any TP size)."""
    fire = (ctx.dp > 1) & ctx.dp_attention & not_multiple(ctx.tp, ctx.dp)
    return np.broadcast_to(fire, (ctx.n,)).copy(), {}


#: Expert counts the model class reads from its config class's default when the checkpoint has no
#: experts (NemotronHConfig's n_routed_experts = 8: dense Nemotron-H checkpoints too).
EXPERT_LOCATION_DEFAULT = {"NemotronHForCausalLM": 8}
#: Model classes that declare expert locations only from a later release (0.5.21's and 0.5.22's
#: nemotron_h.py have no get_model_config_for_expert_location).
EXPERT_LOCATION_FROM = {"NemotronHForCausalLM": "0.5.23"}


def expert_location(ctx: Ctx):
    """``num_physical_experts % ep_size`` (no redundant experts): under ``--ep-size`` only."""
    ep = moe_ep(ctx)
    dflt = np.repeat(np.asarray([EXPERT_LOCATION_DEFAULT.get(str(a), 0) for a in ctx.arch()], dtype=np.int64),
                     ctx.n_tp)
    n = np.where(ctx.has("num_experts"), ctx.i("num_experts"), dflt)
    return (n > 0) & (ep > 1) & not_multiple(n, ep), {}


def _attn(which: str, group: str):
    """Softmax attention bare asserts. ``heads``: heads % T; ``split``: kv >= T and kv % T;
    ``replicate``: kv < T and T % kv (after the heads check passed)."""

    def pred(ctx: Ctx):
        t = _group(ctx, group)
        h = ctx.i("num_attention_heads")
        heads = ctx.has("num_attention_heads") & not_multiple(h, t)
        if which == "heads":
            return heads, {}
        kv = np.maximum(ctx.i("num_key_value_heads"), 1)
        base = ctx.has("num_key_value_heads") & ~ctx.is_mla() & ~heads
        if which == "split":
            return base & (kv >= t) & not_multiple(kv, t), {}
        return base & (kv < t) & not_multiple(t, kv), {}

    return pred


def _qkv_divide(which: str, group: str = "tp"):
    """``QKVParallelLinear`` (no model-level assert): ``heads``: divide(heads, T); ``kv``: then
    divide(T, kv) when kv <= T (replication) else divide(kv, T)."""

    def pred(ctx: Ctx):
        t = _group(ctx, group)
        h = ctx.i("num_attention_heads")
        heads = ctx.has("num_attention_heads") & not_multiple(h, t)
        if which == "heads":
            return heads, {"a": h, "b": t}
        kv = np.maximum(np.where(ctx.has("num_key_value_heads"), ctx.i("num_key_value_heads"), h), 1)
        rep = t >= kv
        bad = ctx.has("num_attention_heads") & ~heads & ~ctx.is_mla() \
            & np.where(rep, not_multiple(t, kv), not_multiple(kv, t))
        return bad, {"a": np.where(rep, t, kv), "b": np.where(rep, kv, t)}

    return pred


def vision_heads(ctx: Ctx, group: str = "attn"):
    """``VisionAttention``: divide(vision heads, attn_tp) (``group="tp"``: over the full TP)."""
    t = _group(ctx, group)
    vh = ctx.i("vision_num_heads")
    return ctx.has("vision_num_heads") & not_multiple(vh, t), {"a": vh, "b": t}


def vision_tp_reduce(ctx: Ctx):
    """``reject_attn_tp_shard_with_tp_reduce``: 1 < attn_tp < tp."""
    t = attn_tp(ctx)
    fire = ctx.has("vision_num_heads") & (t > 1) & (t < ctx.tp)
    return fire, {"a": t, "tp": ctx.tp, "dp": np.broadcast_to(ctx.dp, (ctx.n,))}


def vision_padded(ctx: Ctx):
    t = attn_tp(ctx)
    vh = ctx.i("vision_num_heads")
    padded = -(-vh // np.maximum(t, 1)) * np.maximum(t, 1)
    fire = ctx.has("vision_num_heads") & not_multiple(vh, t)
    return fire, {"a": vh, "b": t, "dummy": padded - vh, "padded": padded}


def gdn_conv(ctx: Ctx):
    """Gated DeltaNet ``conv1d = ColumnParallelLinear(conv_dim)`` on attention-TP: divide(conv_dim, attn_tp)."""
    t = attn_tp(ctx)
    kd = ctx.i("linear_num_key_heads") * ctx.i("linear_key_head_dim")
    vd = ctx.i("linear_num_value_heads") * ctx.i("linear_value_head_dim")
    conv = 2 * kd + vd
    fire = ctx.linear_kind("gdn") & ctx.has("linear_num_key_heads") & ctx.has("linear_key_head_dim") \
        & not_multiple(conv, t)
    return fire, {"a": conv, "b": t}


def gdn_merged(ctx: Ctx):
    """``in_proj_qkvz`` ([key_dim, key_dim, value_dim, value_dim]) then ``in_proj_ba`` ([v_heads] * 2):
    MergedColumnParallelLinear's bare assert on attention-TP."""
    t = attn_tp(ctx)
    kd = ctx.i("linear_num_key_heads") * ctx.i("linear_key_head_dim")
    vd = ctx.i("linear_num_value_heads") * ctx.i("linear_value_head_dim")
    vh = ctx.i("linear_num_value_heads")
    bad = not_multiple(kd, t) | not_multiple(vd, t) | not_multiple(vh, t)
    return ctx.linear_kind("gdn") & ctx.has("linear_num_value_heads") & bad, {}


def kda_heads(group: str):
    """KDA layers: linear_attn_config num_heads % T (Kimi-Linear: the global TP, ``shard_on_attn_tp``
    False; Kimi-K3: attention-TP)."""

    def pred(ctx: Ctx):
        t = _group(ctx, group)
        h = ctx.i("linear_num_value_heads")
        fire = ctx.linear_kind("kda") & ctx.has("linear_num_value_heads") & not_multiple(h, t)
        return fire, {"h": h, "tp": t}

    return pred


def tf_backend_no_plan(ctx: Ctx):
    cls = np.asarray([TF_BACKEND_NO_PLAN.get(str(a), "") for a in ctx.arch()], dtype=object)
    return ctx.tp > 1, {"cls": np.repeat(cls, ctx.n_tp)}


def mamba_cache(which: str):
    """``Mamba2StateShape.create`` (the decoder layer's cache parameters, before the mixer) on
    attention-TP: n_groups becomes T when T does not divide it (groups replicated with the head shards),
    then divide(heads x head_dim + 2 x n_groups x state, T) (``conv``), then divide(heads, T) (``heads``)."""

    def pred(ctx: Ctx):
        t = attn_tp(ctx)
        h, hd = ctx.i("linear_num_value_heads"), ctx.i("linear_value_head_dim")
        g, st = ctx.i("mamba_n_groups"), ctx.i("ssm_state_size")
        g2 = np.where(not_multiple(g, t), t, g)
        conv = h * hd + 2 * g2 * st
        base = ctx.linear_kind("mamba2") & ctx.has("linear_num_value_heads") & ctx.has("linear_value_head_dim") \
            & ctx.has("mamba_n_groups") & ctx.has("ssm_state_size")
        conv_bad = base & not_multiple(conv, t)
        if which == "conv":
            return conv_bad, {"a": conv, "b": t}
        return base & ~conv_bad & not_multiple(h, t), {"a": h, "b": t}

    return pred


def _mamba(which: str):
    """SGLang's MambaMixer2 on the attention-TP group (the TP group without DP attention): ``heads``:
    num_heads % T; ``groups``: n_groups % T and n_groups != 1; ``quant``: n_groups % T, T > 1 and a
    quantized checkpoint (reached only with n_groups == 1)."""

    def pred(ctx: Ctx):
        t = attn_tp(ctx)
        h, g = ctx.i("linear_num_value_heads"), ctx.i("mamba_n_groups")
        base = ctx.linear_kind("mamba2") & ctx.has("linear_num_value_heads")
        heads = base & not_multiple(h, t)
        if which == "heads":
            return heads, {}
        groups = base & ~heads & ctx.has("mamba_n_groups") & not_multiple(g, t) & (g != 1)
        if which == "groups":
            return groups, {}
        quant = ctx.bool_col("is_quantized")
        return base & ~heads & ~groups & ctx.has("mamba_n_groups") & not_multiple(g, t) & (t > 1) & quant, {}

    return pred


def dsv4_wq_b(ctx: Ctx):
    """DeepSeek-V4 attention ``wq_b = ColumnParallelLinear(n_heads * head_dim)`` on attention-TP."""
    t = attn_tp(ctx)
    a = ctx.i("num_attention_heads") * ctx.i("head_dim")
    return ctx.has("num_attention_heads") & ctx.has("head_dim") & not_multiple(a, t), {"a": a, "b": t}


def mxfp4_cutlass_moe(ctx: Ctx):
    """MXFP4 experts on FlashInfer's CUTLASS MoE (DeepSeek-V4's FP4 experts): hidden and the expert width
    per MoE-TP rank must be multiples of 128."""
    mt = moe_tp(ctx)
    m, hid = ctx.i("moe_intermediate_size"), ctx.i("hidden_size")
    applies = ctx.is_moe() & ctx.str_in("quant_experts_format", ("mxfp4",)) & ctx.has("moe_intermediate_size") \
        & ~not_multiple(m, mt)
    ispp = m // np.maximum(mt, 1)
    return applies & (not_multiple(ispp, 128) | not_multiple(hid, 128)), {"hidden": hid, "size": ispp}


def _mla_fp8(which: str):
    """Block-FP8 MLA projections on attention-TP (``validate_block_quant_shapes``), in build order:
    ``q_b_proj`` (heads/T x qk_head_dim % block_n), ``kv_b_proj`` (heads/T x (qk_nope + v_head_dim) %
    block_n), ``o_proj`` (row parallel, T > 1: heads/T x v_head_dim % block_k)."""

    def pred(ctx: Ctx):
        t = attn_tp(ctx)
        bn, bk = ctx.i("weight_block_n"), ctx.i("weight_block_k")
        h = ctx.i("num_attention_heads")
        ok = _fp8_block(ctx, "attention") & ctx.is_mla() & ctx.has("num_attention_heads") & ~not_multiple(h, t)
        hl = h // np.maximum(t, 1)
        q = hl * ctx.i("head_dim")
        kv = hl * (ctx.i("qk_nope_head_dim") + ctx.i("v_head_dim"))
        o = hl * ctx.i("v_head_dim")
        q_bad = ok & ctx.has("head_dim") & not_multiple(q, bn)
        kv_bad = ok & ~q_bad & ctx.has("qk_nope_head_dim") & ctx.has("v_head_dim") & not_multiple(kv, bn)
        o_bad = ok & ~q_bad & ~kv_bad & ctx.has("v_head_dim") & (t > 1) & not_multiple(o, bk)
        if which == "n":
            return q_bad | kv_bad, {"size": np.where(q_bad, q, kv), "block": bn}
        return o_bad, {"size": o, "block": bk}

    return pred


def mllama_patch(ctx: Ctx):
    """Mllama's vision patch embedding: ``ColumnParallelLinear(out=vision hidden size)`` over the full TP."""
    a = ctx.i("vision_hidden_size")
    return ctx.has("vision_hidden_size") & not_multiple(a, ctx.tp), {"a": a, "b": ctx.tp}


def dsv4_nvfp4_moe(ctx: Ctx):
    """DeepSeek-V4 NVFP4 experts (ModelOptNvFp4FusedMoEMethod) with the MoE backend DeepSeek-V4 selects:
    refused below Blackwell (the harness answers as an H100, SM 9.0)."""
    return ctx.is_moe() & ctx.str_in("quant_experts_format", ("nvfp4",)), {}


def laguna_sliding_heads(ctx: Ctx):
    """Laguna's sliding-window layers' query heads (per-layer heads; the catalog keeps their mean)."""
    t = attn_tp(ctx)
    mean = ctx.models["num_attention_heads_mean"] if "num_attention_heads_mean" in ctx.models.columns else None
    if mean is None:
        return _none(ctx)
    m = np.repeat(pd_float(mean), ctx.n_tp)
    layers, full = ctx.i("num_hidden_layers"), ctx.i("num_full_attention_layers")
    sliding = ctx.i("num_sliding_window_layers")
    hs = np.round((m * layers - ctx.i("num_attention_heads") * full) / np.maximum(sliding, 1)).astype(np.int64)
    fire = ctx.has("num_sliding_window_layers") & ctx.has("num_hidden_layers") & (hs > 0) & not_multiple(hs, t)
    return fire, {}


def pd_float(s) -> np.ndarray:
    import pandas as pd

    return pd.to_numeric(s, errors="coerce").fillna(0).to_numpy(dtype=float)


def lfm2_conv(ctx: Ctx):
    """LFM2 conv ``in_proj``: MergedColumnParallelLinear([hidden] * 3): hidden % tp."""
    return ctx.has("hidden_size") & not_multiple(ctx.i("hidden_size"), ctx.tp), {}


def tf_backend_plan(ctx: Ctx):
    """Transformers backend with a TP plan: the first failing ``divide`` over the full TP, in module
    order. Llama-style plan: q_proj (heads x head_dim), k_proj / v_proj (kv x head_dim), o_proj,
    gate/up/down (intermediate); GPT-NeoX: query_key_value (3 x heads x head_dim), dense, dense_h_to_4h,
    dense_4h_to_h; then the attention instances (heads, kv heads)."""
    t = ctx.tp
    h, kv, hd = ctx.i("num_attention_heads"), ctx.i("num_key_value_heads"), ctx.i("head_dim")
    kv = np.where(ctx.has("num_key_value_heads"), kv, h)
    inter = ctx.i("intermediate_size")
    neox = ctx.arch_in(TF_BACKEND_NEOX_PLAN)
    seq = [np.where(neox, 3 * h * hd, h * hd), np.where(neox, h * hd, kv * hd), np.where(neox, inter, kv * hd),
           np.where(neox, inter, h * hd), inter, inter, inter, h, kv]
    fire = np.zeros(ctx.n, dtype=bool)
    a = np.zeros(ctx.n, dtype=np.int64)
    for v in seq:
        bad = ~fire & not_multiple(v, t)
        a = np.where(bad, v, a)
        fire |= bad
    return fire & ctx.has("num_attention_heads"), {"a": a, "b": t}


def column_dense(ctx: Ctx):
    """Non-gated MLP ``c_fc = ColumnParallelLinear(I)``: divide(I, tp)."""
    inter = ctx.i("intermediate_size")
    return ctx.has_dense_mlp() & not_multiple(inter, ctx.tp), {"a": inter, "b": ctx.tp}


def merged_dense(group: str = "tp"):
    """Dense MLP ``gate_up_proj = MergedColumnParallelLinear([I, I])``: bare assert I % T."""

    def pred(ctx: Ctx):
        t = _group(ctx, group)
        return ctx.has_dense_mlp() & not_multiple(ctx.i("intermediate_size"), t), {}

    return pred


def merged_shared(ctx: Ctx):
    """Shared-expert MLP (MergedColumnParallelLinear over the full TP): shared_I % tp."""
    sh = ctx.i("shared_expert_intermediate_size")
    return ctx.is_moe() & ctx.has("shared_expert_intermediate_size") & not_multiple(sh, ctx.tp), {}


def fused_moe_experts(ctx: Ctx):
    """FusedMoE: ``assert num_routed % moe_ep_size == 0``."""
    ep = moe_ep(ctx)
    n = ctx.i("num_experts")
    return ctx.is_moe() & ctx.has("num_experts") & (ep > 1) & not_multiple(n, ep), {}


def fused_moe_intermediate(ctx: Ctx):
    """FusedMoE: ``assert intermediate_size % moe_tp_size == 0``."""
    mt = moe_tp(ctx)
    m = ctx.i("moe_intermediate_size")
    return ctx.is_moe() & ctx.has("moe_intermediate_size") & not_multiple(m, mt), {}


def _ct(pred, ct: bool):
    """``pred`` restricted to compressed-tensors checkpoints (``ct``) or to the others: the two take
    different FP8 methods, with the same messages at other raise sites."""

    def wrapped(ctx: Ctx):
        fire, fields = pred(ctx)
        is_ct = ctx.str_in("quant_method", ("compressed-tensors",))
        return fire & (is_ct if ct else ~is_ct), fields

    return wrapped


def _fp8_block(ctx: Ctx, part: str = "") -> np.ndarray:
    """Block-FP8 weights (a block size, not an NVFP4 / MXFP4 / mixed checkpoint); with ``part`` (a
    ``quant_<part>_format`` column: experts, shared_experts, dense_mlp) only where that part is FP8-block
    or the catalog does not say (DeepSeek-V4's experts are MXFP4 in an FP8 checkpoint)."""
    low = ctx.str_in("quant_format", ("nvfp4", "mixed-precision", "mxfp4", "mxfp4-pack-quantized"))
    out = ctx.fp8_block() & ~low
    if part:
        col = f"quant_{part}_format"
        if col in ctx.models.columns:
            known = ctx.flag("notna:" + col, lambda df: df[col].notna().to_numpy(dtype=bool))
            out = out & (~known | ctx.str_in(col, ("fp8-block",)))
        frac = f"quant_{part}_fraction"
        if frac in ctx.models.columns:  # 0.0: the part is left unquantized (NaN: no such part)
            out = out & ~ctx.flag("zero:" + frac, lambda df: (df[frac].astype("float64") == 0).fillna(False)
                                  .to_numpy(dtype=bool))
    return out


def _fp8_moe(which: str):
    """``Fp8MoEMethod.create_weights``: ispp = moe_I / moe_tp; ispp % block_n, then (moe_tp > 1)
    ispp % block_k."""

    def pred(ctx: Ctx):
        bn, bk = ctx.i("weight_block_n"), ctx.i("weight_block_k")
        mt = moe_tp(ctx)
        m = ctx.i("moe_intermediate_size")
        applies = _fp8_block(ctx, "experts") & ctx.is_moe() & ctx.has("moe_intermediate_size") & ~not_multiple(m, mt)
        ispp = m // np.maximum(mt, 1)
        fail_n = applies & not_multiple(ispp, bn)
        if which == "n":
            return fail_n, {"size": ispp, "block": bn}
        return applies & ~fail_n & (mt > 1) & not_multiple(ispp, bk), {"size": ispp, "block": bk}

    return pred


def _fp8_linear(which: str, col: str, group: str = "tp"):
    """``Fp8LinearMethod.validate_block_quant_shapes`` for a dense / shared-expert MLP: gate_up output
    per rank % block_n (merged: always checked), down_proj input per rank % block_k (T > 1)."""

    def pred(ctx: Ctx):
        t = _group(ctx, group)
        part = "dense_mlp" if col == "intermediate_size" else "shared_experts"
        # MXFP8 parts of ModelOpt mixed checkpoints take Fp8LinearMethod with weight_block_size [1, 32]
        mx = ctx.str_in(f"quant_{part}_format", ("mxfp8",))
        bn = np.where(mx, 1, ctx.i("weight_block_n"))
        bk = np.where(mx, 32, ctx.i("weight_block_k"))
        inter = ctx.i(col)
        if col == "intermediate_size":
            present = ctx.has_dense_mlp()
        else:
            present = ctx.is_moe() & ctx.has(col)
        applies = (_fp8_block(ctx, part) | mx) & present & ~not_multiple(inter, t)
        size = inter // np.maximum(t, 1)
        if which == "n":
            return applies & not_multiple(size, bn), {"size": size, "block": bn}
        return applies & ~not_multiple(size, bn) & (t > 1) & not_multiple(size, bk), {"size": size, "block": bk}

    return pred


def _nvfp4_in_features(col: str):
    """ModelOpt NVFP4 linear (``ModelOptFp4LinearMethod.create_weights``): a down_proj's input per rank
    (``col`` / tp) must be a multiple of 16. Applies where the catalog marks that part NVFP4, or marks no
    part at all (the whole checkpoint NVFP4, as inferred from the repository name)."""
    part = "dense_mlp" if col == "intermediate_size" else "shared_experts"

    def pred(ctx: Ctx):
        t = ctx.tp
        parts = [f"quant_{p}_format" for p in ("dense_mlp", "shared_experts", "experts", "attention")]
        none = ctx.flag("nvfp4_parts_unknown", lambda df: np.logical_and.reduce(
            [df[c].isna().to_numpy(dtype=bool) if c in df.columns else np.ones(len(df), dtype=bool)
             for c in parts]))
        nv = ctx.str_in("quant_method", ("modelopt",)) & ctx.str_in("quant_format", ("nvfp4",)) \
            & (ctx.str_in(f"quant_{part}_format", ("nvfp4",)) | none)
        inter = ctx.i(col)
        present = ctx.has_dense_mlp() if col == "intermediate_size" else ctx.is_moe() & ctx.has(col)
        size = inter // np.maximum(t, 1)
        return nv & present & ~not_multiple(inter, t) & not_multiple(size, 16), {}

    return pred


def _fp8_qkv(group: str):
    """Block FP8 ``qkv_proj`` (merged q, k, v per rank % block_n) and ``o_proj`` (row, heads/T*head_dim
    % block_k, T > 1). Checked in that order; returns (n-fail, k-fail) by ``which``."""

    def make(which: str):
        def pred(ctx: Ctx):
            t = _group(ctx, group)
            bn, bk = ctx.i("weight_block_n"), ctx.i("weight_block_k")
            h = ctx.i("num_attention_heads")
            hd = ctx.i("head_dim")
            kv = np.maximum(ctx.i("num_key_value_heads"), 1)
            ok = _fp8_block(ctx) & ctx.has("num_attention_heads") & ctx.has("head_dim") & ~ctx.is_mla() \
                & ~not_multiple(h, t)
            q = (h // np.maximum(t, 1)) * hd
            kvr = np.maximum(kv // np.maximum(t, 1), 1) * hd
            q_bad = not_multiple(q, bn)
            kv_bad = not_multiple(kvr, bn)
            n_fail = ok & (q_bad | kv_bad)
            if which == "n":
                return n_fail, {"size": np.where(q_bad, q, kvr), "block": bn}
            return ok & ~n_fail & (t > 1) & not_multiple(q, bk), {"size": q, "block": bk}

        return pred

    return make


def _quantized_compat(which: str):
    """``check_quantized_moe_compatibility`` (after loading; checkpoints whose quantization_config has
    weight_block_size, and a moe_intermediate_size): moe_I % moe_tp, then (moe_I / moe_tp) % block_n."""

    def pred(ctx: Ctx):
        mt = moe_tp(ctx)
        m = ctx.i("moe_intermediate_size")
        bn = ctx.i("weight_block_n")
        base = ctx.has("weight_block_n") & ctx.has("moe_intermediate_size")
        div = base & not_multiple(m, mt)
        fields = {"m": m, "moe_tp": mt, "tp": ctx.tp, "ep": moe_ep(ctx), "block": bn}
        if which == "divide":
            return div, fields
        return base & ~div & not_multiple(m // np.maximum(mt, 1), bn), fields

    return pred


# ----------------------------------------------------------------------------------------------------
# the rules, in construction order
# ----------------------------------------------------------------------------------------------------

_MSG_N = "Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}."
_MSG_K = "Weight input_size_per_partition = {size} is not divisible by weight quantization block_k = {block}."
_MOE_N = ("The output_size of gate's and up's weight = {size} is not divisible by weight quantization "
          "block_n = {block}.")
_MOE_K = "The input_size of down's weight = {size} is not divisible by weight quantization block_k = {block}."
_UNKNOWN_TYPE = (
    "The checkpoint you are trying to load has model type `{model_type}` but Transformers does not recognize "
    "this architecture. This could be because of an issue with the checkpoint, or because your version of "
    "Transformers is out of date.\n\nYou can update Transformers with the command `pip install --upgrade "
    "transformers`. If this does not work, and the checkpoint is very new, then there may not be a release version "
    "that supports this model yet. In this case, you can get the most up-to-date code by installing Transformers "
    "from source with the command `pip install git+https://github.com/huggingface/transformers.git`")
_VISION_REDUCE = ("VisionAttention shards over the attention TP group ({a} ranks) but all-reduces over the full "
                  "TP group ({tp} ranks), so it does not support --attn-dp-size {dp} yet. Use --attn-dp-size "
                  "equal to --tp-size, or drop --attn-dp-size {dp}, or --mm-enable-dp-encoder where the model "
                  "supports it.")

_GPTQ_UNKNOWN = (
    "Unknown quantization method: gptq. Must be one of ['fp8', 'mxfp8', 'minimax_m3_nvfp4', 'blockwise_int8', "
    "'modelopt', 'modelopt_fp8', 'modelopt_fp4', 'nvfp4_online', 'modelopt_mixed', 'w8a8_int8', 'w8a8_fp8', 'awq', "
    "'awq_marlin', 'bitsandbytes', 'gguf', 'gptq_marlin', 'moe_wna16', 'compressed-tensors', 'w4afp8', "
    "'petit_nvfp4', 'quark', 'quark_mxfp4', 'auto-round', 'auto-round-int8', 'modelslim', 'quark_int4fp8_moe', "
    "'humming', 'mxfp_w4a8', 'mxfp4'].")

#: 0.5.21 and 0.5.22 list no 'minimax_m3_nvfp4' (layers/quantization/__init__.py)
_GPTQ_UNKNOWN_0521 = _GPTQ_UNKNOWN.replace("'minimax_m3_nvfp4', ", "")

_NVFP4_IN = "Unsupported model when in features size is not multiple of 16"

#: Rules whose raise site was read from 0.5.23's source but that no judged cell of the 0.5.23 table
#: reaches first (an earlier check fires, or no catalog model has the shape): evidence "source".
#: ``tests/test_conformance_sglang_rules.py`` keeps this list equal to what the table shows.
NOT_SEEN_FIRST: dict[str, frozenset[str]] = {"0.5.23": frozenset({
    "sglang.attention_heads.baichuan", "sglang.attention_heads.gemma3", "sglang.attention_heads.gemma4",
    "sglang.attention_heads.hunyuan", "sglang.attention_heads.mla.hybrid", "sglang.attention_heads.nemotron_h",
    "sglang.block_fp8.attention_k", "sglang.block_fp8.attention_n", "sglang.block_fp8.dense_k",
    "sglang.block_fp8.dense_k.compressed_tensors", "sglang.block_fp8.dense_k.compressed_tensors.hybrid_layer0",
    "sglang.block_fp8.dense_k.hybrid_layer0", "sglang.block_fp8.dense_n.compressed_tensors",
    "sglang.block_fp8.dense_n.compressed_tensors.hybrid_layer0", "sglang.block_fp8.dense_n.hybrid_layer0",
    "sglang.block_fp8.mla_k", "sglang.block_fp8.mla_k.hybrid", "sglang.block_fp8.mla_n.hybrid",
    "sglang.block_fp8.moe_k", "sglang.block_fp8.moe_k.compressed_tensors",
    "sglang.block_fp8.moe_k.compressed_tensors.hybrid_layer0", "sglang.block_fp8.moe_k.hybrid_layer0",
    "sglang.block_fp8.moe_n.compressed_tensors.hybrid_layer0", "sglang.block_fp8.moe_n.hybrid_layer0",
    "sglang.block_fp8.shared_k.compressed_tensors", "sglang.block_fp8.shared_k.compressed_tensors.hybrid_layer0",
    "sglang.block_fp8.shared_k.hybrid_layer0", "sglang.block_fp8.shared_n.compressed_tensors.hybrid_layer0",
    "sglang.block_fp8.shared_n.hybrid_layer0", "sglang.group_size.nvfp4_dense",
    "sglang.group_size.nvfp4_dense.hybrid_layer0", "sglang.group_size.nvfp4_shared",
    "sglang.kv_heads.qkv", "sglang.kv_heads.qkv.hybrid",
    *(f"sglang.kv_heads.{w}.{m}" for w in ("split", "replicate") for m in (
        "baichuan", "chatglm", "exaone4", "gemma", "gemma2", "gemma3", "gemma4", "gpt_oss", "granite",
        "granitemoe", "hunyuan", "llama4", "mimo_v2", "nemotron_h", "olmo2", "qwen3", "qwen3_5", "qwen3_next")),
    "sglang.kv_heads.split.qwen2",
    "sglang.linear_attention_heads.mamba_cache_heads", "sglang.mamba_groups.quantized",
    "sglang.mlp_intermediate.hybrid_layer0", "sglang.mlp_intermediate.non_gated",
    "sglang.mlp_intermediate.shared_experts", "sglang.mlp_intermediate.shared_experts.hybrid_layer0",
    "sglang.moe_intermediate", "sglang.moe_intermediate.hybrid_layer0", "sglang.moe_intermediate.quantized_compat",
    "sglang.moe_intermediate.quantized_compat_block", "sglang.vision_heads.after_language_model",
    "sglang.attention_heads.interns2_mobius", "sglang.kv_heads.split.interns2_mobius",
    "sglang.kv_heads.replicate.interns2_mobius",
}), "0.5.21": frozenset({
    "sglang.attention_heads.baichuan", "sglang.attention_heads.exaone4", "sglang.attention_heads.gemma3",
    "sglang.attention_heads.gemma4", "sglang.attention_heads.gpt_oss", "sglang.attention_heads.hunyuan",
    "sglang.attention_heads.interns2_mobius", "sglang.attention_heads.mimo_v2",
    "sglang.attention_heads.mla.hybrid", "sglang.attention_heads.nemotron_h",
    "sglang.block_fp8.dense_k.compressed_tensors", "sglang.block_fp8.dense_k.compressed_tensors.hybrid_layer0",
    "sglang.block_fp8.shared_k.compressed_tensors",
    "sglang.block_fp8.shared_k.compressed_tensors.hybrid_layer0", "sglang.kv_heads.qkv",
    "sglang.kv_heads.qkv.hybrid", "sglang.kv_heads.replicate.baichuan", "sglang.kv_heads.replicate.chatglm",
    "sglang.kv_heads.replicate.exaone4", "sglang.kv_heads.replicate.gemma", "sglang.kv_heads.replicate.gemma2",
    "sglang.kv_heads.replicate.gemma3", "sglang.kv_heads.replicate.gemma4",
    "sglang.kv_heads.replicate.glm4_moe", "sglang.kv_heads.replicate.gpt_oss",
    "sglang.kv_heads.replicate.granite", "sglang.kv_heads.replicate.granitemoe",
    "sglang.kv_heads.replicate.hunyuan", "sglang.kv_heads.replicate.interns2_mobius",
    "sglang.kv_heads.replicate.laguna", "sglang.kv_heads.replicate.llama4", "sglang.kv_heads.replicate.mimo_v2",
    "sglang.kv_heads.replicate.mixtral", "sglang.kv_heads.replicate.nemotron_h",
    "sglang.kv_heads.replicate.olmo2", "sglang.kv_heads.replicate.qwen2", "sglang.kv_heads.replicate.qwen3",
    "sglang.kv_heads.replicate.qwen3_5", "sglang.kv_heads.replicate.qwen3_moe",
    "sglang.kv_heads.replicate.qwen3_next", "sglang.kv_heads.split.baichuan", "sglang.kv_heads.split.chatglm",
    "sglang.kv_heads.split.exaone4", "sglang.kv_heads.split.gemma", "sglang.kv_heads.split.gemma2",
    "sglang.kv_heads.split.gemma3", "sglang.kv_heads.split.gemma4", "sglang.kv_heads.split.glm4_moe",
    "sglang.kv_heads.split.gpt_oss", "sglang.kv_heads.split.granite", "sglang.kv_heads.split.granitemoe",
    "sglang.kv_heads.split.hunyuan", "sglang.kv_heads.split.laguna", "sglang.kv_heads.split.llama4",
    "sglang.kv_heads.split.mimo_v2", "sglang.kv_heads.split.mixtral", "sglang.kv_heads.split.nemotron_h",
    "sglang.kv_heads.split.olmo2", "sglang.kv_heads.split.qwen2", "sglang.kv_heads.split.qwen3",
    "sglang.kv_heads.split.qwen3_5", "sglang.kv_heads.split.qwen3_moe", "sglang.kv_heads.split.qwen3_next",
    "sglang.linear_attention_heads.gdn_conv", "sglang.linear_attention_heads.lfm2_conv",
    "sglang.linear_attention_heads.mamba_cache_conv", "sglang.linear_attention_heads.mamba_cache_heads",
    "sglang.mamba_groups.quantized", "sglang.mimo_v2.rope_parameters", "sglang.mlp_intermediate",
    "sglang.mlp_intermediate.hybrid_layer0", "sglang.mlp_intermediate.non_gated",
    "sglang.mlp_intermediate.shared_experts", "sglang.mlp_intermediate.shared_experts.hybrid_layer0",
    "sglang.moe_experts.hybrid_layer0", "sglang.moe_intermediate", "sglang.moe_intermediate.hybrid_layer0",
    "sglang.vision_heads.after_language_model",
})}

#: Raise sites in the other executed releases, by rule id (``python -m conformance sites --framework
#: sglang --version V``: from the release's table where it shows the rule first, else the same source line
#: found in that release's file).
SITES: dict[str, dict[str, str]] = {
    "0.5.21": {
        "sglang.architecture.transformers_incompatible": "sglang/srt/model_loader/utils.py:185",  # table, 144 cells
        "sglang.attention_heads.baichuan": "sglang/srt/models/baichuan.py:139",  # source line
        "sglang.attention_heads.chatglm": "sglang/srt/models/chatglm.py:61",  # table, 24 cells
        "sglang.attention_heads.deepseek_v4": "sglang/srt/distributed/utils.py:65",  # table, 18 cells
        "sglang.attention_heads.exaone4": "sglang/srt/models/exaone4.py:108",  # source line
        "sglang.attention_heads.gemma": "sglang/srt/models/gemma.py:95",  # table, 18 cells
        "sglang.attention_heads.gemma2": "sglang/srt/models/gemma2.py:116",  # table, 12 cells
        "sglang.attention_heads.gemma3": "sglang/srt/models/gemma3_causal.py:133",  # source line
        "sglang.attention_heads.gemma4": "sglang/srt/models/gemma4_causal.py:326",  # source line
        "sglang.attention_heads.glm4_moe": "sglang/srt/models/glm4_moe.py:242",  # table, 3 cells
        "sglang.attention_heads.gpt2": "sglang/srt/models/gpt2.py:55",  # table, 24 cells
        "sglang.attention_heads.gpt_oss": "sglang/srt/models/gpt_oss.py:393",  # source line
        "sglang.attention_heads.granite": "sglang/srt/models/granite.py:141",  # table, 6 cells
        "sglang.attention_heads.granitemoe": "sglang/srt/models/granitemoe.py:218",  # table, 12 cells
        "sglang.attention_heads.hunyuan": "sglang/srt/models/hunyuan.py:263",  # source line
        "sglang.attention_heads.interns2_mobius": "sglang/srt/models/interns2_mobius.py:551",  # source line
        "sglang.attention_heads.laguna": "sglang/srt/models/laguna.py:267",  # table, 12 cells
        "sglang.attention_heads.laguna_sliding": "sglang/srt/models/laguna.py:267",  # table, 6 cells
        "sglang.attention_heads.llama": "sglang/srt/models/llama.py:158",  # table, 546 cells
        "sglang.attention_heads.llama4": "sglang/srt/models/llama4.py:222",  # table, 24 cells
        "sglang.attention_heads.mimo_v2": "sglang/srt/models/mimo_v2.py:622",  # source line
        "sglang.attention_heads.minimax_m2": "sglang/srt/models/minimax_m2.py:752",  # table, 24 cells
        "sglang.attention_heads.mixtral": "sglang/srt/models/mixtral.py:136",  # table, 48 cells
        "sglang.attention_heads.mla": "sglang/srt/models/deepseek_v2.py:2005",  # table, 24 cells
        "sglang.attention_heads.mla.hybrid": "sglang/srt/models/deepseek_v2.py:2005",  # source line
        "sglang.attention_heads.nemotron_h": "sglang/srt/models/nemotron_h.py:558",  # source line
        "sglang.attention_heads.olmo2": "sglang/srt/models/olmo2.py:85",  # table, 24 cells
        "sglang.attention_heads.qkv": "sglang/srt/distributed/utils.py:65",  # table, 68 cells
        "sglang.attention_heads.qkv.hybrid": "sglang/srt/distributed/utils.py:65",  # table, 6 cells
        "sglang.attention_heads.qwen2": "sglang/srt/models/qwen2.py:148",  # table, 540 cells
        "sglang.attention_heads.qwen3": "sglang/srt/models/qwen3.py:93",  # table, 26 cells
        "sglang.attention_heads.qwen3_5": "sglang/srt/models/qwen3_5.py:1185",  # table, 12 cells
        "sglang.attention_heads.qwen3_moe": "sglang/srt/models/qwen3_moe.py:520",  # table, 9 cells
        "sglang.attention_heads.qwen3_next": "sglang/srt/models/qwen3_next.py:597",  # table, 8 cells
        "sglang.block_fp8.dense_k.compressed_tensors": "sglang/srt/layers/quantization/fp8_utils.py:2419",  # source line
        "sglang.block_fp8.dense_k.compressed_tensors.hybrid_layer0": "sglang/srt/layers/quantization/fp8_utils.py:2419",  # source line
        "sglang.block_fp8.dense_n": "sglang/srt/layers/quantization/fp8.py:588",  # table, 88 cells
        "sglang.block_fp8.mla_n": "sglang/srt/layers/quantization/fp8.py:588",  # table, 8 cells
        "sglang.block_fp8.moe_n": "sglang/srt/layers/quantization/fp8.py:1403",  # table, 53 cells
        "sglang.block_fp8.moe_n.compressed_tensors": "sglang/srt/layers/quantization/compressed_tensors/schemes/compressed_tensors_w8a8_fp8_moe.py:111",  # table, 12 cells
        "sglang.block_fp8.shared_k": "sglang/srt/layers/quantization/fp8.py:577",  # table, 2 cells
        "sglang.block_fp8.shared_k.compressed_tensors": "sglang/srt/layers/quantization/fp8_utils.py:2419",  # source line
        "sglang.block_fp8.shared_k.compressed_tensors.hybrid_layer0": "sglang/srt/layers/quantization/fp8_utils.py:2419",  # source line
        "sglang.block_fp8.shared_n": "sglang/srt/layers/quantization/fp8.py:588",  # table, 24 cells
        "sglang.block_fp8.shared_n.compressed_tensors": "sglang/srt/layers/quantization/fp8_utils.py:2430",  # table, 9 cells
        "sglang.config.deepseek_v4_kv_lora_rank": "sglang/srt/utils/hf_transformers/config.py:200",  # table, 60 cells
        "sglang.config.unknown_model_type": "sglang/srt/utils/hf_transformers/config.py:135",  # table, 300 cells
        "sglang.dp_attention": "sglang/srt/arg_groups/parallel_hook.py:261",  # table, 2064 cells
        "sglang.group_size.nvfp4_shared.hybrid_layer0": "sglang/srt/layers/quantization/modelopt_quant.py:1795",  # table, 6 cells
        "sglang.kv_heads.qkv": "sglang/srt/distributed/utils.py:65",  # source line
        "sglang.kv_heads.qkv.hybrid": "sglang/srt/distributed/utils.py:65",  # source line
        "sglang.kv_heads.replicate.baichuan": "sglang/srt/models/baichuan.py:151",  # source line
        "sglang.kv_heads.replicate.chatglm": "sglang/srt/models/chatglm.py:76",  # source line
        "sglang.kv_heads.replicate.exaone4": "sglang/srt/models/exaone4.py:118",  # source line
        "sglang.kv_heads.replicate.gemma": "sglang/srt/models/gemma.py:105",  # source line
        "sglang.kv_heads.replicate.gemma2": "sglang/srt/models/gemma2.py:126",  # source line
        "sglang.kv_heads.replicate.gemma3": "sglang/srt/models/gemma3_causal.py:146",  # source line
        "sglang.kv_heads.replicate.gemma4": "sglang/srt/models/gemma4_causal.py:334",  # source line
        "sglang.kv_heads.replicate.glm4_moe": "sglang/srt/models/glm4_moe.py:252",  # source line
        "sglang.kv_heads.replicate.gpt_oss": "sglang/srt/models/gpt_oss.py:403",  # source line
        "sglang.kv_heads.replicate.granite": "sglang/srt/models/granite.py:151",  # source line
        "sglang.kv_heads.replicate.granitemoe": "sglang/srt/models/granitemoe.py:228",  # source line
        "sglang.kv_heads.replicate.hunyuan": "sglang/srt/models/hunyuan.py:273",  # source line
        "sglang.kv_heads.replicate.interns2_mobius": "sglang/srt/models/interns2_mobius.py:560",  # source line
        "sglang.kv_heads.replicate.laguna": "sglang/srt/models/laguna.py:273",  # source line
        "sglang.kv_heads.replicate.llama": "sglang/srt/models/llama.py:168",  # table, 12 cells
        "sglang.kv_heads.replicate.llama4": "sglang/srt/models/llama4.py:232",  # source line
        "sglang.kv_heads.replicate.mimo_v2": "sglang/srt/models/mimo_v2.py:632",  # source line
        "sglang.kv_heads.replicate.minimax_m2": "sglang/srt/models/minimax_m2.py:763",  # table, 4 cells
        "sglang.kv_heads.replicate.mixtral": "sglang/srt/models/mixtral.py:146",  # source line
        "sglang.kv_heads.replicate.nemotron_h": "sglang/srt/models/nemotron_h.py:568",  # source line
        "sglang.kv_heads.replicate.olmo2": "sglang/srt/models/olmo2.py:97",  # source line
        "sglang.kv_heads.replicate.qwen2": "sglang/srt/models/qwen2.py:158",  # source line
        "sglang.kv_heads.replicate.qwen3": "sglang/srt/models/qwen3.py:103",  # source line
        "sglang.kv_heads.replicate.qwen3_5": "sglang/srt/models/qwen3_5.py:1191",  # source line
        "sglang.kv_heads.replicate.qwen3_moe": "sglang/srt/models/qwen3_moe.py:530",  # source line
        "sglang.kv_heads.replicate.qwen3_next": "sglang/srt/models/qwen3_next.py:607",  # source line
        "sglang.kv_heads.split.baichuan": "sglang/srt/models/baichuan.py:147",  # source line
        "sglang.kv_heads.split.chatglm": "sglang/srt/models/chatglm.py:72",  # source line
        "sglang.kv_heads.split.exaone4": "sglang/srt/models/exaone4.py:114",  # source line
        "sglang.kv_heads.split.gemma": "sglang/srt/models/gemma.py:101",  # source line
        "sglang.kv_heads.split.gemma2": "sglang/srt/models/gemma2.py:122",  # source line
        "sglang.kv_heads.split.gemma3": "sglang/srt/models/gemma3_causal.py:142",  # source line
        "sglang.kv_heads.split.gemma4": "sglang/srt/models/gemma4_causal.py:332",  # source line
        "sglang.kv_heads.split.glm4_moe": "sglang/srt/models/glm4_moe.py:248",  # source line
        "sglang.kv_heads.split.gpt_oss": "sglang/srt/models/gpt_oss.py:399",  # source line
        "sglang.kv_heads.split.granite": "sglang/srt/models/granite.py:147",  # source line
        "sglang.kv_heads.split.granitemoe": "sglang/srt/models/granitemoe.py:224",  # source line
        "sglang.kv_heads.split.hunyuan": "sglang/srt/models/hunyuan.py:269",  # source line
        "sglang.kv_heads.split.laguna": "sglang/srt/models/laguna.py:271",  # source line
        "sglang.kv_heads.split.llama": "sglang/srt/models/llama.py:164",  # table, 24 cells
        "sglang.kv_heads.split.llama4": "sglang/srt/models/llama4.py:228",  # source line
        "sglang.kv_heads.split.mimo_v2": "sglang/srt/models/mimo_v2.py:628",  # source line
        "sglang.kv_heads.split.minimax_m2": "sglang/srt/models/minimax_m2.py:759",  # table, 20 cells
        "sglang.kv_heads.split.mixtral": "sglang/srt/models/mixtral.py:142",  # source line
        "sglang.kv_heads.split.nemotron_h": "sglang/srt/models/nemotron_h.py:564",  # source line
        "sglang.kv_heads.split.olmo2": "sglang/srt/models/olmo2.py:93",  # source line
        "sglang.kv_heads.split.qwen2": "sglang/srt/models/qwen2.py:154",  # source line
        "sglang.kv_heads.split.qwen3": "sglang/srt/models/qwen3.py:99",  # source line
        "sglang.kv_heads.split.qwen3_5": "sglang/srt/models/qwen3_5.py:1189",  # source line
        "sglang.kv_heads.split.qwen3_moe": "sglang/srt/models/qwen3_moe.py:526",  # source line
        "sglang.kv_heads.split.qwen3_next": "sglang/srt/models/qwen3_next.py:603",  # source line
        "sglang.linear_attention_heads.gdn_conv": "sglang/srt/distributed/utils.py:65",  # source line
        "sglang.linear_attention_heads.gdn_proj": "sglang/srt/layers/linear.py:566",  # table, 4 cells
        "sglang.linear_attention_heads.kda": "sglang/srt/models/kimi_linear.py:57",  # table, 6 cells
        "sglang.linear_attention_heads.kda.kimi_k3": "sglang/srt/models/kimi_k3.py:1530",  # table, 2 cells
        "sglang.linear_attention_heads.lfm2_conv": "sglang/srt/layers/linear.py:566",  # source line
        "sglang.linear_attention_heads.mamba_cache_conv": "sglang/srt/distributed/utils.py:65",  # source line
        "sglang.linear_attention_heads.mamba_cache_heads": "sglang/srt/distributed/utils.py:65",  # source line
        "sglang.mamba_groups": "sglang/srt/layers/attention/mamba/mamba.py:247",  # table, 48 cells
        "sglang.mamba_groups.quantized": "sglang/srt/layers/attention/mamba/mamba.py:252",  # source line
        "sglang.mimo_v2.rope_parameters": "sglang/srt/layers/rotary_embedding/factory.py:107",  # source line
        "sglang.mlp_intermediate": "sglang/srt/layers/linear.py:566",  # source line
        "sglang.mlp_intermediate.hybrid_layer0": "sglang/srt/layers/linear.py:566",  # source line
        "sglang.mlp_intermediate.non_gated": "sglang/srt/distributed/utils.py:65",  # source line
        "sglang.mlp_intermediate.shared_experts": "sglang/srt/layers/linear.py:566",  # source line
        "sglang.mlp_intermediate.shared_experts.hybrid_layer0": "sglang/srt/layers/linear.py:566",  # source line
        "sglang.moe_experts": "sglang/srt/layers/moe/fused_moe_triton/layer.py:397",  # table, 23 cells
        "sglang.moe_experts.dsv4_nvfp4_platform": "sglang/srt/layers/quantization/modelopt_quant.py:2350",  # table, 72 cells
        "sglang.moe_experts.expert_location": "sglang/srt/eplb/expert_location.py:256",  # table, 291 cells
        "sglang.moe_experts.hybrid_layer0": "sglang/srt/layers/moe/fused_moe_triton/layer.py:397",  # source line
        "sglang.moe_intermediate": "sglang/srt/layers/moe/fused_moe_triton/layer.py:407",  # source line
        "sglang.moe_intermediate.hybrid_layer0": "sglang/srt/layers/moe/fused_moe_triton/layer.py:407",  # source line
        "sglang.moe_intermediate.mxfp4_cutlass": "sglang/srt/layers/quantization/mxfp4_flashinfer_cutlass_moe.py:68",  # table, 15 cells
        "sglang.transformers_backend.divide": "sglang/srt/distributed/utils.py:65",  # table, 54 cells
        "sglang.transformers_backend.no_tp_plan": "sglang/srt/models/transformers.py:765",  # table, 46 cells
        "sglang.vision_heads": "sglang/srt/distributed/utils.py:65",  # table, 282 cells
        "sglang.vision_heads.after_language_model": "sglang/srt/distributed/utils.py:65",  # source line
        "sglang.vision_heads.first_tp": "sglang/srt/distributed/utils.py:65",  # table, 96 cells
        "sglang.vision_heads.tp_reduce": "sglang/srt/layers/dp_attention.py:89",  # source line
        "sglang.vision_heads.tp_reduce.after_language_model": "sglang/srt/layers/dp_attention.py:89",  # source line
        "sglang.vision_hidden.mllama_patch": "sglang/srt/distributed/utils.py:65",  # table, 12 cells
    },
}

_PKG = "sglang/srt/"


def _site(s: str) -> str:
    """``"qwen2.py:167"`` -> ``"sglang/srt/models/qwen2.py:167"``; paths with a folder are kept."""
    return s if s.startswith("sglang/") else (_PKG + ("models/" if "/" not in s else "") + s)


def _rule(id: str, kind: str, condition: str, message: str, sites: dict[str, str], predicate, *,
          exc_type: str = "AssertionError", archs=(), exclude=(), needs=(), note: str = "",
          severity: str = "error", ours: bool = False, versions: str = V, src: str = "",
          effect: str = "") -> Rule:
    return X.executed_rule(FW, EXECUTED, NOT_SEEN_FIRST, _url, id, kind, condition, message,
                           {r: _site(s) for r, s in sites.items()}, predicate, exc_type=exc_type, archs=archs,
                           exclude=exclude, needs=needs, note=note, severity=severity, ours=ours,
                           versions=versions, src=src, effect=effect)


def _url(release: str, path: str, line: str) -> str:
    return f"{REPO}/v{release}/python/{path}#L{line}"


def _attention_rules(archs_filter) -> list[Rule]:
    """Softmax attention of the first attention layer, for the architectures ``archs_filter`` keeps."""
    out = []
    mla = tuple(a for a in MLA_DEEPSEEK if archs_filter(a))
    if mla:
        hyb = mla[0] in HYBRID_LINEAR_FIRST
        out.append(_rule("sglang.attention_heads.mla" + (".hybrid" if hyb else ""), "attention_heads",
                         "deepseek_v2.py multi-head latent attention over the attention-TP group: "
                         "assert num_heads % attn_tp_size == 0", BARE, {"0.5.23": "deepseek_v2.py:2057"},
                         _attn("heads", "attn"), archs=mla, needs=("num_attention_heads",)))
        sfx = ".hybrid" if hyb else ""
        out.append(_rule("sglang.block_fp8.mla_n" + sfx, "block_fp8",
                         "block FP8 MLA q_b_proj (heads / attn_tp x qk_head_dim), then kv_b_proj (heads / attn_tp x "
                         "(qk_nope_head_dim + v_head_dim)) % block_n != 0", _MSG_N,
                         {"0.5.23": "layers/quantization/fp8.py:606"}, _mla_fp8("n"), exc_type="ValueError", archs=mla))
        out.append(_rule("sglang.block_fp8.mla_k" + sfx, "block_fp8",
                         "block FP8 MLA o_proj (row parallel, attn_tp > 1): heads / attn_tp x v_head_dim % block_k",
                         _MSG_K, {"0.5.23": "layers/quantization/fp8.py:595"}, _mla_fp8("k"), exc_type="ValueError",
                         archs=mla))
    for mod, (group, by_rel) in HEADS_ONLY_ASSERTS.items():
        archs = tuple(a for a in HEADS_ONLY_ASSERT_ARCHS[mod] if archs_filter(a))
        if archs:
            out.append(_rule(f"sglang.attention_heads.{mod}", "attention_heads",
                             f"{mod}.py attention over the full TP: assert num_attention_heads % tp == 0", BARE,
                             by_rel, _attn("heads", group), archs=archs, needs=("num_attention_heads",)))
    for mod, (group, by_rel) in ATTN_ASSERTS.items():
        archs = tuple(a for a in ATTN_ASSERT_ARCHS[mod] if archs_filter(a))
        if not archs:
            continue
        t = "attn_tp" if group == "attn" else "tp"
        for i, (which, cond) in enumerate((
                ("heads", f"num_attention_heads % {t} != 0 (assert self.total_num_heads % {t}_size == 0)"),
                ("split", f"num_key_value_heads >= {t} and num_key_value_heads % {t} != 0"),
                ("replicate", f"num_key_value_heads < {t} and {t} % num_key_value_heads != 0"))):
            kind = "attention_heads" if which == "heads" else "kv_heads"
            out.append(_rule(
                f"sglang.{kind}.{which}.{mod}" if which != "heads" else f"sglang.attention_heads.{mod}", kind,
                f"{mod}.py attention over {'the attention-TP group (tp / attn_dp)' if group == 'attn' else 'the full TP'}: "
                + cond, BARE, {r: s[i] for r, s in by_rel.items()}, _attn(which, group), archs=archs,
                needs=("num_attention_heads",) if which == "heads" else ("num_key_value_heads",)))
    return out


def _qkv_rules(suffix: str = "", **kw) -> list[Rule]:
    """``QKVParallelLinear`` over the full TP for model files without their own asserts (and, as the
    common case, for architectures no table names)."""
    return [
        _rule("sglang.attention_heads.qkv" + suffix, "attention_heads",
              "QKVParallelLinear over the full TP (no model-level assert): divide(num_attention_heads, tp)",
              DIVIDE, {"0.5.23": DIVIDE_SITE}, _qkv_divide("heads"), needs=("num_attention_heads",), **kw),
        _rule("sglang.kv_heads.qkv" + suffix, "kv_heads",
              "QKVParallelLinear: kv <= tp -> divide(tp, kv) (each KV head replicated tp / kv times), else "
              "divide(kv, tp). Not for MLA.", DIVIDE, {"0.5.23": DIVIDE_SITE}, _qkv_divide("kv"),
              needs=("num_key_value_heads",), **kw),
    ]


def _block_rules(archs=(), exclude=(), suffix: str = "") -> list[Rule]:
    """Layer 0's MLP or MoE (after its mixer), for ``archs`` (or every architecture but ``exclude``)."""
    kw = dict(archs=archs, exclude=exclude)
    gated = dict(archs=archs, exclude=tuple(exclude) + NON_GATED) if not archs else kw
    return [
        _rule("sglang.mlp_intermediate" + suffix, "mlp_intermediate",
              "dense MLP gate_up_proj = MergedColumnParallelLinear([I, I]) over the full TP: assert "
              "all(output_size % tp_size == 0)", BARE, {"0.5.23": MERGED_SITE}, merged_dense("tp"), **gated),
        *([_rule("sglang.mlp_intermediate.non_gated", "mlp_intermediate",
                 "non-gated MLP (GPT-2 / GPT-J / GPT-BigCode): c_fc = ColumnParallelLinear(I): divide(I, tp)",
                 DIVIDE, {"0.5.23": DIVIDE_SITE}, column_dense, archs=NON_GATED)] if not archs else []),
        _rule("sglang.block_fp8.dense_n" + suffix, "block_fp8",
              "block FP8 dense gate_up (merged): intermediate / tp % block_n != 0",
              _MSG_N, {"0.5.23": "layers/quantization/fp8.py:606"}, _ct(_fp8_linear("n", "intermediate_size"), False),
              exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.dense_n.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 dense gate_up (merged): intermediate / tp % block_n != 0",
              _MSG_N, {"0.5.23": "layers/quantization/fp8_utils.py:2889"}, _ct(_fp8_linear("n", "intermediate_size"), True),
              exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.dense_k" + suffix, "block_fp8",
              "block FP8 dense down_proj (row parallel, tp > 1): intermediate / tp % block_k != 0",
              _MSG_K, {"0.5.23": "layers/quantization/fp8.py:595"}, _ct(_fp8_linear("k", "intermediate_size"), False),
              exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.dense_k.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 dense down_proj (row parallel, tp > 1): intermediate / tp % block_k != 0",
              _MSG_K, {"0.5.23": "layers/quantization/fp8_utils.py:2878"}, _ct(_fp8_linear("k", "intermediate_size"), True),
              exc_type="ValueError", **kw),
        _rule("sglang.group_size.nvfp4_dense" + suffix, "group_size",
              "ModelOpt NVFP4 dense down_proj: intermediate / tp % 16 != 0",
              _NVFP4_IN, {"0.5.23": "layers/quantization/modelopt_quant.py:1823"}, _nvfp4_in_features("intermediate_size"),
              exc_type="ValueError", **gated),
        *([_rule("sglang.attention_heads.laguna_sliding", "attention_heads",
                 "Laguna: layer 1 (sliding window, after layer 0's dense MLP) has its own query heads, "
                 "(num_attention_heads_mean x layers - num_attention_heads x full-attention layers) / sliding "
                 "layers; laguna.py asserts them % attn_tp", BARE, {"0.5.23": "laguna.py:262"}, laguna_sliding_heads,
                 archs=LAGUNA)] if not archs else []),
        _rule("sglang.moe_experts" + suffix, "moe_experts",
              "FusedMoE: assert num_routed_experts % moe_ep_size == 0 (--ep-size; model classes without "
              "expert-location metadata)", BARE, {"0.5.23": "layers/moe/fused_moe_triton/layer.py:414"},
              fused_moe_experts, **kw),
        _rule("sglang.moe_intermediate" + suffix, "moe_intermediate",
              "FusedMoE: assert moe_intermediate_size % moe_tp_size == 0, moe_tp = tp / ep",
              BARE, {"0.5.23": "layers/moe/fused_moe_triton/layer.py:427"}, fused_moe_intermediate, **kw),
        *([_rule("sglang.moe_intermediate.mxfp4_cutlass" + suffix, "moe_intermediate",
                 "DeepSeek-V4 MXFP4 experts (Mxfp4FlashinferCutlassMoEMethod): hidden_size and moe_intermediate / "
                 "moe_tp must be multiples of 128",
                 "Mxfp4FlashinferCutlassMoEMethod requires hidden_size and intermediate_size_per_partition to be "
                 "multiples of 128 (got hidden={hidden}, intermediate={size}).",
                 {"0.5.23": "layers/quantization/mxfp4_flashinfer_cutlass_moe.py:69"}, mxfp4_cutlass_moe,
                 exc_type="ValueError", archs=DSV4),
           _rule("sglang.moe_experts.dsv4_nvfp4_platform" + suffix, "architecture",
                 "DeepSeek-V4 with NVFP4 experts: ModelOptNvFp4FusedMoEMethod refuses the MoE backend DeepSeek-V4 "
                 "selects below Blackwell (SM 10.0); the harness answers as an H100 (SM 9.0)",
                 "Current platform does not support NVFP4 quantization with the selected MoE backend. Please use "
                 "Blackwell and above, or use moe_runner_backend=marlin on SM80+.",
                 {"0.5.23": "layers/quantization/modelopt_quant.py:2383"}, dsv4_nvfp4_moe, exc_type="ValueError",
                 archs=DSV4, note="platform: an H100 (the harness's GPU); Blackwell GPUs pass this check")]
          if not archs else []),
        _rule("sglang.block_fp8.moe_n" + suffix, "block_fp8",
              "block FP8 MoE: ispp = moe_intermediate / moe_tp; ispp % block_n != 0",
              _MOE_N, {"0.5.23": "layers/quantization/fp8.py:1589"}, _ct(_fp8_moe("n"), False), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.moe_n.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 MoE: ispp = moe_intermediate / moe_tp; ispp % block_n != 0",
              _MOE_N, {"0.5.23": "layers/quantization/compressed_tensors/schemes/compressed_tensors_w8a8_fp8_moe.py:110"}, _ct(_fp8_moe("n"), True), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.moe_k" + suffix, "block_fp8",
              "block FP8 MoE: ispp % block_n == 0, moe_tp > 1 and ispp % block_k != 0",
              _MOE_K, {"0.5.23": "layers/quantization/fp8.py:1597"}, _ct(_fp8_moe("k"), False), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.moe_k.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 MoE: ispp % block_n == 0, moe_tp > 1 and ispp % block_k != 0",
              _MOE_K, {"0.5.23": "layers/quantization/compressed_tensors/schemes/compressed_tensors_w8a8_fp8_moe.py:117"}, _ct(_fp8_moe("k"), True), exc_type="ValueError", **kw),
        _rule("sglang.mlp_intermediate.shared_experts" + suffix, "mlp_intermediate",
              "shared-expert MLP (MergedColumnParallelLinear over the full TP): shared_expert_intermediate_size "
              "% tp != 0", BARE, {"0.5.23": MERGED_SITE}, merged_shared, **kw),
        _rule("sglang.block_fp8.shared_n" + suffix, "block_fp8",
              "block FP8 shared expert gate_up (merged): shared_I / tp % block_n != 0",
              _MSG_N, {"0.5.23": "layers/quantization/fp8.py:606"},
              _ct(_fp8_linear("n", "shared_expert_intermediate_size"), False), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.shared_n.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 shared expert gate_up (merged): shared_I / tp % block_n != 0",
              _MSG_N, {"0.5.23": "layers/quantization/fp8_utils.py:2889"},
              _ct(_fp8_linear("n", "shared_expert_intermediate_size"), True), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.shared_k" + suffix, "block_fp8",
              "block FP8 shared expert down_proj (tp > 1): shared_I / tp % block_k != 0",
              _MSG_K, {"0.5.23": "layers/quantization/fp8.py:595"},
              _ct(_fp8_linear("k", "shared_expert_intermediate_size"), False), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.shared_k.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 shared expert down_proj (tp > 1): shared_I / tp % block_k != 0",
              _MSG_K, {"0.5.23": "layers/quantization/fp8_utils.py:2878"},
              _ct(_fp8_linear("k", "shared_expert_intermediate_size"), True), exc_type="ValueError", **kw),
        _rule("sglang.group_size.nvfp4_shared" + suffix, "group_size",
              "ModelOpt NVFP4 shared-expert down_proj: shared_expert_intermediate_size / tp % 16 != 0",
              _NVFP4_IN, {"0.5.23": "layers/quantization/modelopt_quant.py:1823"},
              _nvfp4_in_features("shared_expert_intermediate_size"), exc_type="ValueError", **kw),
    ]


def _attn_fp8_rules(archs=(), exclude=()) -> list[Rule]:
    kw = dict(archs=archs, exclude=exclude)
    return [
        _rule("sglang.block_fp8.attention_n", "block_fp8",
              "block FP8 qkv_proj (merged q, k, v per rank) % block_n != 0",
              _MSG_N, {"0.5.23": "layers/quantization/fp8.py:606"}, _fp8_qkv("tp")("n"), exc_type="ValueError",
              **kw),
        _rule("sglang.block_fp8.attention_k", "block_fp8",
              "block FP8 o_proj (row parallel, T > 1): heads / T * head_dim % block_k != 0",
              _MSG_K, {"0.5.23": "layers/quantization/fp8.py:595"}, _fp8_qkv("tp")("k"), exc_type="ValueError",
              **kw),
    ]


_hybrid = HYBRID_LINEAR_FIRST
#: InternS2-Mobius (``models/interns2_mobius.py``): its own attention checks (ValueError), source only.
INTERNS2_MOBIUS = ("InternS2MobiusForConditionalGeneration",)
#: Architectures whose softmax attention another rule describes (the QKVParallelLinear divide is the
#: default for the rest, including records without architectures).
_OWN_ATTENTION = tuple(sorted(set(_ATTN_ASSERT_ALL) | set(TF_BACKEND_LLAMA_PLAN) | set(TF_BACKEND_NEOX_PLAN)
                              | {a for v in HEADS_ONLY_ASSERT_ARCHS.values() for a in v}
                              | set(_hybrid) | set(MLA_DEEPSEEK)
                              | set(DSV4) | set(INTERNS2_MOBIUS)
                              | set(TF_BACKEND_NO_PLAN) | set(TF_BACKEND_INCOMPATIBLE)))

RULES: list[Rule] = [
    # -- 1. the launcher ---------------------------------------------------------------------------------
    _rule("sglang.config.unknown_model_type", "architecture",
          "the config's model_type is neither an SGLang config class nor known to the transformers release "
          "SGLang installs (with remote code allowed, a config with auto_map would load instead)",
          _UNKNOWN_TYPE, {"0.5.23": "utils/hf_transformers/config.py:228"}, None, exc_type="ValueError"),
    _rule("sglang.config.deepseek_v4_kv_lora_rank", "architecture",
          "DeepSeek-V4 config with \"kv_lora_rank\": null (llm-compressor / compressed-tensors exports): "
          "transformers' strict DeepseekV4Config rejects it when SGLang reads config.json, at any layout",
          "Validation error for field 'kv_lora_rank':\n    TypeError: Field 'kv_lora_rank' expected int, got "
          "NoneType (value: None)", {"0.5.23": "utils/hf_transformers/config.py:293"}, dsv4_null_kv_lora_rank,
          exc_type="StrictDataclassFieldValidationError", archs=("DeepseekV4ForCausalLM",),
          note="the catalog keeps no explicit nulls: compressed-tensors stands for the llm-compressor export"),
    *(_rule("sglang.quantization.gptq_not_marlin", "group_size",
            "GPTQ checkpoint that is not Marlin-compatible (bits other than 4 or 8, group_size other than "
            "-1/32/64/128, or an AutoGPTQ quantize_config.json without quant_method; sym=True assumed: the "
            "catalog does not keep the sym flag): plain gptq is not a quantization method of this release",
            msg, sites, gptq_not_marlin, exc_type="ValueError", versions=vers)
      for msg, sites, vers in ((_GPTQ_UNKNOWN, {"0.5.23": "configs/model_config.py:2152"}, ">=0.5.23"),
                               (_GPTQ_UNKNOWN_0521, {"0.5.21": "configs/model_config.py:1961"}, ">=0.5.21,<0.5.23"))),
    _rule("sglang.exaone4.attention_backend", "architecture",
          "EXAONE-4 with a sliding-window pattern, before 0.5.22's override registry: the model hook asserts the "
          "resolved attention backend is fa3, triton or trtllm_mha, and it is still None without an explicit "
          "--attention-backend (any layout)",
          "One of the attention backends in ['fa3', 'triton', 'trtllm_mha'] is required for {arch}, but got None",
          {"0.5.21": "arg_groups/model_hook.py:634"}, exaone_swa_backend, versions=">=0.5.21,<0.5.22",
          archs=("Exaone4ForCausalLM", "ExaoneMoEForCausalLM"),
          note="the harness passes no --attention-backend; with --attention-backend fa3 (or triton) the hook passes"),
    _rule("sglang.dp_attention", "attention_heads",
          "--attn-dp-size D (or --enable-dp-attention --dp-size D) with tp % D != 0 (assert tp_size % "
          "attn_dp_size == 0 at server-argument resolution, any model)",
          BARE, {"0.5.23": "arg_groups/parallel_hook.py:326"}, dp_attention),
    # -- 2. the scheduler, before the model ------------------------------------------------------------
    _rule("sglang.architecture.transformers_incompatible", "architecture",
          "no SGLang model class for the architecture and its Transformers class does not support custom "
          "attention backends (_supports_attention_backend False): resolve_transformers_arch refuses it",
          "{arch} has no SGlang implementation and the Transformers implementation is not compatible with "
          "SGLang.", {"0.5.23": "model_loader/utils.py:185"}, tf_backend_incompatible, exc_type="ValueError",
          archs=TF_BACKEND_INCOMPATIBLE),
    *(_rule("sglang.moe_experts.expert_location", "moe_experts",
            "--ep-size E > 1 and num_experts % E != 0, for model classes with expert-location metadata (the "
            "runner's initial ExpertLocationMetadata: assert num_physical_experts % ep_size == 0)" + extra,
            BARE, {"0.5.23": "eplb/expert_location.py:256"}, expert_location, archs=archs, versions=vers)
      for archs, vers, extra in (
          (tuple(a for a in EXPERT_LOCATION if a not in EXPERT_LOCATION_FROM), V, ""),
          (tuple(EXPERT_LOCATION_FROM), ">=0.5.23", "; NemotronH declares expert locations from 0.5.23 on"))),
    # -- 3. the model: vision towers built first -------------------------------------------------------
    _rule("sglang.vision_hidden.mllama_patch", "vision_heads",
          "Mllama vision patch embedding: ColumnParallelLinear(out = vision hidden_size) over the full TP: "
          "divide(vision hidden_size, tp)", DIVIDE, {"0.5.23": DIVIDE_SITE}, mllama_patch, archs=MLLAMA),
    _rule("sglang.vision_positions.siglip", "vision_heads",
          "SigLIP vision embeddings (Gemma-3), before 0.5.22: position_embedding = VocabParallelEmbedding(num_patches) "
          "over the full TP, padded to a multiple of 64 only: divide(padded, tp)", DIVIDE,
          {"0.5.21": "distributed/utils.py:65"}, vision_positions, archs=SIGLIP_TOWER, versions=">=0.5.21,<0.5.22"),
    _rule("sglang.vision_heads", "vision_heads",
          "VisionAttention (no dummy heads): divide(vision num_heads, attn_tp)",
          DIVIDE, {"0.5.23": DIVIDE_SITE}, vision_heads, archs=VISION_FIRST),
    _rule("sglang.vision_mlp.siglip", "vision_heads",
          "SigLIP encoder MLP (Gemma-3): fc1 = ColumnParallelLinear(vision intermediate_size) over the full TP "
          "(reached under DP attention, where the heads shard over tp / attn_dp): divide(intermediate, tp)",
          DIVIDE, {"0.5.21": "distributed/utils.py:65"}, vision_mlp, archs=SIGLIP_TOWER, versions=">=0.5.21,<0.5.22"),
    _rule("sglang.vision_heads.first_tp", "vision_heads",
          "vision encoder attention = QKVParallelLinear over the full TP (Gemma-4): divide(vision num_heads, tp)",
          DIVIDE, {"0.5.23": DIVIDE_SITE}, lambda ctx: vision_heads(ctx, "tp"), archs=VISION_FIRST_TP),
    _rule("sglang.vision_heads.tp_reduce", "vision_heads",
          "VisionAttention that all-reduces over the full TP group under DP attention: 1 < attn_tp < tp "
          "(reject_attn_tp_shard_with_tp_reduce)", _VISION_REDUCE, {"0.5.23": "layers/dp_attention.py:567"},
          vision_tp_reduce, exc_type="ValueError", archs=tuple(a for a in VISION_TP_REDUCE if a in VISION_FIRST),
          versions=">=0.5.22", note="reject_attn_tp_shard_with_tp_reduce is new in 0.5.22: 0.5.21 builds these layouts"),
    _rule("sglang.vision_heads.padded", "vision_heads",
          "GLM-4.xV / InternVL / InternS1 / GLM-OCR pad the vision heads with dummy heads to a multiple of "
          "attn_tp (update_vit_attn_dummy_heads_config); runs (status valid_padded)",
          "{a} vision heads padded with {dummy} dummy heads to {padded} (a multiple of tp={b}).", {},
          vision_padded, archs=VISION_PADDED, severity="warning", effect="padded", ours=True,
          src=SRC + "sglang/srt/layers/attention/vision_utils.py#L8-L23"),
    # -- the language model's embedding (before 0.5.22 only SGLang's CPU build pads the vocabulary by TP)
    _rule("sglang.vocab", "vocab",
          "VocabParallelEmbedding on a GPU, before 0.5.22: vocab_size padded to a multiple of 64 (not of 64 x tp), "
          "then divide(padded, T) (vocab_range_from_global_vocab_size); T = attention-TP for the model files that "
          "put the embedding on that group (Qwen2/3, DeepSeek, GLM-4-MoE, gpt-oss, ...), 1 under DP attention "
          "for DeepSeek-V4 and Qwen3.5 (replicated), else the full TP", DIVIDE,
          {"0.5.21": "distributed/utils.py:65"}, vocab_unpadded, versions=">=0.5.21,<0.5.22",
          needs=("vocab_size",), note="raised from sglang/srt/layers/vocab_parallel_embedding.py:72; from 0.5.22 "
          "the padding is a multiple of 64 x tp on every platform, so the vocabulary never refuses a TP size"),
    # -- layer 0 of hybrids: the linear-attention mixer and its MLP/MoE --------------------------------
    _rule("sglang.linear_attention_heads.gdn_conv", "linear_attention_heads",
          "Gated DeltaNet conv1d = ColumnParallelLinear(conv_dim) on attention-TP: divide(2 * key_dim + "
          "value_dim, attn_tp)", DIVIDE, {"0.5.23": DIVIDE_SITE}, gdn_conv, archs=_hybrid),
    _rule("sglang.linear_attention_heads.gdn_proj", "linear_attention_heads",
          "Gated DeltaNet in_proj_qkvz / in_proj_ba (MergedColumnParallelLinear on attention-TP): key_dim, "
          "value_dim and linear_num_value_heads % attn_tp", BARE, {"0.5.23": MERGED_SITE}, gdn_merged,
          archs=_hybrid),
    _rule("sglang.linear_attention_heads.kda", "linear_attention_heads",
          "Kimi-Linear KDA layers shard on the global TP group (shard_on_attn_tp False): "
          "linear_attn_config.num_heads % tp != 0 (_get_kda_local_num_heads)",
          "KDA num_heads ({h}) must be divisible by shard tp_size ({tp})", {"0.5.23": "kimi_linear.py:62"},
          kda_heads("tp"), exc_type="ValueError", archs=("KimiLinearForCausalLM",)),
    _rule("sglang.linear_attention_heads.kda.kimi_k3", "linear_attention_heads",
          "Kimi-K3 KDA layers: assert num_heads % attn_tp_size == 0 (attention-TP)", BARE,
          {"0.5.23": "kimi_k3.py:1542"}, kda_heads("attn"), archs=("KimiK3ForConditionalGeneration",)),
    _rule("sglang.linear_attention_heads.mamba_cache_conv", "linear_attention_heads",
          "Mamba-2 cache shape (Mamba2StateShape.create, attention-TP): n_groups -> T when T does not divide it; "
          "divide(mamba heads x head_dim + 2 x n_groups x ssm_state_size, T)", DIVIDE, {"0.5.23": DIVIDE_SITE},
          mamba_cache("conv"), archs=("NemotronHForCausalLM",)),
    _rule("sglang.linear_attention_heads.mamba_cache_heads", "linear_attention_heads",
          "Mamba-2 cache shape: divide(mamba heads, T)", DIVIDE, {"0.5.23": DIVIDE_SITE}, mamba_cache("heads"),
          archs=("NemotronHForCausalLM",)),
    _rule("sglang.mamba_groups", "mamba_groups",
          "MambaMixer2: n_groups % T != 0 and n_groups != 1",
          "If tensor parallel world size does not divide num_groups, then num_groups must equal 1.",
          {"0.5.23": "layers/attention/mamba/mamba.py:249"}, _mamba("groups"), archs=("NemotronHForCausalLM",)),
    _rule("sglang.mamba_groups.quantized", "mamba_groups",
          "MambaMixer2, quantized checkpoint: n_groups % T != 0 (n_groups == 1) and T > 1",
          "Tensor parallel currently supported for quantized models only if tensor parallel world size divides "
          "num groups.", {"0.5.23": "layers/attention/mamba/mamba.py:254"}, _mamba("quant"),
          archs=("NemotronHForCausalLM",)),
    _rule("sglang.linear_attention_heads.lfm2_conv", "linear_attention_heads",
          "LFM2 short-convolution in_proj = MergedColumnParallelLinear([hidden_size] * 3) over the full TP: "
          "hidden_size % tp", BARE, {"0.5.23": MERGED_SITE}, lfm2_conv, archs=LFM2_CONV),
    *_block_rules(archs=_hybrid, suffix=".hybrid_layer0"),
    *_attention_rules(lambda a: a in _hybrid),
    # InternS2-Mobius (a Qwen3.5 derivative; no catalog model has it, so these stay read from source):
    # its attention checks heads and KV heads against attention-TP with ValueErrors of its own, the
    # only model file in 0.5.23 that raises "attention TP must be divisible by num_key_value_heads"
    _rule("sglang.attention_heads.interns2_mobius", "attention_heads",
          "InternS2-Mobius attention: num_attention_heads % attn_tp != 0", "num_attention_heads must be divisible "
          "by attention TP", {"0.5.23": "interns2_mobius.py:547"}, _attn("heads", "attn"), exc_type="ValueError",
          archs=INTERNS2_MOBIUS, needs=("num_attention_heads",)),
    _rule("sglang.kv_heads.split.interns2_mobius", "kv_heads",
          "InternS2-Mobius attention: kv >= attn_tp and kv % attn_tp != 0",
          "num_key_value_heads must be divisible by attention TP", {"0.5.23": "interns2_mobius.py:552"},
          _attn("split", "attn"), exc_type="ValueError", archs=INTERNS2_MOBIUS, needs=("num_key_value_heads",)),
    _rule("sglang.kv_heads.replicate.interns2_mobius", "kv_heads",
          "InternS2-Mobius attention: kv < attn_tp and attn_tp % kv != 0",
          "attention TP must be divisible by num_key_value_heads", {"0.5.23": "interns2_mobius.py:556"},
          _attn("replicate", "attn"), exc_type="ValueError", archs=INTERNS2_MOBIUS, needs=("num_key_value_heads",)),
    *_qkv_rules(archs=tuple(a for a in QKV_DIVIDE_TP if a in _hybrid), suffix=".hybrid"),
    # -- decoder layer 0 of the others: attention, then MLP / MoE --------------------------------------
    _rule("sglang.transformers_backend.no_tp_plan", "architecture",
          "Transformers backend, and the HF config has no base_model_tp_plan: tp > 1 is refused when the "
          "linear layers are replaced", "<class '{cls}'> does not support tensor parallel yet!",
          {"0.5.23": "transformers.py:765"}, tf_backend_no_plan, exc_type="ValueError",
          archs=tuple(TF_BACKEND_NO_PLAN)),
    _rule("sglang.transformers_backend.divide", "attention_heads",
          "Transformers backend (no SGLang model class) with a TP plan (llama-style or GPT-NeoX): nn.Linear layers "
          "replaced in module order (divide(heads x head_dim, tp), divide(kv x head_dim, tp), ..., "
          "divide(intermediate, tp)), "
          "then the attention instances divide(heads, tp) and divide(kv_heads, tp) (KV heads are not replicated)",
          DIVIDE, {"0.5.23": DIVIDE_SITE}, tf_backend_plan, archs=TF_BACKEND_LLAMA_PLAN + TF_BACKEND_NEOX_PLAN),
    *_attention_rules(lambda a: a not in _hybrid),
    *_qkv_rules(exclude=_OWN_ATTENTION),
    _rule("sglang.attention_heads.deepseek_v4", "attention_heads",
          "DeepSeek-V4 attention: wq_b = ColumnParallelLinear(n_heads * head_dim) on the attention-TP group: "
          "divide(n_heads * head_dim, attn_tp)", DIVIDE, {"0.5.23": DIVIDE_SITE}, dsv4_wq_b, archs=DSV4,
          needs=("num_attention_heads",)),
    _rule("sglang.mimo_v2.rope_parameters", "architecture",
          "MiMo-V2-Flash: its nested rope_parameters dict reaches SGLang's RoPE cache key (get_rope), right "
          "after the attention asserts, at any layout they pass", "unhashable type: 'dict'",
          {"0.5.23": "layers/rotary_embedding/factory.py:107"}, lambda ctx: (ctx.has("num_attention_heads"), {}),
          exc_type="TypeError", archs=("MiMoV2FlashForCausalLM",)),
    *_attn_fp8_rules(exclude=_hybrid + ("MiMoV2FlashForCausalLM",)),
    *_block_rules(exclude=_hybrid),
    _rule("sglang.vocab.transformers_backend", "vocab",
          "Transformers backend (no SGLang model class), before 0.5.22: the input embedding is replaced by a "
          "VocabParallelEmbedding after the linear layers: divide(pad64(vocab_size), tp)", DIVIDE,
          {"0.5.21": "distributed/utils.py:65"}, lambda ctx: vocab_unpadded(ctx, backend=True),
          versions=">=0.5.21,<0.5.22", needs=("vocab_size",),
          note="raised from sglang/srt/layers/vocab_parallel_embedding.py:72 (models/transformers.py:970)"),
    # -- vision towers built after the language model ----------------------------------------------------
    _rule("sglang.vision_heads.after_language_model", "vision_heads",
          "VisionAttention (no dummy heads): divide(vision num_heads, attn_tp)",
          DIVIDE, {"0.5.23": DIVIDE_SITE}, vision_heads, archs=VISION_AFTER),
    _rule("sglang.vision_heads.tp_reduce.after_language_model", "vision_heads",
          "VisionAttention that all-reduces over the full TP group under DP attention: 1 < attn_tp < tp "
          "(reject_attn_tp_shard_with_tp_reduce)", _VISION_REDUCE, {"0.5.23": "layers/dp_attention.py:567"},
          vision_tp_reduce, exc_type="ValueError", archs=tuple(a for a in VISION_TP_REDUCE if a in VISION_AFTER),
          versions=">=0.5.22", note="reject_attn_tp_shard_with_tp_reduce is new in 0.5.22: 0.5.21 builds these layouts"),
    # -- 4. after loading ----------------------------------------------------------------------------------
    _rule("sglang.moe_intermediate.quantized_compat", "moe_intermediate",
          "block-quantized checkpoint (quantization_config.weight_block_size) with moe_intermediate_size: "
          "moe_intermediate_size % moe_tp != 0, moe_tp = tp / ep (check_quantized_moe_compatibility)",
          "moe_intermediate_size {m} must be divisible by moe_tp_size ({moe_tp}) which is tp_size ({tp}) divided "
          "by moe_ep_size ({ep}).", {"0.5.23": "model_executor/model_runner_components/moe_ep_setup.py:163"},
          _quantized_compat("divide"), exc_type="ValueError"),
    _rule("sglang.moe_intermediate.quantized_compat_block", "moe_intermediate",
          "block-quantized checkpoint: (moe_intermediate_size / moe_tp) % block_n != 0 "
          "(check_quantized_moe_compatibility)",
          "For quantized MoE models, please make sure (moe_intermediate_size={m} / moe_tp_size={moe_tp}) % "
          "weight_block_size_n={block} == 0 where moe_tp_size is equal to tp_size ({tp}) divided by ep_size ({ep}). "
          "You can fix this by setting arguments `--tp` and `--ep` correctly.",
          {"0.5.23": "model_executor/model_runner_components/moe_ep_setup.py:172"}, _quantized_compat("block"),
          exc_type="ValueError"),
    # -- warnings ------------------------------------------------------------------------------------------
    _rule("sglang.pipeline_layers", "pipeline_layers",
          "get_pp_indices: an uneven split is allowed (the last stages take one layer more); runs",
          "{layers} layers over {pp} pipeline stages: stages hold {lo} or {hi} layers (uneven split).", {},
          None, severity="warning", ours=True, src=SRC + "sglang/srt/distributed/utils.py#L110-L150"),
]


def _bind() -> None:
    """Raise sites of the other executed releases (:data:`SITES`) join each rule valid there; rules whose
    data is per release (the readable model types) get one copy per executed release, each bound to that
    release's data and valid for :func:`release_range`."""
    import dataclasses

    out: list[Rule] = []
    for r in RULES:
        r = X.join_release_sites(r, SITES, EXECUTED, NOT_SEEN_FIRST, _site)
        if r.id == "sglang.config.unknown_model_type":
            for rel in EXECUTED:
                out.append(dataclasses.replace(r, predicate=unknown_model_type(rel), versions=release_range(rel)))
        elif r.id == "sglang.pipeline_layers":
            out.append(dataclasses.replace(r, predicate=P.pipeline_even()))
        else:
            out.append(r)
    RULES[:] = out


_bind()
