"""transformers' tensor parallelism before 5.24.0 (read from source): native TP
(``from_pretrained(tp_plan="auto")``) and the continuous-batching paged cache built on top of it.

From 5.24.0 on the rules follow each model's TP plan and were executed
(:mod:`dashboard.frameworks.transformers.rules_executed`). These older rules assume a Llama-style plan (q/k/v
colwise) for every model, which 5.24.0 showed wrong for gathered, embedding-only, expert-only and missing
plans; they are kept for older releases, which were not run, and are only as good as that assumption.

Native TP shards q/k/v/o with the model's ``base_model_tp_plan`` (colwise/rowwise) and never replicates
KV heads: a KV-head count that does not split loads without complaint and fails in the first forward
pass (reshape error). The continuous-batching cache checks the KV heads up front.
"""

from __future__ import annotations

from dashboard import frameworks as _frameworks
from dashboard.rules import preds as P
from dashboard.rules import sources as S
from dashboard.rules.common import Rule

NATIVE = "transformers-native-tp"
CB = "transformers-cb-cache"

#: Filled in from the transformers-matrix helper's real runs (torchrun, gloo, CPU); see docs/rules.md.
VERIFIED_WITH: str | None = None  # releases before 5.24.0 were not run (5.24.0: transformers_executed)


def _native(fw: str) -> list[Rule]:
    short = _frameworks.get(fw).rule_id_prefix
    return [
        Rule(
            id=f"{short}.attention_heads",
            framework=fw,
            kind="attention_heads",
            versions=">=4.51,<5.24.0",
            condition="native TP (tp_plan='auto'): q_proj is colwise-sharded by heads; num_attention_heads % tp "
            "!= 0 leaves a rank with a partial head and the attention reshape fails in the forward pass",
            message="num_attention_heads ({h}) is not divisible by tp_size ({tp}): transformers' native TP "
            "shards q_proj by whole heads; the model loads, then the attention reshape fails in the "
            "forward pass.",
            source_url=S.HF_LLAMA_ATTN,
            predicate=P.attention_heads(fw),
            needs=("num_attention_heads",),
            effect="run_time",
            verified_with=VERIFIED_WITH,
            note="No explicit check upstream; the message is ours and describes the run-time failure.",
        ),
        Rule(
            id=f"{short}.kv_heads",
            framework=fw,
            kind="kv_heads",
            versions=">=4.51,<5.24.0",
            condition="native TP: k_proj/v_proj are colwise-sharded; KV heads are never replicated, so "
            "num_key_value_heads % tp != 0 (including kv < tp) fails in the forward pass",
            message="num_key_value_heads ({kv}) is not divisible by tp_size ({tp}): transformers' native TP "
            "cannot replicate KV heads; the model loads, then the forward pass fails with a reshape "
            "error.",
            source_url=S.HF_TP,
            predicate=P.kv_strict(fw, only_tp_gt_1=True),
            needs=("num_key_value_heads",),
            effect="run_time",
            verified_with=VERIFIED_WITH,
            note="No explicit check upstream; the message is ours and describes the run-time failure.",
        ),
    ]


NATIVE_RULES: list[Rule] = _native(NATIVE)

CB_RULES: list[Rule] = [
    Rule(
        id="tf_cb.kv_cache",
        framework=CB,
        kind="kv_heads",
        versions=">=4.56,<5.24.0",
        condition="PagedAttentionCache: k_proj and v_proj in the TP plan and tp > 1 and "
        "num_key_value_heads % tp != 0 (raised when the cache is built)",
        message="Number of key value heads {kv} must be divisible by tensor parallel size {tp}.",
        source_url=S.HF_CB_CACHE,
        predicate=P.kv_strict(CB, only_tp_gt_1=True),
        needs=("num_key_value_heads",),
        verified_with=VERIFIED_WITH,
        note="Raised when the cache is built, in generate_batch's background thread: it is logged "
        "(ContinuousBatchingLogger) and the requests fail; the caller gets no exception.",
    ),
    *_native(CB)[:1],  # the cache runs on a native-TP model: the head split applies too
]

RULES: list[Rule] = NATIVE_RULES + CB_RULES


def rules() -> list[Rule]:
    """This module's rules, in evaluation order."""
    return RULES
