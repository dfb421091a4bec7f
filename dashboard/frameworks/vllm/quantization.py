"""vLLM's quantization method as the engine resolves it, and its minimum compute capability (vLLM 0.33.0).

``VllmConfig._get_quantization_config`` (``vllm/config/vllm.py:916-935``) refuses a GPU whose capability is
below the method's ``get_min_capability()`` with ``ValueError("The quantization method <m> is not supported for
the current GPU. Minimum capability: <min>. Current capability: <cc>.")``. ``<m>`` is ``model_config.quantization``
after the model-specific rewrites and the methods' overrides (:func:`method`, ported); ``<min>`` is executed
(``data/conformance/attention/vllm-0.33.0-quantization.json``, every registered method's answer). Pure.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Mapping

SITE = "vllm/config/vllm.py:931"
DATA = Path(__file__).resolve().parents[3] / "data" / "conformance" / "attention" / "vllm-0.33.0-quantization.json"


@functools.lru_cache(maxsize=1)
def min_capabilities() -> dict[str, int]:
    """Method name -> ``get_min_capability()`` (an int, ``major * 10 + minor``), as executed."""
    if not DATA.is_file():
        return {}
    return {k: v for k, v in json.loads(DATA.read_text())["quantization"].items() if isinstance(v, int)}


def _s(v: Any) -> str:
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def method(rec: Mapping) -> str | None:
    """``model_config.quantization`` for a catalog record (None: not quantized / unknown):

    * Kimi-K3's compressed-tensors ``mxfp4-pack-quantized`` -> ``mxfp4`` (``models/config.py:492-522``);
    * gpt-oss's ``mxfp4`` -> ``gpt_oss_mxfp4`` (``models/config.py:525-531``);
    * ModelOpt by ``quant_algo`` (the overrides ``modelopt.py:456`` FP8 -> ``modelopt``, ``:779`` (NV)FP4 ->
      ``modelopt_fp4``, ``:1239`` MXFP8 -> ``modelopt_mxfp8``, ``:1661`` mixed precision -> ``modelopt_mixed``);
    * else the checkpoint's ``quant_method`` (the AWQ/GPTQ Marlin overrides change no minimum that
      matters here: 75 and 60)."""
    qm = _s(rec.get("quant_method")).lower()
    if not qm:
        return None
    arch = _s(rec.get("architectures")).split(",")[0].strip()
    fmt = _s(rec.get("quant_format")).lower()
    if arch in ("KimiK3ForConditionalGeneration", "KimiK3MTPModel") and qm == "compressed-tensors" \
            and fmt == "mxfp4-pack-quantized":
        return "mxfp4"
    if arch == "GptOssForCausalLM" and qm == "mxfp4":
        return "gpt_oss_mxfp4"
    if qm == "modelopt":
        if "mixed" in fmt:
            return "modelopt_mixed"
        if "mxfp8" in fmt:
            return "modelopt_mxfp8"
        if "fp4" in fmt:
            return "modelopt_fp4"
        if "fp8" in fmt:
            return "modelopt"
        return None
    return qm


def refusal(rec: Mapping, capability: tuple[int, int]) -> str:
    """vLLM's message when the resolved method needs a newer GPU than ``capability`` ('' when it runs, or the
    method or its minimum is unknown)."""
    m = method(rec)
    need = min_capabilities().get(m or "")
    cc = capability[0] * 10 + capability[1]
    if need is None or cc >= need:
        return ""
    return (f"The quantization method {m} is not supported for the current GPU. Minimum capability: {need}. "
            f"Current capability: {cc}.")
