"""One SGLang worker: builds one model's cells with SGLang's own code and prints one JSON line per cell.

Run by the framework venv's interpreter (``/path/to/venv/bin/python conformance/sglang_worker.py``), not
imported by the project: it depends only on SGLang, torch and the standard library.

Protocol (the same as ``vllm_worker.py``): the first line on stdin is a JSON job ``{"platform":
"cuda-sm80", "device": {...}, "models": [{"config_path", "model_id", "cells": [{"tp", "pp", "dp", "ep",
"vision_dp"}, ...]}, ...]}``, ``device`` the platform's descriptor (``conformance.driver.device_descriptor``,
from data/gpus.csv: capability, name, memory, SM count). Per model, ``@@MODEL_START "<id>"``, then one line
per cell prefixed ``@@CELL `` with a JSON record (see :func:`run_cell`), then ``@@MODEL_DONE "<id>"``.
Anything else on stdout or stderr is SGLang's logging.

A cell is the command line

    python -m sglang.launch_server --model-path <dir> --tp T [--attn-dp-size D] [--ep-size T]
        --load-format dummy --skip-tokenizer-init

(``dp`` of the cell is the attention-DP size, ``--attn-dp-size``; ``ep`` sets ``--ep-size`` to the TP size).
It is run in two stages, as the launcher runs them:

1. **Engine** (``Engine._launch_subprocesses`` before any scheduler starts): ``prepare_server_args`` on
   that command line, ``ServerArgs.resolve_once()`` (the resolution pipeline: every ``arg_groups`` hook,
   including the ``ModelConfig`` it builds from config.json), ``check_server_args()`` and
   ``publish(role="tokenizer")``. An exception here is ``refused_engine``.
2. **Scheduler of TP rank 0** (``run_scheduler_process``): ``publish(role="scheduler")`` with the rank
   bundle of world rank 0, ``ModelConfig.from_server_args``, the parallel groups (stand-ins, below),
   ``initialize_dp_attention``, ``init_layer_runtime``, the scheduler's MoE/GEMM and Mamba initialisers,
   the model runner's initial expert-location metadata (``maybe_init_expert_location_metadata``, on CPU
   tensors), then what ``ModelRunner.load_model`` does with ``--load-format dummy`` up to the model class:
   ``DummyModelLoader``'s quantization config (``_get_quantization_config``) and ``_initialize_model``;
   then the check ``ModelRunner.__init__`` runs right after loading
   (``check_quantized_moe_compatibility``). An exception here is ``refused_build``; otherwise ``built``
   with rank 0's parameter bytes. Dummy weight initialisation and ``process_weights_after_loading`` are
   not run (no tensor holds data).

Stand-ins (what is simulated, and nothing else):

* **GPU** (issue 23: the job's platform). ``torch.cuda`` answers device queries as the descriptor's GPU
  would -- an H100 80 GB (SM 9.0, 81,559 MiB, 132 SMs) on ``cuda-sm90``, an A100 80 GB (SM 8.0, 108 SMs)
  on ``cuda-sm80``, a T4, L40S, B200 or RTX 5090 on sm75/sm89/sm100/sm120: ``is_available``,
  ``device_count``, ``get_device_capability``, ``get_device_name``, ``get_device_properties`` (the
  descriptor's name, capability, memory and SM count; threads, registers and shared memory per SM from the
  capability, :data:`CUDA_ARCH`; any other property is a ``harness:`` error), ``mem_get_info``;
  ``set_device``/``synchronize``/``empty_cache`` do nothing; ``torch.cuda.Stream``/``Event`` are inert
  placeholders. A stub ``nvidia-smi`` on ``PATH`` answers the queries SGLang makes (memory.total,
  compute_cap, name, driver_version) for the same GPU; NVML is not consulted (SGLang's ``get_device_sm``
  then asks ``torch.cuda``). SGLang's own platform (``CudaSRTPlatform``), its probes
  (``is_sm90_supported``, ``is_sm100_supported``, ``is_blackwell``, ``is_sm120``...), sgl_kernel's choice of
  its sm90/sm100 build and Triton's target read these, so kernel, quantization-method, MoE-runner and
  attention-backend selection take that GPU's branches. Nothing else changes. ``libcuda.so.1`` is the
  harness's stub driver (no kernel runs). ROCm platforms are not stood in for (:data:`ROCM_UNFAITHFUL`:
  every cell a ``harness_error`` with that reason).
* **Process groups.** ``GroupCoordinator`` objects of the requested sizes with this process as rank 0
  (no ``torch.distributed`` group behind them), stored where ``initialize_model_parallel`` stores them:
  ``parallel_state._TP``/``_ATTN_TP``/... and ``get_parallel().override_permanently(tp_group=...)``. The
  groups follow ``initialize_model_parallel``'s aliasing (attention-TP is the TP group when they are
  the same width, etc.).
* **Tensors.** The model is constructed with every tensor on the meta device (a ``TorchFunctionMode``
  that also redirects explicit ``device="cuda"`` factories and ``.to("cuda")``). DeepGEMM's SM count is
  the descriptor's; Triton's CUDA driver helper links the stub ``libcuda.so.1`` (own ``TRITON_CACHE_DIR``).
* **Hub.** ``HF_HUB_OFFLINE=1``; the config is a local folder holding only the verbatim config.json.
  ``trust_remote_code`` is off: where SGLang asks for remote code, the cell is ``not_run``.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import time

try:  # imported by the project (tests, driver)
    from conformance import worker_common as wc
except ImportError:  # run as a script by the framework venv's interpreter: the sibling file
    import worker_common as wc


def set_worker_env() -> None:
    """The worker process's environment (called by :func:`main` only, so importing this module -- as the
    tests do -- changes nothing in the importing process)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("SGLANG_DISABLE_REQUEST_LOGGING", "1")
    # Triton compiles its CUDA driver helper against the stub libcuda.so.1: keep that build out of the
    # user's ~/.triton cache (a helper built against the stub is useless on a real machine)
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(sys.prefix, "conformance-stubs", "triton-cache"))


