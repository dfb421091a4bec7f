"""Megatron-Core tensor/pipeline-parallel checks before core_v0.16.0, read from source, as rule data
(TransformerConfig.__post_init__ and the transformer block's layer split). Megatron-LM's training front end
pads the vocabulary to a multiple of ``make_vocab_size_divisible_by (128) * tp``, so the vocabulary never
blocks a TP size there. From 0.16.0 on the rules are :mod:`dashboard.frameworks.megatron_core.rules_executed` (held to the
executed release 0.16.1)."""

from __future__ import annotations

from dashboard.rules import preds as P
from dashboard.rules import sources as S
from dashboard.rules.common import Rule

FW = "megatron-core"
#: Releases these source-read rules hold for (the query-group check changed in core_v0.16.0).
OLD = "<0.16.0"

RULES: list[Rule] = [
    Rule(
        id="megatron.attention_heads",
        framework=FW,
        kind="attention_heads",
        versions=OLD,
        condition="TransformerConfig: num_attention_heads % tensor_model_parallel_size != 0",
        message="num_attention_heads ({h}) must be a multiple of tensor_model_parallel_size ({tp}).",
        source_url=S.MEGATRON_TCONFIG,
        predicate=P.attention_heads(FW),
        needs=("num_attention_heads",),
    ),
    Rule(
        id="megatron.kv_heads",
        framework=FW,
        kind="kv_heads",
        versions=OLD,
        condition="TransformerConfig: num_query_groups % tensor_model_parallel_size != 0 (no KV replication)",
        message="num_query_groups ({kv}) must be a multiple of tensor_model_parallel_size ({tp}).",
        source_url=S.MEGATRON_TCONFIG,
        predicate=P.kv_strict(FW),
        needs=("num_key_value_heads",),
    ),
    Rule(
        id="megatron.mlp_intermediate",
        framework=FW,
        kind="mlp_intermediate",
        versions=OLD,
        condition="ColumnParallelLinear: divide(ffn_hidden_size, tp)",
        message="{a} is not divisible by {b}",
        source_url=S.MEGATRON_TCONFIG.replace("transformer/transformer_config.py", "utils.py"),
        predicate=P.dense_mlp(),
    ),
    Rule(
        id="megatron.moe_experts",
        framework=FW,
        kind="moe_experts",
        versions=OLD,
        condition="num_moe_experts % expert_model_parallel_size != 0",
        message="num_moe_experts ({n}) must be divisible by expert_model_parallel_size ({ep}).",
        source_url=S.MEGATRON_TCONFIG,
        predicate=P.moe_experts_divisible(),
        note="Message is ours.",
    ),
    Rule(
        id="megatron.pipeline_layers",
        framework=FW,
        kind="pipeline_layers",
        versions=OLD,
        condition="get_num_layers_to_build without an explicit first/last-stage layout: "
        "num_layers % pipeline_model_parallel_size != 0",
        message="num_layers should be divisible by pipeline_model_parallel_size",
        source_url=S.MEGATRON_TBLOCK,
        predicate=P.pipeline_even(),
    ),
]


def rules() -> list[Rule]:
    """This module's rules, in evaluation order."""
    return RULES
