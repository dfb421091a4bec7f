"""Server-side tests of the Panel app: the served document builds, the state round-trips through the URL,
views react to the state, exports produce files, and untrusted strings are escaped.

No browser here (tests/browser/ has those). The app is built in-process on the shipped catalog and on a
small catalog of records made with :func:`dashboard.catalog.normalize_config`.
"""

from __future__ import annotations

import io
import math

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import pytest

from dashboard import catalog as cat
from dashboard import schema
from dashboard.state import PlannerState, app_data_from_catalog, filter_catalog, filter_models, order_catalog
from tests.configs import llama_config

hv.extension("bokeh")
pn.extension("tabulator")

HOSTILE = "<img src=x onerror=alert(1)>"


_cfg = llama_config


@pytest.fixture(scope="module")
def small_catalog() -> pd.DataFrame:
    recs = [
        cat.normalize_config(_cfg(32, 8), "meta-llama/Llama-3.1-8B"),
        cat.normalize_config(_cfg(24, 3, hidden=3072), "acme/h24-kv3"),
        cat.normalize_config(_cfg(30, 30, hidden=3840), "acme/h30"),
        cat.normalize_config(_cfg(32, 8), HOSTILE),
        cat.normalize_config("{not json", "broken/config"),
    ]
    return cat.catalog_from_records(recs)


@pytest.fixture()
def app(small_catalog):
    from dashboard.app import DashboardApp

    return DashboardApp(catalog=small_catalog)


def test_served_document_builds_without_error(monkeypatch):
    """`panel serve dashboard` builds a session document: the handler must not have failed, and main.py
    must have reached ``.servable()`` on the template with the dashboard inside."""
    from panel.io.application import build_single_handler_application

    served = []
    orig = pn.template.BootstrapTemplate.servable

    def spy(self, *a, **k):
        served.append(self)
        return orig(self, *a, **k)

    monkeypatch.setattr(pn.template.BootstrapTemplate, "servable", spy)
    application = build_single_handler_application("dashboard")
    application.create_document()
    handler = application.handlers[0]
    main = getattr(handler, "_main_handler", handler)
    assert not handler.failed, handler.error_detail
    assert not main.failed, main.error_detail
    assert len(served) == 1
    tmpl = served[0]
    assert "TP planner" in tmpl.title
    assert tmpl.main.objects and tmpl.sidebar.objects


def test_app_on_shipped_catalog_draws_heatmaps():
    """One figure for the selected frameworks side by side: nested (framework, TP) columns, model rows
    from the top, a window of 25 rows in view and only those rows (plus a margin) in the data source."""
    from bokeh.models import Range1d

    from dashboard.app import DashboardApp
    from dashboard.plots import heatmap

    app = DashboardApp()
    v = app.validity
    n = len(app.data.catalog)
    assert n >= 100
    assert list(v.frames) == list(app.state.frameworks) == ["vllm", "sglang"]
    fig = v.figure
    assert fig.title.text == "Valid TP sizes"
    tps = [str(t) for t in schema.DEFAULT_TP_SIZES]
    assert [tuple(f) for f in fig.x_range.factors] == [("vLLM", t) for t in tps] + [("SGLang", t) for t in tps]
    assert fig.x_range.group_padding == heatmap.GROUP_PADDING
    # Model rows: numeric, the first model on top, 25 in view, bounded to the catalog.
    assert isinstance(fig.y_range, Range1d)
    assert (fig.y_range.start, fig.y_range.end, tuple(fig.y_range.bounds)) == (-25.0, 0.0, (-float(n), 0.0))
    names = fig.yaxis[0].formatter.args["names"]
    # Rows in the default order (family, then size), not the catalog file's order.
    assert names == list(order_catalog(app.data.catalog, "family")["model_id"]) and sorted(names) == sorted(app.data.model_ids)
    assert fig.yaxis[0].formatter.args["labels"] == [heatmap.short_label(m) for m in names]
    assert len(fig.yaxis[0].ticker.ticks) == n and fig.yaxis[0].ticker.ticks[0] == -0.5
    # The data source: the rows in view plus the margin, every column group; marks from the same rows.
    src = fig.renderers[0].data_source
    rows = 25 + heatmap.WINDOW_MARGIN_ROWS
    assert set(src.data) == set(heatmap.SOURCE_COLUMNS)
    assert sorted(set(src.data["row"].tolist())) == list(range(rows))
    assert len(src.data["x"]) == rows * len(fig.x_range.factors)
    assert fig.renderers[1].data_source is src
    assert fig.renderers[2].data_source is not src and set(fig.renderers[2].data_source.data) == {"x", "y"}



def test_side_by_side_heatmaps_fit_a_1920px_page():
    """Two frameworks x 10 TP sizes with the longest names fit the heatmap budget with readable cells; the
    frame keeps its width when a framework or TP size is added (no re-layout of the page), and with many
    columns it grows at the minimum column width (the area then scrolls sideways). Ids longer than the
    axis allows keep their size (tests/test_find_models.py has the labeller's cases)."""
    from dashboard.plots import heatmap

    models = ["nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", "Qwen/Qwen3-235B-A22B-Instruct-2507"]
    label = heatmap.ylabel_px(models)
    geo = heatmap.heatmap_geometry(130, 10, 2, label)
    assert geo["width"] <= heatmap.HEATMAP_BUDGET_PX and geo["col"] >= 30
    assert geo["rows"] == heatmap.VISIBLE_ROWS and geo["frame_height"] == heatmap.VISIBLE_ROWS * heatmap.ROW_PX
    for n_tp, n_fw in ((11, 2), (10, 3), (11, 3), (9, 2), (12, 2)):
        assert heatmap.heatmap_geometry(130, n_tp, n_fw, label)["frame_width"] == geo["frame_width"], (n_tp, n_fw)
    assert heatmap.heatmap_geometry(130, 12, 3, label)["col"] == pytest.approx(heatmap.MIN_COL_PX, abs=0.05)  # (grows)
    many = heatmap.heatmap_geometry(130, 17, 6, label)
    assert many["col"] == pytest.approx(heatmap.MIN_COL_PX) and many["frame_width"] > geo["frame_width"]
    few = heatmap.heatmap_geometry(3, 2, 1, label)
    assert few["col"] == pytest.approx(heatmap.MAX_COL_PX) and few["rows"] == 3
    assert heatmap.heatmap_geometry(130, 10, 2, label, visible_rows=None)["rows"] == 130
    short = heatmap.short_label(models[0])
    assert len(short) <= heatmap.MAX_LABEL_CHARS and "30B-A3B" in short and short.endswith("NVFP4")
    assert heatmap.short_label(models[1]) == models[1]



def test_switching_framework_updates_heatmaps(app):
    fig = app.validity.figure
    app.state.frameworks = ["transformers-cb-cache"]
    assert list(app.validity.frames) == ["transformers-cb-cache"] and app.validity.figure is fig
    assert {tuple(f)[0] for f in fig.x_range.factors} == {"transformers CB cache"}
    df = app.validity.frames["transformers-cb-cache"]
    # 8 KV heads at TP 6 is refused by the continuous-batching cache rule.
    cell = df[(df.model_id == "meta-llama/Llama-3.1-8B") & (df.tp == "6")].iloc[0]
    assert cell.status == "invalid"
    assert "8" in cell.messages and "6" in cell.messages



def test_disagreement_mode(app):
    from dashboard.plots import heatmap

    app.state.param.update(frameworks=["vllm", "transformers-cb-cache"], disagreement=True)
    assert list(app.validity.frames) == ["disagreement"]
    fig = app.validity.figure
    assert fig.title.text == "Where frameworks disagree"
    assert {tuple(f)[0] for f in fig.x_range.factors} == {"vLLM vs transformers CB cache"}
    assert fig.tags == [[c, heatmap.DISAGREE_LABELS[k], heatmap.DISAGREE_MARKERS[k]] for k, c in heatmap.DISAGREE_COLORS.items()]
    df = app.validity.frames["disagreement"]
    cell = df[(df.model_id == "meta-llama/Llama-3.1-8B") & (df.tp == "16")].iloc[0]
    assert cell.status == "disagree"  # vLLM replicates 8 KV heads over 16 ranks; the CB cache needs 8 % 16 == 0
    assert "vLLM: valid" in cell.messages



def _tap_xy(view, group: int, tp: str, model: str) -> tuple[float, float]:
    """Synthetic (x, y) data coordinates of the centre of a cell, as Bokeh's Tap event reports them."""
    from dashboard.plots import heatmap

    k = view._tps.index(tp)
    x = 0.5 + k + group * (len(view._tps) + heatmap.GROUP_PADDING)
    return x, -(view._models.index(model) + 0.5)


