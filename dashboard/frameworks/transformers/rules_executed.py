"""transformers 5.24.0 native TP and continuous-batching cache rules, following each model's TP plan.

Executed (``python -m conformance transformers ...``, tables in ``data/conformance/``):

* ``transformers-5.24.0-plans.parquet``: every catalog config through ``AutoConfig`` and
  ``AutoModelForCausalLM`` (``AutoModelForImageTextToText`` for VLM configs the causal-LM class does not
  map) on the meta device, the library's own plan resolution at every TP size, and the continuous-batching
  ``PagedAttentionCache`` constructor at every TP size;
* tiny models of each plan shape under ``torchrun`` (gloo, CPU) at TP 1, 2, 3, 4, 8: load, one
  ``generate_batch`` and one forward pass;
* ``transformers-5.24.0.parquet``: per catalog model x TP, the outcome (executed on the real config where
  the library decides at load or cache time, inferred from the tiny run of the same plan shape for the
  forward pass).

What native TP (``from_pretrained(tp_plan="auto")``) does, in order:

1. ``AutoConfig`` refuses a ``model_type`` the release does not know;
2. a model class without any TP plan (GPT-2, GPTBigCode, Falcon, Fuyu, Mllama's causal LM) is refused at
   load for every TP size > 1 (``_resolve_parallel_plans``);
3. otherwise it loads: shards may be uneven (vocabulary, MLP), nothing is checked. Only what the plan
   shards can fail, in the first forward pass: a query projection split ``colwise`` by output features
   (``q_proj``, MLA ``q_b_proj``, fused ``query_key_value`` / ``qkv_proj``) with ``num_attention_heads %
   tp != 0`` fails reshaping the query; a ``k_proj`` split ``colwise`` with ``num_key_value_heads % tp !=
   0`` fails reshaping the key; experts split by ``moe_tp_experts`` (gate_up ``packed_colwise``, down
   ``rowwise``) fail in ``grouped_mm`` when a rank's share of ``moe_intermediate_size`` is not a multiple
   of 16 bytes. Gathered projections (``colwise_gather_output``: Phi-3, OLMo-2/3, MiniMax-M2), plans that
   shard no attention (DeepSeek-V3/V4, Kimi-Linear, Kimi-K2.5, NemotronH, GraniteMoE) and embedding-only
   plans (gpt-oss, Qwen3-VL, LFM2) have no head constraint.

The continuous-batching cache (``generate_batch``) adds, before the first step: the KV-head check, only
when the plan names ``layers.*.self_attn.k_proj`` and ``...v_proj`` (``are_kv_heads_tp_ed``); the
layer-type check (only full and sliding attention layers); and in the first step, cache writes whose
shape does not match what the cache allocated (MLA models; plans that shard k/v without naming
``self_attn.k_proj``/``v_proj``, or name them but gather them).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from dashboard import frameworks as _frameworks
from dashboard.rules import preds as P
from dashboard.rules import executed as X
from dashboard.rules.common import Ctx, Rule

NATIVE = "transformers-native-tp"
CB = "transformers-cb-cache"
V = "==5.24.0"
RELEASE = "5.24.0"
EXECUTED: tuple[str, ...] = _frameworks.get(NATIVE).executed_releases
REPO = "https://github.com/huggingface/transformers/blob/v{release}/src"
_CONF = X.CONFORMANCE
VERIFIED_WITH = (
    "transformers 5.24.0 / torch 2.13.0+cpu: the plans of all 196 catalog configs, the load-time plan resolution "
    "and the paged-cache constructor at every TP size (executed on each config), and 28 tiny models of the 11 "
    "plan shapes under torchrun (gloo, CPU) at TP 1, 2, 3, 4, 8 (data/conformance/transformers-5.24.0*.parquet); "
    "tests/rules/test_conformance_transformers.py"
)

#: Per ``model_type`` of the catalog, the plan as transformers 5.24.0 resolves it for the class the auto
#: class builds (``transformers-5.24.0-plans.parquet``; ``tests/rules/test_conformance_transformers.py``
#: checks this table against it): ``cls`` the model class; ``q`` the query projection the plan splits
#: colwise ("" = heads not sharded); ``kv`` the key projection split colwise ("" = KV heads not
#: sharded); ``cb_kv`` the plan names ``layers.*.self_attn.k_proj`` and ``v_proj`` (the paged cache
#: divides its KV heads); ``experts`` routed experts split over TP (``moe_tp_experts``, gate_up
#: ``packed_colwise``); ``bad_layer`` the first layer type the paged cache refuses ("" = none);
#: ``no_plan`` the class has no TP plan at all.
PLANS: dict[str, dict] = {
    'codegen': {'cls': 'CodeGenForCausalLM', 'q': 'qkv_proj', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'deepseek_v2': {'cls': 'DeepseekV2ForCausalLM', 'q': 'q_proj', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': True, 'linear_first': False, 'cb_other': []},
    'deepseek_v3': {'cls': 'DeepseekV3ForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': True, 'linear_first': False, 'cb_other': []},
    'deepseek_v32': {'cls': 'DeepseekV32ForCausalLM', 'q': 'q_b_proj', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': 'indexed_attention', 'no_plan': False, 'mla': True, 'linear_first': False, 'cb_other': []},
    'deepseek_v4': {'cls': 'DeepseekV4ForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': 'compressed_sparse_attention|heavily_compressed_attention', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'exaone4': {'cls': 'Exaone4ForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'falcon': {'cls': 'FalconForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': True, 'mla': False, 'linear_first': False, 'cb_other': []},
    'fuyu': {'cls': 'FuyuForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': True, 'mla': False, 'linear_first': False, 'cb_other': []},
    'gemma': {'cls': 'GemmaForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'gemma2': {'cls': 'Gemma2ForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'gemma3': {'cls': 'Gemma3ForConditionalGeneration', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'gemma4': {'cls': 'Gemma4ForConditionalGeneration', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': ['AmbiguousGlobalPerLayerAttributeError', "'num_key_value_heads' is a per-layer attribute and may vary across layers. Access it via the individual layer configs instead (e.g. config.per_layer_config[i].num_key_value_heads). To read the global config value from config.num_key_value_heads anyway, set `allow_global_per_layer_attribute_access` to `True` on the config. Warning: only do this if the caller can safely handle heterogeneous configs; code that assumes a homogeneous model may use the global value incorrectly.", 'transformers/integrations/heterogeneity/configuration_utils.py', 298]},
    'glm4_moe': {'cls': 'Glm4MoeForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'glm4_moe_lite': {'cls': 'Glm4MoeLiteForCausalLM', 'q': 'q_b_proj', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': True, 'linear_first': False, 'cb_other': []},
    'glm4v_moe': {'cls': 'Glm4vMoeForConditionalGeneration', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'glm_moe_dsa': {'cls': 'GlmMoeDsaForCausalLM', 'q': 'q_b_proj', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': 'indexed_attention', 'no_plan': False, 'mla': True, 'linear_first': False, 'cb_other': []},
    'gpt2': {'cls': 'GPT2LMHeadModel', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': True, 'mla': False, 'linear_first': False, 'cb_other': []},
    'gpt_bigcode': {'cls': 'GPTBigCodeForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': True, 'mla': False, 'linear_first': False, 'cb_other': []},
    'gpt_neox': {'cls': 'GPTNeoXForCausalLM', 'q': 'query_key_value', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'gpt_oss': {'cls': 'GptOssForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'gptj': {'cls': 'GPTJForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'granite': {'cls': 'GraniteForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'granitemoe': {'cls': 'GraniteMoeForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'idefics3': {'cls': 'Idefics3ForConditionalGeneration', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'kimi_k25': {'cls': 'Kimi_K25ForConditionalGeneration', 'q': '', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': True, 'linear_first': False, 'cb_other': []},
    'kimi_linear': {'cls': 'KimiLinearForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': 'linear_attention', 'no_plan': False, 'mla': True, 'linear_first': False, 'cb_other': []},
    'laguna': {'cls': 'LagunaForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'lfm2': {'cls': 'Lfm2ForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': 'conv', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'llama': {'cls': 'LlamaForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'llama4': {'cls': 'Llama4ForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': 'chunked_attention', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'llava': {'cls': 'LlavaForConditionalGeneration', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'mimo_v2_flash': {'cls': 'MiMoV2FlashForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'minimax_m2': {'cls': 'MiniMaxM2ForCausalLM', 'q': '', 'kv': '', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'minimax_m3_vl': {'cls': 'MiniMaxM3SparseForConditionalGeneration', 'q': '', 'kv': '', 'cb_kv': True, 'experts': True, 'bad_layer': 'minimax_m3_sparse', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'mistral': {'cls': 'MistralForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'mixtral': {'cls': 'MixtralForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'mllama': {'cls': 'MllamaForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': True, 'mla': False, 'linear_first': False, 'cb_other': []},
    'nemotron_h': {'cls': 'NemotronHForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': True, 'bad_layer': 'linear_attention', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'olmo2': {'cls': 'Olmo2ForCausalLM', 'q': '', 'kv': '', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'olmo3': {'cls': 'Olmo3ForCausalLM', 'q': '', 'kv': '', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'phi3': {'cls': 'Phi3ForCausalLM', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'qwen2': {'cls': 'Qwen2ForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'qwen2_5_vl': {'cls': 'Qwen2_5_VLForConditionalGeneration', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'qwen3': {'cls': 'Qwen3ForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'qwen3_5': {'cls': 'Qwen3_5ForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': 'linear_attention', 'no_plan': False, 'mla': False, 'linear_first': True, 'cb_other': []},
    'qwen3_5_moe': {'cls': 'Qwen3_5MoeForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': 'linear_attention', 'no_plan': False, 'mla': False, 'linear_first': True, 'cb_other': []},
    'qwen3_moe': {'cls': 'Qwen3MoeForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'qwen3_next': {'cls': 'Qwen3NextForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': 'linear_attention', 'no_plan': False, 'mla': False, 'linear_first': True, 'cb_other': []},
    'qwen3_vl': {'cls': 'Qwen3VLForConditionalGeneration', 'q': '', 'kv': '', 'cb_kv': False, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'qwen3_vl_moe': {'cls': 'Qwen3VLMoeForConditionalGeneration', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': True, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
    'smollm3': {'cls': 'SmolLM3ForCausalLM', 'q': 'q_proj', 'kv': 'k_proj', 'cb_kv': True, 'experts': False, 'bad_layer': '', 'no_plan': False, 'mla': False, 'linear_first': False, 'cb_other': []},
}

#: Raise sites in transformers 5.24.0 (``transformers/...``; a table cell records the same).
SITES = {
    "model_type": "transformers/models/auto/configuration_auto.py:440",
    "no_plan": "transformers/distributed/mixin.py:260",
    "cb_kv": "transformers/generation/continuous_batching/cache.py:150",
    "cb_layer": "transformers/generation/continuous_batching/cache.py:65",
    "grouped_mm": "transformers/integrations/moe.py:379",
    "cb_update_shape": "transformers/generation/continuous_batching/cache_allocators/full_attention.py:217",
    "cb_update_sig": "transformers/models/gpt_neox/modeling_gpt_neox.py:203",
}


@lru_cache(maxsize=None)
def registry(release: str = RELEASE) -> tuple[str, ...]:
    """The release's config ``model_type``s (``transformers-<release>-architectures.json``)."""
    p = _CONF / f"transformers-{release}-architectures.json"
    if not p.is_file():
        return ()
    return tuple(json.loads(p.read_text(encoding="utf-8"))["model_types"])


