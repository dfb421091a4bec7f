"""TensorRT-LLM: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class TensorRTLLM(Framework):
    name = "tensorrt-llm"
    label = "TensorRT-LLM"
    executed_releases = ()


__all__ = ["TensorRTLLM"]