def test_tap_selects_cell_and_shows_layout(app):
    v = app.validity
    app.state.model = "meta-llama/Llama-3.1-8B"  # a previous selection, so every watcher must run again
    v._on_tap("sglang", "6", "acme/h24-kv3")
    s = app.state
    assert (s.model, s.framework, s.tp) == ("acme/h24-kv3", "sglang", 6)
    # The tapped cell (only it) is outlined by the selection glyph; the cells keep full colour.
    assert v.selected_cell() == ("sglang", "acme/h24-kv3", "6")
    sel = v.figure.renderers[2].data_source.data
    assert [tuple(x) for x in sel["x"]] == [("SGLang", "6")] and sel["y"] == [-(v._models.index("acme/h24-kv3") + 0.5)]
    assert v.figure.renderers[2].glyph.fill_color is None and v.figure.renderers[2].glyph.line_width >= 3
    # A tap in the browser arrives as a Bokeh Tap event at synthetic (x, y): column group, TP and row.
    v._on_fig_tap(*_tap_xy(v, 0, "2", "acme/h30"))
    assert (s.model, s.framework, s.tp) == ("acme/h30", "vllm", 2)
    assert v.selected_cell() == ("vllm", "acme/h30", "2")
    # Taps between the groups, outside the rows or with junk coordinates change nothing.
    x_gap = len(v._tps) + 0.3  # inside the padding between vLLM and SGLang
    for x, y in ((x_gap, -0.5), (0.5, 0.5), (0.5, -(len(v._models) + 3)), (float("nan"), -0.5), (None, None),
                 ("junk", -0.5), (1e300, -0.5), (-4.0, -0.5)):
        v._on_fig_tap(x, y)
        assert (s.model, s.framework, s.tp) == ("acme/h30", "vllm", 2), (x, y)
    v._on_fig_tap(*_tap_xy(v, 1, "6", "acme/h24-kv3"))
    html = v._details._html.object
    assert "acme/h24-kv3" in html and "TP = 6" in html
    # The layout view follows the selection (or says clearly why it cannot).
    assert "acme/h24-kv3" in app.layout._header.object
    if app.layout._plot.object is not None:
        frame = app.layout._plot.object.get(0).dframe()
        assert set(frame["rank"]) == {f"rank {r}" for r in range(6)}
    # A selection whose framework or TP is not shown clears the outline.
    app.state.framework = "tensorrt-llm"
    assert v.selected_cell() is None



def test_name_filter(app, small_catalog):
    app.state.search = "acme"
    assert filter_models(app.state, app.data) == ["acme/h24-kv3", "acme/h30"]
    assert set(app.validity.frames["vllm"]["model_id"]) == {"acme/h24-kv3", "acme/h30"}
    fig = app.validity.figure
    assert fig.yaxis[0].formatter.args["names"] == ["acme/h24-kv3", "acme/h30"]  # row 0 (on top) first
    assert (fig.y_range.start, fig.y_range.end) == (-2.0, 0.0)
    app.state.search = "no-such-model"
    assert app.validity.frames == {} and not app.validity._scroll.visible
    assert "No models match" in app.validity._summary.object
    app.state.search = ""
    assert app.validity._scroll.visible and app.validity.figure is fig



def test_url_round_trip_with_slash_model_ids(small_catalog):
    s = PlannerState()
    s.param.update(model="meta-llama/Llama-3.1-8B", models=["meta-llama/Llama-3.1-8B", "acme/h30"],
                   frameworks=["sglang", "tensorrt-llm"], tp_sizes=[2, 4, 8], tp=4, framework="sglang", pp=2,
                   dp_attention=True, kv_dtype="fp8", context_len=4096, tab="layout", search="llama qwen",
                   moe="yes", min_params_b=7.5)
    qs = s.query_string()
    assert "model=meta-llama/Llama-3.1-8B" in qs
    t = PlannerState()
    known = frozenset(small_catalog["model_id"])
    assert t.apply_query(qs, known_models=known) == []
    for p in s.param:
        if p != "name":
            assert getattr(t, p) == getattr(s, p), p
    assert PlannerState().query_string() == ""


@pytest.mark.parametrize("query", [
    "?tp=abc", "?tp=-3", "?frameworks=vllm,<script>", "?model=%3Cimg%20src%3Dx%3E", "?pp=99999999999999",
    "?kv_dtype=fp7", "?models=a/b,c/d", "?__class__=1", "?tp_sizes=1,2,1000", "?%ZZ=%ZZ", "?search=%00",
    "?min_params_b=nan", "?context_len=1e9", "?tab=../../etc",
])
def test_hostile_query_falls_back_to_defaults_with_notice(query, small_catalog):
    s = PlannerState()
    notices = s.apply_query(query, known_models=frozenset(small_catalog["model_id"]))
    assert notices, query
    defaults = PlannerState()
    for p in s.param:
        if p != "name":
            assert getattr(s, p) == getattr(defaults, p), (query, p)


def test_app_shows_url_notices_escaped(small_catalog):
    from dashboard.app import DashboardApp

    app = DashboardApp(catalog=small_catalog, query="?model=<script>alert(1)</script>&tp=zz")
    assert app.notice_pane.visible
    assert "<script" not in app.notice_pane.object and "&lt;script&gt;" in app.notice_pane.object
    assert app.state.model == "" and app.state.tp == 8


def test_hostile_model_id_is_escaped_everywhere(app):
    app.state.param.update(model=HOSTILE, framework="vllm", tp=2)
    for html in (app.validity._details._html.object, app.layout._header.object, app.memory._title.object):
        assert "<img" not in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html
    from dashboard.views.export import report_html
    rep = report_html(app.state, app.data)
    assert "<img" not in rep and "&lt;img" in rep
    # Tabulator cells use the sanitising plaintext formatter.
    assert app.catalog.table.formatters["model_id"] == {"type": "plaintext"}


def test_exports(app):
    from dashboard.views.export import grid_csv

    app.state.param.update(frameworks=["vllm", "sglang"], tp_sizes=[1, 2, 8])
    buf = grid_csv(app.state, app.data)
    df = pd.read_csv(buf)
    assert len(df) == 5 * 2 * 3
    assert {"model_id", "framework", "tp", "valid", "status", "message"} <= set(df.columns)
    # The hostile id cannot become a spreadsheet formula, and stays verbatim otherwise.
    assert HOSTILE in set(df["model_id"])
    rep = app.export.report.callback()
    assert isinstance(rep, io.StringIO) and "TP planner report" in rep.getvalue()


def test_catalog_view_filters_and_selection_feed_heatmaps(app):
    app.state.param.update(kv_heads=3)
    assert list(app.catalog.table.value["model_id"]) == ["acme/h24-kv3"]
    app.catalog.table.selection = [0]
    app.catalog._use_selection()
    assert app.state.models == ["acme/h24-kv3"]
    assert set(app.validity.frames["vllm"]["model_id"]) == {"acme/h24-kv3"}
    df = filter_catalog(PlannerState(vision="yes"), app.data.catalog)
    assert df.empty


def test_views_are_built_when_their_tab_opens(small_catalog):
    from dashboard.app import DashboardApp
    from dashboard.state import TABS

    app = DashboardApp(catalog=small_catalog)
    assert set(app._views) == {"validity"}
    app.state.tab = "catalog"
    assert app.tabs.active == TABS.index("catalog") == 4 and set(app._views) == {"validity", "catalog"}
    assert len(app._slots["catalog"].objects) == 1 and app._slots["layout"].objects == []
    linked = DashboardApp(catalog=small_catalog, query="?tab=memory&model=acme/h30")
    assert set(linked._views) == {"memory"}


def test_sessions_do_not_share_state(small_catalog):
    from dashboard.app import DashboardApp

    data = app_data_from_catalog(small_catalog)
    a, b = DashboardApp(data=data), DashboardApp(data=data)
    a.state.tp = 4
    assert b.state.tp == 8
    assert a.controls.search is not b.controls.search


def test_memory_view_renders_or_says_why(app):
    app.state.param.update(model="meta-llama/Llama-3.1-8B", framework="vllm", tp_sizes=[1, 2, 4, 8], gpu="H100-80GB")
    mv = app.memory
    if mv._notice.visible:
        assert "not available" in mv._notice.object
    else:
        assert mv._bars.object is not None and "Capacity on" in mv._table.object


