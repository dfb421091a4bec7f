"""The rules engine against Megatron-Core's conformance table (``data/conformance/megatron-core-<release>.parquet``):
what Megatron-Core's own code did when it configured and built every catalog model the harness maps
(``conformance/megatron_worker.py``) under TP x PP x EP layouts (``python -m conformance run --framework
megatron-core``).

No framework is installed here: the table is the evidence, these tests hold the engine to it. Each test runs
once per executed Megatron-Core release (``versions.EXECUTED["megatron-core"]``) and is skipped, with the
reason, while that release's table is not committed.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.conformance_helpers import (
    ROOT,
    committed_table,
    readme_mismatch_rows,
    release_fixture,
    remaining_mismatches,
)

from conformance import compare, driver
from dashboard import rules
from dashboard.frameworks.megatron_core import rules_executed as M
from dashboard.rules import versions

FW = "megatron-core"
RELEASES = versions.EXECUTED[FW]


release = release_fixture(RELEASES)


@pytest.fixture(scope="module")
def table(release) -> pd.DataFrame:
    return committed_table(FW, release)


@pytest.fixture(scope="module")
def comparison(table, catalog, release) -> pd.DataFrame:
    return compare.compare(table, catalog, FW, release)


def test_every_executed_release_has_its_mapping_file() -> None:
    for r in RELEASES:
        reg = json.loads((ROOT / "data" / "conformance" / f"{FW}-{r}-architectures.json").read_text())
        assert reg["version"] == r and reg["dense"] and reg["moe"] and reg["mla"]


def test_table_covers_the_whole_catalog_with_the_planned_cells(table, catalog, release) -> None:
    assert set(table["model_id"]) == set(catalog["model_id"])
    assert (table["version"] == release).all() and (table["framework"] == FW).all()
    assert set(table["outcome"]) <= set(driver.OUTCOMES)
    moe = {m for m, g in table.groupby("model_id") if g["ep"].any()}
    dense = table[~table["ep"]]
    for _mid, g in dense.groupby("model_id"):
        assert sorted(zip(g["pp"], g["tp"])) == sorted((p, t) for p in driver.MEGATRON_PP_SIZES
                                                       for t in driver.TP_SIZES)
    ep = table[table["ep"]]
    assert set(ep["dp"]) == set(driver.MEGATRON_EP_SIZES) and set(ep["pp"]) == set(driver.MEGATRON_EP_PP_SIZES)
    assert ep.groupby("model_id").size().eq(len(driver.MEGATRON_EP_SIZES) * len(driver.MEGATRON_EP_PP_SIZES)
                                            * len(driver.TP_SIZES)).all()
    assert len(moe) >= 20


def test_harness_errors_are_rare_and_explained(table) -> None:
    assert (table["outcome"] == "harness_error").mean() <= 0.01
    for col in ("harness_error", "not_run"):
        assert (table.loc[table["outcome"] == col, "reason"] != "").all()


def test_verdicts_match_megatron_on_every_cell(comparison) -> None:
    bad = comparison[~comparison["verdict_ok"]]
    assert len(comparison) > 3000
    assert bad.empty, bad[["model_id", "tp", "pp", "dp", "ep", "outcome", "table_message", "engine_rule",
                           "engine_message"]].head(20).to_string()


def test_first_error_matches_on_every_refused_cell(comparison) -> None:
    s = compare.summary(comparison)
    assert s["refused"] > 1000
    assert s["first_error_agree"] == s["refused"], s


def _documented(release: str) -> set[tuple[str, int, int, int]]:
    return {(c[0].strip("`"), int(c[1]), int(c[2]), int(c[3]))
            for c in readme_mismatch_rows(f"{FW}-{release}", f"Megatron-Core mismatch list for {release}", 5)}


def test_every_remaining_first_error_mismatch_is_listed_in_the_readme(comparison, release) -> None:
    miss = remaining_mismatches(comparison)
    actual = {(r.model_id, int(r.tp), int(r.pp), int(r.dp) if r.ep else 1) for r in miss.itertuples()}
    assert actual == _documented(release), \
        f"regenerate with: python -m conformance report --framework {FW} --version {release}"


def test_evidence_says_which_rules_the_table_reaches_first(comparison, release) -> None:
    first = set(comparison.loc[~comparison["table_valid"], "engine_rule"])
    with_site = {r.id for r in rules.rules_at(FW, release) if r.severity == "error" and release in r.sites}
    assert with_site - first == set(M.NOT_SEEN_FIRST.get(release, ())), "update data/conformance/megatron-core-<release>-evidence.json (python -m conformance sites)"


def test_rules_of_executed_releases_carry_their_evidence(release) -> None:
    for r in rules.rules_at(FW, release):
        assert release in r.sites, r.id
        seen = r.id not in M.NOT_SEEN_FIRST.get(release, ())
        assert r.evidence == ("executed" if seen else "source") and r.location == r.sites[release]
        assert f"/core_v{release}/megatron/core/" in r.source_url
        assert not r.ours and r.exc_type in ("ValueError", "AssertionError")


def test_not_run_cells_say_why(table) -> None:
    nr = table[table["outcome"] == "not_run"].groupby("model_id")["reason"].first()
    assert nr.str.len().gt(0).all()
    assert nr.get("Qwen/Qwen-7B") == "remote code"
    assert "Mamba" in nr.get("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "")


def test_default_megatron_version_is_the_newest_executed_release(catalog) -> None:
    cat = catalog.set_index("model_id")
    llama = cat.loc["meta-llama/Llama-3.1-8B-Instruct"]
    v = rules.check(llama, FW, 16)  # 8 query groups divide 16 ranks: valid since core_v0.16.0
    assert v.release == RELEASES[-1] and v.executed and v.valid and v.evidence == "executed"
    old = rules.check(llama, FW, 16, version="0.15.0")  # the source-read rule before 0.16.0
    assert not old.executed and [f.message for f in old.failures] == [
        "num_query_groups (8) must be a multiple of tensor_model_parallel_size (16)."]
    v3 = rules.check(llama, FW, 3)
    assert v3.failures[0].message == "num_attention_heads (32) must be a multiple of tensor_model_parallel_size (3)."
    assert v3.failures[0].location == "megatron/core/transformer/transformer_config.py:925"
    assert v3.failures[0].exc_type == "ValueError"


def test_gated_mlp_fc1_is_twice_the_ffn() -> None:
    """Audit M6: Llama-2-13B at TP 5 (heads, groups and vocabulary divide): linear_fc1 (2 x 13824) fails."""
    rec = {"model_id": "x", "num_attention_heads": 40, "num_key_value_heads": 40, "vocab_size": 32000,
           "intermediate_size": 13824, "mlp_gated": True, "num_hidden_layers": 40}
    v = rules.check(rec, FW, 5)
    assert [f.message for f in v.failures] == ["27648 is not divisible by 5 when instantiating ColumnParallelLinear "
                                               "when instantiating MLP when instantiating TransformerLayer"]
    assert v.failures[0].location == "megatron/core/utils.py:468"


def test_experts_and_pipeline_messages() -> None:
    moe = {"model_id": "x", "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 151936,
           "intermediate_size": 6144, "mlp_gated": True, "num_hidden_layers": 48, "is_moe": True,
           "num_experts": 128, "moe_intermediate_size": 768, "num_dense_layers": 0}
    v = rules.check(moe, FW, 4, ep=3, dp=3)
    assert v.failures[0].message == " when instantiating MoELayer when instantiating TransformerLayer"
    assert v.failures[0].location == "megatron/core/transformer/moe/moe_layer.py:101"
    pp = rules.check(moe, FW, 4, pp=5)
    assert pp.failures[0].message == "num_layers should be divisible by pipeline_model_parallel_size"
    new = rules.check(moe, FW, 4, pp=5, version="0.17.0")
    assert new.failures[0].message == "num_layers=48 should be divisible by config.pipeline_model_parallel_size=5"
    assert not new.executed and new.evidence == "source"
    etp = rules.check(dict(moe, moe_intermediate_size=360), FW, 32, ep=8, dp=8)  # expert-TP = TP, not 1
    assert etp.failures[0].message == ("720 is not divisible by 32 when instantiating ColumnParallelLinear when "
                                       "instantiating SequentialMLP when instantiating MoELayer when instantiating "
                                       "TransformerLayer")
