#!/usr/bin/env python
"""Benchmark: catalog build time for N synthetic configs on one core (target: 10,000 in < 10 s).

The configs are synthesised by perturbing the real ones in ``../shared/hub-configs`` (head counts,
KV heads, widths, depths, expert counts scaled; fields dropped, nulled or renamed to aliases; a few
made broken), written as ``<org>--<name>.json`` files into a temp folder, then
:func:`dashboard.catalog.build_catalog` reads, parses, normalizes and tabulates them. The process is
pinned to one CPU. Also printed: the normalizer alone on in-memory dicts, and whether the optional
transformers fallback was imported during the run.

Usage::

    python scripts/bench_catalog.py [--n 10000] [--configs ../shared/hub-configs] [--seed 0]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCALE_KEYS = ("num_attention_heads", "num_key_value_heads", "hidden_size", "num_hidden_layers", "intermediate_size",
              "num_experts", "n_routed_experts", "num_local_experts", "moe_intermediate_size", "vocab_size")
DROP_KEYS = ("num_key_value_heads", "head_dim", "tie_word_embeddings", "torch_dtype", "max_position_embeddings",
             "sliding_window", "intermediate_size")
RENAMES = {"num_attention_heads": "n_head", "num_key_value_heads": "num_kv_heads", "hidden_size": "n_embd",
           "num_hidden_layers": "n_layer"}


def perturb(cfg: dict, rng: random.Random) -> dict | str:
    """One synthetic variant of a real config (a dict, or broken JSON text ~1% of the time)."""
    if rng.random() < 0.01:
        return json.dumps(cfg)[: rng.randint(1, 200)]  # truncated download
    c = copy.deepcopy(cfg)
    t = c.get("text_config") if isinstance(c.get("text_config"), dict) else c
    for k in SCALE_KEYS:
        if k in t and isinstance(t[k], int) and rng.random() < 0.5:
            t[k] = max(1, int(t[k] * rng.choice((0.5, 0.75, 1, 1.25, 1.5, 2))))
    for k in DROP_KEYS:
        if k in t and rng.random() < 0.1:
            if rng.random() < 0.5:
                del t[k]
            else:
                t[k] = None
    if rng.random() < 0.05:
        for a, b in RENAMES.items():
            if a in t:
                t[b] = t.pop(a)
    if rng.random() < 0.02:
        t["num_attention_heads"] = rng.choice(("32", 32.0, -1, 0, True, None, 10**20))
    return c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--configs", default=str(ROOT.parent / "shared" / "hub-configs"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        print(f"pinned to CPU {cpu}")

    src = sorted(Path(args.configs).glob("*.json"))
    if not src:
        print(f"no configs in {args.configs}", file=sys.stderr)
        return 2
    real = []
    for p in src:
        try:
            real.append((p.stem, json.loads(p.read_text())))
        except ValueError:
            real.append((p.stem, json.loads(p.read_text(), parse_constant=float)))
    rng = random.Random(args.seed)

    from dashboard import catalog  # noqa: E402  (import after pinning; import time not counted)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        synth: list[tuple[str, object]] = []
        total_bytes = 0
        for i in range(args.n):
            stem, cfg = real[i % len(real)]
            v = perturb(cfg, rng)
            text = v if isinstance(v, str) else json.dumps(v)
            name = f"synth{i:05d}--{stem.split('--', 1)[-1]}"
            (folder / f"{name}.json").write_text(text)
            total_bytes += len(text)
            synth.append((name.replace("--", "/", 1), v))
        print(f"{args.n} synthetic configs from {len(real)} real ones, {total_bytes / 1e6:.1f} MB of JSON")

        had_tf = "transformers" in sys.modules
        t0 = time.perf_counter()
        df = catalog.build_catalog(folder)
        t_build = time.perf_counter() - t0
        tf_imported = "transformers" in sys.modules and not had_tf

        t0 = time.perf_counter()
        recs = [catalog.normalize_config(v, mid, fetched_at="2026-11-29T00:00:00Z") for mid, v in synth]
        t_norm = time.perf_counter() - t0
        t0 = time.perf_counter()
        catalog.catalog_from_records(recs)
        t_frame = time.perf_counter() - t0

    counts = df["status"].value_counts().to_dict()
    print(f"rows: {len(df)}  statuses: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    print(f"build_catalog(folder of {args.n} files): {t_build:.2f} s  ({t_build / args.n * 1e6:.0f} us/config)"
          f"  target < 10 s: {'PASS' if t_build < 10 else 'FAIL'}")
    print(f"normalize_config on in-memory dicts: {t_norm:.2f} s; catalog_from_records: {t_frame:.2f} s")
    print(f"transformers imported during the build (optional alias fallback): {tf_imported}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
