"""Validity view: one heatmap of models x TP sizes, a column group per selected framework (or one group
where they disagree), tap for details.

The heatmap is a plain Bokeh figure (:func:`dashboard.plots.heatmap.heatmap_figure`) whose nested
(framework, TP) columns fit side by side on a 1920 px screen. It shows
:data:`dashboard.plots.heatmap.VISIBLE_ROWS` model rows at a time and scrolls through the rest inside the
plot (mouse wheel or drag). The browser holds only the cells of the rows in view plus a margin: when the
view scrolls past them, the server sends the next window of rows
(:func:`dashboard.plots.heatmap.window_rows`), so a control change costs the same on a 500-model catalog as
on a 30-model one. On a narrower screen (1280-1900 px projectors and laptops) the figure keeps its size
(never fewer than :data:`dashboard.plots.heatmap.MIN_COL_PX` pixels per TP column): the "Selected cell"
column wraps below the heatmap when both do not fit side by side, and the heatmap area scrolls sideways when
the heatmap alone is wider than the page. A tap on a cell (a Bokeh ``Tap`` event: the TP column and model
row under the pointer) selects it; the session state then outlines the selected cell in the column group
that shows it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import panel as pn
import param

from dashboard import frameworks as _frameworks
from dashboard.plots import heatmap
from dashboard.state import (
    VERSION_PARAMS,
    AppData,
    PlannerState,
    filter_models,
    state_gpu_args,
    state_platform,
    state_version,
)
from dashboard.views.common import esc, notice_html, when_shown
from dashboard.views.details import CellDetails, fw_label

#: Most models drawn at once; beyond that the user narrows with the filter.
MAX_ROWS = 400
#: Width of the "Selected cell" column (pixels).
DETAILS_PX = 380

_WATCHED = ["search", "sort", "models", "frameworks", "disagreement", "tp_sizes", "pp", "dp", "ep", "dp_attention", "gpu",
            "vllm_version", "sglang_version"]


def platform_note(gpu: str, platform: str | None, releases: list[tuple[str, str | None]] = ()) -> str:
    """The sentence under the heatmap saying which GPU its executed verdicts ran as (plain text).
    ``releases``: the (framework, version) pairs shown; the tables of those that were run as ``platform``
    (the sidebar GPU's, :func:`dashboard.gpus.platform_of`) back it, else the default tables
    (:data:`dashboard.rules.evidence.DEFAULT_TABLE_PLATFORM`) and the note says the verdicts are their rules,
    read from source for this GPU."""
    from dashboard.rules import evidence, resolve_version

    ran = evidence.platform_words(evidence.DEFAULT_TABLE_PLATFORM)
    if platform is None or platform == evidence.DEFAULT_TABLE_PLATFORM:
        return f"The conformance tables behind the executed verdicts ran {ran}."
    if platform == "unknown":  # dashboard.gpus.UNKNOWN_PLATFORM: a card given by its memory
        return (f"The family of {gpu} is unknown (a card given by its memory): the verdicts are judged as on the tables "
                f"run {ran}, and none was executed on this card.")
    from dashboard import schema

    here, elsewhere = [], []
    for fw, ver in releases:
        rel = resolve_version(fw, ver or None).release
        if evidence.table(fw, rel, platform) is not None:
            here.append(fw)
        elif evidence.table(fw, rel) is not None:
            elsewhere.append(fw)
    label = lambda fws: " and ".join(schema.FRAMEWORK_LABELS.get(f, f) for f in fws)  # noqa: E731
    if here:
        out = f"Executed {label(here)} verdicts for {gpu} come from the tables run {evidence.platform_words(platform)}."
        if elsewhere:
            out += (f" {label(elsewhere)} {'was' if len(elsewhere) == 1 else 'were'} not run as this GPU: "
                    f"{'its' if len(elsewhere) == 1 else 'their'} verdicts are the rules checked {ran}, read from "
                    "source for this GPU.")
        return out
    return (f"Your GPU, {gpu} ({platform}), was never run through the conformance harness: the verdicts are the "
            f"rules checked {ran}, read from source for this GPU.")


def _grid_key(state: PlannerState, key: str) -> tuple:
    """The settings heatmap ``key``'s cells depend on: PP / DP / EP / DP-attention, and the vLLM and SGLang
    releases, each only when its framework is among the heatmap's (so other frameworks' cached cells
    survive a version change, and a release nobody asked for is never computed)."""
    fws = tuple(state.frameworks) if key == "disagreement" else (key,)
    versions = tuple((state_version(state, fw) if fw in fws else None) for fw in VERSION_PARAMS)
    gpu = state_gpu_args(state)
    keyed = any(_frameworks.get(fw).platform_keyed_rules for fw in fws)
    # one grid per platform, not per card: the heatmap's hover text names the platform's stand-in card where a
    # message prints the device (the details pane's check names the user's card); other frameworks: one grid
    # for every GPU. Bounded: at most one part per platform.
    plat = (gpu["platform"], None) if keyed else (None, None)
    return (state.pp, state.dp, state.ep, bool(state.dp_attention), *plat, *versions)


def group_label(key: str, frameworks: tuple[str, ...] = ()) -> str:
    """The column-group label of heatmap ``key``: the framework's (short) label, or for "disagreement" the
    frameworks compared ("vLLM vs SGLang"; "4 frameworks" beyond three)."""
    if key != "disagreement":
        return heatmap.short_framework_label(key)
    names = [heatmap.short_framework_label(f) for f in frameworks]
    return " vs ".join(names) if len(names) <= 3 else f"{len(names)} frameworks"


def heatmap_cube(data: AppData, state: PlannerState, key: str) -> tuple:
    """Every cell of one heatmap over the whole catalog x :data:`dashboard.state.TP_CHOICES`, computed once
    per process (read-only): ``(frame, source, model_pos, tp_pos)`` where ``frame`` is the
    :func:`dashboard.plots.heatmap.heatmap_frame` (or :func:`dashboard.plots.heatmap.disagreement_frame` for
    ``key == "disagreement"``) in model-major order, ``source`` its
    :func:`dashboard.plots.heatmap.heatmap_source_data`, and ``model_pos`` / ``tp_pos`` map a model id / TP size
    to its position. Any selection of models and TP sizes is then an index into these arrays
    (:func:`cell_frame`, :func:`cell_source`), so a control change never re-runs the pandas work."""
    from dashboard.state import TP_CHOICES

    gkey = _grid_key(state, key)
    fws = tuple(state.frameworks) if key == "disagreement" else ()

    def build():
        grid = data.grid(pp=gkey[0], dp=gkey[1], ep=gkey[2], dp_attention=gkey[3], platform=gkey[4],
                         device_name=gkey[5], **dict(zip(VERSION_PARAMS.values(), gkey[6:])), frameworks=fws or (key,))
        models, tps = list(data.model_ids), [int(t) for t in TP_CHOICES]
        if key == "disagreement":
            frame, colors = heatmap.disagreement_frame(grid, fws, models, tps), heatmap.DISAGREE_COLORS
        else:
            frame, colors = heatmap.heatmap_frame(grid, key, models, tps), heatmap.STATUS_COLORS
        # Model-major, in catalog x TP_CHOICES order (both builders produce it; reindex if ever not).
        want_m = np.repeat(np.asarray(models, dtype=object), len(tps))
        want_t = np.tile(np.asarray([str(t) for t in tps], dtype=object), len(models))
        if len(frame) != len(want_m) or not (np.array_equal(frame["model_id"].to_numpy(dtype=object), want_m)
                                             and np.array_equal(frame["tp"].to_numpy(dtype=object), want_t)):
            idx = pd.MultiIndex.from_arrays([want_m, want_t], names=["model_id", "tp"])
            frame = frame.drop_duplicates(["model_id", "tp"]).set_index(["model_id", "tp"]).reindex(idx).reset_index()
        frame = frame.reset_index(drop=True)
        source = heatmap.heatmap_source_data(frame, colors, tps=[str(t) for t in tps])
        return frame, source, {m: i for i, m in enumerate(models)}, {t: i for i, t in enumerate(tps)}

    return data.memo(("heatmap-cube", key, fws, gkey), build)


def _cells(data: AppData, state: PlannerState, key: str, models: list[str], tps: list[int]) -> tuple:
    """``(frame, source)`` of the cells (``models`` x ``tps``, model-major) of one heatmap (cached)."""
    gkey = _grid_key(state, key)
    fws = tuple(state.frameworks) if key == "disagreement" else ()

    def build():
        frame, source, mpos, tpos = heatmap_cube(data, state, key)
        mi = np.fromiter((mpos[m] for m in models), dtype=np.int64, count=len(models))
        ti = np.fromiter((tpos[int(t)] for t in tps), dtype=np.int64, count=len(tps))
        idx = (mi[:, None] * len(tpos) + ti[None, :]).ravel()
        sub = frame.iloc[idx].reset_index(drop=True)
        src = {k: v[idx] for k, v in source.items()}
        src["col"] = np.tile(np.arange(len(tps), dtype=np.int32), len(models))  # (position in the selection)
        row = np.repeat(np.arange(len(models), dtype=np.int32), len(tps))
        src["row"] = row
        src["y"] = -(row.astype("float64") + 0.5)
        src["ym"] = np.where(np.isnan(src["ym"]), np.nan, src["y"])
        return sub, src

    return data.memo(("heatmap-cells", key, fws, gkey, tuple(models), tuple(int(t) for t in tps)), build)


def cell_frame(data: AppData, state: PlannerState, key: str, models: list[str], tps: list[int]):
    """The (process-wide cached, read-only) cell frame of one heatmap: a framework id or "disagreement"."""
    return _cells(data, state, key, models, tps)[0]


def cell_source(data: AppData, state: PlannerState, key: str, models: list[str], tps: list[int]) -> dict:
    """The (process-wide cached, read-only) data-source columns of every cell of one heatmap
    (:func:`dashboard.plots.heatmap.heatmap_source_data` of :func:`cell_frame`); the figures get windows of it."""
    return _cells(data, state, key, models, tps)[1]


class ValidityView(pn.viewable.Viewer):
    """The validity heatmap (a column group per selected framework, or one disagreement group) + cell
    details."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        # width 0 / min-width 100%: the text fills the column but does not widen it (the column's
        # flex-basis is its content's width, which must be the heatmap's width alone).
        _fill = {"width": "0", "min-width": "calc(100% - 20px)"}
        self._summary = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-summary"], styles=_fill)
        self._legend = pn.pane.HTML(sizing_mode="stretch_width", margin=(0, 10), styles=_fill)
        self._plots = pn.Row(css_classes=["tp-heatmaps"], styles={"gap": "12px"})
        self._scroll = pn.Column(
            self._plots, sizing_mode="stretch_width", css_classes=["tp-heatmap-scroll"],
            styles={"overflow-x": "auto", "overflow-y": "hidden", "max-width": "100%"},
        )
        self._details = CellDetails(state=self.state, data=self.data)
        # The heatmap's column asks for the heatmap's full width (flex-basis, set in _update); the row
        # wraps the details column below it when the page is narrower than heatmap + details.
        self._main = pn.Column(self._summary, self._legend, self._scroll, sizing_mode="stretch_width",
                               css_classes=["tp-heatmap-col"])
        #: Cell frames currently shown, by framework id (or "disagreement"), left to right; for export
        #: and tests.
        self.frames: dict = {}
        #: The Bokeh figure (None when nothing is shown). Kept across changes: only its data, factors
        #: and sizes change.
        self.figure = None
        self._pane = None
        self._keys: list[str] = []
        self._groups: list[str] = []
        self._tps: list[str] = []
        self._models: list[str] = []
        self._row_of: dict[str, int] = {}
        self._y_range = None
        self._scrolling = False
        #: Full data-source columns of each column group (process-wide cache, read-only) and the rows
        #: ``[r0, r1)`` the browser holds now.
        self._sources: dict = {}
        self._window = (0, 0)
        self._rows = heatmap.VISIBLE_ROWS
        #: Width budget of the heatmap (pixels): :func:`dashboard.plots.heatmap.heatmap_budget` of the page's
        #: main area as the browser last reported it (:meth:`set_main_width`).
        self._budget = heatmap.HEATMAP_BUDGET_PX
        self._on_width = when_shown(self, "validity", self._refresh)
        self.state.param.watch(when_shown(self, "validity", self._refresh), _WATCHED)
        # a model added to this session's catalog ("Add a model"): new rows
        self.param.watch(lambda e: setattr(self._details, "data", e.new), "data")
        self.param.watch(when_shown(self, "validity", self._refresh), "data")
        self.state.param.watch(self._show_selection, ["model", "tp", "framework"])
        self.state.param.watch(lambda *_: self._reveal_model(), ["model"])
        self._refresh()
        self._reveal_model()

    # -------------------------------------------------------------------------------------------
    def set_main_width(self, px) -> None:
        """The page's main area is ``px`` pixels wide (reported by the browser on load, on resize and when
        the sidebar opens or closes): fit the heatmap to it (:func:`dashboard.plots.heatmap.heatmap_budget`)."""
        budget = heatmap.heatmap_budget(px)
        if budget != self._budget:
            self._budget = budget
            self._on_width()

    def _refresh(self, *_):
        """Show the state's heatmap: one document hold, so the browser gets one patch per change."""
        with pn.io.hold():
            self._update()

    def _clear(self, summary: str) -> None:
        self.frames, self._sources, self._keys, self._groups = {}, {}, [], []
        self._summary.object = summary
        self._legend.object = ""
        if self._scroll.visible:
            self._scroll.visible = False

    def _update(self) -> None:
        """Update the heatmap in place: the figure keeps its Bokeh models; its data source's ``.data``
        (the cells of the rows in the window), and its factors, sizes and model names when they change,
        are replaced."""
        s, d = self.state, self.data
        models = filter_models(s, d)
        truncated = len(models) > MAX_ROWS
        models = models[:MAX_ROWS]
        tps = sorted(s.tp_sizes)
        same_models = models == self._models
        self._models = models
        self._row_of = {m: i for i, m in enumerate(models)}
        if not models or not tps or not s.frameworks:
            what = ("No models match the filter: widen it." if not models else
                    "No TP sizes are selected: tick some under TP SIZES." if not tps else
                    "No frameworks are selected: tick some under FRAMEWORKS.")
            self._clear(notice_html(what, "warning"))
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
        self.frames, self._sources, self._keys = frames, sources, keys
        self._groups = [group_label(k, tuple(s.frameworks)) for k in keys]
        self._tps = [str(t) for t in tps]
        label_px = heatmap.ylabel_px(models)
        # (A heatmap that widened past the budget keeps its width on a wide page only: on a narrow one it
        # would stay wider than the page.)
        keep = (self.figure.frame_width if (self.figure is not None and same_models
                                            and self._budget == heatmap.HEATMAP_BUDGET_PX) else None)
        geo = heatmap.heatmap_geometry(len(models), len(tps), len(keys), label_px, budget=self._budget,
                                       keep_width=keep)
        if self._y_range is None:
            self._y_range = heatmap.heatmap_y_range(len(models), geo["rows"])
            self._y_range.on_change("start", self._on_scroll)
            self._y_range.on_change("end", self._on_scroll)
        else:
            self._scrolling = True  # (our own range change: the window is set just below)
            try:
                heatmap.set_y_range(self._y_range, len(models), geo["rows"], keep_top=same_models)
            finally:
                self._scrolling = False
        self._rows = geo["rows"]
        self._window = heatmap.window_rows(self._y_range.start, self._y_range.end, len(models))
        if disagreement:
            names = ", ".join(fw_label(s, f) for f in s.frameworks)
            style = {"colors": heatmap.DISAGREE_COLORS, "labels": heatmap.DISAGREE_LABELS,
                     "markers": heatmap.DISAGREE_MARKERS, "tooltip": heatmap.DISAGREE_TOOLTIP}
            title = "Where frameworks disagree"
            frame = frames["disagreement"]
            n_dis = int((frame["status"] == "disagree").sum())
            summary = (
                f"<b>{len(models)}</b> models &times; <b>{len(tps)}</b> TP sizes: {esc(names)} disagree on "
                f"<b>{n_dis}</b> of {len(frame)} cells."
            )
            legend = heatmap.legend_html(heatmap.DISAGREE_COLORS, heatmap.DISAGREE_LABELS, heatmap.DISAGREE_MARKERS)
        else:
            style = {"colors": heatmap.STATUS_COLORS, "labels": heatmap.STATUS_LABELS,
                     "markers": heatmap.STATUS_MARKERS, "tooltip": heatmap.VALIDITY_TOOLTIP}
            title = "Valid TP sizes"
            parts = []
            for fw in keys:
                frame = frames[fw]
                n_ok = int(frame["status"].isin(["valid", "valid_replicated", "valid_padded"]).sum())
                parts.append(f"{esc(fw_label(s, fw))} accepts <b>{n_ok}</b>/{len(frame)}")
            summary = f"<b>{len(models)}</b> models &times; <b>{len(tps)}</b> TP sizes. " + "; ".join(parts) + "."
            if s.disagreement:
                summary += " (Pick two or more frameworks for the disagreement view.)"
            legend = heatmap.legend_html()
        window = self._window_data()
        if self.figure is None:
            self.figure = heatmap.heatmap_figure(
                {g: frames[k] for g, k in zip(self._groups, keys, strict=True)}, title, geometry=geo,
                y_range=self._y_range, source_data=window, models=models, tps=self._tps, **style)
            self.figure.css_classes = ["tp-heatmap"]
            self._pane = self._make_pane(self.figure)
            self._plots.objects = [self._pane]
        else:
            heatmap.update_heatmap(self.figure, title, window, groups=self._groups, tps=self._tps, models=models,
                                   geometry=geo, **style)
        if not self._scroll.visible:
            self._scroll.visible = True
        if truncated:
            summary += f" Showing the first {MAX_ROWS} models: narrow the filter to see the rest."
        if len(models) > geo["rows"]:
            summary += (f" {geo['rows']} rows are shown at a time: scroll the heatmap with the mouse wheel or "
                        "drag it up and down.")
        summary += (" Hover a cell for each framework's verdict" if disagreement else
                    " Hover a cell for every failing rule's message")
        summary += "; tap it for details and the per-rank layout."
        summary += " " + esc(platform_note(s.gpu, state_platform(s), [(fw, state_version(s, fw)) for fw in s.frameworks
                                                                        if fw in VERSION_PARAMS]))
        summary = f'<div style="font-size:16px">{summary}</div>'
        if self._summary.object != summary:
            self._summary.object = summary
        if self._legend.object != legend:
            self._legend.object = legend
        self._show_selection()
        if not same_models:
            self._reveal_model()
        needed = geo["width"] + 34
        styles = {"flex": f"1 1 {needed}px", "min-width": "0"}
        if self._main.styles != styles:
            self._main.styles = styles

    def _reveal_model(self) -> None:
        """Scroll the heatmap so the selected model's row is in view (a pick in the model box, a link
        with ``model=``); nothing when it is already in view or not shown."""
        row = self._row_of.get(self.state.model) if self.state.model else None
        if row is None or self._y_range is None or self.figure is None:
            return
        rows, n = self._rows, len(self._models)
        top = int(round(-float(self._y_range.end)))
        if top <= row < top + rows:
            return
        new_top = max(0, min(n - rows, row - rows // 3))
        with pn.io.hold():
            self._scrolling = True  # (our own move: the window is loaded just below)
            try:
                self._y_range.update(start=-float(new_top + rows), end=-float(new_top))
            finally:
                self._scrolling = False
            # (the browser updates this title itself when the user scrolls; this move is the server's)
            self.figure.yaxis[0].axis_label = heatmap.rows_label(self._y_range.start, self._y_range.end, n)
            # Load the rows now in view. (Not left to _on_scroll: in a served session Panel sends the
            # changes made under a hold straight to the browser, and Bokeh never calls the range's
            # Python on_change callbacks for them.)
            self._window = heatmap.window_rows(self._y_range.start, self._y_range.end, n)
            heatmap.set_window(self.figure, self._window_data())

    def _window_data(self) -> dict:
        r0, r1 = self._window
        return heatmap.concat_source_data([heatmap.window_data(self._sources[k], r0, r1) for k in self._keys],
                                          n_tp=len(self._tps))

    def _on_scroll(self, attr, _old, new) -> None:
        """The model axis moved (the user scrolled): send the window of rows around the new view if the
        rows in view are not all loaded yet. The view's height in rows is fixed (the range's interval), so
        the changed end alone places it (a move arrives as a change of ``start`` then of ``end``)."""
        if self._scrolling or self._y_range is None or self.figure is None or not self._keys:
            return
        n, rows = len(self._models), self._rows
        try:
            new = float(new)
        except (TypeError, ValueError):
            return
        lo, hi = (new, new + rows) if attr == "start" else (new - rows, new)
        top, bottom = heatmap.window_rows(lo, hi, n, margin=0)
        r0, r1 = self._window
        if r0 <= top and bottom <= r1:
            return
        self._window = heatmap.window_rows(lo, hi, n)
        with pn.io.hold():
            heatmap.set_window(self.figure, self._window_data())

    def _make_pane(self, fig) -> pn.pane.Bokeh:
        from bokeh.events import Tap

        fig.on_event(Tap, lambda event: self._on_fig_tap(event.x, event.y))
        return pn.pane.Bokeh(fig, styles={"flex": "none"})

    def _on_fig_tap(self, x, y) -> None:
        """A tap at data coordinates: ``x`` synthetic on the nested factor axis
        (:func:`dashboard.plots.heatmap.tap_column`), ``y`` in rows (row ``r`` spans ``(-(r + 1), -r]``)."""
        hit = heatmap.tap_column(x, self._groups, self._tps)
        if hit is None or y is None:
            return
        try:
            row = int(math.floor(-float(y)))
        except (TypeError, ValueError, OverflowError):
            return
        g, tp = hit
        if 0 <= row < len(self._models) and 0 <= g < len(self._keys):
            self._on_tap(self._keys[g], tp, self._models[row])

    def _on_tap(self, key: str, x, y) -> None:
        """Select the cell (TP ``x``, model ``y``) of column group ``key`` (a framework id or "disagreement")."""
        if x is None or y is None:
            return
        try:
            tp = int(str(x))
        except ValueError:
            return
        model = str(y)
        if model not in set(self.data.model_ids):
            return
        chosen = self.state.framework
        fw = key if key != "disagreement" else (chosen if chosen in self.state.frameworks
                                                else self.state.frameworks[0])
        self.state.param.update(model=model, tp=tp, framework=fw)
        self._show_selection()

    def _show_selection(self, *_):
        """Outline the selected cell in the column group that shows it (if any)."""
        if self.figure is None:
            return
        s = self.state
        row = self._row_of.get(s.model) if s.model else None
        cell = None
        if row is not None and str(s.tp) in self._tps and self._keys:
            if self._keys == ["disagreement"]:
                cell = (self._groups[0], str(s.tp))
            elif self._keys.count(s.framework):
                cell = (self._groups[self._keys.index(s.framework)], str(s.tp))
        heatmap.set_selected_cell(self.figure, cell, row if cell is not None else None)

    def selected_cell(self) -> tuple[str, str, str] | None:
        """The outlined cell: ``(key, model_id, tp)`` (key: framework id or "disagreement"), or None."""
        if self.figure is None:
            return None
        src = self.figure.renderers[2].data_source.data
        if not len(src["x"]):
            return None
        group, tp = src["x"][0]
        row = int(math.floor(-float(src["y"][0])))
        return self._keys[self._groups.index(group)], self._models[row], str(tp)

    def __panel__(self):
        return pn.Row(
            self._main,
            # The details take the free width: beside the heatmap when both fit (at least DETAILS_PX),
            # else the whole width below it; never a nested scroll (the suggestions stay in view).
            pn.Column(
                pn.pane.HTML('<h2 style="margin:4px 0;font-size:22px">Selected cell</h2>'),
                self._details,
                sizing_mode="stretch_width",
                styles={"flex": f"1 1 {DETAILS_PX}px", "min-width": f"min({DETAILS_PX}px, 100%)", "width": "auto"},
                css_classes=["tp-details-col"],
            ),
            sizing_mode="stretch_width",
            styles={"flex-wrap": "wrap", "row-gap": "16px"},
            css_classes=["tp-validity-row"],
        )
