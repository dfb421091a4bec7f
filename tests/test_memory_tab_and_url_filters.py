"""The memory and catalog tabs and the URL filters (per-rank KV chart, capacity table, selection, links).

* the "KV cache per token, per rank" chart uses the same PP / DP / DP-attention as the capacity model;
* the capacity table marks TP sizes the framework refuses, shows whole numbers and says when a layout
  needs more GPUs than chosen;
* "Show selected rows" takes only selected rows in the table's current (header-filtered) view;
* org / model_type / quant / gpu from a link are canonicalised, or refused with a visible notice.
"""

from __future__ import annotations

import math
import re

import holoviews as hv
import pandas as pd
import panel as pn
import pytest

from dashboard import catalog as cat
from dashboard import memory
from dashboard.state import PlannerState, app_data_from_catalog
from dashboard.views.memory import capacity_frame, per_rank_frame
from tests.configs import llama_config

hv.extension("bokeh")
pn.extension("tabulator")

L70 = "meta-llama/Llama-3.1-70B-Instruct"


def _cfg(h, kv, hidden=4096, layers=32, **extra):
    return llama_config(h, kv, hidden, layers, **{"max_position_embeddings": 131072, **extra})


@pytest.fixture(scope="module")
def catalog() -> pd.DataFrame:
    recs = [
        cat.normalize_config(_cfg(64, 8, hidden=8192, layers=80, intermediate_size=28672), L70),
        cat.normalize_config(_cfg(32, 8), "meta-llama/Llama-3.1-8B"),
        cat.normalize_config(_cfg(24, 3, hidden=3072, model_type="gemma2"), "google/gemma-2-2b"),
        cat.normalize_config(_cfg(32, 8, model_type="gemma2"), "google/gemma-2-9b"),
        cat.normalize_config(_cfg(30, 30, hidden=3840), "acme/h30"),
    ]
    return cat.catalog_from_records(recs)


@pytest.fixture(scope="module")
def data(catalog):
    return app_data_from_catalog(catalog)


def _app(data, query=None):
    from dashboard.app import DashboardApp

    return DashboardApp(data=data, query=query)


def _rows(html: str) -> list[list[str]]:
    """The capacity table's body rows as lists of cell texts (tags stripped)."""
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)[1:]
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", r, flags=re.S)] for r in rows]


# ---- 1. per-rank curves use the capacity model's PP / DP / DP-attention ----------------------------
@pytest.mark.parametrize("pp, dp, dp_attention, fw", [(1, 1, False, "vllm"), (2, 1, False, "vllm"),
                                                      (128, 128, False, "vllm"), (2, 4, True, "sglang")])
def test_kv_chart_equals_capacity_per_rank_kv(data, pp, dp, dp_attention, fw):
    s = PlannerState(model=L70, frameworks=[fw], tp_sizes=[1, 2, 4, 8], pp=pp, dp=dp, dp_attention=dp_attention,
                     context_len=32768)
    rec = data.record(L70)
    frame = per_rank_frame(s, data, rec)
    accepted = frame.loc[frame["refused"] == "", "tp"].tolist()
    assert 8 in accepted  # (SGLang refuses TP 1 and 2 under DP-attention with DP 4: gaps, checked below)
    assert frame.loc[frame["refused"] != "", "kv_bytes_per_token"].isna().all()
    for tp in accepted:
        got = float(frame.loc[(frame["framework"] == fw) & (frame["tp"] == tp), "kv_bytes_per_token"].iloc[0])
        c = memory.capacity(rec, fw, "H100-80GB", tp, pp=pp, dp=dp, dp_attention=dp_attention, context_len=32768)
        assert got == pytest.approx(c["kv_bytes_per_token_per_rank"]), (pp, tp)
        w = float(frame.loc[(frame["framework"] == fw) & (frame["tp"] == tp), "weight_bytes"].iloc[0])
        assert w == pytest.approx(c["weight_bytes_per_gpu"])


def test_kv_chart_follows_pp(data):
    rec = data.record(L70)
    one = per_rank_frame(PlannerState(model=L70, frameworks=["vllm"], tp_sizes=[1, 8]), data, rec)
    two = per_rank_frame(PlannerState(model=L70, frameworks=["vllm"], tp_sizes=[1, 8], pp=2), data, rec)
    # 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 320 KiB per token at TP 1; 40 KiB at TP 8; half with PP 2
    assert one.set_index("tp")["kv_bytes_per_token"].to_dict() == {1: 320 * 1024, 8: 40 * 1024}
    assert two.set_index("tp")["kv_bytes_per_token"].to_dict() == {1: 160 * 1024, 8: 20 * 1024}


