"""Per-rank layout view: which query, KV, linear-attention and vision heads each TP rank holds."""

from __future__ import annotations

import panel as pn
import param

from dashboard.plots import layout as layout_plots
from dashboard.plots.style import framework_label
from dashboard.state import AppData, PlannerState
from dashboard.views.common import selected_record_changed, csv_safe, esc, notice_html, when_shown


def layout_table(state: PlannerState, data: AppData):
    """The complete tidy layout (:func:`dashboard.layout.rank_layout`) of the selected cell, or None."""
    rec = data.record(state.model) if state.model else None
    if rec is None or rec.get("status") != "ok":
        return None
    from dashboard import layout as layout_mod

    try:
        return layout_mod.rank_layout(rec, state.framework, state.tp, dp=state.dp, dp_attention=state.dp_attention)
    except Exception:  # noqa: BLE001 -- layout_object shows the reason
        return None


def kv_pool_note(state: PlannerState, rec) -> str:
    """Plain-text note when the framework sizes its KV-cache pool for a different number of KV heads per
    rank than the attention shard of this model holds (:meth:`dashboard.frameworks.base.Framework.
    kv_pool_heads_per_rank`; SGLang DP-attention on a model file that shards attention over the full
    TP), else ""."""
    from dashboard import frameworks
    from dashboard import layout as layout_mod

    try:
        c = layout_mod.heads_per_rank_counts(rec, state.framework, [state.tp], dp=state.dp,
                                             dp_attention=state.dp_attention)
    except (ValueError, TypeError):
        return ""
    shard, pool = int(c["kv"][0]), int(c["kv_pool"][0])
    if not c["has_q"][0] or shard == pool:
        return ""
    fw = frameworks.get(state.framework)
    pool_tp = int(fw.kv_pool_tp(state.tp, state.dp, state.dp_attention)[()])
    return (f"KV pool differs from the attention shard: this model's attention runs over {int(c['attn_tp'][0])} "
            f"ranks and holds {shard} KV head{'s' if shard != 1 else ''} per rank (drawn below), but "
            f"{fw.label} sizes its KV-cache pool with the attention-TP group ({pool_tp} ranks): {pool} KV "
            f"head{'s' if pool != 1 else ''} per rank. The memory model budgets the pool.")


def layout_parts(state: PlannerState, data: AppData, *, compact: bool = False):
    """(frame to draw or None, plot title, notice html or "") for the selected (model, framework, TP):
    the :func:`dashboard.plots.layout.layout_frame` of the cell, capped at
    :data:`dashboard.plots.layout.MAX_LAYOUT_SLOTS` head columns (fewer in the compact preview), and a
    notice saying how many heads per rank were left out (the layout CSV has them all) or why there is no
    layout."""
    if not state.model:
        return None, "", notice_html("Tap a heatmap cell or pick a model to see how its heads land on each rank.")
    rec = data.record(state.model)
    if rec is None:
        return None, "", notice_html(f"Model {state.model} is not in the catalog.", "warning")
    if rec.get("status") != "ok":
        return None, "", notice_html(
            f"{state.model}: config unreadable ({rec.get('status')}: {rec.get('status_reason') or ''}); no layout.",
            "warning",
        )
    try:
        from dashboard import layout as layout_mod
    except ImportError:
        return None, "", notice_html("Per-rank layout is not available: dashboard.layout is not installed yet.",
                                     "warning")
    try:
        df = layout_mod.rank_layout(rec, state.framework, state.tp, dp=state.dp, dp_attention=state.dp_attention)
    except Exception as exc:  # noqa: BLE001 -- the layout module refuses impossible layouts with a reason
        return None, "", notice_html(
            f"No per-rank layout for {state.model} on {framework_label(state.framework)} at TP={state.tp}: {exc}",
            "warning",
        )
    max_slots = layout_plots.MAX_COMPACT_SLOTS if compact else layout_plots.MAX_LAYOUT_SLOTS
    frame, cut = layout_plots.cap_layout_slots(layout_plots.layout_frame(df), max_slots)
    note = layout_plots.hidden_slots_note(cut)
    if note and not compact:
        note += " The layout CSV below lists every head of every rank."
    pool = kv_pool_note(state, rec)
    if pool:
        note = f"{pool} {note}".strip()
    note = notice_html(note, "info") if note else ""
    # Short titles: the model id is in the heading above the plot (and in the details column).
    title = f"TP = {state.tp}: heads per rank" if compact else f"{framework_label(state.framework)}, TP = {state.tp}"
    return frame, title, note


