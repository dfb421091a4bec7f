"""SGLang: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework
from dashboard.frameworks.sglang.sharding import SGLangSharding


class SGLang(SGLangSharding, Framework):
    name = "sglang"
    label = "SGLang"
    executed_releases = ("0.5.21", "0.5.23")


__all__ = ["SGLang"]
