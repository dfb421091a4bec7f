#!/usr/bin/env python
"""Write ``data/kv_oracle_summary.csv``: the memory model's tokens per GPU against every logged run of the
KV-capacity oracle table (``../shared/oracles/kv-capacity.csv``), one row per run with a token figure.

The predictions use exactly the inputs ``tests/memory/test_kv_oracles.py`` uses (its ``_inputs``), so the summary
is the token test's results; ``tests/test_memory_view.py`` fails when the shipped file no longer matches a
fresh run. The dashboard reads only the written file (``dashboard.memory.kv_evidence``), never the oracle
table. Usage (from the repo root)::

    PYTHONPATH=$PWD python scripts/kv_oracle_summary.py [ORACLE_CSV] [-o data/kv_oracle_summary.csv]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dashboard import memory  # noqa: E402
from dashboard.atomic import atomic_write_text  # noqa: E402

COLUMNS = ["oracle_id", "engine", "engine_version", "engine_generation", "model_id", "family", "gpu", "tp", "pp",
           "measured_tokens", "predicted_tokens", "miss", "source_url"]


def summary(oracle_csv: Path) -> pd.DataFrame:
    """One row per oracle run with a logged token figure (columns :data:`COLUMNS`)."""
    from tests.memory import test_kv_oracles as t

    rows = []
    for row in pd.read_csv(oracle_csv).to_dict("records"):
        measured = row["measured_tokens"]
        if measured is None or (isinstance(measured, float) and math.isnan(measured)):
            continue
        kw, _ = t._inputs(row)
        gpu, tp = kw.pop("gpu"), kw.pop("tp")
        rec = t._record(row["model_id"])
        cap = memory.capacity(rec, row["engine"], gpu, tp, **kw)
        version = str(row["engine_version"])
        rows.append({
            "oracle_id": row["oracle_id"], "engine": row["engine"], "engine_version": version,
            "engine_generation": "legacy V0" if "V0" in version else "current", "model_id": row["model_id"],
            "family": memory.kv_family(rec), "gpu": row["gpu"], "tp": int(row["tp"]), "pp": int(row["pp"]),
            "measured_tokens": int(measured), "predicted_tokens": int(cap["tokens_per_gpu"]),
            "miss": round(cap["tokens_per_gpu"] / float(measured) - 1, 5), "source_url": row["source_url"],
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("oracles", nargs="?", default=str(ROOT.parent / "shared" / "oracles" / "kv-capacity.csv"))
    ap.add_argument("-o", "--output", default=str(memory.KV_ORACLE_SUMMARY_CSV))
    a = ap.parse_args(argv)
    src = Path(a.oracles)
    df = summary(src)
    atomic_write_text(a.output, df.to_csv(index=False))
    print(f"wrote {len(df)} rows to {a.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
