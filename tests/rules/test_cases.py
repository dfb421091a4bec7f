"""Every row of the real failure cases (tests/data/tp-failure-cases.csv, a copy of
../shared/cases/tp-failure-cases.csv) is a test named after its case_id: the engine's verdict for the
row's rule kind, and the framework's message verbatim where the case gives one.

Records: the shipped catalog's full record when ``in_shared_hub_configs`` is yes (and the catalog is
there), else a record built from the case's ``shape_json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dashboard.rules import check

HERE = Path(__file__).resolve().parents[1]  # tests/
CASES_CSV = HERE / "data" / "tp-failure-cases.csv"
CASES = pd.read_csv(CASES_CSV, dtype=str, keep_default_na=False)


def _catalog():
    try:
        from dashboard.catalog import load_catalog
    except ImportError:
        return None
    try:
        return load_catalog()
    except (FileNotFoundError, OSError):
        return None


CATALOG = _catalog()


def shape_record(model_id: str, shape: dict) -> dict:
    """A catalog-like record from the few config numbers a case states (a raw config subset)."""
    text = shape.get("text_config", shape)
    rec: dict = {"model_id": model_id, "status": "ok"}
    for k in ("num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size", "intermediate_size",
              "moe_intermediate_size", "num_hidden_layers"):
        if k in text:
            rec[k] = text[k]
    if "n_inner" in text:
        rec["intermediate_size"] = text["n_inner"]
    if "num_attention_heads" in rec and "num_key_value_heads" not in rec:
        rec["num_key_value_heads"] = rec["num_attention_heads"]
    for k in ("n_routed_experts", "num_experts", "num_local_experts"):
        if k in text:
            rec["num_experts"] = text[k]
    if "num_experts" in rec or "moe_intermediate_size" in rec:
        rec["is_moe"] = True
        if "intermediate_size" in rec:  # DeepSeek-style: first_k_dense_replace dense layers
            rec["num_dense_layers"] = 1
    q = shape.get("quantization_config") or text.get("quantization_config")
    if q:
        rec["is_quantized"] = True
        rec["quant_method"] = q.get("quant_method")
        if q.get("weight_block_size"):
            rec["weight_block_n"], rec["weight_block_k"] = q["weight_block_size"][:2]
    vis = shape.get("vision_config")
    if vis and "num_heads" in vis:
        rec["has_vision"] = True
        rec["vision_num_heads"] = vis["num_heads"]
    lac = text.get("linear_attn_config")
    if lac and "num_heads" in lac:
        rec["has_linear_attention"] = True
        rec["linear_attention_kind"] = "kda"
        rec["linear_num_value_heads"] = lac["num_heads"]
        rec["linear_num_key_heads"] = lac["num_heads"]
    if "n_groups" in text:
        rec["has_linear_attention"] = True
        rec["linear_attention_kind"] = "mamba2"
        rec["mamba_n_groups"] = text["n_groups"]
    return rec


def _hub_id(model_id: str) -> str:
    return model_id.split(" (")[0].strip()


def record_for(case: pd.Series) -> dict:
    shape = json.loads(case["shape_json"])
    mid = _hub_id(case["model_id"])
    if case["in_shared_hub_configs"] == "yes" and CATALOG is not None:
        rows = CATALOG[CATALOG["model_id"] == mid]
        assert len(rows) == 1, f"{mid} should be in the shipped catalog exactly once"
        return rows.iloc[0].to_dict()
    return shape_record(mid, shape)


#: ``framework_version`` "seed": issue 2's seed table, written from the framework's source before any of
#: its releases was run through the conformance harness. Those rows hold the source-read rules of that
#: time (evidence "source"): SGLang's before 0.5.21, the oldest executed release (from 0.5.21 Kimi-K3's KDA
#: check is a bare assert in kimi_k3.py, not H23's message; data/conformance/README.md, SGLang).
SEED_RELEASE = {"sglang": "0.5.20"}


@pytest.mark.parametrize("case_id", CASES["case_id"].tolist())
def test_case(case_id: str) -> None:
    case = CASES.set_index("case_id").loc[case_id]
    options = json.loads(case["options_json"] or "{}")
    ep = int(case["ep"])
    if options.get("enable_expert_parallel") and ep == 1:
        ep = int(case["tp"]) * int(case["dp"])
    version = case["framework_version"] or None
    if version == "seed":
        version = SEED_RELEASE.get(case["framework"], version)
    v = check(record_for(case), case["framework"], int(case["tp"]), version=version, pp=int(case["pp"]),
              dp=int(case["dp"]), ep=ep)
    kind = case["rule_kind"]
    hits = list(v.failures) if kind == "all" else [f for f in v.failures if f.kind == kind]
    msgs = [h.message for h in hits]
    if case["expected"] == "fail":
        assert hits, f"{case_id}: expected a {kind} failure under {case['framework']}, got {v.failures}"
        if case["message"]:
            assert case["message"] in msgs, f"{case_id}: {case['message']!r} not in {msgs}"
        assert not v.valid and v.status == "invalid"
    else:
        assert not hits, f"{case_id}: expected no {kind} failure, got {msgs}"
        if kind == "all":
            assert v.valid and v.status in ("valid", "valid_replicated", "valid_padded")


def test_every_case_is_parametrized() -> None:
    assert len(CASES) == 26 and CASES["case_id"].is_unique


def test_cases_copy_matches_shared(shared_dir) -> None:
    original = shared_dir / "cases" / "tp-failure-cases.csv"
    assert original.read_bytes() == CASES_CSV.read_bytes(), "tests/data copy is stale: copy it again"


def test_h11_sglang_pads_glm45v_vision_heads() -> None:
    case = CASES.set_index("case_id").loc["H11"]
    v = check(record_for(case), "sglang", 8)
    assert v.status == "valid_padded"
    assert any("padded with 4 dummy heads to 16" in w.message for w in v.warnings)