def layout_object(state: PlannerState, data: AppData, *, compact: bool = False):
    """(HoloViews element or None, notice html or "") for the selected (model, framework, TP)
    (:func:`layout_parts`, drawn by :func:`dashboard.plots.layout.layout_plot`)."""
    frame, title, note = layout_parts(state, data, compact=compact)
    if frame is None:
        return None, note
    if compact:
        return layout_plots.layout_plot(frame, title, max_width=layout_plots.PREVIEW_PX), note
    return layout_plots.layout_plot(frame, title), note


class LayoutView(pn.viewable.Viewer):
    """Ranks x heads grid of the selected (model, framework, TP)."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        self._header = pn.pane.HTML(sizing_mode="stretch_width")
        self._notice = pn.pane.HTML(sizing_mode="stretch_width")
        self._plot = pn.pane.HoloViews(None, css_classes=["tp-layout-plot"], styles={"flex": "none"}, linked_axes=False)
        # The plot keeps fixed cells (layout_plots.LAYOUT_CELL_PX per head): with many heads per rank it is
        # wider than the page, so it sits in a container that scrolls sideways and cannot widen the page.
        self._scroll = pn.Column(
            self._plot, sizing_mode="stretch_width", css_classes=["tp-layout-scroll"],
            styles={"overflow-x": "auto", "overflow-y": "hidden", "max-width": "100%", "min-width": "0"},
        )
        self.csv = pn.widgets.FileDownload(
            callback=self._csv, filename="tp-layout.csv", label="Layout CSV (every head)", color="primary",
            variant="outline", css_classes=["tp-export-layout"], embed=False, width=220,
        )
        self.state.param.watch(when_shown(self, "layout", self._refresh), ["model", "framework", "tp", "dp", "dp_attention"])
        # a model added to the session: redraw when the selected model's row changed
        _redraw = when_shown(self, "layout", self._refresh)
        self.param.watch(lambda e: _redraw(e) if selected_record_changed(self.state, e) else None, "data")
        self._refresh()

    def _refresh(self, *_):
        s = self.state
        self._header.object = (
            f'<h2 class="tp-layout-title" style="margin:4px 0;font-size:22px">Per-rank layout: {esc(s.model or "no model selected")}'
            f" &middot; {esc(framework_label(s.framework))} &middot; TP = {s.tp}</h2>"
            '<div style="font-size:15px;color:#444">One row per TP rank; each cell is a head the rank holds '
            "(global head index; <b>·r1</b> marks a KV head replicated from another rank, <b>pad</b> a dummy "
            "padding head).</div>"
        )
        obj, note = layout_object(s, self.data)
        self._notice.object = note
        self._notice.visible = bool(note)
        self._plot.object = obj

    def _csv(self):
        import io

        buf = io.StringIO()
        df = layout_table(self.state, self.data)
        if df is not None:
            df = df.copy()
            df.insert(0, "tp", self.state.tp)
            df.insert(0, "framework", self.state.framework)
            df.insert(0, "model_id", self.state.model)
            csv_safe(df).to_csv(buf, index=False)
        else:  # never an empty file: say why there is no layout
            import pandas as pd

            note = ("no per-rank layout: " + ("no model selected" if not self.state.model else
                    "the model is not in the catalog, its config could not be read, or the framework cannot "
                    "lay out its heads at this TP size (the Per-rank layout tab says which)"))
            csv_safe(pd.DataFrame([{"model_id": self.state.model, "framework": self.state.framework,
                                    "tp": self.state.tp, "note": note}])).to_csv(buf, index=False)
        buf.seek(0)
        return buf

    def __panel__(self):
        return pn.Column(self._header, self._notice, self._scroll, self.csv, sizing_mode="stretch_width",
                         styles={"min-width": "0", "max-width": "100%"})
