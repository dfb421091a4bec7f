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

import contextlib
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

#: The device the ``cuda-sm90`` stand-in answers as when a job carries no ``device`` descriptor (the tables
#: before issue 23; the driver now always sends one, built from data/gpus.csv by ``driver.device_descriptor``).
H100_DEVICE = {"platform": "cuda-sm90", "vendor": "nvidia", "gpu": "H100-80GB", "name": "NVIDIA H100 80GB HBM3",
               "capability": [9, 0], "total_memory": H100_MEMORY, "arch": "", "compute_units": 132}

#: Keys a device descriptor must carry (see :func:`check_device`).
DEVICE_KEYS = ("platform", "vendor", "name", "capability", "total_memory")


# ----------------------------------------------------------------------------------------------------
# stand-ins
# ----------------------------------------------------------------------------------------------------


def check_device(kind: str, device: dict | None) -> dict:
    """The device descriptor the stand-in answers as: ``device`` (validated: the keys of :data:`DEVICE_KEYS`,
    ``capability`` two non-negative ints, ``total_memory`` a positive int of bytes, ROCm an ``arch`` such as
    ``gfx942``, ``platform`` equal to ``kind``), or :data:`H100_DEVICE` for ``cuda-sm90`` without one.
    Raises ``ValueError`` naming what is wrong."""
    if device is None:
        if kind == "cuda-sm90":
            return dict(H100_DEVICE)
        raise ValueError(f"platform {kind!r}: the job carries no device descriptor (the driver sends one per "
                         "platform, conformance.driver.device_descriptor)")
    missing = [k for k in DEVICE_KEYS if k not in device]
    if missing:
        raise ValueError(f"platform {kind!r}: device descriptor lacks {', '.join(missing)}")
    if device["platform"] != kind:
        raise ValueError(f"device descriptor is for {device['platform']!r}, the job runs {kind!r}")
    cap = device["capability"]
    if (not isinstance(cap, (list, tuple)) or len(cap) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in cap)):
        raise ValueError(f"platform {kind!r}: capability must be [major, minor] integers, got {cap!r}")
    mem = device["total_memory"]
    if not isinstance(mem, int) or isinstance(mem, bool) or mem <= 0:
        raise ValueError(f"platform {kind!r}: total_memory must be a positive number of bytes, got {mem!r}")
    if device["vendor"] == "amd" and not str(device.get("arch") or "").startswith("gfx"):
        raise ValueError(f"platform {kind!r}: an AMD device needs its gcnArchName (arch 'gfx...'), "
                         f"got {device.get('arch')!r}")
    if device["vendor"] not in ("nvidia", "amd"):
        raise ValueError(f"platform {kind!r}: vendor must be nvidia or amd, got {device['vendor']!r}")
    return dict(device)


def _device_answers(base, device: dict):
    """The class methods that answer device queries as ``device`` would, on top of vLLM's platform class
    ``base`` (``CudaPlatformBase`` / ``RocmPlatform``): capability, name, uuid, total memory, full
    connectivity, device count, current device (meta) and a no-op ``set_device``. Everything else (FP8/FP4
    support, dtypes, kernel and attention-backend selection) is vLLM's own code reading these answers."""
    from vllm.platforms.interface import DeviceCapability

    major, minor = (int(x) for x in device["capability"])
    name = str(device["name"])
    memory = int(device["total_memory"])

    class StandIn(base):
        __doc__ = (f"vLLM's {base.__name__}, answering device queries as one {name} "
                   f"(capability {major}.{minor}{', ' + device['arch'] if device.get('arch') else ''}, "
                   f"{memory} B) would.")

        @classmethod
        def get_device_capability(cls, device_id: int = 0):
            return DeviceCapability(major=major, minor=minor)

        @classmethod
        def has_device_capability(cls, capability, device_id: int = 0) -> bool:
            cap = cls.get_device_capability(device_id)
            if isinstance(capability, tuple):
                return (cap.major, cap.minor) >= tuple(capability)
            return cap.to_int() >= capability

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return name

        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return "GPU-00000000-0000-0000-0000-000000000000"

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return memory

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

    StandIn.__name__ = StandIn.__qualname__ = f"{base.__name__}StandIn"
    return StandIn


