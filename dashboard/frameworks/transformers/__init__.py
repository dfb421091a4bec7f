"""transformers' own tensor parallelism: native TP (``tp_plan="auto"``) and the continuous-batching KV cache
(see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class TransformersNativeTP(Framework):
    name = "transformers-native-tp"
    label = "transformers (native TP)"
    executed_releases = ("5.24.0",)
    release_label = "transformers"

    rule_modules = ("dashboard.frameworks.transformers.rules_source",
                    "dashboard.frameworks.transformers.rules_executed")
    source_repo_url = "https://github.com/huggingface/transformers/blob/v{release}/src"
    lists_verified_runs = True
    rule_prefix = "tf_native"


class TransformersCBCache(Framework):
    name = "transformers-cb-cache"
    label = "transformers (continuous-batching cache)"
    executed_releases = ("5.24.0",)
    release_label = "transformers"

    rule_modules = ("dashboard.frameworks.transformers.rules_source",
                    "dashboard.frameworks.transformers.rules_executed")
    source_repo_url = "https://github.com/huggingface/transformers/blob/v{release}/src"
    lists_verified_runs = True
    rule_prefix = "tf_cb"


__all__ = ["TransformersNativeTP", "TransformersCBCache"]
