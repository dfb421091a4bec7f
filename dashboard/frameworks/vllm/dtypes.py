"""vLLM's own dtype behaviour on a GPU (the hardware facts are :mod:`dashboard.gpus`): ``--dtype auto`` casts a
bfloat16 checkpoint to a dtype the GPU has, ``--kv-cache-dtype auto`` follows the model dtype, and an explicit
``--dtype bfloat16`` on a GPU below compute capability 8.0 fails with vLLM's own message.

Sources: vLLM 0.33.0 ``_resolve_auto_dtype`` (``vllm/config/model.py:2423-2462``), ``platforms/cuda.py:257-266``,
``_FLOAT16_NOT_SUPPORTED_MODELS`` (``vllm/config/model.py:2398-2403``). Pure (imports only :mod:`dashboard.gpus`).
"""

from __future__ import annotations

from dashboard import gpus

#: vLLM 0.33.0 model types that refuse float16 (``_FLOAT16_NOT_SUPPORTED_MODELS``,
#: ``vllm/config/model.py:2398-2403``): on a GPU without bfloat16 ``--dtype auto`` falls back to float32.
VLLM_NO_FP16_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})


def vllm_auto_dtype(gpu: gpus.GPU, weight_kind: str, model_type: str, explicit: bool) -> tuple[str | None, str]:
    """What vLLM's ``--dtype auto`` (the launch commands' default) runs a bfloat16 checkpoint in on a GPU
    without bfloat16 (compute capability below 8.0, :func:`dashboard.gpus.lacks_bf16`): ``(weight dtype, note)``,
    or ``(None, "")`` when nothing changes. vLLM 0.33.0 ``_resolve_auto_dtype`` (``vllm/config/model.py:2423-2462``)
    takes the platform's first supported dtype -- float16 on Pascal to Turing (``platforms/cuda.py:257-266``),
    float32 for the model types that refuse float16 -- and logs "Your device ... doesn't support torch.bfloat16.
    Falling back to ... for compatibility." (``model.py:2458``); only an explicit ``--dtype bfloat16``
    (``explicit``: the plan's ``weight_dtype`` was given) raises "Bfloat16 is only supported ..."."""
    if explicit or weight_kind != "bf16" or not gpus.lacks_bf16(gpu):
        return None, ""
    to = "fp32" if str(model_type).lower() in VLLM_NO_FP16_MODEL_TYPES else "fp16"
    name = {"fp16": "torch.float16", "fp32": "torch.float32"}[to]
    return to, (f"vLLM runs this bfloat16 checkpoint in {name} on {gpu.name} (compute capability "
                f"{gpu.compute_capability}): with --dtype auto it logs \"Your device ... doesn't support "
                f"torch.bfloat16. Falling back to {name} for compatibility.\" (vllm/config/model.py:2458); "
                "weights and KV cache are sized in that dtype.")


def dtype_refusal(gpu: gpus.GPU, weight_kind: str, kv_dtype: str, *, explicit: bool = True) -> str:
    """The refusal for a weight / KV dtype vLLM cannot run on ``gpu`` ('' when it can or the table does not say).

    ``explicit``: the weight dtype was asked for (``--dtype``); otherwise ``--dtype auto`` casts a bfloat16
    checkpoint to a dtype the GPU has (:func:`vllm_auto_dtype`), so bf16 weights are not refused; a bf16 KV cache
    never is (``--kv-cache-dtype auto`` follows the model dtype). FP8 / NVFP4 weights on a CUDA GPU are not
    refused here: vLLM runs them through Marlin below native support, and the quantization method's executed
    minimum capability decides (rule ``vllm.quantization.min_capability``). A bf16 refusal on a CUDA GPU is vLLM's
    own message; the rest are :func:`dashboard.gpus.dtype_refusal_message`."""
    cc0 = gpu.compute_capability or ""
    needs = [(d, what) for d, what in gpus.dtype_needs(weight_kind, kv_dtype)
             if (d != "bf16" or (what == "weights" and explicit))
             # FP8 / NVFP4 *weights* on a CUDA GPU: vLLM serves them below native support through its Marlin
             # weight-only kernels; the quantization method's own minimum capability decides (the executed rule
             # vllm.quantization.min_capability: fp8 75, modelopt_fp4 75, modelopt 80, mxfp4 80), not the
             # hardware table
             and not (what == "weights" and d in ("fp8", "nvfp4") and cc0 and not cc0.startswith("gfx"))]
    hit = gpus.first_unsupported(gpu, needs)
    if hit is None:
        return ""
    dtype, what = hit
    cc = gpu.compute_capability or "unknown"
    if dtype == "bf16" and not cc.startswith("gfx"):
        return ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                f"Your {gpu.name} GPU has compute capability {cc}. You can use float16 instead by "
                "explicitly setting the `dtype` flag in CLI, for example: --dtype=half.")
    return gpus.dtype_refusal_message(gpu, dtype, what)
