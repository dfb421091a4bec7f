"""TensorRT-LLM: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dashboard.frameworks.base import Framework


class TensorRTLLM(Framework):
    """Sharding: ``Attention.__init__`` ``tp_size = 1 if mapping.enable_attention_dp else
    mapping.tp_size`` and ``num_key_value_heads = ceil(kv / tp)`` (duplicated when ``tp > kv``);
    ``Mapping`` ``moe_tp_size = tp_size // moe_ep_size``
    (https://github.com/NVIDIA/TensorRT-LLM/blob/v1.0.0/tensorrt_llm/_torch/modules/attention.py,
    ``tensorrt_llm/mapping.py``)."""

    name = "tensorrt-llm"
    label = "TensorRT-LLM"
    executed_releases = ()
    reports_kv_replication = True
    mla_latent = True
    kv_heads_ceil = True
    #: attention-DP also keeps every linear-attention / Mamba head on every rank (valid in the rules)
    linear_on_attention_tp = True

    def attention_tp(self, tp: Any, dp: Any = 1, dp_attention: Any = False, *, arch: Any = None,
                     release: str | None = None) -> np.ndarray:
        """1 under attention-DP (every rank runs every head of its own requests), else ``tp``."""
        t = np.asarray(tp, dtype=np.int64)
        return np.where(np.asarray(dp_attention, dtype=bool), 1, t).astype(np.int64) + np.zeros(
            np.broadcast(t, np.asarray(dp)).shape, np.int64)

    def moe_tp(self, tp: Any, ep: Any = 1, expert_parallel: Any = False) -> np.ndarray:
        """``moe_tp_size = tp_size // ep`` under expert parallelism, else ``tp``."""
        t, e = np.asarray(tp, dtype=np.int64), np.asarray(ep, dtype=np.int64)
        on = np.asarray(expert_parallel, dtype=bool) | (e > 1)
        return np.where(on, np.maximum(t // np.maximum(e, 1), 1), t).astype(np.int64)

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
