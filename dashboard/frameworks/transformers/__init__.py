"""transformers' own tensor parallelism: native TP (``tp_plan="auto"``) and the continuous-batching KV cache
(see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class TransformersNativeTP(Framework):
    name = "transformers-native-tp"
    label = "transformers (native TP)"
    executed_releases = ("5.24.0",)
    #: the TP plan decides; a head count that does not divide is not split (gathered projections,
    #: plans that shard no attention, embedding-only plans: transformers 5.24.0 executed table) and the
    #: cache then holds every KV head (``cache.py`` divides KV heads only when ``are_kv_heads_tp_ed``).
    uneven_heads_whole = True
    replicates_kv = False


class TransformersCBCache(Framework):
    name = "transformers-cb-cache"
    label = "transformers (continuous-batching cache)"
    executed_releases = ("5.24.0",)
    #: the TP plan decides; a head count that does not divide is not split (gathered projections,
    #: plans that shard no attention, embedding-only plans: transformers 5.24.0 executed table) and the
    #: cache then holds every KV head (``cache.py`` divides KV heads only when ``are_kv_heads_tp_ed``).
    uneven_heads_whole = True
    replicates_kv = False


__all__ = ["TransformersNativeTP", "TransformersCBCache"]