def _types(pred) -> tuple[str, ...]:
    return tuple(sorted(mt for mt, d in PLANS.items() if pred(d)))


def _mt(ctx: Ctx, types: tuple[str, ...]) -> np.ndarray:
    return ctx.str_in("model_type", tuple(t.lower() for t in types))


def _bytes_per_param(ctx: Ctx) -> np.ndarray:
    """Element size of the checkpoint's dtype (``torch_dtype``; bf16 when missing), 0 for quantized
    checkpoints (their experts take other kernels: not checked)."""

    def fn(df):
        dt = df["torch_dtype"].astype("string").str.lower().fillna("") if "torch_dtype" in df.columns else None
        out = np.full(len(df), 2, dtype=np.int64)
        if dt is not None:
            out[(dt == "float32").to_numpy(dtype=bool)] = 4
        if "quant_method" in df.columns:
            q = df["quant_method"].astype("string").fillna("")
            out[(q != "").to_numpy(dtype=bool)] = 0
        return out

    return ctx._rep(("tf_bytes",), ctx.memo(("tf_bytes_m",), lambda: fn(ctx.models)))


# ----------------------------------------------------------------------------------------------------
# predicates
# ----------------------------------------------------------------------------------------------------


def _no_plan(types):
    def pred(ctx: Ctx):
        return _mt(ctx, types) & (ctx.tp > 1), {"tp": ctx.tp}

    return pred


