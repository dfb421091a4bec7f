"""Weights per rank from :mod:`dashboard.memory` against vLLM 0.33.0's own parameter bytes (issue 10).

The conformance harness (``conformance/``) builds every catalog model with vLLM 0.33.0's own model
classes on the meta device under simulated TP / DP / EP and records, for every ``built`` cell, rank 0's
``param_bytes`` (sum of ``numel * element_size`` over the module's parameters). This test asks
:func:`dashboard.memory.weight_bytes_per_rank` for the same layout (``tp``, ``pp``, ``dp``,
``expert_parallel`` = the cell's ``ep`` flag, ``vision_dp`` = ``--mm-encoder-tp-mode data``) and
requires agreement within 1 % for every built cell of every model.

Models the memory model cannot yet reach are listed in :data:`EXPECTED_MISSES` with the miss measured
on the vLLM 0.33.0 table (worst cell, signed: estimate / vLLM - 1) and the reason; they run as strict
xfails, so a fix that makes them pass shows up as XPASS and the entry must go.

The table is ``data/conformance/vllm-0.33.0.parquet`` (committed with the harness run); the
environment variable ``TP_PLANNER_VLLM_TABLE`` points the test at another parquet of the same columns
(e.g. the harness's in-progress checkpoints written out with ``conformance.driver.load_work``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from dashboard import memory
from dashboard.catalog import load_catalog

ROOT = Path(__file__).resolve().parents[2]
TABLE = Path(os.environ.get("TP_PLANNER_VLLM_TABLE", ROOT / "data" / "conformance" / "vllm-0.33.0.parquet"))
TOLERANCE = 0.01

#: model_id -> (worst miss in % measured on the vLLM 0.33.0 table, reason the model is not reached).
EXPECTED_MISSES: dict[str, tuple[float, str]] = {}


def _load_table() -> pd.DataFrame | None:
    if not TABLE.exists():
        return None
    df = pd.read_parquet(TABLE)
    return df[df["outcome"] == "built"].reset_index(drop=True)


BUILT = _load_table()
SKIP_REASON = (f"{TABLE.relative_to(ROOT) if TABLE.is_relative_to(ROOT) else TABLE} is absent: the vLLM "
               "0.33.0 conformance table is committed by the harness run (python -m conformance run)")
MODELS = sorted(BUILT["model_id"].unique()) if BUILT is not None else []


@pytest.fixture(scope="module")
def catalog() -> pd.DataFrame:
    return load_catalog().set_index("model_id", drop=False)


def _estimate(record: pd.Series, cell: pd.Series) -> float:
    return memory.weight_bytes_per_rank(
        record, "vllm", int(cell["tp"]), pp=int(cell["pp"]), dp=int(cell["dp"]),
        expert_parallel=bool(cell["ep"]), vision_dp=bool(cell["vision_dp"]))


def _misses(catalog: pd.DataFrame, model_id: str) -> tuple[list[str], float, int]:
    cells = BUILT[BUILT["model_id"] == model_id]
    record = catalog.loc[model_id]
    bad, worst = [], 0.0
    for _, cell in cells.iterrows():
        est = _estimate(record, cell)
        rel = est / float(cell["param_bytes"]) - 1
        if abs(rel) > abs(worst):
            worst = rel
        if not abs(rel) <= TOLERANCE:  # NaN counts as a miss
            bad.append(f"tp={cell['tp']} pp={cell['pp']} dp={cell['dp']} ep={bool(cell['ep'])} "
                       f"vision_dp={bool(cell['vision_dp'])}: estimate {est:,.0f} B vs vLLM "
                       f"{int(cell['param_bytes']):,} B ({rel:+.2%})")
    return bad, worst, len(cells)


def _params():
    for m in MODELS:
        marks = []
        if m in EXPECTED_MISSES:
            miss, why = EXPECTED_MISSES[m]
            marks.append(pytest.mark.xfail(strict=True, reason=f"measured worst miss {miss:+.1f} %: {why}"))
        yield pytest.param(m, id=m, marks=marks)


@pytest.mark.skipif(BUILT is None, reason=SKIP_REASON)
@pytest.mark.parametrize("model_id", list(_params()))
def test_weight_bytes_per_rank_matches_vllm_param_bytes(catalog, model_id):
    assert model_id in catalog.index, f"{model_id} built by vLLM but absent from the catalog"
    bad, worst, n = _misses(catalog, model_id)
    assert not bad, (f"{model_id}: {len(bad)} of {n} built cells off by more than {TOLERANCE:.0%} "
                     f"(worst {worst:+.2%}):\n  " + "\n  ".join(bad))


@pytest.mark.skipif(BUILT is None, reason=SKIP_REASON)
def test_every_model_within_one_percent_or_listed(catalog):
    """One summary over the whole table: every model is either within 1 % on every built cell or listed
    in EXPECTED_MISSES; listed models that now pass, or that the table no longer builds, are stale."""
    unexpected, stale = [], []
    for m in MODELS:
        bad, worst, n = _misses(catalog, m)
        if bad and m not in EXPECTED_MISSES:
            unexpected.append(f"{m}: {len(bad)}/{n} cells, worst {worst:+.2%}")
        if not bad and m in EXPECTED_MISSES:
            stale.append(f"{m}: now within {TOLERANCE:.0%} (worst {worst:+.2%})")
    stale += [f"{m}: no built cell in the table" for m in EXPECTED_MISSES if m not in MODELS]
    assert not unexpected and not stale, (
        "models off by more than 1 %:\n  " + "\n  ".join(unexpected or ["none"])
        + "\nstale EXPECTED_MISSES entries:\n  " + "\n  ".join(stale or ["none"]))


@pytest.mark.skipif(BUILT is None, reason=SKIP_REASON)
def test_table_has_the_layout_columns():
    for col in ("model_id", "tp", "pp", "dp", "ep", "vision_dp", "outcome", "param_bytes"):
        assert col in BUILT.columns
    assert (BUILT["param_bytes"] > 0).all()
