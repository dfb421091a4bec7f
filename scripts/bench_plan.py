"""Benchmark the deployment planner, measured in one run (figures printed, not asserted by any test).

1. ``planner.plan()`` for one model under the three frameworks (vLLM, SGLang, TensorRT-LLM) at every GPU
   count N in 1..1024 (default; ``--max-gpus``): p50 / p90 / max of the calls, target p50 <= 50 ms. The
   first call (cold: the model's per-model columns are computed and cached) is reported apart.
2. ``planner.plan_catalog()`` on a 10,000-model catalog at N = 8 (``--models``), wall time, target <= 2 s,
   twice: the shipped catalog repeated with distinct ids (models of one shape are planned once, as a
   Hub catalog's fine-tunes share their base's shape), and every row made a distinct shape (worst case).

    python scripts/bench_plan.py [--model meta-llama/Llama-3.1-70B-Instruct] [--gpu H100-80GB]
                                 [--max-gpus 1024] [--models 10000] [--context-len 32768]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard import planner  # noqa: E402
from dashboard.catalog import load_catalog  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="meta-llama/Llama-3.1-70B-Instruct")
    ap.add_argument("--gpu", default="H100-80GB")
    ap.add_argument("--max-gpus", type=int, default=1024)
    ap.add_argument("--models", type=int, default=10_000)
    ap.add_argument("--context-len", type=int, default=32768)
    args = ap.parse_args(argv)

    cat = load_catalog()
    rec = cat[cat["model_id"] == args.model].iloc[[0]]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (a shared, busy machine "
          "inflates every figure)")

    t0 = time.perf_counter()
    first = planner.plan(rec, 1, args.gpu, context_len=args.context_len)
    cold = time.perf_counter() - t0
    times, cpu, rows = [], [], []
    for n in range(1, args.max_gpus + 1):
        t, c = time.perf_counter(), time.process_time()
        p = planner.plan(rec, n, args.gpu, context_len=args.context_len)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        rows.append(len(p))
    ms, cms = np.array(times) * 1e3, np.array(cpu) * 1e3
    print(f"\nplan({args.model}, N, {args.gpu}, 3 frameworks, {args.context_len}-token context), N = 1..{args.max_gpus}:")
    print(f"  cold first call: {cold * 1e3:.0f} ms ({len(first)} layouts)")
    print(f"  wall: p50 {np.percentile(ms, 50):.1f} ms, p90 {np.percentile(ms, 90):.1f} ms, max {ms.max():.1f} ms "
          f"(at N = {int(np.argmax(ms)) + 1}); layouts per call: median {int(np.median(rows))}, max {max(rows)}")
    # CPU time of this process: what the call costs when it has a core to itself (wall time on a shared,
    # loaded machine also counts the time other processes held the cores)
    print(f"  CPU:  p50 {np.percentile(cms, 50):.1f} ms, p90 {np.percentile(cms, 90):.1f} ms; "
          f"wall / CPU at p50: {np.percentile(ms, 50) / max(np.percentile(cms, 50), 1e-9):.2f}")
    print(f"  target p50 <= 50 ms: wall {'met' if np.percentile(ms, 50) <= 50 else 'NOT met'}, "
          f"CPU {'met' if np.percentile(cms, 50) <= 50 else 'NOT met'}")

    reps = -(-args.models // len(cat))
    big = pd.concat([cat.assign(model_id=cat["model_id"].astype(str) + f"#{i}") for i in range(reps)],
                    ignore_index=True).head(args.models)
    # worst case: every row its own shape (max_position_embeddings, which no rule or memory figure at a
    # given context length reads, differs per row), so plan_catalog cannot share work between fine-tunes
    distinct = big.assign(max_position_embeddings=pd.array(np.arange(len(big)) + 1_000_000, dtype="Int64"))
    print()
    for label, frame in (("the shipped catalog's shapes repeated, as fine-tunes repeat their base", big),
                         ("every row a distinct shape (worst case)", distinct)):
        t, c = time.perf_counter(), time.process_time()
        pc = planner.plan_catalog(frame, 8, args.gpu, min_sequences=16, context_len=args.context_len)
        el, cel = time.perf_counter() - t, time.process_time() - c
        serves = pc.groupby("framework")["serves"].sum().to_dict()
        print(f"plan_catalog({len(frame):,} models: {label}; N = 8, {args.gpu}, >= 16 x {args.context_len}-token "
              f"sequences): wall {el:.2f} s, CPU {cel:.2f} s; models served per framework: {serves}")
        print(f"  target <= 2 s: wall {'met' if el <= 2 else 'NOT met'}, CPU {'met' if cel <= 2 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
