"""The transformers rules checked against the real library (issue 4, item 5).

For every case of :data:`tests.tp_matrix.cases.MATRIX` a tiny random-weight model (1 layer, given
``num_attention_heads`` / ``num_key_value_heads`` / ``head_dim``) is saved with ``save_pretrained``,
loaded with ``from_pretrained(path, tp_plan="auto")`` under ``torchrun --nproc-per-node tp`` (gloo, CPU)
and run for one forward pass; ``cb`` cases also drive ``generate_batch`` (continuous batching with the
paged cache). The whole matrix runs once per module, one torchrun per TP size (80-125 s on 2 shared
cores; the timeout fault-injection test adds about 30 s).

Asserted:

* the engine's ``dashboard.rules.check(record, "transformers-native-tp", tp).valid`` equals what the
  library did (load + forward OK on every rank), for every case; the record is the saved
  ``config.json`` run through the project's own normalizer;
* where the library failed, the engine blames the same thing: a failure on ``q_proj``'s reshape is an
  ``attention_heads`` rule, on ``k_proj``/``v_proj`` a ``kv_heads`` rule (and not ``attention_heads``);
* ``check(record, "transformers-cb-cache", tp).valid`` equals what ``generate_batch`` did, and where
  the paged cache refused the model the engine's message is the library's message verbatim;
* where TP ran, its logits equal the same checkpoint run without TP (the run is real, not vacuous).

The library wins: a mismatch here means the rule is wrong (or the library changed), not the test.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from tp_matrix.cases import MATRIX, Case
from tp_matrix.run import CaseOutcome, format_table, run_matrix, versions

pytestmark = pytest.mark.slow

NATIVE = "transformers-native-tp"
CB = "transformers-cb-cache"
#: float32 logits of the TP run vs the unsharded run of the same checkpoint (observed <= 1e-5).
LOGITS_ATOL = 1e-4


def _require_libraries() -> None:
    missing = [m for m in ("torch", "transformers", "accelerate") if importlib.util.find_spec(m) is None]
    if not missing:
        import torch.distributed

        if torch.distributed.is_available():
            return
        missing = ["torch.distributed"]
    msg = f"{', '.join(missing)} not installed (pip install -e '.[test]')"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> dict[str, CaseOutcome]:
    """Run the whole matrix once; leave the table and the raw per-rank records as artifacts."""
    _require_libraries()
    outcomes, timings = run_matrix(MATRIX, tmp_path_factory.mktemp("tp-matrix"))
    table = format_table(outcomes)
    (artifacts_dir / "transformers_tp_matrix.txt").write_text(
        f"{versions()}\n{table}\n{json.dumps(timings)}\n", encoding="utf-8"
    )
    (artifacts_dir / "transformers_tp_matrix.json").write_text(
        json.dumps(
            {
                "versions": versions(),
                "timings": timings,
                "outcomes": [
                    {"case": o.case.to_dict(), "ok": o.ok, "cb_ok": o.cb_ok, "stage": o.stage, "ranks": o.ranks}
                    for o in outcomes
                ],
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    print(table)
    return {o.case.case_id: o for o in outcomes}


def _record(outcome: CaseOutcome) -> dict:
    """The saved ``config.json`` through the project's own normalizer (as the catalog would hold it)."""
    from dashboard.catalog import normalize_config

    c = outcome.case
    raw = json.loads((outcome.model_dir / "config.json").read_text(encoding="utf-8"))
    rec = normalize_config(raw, c.model_id)
    # the normalizer must read the shapes the library ran with, or the comparison below is meaningless
    got = (rec["status"], rec["num_attention_heads"], rec["num_key_value_heads"], rec["head_dim"])
    assert got == ("ok", c.heads, c.kv, c.head_dim), f"{c.case_id}: normalizer read {got}"
    return rec


@pytest.fixture(scope="module")
def records(matrix: dict[str, CaseOutcome]) -> dict[str, dict]:
    return {cid: _record(o) for cid, o in matrix.items()}


def _describe(o: CaseOutcome, verdict) -> str:
    err = o.first_error
    lib = "ran (load + forward OK on every rank)" if o.ok else (
        f"failed at {o.stage}: {err.get('error_type', '')}: {err.get('error', '')} "
        f"[{err.get('where', '')}: {err.get('where_code', '')}]"
    )
    eng = "valid" if verdict.valid else "invalid: " + " | ".join(
        f"{f.rule_id} ({f.kind}): {f.message}" for f in verdict.failures
    )
    return f"{o.case.case_id} [{o.case.group}]: transformers {versions()['transformers']} {lib}; engine says {eng}"


# --------------------------------------------------------------------------------------------------
# The harness itself: the matrix ran, every rank reported, passing and failing cases both exist
# --------------------------------------------------------------------------------------------------