def test_memory_plots_show_coincident_frameworks_and_the_gpu_line():
    from dashboard.plots import memory as memory_plots

    frame = pd.DataFrame({"framework": ["vllm"] * 3 + ["sglang"] * 3 + ["tensorrt-llm"] * 3,
                          "tp": [1, 2, 4] * 3, "v": [8.0, 4.0, 2.0, 8.0, 4.0, 2.0, 8.0, 4.0, 3.0]})
    ov = memory_plots.per_rank_curves(frame, "v", "KV cache per token per rank (KiB)", "KV")
    labels = [el.label for el in ov]
    assert "vLLM = SGLang" in labels and "TensorRT-LLM" in labels and "vLLM" not in labels
    assert "GPUs" in ov.get(0).kdims[0].label and "(KiB)" in ov.get(0).vdims[0].label
    cap = pd.DataFrame({"tp": [1, 8], "weights_gib": [130.0, 17.0], "kv_gib": [0.0, 50.0],
                        "reserve_gib": [2.0, 4.0], "fits": [False, True]})
    fig = hv.render(memory_plots.memory_bars(cap, 80.0, "Memory per GPU"))
    assert list(fig.x_range.factors) == ["TP 1 ✗", "TP 8"]  # only the layouts: no stray numeric tick
    assert any(getattr(r, "location", None) == 80.0 for r in fig.center)
    assert any("GPU memory (80 GiB)" in str(i.label) for i in fig.legend[0].items)
    assert "(GiB)" in fig.yaxis[0].axis_label


def test_layout_plot_legend_outside_and_short_title():
    import dashboard.layout as lay
    from dashboard.plots import layout as layout_plots

    rec = cat.normalize_config(_cfg(24, 3, hidden=3072), "acme/h24-kv3")
    frame = layout_plots.layout_frame(lay.rank_layout(rec, "sglang", 6))
    fig = hv.render(layout_plots.layout_plot(frame, "SGLang, TP = 6"))
    assert fig.title.text == "SGLang, TP = 6"
    legends = [x for x in fig.right if getattr(x, "name", "") == "status-legend"]
    assert legends and not [x for x in fig.above if getattr(x, "name", "") == "status-legend"]
    # Only the head kinds present are listed.
    assert {str(i.label.value) if hasattr(i.label, "value") else str(i.label) for i in legends[0].items} == {
        "query head", "KV head", "KV head (replica of another rank's)"}


def test_heatmaps_carry_no_legend_of_their_own(app):
    """One legend on the page (HTML, above the heatmap, with each status's mark); the figure only tags its
    colours, labels and marks for the PNG export, which draws them under the image."""
    from bokeh.models import Legend

    from dashboard.plots import heatmap

    legend = app.validity._legend.object
    assert "valid, KV replicated" in legend and legend.count("<svg") == 4  # every status but plain valid
    fig = app.validity.figure
    assert not [x for x in (*fig.below, *fig.above, *fig.right, *fig.center) if isinstance(x, Legend)]
    assert fig.tags == [[c, heatmap.STATUS_LABELS[k], heatmap.STATUS_MARKERS[k]] for k, c in heatmap.STATUS_COLORS.items()]
    assert fig.styles.get("flex") == "none"  # never squeezed below its size on a narrow screen



def test_heatmap_names_are_shortened_by_a_formatter_that_bokeh_measures(app):
    """major_label_overrides are drawn but not measured by Bokeh (the axis kept the full ids' width):
    the y axis uses a tick formatter that looks up each row's short_label; ids and labels are its data,
    not code."""
    from bokeh.models import CustomJSTickFormatter

    from dashboard.plots import heatmap

    fig = app.validity.figure
    assert isinstance(fig.yaxis[0].formatter, CustomJSTickFormatter)
    assert not fig.yaxis[0].major_label_overrides
    args = fig.yaxis[0].formatter.args
    assert args["labels"] == heatmap.row_labels(args["names"]) and fig.yaxis[0].formatter.code == heatmap.ROW_LABEL_JS
    assert HOSTILE in fig.yaxis[0].formatter.args["names"] and HOSTILE not in fig.yaxis[0].formatter.code



def test_validity_row_wraps_the_details_below_when_the_heatmaps_need_the_room(app):
    """The heatmap's column asks for its whole width (flex-basis); the row may wrap."""
    row = app.validity.__panel__()
    assert row.styles.get("flex-wrap") == "wrap"
    basis = app.validity._main.styles["flex"]
    fig = app.validity.figure
    assert basis.startswith("1 1 ") and int(basis.split()[2].rstrip("px")) >= fig.frame_width + fig.min_border_left
    from dashboard.plots import heatmap

    assert heatmap.MIN_COL_PX >= 20



def test_catalog_table_shows_missing_values_the_same_way_in_every_column(small_catalog):
    from bokeh.models.widgets.tables import NumberFormatter

    from dashboard.views.catalog import MISSING, table_formatters, table_frame

    t = table_frame(small_catalog)
    broken = t.loc[t["model_id"] == "broken/config"].iloc[0]
    for col, v in broken.items():
        if col in ("model_id", "status"):
            continue
        assert (isinstance(v, float) and pd.isna(v)) or v == MISSING, (col, v)
    fmts = table_formatters()
    for col in t.columns:
        if t[col].dtype == "float64":
            f = fmts[col]
            assert isinstance(f, NumberFormatter) and f.nan_format == MISSING, col
    assert fmts["num_attention_heads"].format == "0" and fmts["params_b"].format == "0.00"


def test_layout_of_a_model_with_huge_head_counts_is_capped_with_a_note():
    """65,536 heads at TP=64: 1,024 query heads per rank. At most MAX_LAYOUT_SLOTS columns are drawn and a
    note says how many are left out; the tidy layout (CSV) keeps every head."""
    import dashboard.layout as lay
    from dashboard.app import DashboardApp
    from dashboard.plots import layout as layout_plots

    rec = cat.normalize_config(_cfg(65536, 64, hidden=65536 * 64, head_dim=64), "huge/heads")
    full = layout_plots.layout_frame(lay.rank_layout(rec, "vllm", 64))
    drawn, cut = layout_plots.cap_layout_slots(full)
    assert drawn["slot"].nunique() <= layout_plots.MAX_LAYOUT_SLOTS
    assert cut["query"][1] == 1024 and cut["query"][0] >= 4
    assert drawn["slot"].str.startswith("Q0").any() and drawn["slot"].str.startswith("KV").any()
    note = layout_plots.hidden_slots_note(cut)
    assert "1,024 query heads per rank" in note and f"{1024 - cut['query'][0]:,} more not drawn" in note
    # Small layouts are untouched.
    small = layout_plots.layout_frame(lay.rank_layout(cat.normalize_config(_cfg(32, 8), "a/b"), "vllm", 8))
    assert layout_plots.cap_layout_slots(small) == (small, {})

    app = DashboardApp(catalog=cat.catalog_from_records([rec]),
                       query="?model=huge/heads&framework=vllm&tp=64&tab=layout")
    view = app.layout
    assert "more not drawn" in view._notice.object and view._notice.visible
    fig = hv.render(view._plot.object)
    assert len(fig.x_range.factors) <= layout_plots.MAX_LAYOUT_SLOTS
    csv = pd.read_csv(view._csv())
    assert len(csv) == len(lay.rank_layout(rec, "vllm", 64)) and set(csv["model_id"]) == {"huge/heads"}
    # The compact preview beside the heatmap is capped too.
    obj, note = __import__("dashboard.views.layout", fromlist=["x"]).layout_object(app.state, app.data, compact=True)
    assert len(hv.render(obj).x_range.factors) <= layout_plots.MAX_COMPACT_SLOTS and "more not drawn" in note


@pytest.mark.parametrize("query, expected", [
    ("?tp=4&tp=8", ["The link sets 'tp' 2 times ('4', '8'): only the last one, tp='8', is used."]),
    ("?%%%garbage&&&=;;", ["Ignored '%%%garbage' in the link: this page has no setting by that name.",
                           "Ignored '=;;' in the link: a value with no setting name before the '='."]),
    ("?pp=0", ["Ignored link parameter pp='0': must be at least 1, not 0."]),
])
def test_url_notices_name_repeated_and_ignored_keys(query, expected):
    s = PlannerState()
    assert s.apply_query(query) == expected
    if query == "?tp=4&tp=8":
        assert s.tp == 8


