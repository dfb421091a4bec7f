"""In-process tests of issue 22's dashboard fixes (no browser): the memory bars' axis and their marks for
layouts that do not run, launch commands that wrap at spaces only, collapsed add notices, singular counts,
the catalog count under the table's column filter, the URL written in the change's own callback, and the
plan chart's font given as a value (a bare string in a data spec made Bokeh look for a column)."""

from __future__ import annotations

import holoviews as hv
import pandas as pd
import panel as pn
import pytest

hv.extension("bokeh")
pn.extension("tabulator")


def _cap(**over):
    base = {"tp": [1, 3, 8, 16], "weights_gib": [627.0, 210.0, 79.0, 40.0], "kv_gib": [0.0, 0.0, 0.0, 30.0],
            "reserve_gib": [12.0, 5.0, 11.0, 10.0], "fits": [False, False, False, True],
            "refused": ["", "heads not divisible", "", ""], "enough_gpus": [True, True, True, False]}
    base.update(over)
    return pd.DataFrame(base)


def test_memory_bars_fit_the_card_and_mark_what_does_not_run():
    from dashboard.plots import memory as mp

    fig = hv.render(mp.memory_bars(_cap(), 79.6, "Memory per GPU"))
    assert list(fig.x_range.factors) == ["TP 1 ✗", "TP 3 refused", "TP 8 ✗", "TP 16 too few GPUs"]
    # the axis fits the card (and bars up to twice its memory), not the 639 GiB single-GPU bar
    assert fig.y_range.start == 0 and 79.6 * 1.15 <= fig.y_range.end <= 79.6 * mp.AXIS_CAPACITY_FACTOR * 1.15
    grey = [r for r in fig.renderers if r.name == "not-run"]
    assert len(grey) == 1 and grey[0].glyph.hatch_pattern == mp.NOT_RUN_HATCH
    assert list(grey[0].data_source.data["x"]) == ["TP 3 refused", "TP 16 too few GPUs"]
    # the stacked (coloured) bars hold nothing for the layouts that do not run
    stacked = next(r for r in fig.renderers if r.name not in ("not-run", "gpu-capacity"))
    data = stacked.data_source.data
    for x, gib in zip(data["setup"], data["GiB"], strict=True):
        if x in ("TP 3 refused", "TP 16 too few GPUs"):
            assert gib == 0
    clipped = next(x for x in fig.center if getattr(x, "name", "") == "clipped-totals")
    assert list(clipped.source.data["x"]) == ["TP 1 ✗", "TP 3 refused"]
    assert clipped.source.data["text"][0] == "639▲"
    labels = [str(i.label.value) if hasattr(i.label, "value") else str(i.label) for i in fig.legend[0].items]
    assert any("not run" in t for t in labels) and any("GPU memory (80 GiB)" in t for t in labels)


def test_memory_bars_axis_grows_with_bars_that_fit_the_card_range():
    from dashboard.plots import memory as mp

    assert mp.axis_top(80.0, [20.0, 30.0]) == pytest.approx(92.0)  # the card's line and a margin
    assert mp.axis_top(80.0, [130.0]) == pytest.approx(130.0 * 1.12)  # a bar up to 2x the card: whole
    assert mp.axis_top(80.0, [627.0]) == pytest.approx(160.0 * 1.12)  # taller: clipped at 2x


def test_per_rank_curves_start_at_zero():
    from dashboard.plots import memory as mp

    frame = pd.DataFrame({"framework": ["vllm"] * 3, "tp": [1, 2, 4], "v": [68.6] * 3})
    fig = hv.render(mp.per_rank_curves(frame, "v", "KV (KiB)", "KV"))
    assert fig.y_range.start == 0 and fig.y_range.end > 68.6


def test_commands_wrap_at_spaces_only_and_keep_their_text():
    import re

    from dashboard.views.common import command_html

    cmd = "vllm serve meta-llama/Llama-3.1-8B --max-model-len 32768\n--tensor-parallel-size 8 <x>"
    out = command_html(cmd)
    toks = re.findall(r'<span class="tp-tok" style="white-space:nowrap">([^<]*)</span>', out)
    assert toks == ["vllm", "serve", "meta-llama/Llama-3.1-8B", "--max-model-len", "32768", "--tensor-parallel-size",
                    "8", "&lt;x&gt;"]
    assert "<x>" not in out
    import html as _html

    assert _html.unescape(re.sub(r"<[^>]+>", "", out)) == cmd  # text content unchanged, newline kept


def test_plan_table_uses_token_spans_and_no_break_inside_words():
    from dashboard.views import plan

    assert "overflow-wrap: normal" in plan._TABLE_CSS and "break-word" not in plan._TABLE_CSS
    assert "Copied" in plan._COPY_JS and "execCommand" in plan._COPY_JS and "2000" in plan._COPY_JS