def _heads(types):
    def pred(ctx: Ctx):
        h = ctx.i("num_attention_heads")
        return _mt(ctx, types) & ctx.has("num_attention_heads") & (h % ctx.tp != 0), {"h": h, "tp": ctx.tp}

    return pred


def _kv(types, extra=None):
    def pred(ctx: Ctx):
        kv = ctx.i("num_key_value_heads")
        f = _mt(ctx, types) & ctx.has("num_key_value_heads") & (ctx.tp > 1) & (kv % ctx.tp != 0)
        return f, {"kv": kv, "tp": ctx.tp}

    return pred


def _grouped_mm(types):
    def pred(ctx: Ctx):
        moe_i = ctx.i("moe_intermediate_size")
        b = _bytes_per_param(ctx)
        t = ctx.tp
        uneven = moe_i % t != 0
        misaligned = ((moe_i // np.maximum(t, 1)) * b) % 16 != 0
        f = _mt(ctx, types) & ctx.is_moe() & ctx.has("moe_intermediate_size") & (b > 0) & (t > 1)
        return f & (uneven | misaligned), {"moe_i": moe_i, "tp": t}

    return pred


def _always(types, tp_gt_1: bool = False):
    def pred(ctx: Ctx):
        f = _mt(ctx, types)
        if tp_gt_1:
            f = f & (ctx.tp > 1)
        return f, {"tp": ctx.tp}

    return pred


def _cb_update_shape(mla_types, split_types):
    """MLA models at every TP; at TP > 1 the plans that shard k/v without naming them for the cache, or
    name them but gather them (the cache allocates kv / tp heads), once the KV-head check passed."""

    def pred(ctx: Ctx):
        kv = ctx.i("num_key_value_heads")
        f = _mt(ctx, mla_types) | (_mt(ctx, split_types) & (ctx.tp > 1))
        return f, {"tp": ctx.tp, "kv": kv}

    return pred


# ----------------------------------------------------------------------------------------------------
# rules
# ----------------------------------------------------------------------------------------------------

UNKNOWN_TYPE_MSG = X.UNKNOWN_MODEL_TYPE
NO_PLAN_MSG = (
    "`tp_size={tp}` was requested, but `%s` has no `tp_plan`. Pass `tp_plan` in `DistributedConfig`, add "
    "`base_model_tp_plan` to the model's config, or set `tp_size=1`."
)
CB_KV_MSG = "Number of key value heads {kv} must be divisible by tensor parallel size {tp}."
GROUPED_MM_MSG = "strides should be multiple of 16 bytes"
RESHAPE_NOTE = (
    "No check upstream: the message is ours. What the library raises (tiny run, TP 3): RuntimeError: "
    "shape '[1, 8, -1, 8]' is invalid for input of size 256 (the attention's .view(hidden_shape) of the "
    "rank's shard)."
)


#: Where a rule without a raise site of its own (no check upstream: our message) points its source link:
#: the colwise split that does not check divisibility (``ColwiseParallel``, its docstring says so), or the
#: reshape that then fails (5.24.0, read in the installed release).
LINK_SITES = {
    "colwise": "transformers/distributed/tensor_parallel.py:143-146",
    "codegen_qkv": "transformers/models/codegen/modeling_codegen.py:138",
}


def source_link(site: str) -> str:
    """The pinned link of a ``path.py:line`` (or ``path.py:first-last``) site in transformers 5.24.0."""
    path, _, lines = site.rpartition(":")
    first, _, last = lines.partition("-")
    return (f"https://github.com/huggingface/transformers/blob/v{RELEASE}/src/{path}#L{first}"
            + (f"-L{last}" if last else ""))


def _rule(fw: str, rid: str, kind: str, condition: str, message: str, site: str | None, pred, *,
          exc_type: str = "", ours: bool = False, effect: str = "", needs: tuple[str, ...] = (),
          note: str = "", link: str | None = None) -> Rule:
    """A rule of ``fw`` held to 5.24.0's whole table (:func:`dashboard.rules.executed.executed_rule`).
    ``site``: the raise site (``path.py:line``); ``link``: where the source link points when there is none
    (:data:`LINK_SITES`)."""
    return X.executed_rule(fw, EXECUTED, {}, None, rid, kind, condition, message,
                           {RELEASE: site} if site else {}, pred, exc_type=exc_type, needs=needs, note=note,
                           ours=ours, versions=V, effect=effect, verified_with=VERIFIED_WITH, ran=EXECUTED,
                           src=source_link(site or link or LINK_SITES["colwise"]))


def _load_rules(fw: str) -> list[Rule]:
    short = _frameworks.get(fw).rule_id_prefix
    out = [
        _rule(fw, f"{short}.model_type", "architecture",
              "the config's model_type is not one of the release's config classes (AutoConfig, no remote code)",
              UNKNOWN_TYPE_MSG, SITES["model_type"], P.unknown_model_type(registry), exc_type="ValueError"),
    ]
    by_cls: dict[str, list[str]] = {}
    for mt, d in PLANS.items():
        if d["no_plan"]:
            by_cls.setdefault(d["cls"], []).append(mt)
    for cls, types in sorted(by_cls.items()):
        out.append(_rule(
            fw, f"{short}.no_plan.{cls}", "architecture",
            f"{cls} has no TP plan (no class _tp_plan, no config base_model_tp_plan) and tp > 1: "
            "_resolve_parallel_plans refuses at load",
            NO_PLAN_MSG % cls, SITES["no_plan"], _no_plan(tuple(sorted(types))), exc_type="ValueError",
            note="model_type " + ", ".join(sorted(types))))
    return out


def _heads_rules(fw: str) -> list[Rule]:
    short = _frameworks.get(fw).rule_id_prefix
    out = []
    by_mod: dict[str, list[str]] = {}
    for mt, d in PLANS.items():
        if d["q"]:
            by_mod.setdefault(d["q"], []).append(mt)
    for mod, types in sorted(by_mod.items()):
        out.append(_rule(
            fw, f"{short}.attention_heads.{mod}", "attention_heads",
            f"the plan splits {mod} colwise (by output features) and num_attention_heads % tp != 0: a rank holds "
            "part of a head; loads, then the forward pass fails reshaping the query",
            "num_attention_heads ({h}) is not divisible by tp_size ({tp}): the model's TP plan splits " + mod
            + " by output features, so a rank holds part of a head; from_pretrained loads it, then the first "
            "forward pass fails reshaping the query (RuntimeError: shape '[...]' is invalid for input of size ...).",
            None, _heads(tuple(sorted(types))), ours=True, effect="run_time", needs=("num_attention_heads",),
            note=RESHAPE_NOTE + " model_type " + ", ".join(sorted(types))))
    return out


def _codegen_rule(fw: str) -> list[Rule]:
    short = _frameworks.get(fw).rule_id_prefix
    if "codegen" not in PLANS:
        return []

    def pred(ctx: Ctx):
        return _mt(ctx, ("codegen",)) & (4 % ctx.tp != 0), {"tp": ctx.tp}

    return [_rule(
        fw, f"{short}.attention_heads.qkv_proj.mp_num", "attention_heads",
        "CodeGen: qkv_proj's output is laid out in mp_num = 4 blocks and the plan splits it colwise: unless tp "
        "divides 4 a rank's share is not whole blocks and the forward pass fails reshaping qkv",
        "tp_size ({tp}) does not divide 4: CodeGen's fused qkv_proj is laid out in 4 blocks (mp_num) and the "
        "model's TP plan splits it by output features; from_pretrained loads it, then the first forward pass "
        "fails reshaping qkv (RuntimeError: shape '[...]' is invalid for input of size ...).",
        None, pred, ours=True, effect="run_time", link=LINK_SITES["codegen_qkv"],
        note="Tiny run, TP 3: RuntimeError: shape '[1, 8, -1, 144]' is invalid for input of size 1536 "
        "(modeling_codegen.py:138).")]


def _kv_rules(fw: str) -> list[Rule]:
    short = _frameworks.get(fw).rule_id_prefix
    # under continuous batching the cache's own check comes first where the plan names k_proj and v_proj
    types = _types(lambda d: d["kv"] == "k_proj" and (fw == NATIVE or not d["cb_kv"]))
    if not types:
        return []
    return [_rule(
        fw, f"{short}.kv_heads.k_proj", "kv_heads",
        "the plan splits k_proj colwise and num_key_value_heads % tp != 0 (KV heads are never replicated): "
        "loads, then the forward pass fails reshaping the key",
        "num_key_value_heads ({kv}) is not divisible by tp_size ({tp}): the model's TP plan splits k_proj by "
        "output features and transformers never replicates KV heads; from_pretrained loads it, then the first "
        "forward pass fails reshaping the key (RuntimeError: shape '[...]' is invalid for input of size ...).",
        None, _kv(types), ours=True, effect="run_time", needs=("num_key_value_heads",),
        note=RESHAPE_NOTE + " model_type " + ", ".join(types))]


def _moe_rules(fw: str, layer0: bool = False) -> list[Rule]:
    short = _frameworks.get(fw).rule_id_prefix
    types = _types(lambda d: d["experts"] and d["linear_first"] == layer0)
    if not types:
        return []
    return [_rule(
        fw, f"{short}.moe_intermediate.grouped_mm" + (".layer0" if layer0 else ""), "moe_intermediate",
        "the plan splits the routed experts over TP (moe_tp_experts: gate_up packed_colwise, down rowwise) and a "
        "rank's share of moe_intermediate_size is uneven or not a multiple of 16 bytes (bf16: 8 elements): "
        "torch's grouped_mm refuses the experts' activations in the forward pass"
        + (" (layer 0 is linear attention, gathered: its experts run before any softmax attention)" if layer0 else ""),
        GROUPED_MM_MSG, SITES["grouped_mm"], _grouped_mm(types), exc_type="RuntimeError", effect="run_time",
        note="torch's message, raised inside transformers' _grouped_mm (the experts' default implementation). "
        "Quantized checkpoints take other expert kernels and are not checked. model_type " + ", ".join(types))]


def _cb_rules() -> list[Rule]:
    fw = CB
    out = []
    by_err: dict[tuple, list[str]] = {}
    for mt, d in PLANS.items():
        if d.get("cb_other"):
            by_err.setdefault(tuple(d["cb_other"]), []).append(mt)
    for (exc, msg, f, ln), types in sorted(by_err.items()):
        out.append(_rule(
            fw, f"tf_cb.config.{'_'.join(sorted(types))}", "architecture",
            "the paged cache reads the config's global num_key_value_heads, which this config keeps per layer "
            "(heterogeneous layers): refused when the cache is built, at every TP size",
            msg, f"{f}:{ln}", _always(tuple(sorted(types))), exc_type=exc, note="model_type " + ", ".join(sorted(types))))
    by_layer: dict[str, list[str]] = {}
    for mt, d in PLANS.items():
        if d["bad_layer"]:
            by_layer.setdefault(d["bad_layer"], []).append(mt)
    for layer, types in sorted(by_layer.items()):
        several = "|" in layer
        msg = (f"Invalid layer type: {layer}" if not several else
               "Invalid layer type: " + " or ".join(layer.split("|")) + " (the checkpoint's first layer type "
               "that is neither full nor sliding attention)")
        out.append(_rule(
            fw, f"tf_cb.layer_type.{layer.replace('|', '.')}", "architecture",
            f"the text config's layer_types include {layer.replace('|', ' / ')}: the paged cache only allocates "
            "full and sliding attention layers (group_layers_by_attn_type); generate_batch checks this before the "
            "cache's KV-head check, at every TP size",
            msg, SITES["cb_layer"], _always(tuple(sorted(types))), exc_type="ValueError", ours=several,
            note="model_type " + ", ".join(sorted(types))
            + ("; the library names the first such layer type of the checkpoint's layer_types" if several else "")))
    out += [_rule(
        fw, "tf_cb.kv_cache", "kv_heads",
        "PagedAttentionCache: tp > 1, the plan names layers.*.self_attn.k_proj and v_proj (are_kv_heads_tp_ed) "
        "and num_key_value_heads % tp != 0 (raised when the cache is built, before any step)",
        CB_KV_MSG, SITES["cb_kv"], _kv(_types(lambda d: d["cb_kv"])), exc_type="ValueError",
        needs=("num_key_value_heads",),
        note="Raised in generate_batch's background thread: logged (ContinuousBatchingLogger) and the requests "
        "fail; the caller gets no exception.")]
    return out


def _cb_step_rules() -> list[Rule]:
    fw = CB
    mla = _types(lambda d: d["mla"] and not d["bad_layer"])
    split = _types(lambda d: not d["bad_layer"] and not d["mla"] and d["cls"] != "GPTNeoXForCausalLM"
                   and (bool(d["kv"] or d["q"] in ("query_key_value", "qkv_proj")) != d["cb_kv"]))
    return [
        _rule(fw, "tf_cb.cache_update.signature", "architecture",
              "GPT-NeoX's attention calls the cache's update() without the kwargs argument PagedAttentionCache "
              "requires: the first generation step fails, at every TP size",
              "PagedAttentionCache.update() missing 1 required positional argument: 'kwargs'",
              SITES["cb_update_sig"], _always(("gpt_neox",)), exc_type="TypeError"),
        _rule(fw, "tf_cb.cache_update.shape", "architecture",
              "the first generation step writes keys of another shape than the paged cache allocated: MLA "
              "attention (compressed KV) at every TP size; at tp > 1 a plan that splits k/v without naming "
              "self_attn.k_proj/v_proj (the cache keeps every KV head), or names them but gathers them (the "
              "cache keeps kv / tp heads)",
              "The paged cache's KV write fails: the attention writes keys of another shape than the cache "
              "allocated (RuntimeError: index_copy_(): Source/destination tensor must have same slice shapes. ...).",
              SITES["cb_update_shape"], _cb_update_shape(mla, split), ours=True,
              note="The library's message names the shapes of the batch (e.g. 'Destination slice shape: 24 8 at "
              "dimension 0 and source slice shape: 1 16 at dimension 0.'); ours says what they mean. MLA: "
              + ", ".join(mla) + "; plan: " + ", ".join(split)),
    ]


def rules() -> list[Rule]:
    native = (_load_rules(NATIVE) + _moe_rules(NATIVE, layer0=True) + _codegen_rule(NATIVE) + _heads_rules(NATIVE)
              + _kv_rules(NATIVE) + _moe_rules(NATIVE))
    cb = (_load_rules(CB) + _cb_rules() + _moe_rules(CB, layer0=True) + _codegen_rule(CB) + _heads_rules(CB)
          + _kv_rules(CB) + _cb_step_rules() + _moe_rules(CB))
    return native + cb


RULES: list[Rule] = rules()