def test_memory_view_title_names_the_layout(data):
    app = _app(data, f"?tab=memory&model={L70}&pp=4&frameworks=vllm&tp_sizes=1,8")
    mv = app.memory
    kv = hv.render(mv._kv.object)
    assert "PP = 4" in kv.title.text


# ---- 2. refused TP sizes are marked, not shown as fitting -------------------------------------------
def test_capacity_table_marks_refused_tp_sizes(data):
    s = PlannerState(model=L70, framework="vllm", frameworks=["vllm"], tp_sizes=[1, 2, 3, 4, 6, 8, 12, 16],
                     gpu="B200-180GB", context_len=131072)
    cap = capacity_frame(s, data, data.record(L70), "B200-180GB").set_index("tp")
    for tp in (3, 6, 12):
        assert cap.loc[tp, "status"] == "refused"
        assert not cap.loc[tp, "fits"]
        assert "divisible" in cap.loc[tp, "refused"]
        assert cap.loc[tp, "seqs_total"] is None or pd.isna(cap.loc[tp, "seqs_total"])
    for tp in (2, 4, 8):
        assert cap.loc[tp, "refused"] == "" and cap.loc[tp, "status"] == "fits" and cap.loc[tp, "fits"]
    # The rendered table says who refuses and why; the chart leaves a gap there.
    app = _app(data, f"?tab=memory&model={L70}&frameworks=vllm&tp_sizes=1,2,3,4,6,8,12,16&gpu=B200-180GB"
                     "&context_len=131072")
    rows = {r[0]: r for r in _rows(app.memory._table.object)}
    for tp in (3, 6, 12):
        assert rows[f"TP {tp}"][1] == "refused"
        assert rows[f"TP {tp}"][-1].startswith("refused by vLLM: ")
        assert "(64)" in rows[f"TP {tp}"][-1]
    assert rows["TP 8"][1] == "fits" and rows["TP 8"][-1] == ""
    frame = per_rank_frame(app.state, data, data.record(L70)).set_index("tp")
    assert math.isnan(frame.loc[3, "kv_bytes_per_token"]) and frame.loc[3, "refused"]
    assert app.memory._chart_note.visible and "vLLM TP 3, 6, 12" in app.memory._chart_note.object


# ---- 3. whole numbers; a layout needing more GPUs says so ---------------------------------------------
def test_capacity_table_whole_numbers_and_missing_gpus(data):
    app = _app(data, f"?tab=memory&model={L70}&frameworks=vllm&tp_sizes=2,4,8,16&gpu=B200-180GB"
                     "&context_len=131072&gpu_count=8")
    html = app.memory._table.object
    rows = {r[0]: r for r in _rows(html)}
    # columns: layout, fits?, weights, KV, tokens, sequences / replica, replicas, sequences total, note
    for r in rows.values():
        for cell in (r[4], r[5], r[6], r[7]):
            assert cell == "–" or re.fullmatch(r"\d{1,3}(,\d{3})*", cell), r
    assert rows["TP 16"][1] == "needs 16 GPUs (have 8)"
    assert rows["TP 16"][6] == "–" and rows["TP 16"][7] == "–"
    assert re.fullmatch(r"\d+", rows["TP 16"][5])  # one replica's sequences are still shown
    assert int(rows["TP 8"][6]) == 1 and int(rows["TP 8"][7]) == int(rows["TP 8"][5])
    assert int(rows["TP 4"][6]) == 2 and int(rows["TP 4"][7]) == 2 * int(rows["TP 4"][5])
    # "needs ..." is not green; "fits" is.
    tr16 = next(t for t in re.findall(r"<tr>(.*?)</tr>", html, flags=re.S) if "TP 16<" in t)
    assert "#0a6b4f" not in tr16
    tr8 = next(t for t in re.findall(r"<tr>(.*?)</tr>", html, flags=re.S) if "TP 8<" in t)
    assert "#0a6b4f" in tr8
    cap = capacity_frame(app.state, data, data.record(L70), "B200-180GB").set_index("tp")
    assert cap.loc[16, "replicas"] is None or pd.isna(cap.loc[16, "replicas"])
    assert not cap.loc[16, "enough_gpus"] and cap.loc[16, "status"] == "needs 16 GPUs (have 8)"


