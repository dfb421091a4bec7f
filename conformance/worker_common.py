"""What every framework worker shares (``vllm_worker.py``, ``sglang_worker.py``): the JSON-lines protocol
with :mod:`conformance.driver`, the raise-site helper and rank 0's parameter accounting.

Standard library only (parameters are read through their own ``numel`` / ``element_size``), because the
workers run under the framework venv's interpreter, which has nothing of this repo installed: they import
this file as a sibling module (``import worker_common``), the project as ``conformance.worker_common``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

CELL_PREFIX = "@@CELL "
MODEL_START = "@@MODEL_START "
MODEL_DONE = "@@MODEL_DONE "


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
