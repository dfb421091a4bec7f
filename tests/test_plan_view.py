"""Server-side tests of the Plan tab (issue 12, part 2): its state round-trips through the URL, hostile
link values fall back to defaults with a notice, the view draws the plan (ranked table with commands,
the bar chart, the refused layouts), model ids are escaped in the commands, and the exports carry the plan.

No browser here (tests/browser/test_plan_browser.py has those).
"""

from __future__ import annotations

import html
import re

import holoviews as hv
import pandas as pd
import panel as pn
import pytest

from dashboard import catalog as cat
from dashboard.launch import MODEL_PLACEHOLDER
from dashboard import planner
from dashboard.state import PLAN_FRAMEWORKS, PlannerState, app_data_from_catalog, load_app_data
from tests.configs import llama_config

hv.extension("bokeh")
pn.extension("tabulator")

HOSTILE = "<img src=x onerror=alert(1)>"
LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"


@pytest.fixture(scope="module")
def shipped():
    return load_app_data(None)


@pytest.fixture(scope="module")
def small_data():
    recs = [
        # its real length: without one SGLang derives 2048 tokens and refuses the default 32,768 (context)
        cat.normalize_config(llama_config(32, 8, max_position_embeddings=131072), "meta-llama/Llama-3.1-8B"),
        cat.normalize_config(llama_config(32, 8), HOSTILE),
        cat.normalize_config(llama_config(32, 8), "acme/it's-$(rm -rf)"),
        cat.normalize_config("{not json", "broken/config"),
    ]
    return app_data_from_catalog(cat.catalog_from_records(recs))


def _app(data, query=""):
    from dashboard.app import DashboardApp

    return DashboardApp(data=data, query=query)


def test_plan_state_round_trips_through_the_url(shipped):
    s = PlannerState(tab="plan", model=LLAMA70, gpu="H200-141GB", gpu_count=24, gpus_per_node=4, context_len=8192,
                     min_sequences=50, plan_frameworks=["vllm", "tensorrt-llm"])
    q = s.query_string()
    assert "plan_frameworks=vllm,tensorrt-llm" in q and "model=meta-llama/Llama-3.1-70B-Instruct" in q
    app = _app(shipped, q)
    assert app.notices == []
    t = app.state
    assert (t.tab, t.model, t.gpu, t.gpu_count, t.gpus_per_node, t.context_len, t.min_sequences, t.plan_frameworks) == (
        "plan", LLAMA70, "H200-141GB", 24, 4, 8192, 50, ["vllm", "tensorrt-llm"])
    assert t.query_string() == q
    # Defaults stay out of the link.
    assert "plan_frameworks" not in PlannerState().query_string()
    assert "min_sequences" not in PlannerState(tab="plan").query_string()


@pytest.mark.parametrize("query, key", [
    ("gpu_count=-1", "gpu_count"),
    ("gpu_count=1000000000", "gpu_count"),
    ("gpus=-1", "gpus"),
    ("context_len=abc", "context_len"),
    ("gpu=%3Cscript%3Ealert(1)%3C/script%3E", "gpu"),
    ("min_sequences=0", "min_sequences"),
    ("min_sequences=99999999", "min_sequences"),
    ("gpus_per_node=-8", "gpus_per_node"),
    ("plan_frameworks=vllm,transformers", "plan_frameworks"),
    ("plan_frameworks=%3Cb%3E", "plan_frameworks"),
])
def test_hostile_plan_link_values_fall_back_with_a_notice(shipped, query, key):
    app = _app(shipped, f"?tab=plan&model={LLAMA70}&{query}")
    assert app.notices and any(key in n for n in app.notices), app.notices
    d = PlannerState()
    s = app.state
    assert (s.gpu_count, s.context_len, s.gpu, s.min_sequences, s.gpus_per_node, s.plan_frameworks) == (
        d.gpu_count, d.context_len, d.gpu, d.min_sequences, d.gpus_per_node, d.plan_frameworks)
    # The notice is escaped on the page; the view still plans the default cluster.
    assert "<script>" not in app.notice_pane.object and "<b>" not in app.notice_pane.object.replace("<b>Export", "")
    assert app.plan._table.object.startswith("<table")
    assert key not in app.state.query_string()


def test_plan_view_ranks_layouts_with_commands_chart_and_refusals(shipped):
    app = _app(shipped, f"?tab=plan&model={LLAMA70}&gpu=H100-80GB&gpu_count=16")
    v = app.plan
    df = planner.plan(shipped.record(LLAMA70), 16, "H100-80GB", context_len=32768, frameworks=PLAN_FRAMEWORKS,
                      versions={"vllm": app.state.vllm_version, "sglang": app.state.sglang_version})
    table = v._table.object
    rows = re.findall(r'<tr class="tp-plan-row[^"]*" data-rank="(\d*)" data-framework="([^"]+)" data-layout="([^"]+)"',
                      table)
    assert len(rows) == 10
    fit = df[df["fits"]]
    assert [(int(r), f, html.unescape(lay)) for r, f, lay in rows] == list(
        zip(fit["rank"].astype(int).head(10), fit["framework"].head(10), fit["layout"].head(10), strict=True))
    # One copy button per row, carrying the layout's commands exactly as plan(commands=True) builds them.
    cmds = [html.unescape(c) for c in re.findall(r'data-cmd="([^"]*)"', table)]
    assert cmds == ["\n\n".join(c) for c in fit["commands"].head(10)]
    assert all("Llama-3.1-70B-Instruct" in c for c in cmds)
    # Chart: bars per framework, titled and labelled.
    fig = v._fig
    data = fig.renderers[0].data_source.data
    assert set(lab for lab, _ in data["y"]) == {"vLLM", "SGLang", "TensorRT-LLM"}
    assert max(data["sequences"]) == int(fit["sequences_total"].max())
    assert "16 × H100-80GB" in fig.title.text and fig.xaxis[0].axis_label
    # Refused layouts: every one named, greyed.
    ref = v._refused.object
    n_ref = int((~df["starts"]).sum())
    assert f"Refused layouts ({n_ref})" in ref and "tp-refused" in ref
    # Re-ranks when the GPU count changes.
    app.state.gpu_count = 8
    rows8 = re.findall(r'data-rank="(\d*)" data-framework="([^"]+)" data-layout="([^"]+)"', v._table.object)
    assert rows8 != rows
    assert "8 × H100-80GB" in v._fig.title.text


