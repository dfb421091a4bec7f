#!/usr/bin/env python
"""Run the benchmarks against an older commit and this tree, in one run, and print new / old ratios.

    python scripts/bench_compare.py OLD_REV [--rounds 2] [--only grid,plan,ui,plan_ui] [--json OUT]

Makes a temporary ``git worktree`` of ``OLD_REV`` (removed at the end), then runs each benchmark script
of each tree in that tree's own checkout (``cwd`` and ``PYTHONPATH`` set to it, so the tree's own
``dashboard`` is imported, not the editable install's), alternating old / new / new / old ... for
``--rounds`` rounds so that a shared machine's load falls on both sides alike. Each run's key figures are
read from the script's own output (``--json`` for the two browser benchmarks, the printed lines for the
other two) plus the CPU seconds the whole script and its children used (``getrusage``: on a
shared machine much less inflated by other processes than wall time); the table gives each figure's median over the rounds per side and the ratio new / old
(below 1: the new tree is faster). Asserts nothing about time: the machine is shared and noisy.

The benchmarks and their figures (all times, lower is better):
  grid     scripts/bench_grid.py --models M     vectorized validity grid, seconds
  plan     scripts/bench_plan.py --max-gpus N   planner.plan p50/p90 wall ms; plan_catalog wall s
  ui       scripts/bench_ui.py                  first render ms; control change -> repaint p50/p95 ms
  plan_ui  scripts/bench_plan_ui.py             Plan tab change -> repaint median/p95 ms
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _num(pattern: str, text: str) -> float | None:
    m = re.search(pattern, text)
    return float(m.group(1).replace(",", "")) if m else None


def _grid(out: str, _js: dict | None) -> dict[str, float | None]:
    return {"grid s": _num(r"grid \(vectorized\): ([\d.]+) s", out),
            "grid 5 frameworks s": _num(r"grid with \d+ frameworks \([\d,]+ cells\): ([\d.]+) s", out)}


def _plan(out: str, _js: dict | None) -> dict[str, float | None]:
    cat = re.findall(r"plan_catalog\([^\n]*wall ([\d.]+) s", out)
    cpu = re.findall(r"plan_catalog\([^\n]*CPU ([\d.]+) s", out)
    return {"plan p50 ms": _num(r"wall: p50 ([\d.]+) ms", out),
            "plan p50 CPU ms": _num(r"CPU:  p50 ([\d.]+) ms", out),
            "plan_catalog repeated CPU s": float(cpu[0]) if len(cpu) > 0 else None,
            "plan_catalog distinct CPU s": float(cpu[1]) if len(cpu) > 1 else None,
            "plan p90 ms": _num(r"wall: p50 [\d.]+ ms, p90 ([\d.]+) ms", out),
            "plan_catalog repeated s": float(cat[0]) if len(cat) > 0 else None,
            "plan_catalog distinct s": float(cat[1]) if len(cat) > 1 else None}


def _ui(_out: str, js: dict | None) -> dict[str, float | None]:
    js = js or {}
    return {"first render cold ms": js.get("first_render_cold_ms"),
            "first render warm p50 ms": js.get("first_render_warm_p50_ms"),
            "change p50 ms": js.get("change_p50_ms"), "change p95 ms": js.get("change_p95_ms")}


def _plan_ui(out: str, _js: dict | None) -> dict[str, float | None]:
    m = re.search(r"^all\s+\d+\s+([\d.]+) ms\s+([\d.]+) ms", out, re.M)
    return {"plan tab change median ms": float(m.group(1)) if m else None,
            "plan tab change p95 ms": float(m.group(2)) if m else None}


BENCHES = {
    "grid": (["scripts/bench_grid.py", "--models", "100000"], _grid, False),
    "plan": (["scripts/bench_plan.py", "--max-gpus", "256", "--models", "10000"], _plan, False),
    "ui": (["scripts/bench_ui.py", "--changes", "30", "--loads", "4"], _ui, True),
    "plan_ui": (["scripts/bench_plan_ui.py", "--changes", "24"], _plan_ui, True),
}


def run_one(tree: Path, name: str, timeout: float = 900) -> dict[str, float | None]:
    """One benchmark in one tree: its figures (``None`` where the output lacked one)."""
    args, parse, wants_json = BENCHES[name]
    env = dict(os.environ, PYTHONPATH=str(tree))
    with tempfile.TemporaryDirectory() as tmp:
        js_path = Path(tmp) / "out.json"
        cmd = [sys.executable, *args] + (["--json", str(js_path)] if wants_json else [])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
            out = p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            out = f"timeout after {e.timeout} s"
        js = json.loads(js_path.read_text()) if js_path.exists() else None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figs = parse(out, js)
    # CPU seconds of the whole script and what it started (server, browser): on a shared machine less
    # inflated by other processes than wall time
    figs["script CPU s"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if all(v is None for v in figs.values()):
        print(f"  [{name} @ {tree}] no figures read; output tail:\n{out[-800:]}", file=sys.stderr)
    return figs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="the older commit (any git revision)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default=",".join(BENCHES), help="comma-separated: " + ",".join(BENCHES))
    ap.add_argument("--json", type=Path, help="also write every run's figures here")
    a = ap.parse_args(argv)
    names = [n for n in a.only.split(",") if n]
    bad = [n for n in names if n not in BENCHES]
    if bad:
        ap.error(f"unknown benchmark(s): {', '.join(bad)} (choose from {', '.join(BENCHES)})")
    rev = subprocess.run(["git", "rev-parse", "--short", a.old], cwd=ROOT, capture_output=True, text=True)
    if rev.returncode:
        ap.error(f"not a revision: {a.old}")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    runs: dict[str, dict[str, list[dict]]] = {n: {"old": [], "new": []} for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = Path(tmp) / "old"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old_tree), a.old], cwd=ROOT, check=True)
        try:
            for r in range(a.rounds):
                order = [("old", old_tree), ("new", ROOT)]
                if r % 2:
                    order.reverse()
                for n in names:
                    for side, tree in order:
                        print(f"round {r + 1}/{a.rounds}: {n} ({side})", file=sys.stderr, flush=True)
                        runs[n][side].append(run_one(tree, n))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=ROOT)
    print(f"old = {rev.stdout.strip()}, new = {head} (working tree), {a.rounds} rounds alternated, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"{'figure':<34}{'old':>12}{'new':>12}{'new/old':>10}")
    for n in names:
        keys = list(runs[n]["new"][0]) if runs[n]["new"] else []
        for k in keys:
            med = {}
            for side in ("old", "new"):
                vals = [x[k] for x in runs[n][side] if x.get(k) is not None]
                med[side] = statistics.median(vals) if vals else None
            ratio = (f"{med['new'] / med['old']:.2f}" if med["old"] and med["new"] is not None else "n/a")
            fmt = lambda v: "n/a" if v is None else f"{v:.2f}"  # noqa: E731
            print(f"{k:<34}{fmt(med['old']):>12}{fmt(med['new']):>12}{ratio:>10}")
    if a.json:
        a.json.write_text(json.dumps({"old": rev.stdout.strip(), "new": head, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
