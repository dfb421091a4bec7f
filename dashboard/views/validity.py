"""Validity view: heatmaps of models x TP sizes per framework (or where they disagree), tap for details.

The heatmaps are plain Bokeh figures (:func:`dashboard.plots.heatmap_figure`) sized so the selected
frameworks fit side by side on a 1920 px screen; only the first draws the model names and all share
one model axis. On a narrower screen (1280-1900 px projectors and laptops) the figures keep their size
(never fewer than :data:`dashboard.plots.MIN_COL_PX` pixels per TP column): the "Selected cell" column
wraps below the heatmaps when both do not fit side by side, and the heatmap area scrolls sideways when
the heatmaps alone are wider than the page. A tap selects the cell's row in the figure's data source; the session state then
outlines the selected cell (and only it) in whichever heatmap shows it.
"""

from __future__ import annotations

import panel as pn
import param

from dashboard import plots
from dashboard.state import AppData, PlannerState, filter_models
from dashboard.views.common import esc, notice_html
from dashboard.views.details import CellDetails

#: Most models drawn at once; beyond that the user narrows with the filter.
MAX_ROWS = 400
#: Width of the "Selected cell" column (pixels).
DETAILS_PX = 380

_WATCHED = ["search", "models", "frameworks", "disagreement", "tp_sizes", "pp", "dp", "ep", "dp_attention"]


def cell_frame(data: AppData, state: PlannerState, key: str, models: list[str], tps: list[int]):
    """The (process-wide cached, read-only) cell frame of one heatmap: a framework id or "disagreement"."""
    gkey = (state.pp, state.dp, state.ep, bool(state.dp_attention))
    fws = tuple(state.frameworks)
    mkey = ("heatmap", key, fws if key == "disagreement" else (), gkey, tuple(models), tuple(tps))

    def build():
        grid = data.grid(pp=gkey[0], dp=gkey[1], ep=gkey[2], dp_attention=gkey[3])
        if key == "disagreement":
            return plots.disagreement_frame(grid, fws, models, tps)
        return plots.heatmap_frame(grid, key, models, tps)

    return data.memo(mkey, build)


def cell_source(data: AppData, state: PlannerState, key: str, models: list[str], tps: list[int]) -> dict:
    """The (process-wide cached, read-only) data-source columns of one heatmap
    (:func:`dashboard.plots.heatmap_source_data` of :func:`cell_frame`)."""
    gkey = (state.pp, state.dp, state.ep, bool(state.dp_attention))
    fws = tuple(state.frameworks)
    mkey = ("heatmap-source", key, fws if key == "disagreement" else (), gkey, tuple(models), tuple(tps))
    colors = plots.DISAGREE_COLORS if key == "disagreement" else plots.STATUS_COLORS
    return data.memo(mkey, lambda: plots.heatmap_source_data(cell_frame(data, state, key, models, tps), colors))


