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


__all__ = ["TensorRTLLM"]
