"""The transformers rules against transformers 5.24's own code (``python -m conformance transformers ...``).

Three committed tables (``data/conformance/``), no torchrun here:

* ``transformers-<v>-plans.parquet``: every catalog config through the library (config registry, model
  class, TP plan, the load-time plan resolution and the paged-cache constructor at every TP size);
* ``transformers-<v>-runs.parquet``: tiny models of each plan shape run under torchrun (gloo, CPU) at
  TP 1, 2, 3, 4, 8 -- load, ``generate_batch``, forward;
* ``transformers-<v>.parquet``: per catalog model x TP, native TP and the continuous-batching cache.

Held: the rules' per-``model_type`` plan data is the plans table's; the table's forward-stage model agrees
with every executed tiny cell; the rules reproduce every executed tiny cell and every judged catalog cell
(verdict, cause, the library's message where it depends on the model only, raise site).
"""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest
from tests.conformance_helpers import README, ROOT, release_fixture

from conformance import transformers_plans as TP_PLANS
from conformance import transformers_table as T
from dashboard import rules
from dashboard.frameworks.transformers import rules_executed as X
from dashboard.rules import versions

FRAMEWORKS = (T.NATIVE, T.CB)
RELEASES = versions.EXECUTED[T.NATIVE]


release = release_fixture(RELEASES)


@pytest.fixture(scope="module")
def plans(release) -> pd.DataFrame:
    return TP_PLANS.load_table(release)


@pytest.fixture(scope="module")
def runs(release) -> pd.DataFrame:
    return pd.read_parquet(T.runs_path(release))


@pytest.fixture(scope="module")
def table(release) -> pd.DataFrame:
    return T.load_table(release)


@pytest.fixture(scope="module")
def comparison(table, catalog, release) -> pd.DataFrame:
    return T.compare(table, catalog, release)


def test_executed_releases_have_their_tables() -> None:
    assert versions.EXECUTED[T.NATIVE] == versions.EXECUTED[T.CB] == X.EXECUTED
    found = sorted(p.name for p in (ROOT / "data" / "conformance").glob("transformers-*.parquet"))
    want = sorted(f"transformers-{r}{s}.parquet" for r in RELEASES for s in ("", "-plans", "-runs"))
    assert found == want
    for r in RELEASES:
        reg = json.loads(TP_PLANS.registry_path(r).read_text())
        assert reg["version"] == r and len(reg["model_types"]) > 300


def test_plans_cover_the_catalog(plans, catalog) -> None:
    assert set(plans["model_id"]) == set(catalog["model_id"])
    assert set(plans["outcome"]) <= set(TP_PLANS.PLAN_OUTCOMES)
    assert (plans["outcome"] != "harness_error").all(), plans[plans["outcome"] == "harness_error"]
    assert (plans.loc[plans["outcome"] == "not_run", "reason"] == "remote code").all()


def test_plans_say_what_the_audit_says(plans) -> None:
    """research/audit-sglang-others.md section 2: phi3 gathers the fused qkv, gpt_oss shards only the
    embeddings, gpt2 and mllama have no plan; Llama is colwise q/k/v with k/v named for the cache."""
    by = plans.drop_duplicates("model_type").set_index("model_type")
    assert by.loc["phi3", "attn_style"] == "fused_colwise_gather_output" and not by.loc["phi3", "cb_kv_tp"]
    assert by.loc["gpt_oss", "shape"] == "embeddings_only"
    assert by.loc["qwen3_vl", "shape"] == "embeddings_only"
    for mt in ("gpt2", "mllama"):
        assert by.loc[mt, "outcome"] == "no_plan" and "has no `tp_plan`" in by.loc[mt, "message"]
    assert by.loc["llama", "heads_sharded"] and by.loc["llama", "kv_sharded"] and by.loc["llama", "cb_kv_tp"]


