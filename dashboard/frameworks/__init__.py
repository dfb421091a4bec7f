"""The serving frameworks, one package each, behind one interface (:class:`~dashboard.frameworks.base.Framework`).

The registry is data: :data:`REGISTRY` maps each framework's id to its class, in display order (like
vLLM's ``platforms/`` and ``model_executor/models/registry.py``). Everything about one framework lives in
its package; code elsewhere asks the object::

    from dashboard import frameworks
    fw = frameworks.get("sglang")
    fw.label                      # "SGLang"

Pure: no I/O at import, no Panel.
"""

from __future__ import annotations

from dashboard.frameworks.base import Framework, Layout
from dashboard.frameworks.megatron_core import MegatronCore
from dashboard.frameworks.sglang import SGLang
from dashboard.frameworks.tensorrt_llm import TensorRTLLM
from dashboard.frameworks.transformers import TransformersCBCache, TransformersNativeTP
from dashboard.frameworks.vllm import VLLM

#: Framework id -> class, in display order.
REGISTRY: dict[str, type[Framework]] = {cls.name: cls for cls in (
    VLLM, SGLang, TransformersNativeTP, TransformersCBCache, TensorRTLLM, MegatronCore)}

_INSTANCES: dict[str, Framework] = {name: cls() for name, cls in REGISTRY.items()}


def names() -> tuple[str, ...]:
    """Every framework id, in display order."""
    return tuple(REGISTRY)


def get(name: "str | Framework") -> Framework:
    """The framework object for id ``name`` (a Framework is returned as is).

    Raises ValueError naming the known ids for an unknown name."""
    if isinstance(name, Framework):
        return name
    try:
        return _INSTANCES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown framework {name!r}; expected one of {', '.join(REGISTRY)}") from None


def all_frameworks() -> tuple[Framework, ...]:
    """Every framework object, in display order."""
    return tuple(_INSTANCES.values())


def labels() -> dict[str, str]:
    """Framework id -> human label, in display order."""
    return {n: f.label for n, f in _INSTANCES.items()}


def executed() -> dict[str, tuple[str, ...]]:
    """Framework id -> the releases run through the conformance harness (frameworks with any)."""
    return {n: f.executed_releases for n, f in _INSTANCES.items() if f.executed_releases}


__all__ = ["Framework", "Layout", "REGISTRY", "names", "get", "all_frameworks", "labels", "executed"]
