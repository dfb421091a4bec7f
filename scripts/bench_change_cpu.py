#!/usr/bin/env python
"""Server CPU of one dashboard control change, in process (no server, no browser): before / after.

One session's app (:class:`dashboard.app.DashboardApp`, the shipped catalog or ``TP_PLANNER_CATALOG``) is
rendered into a Bokeh ``Document``; then ``--changes`` control changes cycle through the controls
``scripts/load_test.py`` drives (the selected model, the TP of the selected cell, the GPU), each set on its
widget as Panel sets it from the browser's patch. A change's cost is the process CPU time
(``time.process_time``) of applying it -- every watcher, every view update, the Bokeh models it changes --
plus serializing the document events it produced into the ``PATCH-DOC`` message the server would send
(``bokeh.protocol``), so work moved to the wire is counted too. ``--warm`` changes are made first and not
counted (first use of a model, caches). Every session starts from the same seed: the same changes.

With ``--ref REV`` (default ``main``) the same measurement runs, in the same invocation, in a fresh process
on a ``git archive`` of ``REV`` and in a fresh process on this checkout, alternating ``--repeat`` times;
it prints both, and the ratio of the medians (before / after). Speed targets are printed, not asserted.

Usage::

    python scripts/bench_change_cpu.py                    # main vs this checkout, 60 changes each
    python scripts/bench_change_cpu.py --ref HEAD~3 --changes 90
    python scripts/bench_change_cpu.py --only             # this checkout only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_worst_case import export  # noqa: E402 - git archive of a revision, unpacked (one helper for both)


def measure(changes: int, warm: int, seed: int) -> dict:
    """Run in the tree on ``sys.path[0]``: per-change CPU seconds by control."""
    import holoviews as hv
    import panel as pn
    from bokeh.document import Document
    from bokeh.document.events import DocumentPatchedEvent
    from bokeh.protocol import Protocol

    pn.extension("tabulator", notifications=False)
    hv.extension("bokeh", logo=False)
    from dashboard.app import DashboardApp
    from dashboard.state import catalog_path, load_app_data

    data = load_app_data(catalog_path())
    app = DashboardApp(data=data)
    doc = Document()
    doc.add_root(app.__panel__().get_root(doc))
    events: list = []
    doc.on_change(lambda e: events.append(e))
    protocol = Protocol()
    c = app.controls
    rng = random.Random(seed)
    models = [m for m in c.model.options][:60]
    tps = [str(t) for t in c.tp.options]
    gpus = [g for g in c.gpu.options if not str(g).lower().startswith("other")]
    if isinstance(c.gpu.options, dict):
        gpus = [v for k, v in c.gpu.options.items() if not str(k).lower().startswith("other")]
    plan = [("model", c.model, models), ("tp", c.tp, tps), ("gpu", c.gpu, gpus)]
    out: dict[str, list[float]] = {k: [] for k, _, _ in plan}
    patch_bytes: list[int] = []
    for i in range(warm + changes):
        key, w, pool = plan[i % len(plan)]
        cur = w.value
        choices = [v for v in pool if v != cur and str(v) != str(cur)] or pool
        value = rng.choice(choices)
        if key == "tp" and not isinstance(cur, str):
            value = type(cur)(value)
        events.clear()
        t0 = time.process_time()
        w.value = value
        patched = [e for e in events if isinstance(e, DocumentPatchedEvent)]
        msg = protocol.create("PATCH-DOC", patched) if patched else None
        size = len(msg.content_json) if msg is not None else 0  # (serializes the events)
        dt = time.process_time() - t0
        if i >= warm:
            out[key].append(dt)
            patch_bytes.append(size)
    return {"per_control": out, "patch_bytes": patch_bytes}


def summary(res: dict) -> dict:
    allv = [x for v in res["per_control"].values() for x in v]
    q = statistics.quantiles(allv, n=20) if len(allv) >= 2 else allv * 19
    return {"median_ms": 1e3 * statistics.median(allv), "mean_ms": 1e3 * statistics.fmean(allv),
            "p95_ms": 1e3 * q[18],
            "by_control_median_ms": {k: 1e3 * statistics.median(v) for k, v in res["per_control"].items() if v},
            "patch_kib_median": statistics.median(res["patch_bytes"]) / 1024}


def run_child(tree: Path, args) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOKEH_")}
    env.update(PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(tree), "--changes",
                        str(args.changes), "--warm", str(args.warm), "--seed", str(args.seed)],
                       cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"measurement in {tree} failed:\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def line(name: str, s: dict) -> str:
    by = ", ".join(f"{k} {v:.1f}" for k, v in s["by_control_median_ms"].items())
    return (f"{name:<8} median {s['median_ms']:7.1f} ms  mean {s['mean_ms']:7.1f} ms  p95 {s['p95_ms']:7.1f} ms"
            f"  (median by control: {by}; patch {s['patch_kib_median']:.1f} KiB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--ref", default="main", help="git revision measured as 'before' (default main)")
    ap.add_argument("--only", action="store_true", help="measure this checkout only")
    ap.add_argument("--changes", type=int, default=60)
    ap.add_argument("--warm", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=2, help="processes per tree, alternating (default 2)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.path.insert(0, args.child)
        print(json.dumps(measure(args.changes, args.warm, args.seed)))
        return 0
    if args.only:
        s = summary(run_child(ROOT, args))
        print(line("this", s))
        return 0
    with tempfile.TemporaryDirectory(prefix="tp-bench-change-") as tmp:
        base = export(args.ref, Path(tmp))
        runs: dict[str, dict] = {"before": {"per_control": {}, "patch_bytes": []},
                                 "after": {"per_control": {}, "patch_bytes": []}}
        for _ in range(args.repeat):
            for name, tree in (("before", base), ("after", ROOT)):
                r = run_child(tree, args)
                for k, v in r["per_control"].items():
                    runs[name]["per_control"].setdefault(k, []).extend(v)
                runs[name]["patch_bytes"].extend(r["patch_bytes"])
        sb, sa = summary(runs["before"]), summary(runs["after"])
    print(f"server CPU per control change (model / TP of the selected cell / GPU), {args.changes} changes x "
          f"{args.repeat} processes per tree, in process:")
    print(line("before", sb) + f"  [{args.ref}]")
    print(line("after", sa) + "  [this checkout]")
    print(f"ratio before/after: median {sb['median_ms'] / max(sa['median_ms'], 1e-9):.2f}x, "
          f"mean {sb['mean_ms'] / max(sa['mean_ms'], 1e-9):.2f}x, p95 {sb['p95_ms'] / max(sa['p95_ms'], 1e-9):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
