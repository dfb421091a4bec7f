#!/usr/bin/env python
"""The conformance sweep through the old thread pool and through Ray (``--ray auto``), in one run: wall times
and the ratio.

    python scripts/bench_conformance_ray.py --venv /work/venvs/vllm-0.33.0 --models 8 --depth tp
    python scripts/bench_conformance_ray.py --fake --models 16 --depth tp       # no framework: the fake worker

The old pool is the driver as it was before Ray (the parent of the commit that added
``conformance/cluster.py``, or ``--base REV``), unpacked with ``git archive`` into a temporary folder and run
from there; the new driver is this tree's. Each side runs in its own process (``cwd`` and ``PYTHONPATH`` its
tree), on the same models, cells, ``--workers`` and ``--batch``, into its own temporary work folder
(``driver.DATA`` pointed there, so the repository's checkpoints are neither read nor written), and the two
sides' records are compared cell by cell at the end (outcome, exception, message, raise site, parameter bytes).
The Ray side's time includes starting the local Ray (shown apart too). ``--rounds 2`` runs old, new, new, old
so that a shared machine's load falls on both alike; the figures are per round and the median.

``--fake`` runs ``tests/conformance_fake_worker.py`` (``FAKE_WORKER_IMPORT_S``, default here 3 s, stands for the
framework's import; ``FAKE_WORKER_CELL_S``, default 0.05 s per cell) with this Python. The load average is
printed before and after each side: the machine may be shared. Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "conformance_fake_worker.py"

SNIPPET = r"""
import json, sys, time
from pathlib import Path
a = json.loads(sys.argv[1])
from conformance import driver
driver.DATA = Path(a["data"])
if a["fake"]:
    driver.WORKER[a["framework"]] = Path(a["fake"])
kw = dict(models=a["models"], depth=a["depth"], workers=a["workers"], batch=a["batch"], log=lambda s: None)
t0 = time.monotonic()
start = 0.0
if a["ray"]:
    from conformance import cluster
    cluster.start_local(a["workers"])
    start = time.monotonic() - t0
    kw["ray"] = "auto"
wd = driver.run(a["python"], a["framework"], a["version"], Path(a["configs"]), **kw)
total = time.monotonic() - t0
print("@@BENCH " + json.dumps({"total": total, "ray_start": start, "work": str(wd)}), flush=True)
if a["ray"]:
    import ray
    ray.shutdown()
