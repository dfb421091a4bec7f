"""The planner at a divisor-rich GPU count (60480: 2520 TP x PP splits, 68,431 layouts for DeepSeek-V3) equals
a row-by-row reference computation: rules judged per framework on its own layouts give the verdicts of one
evaluation of every layout under every framework, the evidence asked once per framework gives what
:func:`dashboard.rules.evidence.evidence_for` gives asked per row, the refusals grouped with numpy equal the
plain Python grouping, and the top layouts are the ones the single-layout API accepts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import planner, rules
from dashboard.catalog import load_catalog
from dashboard.frameworks.sglang import attn_dp_with_replicas
from dashboard.gpus import platform_of
from dashboard.planner import FW_LABEL, PLAN_FRAMEWORKS
from dashboard.planner.hardware import rules_platform
from dashboard.rules.evidence import config_hash, evidence_for
from tests.planner.plan_rows import check_plan_row

DSV3 = "deepseek-ai/DeepSeek-V3"
KEY = ["framework", "tp", "pp", "dp", "attn_dp", "ep"]


@pytest.fixture(scope="module")
def rec():
    cat = load_catalog()
    return cat[cat["model_id"] == DSV3].iloc[[0]]


@pytest.fixture(scope="module")
def big(rec):
    return planner.plan(rec, 60480, "H100-80GB", context_len=32768)


def _reference(rec, plan_df, gpus: int, gpu: str) -> pd.DataFrame:
    """Verdict and evidence per layout as the planner computed them before it split the work: one
    ``layout_grid`` over every layout (all frameworks' rows) under every framework, ``evidence_for`` per
    row. Rows in ``plan_df``'s order."""
    a = plan_df.attrs
    fws = list(a["releases"])
    lays = pd.concat([planner.enumerate_layouts(gpus, fw, moe=a["moe"],
                                                release=None if attn_dp_with_replicas(a["releases"][fw]) else "0.0.0")
                      for fw in fws], ignore_index=True)
    grid_in = {"tp": lays["tp"], "pp": lays["pp"], "dp": lays["r_dp"], "ep": lays["r_ep"],
               "dp_attention": lays["r_dp_attention"], "expert_parallel": lays["r_expert_parallel"]}
    rg = rules.layout_grid(rec, pd.DataFrame(grid_in), fws, detail=True, **rules_platform(gpu))
    n = len(lays)
    block = np.array([fws.index(f) for f in lays["framework"]]) * n + np.arange(n)
    meta = {(fw, r.id): r for fw in fws for r in rules.rules_for(fw, None)}
    h = config_hash(rec)
    plat = platform_of(gpu)
    out = lays[KEY].copy()
    for c in ("valid", "status", "failures", "rule_id", "message"):
        out[c] = rg[c].astype(object).to_numpy()[block]
    ev = []
    for r, ok, rid in zip(lays.to_dict("records"), out["valid"], out["rule_id"]):
        rule = meta.get((r["framework"], rid)) if rid else None
        ev.append(evidence_for(rec, r["framework"], a["releases"][r["framework"]], int(r["tp"]), pp=int(r["pp"]),
                               dp=int(r["r_dp"]), ep=int(r["r_ep"]), dp_attention=bool(r["r_dp_attention"]),
                               expert_parallel=bool(r["r_expert_parallel"]), record_hash=h, platform=plat,
                               first_error_executed=bool(ok or (rule is not None and rule.evidence == "executed"))).kind)
    out["evidence"] = ev
    assert not out.duplicated(KEY).any()
    return plan_df[KEY].merge(out, on=KEY, how="left", validate="one_to_one")


@pytest.mark.parametrize("gpus", [8, 60480])
def test_verdicts_and_evidence_equal_the_row_by_row_reference(rec, big, gpus):
    p = big if gpus == 60480 else planner.plan(rec, gpus, "H100-80GB", context_len=32768)
    ref = _reference(rec, p, gpus, "H100-80GB")
    assert len(ref) == len(p) and ref["valid"].notna().all()
    assert p["valid"].tolist() == ref["valid"].astype(bool).tolist()
    assert p["status"].astype(object).tolist() == ref["status"].tolist()
    assert p["first_error_rule"].astype(object).tolist() == ref["rule_id"].tolist()
    assert p["first_error"].astype(object).tolist() == ref["message"].tolist()
    assert [tuple(f) for f in p["failures"]] == [tuple(f) for f in ref["failures"]]
    assert p["evidence"].tolist() == ref["evidence"].tolist()
    if gpus == 8:  # the small count has executed cells: the shortcut must still find them
        assert (p["evidence"] == "executed").sum() > 0
    rule_rows = p["refusal_kind"] == "rule"
    assert (p.loc[rule_rows, "refusal"] == p.loc[rule_rows, "first_error"]).all()
    assert (~p.loc[rule_rows, "valid"]).all()


def test_top_layouts_are_accepted_by_the_single_layout_check(rec, big):
    r0 = rec.iloc[0]
    top = big[big["fits"]].head(10)
    assert len(top) == 10 and top["rank"].tolist() == list(range(1, 11))
    for r in top.to_dict("records"):
        v = check_plan_row(r0, r)
        assert v.valid and r["refusal_kind"] == "" and r["starts"], r["layout"]
    # the order is the ranking rule's over every fitting row
    fits = big["fits"].to_numpy()
    order = planner.rank_order(big["sequences_total"], big["pp"], big["dp"], big["gpus_per_replica"], fits)
    assert order[: int(fits.sum())].tolist() == list(range(int(fits.sum())))


def _refusals_reference(plan_df: pd.DataFrame) -> pd.DataFrame:
    """The plain Python grouping :func:`dashboard.planner.refusals` replaced."""
    bad = plan_df.loc[~plan_df["starts"].to_numpy(dtype=bool)]
    groups: dict[tuple, list[tuple]] = {}
    cols = ("framework", "refusal_kind", "refusal", "tp", "pp", "dp", "attn_dp", "ep", "layout")
    for fw, kind, reason, *sizes, label in zip(*(bad[c].tolist() for c in cols)):
        groups.setdefault((fw, kind, reason), []).append((*(int(x) for x in sizes), label))
    order = {fw: i for i, fw in enumerate(PLAN_FRAMEWORKS)}
    rows = []
    for (fw, kind, reason), items in groups.items():
        items.sort(key=lambda r: r[:5])
        labels = tuple(r[5] for r in items)
        shown = ", ".join(labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "")
        rows.append(((order.get(fw, len(order)), items[0][0]),
                     {"framework": fw, "refusal_kind": kind, "reason": reason, "layouts": labels,
                      "count": len(labels), "summary": f"{shown} refused by {FW_LABEL.get(fw, fw)}: {reason}"}))
    rows.sort(key=lambda r: r[0])
    return pd.DataFrame([r for _, r in rows],
                        columns=["framework", "refusal_kind", "reason", "layouts", "count", "summary"])


def test_refusals_equal_the_plain_grouping(rec, big):
    got = planner.refusals(big)
    ref = _refusals_reference(big)
    assert len(got) > 100  # many reasons: rules, cross-node spreads, memory
    pd.testing.assert_frame_equal(got, ref)
    small = planner.plan(rec, 16, "H100-80GB", context_len=32768, frameworks=("sglang",))
    pd.testing.assert_frame_equal(planner.refusals(small), _refusals_reference(small))


def test_vectorized_labels_and_distinct_rows_equal_the_row_by_row_helpers(big):
    cols = [big[c].to_numpy() for c in ("tp", "pp", "dp", "attn_dp", "ep")]
    assert planner.layout_labels(*cols) == [planner.layout_label(*v, None) for v in zip(*(c.tolist() for c in cols))]
    assert planner.layout_labels([], [], [], [], []) == []
    keys = ["tp", "pp", "dp", "attn_dp", "ep", "fits"]
    uniq, codes = planner.unique_rows(big, keys)
    seen: dict[tuple, int] = {}
    want = [seen.setdefault(t, len(seen)) for t in zip(*(big[k].tolist() for k in keys))]
    assert codes.tolist() == want
    firsts = list(seen)
    names = ["tp", "pp", "dp", "ep", "dp_attention", "expert_parallel"]
    for j, nm in enumerate(names):
        want_col = [bool(r[j]) if j >= 4 else int(r[j]) for r in firsts]
        assert uniq[nm].tolist() == want_col, nm
    small = {"a": np.array([3, 1, 3, 2, 1]), "b": np.array([0, 1, 0, 1, 1])}
    u, c = planner.unique_rows({**small, "c": small["a"], "d": small["a"], "e": small["b"], "f": small["b"]},
                               list("abcdef"))
    assert c.tolist() == [0, 1, 0, 2, 1] and u["tp"].tolist() == [3, 1, 2]
    assert u["expert_parallel"].dtype == bool


def test_commands_for_the_best_layouts_only_print_the_same_table(rec, big):
    """``commands="best"`` (what ``tp-planner plan`` prints as text) builds the commands of each framework's
    best layout only: the same commands, the same printed table, every other row empty."""
    for p_all in (big, planner.plan(rec, 16, "H100-80GB", context_len=32768)):
        p_best = planner.plan(rec, p_all.attrs["gpus"], "H100-80GB", context_len=32768, commands="best")
        b_all, b_best = planner.best(p_all), planner.best(p_best)
        assert len(b_all) >= 2 and b_best["commands"].tolist() == b_all["commands"].tolist()
        assert all(len(c) for c in b_best["commands"])
        assert sum(1 for c in p_best["commands"] if c) == len(b_best)
        pd.testing.assert_frame_equal(p_best.drop(columns="commands"), p_all.drop(columns="commands"))
        assert planner.format_table(p_best, limit=5) == planner.format_table(p_all, limit=5)
    with pytest.raises(ValueError, match="commands must be"):
        planner.plan(rec, 8, "H100-80GB", context_len=32768, commands="some")
