"""Megatron-Core: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class MegatronCore(Framework):
    name = "megatron-core"
    label = "Megatron-Core"
    executed_releases = ("0.16.1",)

    # memory: no pre-allocated KV pool (the default kv_budget)
    keeps_fp32_weights = True


__all__ = ["MegatronCore"]
