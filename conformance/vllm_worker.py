"""One vLLM worker: builds one model's cells with vLLM's own code and prints one JSON line per cell.

Run by the framework venv's interpreter (``/path/to/venv/bin/python conformance/vllm_worker.py``), not
imported by the project: it depends only on vLLM, torch, the standard library and its stdlib-only sibling
``worker_common.py`` (the protocol and the parameter accounting it shares with ``sglang_worker.py``).

Protocol: the first line on stdin is a JSON job ``{"platform": "cuda-sm90" | "cpu", "models":
[{"config_path", "model_id", "cells": [{"tp", "pp", "dp", "ep", "vision_dp"}, ...]}, ...]}``. Per
model, ``@@MODEL_START "<id>"``, then one line per cell prefixed ``@@CELL `` with a JSON record (see
:func:`run_cell`), then ``@@MODEL_DONE "<id>"``. Anything else on stdout or stderr is vLLM's logging.

Stand-ins (what is simulated, and nothing else):

* **Platform.** ``cuda-sm90``: vLLM's own ``CudaPlatformBase`` with the device queries answered as an
  H100 80 GB (compute capability 9.0) would answer them, so kernel and quantization-method selection
  take the same branches as on the GPUs people rent; no CUDA call is made.
* **Process groups.** ``vllm.distributed.parallel_state``'s TP/PP/DP/EP/DCP/PCP groups are stubs of
  the requested world size, rank 0 (the rank whose errors a user sees first in the log). Every
  ``get_*_world_size``/``rank`` helper reads them, so no module needs patching.
* **Tensors.** The model is constructed under ``torch.device("meta")``: shapes, dtypes and every
  constructor-time check are real; no memory is allocated and no weight is read.
* **Hub.** ``HF_HUB_OFFLINE=1``; the config is a local folder holding only the verbatim config.json.
  ``trust_remote_code`` is off: where vLLM asks for remote code, the cell is ``not_run``.
"""

from __future__ import annotations

import json
import os
import sys
import time

try:  # imported by the project (tests, driver)
    from conformance import worker_common as wc
except ImportError:  # run as a script by the framework venv's interpreter: the sibling file
    import worker_common as wc


def set_worker_env() -> None:
    """The worker process's environment (called by :func:`main` only, so importing this module changes
    nothing in the importing process; ``sglang_worker.set_worker_env`` likewise)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


H100_MEMORY = 85_520_809_984  # nvidia-smi memory.total 81559 MiB x 2^20 (data/gpus.csv H100-80GB)


# ----------------------------------------------------------------------------------------------------
# stand-ins
# ----------------------------------------------------------------------------------------------------


def install_platform(kind: str):
    """Make ``vllm.platforms.current_platform`` the stand-in before any other vLLM module imports it."""
    import vllm.platforms as platforms

    if kind == "cpu":
        from vllm.platforms.cpu import CpuPlatform

        platforms._current_platform = CpuPlatform()
        return platforms._current_platform

    from vllm.platforms.cuda import CudaPlatformBase
    from vllm.platforms.interface import DeviceCapability

    class H100StandIn(CudaPlatformBase):
        """vLLM's CUDA platform, answering device queries as one H100 80 GB (SM 9.0) would."""

        @classmethod
        def get_device_capability(cls, device_id: int = 0):
            return DeviceCapability(major=9, minor=0)

        @classmethod
        def has_device_capability(cls, capability, device_id: int = 0) -> bool:
            cap = cls.get_device_capability(device_id)
            if isinstance(capability, tuple):
                return (cap.major, cap.minor) >= tuple(capability)
            return cap.to_int() >= capability

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return "NVIDIA H100 80GB HBM3"

        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return "GPU-00000000-0000-0000-0000-000000000000"

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return H100_MEMORY

        @classmethod
        def is_fully_connected(cls, physical_device_ids) -> bool:
            return True

        @classmethod
        def current_device(cls):
            # every tensor of the harness lives on the meta device; a model that moves a tower to
            # "the current device" (kimi_k25.py) moves it there
            import torch

            return torch.device("meta")

        @classmethod
        def device_count(cls) -> int:
            # as many GPUs as the layout asks for: the harness judges the model, not the node
            return 4096

        @classmethod
        def log_warnings(cls):
            return None

        @classmethod
        def set_device(cls, device) -> None:
            return None

    platforms._current_platform = H100StandIn()
    return platforms._current_platform