def test_warm_up_with_a_missing_catalog_logs_one_line(monkeypatch, caplog, tmp_path):
    import logging

    from dashboard import app_hooks

    missing = tmp_path / "nope.parquet"
    monkeypatch.setenv("TP_PLANNER_CATALOG", str(missing))
    with caplog.at_level(logging.INFO, logger="dashboard"):
        app_hooks.on_server_loaded(None)
    recs = [r for r in caplog.records if r.name == "dashboard"]
    assert len(recs) == 1 and recs[0].levelno == logging.WARNING
    assert recs[0].exc_info is None and "\n" not in recs[0].getMessage()
    assert str(missing) in recs[0].getMessage() and "could not load the catalog" in recs[0].getMessage()


def test_control_changes_update_the_heatmaps_in_place(app):
    """Every control change keeps the one Bokeh figure, its data source and ranges, and replaces only the
    source's data, the factors and the names. The browser gets numbers only (binary arrays): colours and
    marks from a status code, hover texts as one string."""
    from bokeh.models import HoverTool

    from dashboard.plots import heatmap

    v = app.validity
    app.state.frameworks = ["vllm", "sglang"]
    fig = v.figure
    src, y_range, x_range = fig.renderers[0].data_source, fig.y_range, fig.x_range
    assert set(src.data) == set(heatmap.SOURCE_COLUMNS)
    app.state.search = "acme"  # a filter change: same figure, the model axis updated in place
    assert v.figure is fig and fig.renderers[0].data_source is src and fig.x_range is x_range and fig.y_range is y_range
    assert fig.yaxis[0].formatter.args["names"] == ["acme/h24-kv3", "acme/h30"]
    assert len(src.data["x"]) == 2 * len(x_range.factors)
    app.state.param.update(search="", tp_sizes=[1, 2, 4, 8, 24])
    assert v.figure is fig and fig.renderers[0].data_source is src
    assert [tuple(f) for f in x_range.factors] == [(g, t) for g in ("vLLM", "SGLang") for t in ("1", "2", "4", "8", "24")]
    assert len(src.data["x"]) == len(v._models) * 10
    app.state.frameworks = ["vllm", "transformers-cb-cache"]
    assert v.figure is fig and list(v.frames) == ["vllm", "transformers-cb-cache"]
    data = src.data
    assert all(np.asarray(data[c]).dtype.kind in "fiu" for c in data)  # numbers only: binary arrays
    row = v._models.index("meta-llama/Llama-3.1-8B")
    # column group 1 ("transformers CB cache"), TP 24 (the 5th TP size)
    i = [j for j in range(len(data["x"])) if data["x"][j] == heatmap.column_x(1, 4, 5) and data["row"][j] == row][0]
    hover = next(t for t in fig.toolbar.tools if isinstance(t, HoverTool))
    info = heatmap.hover_texts(fig)
    assert len(info) == len(data["x"])
    texts = hover.formatters["@info"].args["texts"].split(heatmap.INFO_SEPARATOR)
    assert len(set(texts)) == len(texts) < len(info)  # each distinct text once
    # the hover text of a cell: verdict, heads per rank and the failing messages;
    # refused: the verdict and the failing messages, no made-up per-rank head counts
    assert info[i].startswith("invalid (refused)\n") and "24" in info[i]
    assert "heads / rank" not in info[i]
    codes = heatmap.status_codes(heatmap.STATUS_COLORS)
    ok = [j for j in range(len(data["x"])) if data["code"][j] == codes["valid"]]
    assert "query heads / rank:" in info[ok[0]]
    assert data["code"][i] == codes["invalid"] and data["ym"][i] == data["y"][i] == -(row + 0.5)
    assert ok and all(np.isnan(data["ym"][j]) for j in ok)  # plain valid cells carry no mark
    # colour and mark come from the code: the colour map's palette and the marker transform's list
    cmap, marks = fig.renderers[0].glyph.fill_color.transform, fig.renderers[1].glyph.marker.transform
    assert cmap.palette[codes["invalid"]] == heatmap.STATUS_COLORS["invalid"]
    assert marks.args["markers"][codes["invalid"]] == "x" and marks.args["markers"][codes["valid"]] == ""
    assert hover.formatters["@x"].args["groups"] == ["vLLM", "transformers CB cache"]
    app.state.param.update(frameworks=["vllm", "sglang"], disagreement=True)
    assert v.figure is fig and list(v.frames) == ["disagreement"]
    assert fig.tags == [[c, heatmap.DISAGREE_LABELS[k], heatmap.DISAGREE_MARKERS[k]] for k, c in heatmap.DISAGREE_COLORS.items()]
    assert list(cmap.palette) == list(heatmap.DISAGREE_COLORS.values())
    assert marks.args["markers"] == [heatmap.DISAGREE_MARKERS[k] for k in heatmap.DISAGREE_COLORS]
    app.state.disagreement = False
    assert v.figure is fig and fig.title.text == "Valid TP sizes"
    assert len(v._plots.objects) == 1



def test_a_control_change_in_a_served_document_creates_no_figure():
    """In a served document, a control change creates no figure: the changes it
    sends are the data sources and ranges, not new plots."""
    from bokeh.document import Document
    from bokeh.models import Plot

    from dashboard.app import DashboardApp

    app = DashboardApp()
    doc = Document()
    root = app.__panel__().get_root(doc)
    doc.add_root(root)
    pn.state.curdoc = doc
    try:
        plots_before = {m.id for m in doc.models if isinstance(m, Plot)}
        events = []
        doc.callbacks.on_change(lambda e: events.append(e))
        app.state.frameworks = ["vllm", "transformers-cb-cache"]
        plots_after = {m.id for m in doc.models if isinstance(m, Plot)}
    finally:
        pn.state.curdoc = None
    assert plots_before == plots_after
    assert events
    kinds = {type(e).__name__ for e in events}
    assert kinds <= {"ModelChangedEvent", "ColumnDataChangedEvent"}, kinds


def test_wide_layout_plot_keeps_fixed_cells_in_a_sideways_scrolling_container():
    """> 40 heads per rank: fixed 26 px head columns (the figure's frame, not a width Panel would pass up
    to the page), inside the tp-layout-scroll container that scrolls sideways."""
    import dashboard.layout as lay
    from dashboard.app import DashboardApp
    from dashboard.plots import layout as layout_plots

    rec = cat.normalize_config(_cfg(128, 8, hidden=16384), "big/h128")
    frame, _ = layout_plots.cap_layout_slots(layout_plots.layout_frame(lay.rank_layout(rec, "vllm", 1)))
    fig = hv.render(layout_plots.layout_plot(frame, "vLLM, TP = 1"))
    n = len(fig.x_range.factors)
    assert n > 40 and fig.frame_width == 26 * n and fig.frame_height >= layout_plots.LAYOUT_ROW_PX
    small = layout_plots.layout_frame(lay.rank_layout(rec, "vllm", 8))
    fig8 = hv.render(layout_plots.layout_plot(small, "vLLM, TP = 8"))
    assert fig8.frame_width == layout_plots.LAYOUT_CELL_PX * len(fig8.x_range.factors)
    app = DashboardApp(catalog=cat.catalog_from_records([rec]), query="?model=big/h128&framework=vllm&tp=1&tab=layout")
    view = app.layout
    assert view._scroll.css_classes == ["tp-layout-scroll"] and view._scroll.styles["overflow-x"] == "auto"
    assert view._plot in view._scroll.objects and view._plot.styles.get("flex") == "none"


def test_scrolling_the_heatmap_loads_the_rows_in_view():
    """The browser holds only the rows in view plus a margin; moving the model axis (a wheel or drag in
    the browser) makes the server send the rows now in view, and nothing while they are already there."""
    from dashboard.app import DashboardApp
    from dashboard.plots import heatmap

    app = DashboardApp()
    v = app.validity
    src, y = v.figure.renderers[0].data_source, v.figure.y_range
    n = len(v._models)
    assert set(src.data["row"].tolist()) == set(range(25 + heatmap.WINDOW_MARGIN_ROWS))
    before = src.data
    y.update(start=-27.0, end=-2.0)  # two rows down: still inside the margin, nothing sent
    assert src.data is before
    y.update(start=-85.0, end=-60.0)
    rows = set(src.data["row"].tolist())
    assert set(range(60, 85)) <= rows and rows == set(range(60 - heatmap.WINDOW_MARGIN_ROWS, 85 + heatmap.WINDOW_MARGIN_ROWS))
    assert len(src.data["x"]) == len(rows) * len(v.figure.x_range.factors)
    y.update(start=-float(n), end=-float(n - 25))  # the bottom
    assert max(src.data["row"].tolist()) == n - 1
    # A control change keeps the scroll position when the models are the same, and goes back to the
    # top when they change.
    app.state.tp_sizes = [1, 2, 4, 8]
    assert (y.start, y.end) == (-float(n), -float(n - 25)) and max(src.data["row"].tolist()) == n - 1
    app.state.search = "qwen"
    assert (y.start, y.end)[1] == 0.0 and min(src.data["row"].tolist()) == 0


