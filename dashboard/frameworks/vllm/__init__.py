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

    def vision_unsharded_when_uneven(self, arch: Any) -> np.ndarray:
        """Only the towers the executed 0.33.0 table shows raising no TP error
        (:data:`dashboard.rules.vllm_executed.VISION_NO_HEAD_CHECK`: MoonViT switches to data-parallel by
        itself, Gemma-4's tower is an unsharded HF module); the others divide their heads over TP."""
        from dashboard.rules.vllm_executed import VISION_NO_HEAD_CHECK  # lazy: rules are heavy

        if arch is None:
            return np.asarray(False)
        return np.isin(np.asarray(arch, dtype=object), list(VISION_NO_HEAD_CHECK))


__all__ = ["VLLM"]