H100_MEMORY = 85_520_809_984  # nvidia-smi memory.total 81559 MiB x 2^20 (data/gpus.csv H100-80GB)
DEVICE_COUNT = 4096  # as many GPUs as the layout asks for: the harness judges the model, not the node

#: The device the stand-in answers as when a job carries no ``device`` descriptor (the cuda-sm90 table was
#: built so, before issue 23); the driver now always sends one (``conformance.driver.device_descriptor``,
#: from data/gpus.csv), and for cuda-sm90 it is this one.
H100_DEVICE = {"platform": "cuda-sm90", "vendor": "nvidia", "gpu": "H100-80GB", "name": "NVIDIA H100 80GB HBM3",
               "capability": [9, 0], "total_memory": H100_MEMORY, "arch": "", "compute_units": 132}

#: Keys a device descriptor must carry (see :func:`check_device`).
DEVICE_KEYS = ("platform", "vendor", "name", "capability", "total_memory", "compute_units")

#: Per compute capability, the properties fixed by the architecture rather than the card (NVIDIA CUDA C++
#: Programming Guide, "Technical Specifications per Compute Capability"): resident threads per SM, 32-bit
#: registers per SM, shared memory per SM and per block (opt-in), in bytes. Shared memory per block without
#: opt-in is 48 KiB and the warp 32 threads on every one. A capability not listed here has no stand-in.
CUDA_ARCH = {
    (7, 5): dict(max_threads_per_multi_processor=1024, regs_per_multiprocessor=65536,
                 shared_memory_per_multiprocessor=64 * 1024, shared_memory_per_block_optin=64 * 1024),
    (8, 0): dict(max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536,
                 shared_memory_per_multiprocessor=164 * 1024, shared_memory_per_block_optin=163 * 1024),
    (8, 9): dict(max_threads_per_multi_processor=1536, regs_per_multiprocessor=65536,
                 shared_memory_per_multiprocessor=100 * 1024, shared_memory_per_block_optin=99 * 1024),
    (9, 0): dict(max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536,
                 shared_memory_per_multiprocessor=228 * 1024, shared_memory_per_block_optin=227 * 1024),
    (10, 0): dict(max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536,
                  shared_memory_per_multiprocessor=228 * 1024, shared_memory_per_block_optin=227 * 1024),
    (12, 0): dict(max_threads_per_multi_processor=1536, regs_per_multiprocessor=65536,
                  shared_memory_per_multiprocessor=100 * 1024, shared_memory_per_block_optin=99 * 1024),
}
SHARED_MEMORY_PER_BLOCK = 48 * 1024
WARP_SIZE = 32


def check_device(kind: str, device: dict | None) -> dict:
    """The device descriptor the stand-in answers as: ``device`` (validated: the keys of :data:`DEVICE_KEYS`,
    ``platform`` equal to ``kind``, ``capability`` two non-negative ints, ``total_memory`` a positive int of
    bytes, ``compute_units`` a positive int of SMs, ``vendor`` nvidia or amd, an AMD device its ``arch``
    ``gfx...``), or :data:`H100_DEVICE` for ``cuda-sm90`` without one. Raises ``ValueError`` naming what is
    wrong."""
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
    for k in ("total_memory", "compute_units"):
        v = device[k]
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError(f"platform {kind!r}: {k} must be a positive integer, got {v!r}")
    if device["vendor"] not in ("nvidia", "amd"):
        raise ValueError(f"platform {kind!r}: vendor must be nvidia or amd, got {device['vendor']!r}")
    if device["vendor"] == "amd" and not str(device.get("arch") or "").startswith("gfx"):
        raise ValueError(f"platform {kind!r}: an AMD device needs its gcnArchName (arch 'gfx...'), "
                         f"got {device.get('arch')!r}")
    return dict(device)


