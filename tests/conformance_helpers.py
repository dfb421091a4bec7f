"""What the tests of the committed conformance tables share (``tests/rules/test_conformance*.py``): the paths,
the per-release fixture, loading a table that may not be committed yet, and reading the README's lists of
the first-error mismatches that remain.

The ``catalog`` fixture they use is in ``tests/conftest.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from conformance import driver

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "data" / "conformance"
README = CONFORMANCE / "README.md"


def release_fixture(releases):
    """A module-scoped ``release`` fixture running each test once per executed release in ``releases``
    (assign it to ``release`` in the test module)."""

    @pytest.fixture(scope="module", params=releases)
    def release(request) -> str:
        return request.param

    return release


def committed_table(framework: str, release: str) -> pd.DataFrame:
    """``driver.load_table(framework, release)``; the test is skipped, with the command that assembles the
    table, while it is not committed."""
    path = driver.table_path(framework, release)
    if not path.is_file():
        pytest.skip(f"{path.relative_to(ROOT)} is not committed yet (assemble it with: python -m conformance "
                    f"assemble --framework {framework} --version {release})")
    return driver.load_table(framework, release)


def assert_harness_errors_rare_and_explained(table: pd.DataFrame) -> None:
    """At most 5 % of the cells are ``harness_error``, each with its reason; ``not_run`` only for remote code."""
    share = (table["outcome"] == "harness_error").mean()
    assert share <= 0.05, f"{share:.1%} harness_error cells"
    he = table[table["outcome"] == "harness_error"]
    assert (he["reason"] != "").all()
    nr = table[table["outcome"] == "not_run"]
    assert (nr["reason"] == "remote code").all()


def remaining_mismatches(comparison: pd.DataFrame) -> pd.DataFrame:
    """Refused cells whose verdict agrees but whose first error (message or raise site) does not."""
    refused = comparison[~comparison["table_valid"] & comparison["verdict_ok"]]
    return refused[~(refused["message_ok"] & refused["location_ok"])]


def readme_mismatch_rows(tag: str, label: str, min_cells: int) -> list[list[str]]:
    """The rows (stripped cells) of the README table between ``<!-- mismatches {tag} -->`` and
    ``<!-- /mismatches -->`` with at least ``min_cells`` cells and a number in the second; fails with
    "README has no {label}" when the list is missing."""
    text = README.read_text(encoding="utf-8")
    m = re.search(rf"<!-- mismatches {re.escape(tag)} -->(.*?)<!-- /mismatches -->", text, re.DOTALL)
    assert m, f"README has no {label}"
    rows = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= min_cells and cells[1].isdigit():
            rows.append(cells)
    return rows
