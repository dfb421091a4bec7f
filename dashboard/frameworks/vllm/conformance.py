"""vLLM's conformance adapter (see :class:`dashboard.frameworks.conformance.ConformanceAdapter`)."""

from __future__ import annotations

from dashboard.frameworks.conformance import ConformanceAdapter


def layouts(dp: int, ep: bool, vision_dp: bool, pp: int, tps: list[int]) -> list[tuple[list[int], dict]]:
    """vLLM cells: ``ep`` is ``--enable-expert-parallel`` (EP size tp x dp), ``dp`` data-parallel replicas."""
    return [(tps, dict(pp=int(pp), dp=int(dp), ep=1, expert_parallel=bool(ep), vision_dp=bool(vision_dp)))]


ADAPTER = ConformanceAdapter(
    worker="vllm_worker.py",
    executed_rules="dashboard.frameworks.vllm.rules_executed",
    cell_plan="tp_ep_dp_vision",
    readme_key_has_framework=False,
    judges_harness_reason=False,
    tracks_not_seen_first=False,
    reasons=(
        ("chatglm.py", "model-level error of this checkpoint, not a TP rule"),
        ("laguna.py", "Laguna's own attention assert (laguna.py) fires before the MoE: no rule models it yet"),
        ("Laguna", "Laguna's shared expert gate_proj is a plain ColumnParallelLinear: its block_n check "
                   "(compressed-tensors FP8) comes before the experts; no rule models it yet"),
        ("GLM-4.5V", "GLM-4.xV vision MLP (MergedColumnParallelLinear over the vision intermediate size) fails "
                     "before the embedding; no vision-MLP rule for GLM-4.xV yet"),
        ("GLM-5", "a block-FP8 projection of the DSA indexer (448 per rank) fails before the MLP; the catalog "
                  "has no indexer columns"),
    ),
    mismatch_caption="Cells whose first error still differs (model, tp, dp, EP, vision DP, reason):",
    mismatch_columns=(("tp", "tp"), ("dp", "dp"), ("EP", "ep_on"), ("vision DP", "vision_dp_on")),
    layouts=layouts,
)
