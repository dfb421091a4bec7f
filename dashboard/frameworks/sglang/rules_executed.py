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
from dashboard import frameworks as _frameworks
from dashboard.rules import executed as X
from dashboard.rules.executed import BARE, DIVIDE, FP8_BLOCK_K, FP8_BLOCK_N, UNKNOWN_MODEL_TYPE
from dashboard.rules import preds as P
from dashboard.rules.common import Ctx, Rule, not_multiple
from dashboard.frameworks.sglang.rules_executed_preds import (  # noqa: F401 (re-exported: evaluate, tests)
    FW, ATTN_ASSERTS, ATTN_ASSERT_ALL, ATTN_ASSERT_ARCHS, DSV4, EXPERT_LOCATION, EXPERT_LOCATION_FROM,
    HEADS_ONLY_ASSERTS, HEADS_ONLY_ASSERT_ARCHS, HYBRID_LINEAR_FIRST, LAGUNA, LFM2_CONV, MLA_DEEPSEEK,
    MLLAMA, NON_GATED, QKV_DIVIDE_TP, SIGLIP_TOWER, TF_BACKEND_INCOMPATIBLE, TF_BACKEND_LLAMA_PLAN,
    TF_BACKEND_NEOX_PLAN, TF_BACKEND_NO_PLAN, VISION_AFTER, VISION_FIRST, VISION_FIRST_TP, VISION_PADDED,
    VISION_TP_REDUCE, attention_tp_of, attn_pred, attn_tp, column_dense, ct_pred, dp_attention,
    dsv4_null_kv_lora_rank, dsv4_nvfp4_moe, dsv4_wq_b, exaone_swa_backend, expert_location, fp8_linear_pred,
    fp8_moe_pred, fp8_qkv_pred, fused_moe_experts, fused_moe_intermediate, gdn_conv, gdn_merged,
    gptq_not_marlin, kda_heads, laguna_sliding_heads, lfm2_conv, mamba_cache, mamba_pred, merged_dense,
    merged_shared, mla_fp8_pred, mllama_patch, moe_ep, moe_tp, mxfp4_cutlass_moe, nvfp4_in_features_pred,
    qkv_divide_pred, quantized_compat_pred, registry, tf_backend_incompatible, tf_backend_no_plan,
    tf_backend_plan, unknown_model_type, vision_heads, vision_mlp, vision_padded, vision_positions,
    vision_tp_reduce, vocab_unpadded)


V = ">=0.5.21"
EXECUTED: tuple[str, ...] = _frameworks.get(FW).executed_releases

DIVIDE_SITE = "sglang/srt/distributed/utils.py:70"
MERGED_SITE = "sglang/srt/layers/linear.py:693"
REPO = "https://github.com/sgl-project/sglang/blob"
SRC = f"{REPO}/v0.5.23/python/"


# ----------------------------------------------------------------------------------------------------
# the rules, in construction order
# ----------------------------------------------------------------------------------------------------

_MOE_N = ("The output_size of gate's and up's weight = {size} is not divisible by weight quantization "
          "block_n = {block}.")
_MOE_K = "The input_size of down's weight = {size} is not divisible by weight quantization block_k = {block}."
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
#: ``tests/rules/test_conformance_sglang_rules.py`` keeps this list equal to what the table shows.
NOT_SEEN_FIRST: dict[str, frozenset[str]] = X.not_seen_first(FW, EXECUTED)

