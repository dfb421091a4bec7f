"""GPUs and the hardware dtype rules as the planner uses them: thin names over :mod:`dashboard.gpus` (the
GPU table, bf16 / FP8 / NVFP4 support by compute capability) and the frameworks' own dtype rules
(vLLM's ``--dtype auto`` fallback: :mod:`dashboard.frameworks.vllm.dtypes`)."""

from __future__ import annotations

from typing import Mapping

from dashboard import frameworks, gpus
from dashboard.frameworks.vllm import dtypes as vllm_dtypes

#: Hardware dtype rules: :mod:`dashboard.gpus` (re-exported here).
DTYPE_MIN_CAPABILITY = gpus.DTYPE_MIN_CAPABILITY
AMD_DTYPES = gpus.AMD_DTYPES

#: One row of the GPU table: :class:`dashboard.gpus.GPU`.
GPU = gpus.GPU

#: vLLM model types that refuse float16 (:data:`dashboard.frameworks.vllm.dtypes.VLLM_NO_FP16_MODEL_TYPES`).
VLLM_NO_FP16_MODEL_TYPES = vllm_dtypes.VLLM_NO_FP16_MODEL_TYPES


def gpu_info(gpu_type: str | Mapping) -> GPU:
    """The GPU table row of ``gpu_type`` (id, case-insensitive, e.g. ``"H100-80GB"``) as a :class:`GPU`
    (:func:`dashboard.gpus.gpu_info`).

    Raises ``ValueError`` naming the known ids for an unknown GPU."""
    return gpus.gpu_info(gpu_type)


def _gpu_info(gpu_type: str | Mapping) -> GPU:
    return gpus.gpu_from_row(gpu_type)


def dtype_check_note(gpu: GPU) -> str:
    """'' when the GPU table gives ``gpu``'s compute capability; else the note that the dtype check was
    skipped (:func:`dashboard.gpus.dtype_check_note`)."""
    return gpus.dtype_check_note(gpu)


def _cc_below(gpu: GPU, major_minor: float) -> bool:
    return gpus.cc_below(gpu, major_minor)


def vllm_auto_dtype(gpu: GPU, weight_kind: str, model_type: str, explicit: bool) -> tuple[str | None, str]:
    """What vLLM's ``--dtype auto`` runs a bfloat16 checkpoint in on a GPU without bfloat16:
    ``(weight dtype, note)``, or ``(None, "")`` when nothing changes
    (:func:`dashboard.frameworks.vllm.dtypes.vllm_auto_dtype`)."""
    return vllm_dtypes.vllm_auto_dtype(gpu, weight_kind, model_type, explicit)


def _dtype_refusal(gpu: GPU, weight_kind: str, kv_dtype: str, framework: str, *, explicit: bool = True) -> str:
    """The refusal for a weight / KV dtype the GPU cannot run natively ('' when it can or the table does
    not say): the framework's own rule (``Framework.dtype_refusal``; the hardware facts are
    :mod:`dashboard.gpus`)."""
    return frameworks.get(framework).dtype_refusal(gpu, weight_kind, kv_dtype, explicit=explicit)


#: Public names of the two helpers (other planner modules use them).
cc_below = _cc_below
dtype_refusal = _dtype_refusal


def rules_platform(gpu_type: str) -> dict:
    """The keyword arguments that judge the rules on ``gpu_type`` (:func:`dashboard.gpus.judged_on`): a card given
    by its memory only (``other:<GiB>``) is judged as the default platform (an H100)."""
    return gpus.judged_on(gpu_type)
