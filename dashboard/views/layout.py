"""Per-rank layout view: which query, KV, linear-attention and vision heads each TP rank holds."""

from __future__ import annotations

import panel as pn
import param

from dashboard import plots
from dashboard.state import AppData, PlannerState
from dashboard.views.common import esc, notice_html


def layout_object(state: PlannerState, data: AppData, *, compact: bool = False):
    """(HoloViews element or None, notice html or "") for the selected (model, framework, TP)."""
    if not state.model:
        return None, notice_html("Tap a heatmap cell or pick a model to see how its heads land on each rank.")
    rec = data.record(state.model)
    if rec is None:
        return None, notice_html(f"Model {state.model} is not in the catalog.", "warning")
    if rec.get("status") != "ok":
        return None, notice_html(
            f"{state.model}: config unreadable ({rec.get('status')}: {rec.get('status_reason') or ''}); no layout.",
            "warning",
        )
    try:
        from dashboard import layout as layout_mod
    except ImportError:
        return None, notice_html("Per-rank layout is not available: dashboard.layout is not installed yet.", "warning")
    try:
        df = layout_mod.rank_layout(rec, state.framework, state.tp, dp=state.dp, dp_attention=state.dp_attention)
    except Exception as exc:  # noqa: BLE001 -- the layout module refuses impossible layouts with a reason
        return None, notice_html(
            f"No per-rank layout for {state.model} on {plots.framework_label(state.framework)} at TP={state.tp}: {exc}",
            "warning",
        )
    frame = plots.layout_frame(df)
    # Short titles: the model id is in the heading above the plot (and in the details column).
    title = f"{plots.framework_label(state.framework)}, TP = {state.tp}"
    if compact:
        return plots.layout_plot(frame, f"Heads per rank, TP = {state.tp}", max_width=360), ""
    return plots.layout_plot(frame, title), ""


class LayoutView(pn.viewable.Viewer):
    """Ranks x heads grid of the selected (model, framework, TP)."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        self._header = pn.pane.HTML(sizing_mode="stretch_width")
        self._notice = pn.pane.HTML(sizing_mode="stretch_width")
        self._plot = pn.pane.HoloViews(None, css_classes=["tp-layout-plot"])
        self.state.param.watch(self._refresh, ["model", "framework", "tp", "dp", "dp_attention"])
        self._refresh()

    def _refresh(self, *_):
        s = self.state
        self._header.object = (
            f'<h2 class="tp-layout-title" style="margin:4px 0">Per-rank layout: {esc(s.model or "no model selected")}'
            f" &middot; {esc(plots.framework_label(s.framework))} &middot; TP = {s.tp}</h2>"
            '<div style="font-size:15px;color:#444">One row per TP rank; each cell is a head the rank holds '
            "(global head index; <b>·r1</b> marks a KV head replicated from another rank, <b>pad</b> a dummy "
            "padding head).</div>"
        )
        obj, note = layout_object(s, self.data)
        self._notice.object = note
        self._notice.visible = bool(note)
        self._plot.object = obj

    def __panel__(self):
        return pn.Column(self._header, self._notice, self._plot, sizing_mode="stretch_width")
