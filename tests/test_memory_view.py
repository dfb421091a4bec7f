"""Memory view (issue 14 items 3 and 5): calibration input and its URL state, the per-GPU breakdown,
the evidence marks (dashboard.memory.kv_family / kv_evidence / memory_breakdown)."""

from __future__ import annotations


import holoviews as hv
import pandas as pd
import pytest

from dashboard import memory
from dashboard.state import PlannerState, calibration_problem, load_app_data
from tests.conftest import SHARED

GiB = 2**30
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
ORACLES = SHARED / "oracles/kv-capacity.csv"


@pytest.fixture(scope="module")
def cat():
    return pd.read_parquet(memory.GPUS_CSV.parent / "catalog.parquet").set_index("model_id", drop=False)


@pytest.mark.parametrize("model,family", [
    (LLAMA, "dense"), ("Qwen/Qwen3-30B-A3B", "moe"), ("google/gemma-2-9b-it", "sliding-window"),
    ("google/medgemma-27b-it", "gemma3"), ("openai/gpt-oss-20b", "sinks"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "chunked"), ("Qwen/Qwen3-Next-80B-A3B-Instruct", "linear"),
    ("LGAI-EXAONE/EXAONE-4.0-32B", "sliding-uneven"), ("mistralai/Mistral-7B-v0.1", "sliding-window"),
])
def test_kv_family(cat, model, family):
    assert memory.kv_family(cat.loc[model]) == family


def test_kv_family_mla_and_plain_dicts():
    assert memory.kv_family({"num_hidden_layers": 4, "is_mla": True, "is_moe": True, "num_experts": 8}) == "mla"
    assert memory.kv_family({"num_hidden_layers": 4, "is_moe": True, "num_experts": 8}) == "moe"
    assert memory.kv_family({"num_hidden_layers": 4}) == "dense"


def test_kv_evidence_checked_and_unchecked(cat):
    ev = memory.kv_evidence(cat.loc[LLAMA], "vllm")
    s = memory.load_kv_oracle_summary()
    dense = s[(s.engine == "vllm") & (s.family == "dense") & (s.engine_generation == "current")]
    assert ev["checked"] and ev["runs"] == len(dense) > 20
    assert ev["worst_miss"] == pytest.approx(dense["miss"].abs().max())
    assert ev["band_pct"] == 1 and "within" in ev["text"] and ev["sources"][0].startswith("https://")
    assert ev["legacy_runs"] == 1  # the V0 run is not in the band
    moe = memory.kv_evidence(cat.loc["Qwen/Qwen3-30B-A3B"], "vllm")
    assert moe["checked"] and moe["band_pct"] == 3
    for model in ("google/medgemma-27b-it", "openai/gpt-oss-20b", "meta-llama/Llama-4-Scout-17B-16E-Instruct",
                  "Qwen/Qwen3-Next-80B-A3B-Instruct"):
        e = memory.kv_evidence(cat.loc[model], "vllm")
        assert not e["checked"] and e["band_pct"] is None and e["status"] == "not yet checked against a log"
        assert "unknown, modelled from source" in e["text"] and e["engine_runs"] > 0
    trt = memory.kv_evidence(cat.loc[LLAMA], "tensorrt-llm")
    assert not trt["checked"] and not trt["engine_checked"] and "not yet checked against a log" in trt["text"]
    sg = memory.kv_evidence(cat.loc[LLAMA], "sglang")
    assert sg["checked"] and sg["runs"] == 2 and sg["band_pct"] == 4


def test_kv_evidence_without_a_summary_says_unchecked(cat, tmp_path):
    empty = memory.load_kv_oracle_summary(tmp_path / "missing.csv")
    ev = memory.kv_evidence(cat.loc[LLAMA], "vllm", summary=empty)
    assert not ev["checked"] and ev["runs"] == 0
    with pytest.raises(ValueError):
        memory.kv_evidence(cat.loc[LLAMA], "nope")


@pytest.mark.skipif(not ORACLES.exists(), reason="oracle table not present")
def test_shipped_summary_matches_a_fresh_run():
    import scripts.kv_oracle_summary as ks

    fresh = ks.summary(ORACLES)
    shipped = memory.load_kv_oracle_summary()
    cols = ["oracle_id", "engine", "family", "measured_tokens", "predicted_tokens"]
    pd.testing.assert_frame_equal(fresh[cols].reset_index(drop=True), shipped[cols].reset_index(drop=True),
                                  check_dtype=False)