# ---- 4. "Show selected rows" only takes rows in the filtered view --------------------------------------
def test_use_selection_respects_header_filters(data):
    app = _app(data, "?tab=catalog")
    view = app.catalog
    assert len(view.table.value) == 5
    view.table.filters = [{"field": "model_id", "type": "like", "value": "gemma"}]
    assert len(view.table.current_view) == 2
    view.table.selection = list(range(5))  # the header's select-all box ticks every row
    assert len(view.visible_selection()) == 2
    view._use_selection()
    assert app.state.models == ["google/gemma-2-2b", "google/gemma-2-9b"]
    # Without a header filter the whole selection is used.
    view.table.filters = []
    ids = list(view.table.value["model_id"])  # (the table's rows are in family-then-size order)
    view.table.selection = [ids.index(L70), ids.index("acme/h30")]
    view._use_selection()
    assert app.state.models == [L70, "acme/h30"]


# ---- 5. URL filters the page shows, or refuses with a notice -------------------------------------------
def test_url_org_is_canonicalised_and_shown(data):
    app = _app(data, "?org=GOOGLE&tab=catalog")
    assert app.notices == []
    assert app.state.org == "google"
    assert app.catalog.org.value == "google"
    assert "<b>2</b> of 5" in app.catalog.count.object
    app = _app(data, "?model_type=Gemma2&quant=NONE&tab=catalog")
    assert app.notices == [] and app.state.model_type == "gemma2" and app.state.quant == "none"
    assert app.catalog.model_type.value == "gemma2" and app.catalog.quant.value == "none"


def test_url_unknown_catalog_filters_fall_back_with_notice(data):
    app = _app(data, "?org=NoSuchOrg&model_type=bogus&quant=weird&tab=catalog")
    assert len(app.notices) == 3
    for key, val in (("org", "NoSuchOrg"), ("model_type", "bogus"), ("quant", "weird")):
        assert any(f"{key}='{val}'" in n for n in app.notices), key
        assert getattr(app.state, key) == ""
    assert app.notice_pane.visible and "NoSuchOrg" in app.notice_pane.object
    assert "<b>5</b> of 5" in app.catalog.count.object


def test_url_hostile_org_notice_is_escaped(data):
    app = _app(data, "?org=%3Cscript%3Ex%3C/script%3E")
    assert app.state.org == "" and app.notice_pane.visible
    assert "<script" not in app.notice_pane.object and "&lt;script&gt;" in app.notice_pane.object


@pytest.mark.parametrize("raw, expected", [("A100-40GB%20", "A100-40GB"), ("a100-40gb", "A100-40GB"),
                                           ("%20b200-180GB", "B200-180GB")])
def test_url_gpu_is_canonicalised(data, raw, expected):
    app = _app(data, f"?gpu={raw}")
    assert app.notices == [] and app.state.gpu == expected
    assert app.controls.gpu.value == expected


@pytest.mark.parametrize("raw", ["NOPE", "H100", "%3Cb%3E"])
def test_url_unknown_gpu_falls_back_with_notice(data, raw):
    app = _app(data, f"?gpu={raw}&tab=memory&model={L70}")
    assert app.state.gpu == ""
    assert len(app.notices) == 1 and "gpu=" in app.notices[0] and "GPU" in app.notices[0]
    assert app.notice_pane.visible
    assert "H100-80GB" in app.memory._table.object


def test_apply_query_without_known_values_is_unchanged():
    s = PlannerState()
    assert s.apply_query("?org=qwen&gpu=whatever") == []
    assert s.org == "qwen" and s.gpu == "whatever"


def test_report_names_the_gpu_and_layout_csv_is_never_empty():
    """The report names the GPU the memory view uses (not "default"); the layout CSV of a cell with no
    layout (a refused TP size) says why instead of being an empty file."""
    import pandas as pd
    import io

    from dashboard.app import DashboardApp
    from dashboard.views.export import report_html

    app = DashboardApp(query="?model=meta-llama/Meta-Llama-3.1-405B&tp=4096&framework=vllm")
    html = report_html(app.state, app.data, "")
    assert "8 × H100-80GB" in html and "× default" not in html
    csv = pd.read_csv(io.StringIO(app.layout._csv().read()))
    assert list(csv.columns) == ["model_id", "framework", "tp", "note"] and len(csv) == 1
    assert csv["note"].iat[0].startswith("no per-rank layout")
    ok = DashboardApp(query="?model=meta-llama/Meta-Llama-3.1-405B&tp=8&framework=vllm")
    assert len(pd.read_csv(io.StringIO(ok.layout._csv().read()))) > 8