#: Raise sites in the other executed releases, by rule id (``python -m conformance sites --framework
#: sglang --version V``: from the release's table where it shows the rule first, else the same source line
#: found in that release's file).
SITES: dict[str, dict[str, str]] = X.release_sites(FW, EXECUTED)

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
                         attn_pred("heads", "attn"), archs=mla, needs=("num_attention_heads",)))
        sfx = ".hybrid" if hyb else ""
        out.append(_rule("sglang.block_fp8.mla_n" + sfx, "block_fp8",
                         "block FP8 MLA q_b_proj (heads / attn_tp x qk_head_dim), then kv_b_proj (heads / attn_tp x "
                         "(qk_nope_head_dim + v_head_dim)) % block_n != 0", FP8_BLOCK_N,
                         {"0.5.23": "layers/quantization/fp8.py:606"}, mla_fp8_pred("n"), exc_type="ValueError", archs=mla))
        out.append(_rule("sglang.block_fp8.mla_k" + sfx, "block_fp8",
                         "block FP8 MLA o_proj (row parallel, attn_tp > 1): heads / attn_tp x v_head_dim % block_k",
                         FP8_BLOCK_K, {"0.5.23": "layers/quantization/fp8.py:595"}, mla_fp8_pred("k"), exc_type="ValueError",
                         archs=mla))
    for mod, (group, by_rel) in HEADS_ONLY_ASSERTS.items():
        archs = tuple(a for a in HEADS_ONLY_ASSERT_ARCHS[mod] if archs_filter(a))
        if archs:
            out.append(_rule(f"sglang.attention_heads.{mod}", "attention_heads",
                             f"{mod}.py attention over the full TP: assert num_attention_heads % tp == 0", BARE,
                             by_rel, attn_pred("heads", group), archs=archs, needs=("num_attention_heads",)))
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
                + cond, BARE, {r: s[i] for r, s in by_rel.items()}, attn_pred(which, group), archs=archs,
                needs=("num_attention_heads",) if which == "heads" else ("num_key_value_heads",)))
    return out


def _qkv_rules(suffix: str = "", **kw) -> list[Rule]:
    """``QKVParallelLinear`` over the full TP for model files without their own asserts (and, as the
    common case, for architectures no table names)."""
    return [
        _rule("sglang.attention_heads.qkv" + suffix, "attention_heads",
              "QKVParallelLinear over the full TP (no model-level assert): divide(num_attention_heads, tp)",
              DIVIDE, {"0.5.23": DIVIDE_SITE}, qkv_divide_pred("heads"), needs=("num_attention_heads",), **kw),
        _rule("sglang.kv_heads.qkv" + suffix, "kv_heads",
              "QKVParallelLinear: kv <= tp -> divide(tp, kv) (each KV head replicated tp / kv times), else "
              "divide(kv, tp). Not for MLA.", DIVIDE, {"0.5.23": DIVIDE_SITE}, qkv_divide_pred("kv"),
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
              FP8_BLOCK_N, {"0.5.23": "layers/quantization/fp8.py:606"}, ct_pred(fp8_linear_pred("n", "intermediate_size"), False),
              exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.dense_n.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 dense gate_up (merged): intermediate / tp % block_n != 0",
              FP8_BLOCK_N, {"0.5.23": "layers/quantization/fp8_utils.py:2889"}, ct_pred(fp8_linear_pred("n", "intermediate_size"), True),
              exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.dense_k" + suffix, "block_fp8",
              "block FP8 dense down_proj (row parallel, tp > 1): intermediate / tp % block_k != 0",
              FP8_BLOCK_K, {"0.5.23": "layers/quantization/fp8.py:595"}, ct_pred(fp8_linear_pred("k", "intermediate_size"), False),
              exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.dense_k.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 dense down_proj (row parallel, tp > 1): intermediate / tp % block_k != 0",
              FP8_BLOCK_K, {"0.5.23": "layers/quantization/fp8_utils.py:2878"}, ct_pred(fp8_linear_pred("k", "intermediate_size"), True),
              exc_type="ValueError", **kw),
        _rule("sglang.group_size.nvfp4_dense" + suffix, "group_size",
              "ModelOpt NVFP4 dense down_proj: intermediate / tp % 16 != 0",
              _NVFP4_IN, {"0.5.23": "layers/quantization/modelopt_quant.py:1823"}, nvfp4_in_features_pred("intermediate_size"),
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
              _MOE_N, {"0.5.23": "layers/quantization/fp8.py:1589"}, ct_pred(fp8_moe_pred("n"), False), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.moe_n.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 MoE: ispp = moe_intermediate / moe_tp; ispp % block_n != 0",
              _MOE_N, {"0.5.23": "layers/quantization/compressed_tensors/schemes/compressed_tensors_w8a8_fp8_moe.py:110"}, ct_pred(fp8_moe_pred("n"), True), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.moe_k" + suffix, "block_fp8",
              "block FP8 MoE: ispp % block_n == 0, moe_tp > 1 and ispp % block_k != 0",
              _MOE_K, {"0.5.23": "layers/quantization/fp8.py:1597"}, ct_pred(fp8_moe_pred("k"), False), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.moe_k.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 MoE: ispp % block_n == 0, moe_tp > 1 and ispp % block_k != 0",
              _MOE_K, {"0.5.23": "layers/quantization/compressed_tensors/schemes/compressed_tensors_w8a8_fp8_moe.py:117"}, ct_pred(fp8_moe_pred("k"), True), exc_type="ValueError", **kw),
        _rule("sglang.mlp_intermediate.shared_experts" + suffix, "mlp_intermediate",
              "shared-expert MLP (MergedColumnParallelLinear over the full TP): shared_expert_intermediate_size "
              "% tp != 0", BARE, {"0.5.23": MERGED_SITE}, merged_shared, **kw),
        _rule("sglang.block_fp8.shared_n" + suffix, "block_fp8",
              "block FP8 shared expert gate_up (merged): shared_I / tp % block_n != 0",
              FP8_BLOCK_N, {"0.5.23": "layers/quantization/fp8.py:606"},
              ct_pred(fp8_linear_pred("n", "shared_expert_intermediate_size"), False), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.shared_n.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 shared expert gate_up (merged): shared_I / tp % block_n != 0",
              FP8_BLOCK_N, {"0.5.23": "layers/quantization/fp8_utils.py:2889"},
              ct_pred(fp8_linear_pred("n", "shared_expert_intermediate_size"), True), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.shared_k" + suffix, "block_fp8",
              "block FP8 shared expert down_proj (tp > 1): shared_I / tp % block_k != 0",
              FP8_BLOCK_K, {"0.5.23": "layers/quantization/fp8.py:595"},
              ct_pred(fp8_linear_pred("k", "shared_expert_intermediate_size"), False), exc_type="ValueError", **kw),
        _rule("sglang.block_fp8.shared_k.compressed_tensors" + suffix, "block_fp8",
              "compressed-tensors block FP8 shared expert down_proj (tp > 1): shared_I / tp % block_k != 0",
              FP8_BLOCK_K, {"0.5.23": "layers/quantization/fp8_utils.py:2878"},
              ct_pred(fp8_linear_pred("k", "shared_expert_intermediate_size"), True), exc_type="ValueError", **kw),
        _rule("sglang.group_size.nvfp4_shared" + suffix, "group_size",
              "ModelOpt NVFP4 shared-expert down_proj: shared_expert_intermediate_size / tp % 16 != 0",
              _NVFP4_IN, {"0.5.23": "layers/quantization/modelopt_quant.py:1823"},
              nvfp4_in_features_pred("shared_expert_intermediate_size"), exc_type="ValueError", **kw),
    ]


