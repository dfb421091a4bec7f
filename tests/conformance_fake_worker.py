"""A stand-in conformance worker (no framework installed): speaks the worker protocol of
``conformance/worker_common.py`` (the job on the first stdin line; per model ``@@MODEL_START "<id>"``, one
``@@CELL <json>`` line per cell, ``@@MODEL_DONE "<id>"``), so the driver's executors can be tested and
benchmarked without vLLM or SGLang (tests/test_conformance_ray.py, scripts/bench_conformance_ray.py).

Standard library only and self-contained (the driver runs it as ``python tests/conformance_fake_worker.py``, or
from a task's temporary folder on a Ray node). The verdict of a cell: ``built`` when the config's
``num_attention_heads`` divides by the cell's TP size, else ``refused_engine`` (a ``ValueError`` in the shape of
vLLM's head check). Keys of the model's config that steer it, for the tests:

* ``"fake_crash_after": N`` -- exit with status 3 after N cells of this model (a worker crash mid-model);
* ``"fake_hang": true`` -- stop answering at this model's first cell (a stalled worker).

Environment: ``FAKE_WORKER_IMPORT_S`` (seconds slept at start, a framework's import; default 0),
``FAKE_WORKER_CELL_S`` (seconds per cell; default 0), ``FAKE_WORKER_VERSION`` (default ``0.0.0-fake``).
Each record also carries ``worker_pid`` and ``worker_ppid`` (which process ran it).
"""

from __future__ import annotations

import json
import os
import sys
import time

CELL_PREFIX = "@@CELL "
MODEL_START = "@@MODEL_START "
MODEL_DONE = "@@MODEL_DONE "


def main() -> int:
    job = json.loads(sys.stdin.readline())
    time.sleep(float(os.environ.get("FAKE_WORKER_IMPORT_S", "0")))
    version = os.environ.get("FAKE_WORKER_VERSION", "0.0.0-fake")
    per_cell = float(os.environ.get("FAKE_WORKER_CELL_S", "0"))
    for m in job["models"]:
        sys.stdout.write(MODEL_START + json.dumps(m["model_id"]) + "\n")
        sys.stdout.flush()
        with open(m["config_path"], encoding="utf-8") as fh:
            cfg = json.load(fh)
        heads = int(cfg.get("num_attention_heads") or cfg.get("text_config", {}).get("num_attention_heads") or 1)
        for i, cell in enumerate(m["cells"]):
            if cfg.get("fake_crash_after") is not None and i >= int(cfg["fake_crash_after"]):
                sys.stderr.write(f"fake worker: crashing on {m['model_id']} after {i} cells\n")
                sys.stderr.flush()
                os._exit(3)
            if cfg.get("fake_hang"):
                time.sleep(3600)
            time.sleep(per_cell)
            r = dict(cell, version=version, platform=job.get("platform", "cuda-sm90"), model_id=m["model_id"],
                     sidecars=sorted(m.get("sidecars") or {}), seconds=per_cell, worker_pid=os.getpid(),
                     worker_ppid=os.getppid())
            tp = int(cell["tp"])
            if heads % tp == 0:
                r.update(outcome="built", param_bytes=1000 // tp, param_count=500 // tp)
            else:
                r.update(outcome="refused_engine", exc_type="ValueError",
                         message=f"Total number of attention heads ({heads}) must be divisible by tensor "
                         f"parallel size ({tp}).", file="fake/config.py", line=1, function="verify")
            sys.stdout.write(CELL_PREFIX + json.dumps(r) + "\n")
            sys.stdout.flush()
        sys.stdout.write(MODEL_DONE + json.dumps(m["model_id"]) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
