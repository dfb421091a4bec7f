"""vLLM's tensor-parallel checks, as rule data (see :mod:`dashboard.rules.common`).

Two generations of rules:

* :mod:`dashboard.frameworks.vllm.rules_executed` -- releases run through the conformance harness
  (``data/conformance/vllm-<release>.parquet``): vLLM's own code built every catalog model under
  simulated layouts, and these rules reproduce its verdicts, first errors and raise sites, in vLLM's
  construction order, per architecture where the model classes differ.
* :data:`OLD_RULES` below -- releases before those (``versions="<0.22.0"``), read from source at the
  commits their links pin; the dated failure cases (``../shared/cases``) exercise them.
"""

from __future__ import annotations

from dashboard.frameworks.vllm.rules_executed import rules as _executed_rules
from dashboard.rules import preds as P
from dashboard.rules import sources as S
from dashboard.rules.common import Rule

FW = "vllm"
DIVIDE = "{a} is not divisible by {b}"  # vllm.distributed.utils.ensure_divisibility
#: Releases before the first one run through the conformance harness: rules read from source at the
#: commits their links pin (the history the dated failure cases need).
OLD = "<0.22.0"

OLD_RULES: list[Rule] = [
    Rule(
        id="vllm.attention_heads",
        framework=FW,
        kind="attention_heads",
        versions=OLD,
        condition="num_attention_heads % tensor_parallel_size != 0 (ModelConfig.verify_with_parallel_config, "
        "on hf_text_config, at engine start)",
        message="Total number of attention heads ({h}) must be divisible by tensor parallel size ({tp}).",
        source_url=S.VLLM_MODEL_CONFIG,
        predicate=P.attention_heads(FW),
        needs=("num_attention_heads",),
    ),
    Rule(
        id="vllm.kv_heads",
        framework=FW,
        kind="kv_heads",
        versions=OLD,
        condition="QKVParallelLinear: if tp >= num_key_value_heads then tp % kv must be 0 (each KV head "
        "replicated on tp // kv ranks) else kv % tp must be 0; message from divide(a, b). Not for MLA.",
        message=DIVIDE,
        source_url=S.VLLM_LINEAR,
        predicate=P.kv_partition(FW),
        needs=("num_key_value_heads",),
    ),
    Rule(
        id="vllm.linear_attention_heads.gdn",
        framework=FW,
        kind="linear_attention_heads",
        versions=OLD,
        condition="Gated DeltaNet (Qwen3-Next style): linear_num_key_heads and linear_num_value_heads are "
        "each split with divide(heads, tp); the conv1d dims follow the head split.",
        message=DIVIDE,
        source_url=S.VLLM_QWEN3_NEXT,
        predicate=P.gdn_heads(FW),
    ),
    Rule(
        id="vllm.linear_attention_heads.kda",
        framework=FW,
        kind="linear_attention_heads",
        versions=OLD,
        condition="KDA (Kimi-Linear): linear_attn_config.num_heads split with divide(heads, tp).",
        message="{h} is not divisible by {tp}",
        source_url=S.VLLM_DIST_UTILS,
        predicate=P.kda_heads(FW),
    ),
    Rule(
        id="vllm.linear_attention_heads.mamba",
        framework=FW,
        kind="linear_attention_heads",
        versions=OLD,
        condition="MambaMixer2: num_heads % tp != 0",
        message="Tensor parallel world size must divide num heads.",
        source_url=S.VLLM_MAMBA2,
        predicate=P.mamba_heads(FW),
    ),
    Rule(
        id="vllm.mamba_groups",
        framework=FW,
        kind="mamba_groups",
        versions=OLD,
        condition="MambaMixer2: n_groups % tp != 0 and n_groups != 1 (a single group is replicated to "
        "every rank; other group counts must divide by TP)",
        message="If tensor parallel world size does not divide num_groups, then num_groups must equal 1.",
        source_url=S.VLLM_MAMBA2,
        predicate=P.mamba_groups(FW),
        note="Older vLLM words the same assert '... does not divide num_heads, then num_groups must equal 1.'",
    ),
    Rule(
        id="vllm.mlp_intermediate",
        framework=FW,
        kind="mlp_intermediate",
        versions=OLD,
        condition="dense MLP (models without MoE, or MoE models' dense layers): intermediate_size split "
        "with divide(intermediate_size, tp) in MergedColumnParallelLinear",
        message=DIVIDE,
        source_url=S.VLLM_LINEAR,
        predicate=P.dense_mlp(),
    ),
    Rule(
        id="vllm.mlp_intermediate.shared_experts",
        framework=FW,
        kind="mlp_intermediate",
        versions=OLD,
        condition="shared-expert MLP: divide(shared_expert_intermediate_size, tp)",
        message=DIVIDE,
        source_url=S.VLLM_LINEAR,
        predicate=P.shared_mlp(),
    ),
    Rule(
        id="vllm.moe_experts.ep_without_moe",
        framework=FW,
        kind="moe_experts",
        versions=OLD,
        condition="enable_expert_parallel on a model with no experts",
        message="Number of experts in the model must be greater than 0 when expert parallelism is enabled.",
        source_url=S.VLLM_MODEL_CONFIG,
        predicate=P.ep_without_moe(),
    ),
    Rule(
        id="vllm.moe_experts.deepseek_v4",
        framework=FW,
        kind="moe_experts",
        versions=OLD,
        condition="DeepSeek-V4 MoE under EP: (n_routed_experts + num_redundant_experts) % ep_size != 0 "
        "(num_redundant_experts = 0 assumed)",
        message="n_physical_experts={n} must be divisible by ep_size={ep}. Adjust num_redundant_experts.",
        source_url=S.VLLM_DSV4,
        predicate=P.moe_experts_divisible(model_types=("deepseek_v4",)),
    ),
    Rule(
        id="vllm.moe_experts.uneven",
        framework=FW,
        kind="moe_experts",
        versions=OLD,
        condition="FusedMoE under EP: num_experts % ep_size != 0 -> the first num_experts % ep_size ranks "
        "hold one expert more (determine_expert_map); runs, unbalanced",
        message="{n} experts over ep_size={ep}: ranks hold {lo} or {hi} experts (uneven expert split).",
        source_url=S.VLLM_FUSED_MOE,
        predicate=P.moe_experts_uneven(exclude_model_types=("deepseek_v4",)),
        severity="warning",
    ),
    Rule(
        id="vllm.moe_intermediate",
        framework=FW,
        kind="moe_intermediate",
        versions=OLD,
        condition="FusedMoE shards each expert's moe_intermediate_size over the MoE-TP group (tp without "
        "EP, 1 with EP): moe_intermediate_size % moe_tp != 0",
        message="moe_intermediate_size {m} is not divisible by the MoE tensor-parallel size {moe_tp}: the expert "
        "weights cannot be sharded evenly.",
        source_url=S.VLLM_FUSED_MOE,
        predicate=P.moe_intermediate(FW),
        note="FusedMoE computes intermediate_size // tp without an explicit check; weight loading then fails. "
        "The message is ours.",
    ),
    Rule(
        id="vllm.vocab",
        framework=FW,
        kind="vocab",
        versions=OLD,
        condition="VocabParallelEmbedding / ParallelLMHead: vocab_size padded to a multiple of 64, then "
        "divide(padded_vocab, tp)",
        message=DIVIDE,
        source_url=S.VLLM_VOCAB,
        predicate=P.vocab_padded(),
    ),
    Rule(
        id="vllm.vision_heads",
        framework=FW,
        kind="vision_heads",
        versions=OLD,
        condition="vision encoder attention (e.g. Glm4vVisionAttention): divide(vision num_heads, tp) unless "
        "the encoder runs data-parallel (mm_encoder_tp_mode='data')",
        message=DIVIDE,
        source_url=S.VLLM_GLM4V,
        predicate=P.vision_heads(FW),
    ),
    Rule(
        id="vllm.block_fp8.dense_n",
        framework=FW,
        kind="block_fp8",
        versions=OLD,
        condition="block-FP8: dense gate_up output per rank (intermediate_size / tp) % block_n != 0 "
        "(validate_fp8_block_shape)",
        message="Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}.",
        source_url=S.VLLM_FP8_UTILS,
        predicate=P.fp8_dense("n"),
    ),
    Rule(
        id="vllm.block_fp8.dense_k",
        framework=FW,
        kind="block_fp8",
        versions=OLD,
        condition="block-FP8: dense down_proj input per rank (intermediate_size / tp) % block_k != 0, tp > 1",
        message="Weight input_size_per_partition = {size} is not divisible by weight quantization block_k = {block}.",
        source_url=S.VLLM_FP8_UTILS,
        predicate=P.fp8_dense("k"),
    ),
    Rule(
        id="vllm.block_fp8.shared_n",
        framework=FW,
        kind="block_fp8",
        versions=OLD,
        condition="block-FP8: shared-expert gate_up output per rank % block_n != 0",
        message="Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}.",
        source_url=S.VLLM_FP8_UTILS,
        predicate=P.fp8_dense("n", shared=True),
    ),
    Rule(
        id="vllm.block_fp8.shared_k",
        framework=FW,
        kind="block_fp8",
        versions=OLD,
        condition="block-FP8: shared-expert down_proj input per rank % block_k != 0, tp > 1",
        message="Weight input_size_per_partition = {size} is not divisible by weight quantization block_k = {block}.",
        source_url=S.VLLM_FP8_UTILS,
        predicate=P.fp8_dense("k", shared=True),
    ),
    Rule(
        id="vllm.block_fp8.moe_n",
        framework=FW,
        kind="block_fp8",
        versions=OLD,
        condition="block-FP8 MoE (Fp8MoEMethod.create_weights): intermediate_size_per_partition "
        "(moe_intermediate_size / moe_tp) % block_n != 0",
        message="The output_size of gate's and up's weight = {size} is not divisible by weight quantization "
        "block_n = {block}.",
        source_url=S.VLLM_FP8,
        predicate=P.fp8_moe(FW, "n"),
    ),
    Rule(
        id="vllm.block_fp8.moe_k",
        framework=FW,
        kind="block_fp8",
        versions=OLD,
        condition="block-FP8 MoE: moe_tp > 1 and intermediate_size_per_partition % block_k != 0",
        message="The input_size of down's weight = {size} is not divisible by weight quantization block_k = {block}.",
        source_url=S.VLLM_FP8,
        predicate=P.fp8_moe(FW, "k"),
    ),
    Rule(
        id="vllm.block_fp8.attention",
        framework=FW,
        kind="block_fp8",
        versions=OLD,
        condition="block-FP8: q projection output per rank (heads / tp * head_dim) % block_n != 0",
        message="Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}.",
        source_url=S.VLLM_FP8_UTILS,
        predicate=P.fp8_attention(FW),
    ),
    Rule(
        id="vllm.block_fp8.linear_attention",
        framework=FW,
        kind="block_fp8",
        versions=OLD,
        condition="block-FP8: GDN/KDA key or value projection output per rank (heads / tp * head_dim) "
        "% block_n != 0",
        message="Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}.",
        source_url=S.VLLM_FP8_UTILS,
        predicate=P.fp8_linear_attention(FW),
    ),
    Rule(
        id="vllm.group_size",
        framework=FW,
        kind="group_size",
        versions=OLD,
        condition="AWQ/GPTQ: a row-parallel input per rank (o_proj heads/tp*head_dim, down_proj "
        "intermediate/tp, expert down moe_intermediate/moe_tp) % group_size != 0",
        message="The input size is not aligned with the quantized weight shape. This can be caused by too large "
        "tensor parallel size.",
        source_url=S.VLLM_GPTQ,
        predicate=P.group_size_rowparallel(FW),
    ),
    Rule(
        id="vllm.pipeline_layers",
        framework=FW,
        kind="pipeline_layers",
        versions=OLD,
        condition="get_pp_indices splits num_hidden_layers unevenly when pp does not divide it (runs; "
        "the last stages hold one layer more)",
        message="{layers} layers over {pp} pipeline stages: stages hold {lo} or {hi} layers (uneven split).",
        source_url=S.VLLM_DIST_UTILS,
        predicate=P.pipeline_even(),
        severity="warning",
    ),
]


def rules() -> list[Rule]:
    """Every vLLM rule: the releases run through the conformance harness first (construction order),
    then the hand-read history for older releases."""
    return [*_executed_rules(), *OLD_RULES]
