"""The rules engine against SGLang's conformance tables (``data/conformance/sglang-<release>.parquet``):
what SGLang's own code did when it built every catalog model under TP x EP x attention-DP layouts
(``python -m conformance run --framework sglang``).

Each test runs once per executed SGLang release (``versions.EXECUTED["sglang"]``) and is skipped, with
the reason, while that release's table is not committed yet. No framework is installed here: the tables
are the evidence, these tests hold the engine to them.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.conformance_helpers import (
    ROOT,
    assert_harness_errors_rare_and_explained,
    committed_table,
    readme_mismatch_rows,
    release_fixture,
    remaining_mismatches,
)

from conformance import compare, driver, report
from dashboard import rules
from dashboard.rules import versions

RELEASES = versions.EXECUTED["sglang"]


release = release_fixture(RELEASES)


@pytest.fixture(scope="module")
def table(release) -> pd.DataFrame:
    return committed_table("sglang", release)


@pytest.fixture(scope="module")
def stale(table) -> pd.Series:
    return report.unjudged(table, "sglang") != ""


@pytest.fixture(scope="module")
def comparison(table, stale, catalog, release) -> pd.DataFrame:
    return compare.compare(table[~stale], catalog, "sglang", release)


def test_every_executed_release_has_its_registry() -> None:
    for r in RELEASES:
        reg = json.loads((ROOT / "data" / "conformance" / f"sglang-{r}-architectures.json").read_text())
        assert reg["version"] == r and len(reg["architectures"]) > 100 and reg["model_types"]


def test_table_covers_the_whole_catalog(table, catalog, release) -> None:
    assert set(table["model_id"]) == set(catalog["model_id"])
    assert (table["version"] == release).all() and (table["framework"] == "sglang").all()
    assert set(table["outcome"]) <= set(driver.OUTCOMES)
    # every model at every TP size, EP off and on, attention-DP 1/2/4
    for ep in (False, True):
        for dp in driver.SGLANG_ATTN_DP_SIZES:
            per_model = table[(table["dp"] == dp) & (table["ep"] == ep)].groupby("model_id")["tp"]
            assert (per_model.apply(lambda s: tuple(sorted(s))) == tuple(driver.TP_SIZES)).all(), (ep, dp)


def test_harness_errors_are_rare_and_explained(table) -> None:
    assert_harness_errors_rare_and_explained(table)


def test_unjudged_cells_are_few(stale) -> None:
    """Cells run with other sidecar files than the harness passes now, or refused for a reason the
    current worker calls a harness limitation, are not judged (listed in the README: re-run those
    models); they must stay an exception."""
    assert stale.mean() <= 0.02


def test_verdicts_match_sglang_on_every_cell(comparison) -> None:
    bad = comparison[~comparison["verdict_ok"]]
    assert len(comparison) > 3000
    assert bad.empty, bad[["model_id", "tp", "dp", "ep", "outcome", "table_message", "engine_rule",
                           "engine_message"]].head(20).to_string()


def test_first_error_matches_on_98_percent_of_refused_cells(comparison) -> None:
    s = compare.summary(comparison)
    assert s["refused"] > 1000
    assert s["first_error_agree"] >= 0.98 * s["refused"], s


def _documented(release: str) -> set[tuple[str, int, int, bool]]:
    return {(c[0].strip("`"), int(c[1]), int(c[2]), c[3] == "on")
            for c in readme_mismatch_rows(f"sglang-{release}", f"SGLang mismatch list for {release}", 5)}


def test_every_remaining_first_error_mismatch_is_listed_in_the_readme(comparison, release) -> None:
    miss = remaining_mismatches(comparison)
    actual = {(r.model_id, int(r.tp), int(r.dp), bool(r.ep)) for r in miss.itertuples()}
    assert actual == _documented(release), \
        "regenerate with: python -m conformance report --framework sglang --version " + release


def test_evidence_says_which_rules_the_table_reaches_first(comparison, release) -> None:
    """A rule is ``executed`` evidence when some judged cell's first error is that rule (same message and
    raise site, by the tests above); rules the table never reaches first keep their source-read site
    and say ``source`` (the not_seen_first list of data/conformance/sglang-<release>-evidence.json)."""
    from dashboard.frameworks.sglang import rules_executed as S

    first = set(comparison.loc[~comparison["table_valid"], "engine_rule"])
    with_site = {r.id for r in rules.rules_at("sglang", release) if r.severity == "error" and release in r.sites}
    assert with_site - first == set(S.NOT_SEEN_FIRST.get(release, ())), "update data/conformance/sglang-<release>-evidence.json (python -m conformance sites)"


def test_rules_of_executed_releases_carry_their_evidence(release) -> None:
    from dashboard.frameworks.sglang import rules_executed as S

    for r in rules.rules_at("sglang", release):
        if r.sites and release in r.sites:
            seen = r.id not in S.NOT_SEEN_FIRST.get(release, ())
            assert r.evidence == ("executed" if seen else "source") and r.location == r.sites[release]
            assert f"/v{release}/python/" in r.source_url
        if r.ours:
            assert r.exc_type == ""
        if r.message.startswith("AssertionError (no message) at "):
            assert r.message == f"AssertionError (no message) at {r.location}"


def test_default_sglang_version_is_the_newest_executed_release(catalog) -> None:
    rec = catalog.set_index("model_id").loc["Qwen/Qwen2.5-7B-Instruct"]
    v = rules.check(rec, "sglang", 8, dp=2, dp_attention=True)  # qwen2.py shards attention on the full TP
    assert v.release == RELEASES[-1] and v.executed and v.evidence == "executed"
    f = v.failures[0]
    assert f.exc_type == "AssertionError" and f.location == "sglang/srt/models/qwen2.py:167"
    assert f.message == "AssertionError (no message) at sglang/srt/models/qwen2.py:167"
    v21 = rules.check(rec, "sglang", 8, dp=2, dp_attention=True, version="0.5.21")
    assert v21.executed and v21.failures[0].message == "AssertionError (no message) at sglang/srt/models/qwen2.py:148"
    old = rules.check(rec, "sglang", 8, dp=2, dp_attention=True, version="0.5.20")
    assert not old.executed and old.evidence == "source" and old.valid  # the source-read rules used tp / dp


def test_kimi_k3_kda_is_a_bare_assert_since_0_5_23(catalog) -> None:
    """Case H23 (issue 2's seed table) gives Kimi-Linear's KDA message for Kimi-K3; 0.5.23's kimi_k3.py
    asserts on the attention-TP group with no message (the table: every TP 64 cell without attention-DP)."""
    cat = catalog.set_index("model_id")
    v = rules.check(cat.loc["moonshotai/Kimi-K3"], "sglang", 64)
    assert [f.message for f in v.failures][:1] == ["AssertionError (no message) at sglang/srt/models/kimi_k3.py:1542"]
    assert rules.check(cat.loc["moonshotai/Kimi-K3"], "sglang", 64, dp=2, dp_attention=True).valid
    lin = rules.check(cat.loc["moonshotai/Kimi-Linear-48B-A3B-Instruct"], "sglang", 12, dp=4, dp_attention=True)
    assert lin.failures[0].message == "KDA num_heads (32) must be divisible by shard tp_size (12)"
    assert lin.failures[0].location == "sglang/srt/models/kimi_linear.py:62"


def test_evidence_follows_the_first_error_not_the_further_failures() -> None:
    """Kimi-Linear at TP 12: SGLang 0.5.23 stops at the KDA check (executed); the engine also lists
    later failing rules that no table cell reaches first (source). The verdict's evidence is the first
    error's: executed."""
    from dashboard.catalog import load_catalog
    from dashboard.rules import check

    rec = load_catalog().set_index("model_id").loc["moonshotai/Kimi-Linear-48B-A3B-Instruct"]
    v = check(rec, "sglang", 12, version="0.5.23")
    assert not v.valid and v.failures[0].rule_id == "sglang.linear_attention_heads.kda"
    assert any(f.evidence == "source" for f in v.failures[1:])
    assert v.evidence == "executed"
