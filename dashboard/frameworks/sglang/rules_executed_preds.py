"""SGLang's executed releases (0.5.21, 0.5.23): the architecture groups the harness saw and the
vectorized predicates of :mod:`dashboard.frameworks.sglang.rules_executed` (see its docstring for the
order and the evidence). Attention-TP per model file (:func:`attention_tp_of`) lives here.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dashboard import sharding
from dashboard.rules import preds as P
from dashboard.rules import executed as X
from dashboard.rules.common import Ctx, not_multiple

FW = "sglang"


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
ATTN_ASSERT_ALL = tuple(a for archs in ATTN_ASSERT_ARCHS.values() for a in archs)

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
    from dashboard.frameworks.sglang import SGLang

    return ctx.attention_tp_of(FW, SGLang.executed_releases[-1])


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
    transformers the release installs (:func:`dashboard.rules.preds.unknown_model_type` over the
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


def attn_pred(which: str, group: str):
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


def qkv_divide_pred(which: str, group: str = "tp"):
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


def mamba_pred(which: str):
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


def mla_fp8_pred(which: str):
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


def ct_pred(pred, ct: bool):
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


def fp8_moe_pred(which: str):
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


def fp8_linear_pred(which: str, col: str, group: str = "tp"):
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


def nvfp4_in_features_pred(col: str):
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


def fp8_qkv_pred(group: str):
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


def quantized_compat_pred(which: str):
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
