"""Megatron-Core: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class MegatronCore(Framework):
    name = "megatron-core"
    label = "Megatron-Core"
    executed_releases = ("0.16.1",)
    release_label = "Megatron-Core"

    conformance_module = "dashboard.frameworks.megatron_core.conformance"
    rule_modules = ("dashboard.frameworks.megatron_core.rules_source",
                    "dashboard.frameworks.megatron_core.rules_executed")
    rule_prefix = "megatron"
    source_repo_url = "https://github.com/NVIDIA/Megatron-LM/blob/core_v{release}"

    # memory: no pre-allocated KV pool (the default kv_budget)
    keeps_fp32_weights = True
    #: KV heads (``num_query_groups``) may be a multiple or a divisor of TP since core_v0.16.0 (fewer
    #: groups than ranks: QKV is all-gathered and sliced, ``transformer_config.py:943``, executed 0.16.1
    #: table): replicated like vLLM's; MLA caches up-projected per-head K/V split like the query heads.
    replicates_kv = True

    #: ``expert_model_parallel_size``
    expert_parallel_mode = "size"


__all__ = ["MegatronCore"]