def test_window_and_tap_geometry():
    from dashboard.plots import heatmap

    assert heatmap.window_rows(-25, 0, 130, margin=6) == (0, 31)
    assert heatmap.window_rows(-85.5, -60.5, 130, margin=6) == (54, 92)
    assert heatmap.window_rows(-130, -105, 130, margin=6) == (99, 130)
    assert heatmap.window_rows(float("nan"), 0, 130, margin=0) == (0, heatmap.VISIBLE_ROWS)
    assert heatmap.window_rows(-25, 0, 3, margin=6) == (0, 3)
    groups, tps = ["vLLM", "SGLang"], ["1", "2", "4"]
    assert heatmap.heatmap_factors(groups, tps)[3] == ("SGLang", "1")
    assert heatmap.heatmap_units(2, 3) == pytest.approx(6.6)
    # Bokeh's synthetic x of nested factor k of group g: k + 0.5 + g * (n_tp + GROUP_PADDING).
    for g in range(2):
        for k, t in enumerate(tps):
            x = k + 0.5 + g * (3 + heatmap.GROUP_PADDING)
            assert heatmap.tap_column(x, groups, tps) == (g, t)
            assert heatmap.tap_column(x - 0.49, groups, tps) == (g, t) and heatmap.tap_column(x + 0.49, groups, tps) == (g, t)
    assert heatmap.tap_column(3.3, groups, tps) is None  # the gap between the groups
    for bad in (-0.1, 6.7, float("nan"), float("inf"), None, "x"):
        assert heatmap.tap_column(bad, groups, tps) is None
    one = {"col": np.array([0, 1]), "y": np.array([-0.5, -0.5]), "row": np.array([0, 0]),
           "ym": np.array([np.nan, -0.5]), "code": np.array([0, 3], dtype="uint8"), "info": np.array(["a", "b"], dtype=object)}
    both = heatmap.concat_source_data([one, one], n_tp=2)
    assert both["x"].tolist() == pytest.approx([0.5, 1.5, 3.1, 4.1]) and both["row"].tolist() == [0, 0, 0, 0]
    assert [heatmap.tap_column(x, groups[:2], ["1", "2"]) for x in both["x"]] == [(0, "1"), (0, "2"), (1, "1"), (1, "2")]
    cols, texts = heatmap.browser_data({**both, "info": np.array(["a\x1eb", "c", "a\x1eb", None], dtype=object)})
    assert texts.split(heatmap.INFO_SEPARATOR) == ["a b", "c", ""] and cols["info"].tolist() == [0, 1, 0, 2]
    assert set(cols) == set(heatmap.SOURCE_COLUMNS) and all(np.asarray(v).dtype.kind in "fiu" for v in cols.values())


def test_a_control_change_relays_out_the_page_at_most_once():
    """Each property that changes the figure's layout costs the browser a re-layout of the whole page
    (scripts/bench_ui.py): a framework or TP-size change within the frame's width budget changes the x
    factors and the data, not the figure's size, and the figure reports nothing back."""
    from dashboard.app import DashboardApp

    app = DashboardApp()
    fig = app.validity.figure
    seen = []
    ax = fig.xaxis[0]  # (a font change alters the axis's height: BokehJS then lays the figure out again)
    for model, attrs in ((fig, ("frame_width", "frame_height", "width", "min_border_left", "visible")), (fig.x_range, ("factors",)),
                         (fig.renderers[0].data_source, ("data",)),
                         (ax, ("major_label_text_font_size", "group_text_font_size", "axis_label"))):
        for a in attrs:
            model.on_change(a, lambda attr, old, new, _m=type(model).__name__: seen.append((_m, attr)))
    for change in ({"frameworks": ["vllm", "sglang", "tensorrt-llm"]}, {"tp_sizes": [1, 2, 4, 8, 16, 24, 32, 64]},
                   {"frameworks": ["vllm", "sglang"]}):
        seen.clear()
        app.state.param.update(**change)
        assert sorted(seen) == [("ColumnDataSource", "data"), ("FactorRange", "factors")], (change, seen)
    assert fig.syncable is False and fig.x_range.syncable is False and fig.y_range.syncable is True


def test_heatmap_keeps_its_width_while_frameworks_are_ticked_on_and_off():
    """A heatmap that widened for a fourth framework does not shrink back when it is ticked off (each size
    change costs the browser a re-layout of the whole page); a new set of models starts afresh."""
    from dashboard.app import DashboardApp
    from dashboard.plots import heatmap

    app = DashboardApp()
    v = app.validity
    app.state.tp_sizes = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64]
    base = v.figure.frame_width
    app.state.frameworks = ["vllm", "sglang", "tensorrt-llm", "transformers-native-tp"]
    wide = v.figure.frame_width
    assert wide > base and wide == math.ceil(heatmap.heatmap_units(4, 11) * heatmap.MIN_COL_PX)
    for fws in (["vllm", "sglang", "tensorrt-llm"], ["vllm", "sglang"], ["vllm", "sglang", "tensorrt-llm", "transformers-native-tp"]):
        app.state.frameworks = fws
        assert v.figure.frame_width == wide, fws
        assert heatmap.MIN_COL_PX <= wide / heatmap.heatmap_units(len(fws), 11) <= heatmap.MAX_COL_PX
    app.state.frameworks = ["vllm"]  # one group of 11 columns at that width would be too wide a column
    assert v.figure.frame_width < wide
    app.state.frameworks = ["vllm", "sglang"]
    app.state.search = "qwen"
    assert v.figure.frame_width == heatmap.heatmap_geometry(len(v._models), 11, 2, heatmap.ylabel_px(v._models))["frame_width"]


def test_all_six_frameworks_keep_their_axis_labels_apart():
    """Six frameworks x 10 TP sizes: the TP labels keep one size however narrow the columns (so the x
    axis keeps its height and a control change never re-lays the figure out), and every group label fits
    its group of columns (short labels for the two transformers checks)."""
    from dashboard.app import DashboardApp
    from dashboard.plots import heatmap

    app = DashboardApp()
    app.state.frameworks = list(schema.FRAMEWORKS)
    fig, v = app.validity.figure, app.validity
    geo = heatmap.heatmap_geometry(len(v._models), len(v._tps), 6, heatmap.ylabel_px(v._models))
    assert geo["col"] < 26 and fig.xaxis[0].major_label_text_font_size == heatmap.HEATMAP_TICK_SIZE
    pt = int(fig.xaxis[0].group_text_font_size.rstrip("pt"))
    assert all(len(g) * 0.75 * pt <= len(v._tps) * geo["col"] for g in v._groups), (v._groups, pt)
    assert "transformers TP" in v._groups and "transformers CB cache" in v._groups
    app.state.frameworks = ["vllm", "sglang"]
    assert fig.xaxis[0].major_label_text_font_size == heatmap.HEATMAP_TICK_SIZE
    assert fig.xaxis[0].group_text_font_size == "15pt"


def test_selected_model_is_scrolled_into_view():
    """Picking a model (or opening a link with model=) scrolls the heatmap to its row and loads it."""
    from dashboard.app import DashboardApp

    app = DashboardApp()
    v, y = app.validity, app.validity.figure.y_range
    model = v._models[100]
    app.state.model = model
    top = int(round(-y.end))
    assert top <= 100 < top + v._rows and 100 in set(v.figure.renderers[0].data_source.data["row"].tolist())
    app.state.model = v._models[top + 1]  # already in view: no scroll
    assert int(round(-y.end)) == top
    linked = DashboardApp(query=f"?model={model}&framework=vllm&tp=8")
    ly = linked.validity.figure.y_range
    assert int(round(-ly.end)) <= 100 < int(round(-ly.end)) + linked.validity._rows
    assert linked.validity.selected_cell() == ("vllm", model, "8")


# ------------------------------------------------------------------------------------------------
# vLLM version selector, evidence in the details, vLLM's --enable-expert-parallel
# ------------------------------------------------------------------------------------------------


