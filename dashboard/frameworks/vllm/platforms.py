"""The GPU families vLLM runs on (read from its installation docs, not executed).

* CUDA: "compute capability 7.5 or higher (e.g., T4, RTX20xx, A100, L4, H100, B200, ...)" -- vLLM's GPU
  installation page from v0.31.0 on (https://docs.vllm.ai/en/v0.31.0/getting_started/installation/gpu/;
  releases up to 0.14 said 7.0). Every NVIDIA card of ``data/gpus.csv`` (SM 7.5 .. 12.0) passes.
* ROCm: "MI200s (gfx90a), MI300 (gfx942), MI350 (gfx950), Radeon RX 7900 series (gfx1100/1101), Radeon
  RX 9000 series (gfx1200/1201), Ryzen AI MAX / AI 300 Series (gfx1151/1150)" (same page, ROCm build).

Pure: imports only :mod:`dashboard.gpus`.
"""

from __future__ import annotations

from dashboard import gpus

VLLM_CUDA_MIN = 7.5
VLLM_ROCM_TARGETS = frozenset({"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1200", "gfx1201",
                               "gfx1150", "gfx1151"})
SOURCE = "https://docs.vllm.ai/en/v0.31.0/getting_started/installation/gpu/ (Requirements)"


def platform_refusal(gpu: gpus.GPU) -> str:
    """'' when vLLM runs on ``gpu``; else why not (message ours)."""
    return gpus.platform_refusal(gpu, label="vLLM", cuda_min=VLLM_CUDA_MIN, rocm_targets=VLLM_ROCM_TARGETS,
                                 source=SOURCE)