"""

VOLATILE = ("seconds", "worker_pid", "worker_ppid", "innermost", "stack")


def base_rev() -> str:
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", "conformance/cluster.py"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    if not added:
        raise SystemExit("conformance/cluster.py is not committed yet: give --base REV (the pre-Ray driver)")
    return added[-1] + "^"


def unpack(rev: str, dest: Path) -> Path:
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def side(tree: Path, ray: bool, args, python: str, version: str, models: list[str], data: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    if args.fake:
        env.setdefault("FAKE_WORKER_IMPORT_S", "3")
        env.setdefault("FAKE_WORKER_CELL_S", "0.05")
        env.setdefault("FAKE_WORKER_VERSION", version)
    job = {"data": str(data), "fake": str(FAKE) if args.fake else "", "framework": args.framework,
           "models": models, "depth": args.depth, "workers": args.workers, "batch": args.batch, "ray": ray,
           "python": python, "version": version, "configs": str(args.configs)}
    la = loadavg()
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", SNIPPET, json.dumps(job)], cwd=tree, env=env, capture_output=True,
                         text=True)
    wall = time.monotonic() - t0
    if out.returncode != 0:
        raise SystemExit(f"{'ray' if ray else 'pool'} side failed ({out.returncode}):\n{out.stderr[-3000:]}")
    res = json.loads(next(l for l in out.stdout.splitlines() if l.startswith("@@BENCH "))[8:])
    res.update(process=wall, load_before=la, load_after=loadavg())
    return res


def records(work: Path) -> dict:
    out = {}
    for p in sorted(Path(work).glob("*.json")):
        for r in json.loads(p.read_text())["records"]:
            r = {k: v for k, v in r.items() if k not in VOLATILE}
            r["message"] = re.sub(r"/tmp/conf-\w+", "<config dir>", str(r.get("message") or ""))
            r["reason"] = re.sub(r"/tmp/conf-\w+", "<config dir>", str(r.get("reason") or ""))
            out[(r["model_id"], r["tp"], r["pp"], r["dp"], int(r["ep"]), int(r.get("vision_dp", 0)))] = r
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--venv", help="the framework's virtualenv (e.g. /work/venvs/vllm-0.33.0)")
    g.add_argument("--fake", action="store_true", help="the fake worker (tests/conformance_fake_worker.py)")
    ap.add_argument("--framework", default="vllm")
    ap.add_argument("--configs", type=Path, default=ROOT.parent / "shared" / "hub-configs")
    ap.add_argument("--models", nargs="+", default=["8"],
                    help="a number (a sample of the configs, --seed) or model ids (default: 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--depth", choices=("full", "tp"), default="tp")
    ap.add_argument("--workers", type=int, default=2, help="pool threads / local Ray CPUs (default: 2)")
    ap.add_argument("--batch", type=int, help="models per worker process (default: models / workers, rounded up)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of old/new (alternating; default: 1)")
    ap.add_argument("--base", help="git revision of the pre-Ray driver (default: the parent of the commit that "
                    "added conformance/cluster.py)")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from conformance import driver

    if len(args.models) == 1 and args.models[0].isdigit():
        models = sorted(driver.sample_models(args.configs, int(args.models[0]), args.seed))
    else:
        models = args.models
    args.batch = args.batch or -(-len(models) // args.workers)
    if args.fake:
        python, version = sys.executable, "0.0.0-fake"
    else:
        python = driver.python_of(args.venv)
        if not (Path(args.venv) / "conformance-stubs" / "libcuda.so.1").exists():
            raise SystemExit(f"build the libcuda stand-in first: python -m conformance stub --venv {args.venv}")
        version = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({args.framework!r}))"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    rev = args.base or base_rev()
    print(f"{args.framework} {version}: {len(models)} models, depth {args.depth}, workers {args.workers}, "
          f"batch {args.batch}; old pool = {rev}; {os.cpu_count()} CPUs")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-conformance-ray-") as tmp:
        old_tree = unpack(rev, Path(tmp) / "old")
        if (old_tree / "conformance" / "cluster.py").exists():
            raise SystemExit(f"{rev} already has conformance/cluster.py: give --base the pre-Ray revision")
        order = []
        for i in range(args.rounds):
            order += [("pool", "ray"), ("ray", "pool")][i % 2]
        works = {}
        for n, name in enumerate(order):
            data = Path(tmp) / f"data-{n}-{name}"
            tree = old_tree if name == "pool" else ROOT
            res = side(tree, name == "ray", args, python, version, models, data)
            res["name"] = name
            rows.append(res)
            works.setdefault(name, res["work"])
            extra = f" (Ray start {res['ray_start']:.1f} s, sweep {res['total'] - res['ray_start']:.1f} s)" \
                if name == "ray" else ""
            print(f"  {name:4s} {res['total']:7.1f} s{extra}; process {res['process']:.1f} s; "
                  f"load {res['load_before']} -> {res['load_after']}", flush=True)
        old, new = records(works["pool"]), records(works["ray"])
        same = sum(1 for k in old if k in new and old[k] == new[k])
        diff = sorted(set(old) ^ set(new)) + [k for k in old if k in new and old[k] != new[k]]
    med = {n: statistics.median(r["total"] for r in rows if r["name"] == n) for n in ("pool", "ray")}
    sweep = statistics.median(r["total"] - r["ray_start"] for r in rows if r["name"] == "ray")
    print(f"median wall: old pool {med['pool']:.1f} s, Ray {med['ray']:.1f} s (of which sweep {sweep:.1f} s); "
          f"ratio Ray / pool {med['ray'] / med['pool']:.2f} (sweep only {sweep / med['pool']:.2f})")
    print(f"records: {same} of {len(old)} cells identical between the two sides"
          + (f"; differing: {diff[:5]}" if diff else ""))
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())
