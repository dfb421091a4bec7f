"""TensorRT-LLM: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`).

The planner's command writer lives in :mod:`.serving` (imported lazily)."""

from __future__ import annotations

from typing import Any

import numpy as np
from typing import Any, ClassVar

from dashboard.frameworks.base import Framework

#: TensorRT-LLM ``trtllm-serve --max_batch_size`` default (``BuildConfig.max_batch_size``).
TRTLLM_MAX_BATCH_SIZE = 2048


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

    platform_source_url = "https://nvidia.github.io/TensorRT-LLM/supported-hardware.html"

    def platform_refusal(self, gpu: Any) -> str:
        """NVIDIA only, SM 8.0 and newer (:mod:`dashboard.frameworks.tensorrt_llm.platforms`)."""
        from dashboard.frameworks.tensorrt_llm import platforms

        return platforms.platform_refusal(gpu)

    def dp_attention_groups(self, tp: int) -> list[int]:
        """``enable_attention_dp``: one group per rank (attention-TP 1)."""
        return [tp]

    def dp_attention_suggestion(self, version: "str | None", tp: int, dp: int) -> str:
        return f"Valid at tp={tp} with enable_attention_dp (attention-TP 1)."

    attention_dp_in_tp = True
    attention_dp_whole_tp = True
    expert_parallel_mode = "size"
    ep_divides_tp = True
    positional_model = True
    launch_flags: ClassVar[dict[str, tuple[str, ...]]] = {
        "tp": ("--tp_size",),
        "pp": ("--pp_size",),
        "ep": ("--ep_size",),
        "mem_fraction": ("--kv_cache_free_gpu_memory_fraction", "--free_gpu_memory_fraction"),
        "max_model_len": ("--max_seq_len",),
        "backend": ("--backend",),
    }

    def attention_dp_sizes(self, tp, dp, *, release=None):
        """Attention-DP over the whole TP group (``enable_attention_dp``)."""
        return [tp]

    def launch_notes(self, launch: Any) -> list[str]:
        if launch.backend and launch.backend not in ("pytorch",):
            return [f"--backend {launch.backend}: the rules follow the PyTorch backend's model code"]
        return []

    def layout_flags(self, lay, *, version=None, keep_vision=False, replicas=1):
        f = self.launch_flags
        out, _, _, _, ep = self.tp_pp_flags(lay)
        if ep > 1:
            out += [f["ep"][0], str(ep)]
        # attention-DP is set in the --config/--extra_llm_api_options YAML (enable_attention_dp: true)
        return out

    def launch_head(self, model: str) -> list[str]:
        return ["trtllm-serve", model]

    def plan_commands(self, row, model_id, *, gpus_per_node, context_len, kv_dtype, release):
        from dashboard.frameworks.tensorrt_llm import serving

        return serving.plan_commands(row, model_id, gpus_per_node=gpus_per_node, context_len=context_len,
                                     kv_flag=self.kv_cache_flag(kv_dtype))

    def scheduler_cap(self, gpu, tokens_per_gpu, context_len, groups):
        return TRTLLM_MAX_BATCH_SIZE * groups

    def memory_refusal(self, *, weights, budget, ctx, kv_tok, tokens, frac, seq_group):
        if budget <= 0:
            return (f"No memory left for the KV cache after the weights ({weights / (1 << 30):.2f} GiB per GPU) "
                    "(planner estimate; TensorRT-LLM's KvCacheCreator then fails to allocate blocks).")
        if seq_group < 1:
            return (f"The KV cache holds {int(tokens)} tokens per GPU, fewer than one {ctx}-token sequence: "
                    "TensorRT-LLM shrinks the attention window below the context length (planner message).")
        return ""


__all__ = ["TensorRTLLM", "TRTLLM_MAX_BATCH_SIZE"]
