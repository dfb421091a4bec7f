#!/usr/bin/env python
"""List the cells whose verdict, per-rank layout or KV-cache size differ between an older commit and this tree.

    python scripts/diff_cells.py OLD_REV [--out changed.csv] [--tp 1,2,4,8] [--models ID ...]

For every catalog model (the shipped catalog of *this* tree, fed to both sides) x every framework x each TP
size (default ``schema.DEFAULT_TP_SIZES``) x the layout variants the planner enumerates for attention
(plain TP; ``dp=2`` with DP-attention; vision DP), each side computes through its own public API:

* the verdict: ``rules.grid(...)`` (vectorized; the rules ``rules.check`` applies) -> valid, first
  failing rule id, q / KV heads per rank;
* the per-rank layout: ``layout.rank_layout(...)`` -> query and KV head count on rank 0 (or the error);
* the memory model: ``memory.kv_cache_bytes_per_token_per_rank(...)`` (bytes per token per rank, or the
  error).

The layout and the memory figures are computed for the cells that side calls valid (a refused cell's
per-rank figures describe no layout that runs; they are left blank).

The older side runs in a temporary ``git worktree`` of ``OLD_REV`` (its own ``dashboard`` on
``PYTHONPATH``). Prints how many cells each part changed, and writes every changed cell (old and new
value of each field) to ``--out``. Asserts nothing: it is the list a closing note cites.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

#: Runs inside one tree (its own ``dashboard``); argv: catalog parquet, out parquet, tp sizes, model ids.
_DUMP = r'''
import sys, json
import pandas as pd
from dashboard import rules, layout, memory, schema
cat = pd.read_parquet(sys.argv[1]); tps = [int(t) for t in sys.argv[3].split(",")]
ids = json.loads(sys.argv[4])
if ids:
    cat = cat[cat.model_id.isin(ids)]
DP_ATTENTION = json.loads(sys.argv[5])
vision = cat[cat["vision_num_heads"].fillna(0).astype(int) > 0]
VARIANTS = [("tp", cat, schema.FRAMEWORKS, {}),
            ("dp2-attn", cat, DP_ATTENTION, {"dp": 2, "dp_attention": True}),
            ("vision-dp", vision, schema.FRAMEWORKS, {"vision_dp": True})]
rows = {r.model_id: r for _, r in cat.iterrows()}
def err(e):
    return f"{type(e).__name__}: {str(e)[:120]}"
out, mem_memo = [], {}
for vname, frame, fws, kw in VARIANTS:
    g = rules.grid(frame, tps, fws, **kw)   # the verdict, vectorized (the same rules as rules.check)
    for c in g.itertuples(index=False):
        row = {"model_id": c.model_id, "framework": c.framework, "tp": int(c.tp), "variant": vname,
               "valid": bool(c.valid), "first_rule": str(c.rule_id or ""),
               "verdict_q": str(c.q_heads_per_rank), "verdict_kv": str(c.kv_heads_per_rank),
               "layout_q": "", "layout_kv": "", "kv_bytes_per_token_rank": ""}
        if row["valid"]:  # a refused cell's per-rank figures describe no running layout
            r = rows[c.model_id]
            lkw = {k: kw[k] for k in ("dp", "dp_attention", "vision_dp") if k in kw}
            try:
                L = layout.rank_layout(r, c.framework, int(c.tp), **lkw)
                r0 = L[L["rank"] == L["rank"].min()]
                row["layout_q"] = str(int((r0["component"] == "query").sum()))
                row["layout_kv"] = str(int((r0["component"] == "kv").sum()))
            except Exception as e:
                row["layout_q"] = row["layout_kv"] = err(e)
            mkw = {k: kw[k] for k in ("dp", "dp_attention") if k in kw}
            key = (c.model_id, c.framework, int(c.tp), tuple(sorted(mkw.items())))
            if key not in mem_memo:
                try:
                    mem_memo[key] = f"{float(memory.kv_cache_bytes_per_token_per_rank(r, c.framework, int(c.tp), **mkw)):.1f}"
                except Exception as e:
                    mem_memo[key] = err(e)
            row["kv_bytes_per_token_rank"] = mem_memo[key]
        out.append(row)
    print(f"  {vname}: {len(g):,} cells", file=sys.stderr, flush=True)
pd.DataFrame(out).astype(str).to_parquet(sys.argv[2])
'''

FIELDS = ["valid", "first_rule", "verdict_q", "verdict_kv", "layout_q", "layout_kv",
          "kv_bytes_per_token_rank"]
KEYS = ["model_id", "framework", "tp", "variant"]


def dump(tree: Path, catalog: Path, out: Path, tps: str, ids: str) -> pd.DataFrame:
    """One tree's cells (every field as text). DP-attention variants only for the frameworks that have it
    (asked of this tree's framework objects, passed to both sides); vision DP only for vision models."""
    import json

    from dashboard import frameworks

    dp_attn = json.dumps([f.name for f in frameworks.all_frameworks() if f.attention_dp_in_tp])
    subprocess.run([sys.executable, "-c", _DUMP, str(catalog), str(out), tps, ids, dp_attn], cwd=tree,
                   env={**__import__("os").environ, "PYTHONPATH": str(tree)}, check=True)
    return pd.read_parquet(out)


def main(argv: list[str] | None = None) -> int:
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("--out", type=Path, default=Path("changed_cells.csv"))
    ap.add_argument("--tp", default=None, help="comma-separated TP sizes (default: schema.DEFAULT_TP_SIZES)")
    ap.add_argument("--models", nargs="*", default=[])
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from dashboard import schema
    from dashboard.catalog import load_catalog

    tps = a.tp or ",".join(str(t) for t in schema.DEFAULT_TP_SIZES)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        cat = t / "catalog.parquet"
        load_catalog().to_parquet(cat)
        old_tree = t / "old"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old_tree), a.old], cwd=ROOT, check=True)
        try:
            old = dump(old_tree, cat, t / "old.parquet", tps, json.dumps(a.models))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=ROOT)
        new = dump(ROOT, cat, t / "new.parquet", tps, json.dumps(a.models))
    m = old.merge(new, on=KEYS, suffixes=("_old", "_new"), how="outer", indicator=True)
    changed = pd.Series(False, index=m.index)
    print(f"{len(m):,} cells ({m['model_id'].nunique()} models x {m['framework'].nunique()} frameworks x "
          f"TP {tps} x {m['variant'].nunique()} variants); old = {a.old}, new = working tree")
    for f in FIELDS:
        d = m[f + "_old"] != m[f + "_new"]
        changed |= d
        print(f"  {f:<26} changed in {int(d.sum()):>6,} cells")
    out = m[changed].drop(columns="_merge")
    either = (out["valid_old"] == "True") | (out["valid_new"] == "True")
    out.insert(4, "scope", either.map({True: "valid on a side", False: "refused on both"}))
    print(f"  of the changed cells, {int(either.sum()):,} are valid on at least one side; "
          f"{int((~either).sum()):,} are refused on both (their per-rank figures describe no running layout)")
    out.to_csv(a.out, index=False)
    print(f"{len(out):,} changed cells written to {a.out}")
    if len(out):
        by = out.groupby(["scope", "framework", "variant"]).size().rename("cells").reset_index()
        print(by.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
