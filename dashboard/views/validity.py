"""Validity view: heatmaps of models x TP sizes per framework (or where they disagree), tap for details."""

from __future__ import annotations

import holoviews as hv
import panel as pn
import param

from dashboard import plots
from dashboard.state import AppData, PlannerState, filter_models
from dashboard.views.common import esc, notice_html
from dashboard.views.details import CellDetails

#: Most models drawn at once; beyond that the user narrows with the filter.
MAX_ROWS = 400

_WATCHED = ["search", "models", "frameworks", "disagreement", "tp_sizes", "pp", "dp", "ep", "dp_attention"]


class ValidityView(pn.viewable.Viewer):
    """One heatmap per selected framework side by side (or one disagreement heatmap) + cell details."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        self._summary = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-summary"])
        self._plots = pn.Row(css_classes=["tp-heatmaps"], styles={"gap": "12px"})
        self._scroll = pn.Column(
            self._plots, sizing_mode="stretch_width", css_classes=["tp-heatmap-scroll"],
            styles={"max-height": "calc(100vh - 190px)", "overflow": "auto"},
        )
        self._details = CellDetails(state=self.state, data=self.data)
        self._taps: list[hv.streams.Tap] = []
        #: HoloViews objects currently shown, by framework id (or "disagreement"); for export and tests.
        self.current: dict[str, hv.Element] = {}
        self.state.param.watch(self._refresh, _WATCHED)
        self._refresh()

    # -------------------------------------------------------------------------------------------
    def _refresh(self, *_):
        s, d = self.state, self.data
        models = filter_models(s, d)
        truncated = len(models) > MAX_ROWS
        models = models[:MAX_ROWS]
        tps = sorted(s.tp_sizes)
        for t in self._taps:
            t.clear()
        self._taps = []
        self.current = {}
        if not models or not tps or not s.frameworks:
            what = "models match the filter" if not models else ("TP sizes are selected" if not tps else "frameworks are selected")
            self._summary.object = notice_html(f"No {what}: widen the filter or pick some.", "warning")
            self._plots.objects = []
            return
        try:
            grid = d.grid(pp=s.pp, dp=s.dp, ep=s.ep, dp_attention=s.dp_attention)
        except Exception as exc:  # noqa: BLE001 -- a broken rules engine must not blank the page
            self._summary.object = notice_html(f"The rules engine failed: {exc}", "error")
            self._plots.objects = []
            return
        panes = []
        if s.disagreement and len(s.frameworks) >= 2:
            frame = plots.disagreement_frame(grid, s.frameworks, models, tps)
            obj = plots.disagreement_heatmap(frame, s.frameworks)
            self.current["disagreement"] = obj
            panes.append(self._pane(obj, "disagreement"))
            n_dis = int((frame["status"] == "disagree").sum())
            summary = (
                f"<b>{len(models)}</b> models &times; <b>{len(tps)}</b> TP sizes: the selected frameworks disagree on "
                f"<b>{n_dis}</b> of {len(frame)} cells. Numbers in cells: how many frameworks accept."
            )
        else:
            parts = []
            for i, fw in enumerate(s.frameworks):
                frame = plots.heatmap_frame(grid, fw, models, tps)
                obj = plots.validity_heatmap(frame, fw, with_yaxis=i == 0)
                self.current[fw] = obj
                panes.append(self._pane(obj, fw))
                n_ok = int(frame["status"].isin(["valid", "valid_replicated", "valid_padded"]).sum())
                parts.append(f"{esc(plots.framework_label(fw))} accepts <b>{n_ok}</b>/{len(frame)}")
            summary = f"<b>{len(models)}</b> models &times; <b>{len(tps)}</b> TP sizes. " + "; ".join(parts) + "."
            if s.disagreement:
                summary += " (Pick two or more frameworks for the disagreement view.)"
        if truncated:
            summary += f" Showing the first {MAX_ROWS} models: narrow the filter to see the rest."
        summary += " Hover a cell for every failing rule's message; tap it for details and the per-rank layout."
        self._summary.object = f'<div style="font-size:16px">{summary}</div>'
        self._plots.objects = panes

    def _pane(self, obj, key: str) -> pn.pane.HoloViews:
        hm = obj.get(0) if isinstance(obj, hv.Overlay) else obj
        tap = hv.streams.Tap(source=hm, x=None, y=None)
        tap.add_subscriber(lambda x, y, _key=key: self._on_tap(_key, x, y))
        self._taps.append(tap)
        plot_opts = hm.opts.get("plot").kwargs
        return pn.pane.HoloViews(obj, css_classes=["tp-heatmap", f"tp-heatmap-{key}"],
                                 width=plot_opts.get("width"), height=plot_opts.get("height"),
                                 sizing_mode="fixed", styles={"flex": "none"})

    def _on_tap(self, key: str, x, y) -> None:
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

    def __panel__(self):
        return pn.Row(
            pn.Column(self._summary, self._scroll, sizing_mode="stretch_width"),
            pn.Column(
                pn.pane.HTML('<h2 style="margin:4px 0">Selected cell</h2>'),
                self._details,
                width=420,
                styles={"max-height": "calc(100vh - 150px)", "overflow": "auto", "flex": "none"},
                css_classes=["tp-details-col"],
            ),
            sizing_mode="stretch_width",
        )
