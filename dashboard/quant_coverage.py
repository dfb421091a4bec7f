"""Moved to :mod:`dashboard.catalog.quant_coverage` (matching) and :mod:`dashboard.catalog.quant_arch`
(vLLM's module names per architecture, the layer plan); this module keeps the old import path."""

from dashboard.catalog.quant_arch import (
    ARCH_NAMES,
    FORMATS,
    MAX_LAYERS,
    MAX_LIST,
    MAX_NAME,
    MAX_WORK,
    PARTS,
    ArchNames,
    layer_plan,
)
from dashboard.catalog.quant_coverage import coverage

__all__ = ["ARCH_NAMES", "FORMATS", "MAX_LAYERS", "MAX_LIST", "MAX_NAME", "MAX_WORK", "PARTS", "ArchNames", "coverage",
           "layer_plan"]