def _csv_releases() -> list[str]:
    from pathlib import Path

    lines = (Path(__file__).resolve().parents[1] / "data" / "releases" / "vllm.csv").read_text().splitlines()
    return [ln.split(",", 1)[0] for ln in lines[1:] if ln.strip()]


def test_vllm_version_selector_offers_executed_releases_first_then_every_release_newest_first(app):
    from packaging.version import Version

    from dashboard.rules import versions
    from dashboard.state import DEFAULT_VLLM_VERSION

    executed = list(versions.EXECUTED["vllm"])
    assert DEFAULT_VLLM_VERSION == executed[-1] == app.state.vllm_version
    w = app.controls.vllm_version
    assert w.value == DEFAULT_VLLM_VERSION
    groups = list(w.groups.values())
    assert list(groups[0].items()) == [(f"{v} (executed)", v) for v in sorted(executed, key=Version, reverse=True)]
    rest = list(groups[1].values())
    assert rest == sorted(rest, key=Version, reverse=True)
    assert set(rest) | set(executed) == set(_csv_releases()) and not set(rest) & set(executed)
    assert all(label.startswith(v + " (20") for label, v in groups[1].items())  # (with the release date)


def _assert_release_round_trips(app, key: str, label: str, chosen: str, other: str, default: str) -> None:
    """The release ``chosen`` that the link gave (``?{key}=chosen``) is in the state, the widget and the
    link, and the verdicts name it ("{label} {chosen} accepts"). The widget drives the state (and so the
    link) to ``other``; the ``default`` release leaves the link."""
    widget = getattr(app.controls, key)
    assert app.notices == [] and getattr(app.state, key) == chosen
    assert widget.value == chosen
    assert f"{key}={chosen}" in app.state.query_string()
    assert f"{label} {chosen} accepts" in app.validity._summary.object
    assert f"{label} {chosen}" in app.validity._details._html.object
    widget.value = other
    assert getattr(app.state, key) == other and f"{key}={other}" in app.state.query_string()
    assert f"{label} {other} accepts" in app.validity._summary.object
    widget.value = default
    assert key not in app.state.query_string()


def test_vllm_version_round_trips_through_the_url_and_the_widget(small_catalog):
    from dashboard.app import DashboardApp
    from dashboard.state import DEFAULT_VLLM_VERSION

    app = DashboardApp(catalog=small_catalog, query="?vllm_version=0.22.0&model=acme/h30&framework=vllm&tp=4")
    _assert_release_round_trips(app, "vllm_version", "vLLM", "0.22.0", "0.10.0", DEFAULT_VLLM_VERSION)
    # Spellings of a release are read as that release; the link is rewritten to its canonical form.
    s = PlannerState()
    assert s.apply_query("?vllm_version=v0.22") == [] and s.vllm_version == "0.22.0"
    assert s.query_string() == "?vllm_version=0.22.0"


def test_a_date_in_the_link_means_the_release_current_then():
    from dashboard.rules import versions

    s = PlannerState()
    notices = s.apply_query("?vllm_version=2025-05")
    assert s.vllm_version == versions.release_at("vllm", "2025-05")
    assert notices == [f"vllm_version=2025-05: the link names a date; vLLM {s.vllm_version}, the release current "
                       "then, is shown."]
    assert s.query_string() == f"?vllm_version={s.vllm_version}"


@pytest.mark.parametrize("raw", ["9.9.9", "0.33.0x", "latest", "1999-01", "<script>alert(1)</script>", "%00",
                                 "0.33.0%0a0.22.0", "v"])
def test_bad_vllm_version_in_the_link_falls_back_with_an_escaped_notice(raw, small_catalog):
    from dashboard.app import DashboardApp
    from dashboard.state import DEFAULT_VLLM_VERSION

    app = DashboardApp(catalog=small_catalog, query=f"?vllm_version={raw}&tp=4")
    assert app.state.vllm_version == DEFAULT_VLLM_VERSION and app.state.tp == 4
    assert len(app.notices) == 1 and app.notices[0].startswith("Ignored link parameter vllm_version=")
    assert app.notice_pane.visible and "<script" not in app.notice_pane.object
    assert app.controls.vllm_version.value == DEFAULT_VLLM_VERSION
    assert app.state.query_string() == "?tp=4"  # the canonical link the address bar is rewritten to


def test_version_change_recomputes_only_vllm_and_lazily(small_catalog, monkeypatch):
    """The grid is cached per framework and vLLM release: the first render computes the default release
    only, another release computes vLLM's part once when first shown, and the other frameworks' parts are
    reused."""
    from dashboard import rules
    from dashboard.app import DashboardApp

    calls = []
    real = rules.grid

    def spy(*a, **k):
        calls.append((tuple(k.get("frameworks", ())), k.get("version"), k.get("expert_parallel", False)))
        return real(*a, **k)

    monkeypatch.setattr(rules, "grid", spy)
    app = DashboardApp(catalog=small_catalog)
    assert sorted(calls) == [(("sglang",), app.state.sglang_version, False), (("vllm",), app.state.vllm_version, False)]
    calls.clear()
    app.state.vllm_version = "0.22.0"
    assert calls == [(("vllm",), "0.22.0", False)]
    calls.clear()
    app.state.vllm_version = "0.33.0"
    app.state.vllm_version = "0.22.0"
    assert calls == []  # both cached
    # The same for SGLang: its release recomputes SGLang's part only, once.
    app.state.sglang_version = "0.5.20"
    assert calls == [(("sglang",), "0.5.20", False)]
    calls.clear()
    app.state.sglang_version = "0.5.23"
    app.state.sglang_version = "0.5.20"
    assert calls == []


def test_vllm_ep_means_enable_expert_parallel(small_catalog, monkeypatch):
    """EP > 1 turns on vLLM's --enable-expert-parallel (EP size TP x DP, never the EP number) in the grid,
    the details and the memory view's refusals; the other frameworks keep the EP size."""
    from dashboard import rules
    from dashboard.app import DashboardApp
    from dashboard.state import rule_args

    assert rule_args("vllm", ep=4, dp=2, vllm_version="0.22.0") == {
        "pp": 1, "dp": 2, "ep": 1, "dp_attention": False, "expert_parallel": True, "version": "0.22.0"}
    assert rule_args("sglang", ep=4) == {"pp": 1, "dp": 1, "ep": 4, "dp_attention": False, "version": None}
    assert rule_args("vllm", ep=1)["expert_parallel"] is False

    grid_calls, check_calls = [], []
    real_grid, real_check = rules.grid, rules.check
    monkeypatch.setattr(rules, "grid", lambda *a, **k: grid_calls.append(k) or real_grid(*a, **k))
    monkeypatch.setattr(rules, "check", lambda *a, **k: check_calls.append((a[1], k)) or real_check(*a, **k))
    app = DashboardApp(catalog=small_catalog, query="?ep=4&model=acme/h30&framework=vllm&tp=2")
    by_fw = {k["frameworks"][0]: k for k in grid_calls}
    assert by_fw["vllm"]["ep"] == 1 and by_fw["vllm"]["expert_parallel"] is True
    assert by_fw["sglang"]["ep"] == 4 and not by_fw["sglang"].get("expert_parallel")
    vllm_checks = [k for fw, k in check_calls if fw == "vllm"]
    assert vllm_checks and all(k["expert_parallel"] is True and k["ep"] == 1 for k in vllm_checks)
    html = app.validity._details._html.object
    assert "--enable-expert-parallel</code>, EP size = TP &times; DP = 2)" in html and "EP on (<code" in html
    app.state.framework = "sglang"
    assert "EP = 4" in app.validity._details._html.object
    # ep=2 and ep=4 are the same vLLM setting: one cached vLLM part.
    grid_calls.clear()
    app.state.ep = 2
    assert [k["frameworks"] for k in grid_calls] == [("sglang",)]
    # The memory view's refusals come from the same vLLM grid.
    from dashboard.views.memory import refusals

    got = refusals(app.state, app.data, "acme/h24-kv3", ["vllm"], [1, 2, 4, 8])
    want = real_grid(small_catalog.loc[small_catalog["model_id"] == "acme/h24-kv3"], tp_sizes=[1, 2, 4, 8],
                     frameworks=("vllm",), expert_parallel=True, version=app.state.vllm_version)
    assert set(got) == {("vllm", int(t)) for t, ok in zip(want["tp"], want["valid"]) if not ok}


