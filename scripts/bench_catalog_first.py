"""Time ``tp-planner check`` and ``tp-planner plan`` on a catalog model with a dead ``HF_ENDPOINT`` and
``HF_HUB_OFFLINE`` unset (issue 22: the shipped catalog answers, no network). Prints, per command, the wall
time of a fresh process, the time inside it after interpreter start-up, and whether huggingface_hub was
imported (it must not be). A benchmark, not a test: the figures depend on the machine's load.

Byte-compiled modules are allowed (``PYTHONDONTWRITEBYTECODE`` is removed from the child's environment)
and one unmeasured run writes them first, as a user's first ``tp-planner`` call does after ``pip install``:
without them every run recompiles ~80 modules of the package (~0.2 s here), which no installed tool pays.

    python scripts/bench_catalog_first.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = "meta-llama/Llama-3.1-70B-Instruct"
PROBE = ("import sys, time\nt0 = time.perf_counter()\nfrom dashboard.cli import main\nrc = main(sys.argv[1:])\n"
         "print('PROBE', round(time.perf_counter() - t0, 3), 'huggingface_hub' in sys.modules, rc)\n")
COMMANDS = {
    "check": ["check", MODEL, "--framework", "vllm", "--tp", "6"],
    "plan": ["plan", MODEL, "--gpus", "8", "--gpu", "H100-80GB", "--limit", "1"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGING_FACE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HF_ENDPOINT="http://127.0.0.1:9", PYTHONPATH=str(ROOT))
    for name, argv in COMMANDS.items():
        wall, inner, hub = [], [], set()
        subprocess.run([sys.executable, "-c", PROBE, *argv], env=env, cwd=ROOT, capture_output=True)  # warm-up
        for _ in range(args.runs):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", PROBE, *argv], env=env, cwd=ROOT, capture_output=True, text=True)
            wall.append(time.perf_counter() - t0)
            line = [ln for ln in r.stdout.splitlines() if ln.startswith("PROBE")][-1].split()
            inner.append(float(line[1]))
            hub.add(line[2])
        print(f"{name}: median wall {statistics.median(wall):.2f} s (fresh process), {statistics.median(inner):.2f} s "
              f"after start-up; huggingface_hub imported: {', '.join(sorted(hub))}; runs {args.runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