def install_platform(kind: str, device: dict | None = None):
    """Make ``vllm.platforms.current_platform`` the stand-in for platform ``kind`` before any other vLLM
    module imports it: ``"cpu"`` (vLLM's ``CpuPlatform``), a CUDA platform (``cuda-sm75`` ... ``cuda-sm120``:
    a subclass of vLLM's ``CudaPlatformBase``) or a ROCm one (``rocm-gfx942``, ``rocm-gfx950``: see
    :func:`install_rocm`), answering device queries as ``device`` (:func:`check_device`) would."""
    if kind == "cpu":
        import vllm.platforms as platforms
        from vllm.platforms.cpu import CpuPlatform

        platforms._current_platform = CpuPlatform()
        return platforms._current_platform
    device = check_device(kind, device)
    if device["vendor"] == "amd":
        return install_rocm(device)
    import vllm.platforms as platforms
    from vllm.platforms.cuda import CudaPlatformBase

    platforms._current_platform = _device_answers(CudaPlatformBase, device)()
    install_torch_device_queries(device)
    return platforms._current_platform


class DeviceProperties:
    """``torch.cuda.get_device_properties()`` as the stand-in GPU answers it: ``name``, ``major``, ``minor``,
    ``total_memory`` (bytes), ``multi_processor_count`` (SMs / CUs), ``gcnArchName`` (ROCm; "" on CUDA),
    ``is_integrated`` (False: every platform card is a discrete GPU). Any other property raises a
    ``harness:`` error (the cell becomes a ``harness_error``), never a made-up value."""

    def __init__(self, device: dict) -> None:
        self.name = str(device["name"])
        self.major, self.minor = (int(x) for x in device["capability"])
        self.total_memory = int(device["total_memory"])
        self.gcnArchName = str(device.get("arch") or "")
        self.is_integrated = False
        cu = int(device.get("compute_units") or 0)
        if cu:
            self.multi_processor_count = cu

    def __getattr__(self, name: str):
        raise RuntimeError(f"harness: the stand-in device has no property {name!r}")


def install_torch_device_queries(device: dict) -> None:
    """``torch.cuda.get_device_capability`` / ``get_device_name`` / ``get_device_properties`` answer as
    ``device`` (code that asks torch rather than ``current_platform``: FlashInfer's SM count, Marlin's
    capability). Nothing else of ``torch.cuda`` changes: a CUDA call still fails as with no GPU."""
    import torch

    props = DeviceProperties(device)
    torch.cuda.get_device_capability = lambda device=None: (props.major, props.minor)
    torch.cuda.get_device_name = lambda device=None: props.name
    torch.cuda.get_device_properties = lambda device=None: props


def fake_amdsmi(device: dict):
    """An ``amdsmi`` module answering the queries vLLM's ROCm platform makes (``vllm/platforms/rocm.py``) as
    ``device`` would: processor handles (4096, as ``device_count``), ASIC info (``target_graphics_version`` =
    the gcnArchName, ``market_name`` = the name), VRAM total (bytes), a 1-hop XGMI link between any two GPUs,
    NUMA node 0 and a zero UUID. ``amdsmi_init``/``amdsmi_shut_down`` do nothing."""
    import types

    mod = types.ModuleType("amdsmi")
    mod.__doc__ = "harness stand-in for AMD SMI (conformance/vllm_worker.py fake_amdsmi)"

    class AmdSmiException(Exception):
        pass

    class AmdSmiMemoryType:
        VRAM = 0
        VIS_VRAM = 1
        GTT = 2

    mod.AmdSmiException = AmdSmiException
    mod.AmdSmiMemoryType = AmdSmiMemoryType
    mod.amdsmi_init = lambda *a, **k: None
    mod.amdsmi_shut_down = lambda *a, **k: None
    mod.amdsmi_get_processor_handles = lambda: list(range(4096))
    mod.amdsmi_get_gpu_asic_info = lambda h: {"target_graphics_version": str(device["arch"]),
                                              "market_name": str(device["name"]), "device_id": "",
                                              "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]"}
    mod.amdsmi_get_gpu_memory_total = lambda h, kind=0: int(device["total_memory"])
    mod.amdsmi_get_gpu_device_uuid = lambda h: "00000000-0000-0000-0000-000000000000"
    mod.amdsmi_topo_get_link_type = lambda a, b: {"hops": 1, "type": 2}
    mod.amdsmi_topo_get_numa_node_number = lambda h: 0
    return mod