class ValidityView(pn.viewable.Viewer):
    """One heatmap per selected framework side by side (or one disagreement heatmap) + cell details."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        # width 0 / min-width 100%: the text fills the column but does not widen it (the column's
        # flex-basis is its content's width, which must be the heatmaps' width alone).
        _fill = {"width": "0", "min-width": "calc(100% - 20px)"}
        self._summary = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-summary"], styles=_fill)
        self._legend = pn.pane.HTML(sizing_mode="stretch_width", margin=(0, 10), styles=_fill)
        self._plots = pn.Row(css_classes=["tp-heatmaps"], styles={"gap": "12px"})
        self._scroll = pn.Column(
            self._plots, sizing_mode="stretch_width", css_classes=["tp-heatmap-scroll"],
            styles={"max-height": "calc(100vh - 200px)", "overflow": "auto", "max-width": "100%"},
        )
        self._details = CellDetails(state=self.state, data=self.data)
        # The heatmaps' column asks for the heatmaps' full width (flex-basis, set in _refresh); the row
        # wraps the details column below it when the page is narrower than heatmaps + details.
        self._main = pn.Column(self._summary, self._legend, self._scroll, sizing_mode="stretch_width",
                               css_classes=["tp-heatmap-col"])
        #: Cell frames currently shown, by framework id (or "disagreement"); for export and tests.
        self.frames: dict = {}
        #: The Bokeh figures currently shown, by the same keys.
        self.figures: dict = {}
        self._models: list[str] = []
        #: One figure (and pane) per heatmap slot, reused across changes; the key each slot shows.
        self._figs: list = []
        self._panes: list = []
        self._slot_keys: list[str] = []
        self._y_range = None
        self._syncing = False
        self.state.param.watch(self._refresh, _WATCHED)
        self.state.param.watch(self._show_selection, ["model", "tp", "framework"])
        self._refresh()

    # -------------------------------------------------------------------------------------------
    def _refresh(self, *_):
        """Show the state's heatmaps: one document hold, so the browser gets one patch per change."""
        with pn.io.hold():
            self._update()

    def _clear(self, summary: str) -> None:
        self.frames, self.figures = {}, {}
        self._figs, self._panes, self._slot_keys = [], [], []
        self._summary.object = summary
        self._legend.object = ""
        self._plots.objects = []

    def _update(self) -> None:
        """Update the heatmaps in place: one figure per slot (framework, or the one disagreement map)
        keeps its Bokeh models; only its data source's ``.data``, and the shared model / TP factor
        ranges when they change, are replaced. Figures are added or removed only when the number of
        slots changes."""
        s, d = self.state, self.data
        models = filter_models(s, d)
        truncated = len(models) > MAX_ROWS
        models = models[:MAX_ROWS]
        tps = sorted(s.tp_sizes)
        self._models = models
        if not models or not tps or not s.frameworks:
            what = "models match the filter" if not models else ("TP sizes are selected" if not tps else "frameworks are selected")
            self._clear(notice_html(f"No {what}: widen the filter or pick some.", "warning"))
            return
        disagreement = s.disagreement and len(s.frameworks) >= 2
        keys = ["disagreement"] if disagreement else list(s.frameworks)
        frames, sources = {}, {}
        try:
            for k in keys:
                frames[k] = cell_frame(d, s, k, models, tps)
                sources[k] = cell_source(d, s, k, models, tps)
        except Exception as exc:  # noqa: BLE001 -- a broken rules engine must not blank the page
            self._clear(notice_html(f"The rules engine failed: {exc}", "error"))
            return
        self.frames = frames
        geo = plots.heatmap_geometry(len(models), len(tps), len(keys), plots.ylabel_px(models))
        factors = models[::-1]  # Bokeh draws the first factor at the bottom: the first model on top
        if self._y_range is None:
            from bokeh.models import FactorRange

            self._y_range = FactorRange(factors=factors)  # shared by every heatmap
        elif list(self._y_range.factors) != factors:
            self._y_range.factors = factors
        tp_factors = [str(t) for t in tps]
        if disagreement:
            names = ", ".join(plots.framework_label(f) for f in s.frameworks)
            style = {"colors": plots.DISAGREE_COLORS, "labels": plots.DISAGREE_LABELS, "tooltip": plots.DISAGREE_TOOLTIP}
            titles = ["Where the frameworks disagree"]
            frame = frames["disagreement"]
            n_dis = int((frame["status"] == "disagree").sum())
            summary = (
                f"<b>{len(models)}</b> models &times; <b>{len(tps)}</b> TP sizes: {esc(names)} disagree on "
                f"<b>{n_dis}</b> of {len(frame)} cells. Numbers in cells: how many frameworks accept."
            )
            legend = plots.legend_html(plots.DISAGREE_COLORS, plots.DISAGREE_LABELS)
        else:
            style = {"colors": plots.STATUS_COLORS, "labels": plots.STATUS_LABELS, "tooltip": plots.VALIDITY_TOOLTIP}
            titles = [plots.framework_label(fw) for fw in keys]
            parts = []
            for fw in keys:
                frame = frames[fw]
                n_ok = int(frame["status"].isin(["valid", "valid_replicated", "valid_padded"]).sum())
                parts.append(f"{esc(plots.framework_label(fw))} accepts <b>{n_ok}</b>/{len(frame)}")
            summary = f"<b>{len(models)}</b> models &times; <b>{len(tps)}</b> TP sizes. " + "; ".join(parts) + "."
            if s.disagreement:
                summary += " (Pick two or more frameworks for the disagreement view.)"
            legend = plots.legend_html()
        if self._figs and list(self._figs[0].x_range.factors) != tp_factors:
            # Measured (scripts/bench_ui.py, 500 models): BokehJS repaints an existing figure whose TP
            # factors, frame width and data all change more slowly (p50 ~3.0 s) than it builds a new one
            # (~1.5 s), so a TP-size change rebuilds the figures; every other change updates them in place.
            self._figs, self._panes = [], []
        n_before = len(self._figs)
        for i, (key, title) in enumerate(zip(keys, titles, strict=True)):
            if i < len(self._figs):
                fig = self._figs[i]
                plots.update_heatmap(fig, title, sources[key], geometry=geo, tps=tp_factors, **style)
            else:
                fig = plots.heatmap_figure(frames[key], title, geometry=geo, with_yaxis=i == 0,
                                           y_range=self._y_range, source_data=sources[key], **style)
                self._figs.append(fig)
                self._panes.append(self._pane(fig, i))
            # The Bokeh pane hands the figure itself to the page: the classes go on the figure.
            classes = ["tp-heatmap", f"tp-heatmap-{key}"]
            if list(fig.css_classes) != classes:
                fig.css_classes = classes
        del self._figs[len(keys):], self._panes[len(keys):]
        self._slot_keys = keys
        self.figures = dict(zip(keys, self._figs, strict=True))
        if truncated:
            summary += f" Showing the first {MAX_ROWS} models: narrow the filter to see the rest."
        summary += " Hover a cell for every failing rule's message; tap it for details and the per-rank layout."
        self._summary.object = f'<div style="font-size:16px">{summary}</div>'
        self._legend.object = legend
        self._show_selection()
        if (len(self._figs) != n_before or len(self._plots.objects) != len(self._panes)
                or any(a is not b for a, b in zip(self._plots.objects, self._panes))):
            self._plots.objects = list(self._panes)
        n = len(keys)
        needed = geo["first_width"] + (n - 1) * geo["width"] + (n - 1) * 12 + n * 10 + 24
        styles = {"flex": f"1 1 {needed}px", "min-width": "0"}
        if self._main.styles != styles:
            self._main.styles = styles

    def _pane(self, fig, slot: int) -> pn.pane.Bokeh:
        source = fig.renderers[0].data_source
        source.selected.on_change("indices", lambda _attr, _old, new, _slot=slot: self._on_slot_select(_slot, new))
        return pn.pane.Bokeh(fig, styles={"flex": "none"})

    def _on_slot_select(self, slot: int, indices) -> None:
        if 0 <= slot < len(self._slot_keys):
            self._on_select(self._slot_keys[slot], indices)

    def _on_select(self, key: str, indices) -> None:
        if self._syncing or not indices:
            return
        frame = self.frames.get(key)
        i = int(indices[-1])
        if frame is None or not 0 <= i < len(frame):
            return
        self._on_tap(key, frame["tp"].iat[i], frame["model_id"].iat[i])

    def _on_tap(self, key: str, x, y) -> None:
        """Select the cell (TP ``x``, model ``y``) of heatmap ``key`` (a framework id or "disagreement")."""
        if x is None or y is None:
            return
        try:
            tp = int(str(x))
        except ValueError:
            return
        model = str(y)
        if model not in set(self.data.model_ids):
            return
        fw = key if key != "disagreement" else (self.state.framework if self.state.framework in self.state.frameworks
                                                else self.state.frameworks[0])
        self.state.param.update(model=model, tp=tp, framework=fw)
        self._show_selection()

    def _show_selection(self, *_):
        """Outline the selected cell in the heatmap that shows it; clear every other selection."""
        s = self.state
        self._syncing = True
        try:
            for key, fig in self.figures.items():
                frame = self.frames[key]
                want: list[int] = []
                if s.model and (key == s.framework or key == "disagreement"):
                    hit = (frame["model_id"] == s.model) & (frame["tp"] == str(s.tp))
                    want = [int(i) for i in hit.to_numpy().nonzero()[0][:1]]
                sel = fig.renderers[0].data_source.selected
                if list(sel.indices) != want:
                    sel.indices = want
        finally:
            self._syncing = False

    def __panel__(self):
        return pn.Row(
            self._main,
            pn.Column(
                pn.pane.HTML('<h2 style="margin:4px 0">Selected cell</h2>'),
                self._details,
                width=DETAILS_PX,
                styles={"max-height": "calc(100vh - 150px)", "overflow": "auto", "flex": "none"},
                css_classes=["tp-details-col"],
            ),
            sizing_mode="stretch_width",
            styles={"flex-wrap": "wrap", "row-gap": "16px"},
            css_classes=["tp-validity-row"],
        )
