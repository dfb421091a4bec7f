"""The sweep on Ray: one task per batch of models, on a local Ray or on a cluster.

``python -m conformance run --ray auto`` starts a local Ray (``num_cpus`` = ``--workers``, else the machine's
CPUs); ``--ray HOST:PORT`` connects to a running cluster (``ray start --head`` on one machine, ``ray start
--address HOST:PORT`` on the others; data/conformance/README.md). Without ``--ray``, a local Ray is started too,
except with ``--workers 1``: then the batches run one after the other in this process
(:func:`conformance.executor.run_job`), because starting Ray costs 20-45 s on this shared 2-core machine, longer than a
one-model run takes.

Each task runs :func:`conformance.executor.run_task` on a node: the framework venv's interpreter on the worker
script, exactly as the serial path does, and streams ``(model_id, records)`` back as each model completes (a
Ray streaming generator). The driver alone writes the per-model checkpoints as the records arrive, so an
interrupted sweep loses at most the models in flight and resumes where it stopped. The executor module, the
worker script and its sibling modules, and the configs travel with the tasks (by value / as text): a node needs
Ray (the driver's version, and the driver's Python minor version) and the venv at the same path, nothing of the
project.

Ray is imported here only (a test dependency, ``pip install ray``); the ``dashboard`` package never imports it.
"""

from __future__ import annotations

import os
import re
import socket
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable

from conformance import executor

#: Seconds a ``--ray HOST:PORT`` gets to answer (TCP connect), then to accept ``ray.init``.
CONNECT_TIMEOUT = 5.0
INIT_TIMEOUT = 60.0
#: A closed local port (discard): the proxy of a local start's Ray processes (see :func:`start_local`).
_DEAD_PROXY = "http://127.0.0.1:9"


