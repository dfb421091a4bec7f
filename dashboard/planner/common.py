"""The planner's constants: the ``--json`` schema version, the planned frameworks and the result's columns."""

from __future__ import annotations

from dashboard import schema
from dashboard import frameworks as fw_registry


#: Version of the ``--json`` output of ``tp-planner plan`` and of :func:`plan_to_dict` (bumped on any
#: change of field names or meanings; the README lists the fields).
SCHEMA_VERSION = 1

#: Frameworks the planner covers (the serving frameworks with launch commands).
PLAN_FRAMEWORKS: tuple[str, ...] = tuple(f.name for f in fw_registry.all_frameworks() if f.launch_flags)

#: Placeholder for the head node's address in multi-node launch commands.
HEAD_ADDR = "$HEAD_IP"


FW_LABEL = schema.FRAMEWORK_LABELS

#: Columns of :func:`plan`'s result, in order, with their meaning (also the ``--json`` layout fields).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("framework", "framework id (vllm, sglang, tensorrt-llm)"),
    ("release", "the framework release whose rules were applied (None: the current rules)"),
    ("layout", "the layout in words, e.g. 'TP 8 x DP 2' or 'TP 8 attn-DP 8 EP 8'"),
    ("tp", "tensor-parallel size (GPUs in one TP group; SGLang attention-DP and TensorRT-LLM "
           "attention-DP split attention inside it)"),
    ("pp", "pipeline-parallel stages"),
    ("dp", "data-parallel replicas: the framework's own flag (vLLM --data-parallel-size, SGLang "
           "--dp-size); TensorRT-LLM has none, so separate trtllm-serve instances"),
    ("attn_dp", "attention data-parallel groups inside the TP group (SGLang --attn-dp-size, TensorRT-LLM "
                "enable_attention_dp = tp groups); 1 when off"),
    ("ep", "expert-parallel size (vLLM --enable-expert-parallel: tp x dp; SGLang --ep-size / TensorRT-LLM "
           "--ep_size: tp); 1 when off"),
    ("gpus", "GPUs the layout uses (= tp x pp x dp = N)"),
    ("gpus_per_replica", "GPUs of one replica (tp x pp)"),
    ("nodes", "nodes the layout spans (ceil(N / gpus_per_node))"),
    ("valid", "the rules engine's verdict (rules.check at this layout)"),
    ("status", "cell status (valid, valid_replicated, valid_padded, invalid, unknown)"),
    ("failures", "every failing rule as (rule_id, message), in the order the framework reaches them"),
    ("first_error", "the first failing rule's message: the error the user sees ('' when valid)"),
    ("first_error_rule", "its rule id"),
    ("first_error_source", "its pinned upstream source URL"),
    ("first_error_location", "its raise site 'path.py:line' in the release"),
    ("first_error_ours", "True when the message is this project's wording, not the framework's"),
    ("evidence", "'executed' (this config and layout were run through the release's own code as this GPU's "
                  "platform: a row of its conformance table), 'checked' (the release was run as this platform, not "
                  "on this config and layout) or 'source' (read from source; also every layout on a GPU whose "
                  "platform the release was never run as)"),
    ("weight_bytes_per_gpu", "weights on one GPU, bytes (heaviest pipeline stage)"),
    ("kv_budget_bytes_per_gpu", "KV-cache budget on one GPU under the framework's rule, bytes"),
    ("kv_bytes_per_token_per_gpu", "KV-cache bytes one token costs on one GPU"),
    ("kv_tokens_per_gpu", "KV-cache tokens one GPU holds (rounded to the framework's block)"),
    ("mem_fraction", "the memory fraction the plan assumed (vLLM gpu_memory_utilization, SGLang "
                     "mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction)"),
    ("kv_sequences_per_replica", "context_len sequences the KV cache of one replica holds"),
    ("scheduler_limit_per_replica", "the engine's default cap on running sequences per replica "
                                    "(vLLM --max-num-seqs, SGLang --max-running-requests, TensorRT-LLM "
                                    "--max_batch_size)"),
    ("sequences_per_replica", "min(kv_sequences_per_replica, scheduler_limit_per_replica), 0 when refused"),
    ("sequences_total", "sequences_per_replica x dp: concurrent context_len sequences on all N GPUs"),
    ("limited_by", "'kv' or 'scheduler': which of the two sets sequences_per_replica"),
    ("starts", "the framework would start this layout (rules, node, dtype and memory checks pass)"),
    ("refusal_kind", "'' or why it would not start: platform (the framework does not run on this GPU family: "
                     "Framework.platform_refusal) | context | rule | cross_node_tp | dtype | memory"),
    ("refusal", "the message the user would see ('' when it starts)"),
    ("fits", "starts and holds >= min_sequences (>= 1 when not given) sequences"),
    ("why_not", "'' when it fits, else the refusal or the shortfall"),
    ("rank", "1 = first by the interim ranking among the layouts that fit (dashboard.planner.ranking: most KV "
             "capacity; near-ties within 10 % prefer fewer pipeline stages, then more replicas); <NA> otherwise"),
    ("commands", "launch command(s) for layouts that start: one per node / instance ('#' comment first)"),
)
