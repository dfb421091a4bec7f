"""Scrape throughput against the local fake Hub: 1 worker vs 16 workers, 50 ms injected latency.

Usage::

    python scripts/bench_scrape.py [--latency 0.05] [--repos-1 40] [--repos-16 320] [--workers 16]

The fake Hub (``tests/hubserver.py``) runs in its own process (its own GIL, like a remote server) and
adds ``--latency`` seconds to every answer. Each repo of a fresh run costs three round trips through
the real huggingface_hub client (``model_info``, ``HEAD`` and ``GET`` of ``config.json``) plus
normalization and the journal line; both runs start from an empty catalog and an empty HF cache.
Prints repos/s for each worker count and the speed-up, measured in one run (target >= 8x), then the
throughput of an incremental re-run (unchanged shas: one ``model_info`` per repo, no download).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dashboard.hub import scrape  # noqa: E402


def _start_server(n: int, latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "hubserver.py"), "--repos", str(n), "--latency", str(latency)],
        stdout=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("READY "):
        proc.kill()
        raise SystemExit(f"fake hub did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def _run(ids: list[str], workers: int, url: str, work: Path, tag: str) -> tuple[float, object]:
    t0 = time.perf_counter()
    _, summary = scrape(
        ids, workers=workers, endpoint=url, catalog_path=work / f"{tag}.parquet", cache_dir=work / f"cache-{tag}",
        progress=False, timeout=30.0,
    )
    dt = time.perf_counter() - t0
    if summary.statuses["ok"] != len(ids):  # type: ignore[attr-defined]
        raise SystemExit(f"{tag}: not every repo ok: {summary}")
    return dt, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.05, help="seconds added to every answer (default 0.05)")
    ap.add_argument("--repos-1", type=int, default=40, help="repos scraped with 1 worker (default 40)")
    ap.add_argument("--repos-16", type=int, default=320, help="repos scraped with --workers (default 320)")
    ap.add_argument("--workers", type=int, default=16)
    args = ap.parse_args()
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)

    total = 2 + args.repos_1 + args.repos_16
    proc, url = _start_server(total, args.latency)
    try:
        ids = [f"bench-org/model-{i:05d}" for i in range(total)]
        warm, one, many = ids[:2], ids[2 : 2 + args.repos_1], ids[2 + args.repos_1 :]
        with tempfile.TemporaryDirectory(prefix="bench-scrape-") as tmp:
            work = Path(tmp)
            _run(warm, 1, url, work, "warmup")  # imports, first normalize, connection pool
            t1, _ = _run(one, 1, url, work, "w1")
            tn, s = _run(many, args.workers, url, work, f"w{args.workers}")
            tr, sr = _run(many, args.workers, url, work, f"w{args.workers}")  # same catalog: all unchanged
        r1, rn, rr = len(one) / t1, len(many) / tn, len(many) / tr
        print(f"fake Hub latency {args.latency * 1000:.0f} ms per request; 3 requests per fresh repo; "
              f"{os.cpu_count()} CPUs")
        print(f"1 worker  : {len(one):4d} repos in {t1:6.2f} s = {r1:7.1f} repos/s")
        print(f"{args.workers} workers: {len(many):4d} repos in {tn:6.2f} s = {rn:7.1f} repos/s")
        print(f"speed-up {args.workers} vs 1 workers: {rn / r1:.1f}x (target >= 8x)")
        print(f"incremental re-run, {args.workers} workers (unchanged={sr.unchanged}, "  # type: ignore[attr-defined]
              f"configs downloaded={sr.configs_downloaded}): {rr:.1f} repos/s")  # type: ignore[attr-defined]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
