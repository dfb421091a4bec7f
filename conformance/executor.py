"""Runs one worker job: the framework venv's interpreter on a worker script, read line by line.

The driver (:mod:`conformance.driver`) decides which models and cells a job holds and writes the checkpoints;
this module only runs the job and hands back one ``(model_id, records)`` pair per model, in the order the
worker finishes them. It is what a Ray task executes on a node (:mod:`conformance.cluster`) and what the
serial path (``--workers 1`` without ``--ray``) executes in the driver's process, so both paths share the
crash and timeout handling.

Standard library only, and no import of the project at run time: :mod:`conformance.cluster` ships this module
*by value* to the cluster's nodes (cloudpickle), where neither the project nor its dependencies are installed;
the only things a node needs are Ray and the framework's venv at the same path as on the driver.

The worker protocol (``conformance/worker_common.py``, ``vllm_worker.py``'s docstring): the job is the first
line on the worker's stdin; per model it prints ``@@MODEL_START "<id>"``, one ``@@CELL <json>`` line per cell,
then ``@@MODEL_DONE "<id>"``. A worker that dies or stalls on a model is killed; that model's unfinished cells
become ``harness_error`` records with the reason (exit status or timeout, and the tail of stderr), and the job's
remaining models go to a new worker.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from conformance.worker_common import CELL_PREFIX, MODEL_DONE, MODEL_START  # captured by value when shipped

#: Extra seconds the first model of a worker process gets: the framework's import (vLLM's takes ~15 s).
IMPORT_GRACE = 120.0
#: Set in the Ray processes of a local start (:func:`conformance.cluster.start_local`): the proxy variables
#: there point at a closed local port (so Ray's start-up cloud probe cannot leave the machine) and are not
#: the user's; :func:`worker_env` drops them again for the worker.
LOCAL_PROXY_MARK = "TP_PLANNER_RAY_LOCAL_PROXY"
PROXY_VARS = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY")


def worker_env(python: str) -> dict:
    """The worker process's environment: this process's, offline (``HF_HUB_OFFLINE`` ...), without a GPU
    (``CUDA_VISIBLE_DEVICES=""``), without ``PYTHONPATH`` (the venv must not see the project), with the venv's
    ``conformance-stubs/libcuda.so.1`` stand-in first on ``LD_LIBRARY_PATH`` when it was built."""
    env = dict(os.environ)
    if env.pop(LOCAL_PROXY_MARK, None):
        for k in PROXY_VARS:
            env.pop(k, None)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
               PYTHONNOUSERSITE="1", CUDA_VISIBLE_DEVICES="", VLLM_LOGGING_LEVEL="ERROR")
    env.pop("PYTHONPATH", None)
    venv = Path(python).absolute().parent.parent  # not resolve(): bin/python is a symlink out of the venv
    stubs = venv / "conformance-stubs"
    if (stubs / "libcuda.so.1").exists():
        env["LD_LIBRARY_PATH"] = f"{stubs}:{env.get('LD_LIBRARY_PATH', '')}".rstrip(":")
    return env


def cell_key(c: dict) -> tuple:
    """A cell's identity in a job or a record: ``(tp, pp, dp, ep, vision_dp)``."""
    return (int(c["tp"]), int(c.get("pp", 1)), int(c.get("dp", 1)), int(c.get("ep", 0)), int(c.get("vision_dp", 0)))


def missing(cells: list[dict], recs: list[dict], reason: str) -> list[dict]:
    """A ``harness_error`` record with ``reason`` for every cell of ``cells`` (job cell dicts) without a
    record in ``recs``."""
    done = {cell_key(r) for r in recs}
    out = []
    for c in cells:
        if cell_key(c) not in done:
            r = dict(c)
            r.update(outcome="harness_error", reason=reason)
            out.append(r)
    return out


