"""vLLM: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class VLLM(Framework):
    name = "vllm"
    label = "vLLM"
    reports_kv_replication = True
    mla_latent = True
    executed_releases = ("0.22.0", "0.33.0")


__all__ = ["VLLM"]
