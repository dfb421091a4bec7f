"""TensorRT-LLM: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class TensorRTLLM(Framework):
    name = "tensorrt-llm"
    label = "TensorRT-LLM"
    executed_releases = ()

    # memory: free_gpu_memory_fraction of what is free after weights and the profiled peak
    # (KvCacheCreator._cal_max_memory); the default kv_budget formula is that rule
    kv_tokens_per_block = 32
    kv_budget_rule = "free_gpu_memory_fraction x (total - weights - peak activation - non-torch)"
    default_mem_fraction = 0.9
    caches_mla_latent = True

    rule_modules = ("dashboard.frameworks.tensorrt_llm.rules_source",)
    rule_prefix = "trtllm"
    replicates_kv = True
    kv_shard_style = "tensorrt-llm"

    def dp_attention_groups(self, tp: int) -> list[int]:
        """``enable_attention_dp``: one group per rank (attention-TP 1)."""
        return [tp]

    def dp_attention_suggestion(self, version: "str | None", tp: int, dp: int) -> str:
        return f"Valid at tp={tp} with enable_attention_dp (attention-TP 1)."


__all__ = ["TensorRTLLM"]
