"""GPUs and the hardware dtype rules of the planner: the GPU table row, bf16 / FP8 / NVFP4 support by
compute capability, and vLLM's ``--dtype auto`` fallback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import pandas as pd

from dashboard import memory


#: Minimum compute capability for a dtype to run natively (NVIDIA ``major.minor``).
DTYPE_MIN_CAPABILITY: dict[str, float] = {"bf16": 8.0, "fp8": 8.9, "nvfp4": 10.0}

#: AMD LLVM targets and the dtypes they run natively (gfx942 = MI300X / MI325X, gfx950 = MI355X).
AMD_DTYPES: dict[str, frozenset[str]] = {
    "gfx90a": frozenset({"bf16"}),
    "gfx942": frozenset({"bf16", "fp8"}),
    "gfx950": frozenset({"bf16", "fp8"}),
}


@dataclass(frozen=True)
class GPU:
    """One row of ``data/gpus.csv`` the planner needs (see :func:`dashboard.memory.load_gpus`)."""

    gpu: str
    name: str
    vendor: str
    memory_bytes: int
    compute_capability: str
    gpus_per_node: int | None

    def runs(self, dtype: str) -> bool | None:
        """Whether the GPU runs ``dtype`` (bf16 / fp8 / nvfp4) natively; None when the table does not say."""
        cc = (self.compute_capability or "").strip().lower()
        if not cc:
            return None
        if cc.startswith("gfx"):
            return dtype in AMD_DTYPES.get(cc, frozenset())
        try:
            v = float(cc)
        except ValueError:
            return None
        return v >= DTYPE_MIN_CAPABILITY[dtype]


def gpu_info(gpu_type: str | Mapping) -> GPU:
    """The GPU table row of ``gpu_type`` (id, case-insensitive, e.g. ``"H100-80GB"``) as a :class:`GPU`.

    Raises ``ValueError`` naming the known ids for an unknown GPU."""
    if isinstance(gpu_type, str):
        key = (str(memory.GPUS_CSV), gpu_type.strip().lower())
        hit = _GPU_CACHE.get(key)
        if hit is None:
            hit = _gpu_info(gpu_type)
            _GPU_CACHE[key] = hit
        return hit
    return _gpu_info(gpu_type)


_GPU_CACHE: dict[tuple, GPU] = {}


def _gpu_info(gpu_type: str | Mapping) -> GPU:
    if isinstance(gpu_type, Mapping) or isinstance(gpu_type, pd.Series):
        row = dict(gpu_type)
    else:
        row = memory.gpu_row(gpu_type)  # a table id or "other:<GiB>"; ValueError naming both otherwise
    gpn = row.get("gpus_per_node")
    gpn = None if gpn is None or pd.isna(gpn) else int(gpn)
    cc = row.get("compute_capability")
    return GPU(str(row["gpu"]), str(row.get("name", row["gpu"])), str(row.get("vendor", "")),
               int(row["memory_bytes"]), "" if cc is None or pd.isna(cc) else str(cc), gpn)


def dtype_check_note(gpu: GPU) -> str:
    """'' when the GPU table gives ``gpu``'s compute capability; else the note that the dtype check was
    skipped (a card given by its memory, ``"other:<GiB>"``, has no known capability: nothing is refused)."""
    cc = (gpu.compute_capability or "").strip().lower()
    known = cc.startswith("gfx") and cc in AMD_DTYPES
    if not known and not cc.startswith("gfx"):
        try:
            float(cc)
            known = True
        except ValueError:
            known = False
    if known:
        return ""
    return (f"dtype check skipped: the compute capability of {gpu.gpu} is unknown, so bf16 / FP8 / NVFP4 support "
            "was not checked (nothing refused for its dtype).")


#: vLLM 0.33.0 model types that refuse float16 (``_FLOAT16_NOT_SUPPORTED_MODELS``,
#: ``vllm/config/model.py:2398-2403``): on a GPU without bfloat16 ``--dtype auto`` falls back to float32.
VLLM_NO_FP16_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})


def _cc_below(gpu: GPU, major_minor: float) -> bool:
    cc = (gpu.compute_capability or "").strip()
    try:
        return float(cc) < major_minor
    except ValueError:  # AMD (gfx...) or unknown: no CUDA capability to compare
        return False


def vllm_auto_dtype(gpu: GPU, weight_kind: str, model_type: str, explicit: bool) -> tuple[str | None, str]:
    """What vLLM's ``--dtype auto`` (the launch commands' default) runs a bfloat16 checkpoint in on a GPU
    without bfloat16 (compute capability below 8.0): ``(weight dtype, note)``, or ``(None, "")`` when
    nothing changes. vLLM 0.33.0 ``_resolve_auto_dtype`` (``vllm/config/model.py:2423-2462``) takes the
    platform's first supported dtype -- float16 on Pascal to Turing (``platforms/cuda.py:257-266``), float32
    for the model types that refuse float16 -- and logs "Your device ... doesn't support torch.bfloat16.
    Falling back to ... for compatibility." (``model.py:2458``); only an explicit ``--dtype bfloat16``
    (``explicit``: the plan's ``weight_dtype`` was given) raises "Bfloat16 is only supported ..."."""
    if explicit or weight_kind != "bf16" or not _cc_below(gpu, 8.0):
        return None, ""
    to = "fp32" if str(model_type).lower() in VLLM_NO_FP16_MODEL_TYPES else "fp16"
    name = {"fp16": "torch.float16", "fp32": "torch.float32"}[to]
    return to, (f"vLLM runs this bfloat16 checkpoint in {name} on {gpu.name} (compute capability "
                f"{gpu.compute_capability}): with --dtype auto it logs \"Your device ... doesn't support "
                f"torch.bfloat16. Falling back to {name} for compatibility.\" (vllm/config/model.py:2458); "
                "weights and KV cache are sized in that dtype.")


def _dtype_refusal(gpu: GPU, weight_kind: str, kv_dtype: str, framework: str, *, explicit: bool = True) -> str:
    """The refusal for a weight / KV dtype the GPU cannot run natively ('' when it can or the table does
    not say). ``explicit``: the weight dtype was asked for (vLLM ``--dtype``); otherwise vLLM's ``--dtype
    auto`` casts a bfloat16 checkpoint to a dtype the GPU has (:func:`vllm_auto_dtype`) and its KV cache
    (``--kv-cache-dtype auto``) follows, so neither is refused."""
    needs: list[tuple[str, str]] = []
    vllm_auto = framework == "vllm" and not explicit
    if weight_kind in ("bf16", "fp8", "nvfp4") and not (vllm_auto and weight_kind == "bf16"):
        needs.append((weight_kind, "weights"))
    kv = str(kv_dtype).lower()
    kv_kind = "fp8" if kv.startswith("fp8") else ("bf16" if kv in ("bf16", "bfloat16") else "")
    if kv_kind and not (framework == "vllm" and kv_kind == "bf16"):  # vLLM: --kv-cache-dtype auto
        needs.append((kv_kind, "KV cache"))
    cc = gpu.compute_capability or "unknown"
    for dtype, what in needs:
        ok = gpu.runs(dtype)
        if ok is None or ok:
            continue
        if dtype == "bf16" and framework == "vllm" and not cc.startswith("gfx"):
            return ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                    f"Your {gpu.name} GPU has compute capability {cc}. You can use float16 instead by "
                    "explicitly setting the `dtype` flag in CLI, for example: --dtype=half.")
        need = {"bf16": "compute capability 8.0 (Ampere)", "fp8": "compute capability 8.9 (Ada / Hopper)",
                "nvfp4": "compute capability 10.0 (Blackwell)"}[dtype]
        arch = f"LLVM target {cc}" if cc.startswith("gfx") else f"compute capability {cc}"
        return (f"{gpu.name} ({arch}) cannot run {dtype.upper()} {what} natively: {dtype.upper()} needs "
                f"{need} (planner rule from the GPU table, not the framework's message).")
    return ""


#: Public names of the two helpers other planner modules use (the private names stay as they were, for the
#: move of this module's GPU / dtype functions to ``dashboard/gpus.py``).
cc_below = _cc_below
dtype_refusal = _dtype_refusal