def iter_job(python: str, script: str, job: dict, *, model_timeout: float) -> Iterator[tuple[str, list[dict]]]:
    """Run ``job`` (``{"models": [{"model_id", "cells", ...}, ...], ...}``) through ``python script``, yielding
    ``(model_id, records)`` as each model completes; every model of the job is yielded exactly once, the ones a
    dead or stalled worker left with ``harness_error`` records. ``model_timeout`` is in seconds per model (the
    first model of each worker process gets :data:`IMPORT_GRACE` more)."""
    pending = list(job["models"])
    by_id = {m["model_id"]: m for m in pending}
    while pending:
        proc = subprocess.Popen([python, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=worker_env(python), cwd=tempfile.gettempdir())
        err_tail: list[str] = []

        def _drain_err(p=proc, tail=err_tail) -> None:
            for line in p.stderr:  # type: ignore[union-attr]
                tail.append(line)
                del tail[:-40]

        threading.Thread(target=_drain_err, daemon=True).start()
        deadline = [time.monotonic() + model_timeout + IMPORT_GRACE]
        timed_out = [False]

        def _watchdog(p=proc, dl=deadline, flag=timed_out) -> None:
            while p.poll() is None:
                if time.monotonic() > dl[0]:
                    flag[0] = True
                    p.kill()
                    return
                time.sleep(1)

        threading.Thread(target=_watchdog, daemon=True).start()
        current: str | None = None
        recs: list[dict] = []
        finished: set[str] = set()
        try:
            try:
                proc.stdin.write(json.dumps({**job, "models": pending}) + "\n")  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
            except BrokenPipeError:  # the worker died at once; its exit status says why
                pass
            for line in proc.stdout:  # type: ignore[union-attr]
                if line.startswith(MODEL_START):
                    current = json.loads(line[len(MODEL_START):])
                    recs = []
                    deadline[0] = time.monotonic() + model_timeout
                elif line.startswith(CELL_PREFIX):
                    try:
                        recs.append(json.loads(line[len(CELL_PREFIX):]))
                    except ValueError:
                        pass
                elif line.startswith(MODEL_DONE):
                    mid = json.loads(line[len(MODEL_DONE):])
                    if mid in by_id and mid not in finished:
                        finished.add(mid)
                        yield mid, recs + missing(by_id[mid]["cells"], recs, "worker produced no record for this cell")
                    current, recs = None, []
            rc = proc.wait()
        finally:
            if proc.poll() is None:  # the consumer stopped early (task cancelled, driver interrupted)
                proc.kill()
                proc.wait()
        pending = [m for m in pending if m["model_id"] not in finished]
        if not pending:
            return
        reason = ("worker killed after %.0f s on this model" % model_timeout if timed_out[0]
                  else f"worker exited with status {rc}") + "; stderr: " + "".join(err_tail)[-600:]
        if current is not None and current in by_id:  # the model in flight killed the worker: go on without it
            yield current, recs + missing(by_id[current]["cells"], recs, reason)
            pending = [m for m in pending if m["model_id"] != current]
        else:  # died before any model started (import failure): every pending model is a harness error
            for m in pending:
                yield m["model_id"], missing(m["cells"], [], reason)
            return


def run_job(python: str, script: str | os.PathLike, job: dict, *, model_timeout: float,
            on_model: Callable[[str, list[dict]], None]) -> None:
    """:func:`iter_job` with ``on_model(model_id, records)`` called as each model completes."""
    for mid, recs in iter_job(python, str(script), job, model_timeout=model_timeout):
        on_model(mid, recs)


# ----------------------------------------------------------------------------------------------------
# a Ray task's side (conformance.cluster ships these functions to the nodes)
# ----------------------------------------------------------------------------------------------------

_IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.M)


def script_bundle(script: str | os.PathLike) -> dict:
    """The worker script and the sibling modules it imports (``worker_common.py``), as text, for a node that
    does not hold the repository: ``{"path": <script path here>, "files": {file name: text}}``."""
    script = Path(script)
    files: dict[str, str] = {}
    todo = [script.name]
    while todo:
        name = todo.pop()
        if name in files:
            continue
        files[name] = (script.parent / name).read_text(encoding="utf-8")
        todo += [f"{m}.py" for m in _IMPORT.findall(files[name]) if (script.parent / f"{m}.py").is_file()]
    return {"path": str(script), "files": files}


def job_files(job: dict) -> dict[str, str]:
    """``{path: text}`` of every file a job names (each model's ``config_path`` and sidecar files)."""
    out: dict[str, str] = {}
    for m in job["models"]:
        for p in [m["config_path"], *(m.get("sidecars") or {}).values()]:
            out[p] = Path(p).read_text(encoding="utf-8")
        # read as text: configs and sidecars are JSON
    return out


def _same_file(path: str, text: str) -> bool:
    try:
        return Path(path).read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def run_task(python: str, bundle: dict, job: dict, files: dict[str, str],
             model_timeout: float) -> Iterator[tuple[str, list[dict]]]:
    """A Ray task's body: :func:`iter_job` on this node. The script runs from its path when that holds the
    same text as the driver's (a local Ray, or a node with the same checkout), else from a temporary folder
    holding the bundle; likewise each file of ``files`` (configs, sidecars) is used in place or written to the
    temporary folder, and the job's paths are rewritten to it. ``python`` must exist on this node: the venv is
    assumed at the same path on every node."""
    if not os.path.exists(python):
        raise RuntimeError(f"no interpreter at {python} on node {socket.gethostname()}: the framework's venv must "
                           "exist at the same path on every node of the Ray cluster (data/conformance/README.md)")
    tmp: str | None = None

    def _tmp() -> str:
        nonlocal tmp
        if tmp is None:
            tmp = tempfile.mkdtemp(prefix="conformance-task-")
        return tmp

    try:
        script = bundle["path"]
        name = os.path.basename(script)
        if not all(_same_file(os.path.join(os.path.dirname(script), n), t) for n, t in bundle["files"].items()):
            d = os.path.join(_tmp(), "conformance")
            os.makedirs(d, exist_ok=True)
            for n, t in bundle["files"].items():
                Path(d, n).write_text(t, encoding="utf-8")
            script = os.path.join(d, name)
        where = {}
        for i, (p, t) in enumerate(sorted(files.items())):
            if _same_file(p, t):
                where[p] = p
            else:
                d = os.path.join(_tmp(), "files", str(i))
                os.makedirs(d, exist_ok=True)
                where[p] = os.path.join(d, os.path.basename(p))
                Path(where[p]).write_text(t, encoding="utf-8")
        models = [dict(m, config_path=where.get(m["config_path"], m["config_path"]),
                       sidecars={k: where.get(v, v) for k, v in (m.get("sidecars") or {}).items()})
                  for m in job["models"]]
        yield from iter_job(python, script, {**job, "models": models}, model_timeout=model_timeout)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
