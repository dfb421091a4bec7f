"""What every framework worker shares (``vllm_worker.py``, ``sglang_worker.py``, ``megatron_worker.py``): the
JSON-lines protocol with :mod:`conformance.driver` (one model after the other, one record per cell), the
raise-site and stack helpers, rank 0's parameter accounting and the meta/CPU device modes.

Standard library only (parameters are read through their own ``numel`` / ``element_size``), because the
workers run under the framework venv's interpreter, which has nothing of this repo installed: they import
this file as a sibling module (``import worker_common``), the project as ``conformance.worker_common``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import traceback

CELL_PREFIX = "@@CELL "
MODEL_START = "@@MODEL_START "
MODEL_DONE = "@@MODEL_DONE "
#: Characters of an exception message kept in a record.
MAX_MESSAGE = 4000


def emit(rec: dict) -> None:
    """One cell record on stdout, as the driver reads it."""
    sys.stdout.write(CELL_PREFIX + json.dumps(rec, default=str) + "\n")
    sys.stdout.flush()


def innermost_site(exc: BaseException) -> tuple[str, int]:
    """(file, line) of the innermost traceback frame; ``("", 0)`` without a traceback."""
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return "", 0
    fr = tb[-1]
    return fr.filename, int(fr.lineno or 0)


def package_raise_site(exc: BaseException, package: str) -> tuple[str, int, str]:
    """``(file, line, function)`` of the innermost traceback frame inside ``package`` (the raise the user
    sees), relative to the package root (``<package>/...``); the innermost frame overall when no frame of
    the package is on the stack; ``("", 0, "")`` without a traceback. Frames of this harness are skipped.
    ``package`` may be a sub-package path (``"megatron/core"``)."""
    mark = os.sep + package.replace("/", os.sep) + os.sep
    tb = traceback.extract_tb(exc.__traceback__)
    pick = None
    for fr in tb:
        if mark in fr.filename and "conformance" not in fr.filename:
            pick = fr
    if pick is None and tb:
        pick = tb[-1]
    if pick is None:
        return "", 0, ""
    fn = pick.filename
    i = fn.rfind(mark)
    rel = fn[i + 1:] if i >= 0 else os.path.basename(fn)
    return rel, int(pick.lineno or 0), pick.name


def package_stack(exc: BaseException, package: str, keep: int = 8, *, skip_harness: bool = True) -> list[str]:
    """The last ``keep`` traceback frames inside ``package`` (e.g. ``"megatron/core"``), innermost last, as
    ``file:line function`` relative to the package root; with ``skip_harness``, frames of this harness
    (a path with ``conformance`` in it) are left out."""
    mark = os.sep + package.replace("/", os.sep) + os.sep
    out = []
    for fr in traceback.extract_tb(exc.__traceback__):
        i = fr.filename.rfind(mark)
        if i >= 0 and not (skip_harness and "conformance" in fr.filename):
            out.append(f"{fr.filename[i + 1:]}:{fr.lineno} {fr.name}")
    return out[-keep:]


def exc_fields(exc: BaseException, package: str, *, skip_harness: bool = True) -> dict:
    """A cell record's exception fields: ``exc_type``, ``message`` (at most :data:`MAX_MESSAGE` characters),
    the raise site inside ``package`` (``file``, ``line``, ``function``: :func:`package_raise_site`),
    ``innermost`` (``file:line`` of the innermost frame) and ``stack`` (:func:`package_stack`)."""
    f, line, func = package_raise_site(exc, package)
    inner_f, inner_line = innermost_site(exc)
    return {
        "exc_type": type(exc).__name__,
        "message": str(exc)[:MAX_MESSAGE],
        "file": f,
        "line": line,
        "function": func,
        "innermost": f"{inner_f}:{inner_line}",
        "stack": package_stack(exc, package, skip_harness=skip_harness),
    }


def add_params(rec: dict, model, cell: dict, counted: tuple[int, int, dict] | None = None) -> None:
    """Mark ``rec`` built with rank 0's parameter bytes, count and bytes per dtype (``counted``, default
    :func:`param_bytes` of ``model``), and the parameter list when the cell asks (``params_detail``)."""
    b, n, by_dtype = counted if counted is not None else param_bytes(model)
    rec.update(outcome="built", param_bytes=b, param_count=n, param_bytes_by_dtype=by_dtype)
    if cell.get("params_detail"):
        rec["params"] = param_list(model)


def param_bytes(model) -> tuple[int, int, dict]:
    """Bytes and element count of rank 0's parameters (meta tensors report their real dtype)."""
    total_b = total_n = 0
    by_dtype: dict[str, int] = {}
    seen = set()
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        n = p.numel()
        b = n * p.element_size()
        total_b += b
        total_n += n
        k = str(p.dtype).replace("torch.", "")
        by_dtype[k] = by_dtype.get(k, 0) + b
    return total_b, total_n, by_dtype