def test_add_notices_keep_the_newest_open_and_fold_the_rest():
    from dashboard.views.add_model import MAX_NOTICES, notices_html

    assert notices_html([]) == ""
    one = notices_html(["<div>A</div>"])
    assert "details" not in one and "A" in one
    three = notices_html(["<div>C</div>", "<div>B</div>", "<div>A</div>"])
    assert three.index("C") < three.index("<details") < three.index("B")
    assert "2 earlier notices" in three and "<details open" not in three
    assert MAX_NOTICES <= 5


def test_plural_counts():
    from dashboard.views.common import plural

    assert plural(1, "GPU") == "1 GPU" and plural(8, "GPU") == "8 GPUs" and plural(1024, "node") == "1,024 nodes"


def test_plan_chart_font_is_a_value_not_a_field():
    from bokeh.models import LabelSet

    from dashboard.plots import plan as plan_plots
    from dashboard.plots.style import FONT

    fig = plan_plots.sequences_figure()
    labels = [x for x in fig.center if isinstance(x, LabelSet)]
    assert labels and all(getattr(x.text_font, "value", None) == FONT for x in labels)


def test_catalog_count_follows_the_tables_column_filter():
    from dashboard.app import DashboardApp

    app = DashboardApp()
    view = app.catalog
    total = len(app.data.catalog)
    assert f"<b>{total}</b> of {total}" in view.count.object
    view.table.filters = [{"field": "model_id", "type": "like", "value": "qwen"}]
    want = int(app.data.catalog["model_id"].astype(str).str.lower().str.contains("qwen", regex=False).sum())
    assert 0 < want < total
    assert f"<b>{want}</b> of {total}" in view.count.object and f"({total} before" in view.count.object
    view.table.filters = []
    assert f"<b>{total}</b> of {total} models match." in view.count.object


def test_calibration_box_refuses_impossible_figures_inline(monkeypatch):
    from dashboard.app import DashboardApp

    app = DashboardApp(query="?model=meta-llama/Llama-3.1-8B-Instruct&tp=1&kv_measured_gib=40&tab=memory")
    mem = app.memory
    assert app.state.kv_measured_gib == 40
    for typed, why in ((500.0, "more than the"), (-3.0, "more than 0 GiB")):
        mem._calib.value = typed
        assert app.state.kv_measured_gib is None  # not used: the state is uncalibrated, the link drops it
        assert "kv_measured_gib" not in app.state.query_string()
        assert why in mem._calib_note.object and "not used" in mem._calib_note.object
        assert mem._calib.value == typed  # the refused figure stays in the box beside its error
    mem._calib.value = 40.0
    assert app.state.kv_measured_gib == 40 and "Calibrated from your log" in mem._calib_note.object
    assert mem._calib.start is None  # no lower bound in the widget: the browser does not clamp -3 to 0


def test_served_url_is_written_in_the_changes_own_callback(monkeypatch):
    """In a served session, _push_url writes the Location at once inside pn.io.unlocked (no timeout)."""
    from dashboard import app as app_mod

    calls = []

    class FakeDoc:
        session_context = object()

        def add_timeout_callback(self, *a, **k):  # pragma: no cover -- must not be used
            calls.append("timeout")

    a = app_mod.DashboardApp()
    entered = []

    class Unlocked:
        def __enter__(self):
            entered.append(True)

        def __exit__(self, *exc):
            return False

    written = []
    a.state.tab = "memory"
    monkeypatch.setattr(pn.io, "unlocked", lambda *a, **k: Unlocked())
    monkeypatch.setattr(a, "_write_url", lambda: written.append(a.state.query_string()))
    monkeypatch.setattr(type(pn.state), "location", property(lambda self: None))
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: FakeDoc()))
    a._push_url()
    monkeypatch.undo()
    assert written and written[-1].endswith("tab=memory") and entered and calls == []


def test_readme_names_the_notebooks_extra_and_how_to_export_offline():
    """The README's set-up keeps its two commands and names the ``[notebooks]`` extra in prose; it says the
    nbconvert HTML export loads scripts from CDNs and how to make a copy that opens on a closed network."""
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "notebooks" in extras
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"```bash\n", setup)) == 2  # exactly two set-up commands
    assert '`pip install -e ".[notebooks]"`' in setup
    assert "nbconvert" in readme and "CDN" in readme and "resources=bokeh.resources.INLINE" in readme
    for nb in ("capacity_planning", "explore_catalog"):
        text = (root / "notebooks" / f"{nb}.ipynb").read_text()
        assert "works on a closed network\\n" not in text  # the claim now names the live notebook only


def test_shell_tokens_keep_quoted_arguments_whole():
    from dashboard.views.common import shell_tokens

    line = "vllm serve 'acme/it'\"'\"'s-$(rm -rf)' --x \"a b\" c\\ d"
    toks = shell_tokens(line)
    assert toks == ["vllm", "serve", "'acme/it'\"'\"'s-$(rm -rf)'", "--x", '"a b"', "c\\ d"]
    assert " ".join(toks) == line