def test_row_commands_equal_the_planners_for_every_layout(shipped):
    """The view builds commands only for the rows it shows (plan(commands=False)); they must be exactly the
    planner's own, EP variants and multi-node layouts included."""
    from dashboard.views.plan import row_commands

    for model, gpu, n in ((LLAMA70, "H100-80GB", 16), ("deepseek-ai/DeepSeek-V3", "H200-141GB", 8),
                          ("deepseek-ai/DeepSeek-V3", "H100-80GB", 32)):
        rec = shipped.record(model)
        full = planner.plan(rec, n, gpu, context_len=32768)
        lean = planner.plan(rec, n, gpu, context_len=32768, commands=False)
        got = [row_commands(r, lean.attrs, model) for _, r in lean.iterrows()]
        assert got == [tuple(c) for c in full["commands"]]


def test_hostile_model_ids_are_escaped_in_the_commands(small_data):
    for model in (HOSTILE, "acme/it's-$(rm -rf)"):
        app = _app(small_data, "?tab=plan&gpu_count=2")
        app.state.model = model
        table = app.plan._table.object
        assert "<img" not in table
        assert "$(rm" not in html.unescape(table).replace("'acme/it'\"'\"'s-$(rm -rf)'", "")
        cmds = [html.unescape(c) for c in re.findall(r'data-cmd="([^"]*)"', table)]
        # neither is a Hub id: the commands name the marked placeholder, never the hostile text
        assert cmds and all(planner.shlex.quote(MODEL_PLACEHOLDER) in c and model not in c for c in cmds)
        assert esc_ok(app.plan._title.object, model)


def esc_ok(markup: str, raw: str) -> bool:
    return html.escape(raw, quote=True) in markup and raw not in markup


def test_plan_notices_without_a_model_or_framework(small_data):
    app = _app(small_data, "?tab=plan")
    assert "Pick a model" in app.plan._notice.object and app.plan._notice.visible
    app.state.model = "broken/config"
    assert "no usable config" in app.plan._notice.object
    app.state.param.update(model="meta-llama/Llama-3.1-8B", plan_frameworks=[])
    assert "Tick at least one framework" in app.plan._notice.object
    app.state.plan_frameworks = ["sglang"]
    assert not app.plan._notice.visible and "SGLang" in app.plan._summary.object


def test_nodes_times_gpus_per_node_sets_the_gpu_count(shipped):
    from bokeh.document import Document

    app = _app(shipped, f"?tab=plan&model={LLAMA70}")
    app.__panel__().get_root(Document())
    v = app.plan
    assert (v.gpn.value, v.nodes.value) == (8, 1)
    v.nodes.value = 3
    assert app.state.gpu_count == 24 and "gpus_per_node" not in app.state.query_string()
    v.gpn.value = 4
    assert app.state.gpus_per_node == 4 and app.state.gpu_count == 24 and v.nodes.value == 6
    v.gpn.value = 8  # the GPU table's value: back to the default (not in the link)
    assert app.state.gpus_per_node == 0 and v.nodes.value == 3
    assert "32 × H100" not in v._summary.object and "24 × H100-80GB (3 nodes of 8)" in v._summary.object


def test_catalog_mode_ranks_models_on_demand(shipped):
    app = _app(shipped, f"?tab=plan&model={LLAMA70}&gpu=H200-141GB&gpu_count=8&min_sequences=64")
    v = app.plan
    assert v._catalog.object == ""  # nothing until asked
    v._rank_catalog()
    out = v._catalog.object
    assert "models fit 8 × H200-141GB" in out and "at least 64 sequences" in out
    names = re.findall(r'<tr class="tp-catalog-plan-row"><td class="num">\d+</td><td>([^<]+)</td>', out)
    assert len(names) == 25
    app.state.gpu_count = 16
    assert "tp-catalog-stale" in v._catalog.object


def test_exports_include_the_plan(shipped):
    import io

    from dashboard.views.export import report_html
    from dashboard.views.plan import plan_csv

    app = _app(shipped, f"?tab=plan&model=deepseek-ai/DeepSeek-V3&gpu=H200-141GB&gpu_count=8")
    csv = pd.read_csv(io.StringIO(plan_csv(app.state, app.data).getvalue()))
    assert len(csv) == len(planner.plan("deepseek-ai/DeepSeek-V3", 8, "H200-141GB", context_len=32768,
                                         commands=False))
    assert {"model_id", "gpu", "layout", "sequences_total", "fits", "refusal", "commands"} <= set(csv.columns)
    assert csv["commands"].fillna("").str.contains("deepseek-ai/DeepSeek-V3").sum() == int(csv["starts"].sum())
    rep = report_html(app.state, app.data)
    assert "<h2>Plan: deepseek-ai/DeepSeek-V3</h2>" in rep and "Refused layouts" in rep
    assert "python -m sglang.launch_server" in rep or "vllm serve" in rep
    # The sidebar's export panel offers the plan CSV too.
    assert app.export.plan_csv.filename == "tp-plan.csv"