def param_list(model) -> list[list]:
    """Rank 0's parameters as ``[name, shape, dtype, bytes]`` (``python -m conformance params``)."""
    out, seen = [], set()
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            continue
        seen.add(id(p))
        out.append([name, list(p.shape), str(p.dtype).replace("torch.", ""), p.numel() * p.element_size()])
    return out


class StubProcessGroup:
    """``torch.distributed.ProcessGroup`` stand-in (``group.device_group``/``cpu_group``) of ``world_size``
    ranks: construction-time code reads only ``size()`` and ``rank()`` (this process is rank 0)."""

    def __init__(self, world_size: int) -> None:
        self._n = int(world_size)

    def size(self) -> int:
        return self._n

    def rank(self) -> int:
        return 0


def cuda_redirect_mode(target: str, *, default_device: bool, any_function: bool, pin_memory: bool):
    """A ``TorchFunctionMode`` that moves CUDA tensors to ``target`` (``"meta"`` or ``"cpu"``): factories given a
    CUDA device (``device="cuda"``, ``device=0``), ``Tensor.to("cuda")``; ``Tensor.cuda()`` (and with
    ``pin_memory`` ``Tensor.pin_memory()``) return the tensor itself. With ``default_device``, factories without
    a device too (as ``torch.device(target)`` does); with ``any_function``, every other function given
    ``device="cuda"`` (``torch.empty_like(x, device="cuda")``). Shapes and dtypes are unchanged."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._device import _device_constructors

    ctors = _device_constructors()
    dev = torch.device(target)
    passthrough = (torch.Tensor.cuda, torch.Tensor.pin_memory) if pin_memory else (torch.Tensor.cuda,)

    def _is_cuda(d) -> bool:
        if isinstance(d, torch.device):
            return d.type == "cuda"
        return isinstance(d, str) and d.startswith("cuda")

    class CudaRedirect(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            d = kwargs.get("device")
            if func in ctors:
                if (default_device and d is None) or _is_cuda(d) or (isinstance(d, int) and not isinstance(d, bool)):
                    kwargs["device"] = dev
            elif func in (torch.Tensor.to,):
                if _is_cuda(d):
                    kwargs["device"] = dev
                args = tuple(dev if (i > 0 and _is_cuda(a) and not isinstance(a, torch.dtype)) else a
                             for i, a in enumerate(args))
            elif func in passthrough:
                return args[0]
            elif any_function and _is_cuda(d):
                kwargs["device"] = dev
            return func(*args, **kwargs)

    return CudaRedirect()


def has_marker(exc: BaseException, markers: tuple[str, ...]) -> bool:
    """Any of ``markers`` in ``"<type>: <message>"`` of ``exc``."""
    text = f"{type(exc).__name__}: {exc}"
    return any(m in text for m in markers)


def marker_reason(exc: BaseException, markers: tuple[tuple[str, str], ...]) -> str:
    """The reason paired with the first ``(marker, reason)`` of ``markers`` whose marker is in
    ``"<type>: <message>"`` of ``exc``; "" when none is."""
    text = f"{type(exc).__name__}: {exc}"
    for marker, why in markers:
        if marker in text:
            return why
    return ""


def record_failure(rec: dict, exc: BaseException, outcome: str, t0: float, *, exc_record, harness_reason,
                   remote_code=None) -> dict:
    """``rec`` for a stage that raised ``exc``: ``exc_record(exc)``'s fields; outcome ``not_run`` (reason
    "remote code") when ``remote_code(exc, rec)`` holds, else ``harness_error`` with ``harness_reason(exc)``
    when that names a reason, else ``outcome``; and the seconds since ``t0`` (``time.perf_counter()``)."""
    rec.update(exc_record(exc))
    harness = harness_reason(exc)
    if remote_code is not None and remote_code(exc, rec):
        rec["outcome"], rec["reason"] = "not_run", "remote code"
    else:
        rec["outcome"] = "harness_error" if harness else outcome
        if harness:
            rec["reason"] = harness
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec


# ----------------------------------------------------------------------------------------------------
# the job: models one after the other, one record per cell
# ----------------------------------------------------------------------------------------------------


def guarded_cell(run, cell: dict, exc_record, reraise: tuple = ()) -> dict:
    """``run(cell)``, or the cell as a ``harness_error`` with ``exc_record`` of what escaped it (one cell
    never stops the others; exceptions of the ``reraise`` types do)."""
    try:
        return run(cell)
    except BaseException as e:  # one cell never stops the others
        if reraise and isinstance(e, reraise):
            raise
        r = dict(cell)
        r.update(exc_record(e))
        r.update(outcome="harness_error", reason="worker exception outside the cell")
        return r


def emit_cell(r: dict, job_model: dict, version: str, platform_kind: str, sidecars: list[str],
              drop: tuple[str, ...] = ("params_detail",)) -> None:
    """Emit one cell record, without the job's ``drop`` keys, with the model's sidecar file names, the
    framework version, the platform and the model id."""
    for k in drop:
        r.pop(k, None)
    r["sidecars"] = sidecars
    r["version"] = version
    r["platform"] = platform_kind
    r["model_id"] = job_model["model_id"]
    emit(r)


def model_done(model_id: str) -> None:
    sys.stdout.write(MODEL_DONE + json.dumps(model_id) + "\n")
    sys.stdout.flush()


def run_in_model_folder(job_model: dict, platform_kind: str, version: str, run_cell, exc_record,
                        cell_extra=None) -> None:
    """Every cell of one model through ``run_cell(folder, cell)``, in a temporary folder holding the verbatim
    config.json and the sidecar files the job names (``hf_quant_config.json``, ``quantize_config.json``:
    only when the caller hands them, ``python -m conformance params --sidecar``). Each cell is passed
    ``quantization`` (a ``quantize_config.json`` sidecar's ``quant_method``, ``gptq`` when it names none;
    else None) and the keys ``cell_extra(config bytes)`` returns; they are not in the emitted record."""
    with tempfile.TemporaryDirectory(prefix="conf-") as d:
        with open(job_model["config_path"], "rb") as src, open(os.path.join(d, "config.json"), "wb") as dst:
            raw = src.read()
            dst.write(raw)
        sidecars = sorted((job_model.get("sidecars") or {}).items())
        quantization = None
        for name, path in sidecars:
            shutil.copyfile(path, os.path.join(d, os.path.basename(name)))
            if os.path.basename(name) == "quantize_config.json":
                with open(path) as fh:
                    quantization = json.load(fh).get("quant_method") or "gptq"
        extra = cell_extra(raw) if cell_extra else {}
        for cell in job_model["cells"]:
            cell = dict(cell, **extra, quantization=quantization)
            r = guarded_cell(lambda c: run_cell(d, c), cell, exc_record)  # called at once: d is this model's
            emit_cell(r, job_model, version, platform_kind, [n for n, _ in sidecars],
                      drop=(*extra, "params_detail", "quantization"))
    model_done(job_model["model_id"])


def fail_every_cell(models: list[dict], fields: dict, reason: str) -> None:
    """Every cell of every model a ``harness_error`` with ``fields`` (the exception) and ``reason``: the
    framework could not be imported or its stand-ins not installed."""
    for m in models:
        for cell in m["cells"]:
            r = dict(cell)
            r.update(fields)
            r.update(outcome="harness_error", reason=reason, model_id=m["model_id"])
            emit(r)
        sys.stdout.write(MODEL_DONE + json.dumps(m["model_id"]) + "\n")


def serve(setup, exc_record, failure_reason: str, registry, run_model, platform: str | None = None,
          device_aware: bool = False) -> int:
    """A worker's main loop. The job is the first line on stdin; its platform is ``platform`` when given, else
    the job's (default ``cuda-sm90``). ``setup(platform_kind)`` imports the framework and installs the
    stand-ins, returning its version; when it raises, every cell is a ``harness_error`` with
    ``failure_reason`` (and the exception's message). With ``device_aware`` it is called
    ``setup(platform_kind, device)``, ``device`` the job's device descriptor (``None`` when the job has none;
    see ``conformance.driver.device_descriptor``). Else ``registry(version)`` goes to the job's
    ``registry_out`` (when it names one), then each model: ``@@MODEL_START "<id>"`` and ``run_model(model, platform_kind, version, job)``."""
    job = json.loads(sys.stdin.readline())
    platform_kind = platform or job.get("platform", "cuda-sm90")
    models = job["models"] if "models" in job else [job]
    if not device_aware and platform_kind not in ("cuda-sm90", "cpu"):
        fail_every_cell(models, {}, f"this worker answers device queries as cuda-sm90 only, not {platform_kind} "
                        "(no per-platform stand-in yet)")
        return 0
    try:
        version = setup(platform_kind, job.get("device")) if device_aware else setup(platform_kind)
    except Exception as e:  # noqa: BLE001
        fail_every_cell(models, exc_record(e), f"{failure_reason}: {type(e).__name__}: {e}"[:600])
        return 0
    if job.get("registry_out"):
        with open(job["registry_out"], "w") as fh:
            json.dump(registry(version), fh, indent=0)
    for m in models:
        sys.stdout.write(MODEL_START + json.dumps(m["model_id"]) + "\n")
        sys.stdout.flush()
        run_model(m, platform_kind, version, job)
    return 0


def config_model_types(package: str, name: str = "config") -> list[str]:
    """Config ``model_type`` names readable without remote code: the installed transformers' config classes
    and those in the ``_CONFIG_REGISTRY`` of the framework's config module (``from <package> import <name>``)."""
    import importlib

    out: set[str] = set()
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

        out |= set(CONFIG_MAPPING_NAMES)
    except Exception:  # noqa: BLE001
        pass
    try:
        pkg = importlib.import_module(package)
        mod = getattr(pkg, name, None) or importlib.import_module(f"{package}.{name}")
        out |= set(getattr(mod, "_CONFIG_REGISTRY", {}))
    except Exception:  # noqa: BLE001
        pass
    return sorted(out)
