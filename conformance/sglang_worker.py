"""One SGLang worker: builds one model's cells with SGLang's own code and prints one JSON line per cell.

Run by the framework venv's interpreter (``/path/to/venv/bin/python conformance/sglang_worker.py``), not
imported by the project: it depends only on SGLang, torch and the standard library.

Protocol (the same as ``vllm_worker.py``): the first line on stdin is a JSON job ``{"platform":
"cuda-sm90", "models": [{"config_path", "model_id", "cells": [{"tp", "pp", "dp", "ep", "vision_dp"},
...]}, ...]}``. Per model, ``@@MODEL_START "<id>"``, then one line per cell prefixed ``@@CELL `` with a
JSON record (see :func:`run_cell`), then ``@@MODEL_DONE "<id>"``. Anything else on stdout or stderr is
SGLang's logging.

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

* **GPU.** ``torch.cuda`` answers device queries as one H100 80 GB (SM 9.0, 81,559 MiB) would:
  ``is_available``, ``device_count``, ``get_device_capability``, ``get_device_name``,
  ``get_device_properties``, ``mem_get_info``; ``set_device``/``synchronize``/``empty_cache`` do nothing;
  ``torch.cuda.Stream``/``Event`` are inert placeholders. A stub ``nvidia-smi`` on ``PATH`` answers the
  three queries SGLang makes (memory.total, compute_cap, driver_version). SGLang's own platform
  (``CudaSRTPlatform``) and its probes read these, so kernel and quantization-method selection take the
  Hopper branches. ``libcuda.so.1`` is the harness's stub driver (no kernel runs).
* **Process groups.** ``GroupCoordinator`` objects of the requested sizes with this process as rank 0
  (no ``torch.distributed`` group behind them), stored where ``initialize_model_parallel`` stores them:
  ``parallel_state._TP``/``_ATTN_TP``/... and ``get_parallel().override_permanently(tp_group=...)``. The
  groups follow ``initialize_model_parallel``'s aliasing (attention-TP is the TP group when they are
  the same width, etc.).
* **Tensors.** The model is constructed with every tensor on the meta device (a ``TorchFunctionMode``
  that also redirects explicit ``device="cuda"`` factories and ``.to("cuda")``). DeepGEMM's SM count is
  an H100's; Triton's CUDA driver helper links the stub ``libcuda.so.1`` (own ``TRITON_CACHE_DIR``).
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
H100_MIB = 81559
H100_NAME = "NVIDIA H100 80GB HBM3"
DEVICE_COUNT = 4096  # as many GPUs as the layout asks for: the harness judges the model, not the node


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


class _Props:
    """``torch.cuda.get_device_properties`` of one H100 SXM 80 GB."""

    name = H100_NAME
    major = 9
    minor = 0
    total_memory = H100_MEMORY
    multi_processor_count = 132  # H100 SXM
    L2_cache_size = 50 * 1024 * 1024
    max_threads_per_multi_processor = 2048
    regs_per_multiprocessor = 65536
    warp_size = 32
    is_integrated = 0
    is_multi_gpu_board = 0
    gcnArchName = "NVIDIA H100 80GB HBM3"
    uuid = "GPU-00000000-0000-0000-0000-000000000000"
    shared_memory_per_block = 49152
    shared_memory_per_block_optin = 232448
    shared_memory_per_multiprocessor = 233472
    max_shared_memory_per_block_optin = 232448

    def __repr__(self) -> str:
        return f"_CudaDeviceProperties(name='{self.name}', major=9, minor=0, total_memory={H100_MIB}MB)"


NVIDIA_SMI = """#!/bin/sh
# conformance harness: nvidia-smi of one H100 80 GB (no GPU on this machine)
for a in "$@"; do
  case "$a" in
    --query-gpu=memory.total*) echo "%(mib)d"; exit 0;;
    --query-gpu=compute_cap*) echo "9.0"; exit 0;;
    --query-gpu=driver_version*) echo "580.95.05"; exit 0;;
    --query-gpu=name*) echo "%(name)s"; exit 0;;
  esac
done
echo "harness nvidia-smi: unsupported query $*" >&2
exit 9
""" % {"mib": H100_MIB, "name": H100_NAME}


def install_nvidia_smi() -> str:
    d = tempfile.mkdtemp(prefix="conf-smi-")
    p = os.path.join(d, "nvidia-smi")
    with open(p, "w") as fh:
        fh.write(NVIDIA_SMI)
    os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.environ["PATH"] = d + os.pathsep + os.environ.get("PATH", "")
    return d


def install_cuda() -> None:
    """``torch.cuda`` as one H100 answers it; no CUDA call is made."""
    import torch

    cuda = torch.cuda
    props = _Props()
    cuda.is_available = lambda: True
    cuda.device_count = lambda: DEVICE_COUNT
    cuda.get_device_capability = lambda device=None: (9, 0)
    cuda.get_device_name = lambda device=None: H100_NAME
    cuda.get_device_properties = lambda device=None: props
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.synchronize = lambda device=None: None
    cuda.empty_cache = lambda: None
    cuda.mem_get_info = lambda device=None: (H100_MEMORY, H100_MEMORY)
    cuda.memory_allocated = lambda device=None: 0
    cuda.max_memory_allocated = lambda device=None: 0
    cuda.memory_reserved = lambda device=None: 0
    cuda.reset_peak_memory_stats = lambda device=None: None
    cuda.Stream = _StubStream  # type: ignore[misc]
    cuda.Event = _StubStream  # type: ignore[misc]
    cuda.current_stream = lambda device=None: _StubStream()
    cuda.default_stream = lambda device=None: _StubStream()
    cuda.stream = lambda s=None: _StubStream()
    try:
        import torch.fx.experimental._config as fx_config

        fx_config.meta_nonzero_assume_all_nonzero = True
    except Exception:  # noqa: BLE001
        pass


H100_SMS = 132


def install_deep_gemm() -> None:
    """DeepGEMM's device query (``get_num_sms``, read by the DSA indexer at construction) answered as
    an H100 SXM would; DeepGEMM's kernels never run."""
    try:
        import deep_gemm
    except Exception:  # noqa: BLE001 - not installed: SGLang takes its torch fallback
        return
    deep_gemm.get_num_sms = lambda: H100_SMS


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
    releases without that flag)."""
    argv = ["--model-path", model_dir, "--tp", str(cell["tp"])]
    if int(cell.get("pp", 1)) > 1:
        argv += ["--pp-size", str(cell["pp"])]
    if int(cell.get("dp", 1)) > 1:
        argv += (["--attn-dp-size", str(cell["dp"])] if attn_dp_flag
                 else ["--enable-dp-attention", "--dp-size", str(cell["dp"])])
    if cell.get("ep"):
        argv += ["--ep-size", str(cell["tp"])]
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


def setup(platform_kind: str) -> str:
    """Install the GPU stand-ins (nvidia-smi, torch.cuda), import SGLang's launcher modules once, then
    DeepGEMM's; returns SGLang's version."""
    install_nvidia_smi()
    install_cuda()
    import sglang
    from sglang.srt import server_args  # noqa: F401 - the launcher's imports, once
    from sglang.srt.model_loader import loader  # noqa: F401

    install_deep_gemm()
    version = getattr(sglang, "__version__", None)
    if not version:
        import importlib.metadata as md

        version = md.version("sglang")
    return version


def main() -> int:
    set_worker_env()
    return wc.serve(setup, exc_record, "SGLang import or GPU stand-in failed", registry, run_model)


if __name__ == "__main__":
    sys.exit(main())