def test_matrix_shape() -> None:
    fwd = [c for c in MATRIX if c.mode == "forward"]
    assert len({(c.heads, c.kv, c.tp) for c in MATRIX}) >= 12
    groups = {c.group for c in fwd}
    assert {"divisible", "replication", "heads_not_divisible", "kv_not_divisible"} <= groups
    assert any(c.mode == "cb" for c in MATRIX)
    assert len({c.case_id for c in MATRIX}) == len(MATRIX)


def test_every_rank_reported(matrix: dict[str, CaseOutcome]) -> None:
    silent = {cid: len(o.ranks) for cid, o in matrix.items() if len(o.ranks) != o.case.tp}
    assert not silent, f"cases with ranks that never reported (hang or crash; see torchrun logs): {silent}"


def test_both_outcomes_observed(matrix: dict[str, CaseOutcome]) -> None:
    # A broken harness (port clash, import error) fails everything; a vacuous one passes everything.
    oks = {o.ok for o in matrix.values()}
    assert oks == {True, False}, format_table(list(matrix.values()))
    assert all(o.load_ok for o in matrix.values()), "native TP loads every shape; a load failure is new"


def test_tp_logits_equal_unsharded(matrix: dict[str, CaseOutcome]) -> None:
    ran = [o for o in matrix.values() if o.ok]
    assert len(ran) >= 6
    off = {o.case.case_id: o.max_abs_diff for o in ran if o.max_abs_diff is None or o.max_abs_diff > LOGITS_ATOL}
    assert not off, f"TP logits differ from the unsharded run (max |diff|): {off}"


# --------------------------------------------------------------------------------------------------
# The engine against the library
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(MATRIX), ids=lambda c: c.case_id)
def test_native_verdict_matches_library(matrix: dict[str, CaseOutcome], records: dict[str, dict], case: Case) -> None:
    from dashboard.rules import check

    o = matrix[case.case_id]
    verdict = check(records[case.case_id], NATIVE, case.tp)
    assert verdict.valid == o.ok, _describe(o, verdict)
    assert verdict.valid == (not verdict.failures)
    if o.ok:
        return
    # the engine blames what the library tripped over
    code = o.first_error.get("where_code", "")
    kinds = {f.kind for f in verdict.failures}
    if "q_proj" in code:
        assert "attention_heads" in kinds, _describe(o, verdict)
    elif "k_proj" in code or "v_proj" in code:
        assert "kv_heads" in kinds and "attention_heads" not in kinds, _describe(o, verdict)
    else:
        pytest.fail(f"library failed somewhere new: {_describe(o, verdict)}")


@pytest.mark.parametrize("case", [c for c in MATRIX if c.mode == "cb"], ids=lambda c: c.case_id)
def test_cb_cache_verdict_matches_library(matrix: dict[str, CaseOutcome], records: dict[str, dict], case: Case) -> None:
    from dashboard.rules import check

    o = matrix[case.case_id]
    verdict = check(records[case.case_id], CB, case.tp)
    lib_ok = bool(o.load_ok and o.cb_ok)
    assert verdict.valid == lib_ok, (
        f"{case.case_id}: generate_batch {'ran' if lib_ok else 'failed: ' + str(o.cb_error.get('cb_error'))}; "
        f"engine: {[f.message for f in verdict.failures]}"
    )
    if not lib_ok:
        lib_msgs = {r["cb_error"] for r in o.ranks}
        assert len(lib_msgs) == 1, lib_msgs  # every rank refused with the same message
        (lib_msg,) = lib_msgs
        assert lib_msg in [f.message for f in verdict.failures], (lib_msg, [f.message for f in verdict.failures])


# --------------------------------------------------------------------------------------------------
# The harness under a hang: a torchrun over budget is stopped with all its ranks
# --------------------------------------------------------------------------------------------------


def test_overdue_run_is_killed_with_its_ranks(tmp_path: Path) -> None:
    _require_libraries()
    case = MATRIX[0]
    # rank 1 hangs at start (fault injection); the other ranks wait for it in the first barrier
    (o,), _ = run_matrix([case], tmp_path, run_timeout_s=20, max_attempts=1, extra_env={"TP_MATRIX_HANG_RANK": "1"})
    assert o.stage == "hang" and not o.ok and o.ranks == []
    pid_files = list((tmp_path / f"tp{case.tp}-run0" / "pids").glob("*"))
    assert len(pid_files) == case.tp, f"only {len(pid_files)} ranks started within 20 s: the test proves nothing"
    alive = []
    for f in pid_files:
        try:
            os.kill(int(f.name), 0)
            alive.append(f.name)
        except ProcessLookupError:
            pass
    assert not alive, f"orphan ranks left running: {alive}"