def test_details_say_where_the_verdict_comes_from(small_catalog):
    """vLLM at an unexecuted release: 'Rules read from vLLM <release> source; not run' and the version notice;
    at the default release the text follows the verdict's own evidence: this made-up config was not run."""
    from dashboard import rules
    from dashboard.app import DashboardApp
    from dashboard.views.common import esc

    app = DashboardApp(catalog=small_catalog, query="?model=acme/h24-kv3&framework=vllm&tp=8&vllm_version=0.27.1")
    html = app.validity._details._html.object
    v = rules.check(app.data.record("acme/h24-kv3"), "vllm", 8, version="0.27.1")
    assert v.evidence == "source" and v.notice
    assert "Rules read from vLLM 0.27.1 source; not run." in html
    assert '<div class="tp-version-notice"' in html and esc(v.notice) in html
    assert html.count(esc(v.notice)) == 1  # (not repeated as a warning)
    app.state.vllm_version = "0.33.0"
    html = app.validity._details._html.object
    v = rules.check(app.data.record("acme/h24-kv3"), "vllm", 8)
    assert v.evidence == "checked"  # acme/h24-kv3 is no config of the table
    want = "Rules checked against vLLM 0.33.0's own code run as an H100-80GB (cuda-sm90) on 182 catalog models; this config was not run"
    assert esc(want) in html and "tp-version-notice" not in html and "Reproduced" not in html
    app.state.framework = "sglang"  # SGLang 0.5.23 was run through the harness too
    v = rules.check(app.data.record("acme/h24-kv3"), "sglang", 8)
    assert v.release == "0.5.23" and v.executed
    want = "Rules checked against SGLang 0.5.23's own code run as an H100-80GB (cuda-sm90) on 182 catalog models; this config was not run"
    assert v.evidence == "checked" and esc(want) in app.validity._details._html.object


def test_details_show_raise_site_and_our_wording_escaped(small_catalog, monkeypatch):
    """An executed verdict: the evidence line, each failing rule's exception type and raise site, '(our
    wording)' for messages the project wrote; every string escaped (details and the HTML report)."""
    from dashboard import rules
    from dashboard.app import DashboardApp
    from dashboard.views.export import report_html

    evil = "<img src=x onerror=alert(1)>"
    hits = (
        rules.RuleHit("vllm.llama_assert", "vllm", "attention_heads", "AssertionError (no message)",
                      "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/llama.py#L151",
                      "error", location="vllm/model_executor/models/llama.py:151", exc_type="AssertionError",
                      evidence="executed", ours=True),
        rules.RuleHit("vllm.vocab", "vllm", "vocab", f"1024 is not divisible by 6 {evil}", "javascript:alert(1)",
                      "error", location=f"vllm/distributed/utils.py:53{evil}", exc_type=f"ValueError{evil}",
                      evidence="executed", ours=False),
    )
    real = rules.check

    def fake(record, framework, tp, **kw):
        v = real(record, framework, tp, **kw)
        if framework != "vllm":
            return v
        import dataclasses

        from dashboard.rules.evidence import Evidence

        return dataclasses.replace(v, valid=False, status="invalid", failures=hits, warnings=(), release="0.33.0",
                                   executed=True, notice=f"notice {evil}",
                                   conformance=Evidence("vllm", "0.33.0", True, True, "vllm-0.33.0.parquet", 182,
                                                                    table_platform="cuda-sm90"))

    monkeypatch.setattr(rules, "check", fake)
    app = DashboardApp(catalog=small_catalog, query="?model=acme/h30&framework=vllm&tp=6")
    for html in (app.validity._details._html.object, report_html(app.state, app.data)):
        assert ("Reproduced by running vLLM 0.33.0&#x27;s own code on this config and layout, as an H100-80GB (cuda-sm90); conformance table "
                "vllm-0.33.0.parquet.") in html
        assert ">AssertionError at vllm/<wbr>model_executor/<wbr>models/<wbr>llama.py:151</code>" in html
        assert "AssertionError (no message)</span> <span class=\"tp-ours\"" in html
        assert html.count("(our wording)") == 1
        assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
        assert "ValueError&lt;img src=x onerror=alert(1)&gt; at vllm/<wbr>distributed/<wbr>utils.py:53&lt;img" in html
        assert "javascript:" not in html
        assert "notice &lt;img" in html


def test_exports_carry_the_vllm_version(app):
    from dashboard.views.export import grid_csv, report_html

    app.state.param.update(frameworks=["vllm", "sglang"], tp_sizes=[1, 2], vllm_version="0.27.1", ep=2)
    df = pd.read_csv(grid_csv(app.state, app.data), keep_default_na=False)
    assert set(df.loc[df["framework"] == "vllm", "version"]) == {"0.27.1"}
    assert set(df.loc[df["framework"] == "sglang", "version"]) == {"0.5.23"}
    assert len(df) == 5 * 2 * 2
    rep = report_html(app.state, app.data)
    assert "0.27.1 (rules read from vLLM 0.27.1 source)" in rep and "<h2>vLLM 0.27.1</h2>" in rep
    assert "0.5.23 (rules checked against SGLang 0.5.23&#x27;s own code run as an H100-80GB (cuda-sm90) on 182 catalog models)" in rep
    assert "<h2>SGLang 0.5.23</h2>" in rep
    assert "--enable-expert-parallel" in rep
    app.state.param.update(frameworks=["sglang", "transformers-native-tp"], sglang_version="0.5.20")
    df = pd.read_csv(grid_csv(app.state, app.data), keep_default_na=False)
    assert set(df.loc[df["framework"] == "sglang", "version"]) == {"0.5.20"}
    assert set(df.loc[df["framework"] == "transformers-native-tp", "version"]) == {""}
    rep = report_html(app.state, app.data)
    assert "0.5.20 (rules read from SGLang 0.5.20 source)" in rep and "<h2>SGLang 0.5.20</h2>" in rep


# ------------------------------------------------------------------------------------------------
# SGLang version selector (exact releases only: SGLang has no release-date table)
# ------------------------------------------------------------------------------------------------


