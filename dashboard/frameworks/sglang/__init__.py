"""SGLang: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from typing import Any

from dashboard.frameworks.base import Framework


class SGLang(Framework):
    name = "sglang"
    label = "SGLang"
    executed_releases = ("0.5.21", "0.5.23")

    # memory (formulas in dashboard/frameworks/sglang/memory.py)
    kv_tokens_per_block = 1
    kv_budget_rule = "mem_fraction_static x (total - startup) - weights"
    default_mem_fraction = None
    caches_mla_latent = True
    vocab_pad_multiple = 64
    memory_rules_release = "0.5.23"
    kv_oracle_checked = True

    def kv_budget(self, b: dict[str, Any]) -> dict[str, Any]:
        """``mem_fraction_static x (M - startup) - weights - load extras``
        (:func:`dashboard.frameworks.sglang.memory.kv_budget`)."""
        from dashboard.frameworks.sglang import memory

        return memory.kv_budget(b)

    def breakdown_reserve(self, cap: Any, value: Any) -> list[tuple[str, float]]:
        """One ``non-torch`` part: the memory in use before the weights load plus the load extras."""
        from dashboard.frameworks.sglang import memory

        return memory.breakdown_reserve(cap)


__all__ = ["SGLang"]
