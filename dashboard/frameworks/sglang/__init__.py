"""SGLang: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from dashboard.frameworks.base import Framework
from dashboard.frameworks.sglang.sharding import SGLangSharding


class SGLang(SGLangSharding, Framework):
    name = "sglang"
    label = "SGLang"
    executed_releases = ("0.5.21", "0.5.23")
    release_label = "SGLang"

    conformance_module = "dashboard.frameworks.sglang.conformance"
    rule_modules = ("dashboard.frameworks.sglang.rules_source", "dashboard.frameworks.sglang.rules_executed")
    source_repo_url = "https://github.com/sgl-project/sglang/blob/v{release}/python"
    replicates_kv = True
    #: First release that spells attention-DP ``--attn-dp-size D`` (earlier: ``--enable-dp-attention --dp-size D``).
    ATTN_DP_SIZE_FROM: ClassVar[str] = "0.5.22"

    def dp_attention_groups(self, tp: int) -> list[int]:
        """Every divisor ``d`` of ``tp`` from 2 on (attention-TP ``tp / d``)."""
        return [d for d in range(2, tp + 1) if tp % d == 0]

    def dp_attention_suggestion(self, version: "str | None", tp: int, dp: int) -> str:
        return f"Valid at tp={tp} with {self.dp_attention_flags(version, dp)} (attention-TP {tp // dp})."

    def dp_attention_flags(self, version: "str | None", dp: int) -> str:
        """SGLang's launch flags for attention-DP over ``dp`` groups, as the release ``version`` resolves to
        (:func:`dashboard.rules.resolve_version`) spells them: ``--attn-dp-size D`` from 0.5.22 on,
        ``--enable-dp-attention --dp-size D`` before."""
        if _before_attn_dp_size(version):
            return f"--enable-dp-attention --dp-size {int(dp)}"
        return f"--attn-dp-size {int(dp)}"


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


@functools.lru_cache(maxsize=256)
def _before_attn_dp_size(version: "str | None") -> bool:
    from packaging.version import Version

    from dashboard.rules import resolve_version

    rel = resolve_version("sglang", version).release
    return rel is not None and Version(rel) < Version(SGLang.ATTN_DP_SIZE_FROM)

__all__ = ["SGLang"]
