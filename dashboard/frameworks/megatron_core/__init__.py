"""Megatron-Core: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class MegatronCore(Framework):
    name = "megatron-core"
    label = "Megatron-Core"
    executed_releases = ("0.16.1",)

    #: ``expert_model_parallel_size``
    expert_parallel_mode = "size"


__all__ = ["MegatronCore"]
