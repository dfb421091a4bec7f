"""The rules engine against the committed conformance tables (data/conformance/): what vLLM's own
code did when it built every catalog model under simulated layouts (``python -m conformance``).

No framework is installed here: the tables are the evidence, these tests hold the engine to them.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.conformance_helpers import (
    ROOT,
    assert_harness_errors_rare_and_explained,
    readme_mismatch_rows,
    release_fixture,
    remaining_mismatches,
)

from conformance import compare, driver
from dashboard import rules
from dashboard.rules import versions

RELEASES = versions.EXECUTED["vllm"]


release = release_fixture(RELEASES)


@pytest.fixture(scope="module")
def table(release) -> pd.DataFrame:
    return driver.load_table("vllm", release)


@pytest.fixture(scope="module")
def comparison(table, catalog, release) -> pd.DataFrame:
    return compare.compare(table, catalog, "vllm", release)


def test_every_executed_release_has_its_table_and_registry() -> None:
    found = sorted(p.name for p in (ROOT / "data" / "conformance").glob("vllm-*.parquet"))
    assert found == sorted(f"vllm-{r}.parquet" for r in RELEASES)
    for r in RELEASES:
        reg = json.loads((ROOT / "data" / "conformance" / f"vllm-{r}-architectures.json").read_text())
        assert reg["version"] == r and len(reg["architectures"]) > 100


def test_table_covers_the_whole_catalog(table, catalog, release) -> None:
    assert set(table["model_id"]) == set(catalog["model_id"])
    assert (table["version"] == release).all() and (table["framework"] == "vllm").all()
    assert set(table["outcome"]) <= set(driver.OUTCOMES)
    # every model at every TP size of the plan, EP off and on
    for ep in (False, True):
        per_model = table[(table["dp"] == 1) & (table["ep"] == ep) & ~table["vision_dp"]].groupby("model_id")["tp"]
        assert (per_model.apply(lambda s: tuple(sorted(s))) == tuple(driver.TP_SIZES)).all()


def test_harness_errors_are_rare_and_explained(table) -> None:
    assert_harness_errors_rare_and_explained(table)


def test_block_fp8_and_moe_models_are_built_not_skipped(table, catalog) -> None:
    cat = catalog.set_index("model_id")
    built = set(table.loc[table["outcome"] == "built", "model_id"])
    fp8 = set(cat.index[cat["weight_block_n"].notna()])
    moe = set(cat.index[cat["is_moe"].fillna(False).astype(bool)])
    ran = set(table.loc[table["outcome"] != "not_run", "model_id"])
    assert fp8 & built and moe & built
    # every block-FP8 / MoE model the harness could run was built at some layout, unless vLLM refused the
    # model itself: one error at every layout the engine check lets through (a model_type it cannot read,
    # a quantization config its model class cannot parse)
    for mid in sorted((fp8 | moe) & ran - built):
        cells = table[(table["model_id"] == mid) & (table["outcome"] != "harness_error")]
        assert cells["outcome"].isin(["refused_engine", "refused_build"]).all(), mid
        passed_engine = cells[~cells["message"].str.startswith("Total number of attention heads")
                              & ~cells["message"].str.startswith("Number of experts in the model")]
        assert passed_engine["message"].nunique() == 1, (mid, passed_engine["message"].unique()[:3])


def test_verdicts_match_vllm_on_every_cell(comparison) -> None:
    bad = comparison[~comparison["verdict_ok"]]
    assert len(comparison) > 3000
    assert bad.empty, bad[["model_id", "tp", "dp", "ep", "vision_dp", "outcome", "table_message",
                           "engine_rule", "engine_message"]].head(20).to_string()


def test_first_error_matches_on_98_percent_of_refused_cells(comparison) -> None:
    s = compare.summary(comparison)
    assert s["refused"] > 1000
    assert s["first_error_agree"] >= 0.98 * s["refused"], s


def _documented(release: str) -> set[tuple[str, int, int, bool, bool]]:
    return {(c[0].strip("`"), int(c[1]), int(c[2]), c[3] == "on", c[4] == "on")
            for c in readme_mismatch_rows(release, f"mismatch list for {release}", 6)}


def test_every_remaining_first_error_mismatch_is_listed_in_the_readme(comparison, release) -> None:
    miss = remaining_mismatches(comparison)
    actual = {(r.model_id, int(r.tp), int(r.dp), bool(r.ep), bool(r.vision_dp)) for r in miss.itertuples()}
    assert actual == _documented(release), "regenerate with: python -m conformance report --version " + release


def test_rules_of_executed_releases_carry_their_evidence(release) -> None:
    for r in rules.rules_at("vllm", release):
        if r.versions == "<0.22.0":
            continue
        if r.sites and release in r.sites:
            assert r.evidence == "executed" and r.location == r.sites[release]
            assert f"/v{release}/" in r.source_url
        if r.ours:
            assert r.exc_type == ""


def test_default_version_is_the_newest_executed_release(catalog) -> None:
    rec = catalog.set_index("model_id").loc["meta-llama/Llama-3.1-70B-Instruct"]
    v = rules.check(rec, "vllm", 6)
    assert v.release == RELEASES[-1] and v.executed and v.evidence == "executed"
    assert v.failures[0].location == "vllm/config/model.py:1560"
    old = rules.check(rec, "vllm", 6, version="2024-05")
    assert old.release == "0.4.2" and not old.executed and old.evidence == "source"
    assert any("0.4.2" in w.message for w in old.warnings if w.rule_id == "engine.version")


def test_bare_asserts_are_shown_with_their_site(catalog) -> None:
    rec = catalog.set_index("model_id").loc["meta-llama/Llama-3.2-3B"]
    v = rules.check(rec, "vllm", 3)  # 24 heads, 8 KV heads: the engine check passes, llama.py asserts
    assert not v.valid
    f = v.failures[0]
    assert f.exc_type == "AssertionError" and f.message == f"AssertionError (no message) at {f.location}"
    assert f.location.startswith("vllm/model_executor/models/llama.py:")
