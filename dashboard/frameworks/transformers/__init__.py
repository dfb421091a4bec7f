"""transformers' own tensor parallelism: native TP (``tp_plan="auto"``) and the continuous-batching KV cache
(see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class TransformersNativeTP(Framework):
    name = "transformers-native-tp"
    label = "transformers (native TP)"
    executed_releases = ("5.24.0",)


class TransformersCBCache(Framework):
    name = "transformers-cb-cache"
    label = "transformers (continuous-batching cache)"
    executed_releases = ("5.24.0",)


__all__ = ["TransformersNativeTP", "TransformersCBCache"]