def test_rule_plan_data_is_the_plans_table(plans, catalog) -> None:
    assert X.PLANS == T.plans_by_model_type(plans, catalog)


def test_tiny_runs_are_real(runs) -> None:
    native = runs[runs["mode"] == "native"]
    assert set(native["tp"]) == {1, 2, 3, 4, 8}
    assert (native["ranks_reported"] == native["tp"]).all(), "a tiny run hung or crashed"
    assert set(native["cause"]) >= {"", "no_plan", "q_reshape", "kv_reshape", "grouped_mm"}
    ok = native[native["ok"] & (native["tp"] > 1)]
    assert len(ok) > 20
    # where TP ran, the logits equal the same checkpoint run without TP (float32 1e-4; bf16 MoE 0.5)
    tol = ok["dtype"].map({"float32": 1e-4, "bfloat16": 0.5})
    assert (ok["max_abs_diff"].astype(float) <= tol).all()


def _tiny_info(model_type: str) -> dict:
    info = dict(X.PLANS[model_type])
    info["bad_layer"] = {"qwen3_next": "linear_attention"}.get(model_type, "")  # the tiny configs' layer types
    return info


def test_forward_stage_model_matches_every_tiny_cell(runs) -> None:
    """The catalog table extrapolates the forward stage with ``forward_cause``: it must give what every
    executed tiny cell showed once load and cache construction passed."""
    bad = []
    for r in runs.itertuples():
        if r.cause in ("no_plan", "cb_kv", "cb_layer"):
            continue
        nbytes = 2 if r.dtype == "bfloat16" else 4
        moe_i = int(r.moe_intermediate) if str(r.moe_intermediate) not in ("", "nan", "None") else 0
        got = T.forward_cause(_tiny_info(r.model_type), r.heads, r.kv, moe_i, nbytes, moe_i > 0, r.tp, r.mode,
                              r.model_type)
        if got != r.cause:
            bad.append((r.case_id, r.tp, r.mode, r.cause, got, r.cause_message[:80]))
    assert not bad, bad


def _tiny_record(case_id: str, runs: pd.DataFrame) -> dict:
    from conformance import transformers_tp as TT
    from dashboard.catalog import normalize_config

    pytest.importorskip("transformers")
    import transformers

    t = next(c for c in TT.TINY if c.case_id == case_id)
    cfg = transformers.AutoConfig.for_model(t.model_type, **t.config_kwargs()).to_dict()
    cfg["architectures"] = [transformers.AutoModelForCausalLM._model_mapping[type(
        transformers.AutoConfig.for_model(t.model_type))].__name__]
    cfg["torch_dtype"] = t.dtype
    return normalize_config(cfg, f"tiny/{case_id}")


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers not installed")
def test_rules_reproduce_every_tiny_cell(runs) -> None:
    bad = []
    recs: dict[str, dict] = {}
    for r in runs.itertuples():
        if r.model_type == "deepseek_v3" and r.mode == "cb":
            continue  # the catalog's DeepSeek-V3 configs have indexed_attention layers (cache refuses); tiny has none
        rec = recs.setdefault(r.case_id, _tiny_record(r.case_id, runs))
        fw = T.NATIVE if r.mode == "native" else T.CB
        v = rules.check(rec, fw, int(r.tp), version="5.24.0")
        first = v.failures[0] if v.failures else None
        cause = T.rule_cause(first.rule_id) if first else ""
        if cause != r.cause:
            bad.append((r.case_id, r.tp, r.mode, r.cause, cause))
        elif first and not first.ours and first.message != r.cause_message:
            bad.append((r.case_id, r.tp, r.mode, "message", first.message[:80], r.cause_message[:80]))
        elif first and first.location and first.location != f"{r.cause_file}:{r.cause_line}":
            bad.append((r.case_id, r.tp, r.mode, "site", first.location, f"{r.cause_file}:{r.cause_line}"))
    assert not bad, bad


