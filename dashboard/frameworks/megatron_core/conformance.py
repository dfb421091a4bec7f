"""Megatron-Core's conformance adapter (see :class:`dashboard.frameworks.conformance.ConformanceAdapter`)."""

from __future__ import annotations

from dashboard.frameworks.conformance import ConformanceAdapter
from dashboard.frameworks.sglang.conformance import REASONS as _SGLANG_REASONS


def layouts(dp: int, ep: bool, vision_dp: bool, pp: int, tps: list[int]) -> list[tuple[list[int], dict]]:
    """Megatron-Core cells: ``dp`` is the data-parallel size and, with ``ep`` on, the expert-parallel size
    too (expert_model_parallel_size = dp; ``conformance.driver.plan_cells_megatron``)."""
    return [(tps, dict(pp=int(pp), dp=int(dp), ep=int(dp) if ep else 1))]


ADAPTER = ConformanceAdapter(
    worker="megatron_worker.py",
    executed_rules="dashboard.frameworks.megatron_core.rules_executed",
    cell_plan="pipeline_ep",
    reasons=_SGLANG_REASONS,  # the report used SGLang's list for every framework but vLLM (none matches here)
    mismatch_caption="Cells whose first error still differs (model, tp, pp, EP size, reason):",
    mismatch_columns=(("tp", "tp"), ("pp", "pp"), ("EP", "ep_size_from_dp")),
    layouts=layouts,
)
