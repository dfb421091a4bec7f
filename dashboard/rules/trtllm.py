"""TensorRT-LLM (PyTorch backend) tensor-parallel checks, as rule data.

``Attention.__init__``: with attention-DP the attention TP is 1, else tp; ``assert num_heads % tp_size == 0``;
KV heads per rank ``ceil(kv / tp)`` (replicated when kv < tp). Upstream raises bare asserts: the
messages below name the assert and fill in the numbers.
"""

from __future__ import annotations

from dashboard.rules import _preds as P
from dashboard.rules import _src as S
from dashboard.rules.common import Rule

FW = "tensorrt-llm"

RULES: list[Rule] = [
    Rule(
        id="trtllm.attention_heads",
        framework=FW,
        kind="attention_heads",
        versions="",
        condition="Attention: tp_size = 1 under enable_attention_dp else mapping.tp_size; "
        "assert num_heads % tp_size == 0 (non-MLA)",
        message="AssertionError: num_heads % tp_size == 0 failed (num_heads={h}, tp_size={tp}).",
        source_url=S.TRT_ATTENTION,
        predicate=P.attention_heads(FW, mla=False),
        needs=("num_attention_heads",),
    ),
    Rule(
        id="trtllm.mla",
        framework=FW,
        kind="mla",
        versions="",
        condition="MLA: assert num_heads % (tp_size * cp_size) == 0 (cp_size = 1); the KV latent is "
        "replicated on every rank",
        message="AssertionError: num_heads % (tp_size * cp_size) == 0 failed (num_heads={h}, tp_size={tp}, "
        "cp_size=1).",
        source_url=S.TRT_ATTENTION,
        predicate=P.attention_heads(FW, mla=True),
        needs=("num_attention_heads",),
    ),
    Rule(
        id="trtllm.kv_heads",
        framework=FW,
        kind="kv_heads",
        versions="",
        condition="KV heads per rank = ceil(kv / tp): whole heads split when tp divides kv, duplicated when kv "
        "divides tp; otherwise the k/v weight shards do not line up with heads",
        message="num_key_value_heads ({kv}) neither divides by nor divides tp_size ({tp}): the k/v projection "
        "cannot be split or duplicated by whole heads.",
        source_url=S.TRT_ATTENTION,
        predicate=P.kv_split_or_replicate(FW),
        needs=("num_key_value_heads",),
        note="Message is ours; upstream computes (kv + tp - 1) // tp and the weight load fails.",
    ),
    Rule(
        id="trtllm.moe_experts",
        framework=FW,
        kind="moe_experts",
        versions="",
        condition="EP without EPLB: num_experts % ep_size != 0 (assert in the MoE load balancer init)",
        message="AssertionError: num_experts % ep_size == 0 failed (num_experts={n}, ep_size={ep}).",
        source_url=S.TRT_ATTENTION.replace("modules/attention.py", "modules/fused_moe/interface.py"),
        predicate=P.moe_experts_divisible(),
    ),
    Rule(
        id="trtllm.moe_intermediate",
        framework=FW,
        kind="moe_intermediate",
        versions="",
        condition="MoE-TP = tp // ep; moe_intermediate_size % moe_tp != 0",
        message="moe_intermediate_size {m} is not divisible by the MoE tensor-parallel size {moe_tp}.",
        source_url=S.TRT_ATTENTION.replace("modules/attention.py", "modules/fused_moe/interface.py"),
        predicate=P.moe_intermediate(FW),
        note="Message is ours.",
    ),
    Rule(
        id="trtllm.mlp_intermediate",
        framework=FW,
        kind="mlp_intermediate",
        versions="",
        condition="dense MLP column-parallel split: intermediate_size % tp != 0",
        message="intermediate_size {a} is not divisible by tp_size {b}.",
        source_url=S.TRT_ATTENTION.replace("modules/attention.py", "modules/gated_mlp.py"),
        predicate=P.dense_mlp(),
        note="Message is ours.",
    ),
]