class _StubStream:
    """``torch.cuda.Stream``/``Event`` stand-in: created and stored by layers at construction
    (shared-expert overlap, DeepSeek-V4's aux streams), never used before a forward pass."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __repr__(self) -> str:
        return "<harness stream>"


def install_streams() -> None:
    import torch
    from vllm.utils import torch_utils

    if hasattr(torch_utils, "_aux_stream"):
        torch_utils._aux_stream = _StubStream()
    try:  # torch.nonzero on meta tensors: vLLM 0.22 logs the expert map with it at construction
        import torch.fx.experimental._config as fx_config

        fx_config.meta_nonzero_assume_all_nonzero = True
    except Exception:  # noqa: BLE001
        pass
    try:  # a logging helper that reads the (meta) expert map's values: log a placeholder instead
        from vllm.model_executor.layers.fused_moe import expert_map_manager as emm

        for obj in vars(emm).values():
            if isinstance(obj, type) and "get_compressed_map_string" in vars(obj):
                obj.get_compressed_map_string = lambda self: "<expert map: meta tensors in the harness>"
    except Exception:  # noqa: BLE001
        pass
    torch.cuda.Stream = _StubStream  # type: ignore[misc]
    torch.cuda.Event = _StubStream  # type: ignore[misc]


def inspect_in_process() -> None:
    """vLLM inspects a model class in a subprocess "to avoid initializing CUDA"
    (``registry._run_in_subprocess``); that subprocess would not have the stand-ins. No CUDA exists
    here, so run the same inspection in this process."""
    from vllm.model_executor.models import registry

    registry._run_in_subprocess = lambda fn: fn()


StubProcessGroup = wc.StubProcessGroup


class StubGroup:
    """A ``GroupCoordinator`` stand-in: world size N, this process is rank 0. Construction-time code
    reads only sizes and ranks; any collective would be a harness bug and raises."""

    def __init__(self, name: str, world_size: int) -> None:
        self.unique_name = f"{name}:0"
        self.world_size = int(world_size)
        self.rank_in_group = 0
        self.rank = 0
        self.local_rank = 0
        self.ranks = list(range(self.world_size))
        self.is_first_rank = True
        self.is_last_rank = self.world_size == 1
        self.first_rank = 0
        self.last_rank = self.world_size - 1
        self.next_rank = 1 % self.world_size
        self.prev_rank = (self.world_size - 1) % self.world_size
        self.device_group = StubProcessGroup(self.world_size)
        self.cpu_group = StubProcessGroup(self.world_size)
        self.device_communicator = None
        self.mq_broadcaster = None
        self.use_device_communicator = False
        self.use_custom_op_call = False

    def destroy(self) -> None:  # parallel_state.destroy_model_parallel calls it
        return None

    def __getattr__(self, name: str):
        raise RuntimeError(f"harness: stub process group {self.unique_name!r} has no {name!r}")


def meta_device_mode():
    """A ``TorchFunctionMode`` that puts every tensor on the meta device: the default device of
    factories (as ``torch.device("meta")`` does) and also explicit CUDA devices that some model
    classes pass (``device=current_platform.device_type`` buffers in DeepSeek-V3.2/V4), and
    ``Tensor.to("cuda")``/``.cuda()``. Shapes and dtypes are unchanged; no memory is allocated."""
    return wc.cuda_redirect_mode("meta", default_device=True, any_function=False, pin_memory=False)


def install_groups(tp: int, pp: int, dp: int, ep_world: int) -> None:
    from vllm.distributed import parallel_state as ps

    ps._WORLD = StubGroup("world", tp * pp * dp)
    ps._TP = StubGroup("tp", tp)
    ps._PP = StubGroup("pp", pp)
    ps._DP = StubGroup("dp", dp)
    ps._EP = StubGroup("ep", ep_world)
    ps._DCP = StubGroup("dcp", 1)
    ps._PCP = StubGroup("pcp", 1)
    if hasattr(ps, "_ETP"):
        ps._ETP = ps._TP
    if hasattr(ps, "_EPLB"):
        ps._EPLB = None
    if hasattr(ps, "_NODE_COUNT"):
        ps._NODE_COUNT = 1


# ----------------------------------------------------------------------------------------------------
# one cell
# ----------------------------------------------------------------------------------------------------

def raise_site(exc: BaseException) -> tuple[str, int, str]:
    """``(file, line, function)`` of the innermost frame inside the vllm package (the raise the user
    sees in the traceback), relative to the package root (``vllm/...``); the innermost frame overall
    when no vllm frame is on the stack."""
    return wc.package_raise_site(exc, "vllm")


REMOTE_CODE_MARKERS = ("trust_remote_code", "trust-remote-code", "execute the configuration file",
                       "contains custom code")


def is_remote_code_error(exc: BaseException) -> bool:
    return wc.has_marker(exc, REMOTE_CODE_MARKERS)


def _unwrap(exc: BaseException) -> tuple[BaseException, str]:
    """vLLM's config classes are pydantic dataclasses: a ``ValueError`` raised in a validator reaches
    the user wrapped in a ``pydantic.ValidationError`` ("1 validation error for VllmConfig\n  Value
    error, <message> [type=value_error, ...]"). Return the original exception (its message and raise
    site are what the rules quote) and the wrapper's type name ("" when not wrapped)."""
    if type(exc).__name__ == "ValidationError" and hasattr(exc, "errors"):
        try:
            errs = exc.errors()
            inner = (errs[0].get("ctx") or {}).get("error") if errs else None
            if isinstance(inner, BaseException):
                return inner, type(exc).__name__
        except Exception:  # noqa: BLE001
            pass
    return exc, ""


