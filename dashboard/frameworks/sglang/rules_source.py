"""SGLang's tensor-parallel checks for releases before 0.5.21, read from source (evidence ``source``).

From 0.5.21 on the rules are :mod:`dashboard.frameworks.sglang.rules_executed` (checked against SGLang's own code run
over the catalog); these stay for older releases and dates before it.

Attention layers shard over the attention-TP group: ``attn_tp = tp / dp`` under DP-attention
(``--enable-dp-attention --dp-size D``; ``--attn-dp-size D`` from 0.5.22; ``compute_dp_attention_world_info``),
else ``tp``. MLP, experts and vocab shard over the full TP group.
"""

from __future__ import annotations

from dashboard.rules import preds as P
from dashboard.rules import sources as S
from dashboard.rules.common import Rule

FW = "sglang"
V_OLD = "<0.5.21"  # from 0.5.21: dashboard.frameworks.sglang.rules_executed
DIVIDE = "{a} is not divisible by {b}"  # sglang divide() / ensure_divisibility

RULES: list[Rule] = [
    Rule(
        id="sglang.dp_attention",
        framework=FW,
        kind="attention_heads",
        versions=V_OLD,
        condition="DP-attention (--enable-dp-attention --dp-size D; from 0.5.22 --attn-dp-size D): attention-TP = "
        "tp_size // dp_size, so dp_size must divide tp_size",
        message="tp_size ({tp}) must be divisible by dp_size ({dp}) when DP-attention is enabled.",
        source_url=S.SGLANG_DP_ATTN,
        predicate=P.dp_attention_split(FW),
        note="Message is ours; the upstream arithmetic is attn_tp_size = tp_size // dp_size.",
    ),
    Rule(
        id="sglang.attention_heads",
        framework=FW,
        kind="attention_heads",
        versions=V_OLD,
        condition="QKVParallelLinear over the attention-TP group: divide(num_attention_heads, attn_tp)",
        message=DIVIDE,
        source_url=S.SGLANG_LINEAR,
        predicate=P.attention_heads(FW, key="a"),
        needs=("num_attention_heads",),
    ),
    Rule(
        id="sglang.kv_heads",
        framework=FW,
        kind="kv_heads",
        versions=V_OLD,
        condition="QKVParallelLinear: kv >= attn_tp -> kv % attn_tp must be 0; kv < attn_tp -> attn_tp % kv "
        "must be 0 (attention TP must be divisible by num_key_value_heads; each KV head replicated on "
        "attn_tp // kv ranks). Not for MLA.",
        message=DIVIDE,
        source_url=S.SGLANG_LINEAR,
        predicate=P.kv_partition(FW),
        needs=("num_key_value_heads",),
    ),
    Rule(
        id="sglang.cross_attention_heads",
        framework=FW,
        kind="cross_attention_heads",
        versions=V_OLD,
        condition="models with cross-attention layers (mllama-style bridges) shard plain heads: "
        "num_heads % tp_size != 0",
        message="num_heads ({h}) must be divisible by tp_size ({tp}).",
        source_url=S.SGLANG_MLLAMA,
        predicate=P.cross_attention_heads(FW),
        note="Message text as given in issue 2; the pinned module is where the heads are sharded.",
    ),
    Rule(
        id="sglang.linear_attention_heads.kda",
        framework=FW,
        kind="linear_attention_heads",
        versions=V_OLD,
        condition="Kimi-Linear KDA layers: linear_attn_config.num_heads % attn_tp != 0",
        message="KDA num_heads ({h}) must be divisible by shard tp_size ({tp})",
        source_url=S.SGLANG_KIMI_LINEAR,
        predicate=P.kda_heads(FW),
        note="Message text as given in issue 2 and ../shared/cases (H23, H25).",
    ),
    Rule(
        id="sglang.linear_attention_heads.gdn",
        framework=FW,
        kind="linear_attention_heads",
        versions=V_OLD,
        condition="Gated DeltaNet: divide(linear_num_key_heads, attn_tp) and divide(linear_num_value_heads, attn_tp)",
        message=DIVIDE,
        source_url=S.SGLANG_LINEAR,
        predicate=P.gdn_heads(FW),
    ),
    Rule(
        id="sglang.linear_attention_heads.mamba",
        framework=FW,
        kind="linear_attention_heads",
        versions=V_OLD,
        condition="MambaMixer2 (ported from vLLM): num_heads % tp != 0",
        message="Tensor parallel world size must divide num heads.",
        source_url=S.VLLM_MAMBA2,
        predicate=P.mamba_heads(FW),
    ),
    Rule(
        id="sglang.mamba_groups",
        framework=FW,
        kind="mamba_groups",
        versions=V_OLD,
        condition="MambaMixer2: n_groups % tp != 0 and n_groups != 1",
        message="If tensor parallel world size does not divide num_groups, then num_groups must equal 1.",
        source_url=S.VLLM_MAMBA2,
        predicate=P.mamba_groups(FW),
    ),
    Rule(
        id="sglang.vision_heads",
        framework=FW,
        kind="vision_heads",
        versions=V_OLD,
        condition="VisionAttention pads the vision heads with dummy heads to the next multiple of tp "
        "(runs; status valid_padded)",
        message="{a} vision heads padded with {dummy} dummy heads to {padded} (a multiple of tp={b}).",
        source_url=S.SGLANG_VISION,
        predicate=P.vision_heads(FW, honour_vision_dp=True),
        severity="warning",
        effect="padded",
    ),
    Rule(
        id="sglang.mlp_intermediate",
        framework=FW,
        kind="mlp_intermediate",
        versions=V_OLD,
        condition="dense MLP: divide(intermediate_size, tp)",
        message=DIVIDE,
        source_url=S.SGLANG_LINEAR,
        predicate=P.dense_mlp(),
    ),
    Rule(
        id="sglang.mlp_intermediate.shared_experts",
        framework=FW,
        kind="mlp_intermediate",
        versions=V_OLD,
        condition="shared-expert MLP: divide(shared_expert_intermediate_size, tp)",
        message=DIVIDE,
        source_url=S.SGLANG_LINEAR,
        predicate=P.shared_mlp(),
    ),
    Rule(
        id="sglang.moe_experts",
        framework=FW,
        kind="moe_experts",
        versions=V_OLD,
        condition="--ep-size > 1: num_experts % ep_size != 0 (experts are split evenly over the EP group)",
        message="num_experts ({n}) must be divisible by ep_size ({ep}).",
        source_url=S.SGLANG_MOE_UTILS,
        predicate=P.moe_experts_divisible(),
        note="Message is ours: the even split num_experts // ep_size is assumed by the MoE layers.",
    ),
    Rule(
        id="sglang.moe_intermediate",
        framework=FW,
        kind="moe_intermediate",
        versions=V_OLD,
        condition="MoE-TP = tp_size // ep_size; moe_intermediate_size % moe_tp != 0",
        message="moe_intermediate_size {m} must be divisible by moe_tp_size ({moe_tp}) which is tp_size ({tp}) "
        "divided by moe_ep_size ({ep}).",
        source_url=S.SGLANG_MOE_UTILS,
        predicate=P.moe_intermediate(FW),
        note="Message text as SGLang's quantized-MoE compatibility check words it.",
    ),
    Rule(
        id="sglang.vocab",
        framework=FW,
        kind="vocab",
        versions=V_OLD,
        condition="VocabParallelEmbedding (GPU): vocab padded to a multiple of 64, then divide(padded, tp)",
        message=DIVIDE,
        source_url=S.SGLANG_VOCAB,
        predicate=P.vocab_padded(),
    ),
    Rule(
        id="sglang.block_fp8.dense_n",
        framework=FW,
        kind="block_fp8",
        versions=V_OLD,
        condition="block-FP8 (validate_fp8_block_shape): dense gate_up output per rank % block_n != 0",
        message="Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}.",
        source_url=S.SGLANG_FP8_UTILS,
        predicate=P.fp8_dense("n"),
    ),
    Rule(
        id="sglang.block_fp8.dense_k",
        framework=FW,
        kind="block_fp8",
        versions=V_OLD,
        condition="block-FP8: dense down_proj input per rank % block_k != 0, tp > 1",
        message="Weight input_size_per_partition = {size} is not divisible by weight quantization block_k = {block}.",
        source_url=S.SGLANG_FP8_UTILS,
        predicate=P.fp8_dense("k"),
    ),
    Rule(
        id="sglang.block_fp8.shared_n",
        framework=FW,
        kind="block_fp8",
        versions=V_OLD,
        condition="block-FP8: shared-expert gate_up output per rank % block_n != 0",
        message="Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}.",
        source_url=S.SGLANG_FP8_UTILS,
        predicate=P.fp8_dense("n", shared=True),
    ),
    Rule(
        id="sglang.block_fp8.shared_k",
        framework=FW,
        kind="block_fp8",
        versions=V_OLD,
        condition="block-FP8: shared-expert down_proj input per rank % block_k != 0, tp > 1",
        message="Weight input_size_per_partition = {size} is not divisible by weight quantization block_k = {block}.",
        source_url=S.SGLANG_FP8_UTILS,
        predicate=P.fp8_dense("k", shared=True),
    ),
    Rule(
        id="sglang.block_fp8.moe_n",
        framework=FW,
        kind="block_fp8",
        versions=V_OLD,
        condition="block-FP8 MoE: (moe_intermediate_size / moe_tp) % block_n != 0",
        message="The output_size of gate's and up's weight = {size} is not divisible by weight quantization "
        "block_n = {block}.",
        source_url=S.SGLANG_FP8,
        predicate=P.fp8_moe(FW, "n"),
    ),
    Rule(
        id="sglang.block_fp8.moe_k",
        framework=FW,
        kind="block_fp8",
        versions=V_OLD,
        condition="block-FP8 MoE: moe_tp > 1 and (moe_intermediate_size / moe_tp) % block_k != 0",
        message="The input_size of down's weight = {size} is not divisible by weight quantization block_k = {block}.",
        source_url=S.SGLANG_FP8,
        predicate=P.fp8_moe(FW, "k"),
    ),
    Rule(
        id="sglang.block_fp8.attention",
        framework=FW,
        kind="block_fp8",
        versions=V_OLD,
        condition="block-FP8: q projection output per rank (heads / attn_tp * head_dim) % block_n != 0",
        message="Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}.",
        source_url=S.SGLANG_FP8_UTILS,
        predicate=P.fp8_attention(FW),
    ),
    Rule(
        id="sglang.block_fp8.linear_attention",
        framework=FW,
        kind="block_fp8",
        versions=V_OLD,
        condition="block-FP8: GDN/KDA key or value projection output per rank % block_n != 0",
        message="Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}.",
        source_url=S.SGLANG_FP8_UTILS,
        predicate=P.fp8_linear_attention(FW),
    ),
    Rule(
        id="sglang.group_size",
        framework=FW,
        kind="group_size",
        versions=V_OLD,
        condition="AWQ/GPTQ (vLLM-derived methods): a row-parallel input per rank % group_size != 0",
        message="The input size is not aligned with the quantized weight shape. This can be caused by too large "
        "tensor parallel size.",
        source_url=S.VLLM_GPTQ,
        predicate=P.group_size_rowparallel(FW),
    ),
    Rule(
        id="sglang.pipeline_layers",
        framework=FW,
        kind="pipeline_layers",
        versions=V_OLD,
        condition="pipeline split via get_pp_indices (ported from vLLM): uneven when pp does not divide layers",
        message="{layers} layers over {pp} pipeline stages: stages hold {lo} or {hi} layers (uneven split).",
        source_url=S.VLLM_DIST_UTILS,
        predicate=P.pipeline_even(),
        severity="warning",
    ),
]


def rules() -> list[Rule]:
    """This module's rules, in evaluation order."""
    return RULES