# ----------------------------------------------------------------------------------------------------
# stand-ins
# ----------------------------------------------------------------------------------------------------


class _StubStream:
    """``torch.cuda.Stream``/``Event`` stand-in: created and stored at construction, never used before
    a forward pass."""

    def __init__(self, *args, **kwargs) -> None:
        self.device = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def wait_stream(self, *a, **k) -> None:
        return None

    def record(self, *a, **k) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def __repr__(self) -> str:
        return "<harness stream>"


class DeviceProperties:
    """``torch.cuda.get_device_properties()`` as the stand-in GPU answers it: from the job's descriptor
    ``name``, ``major``/``minor``, ``total_memory`` (bytes), ``multi_processor_count`` (SMs); from
    :data:`CUDA_ARCH` for that capability the resident threads, registers and shared memory per SM and per
    block; ``warp_size`` 32, ``shared_memory_per_block`` 48 KiB, ``gcnArchName`` the device name (as CUDA
    builds of torch report it), ``is_integrated``/``is_multi_gpu_board`` 0 (every platform card is a
    discrete single-GPU board), a zero ``uuid``. Any other property (``L2_cache_size``, clocks, PCI ids: per
    card, not in the descriptor) raises a ``harness:`` error, so the cell becomes a ``harness_error``
    rather than taking a made-up value."""

    def __init__(self, device: dict) -> None:
        major, minor = (int(x) for x in device["capability"])
        arch = CUDA_ARCH.get((major, minor))
        if arch is None:
            raise ValueError(f"harness: no CUDA stand-in for capability {major}.{minor} (known: "
                             + ", ".join(f"{a}.{b}" for a, b in sorted(CUDA_ARCH)) + ")")
        self.name = str(device["name"])
        self.major, self.minor = major, minor
        self.total_memory = int(device["total_memory"])
        self.multi_processor_count = int(device["compute_units"])
        self.gcnArchName = self.name
        self.warp_size = WARP_SIZE
        self.shared_memory_per_block = SHARED_MEMORY_PER_BLOCK
        self.is_integrated = 0
        self.is_multi_gpu_board = 0
        self.uuid = "GPU-00000000-0000-0000-0000-000000000000"
        for k, v in arch.items():
            setattr(self, k, v)

    def __getattr__(self, name: str):  # only for attributes __init__ did not set
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"harness: the stand-in device has no property {name!r}")

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count})")


NVIDIA_SMI = """#!/bin/sh
# conformance harness: nvidia-smi of one %(name)s (no GPU on this machine)
for a in "$@"; do
  case "$a" in
    --query-gpu=memory.total*) echo "%(mib)d"; exit 0;;
    --query-gpu=compute_cap*) echo "%(cap)s"; exit 0;;
    --query-gpu=driver_version*) echo "580.95.05"; exit 0;;
    --query-gpu=name*) echo "%(name)s"; exit 0;;
  esac
done
echo "harness nvidia-smi: unsupported query $*" >&2
exit 9
"""