def _attn_fp8_rules(archs=(), exclude=()) -> list[Rule]:
    kw = dict(archs=archs, exclude=exclude)
    return [
        _rule("sglang.block_fp8.attention_n", "block_fp8",
              "block FP8 qkv_proj (merged q, k, v per rank) % block_n != 0",
              FP8_BLOCK_N, {"0.5.23": "layers/quantization/fp8.py:606"}, fp8_qkv_pred("tp")("n"), exc_type="ValueError",
              **kw),
        _rule("sglang.block_fp8.attention_k", "block_fp8",
              "block FP8 o_proj (row parallel, T > 1): heads / T * head_dim % block_k != 0",
              FP8_BLOCK_K, {"0.5.23": "layers/quantization/fp8.py:595"}, fp8_qkv_pred("tp")("k"), exc_type="ValueError",
              **kw),
    ]


_hybrid = HYBRID_LINEAR_FIRST
#: InternS2-Mobius (``models/interns2_mobius.py``): its own attention checks (ValueError), source only.
INTERNS2_MOBIUS = ("InternS2MobiusForConditionalGeneration",)
#: Architectures whose softmax attention another rule describes (the QKVParallelLinear divide is the
#: default for the rest, including records without architectures).
_OWN_ATTENTION = tuple(sorted(set(ATTN_ASSERT_ALL) | set(TF_BACKEND_LLAMA_PLAN) | set(TF_BACKEND_NEOX_PLAN)
                              | {a for v in HEADS_ONLY_ASSERT_ARCHS.values() for a in v}
                              | set(_hybrid) | set(MLA_DEEPSEEK)
                              | set(DSV4) | set(INTERNS2_MOBIUS)
                              | set(TF_BACKEND_NO_PLAN) | set(TF_BACKEND_INCOMPATIBLE)))

