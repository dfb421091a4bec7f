"""vLLM: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dashboard.frameworks.base import Framework


class VLLM(Framework):
    name = "vllm"
    label = "vLLM"
    reports_kv_replication = True
    mla_latent = True
    executed_releases = ("0.22.0", "0.33.0")
    release_label = "vLLM"

    conformance_module = "dashboard.frameworks.vllm.conformance"
    rule_modules = ("dashboard.frameworks.vllm.rules_source",)
    source_repo_url = "https://github.com/vllm-project/vllm/blob"
    replicates_kv = True
    ep_off_hint = "(drop --enable-expert-parallel)."

    def expert_parallel_suggestion(self, tp: int, dp: int, valid_with) -> "str | None":
        """``--enable-expert-parallel`` (EP size ``tp x dp``) when that layout is valid."""
        if valid_with(expert_parallel=True):
            return (f"Valid at tp={tp} with --enable-expert-parallel (EP size {tp * dp}): experts are not "
                    "TP-sliced.")
        return None

    # memory (formulas in dashboard/frameworks/vllm/memory.py and dashboard.memory)
    kv_tokens_per_block = 16
    kv_budget_rule = "gpu_memory_utilization x total - weights - peak activation - non-torch - CUDA graphs (vLLM >= 0.21)"
    default_mem_fraction = 0.9
    caches_mla_latent = True
    vocab_pad_multiple = 64
    moe_tp_spans_dp = True
    applies_architecture_weight_quirks = True
    memory_rules_release = "0.33.0"
    kv_oracle_checked = True
    reserve_parts = (("activation peak", "activation_bytes_per_gpu"), ("CUDA graphs", "cuda_graph_bytes_per_gpu"),
                     ("non-torch", "non_torch_bytes_per_gpu"))

    def kv_budget(self, b: dict[str, Any]) -> dict[str, Any]:
        """``gpu_memory_utilization x M - weights - activation - non_torch - CUDA graphs`` (graphs charged from
        vLLM 0.21), see :func:`dashboard.frameworks.vllm.memory.kv_budget`."""
        from dashboard.frameworks.vllm import memory

        return memory.kv_budget(b)

    def kv_pool_capacity(self, b: dict[str, Any]) -> dict[str, Any] | None:
        """The hybrid KV manager's groups and pages (:func:`dashboard.frameworks.vllm.memory.kv_pool_capacity`)."""
        from dashboard.frameworks.vllm import memory

        return memory.kv_pool_capacity(b)

    def dtype_refusal(self, gpu: Any, weight_kind: str, kv_dtype: str, *, explicit: bool = True) -> str:
        """The hardware rule with ``--dtype auto`` / ``--kv-cache-dtype auto`` and vLLM's own bf16 message
        (:func:`dashboard.frameworks.vllm.dtypes.dtype_refusal`)."""
        from dashboard.frameworks.vllm import dtypes

        return dtypes.dtype_refusal(gpu, weight_kind, kv_dtype, explicit=explicit)

    def auto_dtype(self, gpu: Any, weight_kind: str, model_type: str, explicit: bool) -> tuple[str | None, str]:
        """What ``--dtype auto`` runs a bfloat16 checkpoint in on a GPU without bfloat16
        (:func:`dashboard.frameworks.vllm.dtypes.vllm_auto_dtype`)."""
        from dashboard.frameworks.vllm import dtypes

        return dtypes.vllm_auto_dtype(gpu, weight_kind, model_type, explicit)

    def vision_unsharded_when_uneven(self, arch: Any) -> np.ndarray:
        """Only the towers the executed 0.33.0 table shows raising no TP error
        (:data:`dashboard.frameworks.vllm.rules_executed.VISION_NO_HEAD_CHECK`: MoonViT switches to data-parallel by
        itself, Gemma-4's tower is an unsharded HF module); the others divide their heads over TP."""
        from dashboard.frameworks.vllm.rules_executed import VISION_NO_HEAD_CHECK  # lazy: rules are heavy

        if arch is None:
            return np.asarray(False)
        return np.isin(np.asarray(arch, dtype=object), list(VISION_NO_HEAD_CHECK))


__all__ = ["VLLM"]
