"""transformers' own tensor parallelism: native TP (``tp_plan="auto"``) and the continuous-batching KV cache
(see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from typing import Any

from dashboard.frameworks.base import Framework


class TransformersTP(Framework):
    """What both transformers entries share: the release, the rules, the source and the sharding (the
    TP plan decides). Not registered itself."""

    executed_releases = ("5.24.0",)
    release_label = "transformers"

    rule_modules = ("dashboard.frameworks.transformers.rules_source",
                    "dashboard.frameworks.transformers.rules_executed")
    source_repo_url = "https://github.com/huggingface/transformers/blob/v{release}/src"
    lists_verified_runs = True

    keeps_fp32_weights = True
    #: the TP plan decides; a head count that does not divide is not split (gathered projections,
    #: plans that shard no attention, embedding-only plans: transformers 5.24.0 executed table) and the
    #: cache then holds every KV head (``cache.py`` divides KV heads only when ``are_kv_heads_tp_ed``).
    uneven_heads_whole = True
    replicates_kv = False


class TransformersNativeTP(TransformersTP):
    name = "transformers-native-tp"
    label = "transformers (native TP)"
    rule_prefix = "tf_native"

    # memory: no pre-allocated KV pool (the default kv_budget)


class TransformersCBCache(TransformersTP):
    name = "transformers-cb-cache"
    label = "transformers (continuous-batching cache)"
    rule_prefix = "tf_cb"

    # memory: PagedAttentionMemoryHandler ((total - max(allocated, reserved)) x max_memory_percent)
    kv_tokens_per_block = 256
    kv_budget_rule = "max_memory_percent x (total - weights) - activation"
    default_mem_fraction = 0.9
    #: PagedAttentionMemoryHandler._upper_bound_max_batch_tokens: one sequence of 256 tokens.
    profile_batch = (1, 256)
    reserve_parts = (("activation peak", "activation_bytes_per_gpu"),)

    def kv_budget(self, b: dict[str, Any]) -> dict[str, Any]:
        """``(M - weights) x max_memory_percent - activation``, reserve the activation."""
        act = b["activation"]
        return {"budget": (b["memory_bytes"] - b["weights"]) * b["fraction"] - act, "reserve": act,
                "fraction": b["fraction"]}


__all__ = ["TransformersTP", "TransformersNativeTP", "TransformersCBCache"]
