"""transformers' own tensor parallelism: native TP (``tp_plan="auto"``) and the continuous-batching KV cache
(see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from typing import Any

from dashboard.frameworks.base import Framework


class TransformersNativeTP(Framework):
    name = "transformers-native-tp"
    label = "transformers (native TP)"
    executed_releases = ("5.24.0",)
    release_label = "transformers"

    rule_modules = ("dashboard.frameworks.transformers.rules_source",
                    "dashboard.frameworks.transformers.rules_executed")
    source_repo_url = "https://github.com/huggingface/transformers/blob/v{release}/src"
    lists_verified_runs = True
    rule_prefix = "tf_native"

    # memory: no pre-allocated KV pool (the default kv_budget)
    keeps_fp32_weights = True
    #: the TP plan decides; a head count that does not divide is not split (gathered projections,
    #: plans that shard no attention, embedding-only plans: transformers 5.24.0 executed table) and the
    #: cache then holds every KV head (``cache.py`` divides KV heads only when ``are_kv_heads_tp_ed``).
    uneven_heads_whole = True
    replicates_kv = False


class TransformersCBCache(Framework):
    name = "transformers-cb-cache"
    label = "transformers (continuous-batching cache)"
    executed_releases = ("5.24.0",)
    release_label = "transformers"

    rule_modules = ("dashboard.frameworks.transformers.rules_source",
                    "dashboard.frameworks.transformers.rules_executed")
    source_repo_url = "https://github.com/huggingface/transformers/blob/v{release}/src"
    lists_verified_runs = True
    rule_prefix = "tf_cb"

    # memory: PagedAttentionMemoryHandler ((total - max(allocated, reserved)) x max_memory_percent)
    kv_tokens_per_block = 256
    kv_budget_rule = "max_memory_percent x (total - weights) - activation"
    default_mem_fraction = 0.9
    keeps_fp32_weights = True
    #: PagedAttentionMemoryHandler._upper_bound_max_batch_tokens: one sequence of 256 tokens.
    profile_batch = (1, 256)
    reserve_parts = (("activation peak", "activation_bytes_per_gpu"),)

    def kv_budget(self, b: dict[str, Any]) -> dict[str, Any]:
        """``(M - weights) x max_memory_percent - activation``, reserve the activation."""
        act = b["activation"]
        return {"budget": (b["memory_bytes"] - b["weights"]) * b["fraction"] - act, "reserve": act,
                "fraction": b["fraction"]}
    #: the TP plan decides; a head count that does not divide is not split (gathered projections,
    #: plans that shard no attention, embedding-only plans: transformers 5.24.0 executed table) and the
    #: cache then holds every KV head (``cache.py`` divides KV heads only when ``are_kv_heads_tp_ed``).
    uneven_heads_whole = True
    replicates_kv = False


__all__ = ["TransformersNativeTP", "TransformersCBCache"]
