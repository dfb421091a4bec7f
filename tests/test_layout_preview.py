"""The selected cell's compact per-rank layout: one Bokeh figure per session, refilled in place
(:func:`dashboard.plots.layout.update_layout_preview`), drawing what the HoloViews plot it replaced drew
(:func:`dashboard.plots.layout.layout_plot` with ``max_width``), redrawn only when the cell changed."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import pytest

from dashboard import catalog as cat
from dashboard import layout as lay
from dashboard.plots import layout as layout_plots
from tests.configs import llama_config

hv.extension("bokeh")
pn.extension("tabulator")


def _records():
    return {
        "a/q32-kv8": cat.normalize_config(llama_config(32, 8), "a/q32-kv8"),
        "a/q24-kv3": cat.normalize_config(llama_config(24, 3, hidden=3072), "a/q24-kv3"),
        "a/q64-kv8": cat.normalize_config(llama_config(64, 8, hidden=8192), "a/q64-kv8"),
    }


CASES = [("a/q32-kv8", "vllm", 8), ("a/q32-kv8", "vllm", 2), ("a/q32-kv8", "vllm", 1), ("a/q24-kv3", "sglang", 6),
         ("a/q24-kv3", "vllm", 3), ("a/q64-kv8", "vllm", 16), ("a/q64-kv8", "vllm", 4), ("a/q32-kv8", "sglang", 16)]


def _rgb(c) -> str:
    return str(c).upper()


@pytest.mark.parametrize("reuse", [False, True])
def test_preview_draws_what_the_holoviews_plot_drew(reuse):
    """Factors, cells (slot, rank, colour, text, hover detail), size, fonts, label rotation and the head
    numbers in the cells equal the HoloViews rendering, whether the figure is fresh or refilled after
    other layouts (``reuse``)."""
    recs = _records()
    fig = layout_plots.layout_preview_figure()
    order = CASES if not reuse else CASES[::-1] + CASES
    for model, fw, tp in order:
        frame, _ = layout_plots.cap_layout_slots(layout_plots.layout_frame(lay.rank_layout(recs[model], fw, tp)),
                                                 layout_plots.MAX_COMPACT_SLOTS)
        title = f"TP = {tp}: heads per rank"
        layout_plots.update_layout_preview(fig, frame, title)
        ref = hv.render(layout_plots.layout_plot(frame, title, max_width=layout_plots.PREVIEW_PX))
        case = (model, fw, tp)
        assert [str(f) for f in fig.x_range.factors] == [str(f) for f in ref.x_range.factors], case
        assert [str(f) for f in fig.y_range.factors] == [str(f) for f in ref.y_range.factors], case
        assert (fig.width, fig.height) == (ref.width, ref.height), case
        assert fig.title.text == ref.title.text and fig.title.text_font_size == ref.title.text_font_size
        # (as the page showed the HoloViews plot: Panel's theme drew its title black, its pane gave it 5 / 10 px)
        assert fig.title.text_color == "black" and tuple(fig.margin) == (5, 10)
        for a, b in ((fig.xaxis[0], ref.xaxis[0]), (fig.yaxis[0], ref.yaxis[0])):
            assert a.major_label_text_font_size == b.major_label_text_font_size, case
            assert float(a.major_label_orientation if a.major_label_orientation != "horizontal" else 0) == float(
                b.major_label_orientation if b.major_label_orientation != "horizontal" else 0), case
        # cells: the same (slot, rank) -> colour, text and hover detail
        src = fig.renderers[0].data_source.data
        rsrc = ref.renderers[0].data_source.data
        mapper = fig.renderers[0].glyph.fill_color.transform
        rmapper = ref.renderers[0].glyph.fill_color.transform
        color = dict(zip(mapper.factors, mapper.palette))
        rcolor = dict(zip(rmapper.factors, rmapper.palette))
        got = {(s, r): (_rgb(color[k]), t, d) for s, r, k, t, d in
               zip(src["slot"], src["rank"], src["kind"], src["text"], src["detail"])}
        want = {(str(s), str(r)): (_rgb(rcolor[str(k)]), str(t), str(d)) for s, r, k, t, d in
                zip(rsrc["slot"], rsrc["rank"], rsrc["zvalues"], rsrc["text"], rsrc["detail"])}
        assert got == want, case
        # head numbers in the cells: drawn exactly when HoloViews drew them, at its font size
        ref_labels = ref.renderers[1]
        drawn = len(ref_labels.data_source.data.get("text", [])) > 0
        assert fig.renderers[1].visible == drawn, case
        if drawn:
            assert fig.renderers[1].glyph.text_font_size == ref_labels.glyph.text_font_size, case
        hover = next(t for t in fig.tools if type(t).__name__ == "HoverTool")
        rhover = next(t for t in ref.tools if type(t).__name__ == "HoverTool")
        assert hover.tooltips == rhover.tooltips and hover.renderers == [fig.renderers[0]]
        assert fig.toolbar_location is None and fig.output_backend == ref.output_backend


def test_empty_frame_says_so():
    fig = layout_plots.layout_preview_figure()
    layout_plots.update_layout_preview(fig, None, "TP = 2: heads per rank")
    empty = next(a for a in fig.center if getattr(a, "name", "") == "tp-layout-preview-empty")
    assert empty.visible and not fig.renderers[1].visible and list(fig.x_range.factors) == []


def test_details_keep_one_figure_and_redraw_the_layout_only_when_the_cell_changes():
    from bokeh.document import Document

    from dashboard.app import DashboardApp

    recs = _records()
    app = DashboardApp(catalog=cat.catalog_from_records(list(recs.values())),
                       query="?model=a/q32-kv8&framework=vllm&tp=8")
    doc = Document()
    doc.add_root(app.__panel__().get_root(doc))
    d = app.validity._details
    fig = d._layout_fig
    cells = fig.renderers[0].data_source
    assert fig.visible and fig.title.text == "TP = 8: heads per rank" and len(fig.y_range.factors) == 8
    events = []
    doc.on_change(lambda e: events.append(e))
    # a GPU change re-checks the verdict (the GPU decides the evidence) but leaves the layout alone
    app.state.gpu = "A100-80GB" if app.state.gpu != "A100-80GB" else "H100-80GB"
    assert not any(getattr(e, "model", None) in (fig, cells, fig.x_range, fig.y_range, fig.title) for e in events)
    # a new TP refills the same figure
    app.state.tp = 2
    assert d._layout_fig is fig and fig.renderers[0].data_source is cells
    assert fig.title.text == "TP = 2: heads per rank" and list(fig.y_range.factors) == ["rank 1", "rank 0"]
    assert len(cells.data["slot"]) == 2 * (16 + 4)
    # a TP with no layout hides the figure and says why; a valid one shows it again
    app.state.tp = 3
    assert not fig.visible and d._layout_note.visible and "No per-rank layout" in d._layout_note.object
    app.state.tp = 4
    assert fig.visible and not d._layout_note.visible and len(fig.y_range.factors) == 4
    # another model at the same TP
    app.state.model = "a/q64-kv8"
    assert fig.visible and len(cells.data["slot"]) == 4 * (16 + 2)
    assert np.array_equal(sorted(set(cells.data["rank"])), sorted(f"rank {r}" for r in range(4)))
    # no model: nothing drawn
    app.state.model = ""
    assert not fig.visible and not d._layout_note.visible