def test_table_covers_the_catalog(table, catalog) -> None:
    assert set(T.OUTCOMES) >= set(table["outcome"])
    for fw in FRAMEWORKS:
        g = table[table["framework"] == fw]
        assert set(g["model_id"]) == set(catalog["model_id"])
        assert (g.groupby("model_id")["tp"].apply(lambda s: tuple(sorted(s))) == T.TP_SIZES).all()
    judged = table[table["outcome"] != "not_run"]
    # executed on the model's own config, or inferred from a named tiny run
    assert set(judged["evidence"]) <= {"executed", "inferred"}
    inferred = judged[judged["evidence"] == "inferred"]
    assert (inferred["inferred_from"] != "").all(), inferred[inferred["inferred_from"] == ""].head()


def test_verdicts_match_on_every_judged_cell(comparison) -> None:
    bad = comparison[~comparison["verdict_ok"]]
    assert len(comparison) > 3000
    assert bad.empty, bad[["framework", "model_id", "tp", "outcome", "cause", "message", "engine_rule"]].head(20)


def test_first_error_matches_on_every_refused_cell(comparison) -> None:
    refused = comparison[~comparison["table_valid"]]
    bad = refused[~(refused["cause_ok"] & refused["message_ok"] & refused["location_ok"])]
    assert bad.empty, bad[["framework", "model_id", "tp", "cause", "message", "engine_rule", "engine_message",
                           "file", "line", "engine_location"]].head(20).to_string()


def test_readme_states_the_agreement(comparison) -> None:
    s = T.summary(comparison)
    text = README.read_text(encoding="utf-8")
    assert "## transformers 5.24 (issue 11)" in text
    assert f"verdict {s['verdict_agree']}/{s['cells']}" in text


def test_audit_spot_cells(catalog) -> None:
    """The audit's T1-T11 (research/audit-sglang-others.md section 7), as 5.24.0 does them."""
    cat = catalog.set_index("model_id")

    def chk(mid, fw, tp):
        return rules.check(cat.loc[mid], fw, tp)

    assert chk("microsoft/phi-4", T.NATIVE, 4).valid  # T1: qkv gathered
    assert chk("microsoft/phi-4", T.CB, 4).valid  # T2: no cache check (no self_attn.k_proj in the plan)
    assert chk("openai/gpt-oss-120b", T.NATIVE, 16).valid  # T3: embeddings only
    v = chk("openai-community/gpt2", T.NATIVE, 2)  # T4: no plan
    assert v.failures[0].message.startswith("`tp_size=2` was requested, but `GPT2LMHeadModel` has no `tp_plan`.")
    assert v.failures[0].location == "transformers/distributed/mixin.py:260" and v.evidence == "executed"
    assert not chk("meta-llama/Llama-3.1-8B-Instruct", T.NATIVE, 16).valid  # T6
    assert chk("Qwen/Qwen3-VL-8B-Instruct", T.NATIVE, 16).valid  # T7: embeddings only
    v = chk("meta-llama/Llama-3.1-8B-Instruct", T.CB, 16)  # T8
    assert v.failures[0].message == "Number of key value heads 8 must be divisible by tensor parallel size 16."
    assert not chk("zai-org/GLM-5", T.NATIVE, 3).valid  # T11: MLA q_b_proj colwise, 64 % 3


def test_dense_models_are_fully_checked_not_unknown():
    """A dense model has no moe_intermediate_size: the experts' grouped_mm rule does not apply to it, so
    the cell is judged (valid), not 'unknown' with a warning about a field a dense model never has."""
    from dashboard.catalog import load_catalog
    from dashboard.rules import check

    rec = load_catalog().set_index("model_id").loc["meta-llama/Llama-3.1-8B-Instruct"]
    for fw in ("transformers-native-tp", "transformers-cb-cache"):
        v = check(rec, fw, 8)
        assert v.valid and v.status == "valid" and not v.warnings, (fw, v.status, v.warnings)
