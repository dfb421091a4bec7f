"""The GPU families TensorRT-LLM runs on (read from its docs and maintainers, not executed).

* NVIDIA only: TensorRT-LLM is built on CUDA / TensorRT; its supported-hardware page lists NVIDIA
  architectures only (https://nvidia.github.io/TensorRT-LLM/supported-hardware.html: Blackwell, Hopper,
  Ada Lovelace, Ampere). No ROCm build exists.
* Minimum compute capability 8.0 (Ampere): the same page lists nothing older; Volta was removed in 0.14
  (release notes, NVIDIA/TensorRT-LLM PR #2389) and Turing (T4, SM 7.5) "is no longer a support hardware
  since 0.14 release" (maintainer, https://github.com/NVIDIA/TensorRT-LLM/issues/2620), so the 1.x
  releases the rules model (``v1.0.0``) do not build kernels for SM 7.5.

Pure: imports only :mod:`dashboard.gpus`.
"""

from __future__ import annotations

from dashboard import gpus

#: Lowest CUDA compute capability TensorRT-LLM (>= 0.14, incl. v1.0.0) supports.
TRTLLM_CUDA_MIN = 8.0
#: AMD LLVM targets TensorRT-LLM builds for: none (NVIDIA only).
TRTLLM_ROCM_TARGETS: frozenset[str] = frozenset()
SOURCE = "supported hardware: https://nvidia.github.io/TensorRT-LLM/supported-hardware.html"
#: Where the SM 8.0 minimum is said (cited only when a card is below it, never for an AMD card).
MIN_SOURCE = "Turing dropped in 0.14: https://github.com/NVIDIA/TensorRT-LLM/issues/2620"


def platform_refusal(gpu: gpus.GPU) -> str:
    """'' when TensorRT-LLM runs on ``gpu``; else why not (message ours)."""
    return gpus.platform_refusal(gpu, label="TensorRT-LLM", cuda_min=TRTLLM_CUDA_MIN,
                                 rocm_targets=TRTLLM_ROCM_TARGETS, source=SOURCE,
                                 cuda_min_source=MIN_SOURCE)