def vllm_stack(exc: BaseException, keep: int = 8) -> list[str]:
    """The last ``keep`` frames inside the vllm package, innermost last, as ``file:line function``."""
    return wc.package_stack(exc, "vllm", keep, skip_harness=False)


def exc_record(exc: BaseException) -> dict:
    inner, wrapper = _unwrap(exc)
    rec = wc.exc_fields(inner, "vllm", skip_harness=False)
    shown = str(exc)[:wc.MAX_MESSAGE] if wrapper else ""
    return {"exc_type": rec.pop("exc_type"), "wrapper": wrapper, "message": rec.pop("message"), "shown": shown,
            **rec}


HARNESS_MARKERS = (
    ("harness:", "a stub process group was asked for more than sizes and ranks"),
    ("CUDA error", "the code called the CUDA runtime (no GPU here)"),
    ("NVIDIA driver", "the code called the CUDA driver (no GPU here)"),
    ("Torch not compiled with CUDA", "the code called the CUDA runtime (no GPU here)"),
    ("cudaError", "the code called the CUDA runtime (no GPU here)"),
    ("failed to be inspected", "vLLM's model-class inspection failed under the stand-ins"),
    ("meta tensors", "an operation needed real tensor data (meta device)"),
    ("Can't load image processor", "the harness folder holds only config.json (a Hub repo has the "
     "processor files)"),
    ("preprocessor_config.json", "the harness folder holds only config.json (a Hub repo has the "
     "processor files)"),
    ("Cannot copy out of meta tensor", "an operation needed real tensor data (meta device)"),
)


def harness_reason(exc: BaseException) -> str:
    """Why an exception comes from the stand-ins rather than from vLLM's checks ("" = a real refusal)."""
    inner, _ = _unwrap(exc)
    if type(inner).__name__ in ("AcceleratorError", "CudaError"):
        return "the code called the CUDA runtime (no GPU here)"
    return wc.marker_reason(inner, HARNESS_MARKERS)


def engine_config(model_dir: str, cell: dict):
    """What ``vllm serve`` builds before any model code runs (``EngineArgs.create_engine_config``)."""
    from vllm.engine.arg_utils import EngineArgs

    kwargs = dict(
        model=model_dir,
        tensor_parallel_size=cell["tp"],
        pipeline_parallel_size=cell["pp"],
        data_parallel_size=cell["dp"],
        enable_expert_parallel=bool(cell["ep"]),
        load_format="dummy",
        skip_tokenizer_init=True,
        trust_remote_code=False,
        enforce_eager=True,
    )
    if cell.get("vision_dp"):
        kwargs["mm_encoder_tp_mode"] = "data"
    if cell.get("quantization"):
        # an AutoGPTQ/AutoAWQ repo without quantization_config: its README's `--quantization gptq`
        kwargs["quantization"] = cell["quantization"]
    args = EngineArgs(**kwargs)
    return args.create_engine_config()


def kv_specs(vllm_config) -> list[dict]:
    """KV-cache spec per attention layer of rank 0 (as the v1 engine collects them)."""
    out = []
    ctx = getattr(vllm_config.compilation_config, "static_forward_context", {}) or {}
    for name, layer in ctx.items():
        get = getattr(layer, "get_kv_cache_spec", None)
        if get is None:
            continue
        try:
            spec = get(vllm_config)
        except Exception as e:  # noqa: BLE001 - a spec we cannot read is recorded, not fatal
            out.append({"layer": name, "error": f"{type(e).__name__}: {e}"[:300]})
            continue
        if spec is None:
            continue
        rec = {"layer": name, "spec": type(spec).__name__}
        for k in ("block_size", "num_kv_heads", "head_size", "head_size_v", "sliding_window",
                  "attention_chunk_size", "page_size_bytes", "page_size_padded"):
            v = getattr(spec, k, None)
            if isinstance(v, (int, float)) or v is None:
                rec[k] = v
        dt = getattr(spec, "dtype", None)
        rec["dtype"] = str(dt).replace("torch.", "") if dt is not None else None
        try:
            if rec.get("page_size_bytes") and rec.get("block_size"):
                rec["bytes_per_token"] = rec["page_size_bytes"] / rec["block_size"]
        except Exception:  # noqa: BLE001
            pass
        out.append(rec)
    return out