#: Why the ROCm platforms are not run (every rocm-* cell is a ``harness_error`` with this reason). Found by the
#: probe below on vLLM 0.33.0 (data/conformance/README.md, "Platforms").
ROCM_UNFAITHFUL = (
    "ROCm stand-in not faithful: the venv holds vLLM's CUDA build (no vllm._rocm_C kernels, no AITER "
    "package, and Triton finds no HIP driver, so vLLM swaps in its Triton placeholder); under vLLM's own "
    "RocmPlatform (amdsmi answered as the GPU) every dense model then fails at "
    "v1/attention/ops/turboquant_soa/triton_turboquant_decode_v2.py:38 and MLA models find no MLA prefill "
    "backend (AITER FA not installed), which a real ROCm install does not do; needs a ROCm build of vLLM")


def install_rocm(device: dict):
    """ROCm: vLLM's own ``RocmPlatform`` (``vllm/platforms/rocm.py``), its device queries answered as
    ``device``: the arch it reads once at import through ``amdsmi`` (:func:`fake_amdsmi`; ``on_gfx9``,
    ``on_mi3xx``, ``is_fp8_fnuz``, ``supports_mx`` follow from it), ``torch.version.hip`` (a ROCm 7.0 build),
    and capability, name, memory and device count as on CUDA (:func:`_device_answers`). AITER stays at
    vLLM's default (``VLLM_ROCM_USE_AITER`` unset: off).

    Not faithful with a CUDA build of vLLM (:data:`ROCM_UNFAITHFUL`): raises a ``harness:`` error, so every
    cell is a ``harness_error`` with that reason, unless the descriptor asks ``"probe_unfaithful": true``
    (a hand-made job, to see what the stand-in does; its records must not go into a table)."""
    if not device.get("probe_unfaithful"):
        raise RuntimeError(f"harness: {ROCM_UNFAITHFUL}")
    import sys as _sys

    import torch

    _sys.modules["amdsmi"] = fake_amdsmi(device)
    torch.version.hip = "7.0.51831"
    import vllm.platforms as platforms
    from vllm.platforms.rocm import RocmPlatform

    platforms._current_platform = _device_answers(RocmPlatform, device)()
    install_torch_device_queries(device)
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
    # one server selects attention backends for one model: vLLM caches each selection per process
    # (vllm/v1/attention/selector.py @cache _cached_get_attn_backend), and some backends' checks read the
    # model config (qk_nope_head_dim, index_topk), so a cached answer from another model must not be reused
    try:
        from vllm.v1.attention import selector as _selector

        _selector._cached_get_attn_backend.cache_clear()
    except Exception:  # noqa: BLE001 - releases without the cache
        pass
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


@contextlib.contextmanager
def cuda_allocations_on_meta():
    """``torch.empty/zeros/ones/full(..., device="cuda")`` give meta tensors inside the block:
    ``mla/cutlass_mla.py:99`` allocates a 128 MB CUDA workspace at import, which the GPU-less stand-in cannot (the
    harness allocates nothing). Nothing else changes; the functions are restored on exit."""
    import torch

    names = ("empty", "zeros", "ones", "full")
    saved = {n: getattr(torch, n) for n in names}

    def wrap(fn):
        def inner(*a, **kw):
            if kw.get("device") is not None and str(kw["device"]).startswith("cuda"):
                kw["device"] = "meta"
            return fn(*a, **kw)
        return inner

    for n in names:
        setattr(torch, n, wrap(saved[n]))
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(torch, n, f)


def preload_attention_backends() -> None:
    """Import every attention backend class once under :func:`cuda_allocations_on_meta`, so vLLM's selection finds
    the modules loaded. A backend that does not import is left for vLLM's own selection to meet (it records
    ImportError as a reason)."""
    try:
        from vllm.v1.attention.backends.registry import AttentionBackendEnum
    except Exception:  # noqa: BLE001 - releases without the registry
        return
    with cuda_allocations_on_meta():
        for b in AttentionBackendEnum:
            if not b.value:
                continue
            try:
                b.get_class()
            except Exception:  # noqa: BLE001
                pass


def setup(platform_kind: str, device: dict | None = None) -> str:
    """Install the platform stand-in (answering as ``device``, the job's descriptor), import vLLM, then the
    in-process inspection and stream stand-ins, and the attention backends (:func:`preload_attention_backends`);
    returns vLLM's version."""
    install_platform(platform_kind, device)
    import vllm

    inspect_in_process()
    install_streams()
    if platform_kind != "cpu":
        preload_attention_backends()
    return vllm.__version__


def main() -> int:
    set_worker_env()
    return wc.serve(setup, exc_record, "vLLM import or platform stand-in failed", registry, run_model,
                    device_aware=True)


if __name__ == "__main__":
    sys.exit(main())