@pytest.mark.parametrize("fw", ["vllm", "sglang", "tensorrt-llm", "transformers-cb-cache", "megatron-core"])
@pytest.mark.parametrize("measured", [None, 40.0])
def test_breakdown_sums_to_the_gpu(cat, fw, measured):
    cap = memory.capacity(cat.loc[LLAMA], fw, "H100-80GB", 1, context_len=8192,
                          measured_kv_bytes=None if measured is None else measured * GiB)
    bd = memory.memory_breakdown(cap)
    parts = bd["parts"].set_index("part")["bytes"]
    assert bd["over_bytes"] == 0
    assert parts.sum() == pytest.approx(cap["memory_bytes"], rel=1e-9)
    assert parts["weights"] == cap["weight_bytes_per_gpu"] and (parts >= 0).all()
    assert parts["KV cache"] == pytest.approx(max(cap["kv_budget_bytes_per_gpu"], 0))
    assert ("reserve implied by your log" in parts.index) == (measured is not None)
    if fw == "vllm" and measured is None:
        assert parts["CUDA graphs"] == cap["cuda_graph_bytes_per_gpu"] > 0
        assert parts["free"] == pytest.approx(cap["memory_bytes"] * 0.1, rel=1e-6)


def test_breakdown_over_capacity(cat):
    cap = memory.capacity(cat.loc["meta-llama/Llama-3.1-70B-Instruct"], "vllm", "L4-24GB", 1, context_len=8192)
    bd = memory.memory_breakdown(cap)
    assert bd["over_bytes"] > 100 * GiB and bd["parts"].set_index("part").loc["free", "bytes"] == 0


def test_calibration_url_round_trip_and_hostile_values():
    s = PlannerState()
    assert s.apply_query("?gpu=H100-80GB&kv_measured_gib=54.12") == []
    assert s.kv_measured_gib == 54.12 and s.to_query()["kv_measured_gib"] == "54.12"
    t = PlannerState()
    assert t.apply_query(s.query_string()) == [] and t.kv_measured_gib == 54.12
    for raw in ("-1", "0", "nan", "inf", "1e9", "<script>alert(1)</script>", "90", "54.12,3"):
        u = PlannerState()
        notes = u.apply_query({"kv_measured_gib": raw})
        assert u.kv_measured_gib is None and len(notes) == 1 and notes[0].startswith("Ignored link parameter"), raw
    u = PlannerState()
    assert u.apply_query("?kv_measured_gib=90&gpu=other:96") == [] and u.kv_measured_gib == 90
    assert PlannerState().apply_query("?kv_measured_gib=") == []
    assert calibration_problem(20, "L4-24GB") == "" and "more than" in calibration_problem(30, "L4-24GB")


@pytest.fixture(scope="module")
def data():
    hv.extension("bokeh")
    return load_app_data()


def _view(data, **kw):
    from dashboard.views.memory import MemoryView

    s = PlannerState(model=LLAMA, tab="memory", tp=1, gpu="H100-80GB", **kw)
    return s, MemoryView(state=s, data=data)


def test_view_uncalibrated_then_calibrated(data):
    s, v = _view(data)
    assert "Not calibrated" in v._calib_note.object and "tp-mem-breakdown" in v._bd_table.object
    assert "checked against logs" in v._evidence.object and "(calibrated)" not in v._table.object
    fig = hv.render(v._bd_bar.object)
    assert fig.x_range.end >= 79
    v._calib.value = 54.12
    assert s.kv_measured_gib == 54.12
    note = v._calib_note.object
    assert "Calibrated from your log" in note and "54.12 GiB" in note
    assert "reserve implied by your log" in v._bd_table.object and "TP 1 (calibrated)" in v._table.object
    assert v._table.object.count("(calibrated)") == 1  # only the logged layout
    v._calib.value = None
    assert s.kv_measured_gib is None and "Not calibrated" in v._calib_note.object


def test_view_refuses_a_figure_above_the_gpu_and_unchecked_family(data):
    s, v = _view(data)
    v._calib.value = 500.0
    assert s.kv_measured_gib is None and v._calib.value == 500.0
    assert "not used" in v._calib_note.object and "Calibrated" not in v._calib_note.object
    s2, v2 = _view(data, kv_measured_gib=70.0)
    s2.gpu = "L4-24GB"  # the figure no longer fits the card: ignored with a warning
    assert "not used" in v2._calib_note.object and "(calibrated)" not in v2._table.object
    s3, v3 = _view(data)
    s3.model = "openai/gpt-oss-20b"
    assert "not yet checked against a log" in v3._evidence.object and "unknown" in v3._evidence.object
