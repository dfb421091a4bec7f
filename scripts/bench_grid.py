"""Grid throughput: 100,000 synthetic models x 10 TP sizes x every framework, vectorized, against a
plain per-cell Python loop over the same checks (timed on a sample of cells and scaled), in one run.

    python scripts/bench_grid.py [--models 100000] [--sample 1500]

Prints figures; asserts nothing about time (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from dashboard import schema
from dashboard.rules import evaluate, grid
from dashboard.rules.common import Ctx


def synthetic_catalog(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` random but plausible records: GQA/MHA/MQA, MLA, MoE, block-FP8, AWQ, vision, GDN/KDA/Mamba."""
    rng = np.random.default_rng(seed)
    h = rng.choice([8, 12, 14, 16, 20, 24, 28, 32, 40, 48, 52, 56, 64, 96, 128], n)
    kvdiv = rng.choice([1, 2, 4, 7, 8, 16], n)
    kv = np.maximum(h // kvdiv, 1)
    moe = rng.random(n) < 0.3
    fp8 = rng.random(n) < 0.2
    awq = ~fp8 & (rng.random(n) < 0.1)
    vis = rng.random(n) < 0.15
    lin = rng.choice(["", "", "", "gdn", "kda", "mamba2"], n)
    df = pd.DataFrame(
        {
            "model_id": [f"synthetic/m{i}" for i in range(n)],
            "status": "ok",
            "num_attention_heads": pd.array(h, dtype="Int64"),
            "num_key_value_heads": pd.array(kv, dtype="Int64"),
            "head_dim": pd.array(rng.choice([64, 96, 128, 256], n), dtype="Int64"),
            "hidden_size": pd.array(h * 128, dtype="Int64"),
            "num_hidden_layers": pd.array(rng.integers(12, 100, n), dtype="Int64"),
            "intermediate_size": pd.array(rng.choice([11008, 13824, 14336, 18432, 19114, 28672], n), dtype="Int64"),
            "vocab_size": pd.array(rng.choice([32000, 32064, 32768, 128256, 151936, 152064, 129280], n), dtype="Int64"),
            "is_mla": pd.array(rng.random(n) < 0.1, dtype="boolean"),
            "is_moe": pd.array(moe, dtype="boolean"),
            "num_experts": pd.array(np.where(moe, rng.choice([8, 16, 60, 64, 128, 256], n), 0), dtype="Int64"),
            "moe_intermediate_size": pd.array(np.where(moe, rng.choice([768, 1408, 1536, 2048], n), 0), dtype="Int64"),
            "num_dense_layers": pd.array(np.where(moe, rng.integers(0, 4, n), 0), dtype="Int64"),
            "quant_method": pd.array(np.where(fp8, "fp8", np.where(awq, "awq", None)), dtype="string"),
            "quant_group_size": pd.array(np.where(awq, 128, 0), dtype="Int64"),
            "weight_block_n": pd.array(np.where(fp8, 128, 0), dtype="Int64"),
            "weight_block_k": pd.array(np.where(fp8, 128, 0), dtype="Int64"),
            "has_vision": pd.array(vis, dtype="boolean"),
            "vision_num_heads": pd.array(np.where(vis, rng.choice([12, 16, 25], n), 0), dtype="Int64"),
            "linear_attention_kind": pd.array(lin, dtype="string"),
            "linear_num_key_heads": pd.array(np.where(lin != "", rng.choice([8, 16, 32], n), 0), dtype="Int64"),
            "linear_num_value_heads": pd.array(np.where(lin != "", rng.choice([32, 64, 96, 128], n), 0), dtype="Int64"),
            "mamba_n_groups": pd.array(np.where(lin == "mamba2", rng.choice([1, 8], n), 0), dtype="Int64"),
        }
    )
    for c in ("num_experts", "moe_intermediate_size", "quant_group_size", "weight_block_n", "weight_block_k",
              "vision_num_heads", "linear_num_key_heads", "linear_num_value_heads", "mamba_n_groups"):
        df[c] = df[c].mask(df[c] == 0)
    return df


def per_cell_loop(models: pd.DataFrame, cells: list[tuple[int, int, str]]) -> int:
    """The same checks, one cell at a time: a one-row context per cell, every rule, messages formatted."""
    n_fail = 0
    for i, tp, fw in cells:
        ctx = Ctx(models.iloc[i : i + 1], np.array([tp]))
        ev = evaluate(ctx, fw, None)
        msgs = []
        for r, f, flds in zip(ev.rules, ev.fire, ev.fields):
            if r.severity == "error" and f[0]:
                msgs.append(r.format({k: (v[0] if np.ndim(v) else v) for k, v in flds.items()}))
        n_fail += bool(msgs)
    return n_fail


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=100_000)
    ap.add_argument("--sample", type=int, default=1500, help="cells timed in the per-cell loop")
    args = ap.parse_args()
    tps = schema.DEFAULT_TP_SIZES
    fws = schema.FRAMEWORKS
    models = synthetic_catalog(args.models)
    n_cells = args.models * len(tps) * len(fws)

    grid(models.head(200), tps, fws)  # warm-up (imports, caches)
    t0 = time.perf_counter()
    g = grid(models, tps, fws)
    t_grid = time.perf_counter() - t0
    assert len(g) == n_cells

    rng = np.random.default_rng(1)
    cells = [(int(rng.integers(args.models)), int(rng.choice(tps)), str(rng.choice(fws))) for _ in range(args.sample)]
    t0 = time.perf_counter()
    per_cell_loop(models, cells)
    t_loop_sample = time.perf_counter() - t0
    t_loop = t_loop_sample / args.sample * n_cells

    print(f"models={args.models:,} tp_sizes={len(tps)} frameworks={len(fws)} cells={n_cells:,}")
    print(f"grid (vectorized): {t_grid:.2f} s  = {n_cells / t_grid:,.0f} cells/s")
    print(f"per-cell loop: {t_loop_sample:.2f} s for {args.sample:,} cells -> {t_loop:,.0f} s for all "
          f"(scaled) = {args.sample / t_loop_sample:,.0f} cells/s")
    print(f"speed-up: {t_loop / t_grid:,.0f}x   (targets: >= 50x, full grid < 2 s)")
    print(f"invalid cells: {(~g['valid']).mean():.1%}")

    # The figure is for five frameworks; transformers has two rule sets here (native TP and the
    # continuous-batching cache), so also time the grid with one of them, measured in the same run.
    fws5 = tuple(f for f in fws if f != "transformers-cb-cache")
    del g
    t0 = time.perf_counter()
    g5 = grid(models, tps, fws5)
    t_grid5 = time.perf_counter() - t0
    print(f"grid with {len(fws5)} frameworks ({len(g5):,} cells): {t_grid5:.2f} s")


if __name__ == "__main__":
    main()