def _txt_releases(framework: str) -> list[str]:
    from pathlib import Path

    lines = (Path(__file__).resolve().parents[1] / "data" / "releases" / f"{framework}.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def test_sglang_version_selector_offers_executed_releases_first_then_every_release_newest_first(app):
    from packaging.version import Version

    from dashboard.rules import versions
    from dashboard.state import DEFAULT_SGLANG_VERSION, sglang_releases
    from dashboard.views.controls import SOURCE_GROUP, sglang_version_groups

    assert not versions.releases("sglang")  # (no date table: the selector says where a release's rules come from)
    executed = list(versions.EXECUTED["sglang"])
    assert DEFAULT_SGLANG_VERSION == executed[-1] == app.state.sglang_version == "0.5.23"
    w = app.controls.sglang_version
    assert w.name == "SGLang version" and "tp-sglang-version" in w.css_classes
    assert w.value == DEFAULT_SGLANG_VERSION and w.groups == sglang_version_groups()
    assert list(w.groups) == ["Run through SGLang's own code", SOURCE_GROUP]
    groups = list(w.groups.values())
    assert list(groups[0].items()) == [(f"{v} (executed)", v) for v in sorted(executed, key=Version, reverse=True)]
    rest = list(groups[1].values())
    assert rest[:3] == ["0.5.22", "0.5.20", "0.5.19"] and rest == sorted(rest, key=Version, reverse=True)
    assert set(rest) | set(executed) == set(_txt_releases("sglang")) and not set(rest) & set(executed)
    assert all(label == f"{v} (read from source)" for label, v in groups[1].items())
    assert [r for r, _d, _ex in sglang_releases()] == [*executed[::-1], *rest]
    # Both selectors sit under FRAMEWORKS, vLLM's first.
    col = app.controls.__panel__()
    objs = list(col.objects)
    assert objs.index(app.controls.sglang_version) == objs.index(app.controls.vllm_version) + 1


def test_sglang_version_round_trips_through_the_url_and_the_widget(small_catalog):
    from dashboard.app import DashboardApp
    from dashboard.state import DEFAULT_SGLANG_VERSION

    app = DashboardApp(catalog=small_catalog,
                       query="?sglang_version=0.5.20&frameworks=sglang&model=acme/h30&framework=sglang&tp=4")
    _assert_release_round_trips(app, "sglang_version", "SGLang", "0.5.20", "0.5.22", DEFAULT_SGLANG_VERSION)
    # Spellings of a listed release are read as it; an empty value is the default.
    s = PlannerState()
    assert s.apply_query("?sglang_version=v0.5.15-post1") == [] and s.sglang_version == "0.5.15.post1"
    assert s.query_string() == "?sglang_version=0.5.15.post1"
    assert s.apply_query("?sglang_version=") == [] and s.sglang_version == DEFAULT_SGLANG_VERSION
    # The vLLM selector is untouched by the SGLang one, and vice versa.
    s = PlannerState()
    assert s.apply_query("?sglang_version=0.5.20&vllm_version=0.22.0") == []
    assert (s.vllm_version, s.sglang_version) == ("0.22.0", "0.5.20")


def test_a_date_is_not_an_sglang_release():
    """SGLang has no release-date table: a date in the link is refused, and the notice says exact releases only."""
    from dashboard.state import DEFAULT_SGLANG_VERSION

    s = PlannerState()
    notices = s.apply_query("?sglang_version=2025-05")
    assert s.sglang_version == DEFAULT_SGLANG_VERSION and s.query_string() == ""
    assert notices == [("Ignored link parameter sglang_version='2025-05': SGLang has no release-date table here, "
                        "so a date cannot name one of its releases: give an exact release such as "
                        f"{DEFAULT_SGLANG_VERSION}; the default, {DEFAULT_SGLANG_VERSION}, is used")]


@pytest.mark.parametrize("raw", ["9.9.9", "0.5.23x", "latest", "2025", "<script>alert(1)</script>", "%00",
                                 "0.5.23%0a0.5.21", "v", "0.5.99", "'\"><img src=x onerror=alert(1)>"])
def test_bad_sglang_version_in_the_link_falls_back_with_an_escaped_notice(raw, small_catalog):
    from dashboard.app import DashboardApp
    from dashboard.state import DEFAULT_SGLANG_VERSION

    app = DashboardApp(catalog=small_catalog, query=f"?sglang_version={raw}&tp=4")
    assert app.state.sglang_version == DEFAULT_SGLANG_VERSION and app.state.tp == 4
    assert len(app.notices) == 1 and app.notices[0].startswith("Ignored link parameter sglang_version=")
    if raw not in ("%00", "0.5.23%0a0.5.21"):
        assert "exact release" in app.notices[0]
    assert app.notice_pane.visible and "<script" not in app.notice_pane.object and "<img" not in app.notice_pane.object
    assert app.controls.sglang_version.value == DEFAULT_SGLANG_VERSION
    assert app.state.query_string() == "?tp=4"


def test_rule_args_and_grid_keys_carry_the_sglang_version(small_catalog):
    from dashboard import rules
    from dashboard.state import part_key, rule_args, state_grid_args, state_rule_args

    assert rule_args("sglang", dp=2, dp_attention=True, sglang_version="0.5.20") == {
        "pp": 1, "dp": 2, "ep": 1, "dp_attention": True, "version": "0.5.20"}
    assert rule_args("sglang", sglang_version="")["version"] is None
    assert "version" not in rule_args("transformers-native-tp", sglang_version="0.5.20", vllm_version="0.22.0")
    assert rule_args("vllm", sglang_version="0.5.20", vllm_version="0.22.0")["version"] == "0.22.0"
    # "", None and the newest executed release are one cache entry; another release is another.
    keys = {part_key("sglang", 1, 1, 1, False, None, v) for v in ("", None, "0.5.23")}
    assert len(keys) == 1 and part_key("sglang", 1, 1, 1, False, None, "0.5.20") not in keys
    assert part_key("vllm", 1, 1, 1, False, "0.22.0", "0.5.20") == part_key("vllm", 1, 1, 1, False, "0.22.0", None)
    s = PlannerState(sglang_version="0.5.20", vllm_version="0.22.0")
    assert state_rule_args(s, "sglang")["version"] == "0.5.20" and state_rule_args(s, "vllm")["version"] == "0.22.0"
    assert state_grid_args(s)["sglang_version"] == "0.5.20"
    data = app_data_from_catalog(small_catalog)
    got = data.grid(sglang_version="0.5.20", frameworks=("sglang",))
    want = rules.grid(small_catalog, tp_sizes=list(got["tp"].drop_duplicates()), frameworks=("sglang",),
                      version="0.5.20")
    assert list(got["valid"]) == list(want["valid"]) and list(got["message"]) == list(want["message"])


def test_details_say_where_the_sglang_verdict_comes_from(small_catalog):
    """SGLang at 0.5.20: 'Rules read from SGLang 0.5.20 source; not run' with the version notice, escaped;
    at 0.5.23 the rules were checked against SGLang 0.5.23's own code, but not on this made-up config."""
    from dashboard import rules
    from dashboard.app import DashboardApp
    from dashboard.views.common import esc
    from dashboard.views.details import fw_label

    app = DashboardApp(catalog=small_catalog, query="?model=acme/h24-kv3&framework=sglang&tp=8&sglang_version=0.5.20")
    assert fw_label(app.state) == "SGLang 0.5.20" and fw_label(app.state, "transformers-native-tp") == "transformers (native TP)"
    html = app.validity._details._html.object
    v = rules.check(app.data.record("acme/h24-kv3"), "sglang", 8, version="0.5.20")
    assert v.evidence == "source" and v.release == "0.5.20" and v.notice
    assert "Rules read from SGLang 0.5.20 source; not run." in html and "SGLang 0.5.20 &middot; TP = 8" in html
    assert '<div class="tp-version-notice"' in html and esc(v.notice) in html and html.count(esc(v.notice)) == 1
    app.state.sglang_version = "0.5.23"
    html = app.validity._details._html.object
    assert esc("Rules checked against SGLang 0.5.23's own code run as an H100-80GB (cuda-sm90) on 182 catalog models; this config was not run") in html
    assert "tp-version-notice" not in html and "Reproduced" not in html


def test_sglang_suggestions_spell_dp_attention_as_the_selected_release(small_catalog):
    """The details' suggestion names --enable-dp-attention --dp-size before 0.5.22, --attn-dp-size from it
    (a Qwen3: its model file shards attention on the attention-TP group in the executed releases too)."""
    from dashboard.app import DashboardApp

    cat = pd.concat([small_catalog, pd.DataFrame([{**small_catalog.iloc[0].to_dict(), "model_id": "acme/h12",
                                                   "num_attention_heads": 12, "num_key_value_heads": 12,
                                                   "hidden_size": 1536, "architectures": "Qwen3ForCausalLM",
                                                   "model_type": "qwen3"}])], ignore_index=True)
    app = DashboardApp(catalog=cat, query="?model=acme/h12&framework=sglang&tp=8&sglang_version=0.5.20")
    html = app.validity._details._html.object
    assert "with --enable-dp-attention --dp-size 2 (attention-TP 4)" in html and "--attn-dp-size" not in html
    app.state.sglang_version = "0.5.22"
    html = app.validity._details._html.object
    assert "with --attn-dp-size 2 (attention-TP 4)" in html and "--enable-dp-attention" not in html


def test_memory_view_reads_ep_as_the_rules_do():
    """The memory view's weights per rank for vLLM with EP > 1 are those of --enable-expert-parallel (EP size
    TP x DP), not of an EP size equal to the EP control; other frameworks keep the EP size."""
    from dashboard import memory
    from dashboard.state import load_app_data
    from dashboard.views.memory import per_rank_frame

    data = load_app_data()
    model = "Qwen/Qwen3-30B-A3B"
    rec = data.record(model)
    assert rec is not None and rec["is_moe"]
    s = PlannerState(model=model, frameworks=["vllm", "sglang"], tp_sizes=[2, 4], ep=2, dp=2)
    got = per_rank_frame(s, data, rec).set_index(["framework", "tp"])["weight_bytes"]
    for tp in (2, 4):
        common = dict(pp=1, dp=2, kv_dtype=s.kv_dtype, context_len=s.context_len)
        want_v = memory.capacity(rec, "vllm", 80 << 30, tp, ep=1, expert_parallel=True, **common)
        want_s = memory.capacity(rec, "sglang", 80 << 30, tp, ep=2, **common)
        assert got[("vllm", tp)] == pytest.approx(want_v["weight_bytes_per_gpu"])
        assert got[("sglang", tp)] == pytest.approx(want_s["weight_bytes_per_gpu"])
    # (EP over TP x DP = 2 x 2 ranks holds fewer experts per rank than EP 2 would)
    ep2 = memory.capacity(rec, "vllm", 80 << 30, 2, ep=2, dp=2, kv_dtype=s.kv_dtype, context_len=s.context_len)
    assert got[("vllm", 2)] < ep2["weight_bytes_per_gpu"]
