"""The interim ranking (issue 22 item 7): most KV capacity, near-ties within 10 % prefer fewer pipeline
stages then more replicas, and leads that come only from default memory fractions labelled as such."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dashboard import planner
from dashboard.catalog import load_catalog
from dashboard.planner.ranking import best_per_row, near_ties, rank_order

LLAMA = "meta-llama/Llama-3.1-70B-Instruct"
SMALL = "HuggingFaceTB/SmolLM3-3B"


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _rec(cat, mid):
    return cat[cat["model_id"] == mid].iloc[[0]]


def test_rank_order_rule_on_hand_made_rows():
    # total, pp, dp, gpus_per_replica
    rows = [(379, 16, 1, 16), (375, 2, 1, 16), (375, 4, 1, 16), (372, 8, 1, 16), (328, 8, 2, 8), (400, 1, 1, 1)]
    total, pp, dp, gpr = (np.array(c) for c in zip(*rows))
    fits = np.array([True] * 5 + [False])
    order = rank_order(total, pp, dp, gpr, fits).tolist()
    # 341.1 = 90 % of 379: the first four are near-ties, by fewest stages; 328 is outside; 400 does not fit
    assert order == [1, 2, 3, 0, 4, 5]
    assert near_ties(total, fits).tolist() == [True, True, True, True, False, False]
    # among near-ties with the same stages, more replicas first, then more sequences
    order = rank_order([100, 95, 96], [1, 1, 1], [1, 4, 2], [8, 2, 4], [True] * 3).tolist()
    assert order == [1, 2, 0]
    # outside the band capacity alone decides (a 10 % drop is not a near-tie)
    order = rank_order([100, 89, 50], [4, 1, 1], [1, 8, 8], [8, 1, 1], [True] * 3).tolist()
    assert order == [0, 1, 2]


def test_best_per_row_matches_rank_order():
    rng = np.random.default_rng(0)
    total = rng.integers(1, 400, size=(20, 12)).astype(float)
    ok = rng.random((20, 12)) > 0.3
    pp, dp = rng.integers(1, 5, 12), rng.integers(1, 5, 12)
    gpr = rng.integers(1, 9, 12)
    got = best_per_row(total, ok, pp, dp, gpr)
    for i in range(20):
        if ok[i].any():
            assert got[i] == rank_order(total[i], pp, dp, gpr, ok[i])[0]


def test_llama70b_on_16_h100_vllm_prefers_tp8_pp2(cat):
    """The issue's first example: TP 1 x PP 16 held one sequence more than TP 8 x PP 2 and came first."""
    df = planner.plan(_rec(cat, LLAMA), 16, "H100-80GB", context_len=32768, frameworks=("vllm",))
    fit = df[df["fits"]]
    by = {r["layout"]: r for r in fit.to_dict("records")}
    assert by["TP 1 × PP 16"]["sequences_total"] >= by["TP 8 × PP 2"]["sequences_total"]  # the near-tie
    assert fit.iloc[0]["layout"] == "TP 8 × PP 2" and int(fit.iloc[0]["rank"]) == 1
    assert planner.best(df)["layout"].tolist() == ["TP 8 × PP 2"]
    assert planner.plan_to_dict(df)["best"]["vllm"] == "TP 8 × PP 2"
    text = planner.format_table(df, limit=5)
    assert "Launch, the vLLM layout with the most KV capacity (TP 8 × PP 2" in text
    assert "Near-ties, within 10 % of the most KV capacity, prefer fewer pipeline stages" in text