def run_cell(model_dir: str, cell: dict) -> dict:
    """Build one cell; returns the outcome record (never raises)."""
    import torch

    rec = dict(cell)
    t0 = time.perf_counter()
    ep_world = cell["tp"] * cell["dp"] if cell["ep"] else 1
    # 1. engine start: the config checks vllm serve runs before any worker starts
    try:
        vllm_config = engine_config(model_dir, cell)
    except Exception as e:  # noqa: BLE001
        # the config names remote code (auto_map) and the installed transformers cannot read it without
        # running that code: the user would need --trust-remote-code, which we never pass
        return wc.record_failure(
            rec, e, "refused_engine", t0, exc_record=exc_record, harness_reason=harness_reason,
            remote_code=lambda exc, r: is_remote_code_error(exc) or (
                cell.get("auto_map") and "transformers_utils/config.py" in r["file"]))
    # 2. model construction on rank 0 under stub groups, tensors on the meta device
    try:
        from vllm.config import set_current_vllm_config
        from vllm.model_executor.model_loader.utils import initialize_model
        from vllm.utils.torch_utils import set_default_torch_dtype
    except Exception as e:  # noqa: BLE001
        rec.update(exc_record(e))
        rec["outcome"] = "harness_error"
        rec["reason"] = "import of vLLM's model loader failed"
        return rec
    install_groups(cell["tp"], cell["pp"], cell["dp"], ep_world)
    # the model runner initializes the workspace manager before loading the model (GPUModelRunner)
    try:
        from vllm.v1.worker import workspace

        if getattr(workspace, "_manager", None) is None:
            workspace.init_workspace_manager(torch.device("meta"))
    except Exception:  # noqa: BLE001 - releases without it, or a manager that needs a real device
        pass
    # the device every layer allocates on: meta (the Transformers-backend wrapper reads it from here)
    try:
        vllm_config.device_config.device = torch.device("meta")
    except Exception:  # noqa: BLE001
        pass
    try:
        with set_current_vllm_config(vllm_config):
            with set_default_torch_dtype(vllm_config.model_config.dtype), meta_device_mode():
                model = initialize_model(vllm_config=vllm_config)
    except Exception as e:  # noqa: BLE001
        return wc.record_failure(rec, e, "refused_build", t0, exc_record=exc_record, harness_reason=harness_reason)
    wc.add_params(rec, model, cell)
    try:
        rec["kv_cache"] = kv_specs(vllm_config)
    except Exception as e:  # noqa: BLE001
        rec["kv_cache_error"] = f"{type(e).__name__}: {e}"[:300]
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    del model
    return rec


def _auto_map(raw: bytes) -> dict:
    """``auto_map``: whether the config names remote code (:func:`run_cell` tells a remote-code refusal by it)."""
    try:
        return {"auto_map": bool(json.loads(raw).get("auto_map"))}
    except Exception:  # noqa: BLE001
        return {"auto_map": False}


def run_model(job_model: dict, platform_kind: str, version: str, job: dict | None = None) -> None:
    """Every cell of one model of the job (``job``, the whole job, is not read)."""
    wc.run_in_model_folder(job_model, platform_kind, version, run_cell, exc_record, cell_extra=_auto_map)


def registry(version: str) -> dict:
    """The architectures vLLM's model registry knows (``python -m conformance run`` writes them)."""
    from vllm.model_executor.models import registry as reg

    return {"version": version,
            # insertion order: vLLM prints this dict_keys view in its "not supported" message
            "architectures": list(reg.ModelRegistry.get_supported_archs()),
            "previously_supported": dict(getattr(reg, "_PREVIOUSLY_SUPPORTED_MODELS", {})),
            "out_of_tree": dict(getattr(reg, "_OOT_SUPPORTED_MODELS", {})),
            # config model_types the release can read without remote code: its own config
            # classes plus those of the transformers it installs
            "model_types": wc.config_model_types("vllm.transformers_utils")}


def setup(platform_kind: str) -> str:
    """Install the platform stand-in, import vLLM, then the in-process inspection and stream stand-ins;
    returns vLLM's version."""
    install_platform(platform_kind)
    import vllm

    inspect_in_process()
    install_streams()
    return vllm.__version__


def main() -> int:
    set_worker_env()
    return wc.serve(setup, exc_record, "vLLM import or platform stand-in failed", registry, run_model)


if __name__ == "__main__":
    sys.exit(main())