#: The rules as written, before :func:`rules` binds the per-release data.
RULES_AS_WRITTEN: list[Rule] = [
    # -- 1. the launcher ---------------------------------------------------------------------------------
    _rule("sglang.config.unknown_model_type", "architecture",
          "the config's model_type is neither an SGLang config class nor known to the transformers release "
          "SGLang installs (with remote code allowed, a config with auto_map would load instead)",
          UNKNOWN_MODEL_TYPE, {"0.5.23": "utils/hf_transformers/config.py:228"}, None, exc_type="ValueError"),
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
          {"0.5.23": "layers/attention/mamba/mamba.py:249"}, mamba_pred("groups"), archs=("NemotronHForCausalLM",)),
    _rule("sglang.mamba_groups.quantized", "mamba_groups",
          "MambaMixer2, quantized checkpoint: n_groups % T != 0 (n_groups == 1) and T > 1",
          "Tensor parallel currently supported for quantized models only if tensor parallel world size divides "
          "num groups.", {"0.5.23": "layers/attention/mamba/mamba.py:254"}, mamba_pred("quant"),
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
          "by attention TP", {"0.5.23": "interns2_mobius.py:547"}, attn_pred("heads", "attn"), exc_type="ValueError",
          archs=INTERNS2_MOBIUS, needs=("num_attention_heads",)),
    _rule("sglang.kv_heads.split.interns2_mobius", "kv_heads",
          "InternS2-Mobius attention: kv >= attn_tp and kv % attn_tp != 0",
          "num_key_value_heads must be divisible by attention TP", {"0.5.23": "interns2_mobius.py:552"},
          attn_pred("split", "attn"), exc_type="ValueError", archs=INTERNS2_MOBIUS, needs=("num_key_value_heads",)),
    _rule("sglang.kv_heads.replicate.interns2_mobius", "kv_heads",
          "InternS2-Mobius attention: kv < attn_tp and attn_tp % kv != 0",
          "attention TP must be divisible by num_key_value_heads", {"0.5.23": "interns2_mobius.py:556"},
          attn_pred("replicate", "attn"), exc_type="ValueError", archs=INTERNS2_MOBIUS, needs=("num_key_value_heads",)),
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
          quantized_compat_pred("divide"), exc_type="ValueError"),
    _rule("sglang.moe_intermediate.quantized_compat_block", "moe_intermediate",
          "block-quantized checkpoint: (moe_intermediate_size / moe_tp) % block_n != 0 "
          "(check_quantized_moe_compatibility)",
          "For quantized MoE models, please make sure (moe_intermediate_size={m} / moe_tp_size={moe_tp}) % "
          "weight_block_size_n={block} == 0 where moe_tp_size is equal to tp_size ({tp}) divided by ep_size ({ep}). "
          "You can fix this by setting arguments `--tp` and `--ep` correctly.",
          {"0.5.23": "model_executor/model_runner_components/moe_ep_setup.py:172"}, quantized_compat_pred("block"),
          exc_type="ValueError"),
    # -- warnings ------------------------------------------------------------------------------------------
    _rule("sglang.pipeline_layers", "pipeline_layers",
          "get_pp_indices: an uneven split is allowed (the last stages take one layer more); runs",
          "{layers} layers over {pp} pipeline stages: stages hold {lo} or {hi} layers (uneven split).", {},
          None, severity="warning", ours=True, src=SRC + "sglang/srt/distributed/utils.py#L110-L150"),
]


@lru_cache(maxsize=None)
def rules() -> list[Rule]:
    """Raise sites of the other executed releases (:data:`SITES`) join each rule valid there; rules whose
    data is per release (the readable model types) get one copy per executed release, each bound to that
    release's data and valid for :func:`~dashboard.rules.executed.release_range`."""
    import dataclasses

    out: list[Rule] = []
    for r in RULES_AS_WRITTEN:
        r = X.join_release_sites(r, SITES, EXECUTED, NOT_SEEN_FIRST, _site)
        if r.id == "sglang.config.unknown_model_type":
            for rel in EXECUTED:
                out.append(dataclasses.replace(r, predicate=unknown_model_type(rel), versions=X.release_range(EXECUTED, rel)))
        elif r.id == "sglang.pipeline_layers":
            out.append(dataclasses.replace(r, predicate=P.pipeline_even()))
        else:
            out.append(r)
    return out