def nvidia_smi_script(device: dict) -> str:
    """The stub ``nvidia-smi`` of ``device``: memory.total in MiB (``total_memory // 2**20``), compute_cap
    ``major.minor``, the name and a driver version (580.95.05, a CUDA 13.0 driver); any other query exits 9
    with a ``harness nvidia-smi`` message."""
    major, minor = (int(x) for x in device["capability"])
    name = str(device["name"]).replace('"', "").replace("`", "").replace("$", "")
    return NVIDIA_SMI % {"mib": int(device["total_memory"]) // 2**20, "cap": f"{major}.{minor}", "name": name}


def install_nvidia_smi(device: dict) -> str:
    d = tempfile.mkdtemp(prefix="conf-smi-")
    p = os.path.join(d, "nvidia-smi")
    with open(p, "w") as fh:
        fh.write(nvidia_smi_script(device))
    os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.environ["PATH"] = d + os.pathsep + os.environ.get("PATH", "")
    return d


def install_cuda(device: dict, cuda=None) -> DeviceProperties:
    """``torch.cuda`` (or the namespace ``cuda``, for tests) answering device queries as ``device`` would:
    capability, name, properties (:class:`DeviceProperties`), ``mem_get_info`` (all of ``total_memory``
    free), :data:`DEVICE_COUNT` devices; memory counters 0; ``set_device``/``synchronize``/``empty_cache``
    do nothing; streams and events are inert. No CUDA call is made. Returns the properties."""
    real = cuda is None
    if real:
        import torch

        cuda = torch.cuda
    props = DeviceProperties(device)
    cap = (props.major, props.minor)
    memory = props.total_memory
    cuda.is_available = lambda: True
    cuda.device_count = lambda: DEVICE_COUNT
    cuda.get_device_capability = lambda device=None: cap
    cuda.get_device_name = lambda device=None: props.name
    cuda.get_device_properties = lambda device=None: props
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.synchronize = lambda device=None: None
    cuda.empty_cache = lambda: None
    cuda.mem_get_info = lambda device=None: (memory, memory)
    cuda.memory_allocated = lambda device=None: 0
    cuda.max_memory_allocated = lambda device=None: 0
    cuda.memory_reserved = lambda device=None: 0
    cuda.reset_peak_memory_stats = lambda device=None: None
    cuda.Stream = _StubStream  # type: ignore[misc]
    cuda.Event = _StubStream  # type: ignore[misc]
    cuda.current_stream = lambda device=None: _StubStream()
    cuda.default_stream = lambda device=None: _StubStream()
    cuda.stream = lambda s=None: _StubStream()
    if real:  # data-dependent shapes on the meta device (torch.nonzero): assume every element nonzero
        try:
            import torch.fx.experimental._config as fx_config

            fx_config.meta_nonzero_assume_all_nonzero = True
        except Exception:  # noqa: BLE001
            pass
    return props


def install_deep_gemm(device: dict, deep_gemm=None) -> None:
    """DeepGEMM's device query (``get_num_sms``, read by the DSA indexer at construction) answered as
    ``device`` would (its ``compute_units``); DeepGEMM's kernels never run."""
    if deep_gemm is None:
        try:
            import deep_gemm
        except Exception:  # noqa: BLE001 - not installed: SGLang takes its torch fallback
            return
    sms = int(device["compute_units"])
    deep_gemm.get_num_sms = lambda: sms


def meta_device_mode():
    """A ``TorchFunctionMode`` that puts every tensor on the meta device: the default device of
    factories and also explicit CUDA devices (``device="cuda"``, ``device=0``, ``empty_like(...,
    device="cuda")``), ``Tensor.to("cuda")`` and ``.cuda()``. Shapes and dtypes are unchanged; no memory is allocated."""
    return wc.cuda_redirect_mode("meta", default_device=True, any_function=True, pin_memory=True)


def cpu_device_mode():
    """A ``TorchFunctionMode`` that puts CUDA tensors on the CPU: for the small integer tables the
    model runner computes before the model exists (the expert-location maps), whose values matter and
    whose size is a few KB."""
    return wc.cuda_redirect_mode("cpu", default_device=False, any_function=False, pin_memory=True)


class StubProcessGroup(wc.StubProcessGroup):
    """``torch.distributed.ProcessGroup`` stand-in: construction-time code reads only size and rank."""

    def __repr__(self) -> str:
        return f"<harness process group of {self._n}>"


def stub_group(name: str, world_size: int):
    """An SGLang ``GroupCoordinator`` of ``world_size`` ranks with this process as rank 0, built without
    ``torch.distributed`` (sizes and ranks only; any collective is a harness bug and raises)."""
    from sglang.srt.distributed import parallel_state as ps

    class StubGroupCoordinator(ps.GroupCoordinator):
        def __init__(self) -> None:  # no process group behind it
            pass

        def destroy(self) -> None:
            return None

        def __getattr__(self, item: str):
            raise RuntimeError(f"harness: stub process group {name!r} has no {item!r}")

    g = StubGroupCoordinator()
    n = int(world_size)
    vals = dict(
        unique_name=f"{name}:0", rank=0, ranks=list(range(n)), world_size=n, local_rank=0, rank_in_group=0,
        device_group=StubProcessGroup(n), cpu_group=StubProcessGroup(n), local_size=n,
        use_pynccl=False, use_mscclpp=False, use_custom_allreduce=False, use_torch_symm_mem_all_reduce=False,
        use_hpu_communicator=False, use_xpu_communicator=False, use_npu_communicator=False,
        use_message_queue_broadcaster=False, pynccl_comm=None, pymscclpp_comm=None, ca_comm=None,
        qr_comm=None, torch_symm_mem_comm=None, mq_broadcaster=None, hpu_communicator=None,
        xpu_communicator=None, npu_communicator=None, _fi_workspace_hint=None, device=None,
        device_module=None, active_ranks=None, active_ranks_cpu=None,
    )
    for k, v in vals.items():
        object.__setattr__(g, k, v)
    return g


def install_groups(tp: int, pp: int) -> dict:
    """What ``init_distributed_environment`` + ``initialize_model_parallel`` leave behind, as stubs of
    the published widths (rank 0 of every group), with the same aliasing."""
    from sglang.srt.distributed import parallel_state as ps
    from sglang.srt.runtime_context import get_parallel

    par = get_parallel()
    widths = dict(tp=par.tp_size, pp=par.pp_size, attn_dp=par.attn_dp_size, attn_cp=par.attn_cp_size,
                  attn_tp=par.attn_tp_size, moe_ep=par.moe_ep_size, moe_dp=par.moe_dp_size,
                  moe_tp=par.moe_tp_size, dcp=par.attn_dcp_size)
    se_tp = None
    try:
        se_tp = par.shared_experts_tp_size
    except Exception:  # noqa: BLE001
        se_tp = None
    world = stub_group("world", widths["tp"] * widths["pp"])
    ps._WORLD = world
    par.override_permanently(world_group=world)
    TP = stub_group("tp", widths["tp"])
    DCP = stub_group("dcp", widths["dcp"]) if widths["dcp"] > 1 else None
    ATTN_CP = TP if widths["attn_cp"] == widths["tp"] else stub_group("attn_cp", widths["attn_cp"])
    ATTN_TP = TP if widths["attn_tp"] == widths["tp"] else stub_group("attention_tp", widths["attn_tp"])
    SE_TP = None
    if se_tp is not None and se_tp > 1:
        SE_TP = ATTN_TP if se_tp == widths["attn_tp"] else stub_group("shared_experts_tp", se_tp)
    if widths["attn_cp"] > widths["moe_dp"]:
        MOE_DP = ATTN_CP
    elif widths["moe_dp"] == widths["tp"]:
        MOE_DP = TP
    else:
        MOE_DP = stub_group("moe_dp", widths["moe_dp"])
    MOE_EP = TP if widths["moe_ep"] == widths["tp"] else stub_group("moe_ep", widths["moe_ep"])
    MOE_TP = TP if widths["moe_tp"] == widths["tp"] else stub_group("moe_tp", widths["moe_tp"])
    PP = stub_group("pp", widths["pp"])
    ps._TP, ps._DCP, ps._ATTN_CP, ps._ATTN_TP, ps._SHARED_EXPERTS_TP = TP, DCP, ATTN_CP, ATTN_TP, SE_TP
    ps._MOE_DP, ps._MOE_EP, ps._MOE_TP, ps._PP = MOE_DP, MOE_EP, MOE_TP, PP
    if hasattr(ps, "_SELF_PP"):
        ps._SELF_PP = stub_group("self_pp", 1)
    built = {"tp_group": TP, "pp_group": PP, "moe_ep_group": MOE_EP, "moe_dp_group": MOE_DP,
             "moe_tp_group": MOE_TP, "attn_tp_group": ATTN_TP, "attn_cp_group": ATTN_CP,
             "shared_experts_tp_group": SE_TP, "dcp_group": DCP}
    par.override_permanently(**{k: v for k, v in built.items() if v is not None})
    return widths


def reset_state() -> None:
    """Forget the previous cell: published config, parallel stamps and groups, flags."""
    from sglang.srt import runtime_context as rc
    from sglang.srt.distributed import bootstrap
    from sglang.srt.distributed import parallel_state as ps

    rc.reset_context()
    bootstrap.reset_parallel_initialised()
    for name in ("_WORLD", "_TP", "_ATTN_TP", "_SHARED_EXPERTS_TP", "_ATTN_CP", "_DCP", "_MOE_DP", "_MOE_EP",
                 "_MOE_TP", "_PP", "_SELF_PP", "_PDMUX_PREFILL_TP_GROUP"):
        if hasattr(ps, name):
            setattr(ps, name, None)


# ----------------------------------------------------------------------------------------------------
# one cell
# ----------------------------------------------------------------------------------------------------

def raise_site(exc: BaseException) -> tuple[str, int, str]:
    """``(file, line, function)`` of the innermost frame inside the sglang package, relative to the
    package root (``sglang/...``); the innermost frame overall when no sglang frame is on the stack."""
    return wc.package_raise_site(exc, "sglang")


def sgl_stack(exc: BaseException, keep: int = 8) -> list[str]:
    """The last ``keep`` frames inside the sglang package, innermost last, as ``file:line function``."""
    return wc.package_stack(exc, "sglang", keep)


REMOTE_CODE_MARKERS = ("trust_remote_code", "trust-remote-code", "execute the configuration file",
                       "contains custom code",
                       # an architecture neither SGLang nor transformers has, whose code the config's
                       # auto_map names (SGLang's Transformers-backend fallback without remote code)
                       "loading the custom model from auto_map failed")


def is_remote_code_error(exc: BaseException) -> bool:
    return wc.has_marker(exc, REMOTE_CODE_MARKERS)


def exc_record(exc: BaseException) -> dict:
    return wc.exc_fields(exc, "sglang")


HARNESS_MARKERS = (
    ("harness:", "a stub process group was asked for more than sizes and ranks"),
    ("'_RunnerShim' object has no attribute", "the harness's ModelRunner stand-in lacks an attribute this "
     "release reads"),
    ("harness nvidia-smi", "the code asked nvidia-smi something the stand-in does not answer"),
    ("CUDA error", "the code called the CUDA runtime (no GPU here)"),
    ("NVIDIA driver", "the code called the CUDA driver (no GPU here)"),
    ("Torch not compiled with CUDA", "the code called the CUDA runtime (no GPU here)"),
    ("cudaError", "the code called the CUDA runtime (no GPU here)"),
    ("cuBLAS", "the code called cuBLAS (no GPU here)"),
    ("the library was not initialized", "the code called a CUDA library (no GPU here)"),
    ("CUDA_ERROR", "the code called the CUDA driver (no GPU here)"),
    ("no CUDA device (harness stub)", "the code called the CUDA driver (no GPU here)"),
    ("NVML", "the code called NVML (no GPU here)"),
    ("Default process group has not been initialized", "the code used torch.distributed (stub groups)"),
    ("meta tensors", "an operation needed real tensor data (meta device)"),
    ("Cannot copy out of meta tensor", "an operation needed real tensor data (meta device)"),
    ("Can't load image processor", "the harness folder holds only config.json (a Hub repo has the "
     "processor files)"),
    ("preprocessor_config.json", "the harness folder holds only config.json (a Hub repo has the "
     "processor files)"),
    ("Can't load tokenizer", "the harness folder holds only config.json (a Hub repo has the tokenizer "
     "files)"),
    ("tokenizer_config.json", "the harness folder holds only config.json (a Hub repo has the tokenizer "
     "files)"),
    ("Cannot find the config file for", "the harness folder holds only config.json (a Hub repo has the "
     "quantization file the checkpoint's config points to, e.g. ModelOpt's hf_quant_config.json)"),
)


def harness_reason(exc: BaseException) -> str:
    """Why an exception comes from the stand-ins rather than from SGLang's checks ("" = a real refusal)."""
    if type(exc).__name__ in ("AcceleratorError", "CudaError", "NVMLError", "NVMLError_LibraryNotFound"):
        return "the code called the CUDA runtime or NVML (no GPU here)"
    return wc.marker_reason(exc, HARNESS_MARKERS)


def has_attn_dp_size() -> bool:
    """Whether the installed release spells attention-DP ``--attn-dp-size`` (0.5.22 and later; earlier
    releases have only ``--enable-dp-attention --dp-size D``)."""
    import argparse

    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()  # as prepare_server_args builds it
    ServerArgs.add_cli_args(parser)
    return any("--attn-dp-size" in a.option_strings for a in parser._actions)


def command_line(model_dir: str, cell: dict, attn_dp_flag: bool = True) -> list[str]:
    """The launcher arguments of one cell (``python -m sglang.launch_server <these>``): attention-DP as
    ``--attn-dp-size D``, or ``--enable-dp-attention --dp-size D`` when ``attn_dp_flag`` is false (the
    releases without that flag); EP as ``--ep-size`` = TP; vision DP as ``--mm-enable-dp-encoder`` (the
    vision encoder replicated per rank, cells of depth "platform")."""
    argv = ["--model-path", model_dir, "--tp", str(cell["tp"])]
    if int(cell.get("pp", 1)) > 1:
        argv += ["--pp-size", str(cell["pp"])]
    if int(cell.get("dp", 1)) > 1:
        argv += (["--attn-dp-size", str(cell["dp"])] if attn_dp_flag
                 else ["--enable-dp-attention", "--dp-size", str(cell["dp"])])
    if cell.get("ep"):
        argv += ["--ep-size", str(cell["tp"])]
    if cell.get("vision_dp"):
        argv += ["--mm-enable-dp-encoder"]
    if cell.get("quantization"):
        argv += ["--quantization", str(cell["quantization"])]
    argv += ["--load-format", "dummy", "--skip-tokenizer-init", "--log-level", "error"]
    return argv


def engine_stage(model_dir: str, cell: dict):
    """What the launcher runs before any scheduler starts (``Engine._launch_subprocesses``)."""
    from sglang.srt.runtime_context import publish
    from sglang.srt.server_args import prepare_server_args

    server_args = prepare_server_args(command_line(model_dir, cell, has_attn_dp_size()))
    server_args.resolve_once()
    server_args.check_server_args()
    publish(server_args, role="tokenizer")
    return server_args


def scheduler_stage(server_args, cell: dict):
    """Rank 0's scheduler up to the model class (``run_scheduler_process`` -> ``Scheduler.__init__`` ->
    ``TpModelWorker`` -> ``ModelRunner``), with the stand-in groups. Returns the model."""
    import torch
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.distributed import bootstrap
    from sglang.srt.layers.dp_attention import initialize_dp_attention
    from sglang.srt.runtime_context import SpawnRanks, get_model, get_parallel, publish

    publish(server_args, role="scheduler",
            ranks=SpawnRanks(world_rank=0, dp_rank=0 if int(cell.get("dp", 1)) > 1 else None, gpu_id=0))
    model_config = ModelConfig.from_server_args(server_args)  # Scheduler.init_model_config
    # bootstrap.init_parallel_runtime: the process groups (stand-ins) and the DP-attention state
    install_groups(cell["tp"], cell.get("pp", 1))
    initialize_dp_attention(server_args=server_args)
    bootstrap.init_layer_runtime(model_config=model_config)
    # Scheduler.init_moe_gemm_config / init_mamba_backend
    _scheduler_initialisers(server_args, model_config)
    # TpModelWorker._init_model_config
    model_config = ModelConfig.from_server_args(server_args, model_path=get_model().model_path,
                                                model_revision=get_model().revision, is_draft_model=False,
                                                context_length=None)
    # ModelRunner.initialize(), before load_model: the initial expert-location metadata (its own
    # asserts on the expert count and the EP size run here, before any model code)
    from sglang.srt.model_executor.model_runner import ModelRunner

    with cpu_device_mode():
        ModelRunner.maybe_init_expert_location_metadata(_RunnerShim(model_config))
    # ModelRunner.load_model -> DummyModelLoader.load_model, up to the model class
    from sglang.srt.model_loader import loader as L
    from sglang.srt.model_loader.utils import set_default_torch_dtype

    load_config = _load_config(server_args)
    model_loader = L.get_model_loader(load_config, model_config)
    if not isinstance(model_loader, L.DummyModelLoader):
        raise RuntimeError(f"harness: expected the dummy loader, got {type(model_loader).__name__}")
    with meta_device_mode():
        quant_config = L._get_quantization_config(model_config, load_config)
        with set_default_torch_dtype(model_config.dtype), torch.device("meta"):
            model = L._initialize_model(model_config, load_config, quant_config)
    # ModelRunner.__init__, right after initialize(): the quantized-MoE layout check
    from sglang.srt.model_executor.model_runner_components.moe_ep_setup import (
        check_quantized_moe_compatibility,
    )

    par = get_parallel()
    check_quantized_moe_compatibility(model_config=model_config, tp_size=par.tp_size,
                                      moe_ep_size=par.moe_ep_size, moe_dp_size=par.moe_dp_size)
    return model, model_config


class _RunnerShim:
    """The attributes of a ``ModelRunner`` that its ``maybe_init_expert_location_metadata`` reads (the
    method itself is SGLang's, called unbound): ``tp_rank`` only before 0.5.22 (a log condition)."""

    is_draft_worker = False
    tp_rank = 0

    def __init__(self, model_config) -> None:
        self.model_config = model_config


def _scheduler_initialisers(server_args, model_config) -> None:
    """``Scheduler.init_moe_gemm_config`` and ``Scheduler.init_mamba_backend``, through the names the
    scheduler module imported."""
    from sglang.srt.managers import scheduler as S

    cfg = model_config.hf_text_config
    if any(hasattr(cfg, a) for a in ("num_experts_per_tok", "num_experts_per_token", "top_k_experts",
                                     "moe_top_k", "moe_topk")):
        S.initialize_moe_config()
    S.initialize_fp8_gemm_config()
    S.initialize_fp4_gemm_config()
    S.initialize_bf16_gemm_config()
    if getattr(S, "initialize_mamba_selective_state_update_backend", None) is not None:
        S.initialize_mamba_selective_state_update_backend(server_args)


def _load_config(server_args):
    """``ModelRunner.load_model``'s ``build_load_config`` for rank 0 (no remote-instance engine)."""
    from sglang.srt.model_executor.model_runner_components.load_model_utils import (
        build_load_config,
    )

    return build_load_config(server_args=server_args, load_format=None, tp_rank=0,
                             remote_instance_weight_transporter_engine=None,
                             remote_instance_weight_transporter_session_id=None, draft_model_idx=None,
                             weight_cache_mode=None, weight_cache_socket=None)


def run_cell(model_dir: str, cell: dict) -> dict:
    """Build one cell; returns the outcome record (never raises)."""
    rec = dict(cell)
    rec["command"] = "python -m sglang.launch_server " + " ".join(command_line("<dir>", cell))
    t0 = time.perf_counter()
    try:
        reset_state()
    except Exception as e:  # noqa: BLE001
        rec.update(exc_record(e))
        rec.update(outcome="harness_error", reason="resetting SGLang's process state failed")
        return rec
    # 1. the launcher's checks, before any scheduler starts
    try:
        server_args = engine_stage(model_dir, cell)
    except BaseException as e:  # argparse refuses with SystemExit
        if isinstance(e, (KeyboardInterrupt, MemoryError)):
            raise
        return wc.record_failure(rec, e, "refused_engine", t0, exc_record=exc_record, harness_reason=harness_reason,
                                 remote_code=lambda exc, _: is_remote_code_error(exc))
    # 2. rank 0's scheduler: groups (stand-ins), model class on the meta device
    try:
        model, _ = scheduler_stage(server_args, cell)
    except Exception as e:  # noqa: BLE001
        return wc.record_failure(rec, e, "refused_build", t0, exc_record=exc_record, harness_reason=harness_reason,
                                 remote_code=lambda exc, _: is_remote_code_error(exc))
    wc.add_params(rec, model, cell)
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    del model
    return rec


def run_model(job_model: dict, platform_kind: str, version: str, job: dict | None = None) -> None:
    """Every cell of one model of the job (``job``, the whole job, is not read)."""
    wc.run_in_model_folder(job_model, platform_kind, version, run_cell, exc_record)


def registry(version: str) -> dict:
    """The architectures SGLang's model registry knows (``python -m conformance run`` writes them)."""
    from sglang.srt.models.registry import ModelRegistry

    archs = ModelRegistry.get_supported_archs()
    # config model_types readable without remote code: SGLang's config classes + transformers'
    return {"version": version, "architectures": list(archs),
            "model_types": wc.config_model_types("sglang.srt.utils.hf_transformers")}


#: Why the ROCm platforms are not run (every rocm-* cell is a ``harness_error`` with this reason). Found on
#: SGLang 0.5.23 by answering as an MI300X (``torch.version.hip`` set, ``torch.version.cuda`` None, the
#: descriptor's capability/name/memory/CUs, ``gcnArchName`` gfx942): data/conformance/README.md, "Platforms".
ROCM_UNFAITHFUL = (
    "ROCm stand-in not faithful: the venv holds SGLang's CUDA build (sgl_kernel without its ROCm ops, no AITER "
    "package); with torch.version.hip set, SGLang's is_hip() paths import AITER unconditionally at import "
    "(sglang/srt/layers/quantization/quark/schemes/quark_w4a4_mxfp4.py:163 `from aiter import gemm_a4w4`: "
    "ModuleNotFoundError), before any model code; a stand-in AITER would invent the checks the issue asks to "
    "observe; needs a ROCm build of SGLang with AITER")


def install_rocm(device: dict) -> None:
    """ROCm (``rocm-gfx942``, ``rocm-gfx950``): not faithful with a CUDA build of SGLang
    (:data:`ROCM_UNFAITHFUL`): raises a ``harness:`` error before anything is imported, so every cell is a
    ``harness_error`` with that reason and no record claims an AMD GPU answered."""
    raise RuntimeError(f"harness: {ROCM_UNFAITHFUL} (platform {device['platform']}, {device.get('arch')})")


def install_nvml_fallback(cuda=None) -> None:
    """SGLang's ``get_device_sm`` asks NVML first (``torch.cuda._get_nvml_device_index`` then ``pynvml``) and
    falls back to ``torch.cuda.get_device_capability`` when that raises: make it raise, so the answer is the
    stand-in's even where an NVML library is present."""
    if cuda is None:
        import torch

        cuda = torch.cuda

    def _no_nvml(device=None):
        raise RuntimeError("harness: NVML is not consulted (the stand-in answers device queries)")

    cuda._get_nvml_device_index = _no_nvml


def setup(platform_kind: str, device: dict | None = None) -> str:
    """Install the GPU stand-ins answering as ``device`` (the job's descriptor, :func:`check_device`):
    nvidia-smi, torch.cuda, the NVML fallback; import SGLang's launcher modules once, then DeepGEMM's SM
    count; returns SGLang's version. ROCm platforms raise (:func:`install_rocm`)."""
    device = check_device(platform_kind, device)
    if device["vendor"] == "amd":
        install_rocm(device)
    install_nvidia_smi(device)
    install_cuda(device)
    install_nvml_fallback()
    import sglang
    from sglang.srt import server_args  # noqa: F401 - the launcher's imports, once
    from sglang.srt.model_loader import loader  # noqa: F401

    install_deep_gemm(device)
    version = getattr(sglang, "__version__", None)
    if not version:
        import importlib.metadata as md

        version = md.version("sglang")
    return version


def main() -> int:
    set_worker_env()
    return wc.serve(setup, exc_record, "SGLang import or GPU stand-in failed", registry, run_model,
                    device_aware=True)


if __name__ == "__main__":
    sys.exit(main())
