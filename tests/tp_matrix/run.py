"""Run the matrix: build the tiny models, one ``torchrun`` per TP size, collect per-rank outcomes.

``python -m tests.tp_matrix.run`` (from the repo root) or ``python tests/tp_matrix/run.py`` prints the
matrix with outcomes and timings. :func:`run_matrix` is what ``tests/test_transformers_tp.py`` calls.

A torchrun that exceeds its time budget (a rank stuck in a collective after another rank failed) is
killed by process group; the case it was on is recorded with stage ``hang`` for the ranks that did not
report, and the remaining cases of that TP size are retried in a fresh torchrun.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: conformance
    from tp_matrix.build import build_model  # type: ignore[no-redef]
    from tp_matrix.cases import MATRIX, Case, by_tp  # type: ignore[no-redef]
else:
    from .build import build_model
    from .cases import MATRIX, Case, by_tp

from conformance.transformers_tp import read_rank_files, torchrun
from conformance.transformers_tp import versions as _versions

WORKER = Path(__file__).resolve().with_name("worker.py")


@dataclass
class CaseOutcome:
    """What the library did for one case, over all its ranks."""

    case: Case
    ranks: list[dict] = field(default_factory=list)
    model_dir: Path | None = None  # where the tiny checkpoint was saved

    @property
    def load_ok(self) -> bool:
        return len(self.ranks) == self.case.tp and all(r["load_ok"] for r in self.ranks)

    @property
    def forward_ok(self) -> bool:
        return len(self.ranks) == self.case.tp and all(r["forward_ok"] for r in self.ranks)

    @property
    def cb_ok(self) -> bool | None:
        if self.case.mode != "cb":
            return None
        return len(self.ranks) == self.case.tp and all(r.get("cb_ok") for r in self.ranks)

    @property
    def ok(self) -> bool:
        """Native TP works: load and one forward pass succeeded on every rank."""
        return self.load_ok and self.forward_ok

    @property
    def cb_error(self) -> dict:
        for r in sorted(self.ranks, key=lambda r: r["rank"]):
            if r.get("cb_error"):
                return r
        return {}

    @property
    def stage(self) -> str:
        """Where the first failing rank stopped (``done`` when all succeeded, ``hang`` when a rank never reported)."""
        if len(self.ranks) < self.case.tp:
            return "hang"
        for st in ("load", "forward", "reference"):
            if any(r["stage"] == st for r in self.ranks):
                return st
        return "done"

    @property
    def first_error(self) -> dict:
        for r in sorted(self.ranks, key=lambda r: r["rank"]):
            if r["error"]:
                return r
        return {}

    @property
    def max_abs_diff(self) -> float | None:
        vals = [r["max_abs_diff"] for r in self.ranks if r.get("max_abs_diff") is not None]
        return max(vals) if vals else None

    @property
    def seconds(self) -> float:
        return max((r.get("seconds", 0.0) for r in self.ranks), default=0.0)


def run_matrix(
    cases: tuple[Case, ...] | list[Case] = MATRIX,
    workdir: Path | None = None,
    *,
    run_timeout_s: float = 240.0,
    max_attempts: int = 2,
    deadline_s: float = 780.0,
    extra_env: dict[str, str] | None = None,
) -> tuple[list[CaseOutcome], dict]:
    """Build every case's model and run the matrix, one torchrun per TP size (sequentially: 2 cores).

    Parameters
    ----------
    cases : the cases to run.
    workdir : folder for models, specs, per-rank results and torchrun logs (a temp dir when None).
    run_timeout_s : wall-clock budget of one torchrun (seconds); a run over budget is killed and its
        unfinished cases retried in a fresh torchrun (the stuck case is recorded as ``hang``).
    max_attempts : torchruns per TP size at most.
    deadline_s : wall-clock budget of the whole matrix (seconds; below pytest's 900 s timeout): no
        torchrun starts or runs past it; cases not reached have no rank records.
    extra_env : more environment for the workers (``TP_MATRIX_HANG_RANK=<rank>`` makes that rank
        hang at start: fault injection for the timeout path).

    Returns
    -------
    (outcomes in the order of ``cases``, timings dict with ``build_s``, ``torchrun_s`` per TP size,
    ``total_s`` and ``logs`` folder).
    """
    import tempfile

    t_all = time.perf_counter()
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="tp-matrix-"))
    models = workdir / "models"
    models.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    paths = {c.case_id: build_model(c, models) for c in cases}
    build_s = time.perf_counter() - t0

    results: dict[str, list[dict]] = {}
    torchrun_s: dict[int, list[float]] = {}
    for tp, group in by_tp(list(cases)).items():
        pending = list(group)
        for attempt in range(max_attempts):
            remaining = deadline_s - (time.perf_counter() - t_all)
            if not pending or remaining < 10:
                break
            out = workdir / f"tp{tp}-run{attempt}"
            if out.exists():
                shutil.rmtree(out)
            out.mkdir(parents=True)
            spec = [
                {"case_id": c.case_id, "path": str(paths[c.case_id]), "mode": c.mode, "vocab": c.vocab}
                for c in pending
            ]
            finished, wall = torchrun(
                WORKER, tp, spec, out, min(run_timeout_s, remaining), log=workdir / f"tp{tp}.log", extra_env=extra_env
            )
            torchrun_s.setdefault(tp, []).append(round(wall, 2))
            got = read_rank_files(out)
            still: list[Case] = []
            stuck_seen = False
            for c in pending:
                recs = got.get(c.case_id, [])
                if len(recs) == tp:
                    results[c.case_id] = recs
                elif recs or not stuck_seen:
                    # the case the run was on when it hung or died: keep what the ranks reported
                    results[c.case_id] = recs
                    stuck_seen = True
                else:
                    still.append(c)
            pending = still
            if finished and not pending:
                break
        for c in pending:  # gave up
            results.setdefault(c.case_id, [])

    outcomes = [
        CaseOutcome(c, sorted(results.get(c.case_id, []), key=lambda r: r["rank"]), paths[c.case_id]) for c in cases
    ]
    timings = {
        "build_s": round(build_s, 2),
        "torchrun_s": torchrun_s,
        "total_s": round(time.perf_counter() - t_all, 2),
        "workdir": str(workdir),
    }
    return outcomes, timings


def versions() -> dict[str, str]:
    """Versions of transformers, torch and accelerate."""
    return _versions("accelerate")


def format_table(outcomes: list[CaseOutcome]) -> str:
    lines = [
        f"{'case':38} {'group':20} {'load':5} {'fwd':5} {'cb':5} {'ok':5} {'stage':9} {'sec':>6} "
        f"{'maxdiff':>8}  error"
    ]
    for o in outcomes:
        err = o.first_error
        msg = f"{err.get('error_type', '')}: {err.get('error', '')}".replace("\n", " ")[:110] if err else ""
        diff = f"{o.max_abs_diff:.1e}" if o.max_abs_diff is not None else "-"
        cb = "-" if o.cb_ok is None else str(o.cb_ok)
        lines.append(
            f"{o.case.case_id:38} {o.case.group:20} {o.load_ok!s:5} {o.forward_ok!s:5} {cb:5} {o.ok!s:5} "
            f"{o.stage:9} {o.seconds:6.2f} {diff:>8}  {msg}"
        )
    return "\n".join(lines)


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Run the transformers native-TP matrix and print outcomes.")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--tp", type=int, nargs="*", help="only these TP sizes")
    ap.add_argument("--json", type=Path, help="write outcomes as JSON here")
    args = ap.parse_args()
    cases = [c for c in MATRIX if not args.tp or c.tp in args.tp]
    outcomes, timings = run_matrix(cases, args.workdir)
    print(versions())
    print(format_table(outcomes))
    print(json.dumps(timings))
    for o in outcomes:
        if o.first_error:
            e = o.first_error
            print(f"- {o.case.case_id}: [{e['stage']}] {e['error_type']}: {e['error'][:300]!r}\n    at {e['where']} | {e['where_last']}")
        if o.cb_error:
            e = o.cb_error
            print(f"- {o.case.case_id}: [cb] {e['cb_error_type']}: {e['cb_error'][:300]!r}\n    at {e['cb_where']}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"versions": versions(), "timings": timings,
                 "outcomes": [{"case": o.case.to_dict(), "ok": o.ok, "stage": o.stage, "ranks": o.ranks} for o in outcomes]},
                indent=1,
            )
        )  # fmt: skip
    mismatched = [o.case.case_id for o in outcomes if o.ok != o.case.expected_ok or o.cb_ok != o.case.expected_cb_ok]
    print("observed != expected_ok:", mismatched or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