class RayUnavailable(RuntimeError):
    """Ray is not installed, or no Ray cluster answers at the address given (a one-line message)."""


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (a Ray head's GCS address, as ``ray start --head`` prints it) -> ``(host, port)``;
    :class:`RayUnavailable` for anything else (``ray://`` Ray Client addresses included: run the sweep on a
    machine of the cluster instead)."""
    if address.startswith("ray://"):
        raise RayUnavailable(f"--ray {address}: Ray Client addresses (ray://) are not supported; run the sweep on "
                             "a machine of the cluster with --ray HEAD_IP:6379 (the address 'ray start --head' prints)")
    m = re.fullmatch(r"\[?([^\s\[\]]+?)\]?:(\d{1,5})", address.strip())
    if not m or not 0 < int(m.group(2)) < 65536:
        raise RayUnavailable(f"--ray {address!r}: give 'auto' (start a local Ray) or a cluster's HOST:PORT "
                             "(e.g. 10.0.0.1:6379, the address 'ray start --head' prints)")
    return m.group(1), int(m.group(2))


def check_address(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast with a one-line :class:`RayUnavailable` when nothing listens at ``HOST:PORT`` (``ray.init``
    itself retries for minutes and ignores SIGTERM while it does). ``auto`` passes."""
    if address == "auto":
        return
    host, port = parse_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except socket.gaierror as e:
        raise RayUnavailable(f"--ray {address}: cannot resolve host {host!r} ({e.strerror or e})") from None
    except OSError as e:
        why = "connection refused" if isinstance(e, ConnectionRefusedError) else (
            f"no answer within {timeout:.0f} s" if isinstance(e, (TimeoutError, socket.timeout)) else str(e))
        raise RayUnavailable(f"--ray {address}: no Ray cluster at {host}:{port} ({why}); start its head with "
                             "'ray start --head --port {port}', or use --ray auto for a local Ray".format(port=port)
                             ) from None


def require_ray() -> None:
    """:class:`RayUnavailable` when Ray is not installed (checked without importing it)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise RayUnavailable("Ray is not installed: pip install ray (or run with --workers 1 and without --ray, "
                             "the serial path)")


def _ray():
    require_ray()
    import ray

    return ray


def start_local(num_cpus: int | None = None) -> None:
    """Start a local Ray with ``num_cpus`` task slots (default: the machine's CPUs), no dashboard, usage stats
    off, and nothing reaching the network: Ray's API-server process probes cloud metadata endpoints at start
    (``ray._common.usage.usage_lib.get_cluster_config_to_report``) even with usage stats off, so the Ray processes
    start with their HTTP proxy set to a closed local port (``no_proxy`` keeps the node's own addresses direct;
    Ray's gRPC ignores proxies); the conformance workers do not inherit it (:func:`executor.worker_env`)."""
    ray = _ray()
    set_env = {"RAY_USAGE_STATS_ENABLED": "0", executor.LOCAL_PROXY_MARK: "1",
               **{k: _DEAD_PROXY for k in executor.PROXY_VARS if "no_proxy" not in k.lower()},
               "no_proxy": "localhost,127.0.0.1,::1", "NO_PROXY": "localhost,127.0.0.1,::1"}
    saved = {k: os.environ.get(k) for k in set_env}
    os.environ.update(set_env)
    try:
        for attempt in (1, 2):
            try:
                ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False,
                         log_to_driver=False)
                break
            except Exception as e:  # noqa: BLE001 - Ray's own: "The current node timed out during startup"
                # the raylet must register within a fixed 30 s (ray/_private/node.py); on a loaded machine it
                # may not: one more try, then the error
                ray.shutdown()
                _kill_ray_children(ray)  # the failed start's GCS and raylet, which shutdown() does not know
                if attempt == 2 or "timed out during startup" not in str(e):
                    raise
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _kill_ray_children(ray) -> None:
    """Kill this process's child processes that run Ray's own binaries or scripts (Linux ``/proc``; elsewhere
    nothing): called only after a failed local start, when this process has no Ray of its own."""
    import signal

    here = os.path.dirname(ray.__file__)
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and here in cmd:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def connect(address: str, timeout: float = INIT_TIMEOUT) -> None:
    """``ray.init(address=HOST:PORT)`` after :func:`check_address`, given at most ``timeout`` seconds (a port
    that is open but is not a Ray head makes ``ray.init`` wait forever)."""
    check_address(address)
    ray = _ray()
    box: dict = {}

    def _init() -> None:
        try:
            ray.init(address=address, log_to_driver=False)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=_init, daemon=True, name="ray-init")
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise RayUnavailable(f"--ray {address}: the port answers but no Ray cluster accepted the connection within "
                             f"{timeout:.0f} s (is it a Ray head's GCS port, and the same Ray version?)")
    if "error" in box:
        e = box["error"]
        raise RayUnavailable(f"--ray {address}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e


@contextmanager
def session(address: str | None, workers: int | None, log=print):
    """Ray for the duration of a sweep: the one already initialised in this process (tests, notebooks), else a
    local start (``address`` None or ``auto``) or a connection to ``address``; shut down afterwards when this
    call started it. Yields the number of task slots (the cluster's CPUs)."""
    ray = _ray()
    mine = False
    if not ray.is_initialized():
        if address in (None, "auto"):
            start_local(workers)
            log(f"started a local Ray ({workers or os.cpu_count()} CPUs)")
        else:
            connect(address)
            log(f"connected to the Ray cluster at {address}")
        mine = True
    try:
        yield int(ray.cluster_resources().get("CPU", 1))
    finally:
        if mine:
            ray.shutdown()


def run_jobs(python: str, script: Path, jobs: Iterable[dict], *, model_timeout: float,
             on_model: Callable[[str, list[dict]], None], address: str | None = None, workers: int | None = None,
             log=print) -> list[str]:
    """Run each job (a batch of models, :func:`conformance.driver.job_for`) as a Ray task, calling
    ``on_model(model_id, records)`` in this process as each model's records arrive. At most ``workers`` tasks
    are in flight on a cluster (default: as many as Ray schedules). A task that fails as a whole (its node
    lost, the venv missing there) is logged and its unfinished models are left without a checkpoint for the next
    run; returns the messages of such failures (empty when every model came back)."""
    ray = _ray()
    jobs = list(jobs)
    failures: list[str] = []
    if not jobs:
        return failures
    with session(address, workers, log=log) as slots:
        log(f"{len(jobs)} Ray tasks on {slots} CPUs")
        ray.cloudpickle.register_pickle_by_value(executor)  # the nodes do not have the project
        task = ray.remote(num_cpus=1, max_retries=0)(executor.run_task)
        bundle = ray.put(executor.script_bundle(script))
        limit = max(1, workers) if workers and address not in (None, "auto") else max(len(jobs), 1)
        queue = list(jobs)
        live: dict = {}  # generator -> (job, model ids received)
        while queue or live:
            while queue and len(live) < limit:
                job = queue.pop(0)
                gen = task.remote(python, bundle, job, executor.job_files(job), model_timeout)
                live[gen] = (job, set())
            # a timeout, so that Ctrl-C (KeyboardInterrupt) gets through between waits
            ready, _ = ray.wait(list(live), num_returns=1, timeout=1.0)
            for gen in ready:
                job, got = live[gen]
                try:
                    mid, recs = ray.get(next(gen))
                except StopIteration:
                    del live[gen]
                    continue
                except ray.exceptions.RayError as e:
                    del live[gen]
                    left = [m["model_id"] for m in job["models"] if m["model_id"] not in got]
                    msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                    failures.append(msg)
                    log(f"task failed ({len(left)} models left for the next run: {', '.join(left[:3])}"
                        f"{' ...' if len(left) > 3 else ''}): {msg}")
                    continue
                got.add(mid)
                on_model(mid, recs)
    return failures