def test_small_model_on_8_gpus_prefers_replicas_not_a_pipeline(cat):
    """The issue's second example: a small model got TP 1 x PP 8 (or another deep pipeline) on 8 GPUs."""
    df = planner.plan(_rec(cat, SMALL), 8, "H100-80GB", context_len=32768, frameworks=("vllm",))
    top = df.iloc[0]
    assert bool(top["fits"]) and int(top["pp"]) == 1 and top["layout"] == "TP 1 × DP 8"
    # the capacity leader is a pipeline layout, within 10 %
    assert int(df.loc[df["fits"], "sequences_total"].max()) > int(top["sequences_total"])
    lead = df.loc[df["fits"]].sort_values("sequences_total", ascending=False).iloc[0]
    assert int(lead["pp"]) > 1 and top["sequences_total"] >= 0.9 * lead["sequences_total"]
    # plan_catalog picks the same layout as plan()
    pc = planner.plan_catalog(_rec(cat, SMALL), 8, "H100-80GB", min_sequences=1, context_len=32768,
                              frameworks=("vllm",))
    assert pc["best_layout"].tolist() == ["TP 1 × DP 8"]


def test_tensorrt_llm_memory_fraction_lead_is_labelled(cat):
    """The issue's third example: TensorRT-LLM wins by its default memory fraction; the plan says so and
    computes that the order flips or ties at equal fractions."""
    df = planner.plan(_rec(cat, LLAMA), 16, "H100-80GB", context_len=32768)
    b = planner.best(df)
    assert b.iloc[0]["framework"] == "tensorrt-llm"
    notes = planner.fraction_notes(df)
    assert {n["other"] for n in notes} == {"vllm", "sglang"}
    v = next(n for n in notes if n["other"] == "vllm")
    assert v["leader"] == "tensorrt-llm" and v["leader_layout"] == v["other_layout"] == "TP 8 × PP 2"
    assert v["leader_sequences"] > v["other_sequences"]
    assert v["leader_share"] > v["other_share"]
    assert v["from_fraction"] and v["leader_at_other_share"] <= v["other_sequences"]
    assert "comes only from the default memory fractions" in v["text"]
    assert "kv_cache_free_gpu_memory_fraction 0.9" in v["text"] and "gpu-memory-utilization 0.9" in v["text"]
    d = planner.plan_to_dict(df)
    assert d["fraction_notes"] == json.loads(json.dumps(notes))
    assert "Memory fractions:" in planner.format_table(df, limit=3)


def test_no_fraction_note_when_the_lead_is_not_the_fraction(cat):
    """A lead that survives equal fractions is said to, not blamed on the fraction."""
    df = planner.plan(_rec(cat, LLAMA), 16, "H100-80GB", context_len=32768, frameworks=("vllm", "sglang"))
    notes = planner.fraction_notes(df)
    for n in notes:
        assert n["from_fraction"] == (n["leader_at_other_share"] <= n["other_sequences"])
        assert ("does not come from the memory fraction alone" in n["text"]) == (not n["from_fraction"])
    single = planner.plan(_rec(cat, LLAMA), 16, "H100-80GB", context_len=32768, frameworks=("vllm",))
    assert planner.fraction_notes(single) == []


def test_plan_tab_headline_says_most_kv_capacity_and_labels_the_fraction(cat):
    import html

    from dashboard.views.plan import summary_html

    df = planner.plan(_rec(cat, LLAMA), 16, "H100-80GB", context_len=32768)
    text = html.unescape(summary_html(df))
    assert "Most KV capacity for sequences of 32,768 tokens on 16 × H100-80GB" in text and "Best" not in text
    assert "near-ties within 10 % prefer fewer pipeline stages, then more replicas" in text
    assert "comes only from the default memory fractions" in text and 'class="tp-plan-fraction"' in text
    # each framework's entry is planner.best's, not merely its first row in the overall order
    for r in planner.best(df).to_dict("records"):
        assert f"{r['layout']}</b>, {int(r['sequences_total']):,}" in text
    vllm = planner.plan(_rec(cat, LLAMA), 16, "H100-80GB", context_len=8192, frameworks=("vllm",))
    assert "<b>vLLM TP 8 × PP 2</b>" in html.unescape(summary_html(vllm))
