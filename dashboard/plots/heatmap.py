"""Validity heatmaps: DataFrames -> the Bokeh figure of the Validity tab, and the window machinery that
loads only the rows in view (no Panel, no widgets, no I/O).

:func:`heatmap_figure` is a plain Bokeh figure (thousands of cells, built per session, so no per-cell
Python work) with nested (framework, TP) columns and a numeric model axis; :func:`window_rows`,
:func:`window_data`, :func:`concat_source_data` and :func:`set_window` give the browser only the rows in
view. The heatmaps share one legend on the page (:func:`legend_html`) and their PNG export draws it
under the image (:data:`HEATMAP_FIGURE_NAME`, ``fig.tags``).

Untrusted strings (model ids, messages) reach the browser only as Bokeh data values: Bokeh draws axis
labels on the canvas and HTML-escapes ``@field`` values in tooltips (no ``{safe}`` format is used here),
so nothing from a config is ever interpreted as HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard.plots.style import FONT, TITLE_SIZE
from dashboard.plots.heatmap_cells import (  # noqa: F401  (re-exported: the heatmap's one face)
    DISAGREE_COLORS, DISAGREE_LABELS, DISAGREE_MARKERS, DISAGREE_TOOLTIP, HEATMAP_COLUMNS,
    HEATMAP_FIGURE_NAME, MARK_COLOR, SHORT_FRAMEWORK_LABELS, SOURCE_COLUMNS, STATUS_COLORS,
    STATUS_LABELS, STATUS_MARKERS, VALIDITY_TOOLTIP, browser_data, column_x, concat_source_data,
    disagreement_frame, heatmap_frame, heatmap_source_data, hover_texts, legend_html, legend_items,
    marker_svg, markers_for, set_window, short_framework_label, status_codes, window_data,
    window_rows)
from dashboard.plots.heatmap_axes import (  # noqa: F401  (re-exported: the heatmap's one face)
    COLUMN_JS, GROUP_PADDING, HEATMAP_BUDGET_PX, HEATMAP_TICK_SIZE, HIDE_TOOLTIP_JS, INFO_JS,
    INFO_SEPARATOR, MAIN_INSET_PX, MARKER_JS, MAX_COL_PX, MAX_LABEL_CHARS, MIN_BUDGET_PX,
    MIN_COL_PX, ROWS_LABEL_JS, ROW_LABEL_JS, ROW_NAME_JS, ROW_PX, SIZE_TOKEN, SNAP_ROWS_JS,
    VISIBLE_ROWS, WINDOW_MARGIN_ROWS, axis_fonts, heatmap_budget, heatmap_factors, heatmap_geometry,
    heatmap_units, row_labels, rows_label, short_label, tap_column, ylabel_px)
from dashboard.plots.style import framework_label  # noqa: F401


def _color_map(colors: Mapping[str, str]) -> dict:
    """``LinearColorMapper`` settings mapping status code ``k`` (:func:`status_codes`) to the ``k``-th
    colour of ``colors``."""
    return {"palette": list(colors.values()), "low": -0.5, "high": len(colors) - 0.5}


def _marker_list(colors: Mapping[str, str], markers: Mapping[str, str]) -> list[str]:
    """The mark of each status code ("" where none: those cells' ``ym`` is NaN, so nothing is drawn)."""
    return [str(markers.get(k, "") or "") for k in colors]


def _column_args(groups: Sequence[str], tps: Sequence[str]) -> dict:
    """Arguments of the hover's column formatter (:data:`COLUMN_JS`)."""
    return {"groups": [str(g) for g in groups], "tps": [str(t) for t in tps], "step": len(tps) + GROUP_PADDING}


def _empty_selection() -> dict[str, list]:
    return {"x": [], "y": []}


def heatmap_figure(
    frames: Mapping[str, pd.DataFrame] | pd.DataFrame,
    title: str,
    *,
    colors: dict[str, str] = STATUS_COLORS,
    labels: dict[str, str] = STATUS_LABELS,
    markers: dict[str, str] | None = None,
    tooltip: str = VALIDITY_TOOLTIP,
    geometry: dict[str, int] | None = None,
    y_range=None,
    source_data: dict | None = None,
    models: Sequence[str] | None = None,
    tps: Sequence[str] | None = None,
):
    """One Bokeh figure of models x (framework, TP size): a column group per framework side by side,
    each cell coloured by its status, with a mark in each cell that is not plainly valid.

    Built directly with Bokeh (one ColumnDataSource for every cell and its mark; no per-cell Python
    formatting). The x axis has nested factors ``(group, tp)`` (framework labels above their TP sizes);
    the model axis is numeric (row ``r`` centred at ``y = -(r + 0.5)``, the first model on top) with the
    model ids as its tick labels, so the figure can show a window of rows of a long catalog and scroll
    through it (the dashboard loads only the rows in view; see :func:`window_rows`).

    Parameters
    ----------
    frames : mapping of group label to DataFrame, or one DataFrame
        :func:`heatmap_frame` / :func:`disagreement_frame` outputs, one per column group, left to right
        (a single frame is one group labelled ``title``). Each has ``tp`` (str), ``model_id``,
        ``status`` (a key of ``colors``), ``verdict``, ``mark``, ``messages``; the head counts optional.
    title : str
        Plot title.
    geometry : dict, optional
        :func:`heatmap_geometry` output; default: every row shown.
    y_range : bokeh.models.Range1d, optional
        The model axis (:func:`heatmap_y_range`); default: every row, or ``geometry["rows"]`` from the top.
    source_data : dict, optional
        The cells to put in the data source (:func:`concat_source_data` of each group's
        :func:`heatmap_source_data`, or of windows of them); default: every cell of ``frames``.
    models, tps : sequences of str, optional
        Model ids in row order (the y-axis labels) and TP sizes in column order; default: those of the
        first frame.

    Returns
    -------
    bokeh.plotting.figure named :data:`HEATMAP_FIGURE_NAME`. ``fig.renderers[0]`` draws the cells (its
    data source holds :data:`SOURCE_COLUMNS`), ``fig.renderers[1]`` the marks (same source) and
    ``fig.renderers[2]`` the outline of the selected cell (a source with ``x`` and ``y``; empty when no
    cell is selected). The figure draws no legend (the page has one shared legend); ``fig.tags`` holds
    its ``[colour, label, marker]`` triples for the PNG export. It never shrinks below its fixed size
    (CSS ``flex: none``). Untrusted strings reach the browser only as data values: canvas text and
    ``@field`` tooltip values, which Bokeh HTML-escapes.
    """
    from bokeh.models import (ColumnDataSource, CustomJS, CustomJSHover, CustomJSTickFormatter, CustomJSTransform,
                              FactorRange, FixedTicker, HoverTool, LinearColorMapper, PanTool, Rect, Scatter,
                              WheelPanTool)
    from bokeh.plotting import figure

    markers = markers_for(colors, markers)
    if isinstance(frames, pd.DataFrame):
        frames = {title: frames}
    groups = list(frames)
    first = next(iter(frames.values())) if frames else pd.DataFrame(columns=["model_id", "tp"])
    models = list(models) if models is not None else list(dict.fromkeys(first["model_id"]))
    tps = [str(t) for t in tps] if tps is not None else [str(t) for t in dict.fromkeys(first["tp"])]
    geo = geometry or heatmap_geometry(len(models), len(tps), len(groups), ylabel_px(models), visible_rows=None)
    if source_data is None:
        source_data = concat_source_data([heatmap_source_data(f, colors, markers, tps=tps) for f in frames.values()],
                                         n_tp=len(tps))
    cols, texts = browser_data(source_data)
    source = ColumnDataSource(data=cols, name="tp-cells")
    if y_range is None:
        y_range = heatmap_y_range(len(models), geo["rows"])
    fig = figure(
        name=HEATMAP_FIGURE_NAME,
        title=title,
        x_range=FactorRange(factors=heatmap_factors(groups, tps), group_padding=GROUP_PADDING,
                            factor_padding=0, range_padding=0),
        y_range=y_range,
        frame_width=geo["frame_width"],
        frame_height=geo["frame_height"],
        x_axis_location="above",
        tools="save,reset",
        toolbar_location="above",
        min_border_left=max(10, geo.get("label_px", 10)),
        min_border_right=20,
        min_border_bottom=4,
    )
    # Colour and mark from the status code: a colour map and a marker transform (a few bytes a change),
    # not a colour string and a marker name per cell.
    cmap = LinearColorMapper(name="tp-status-colors", **_color_map(colors))
    rect = Rect(x="x", y="y", width=1, height=1, fill_color={"field": "code", "transform": cmap},
                line_color="white", line_width=1.5)
    cells = fig.add_glyph(source, rect)
    marks = CustomJSTransform(name="tp-status-marks", args={"markers": _marker_list(colors, markers)},
                              v_func=MARKER_JS)
    mark = Scatter(x="x", y="ym", marker={"field": "code", "transform": marks}, size=12, fill_color=None,
                   line_color=MARK_COLOR, line_width=2.4)
    fig.add_glyph(source, mark)
    sel = Rect(x="x", y="y", width=1, height=1, fill_color=None, line_color=MARK_COLOR, line_width=4)
    fig.add_glyph(ColumnDataSource(data=_empty_selection(), name="tp-selected"), sel)
    # attachment "horizontal": right of the pointer, or left of it near the right edge of the screen.
    hover = HoverTool(tooltips=tooltip, renderers=[cells], attachment="horizontal", formatters={
        "@y": CustomJSHover(args={"names": models}, code=ROW_NAME_JS),
        "@x": CustomJSHover(args=_column_args(groups, tps), code=COLUMN_JS),
        "@info": CustomJSHover(args={"texts": texts, "sep": INFO_SEPARATOR}, code=INFO_JS),
    })
    fig.add_tools(hover)
    # Rows beyond the window scroll (wheel or drag; the y range is bounded to the rows, so this is a no-op
    # when every row is shown).
    wheel, pan = WheelPanTool(dimension="height"), PanTool(dimensions="height")
    fig.add_tools(wheel, pan)
    fig.toolbar.active_scroll = wheel
    fig.toolbar.active_drag = pan
    # The browser need not report back what it computes for the figure (its pixel size) or the factor
    # range (its extent): each report is a message the server handles while the user waits. The model
    # axis (y_range) stays synced: scrolling it asks the server for rows.
    fig.syncable = False
    fig.x_range.syncable = False
    fig.toolbar.logo = None
    fig.title.text_font_size = TITLE_SIZE
    fig.title.text_font = FONT
    fig.outline_line_color = None
    fig.grid.visible = False
    fig.xaxis.axis_label = None
    top = fig.xaxis[0]
    fonts = axis_fonts(groups, len(tps), geo["col"])
    top.group_text_font_size = fonts["group"]
    top.group_text_font_style = "bold"
    top.group_text_color = "#222222"
    top.group_text_font = FONT
    top.separator_line_color = None
    for ax in (*fig.xaxis, *fig.yaxis):
        ax.major_label_text_font = FONT
        ax.axis_label_text_font = FONT
        ax.major_label_text_font_size = "11pt" if ax in fig.yaxis else fonts["tick"]
        ax.major_tick_line_color = None
        ax.minor_tick_line_color = None
        ax.axis_line_color = None
    top.axis_label = "tensor-parallel size (TP)"
    top.axis_label_standoff = 4
    top.axis_label_text_font_size = "12pt"
    top.axis_label_text_font_style = "normal"
    # One tick per row centre, labelled with the model's short_label (long ids keep their size). The
    # names and labels go to the browser as data (the formatter's args), never as code.
    fig.yaxis.ticker = FixedTicker(ticks=(-(np.arange(len(models)) + 0.5)).tolist(), minor_ticks=[])
    fig.yaxis.formatter = CustomJSTickFormatter(args={"names": models, "labels": row_labels(models)},
                                                code=ROW_LABEL_JS)
    # Where the view is in a long list ("models 26–50 of 130"), kept up to date in the browser as it
    # scrolls (the axis does not report it back).
    yaxis = fig.yaxis[0]
    yaxis.syncable = False
    yaxis.axis_label_text_font = FONT
    yaxis.axis_label_text_font_size = "12pt"
    yaxis.axis_label_text_font_style = "normal"
    yaxis.axis_label_text_color = "#555555"
    yaxis.axis_label = rows_label(y_range.start, y_range.end, len(models))
    yaxis.tags = [len(models)]
    y_range.js_on_change("start", CustomJS(args={"ax": yaxis}, code=ROWS_LABEL_JS))
    y_range.js_on_change("end", CustomJS(code=SNAP_ROWS_JS))
    # A scroll moves other cells under a still pointer: hide the tooltip (the next pointer move shows the
    # cell now under it) rather than leave the previous cell's verdict on screen.
    y_range.js_on_change("start", CustomJS(args={"hover": hover}, code=HIDE_TOOLTIP_JS))
    # No legend inside the figure: the page shows one legend above the heatmap, and the PNG export
    # (dashboard.views.export.PNG_EXPORT_JS) draws these (colour, label, marker) under the image.
    fig.tags = legend_items(colors, labels, markers)
    # Never narrower than its frame: in a flex row a figure would otherwise be squeezed to a few px per
    # column on a narrow screen; the heatmap area scrolls sideways instead.
    fig.styles = {"flex": "none"}
    # A fixed outer width too: with only frame_width set, BokehJS sizes the figure to its container and
    # shrinks the frame to fit, squeezing the columns below MIN_COL_PX when many frameworks are shown.
    fig.width, fig.width_policy = geo["width"], "fixed"
    return fig


def heatmap_y_range(n_models: int, rows: int):
    """The model axis of a heatmap of ``n_models`` rows showing ``rows`` at a time, from the top: a
    ``Range1d`` from ``-rows`` to 0, bounded to ``[-n_models, 0]``."""
    from bokeh.models import Range1d

    n, rows = max(int(n_models), 1), max(1, min(int(rows), max(int(n_models), 1)))
    return Range1d(start=-float(rows), end=0.0, bounds=(-float(n), 0.0), reset_start=-float(rows), reset_end=0.0,
                   min_interval=float(rows), max_interval=float(rows), name="tp-model-rows")


def set_y_range(y_range, n_models: int, rows: int, keep_top: bool = False) -> None:
    """Point a :func:`heatmap_y_range` at ``n_models`` rows, ``rows`` at a time: from the top, or
    (``keep_top``) from the current top row when it still fits. Sets only what differs."""
    n, rows = max(int(n_models), 1), max(1, min(int(rows), max(int(n_models), 1)))
    top = 0.0
    if keep_top:
        top = float(np.floor(min(max(0.0, -float(y_range.end)), n - rows)))
    want = {"bounds": (-float(n), 0.0), "min_interval": float(rows), "max_interval": float(rows),
            "reset_start": -float(rows), "reset_end": 0.0, "start": -top - rows, "end": -top}
    changed = {k: v for k, v in want.items() if getattr(y_range, k) != v}
    if changed:
        y_range.update(**changed)


def update_heatmap(
    fig,
    title: str,
    source_data: dict,
    *,
    groups: Sequence[str],
    tps: Sequence[str],
    models: Sequence[str],
    geometry: dict[str, int],
    colors: dict[str, str] = STATUS_COLORS,
    labels: dict[str, str] = STATUS_LABELS,
    markers: dict[str, str] | None = None,
    tooltip: str = VALIDITY_TOOLTIP,
) -> None:
    """Show new cells in a :func:`heatmap_figure` in place (no new Bokeh models).

    Replaces the data source's ``.data`` with ``source_data`` and sets the title, x factors, frame size,
    y-axis labels, tooltip and legend tags only where they differ (Bokeh sends a change only for those;
    each layout change costs the browser a re-layout of the page). The model axis range is the caller's
    to update (:func:`set_y_range`). Call it inside one document hold so the browser gets one patch.
    """
    from bokeh.models import FixedTicker, HoverTool

    markers = markers_for(colors, markers)
    if fig.title.text != title:
        fig.title.text = title
    factors = heatmap_factors(groups, tps)
    if [tuple(f) for f in fig.x_range.factors] != factors:
        fig.x_range.factors = factors
    for attr in ("frame_width", "frame_height", "width"):
        if getattr(fig, attr) != geometry[attr]:
            setattr(fig, attr, geometry[attr])
    fonts = axis_fonts(groups, len(tps), geometry["col"])
    top = fig.xaxis[0]
    if top.group_text_font_size != fonts["group"]:
        top.group_text_font_size = fonts["group"]
    if top.major_label_text_font_size != fonts["tick"]:
        top.major_label_text_font_size = fonts["tick"]
    label_px = max(10, geometry.get("label_px", 10))
    if fig.min_border_left != label_px:
        fig.min_border_left = label_px
    yaxis = fig.yaxis[0]
    models = list(models)
    if list(yaxis.formatter.args.get("names", [])) != models:
        yaxis.ticker = FixedTicker(ticks=(-(np.arange(len(models)) + 0.5)).tolist(), minor_ticks=[])
        yaxis.formatter.args = {"names": models, "labels": row_labels(models)}
    label = rows_label(fig.y_range.start, fig.y_range.end, len(models))
    if yaxis.axis_label != label:
        yaxis.axis_label = label
    if yaxis.tags != [len(models)]:
        yaxis.tags = [len(models)]
    for tool in fig.toolbar.tools:  # (not fig.select: that walks every model of the figure)
        if isinstance(tool, HoverTool):
            if tool.tooltips != tooltip:
                tool.tooltips = tooltip
            fmt = tool.formatters.get("@y")
            if fmt is not None and list(fmt.args.get("names", [])) != models:
                fmt.args = {"names": models}
            fmt = tool.formatters.get("@x")
            args = _column_args(groups, tps)
            if fmt is not None and dict(fmt.args) != args:
                fmt.args = args
    cells, marks = fig.renderers[0].glyph, fig.renderers[1].glyph
    cmap, want = cells.fill_color.transform, _color_map(colors)
    if list(cmap.palette) != want["palette"] or (cmap.low, cmap.high) != (want["low"], want["high"]):
        cmap.update(**want)
    tr, want_marks = marks.marker.transform, _marker_list(colors, markers)
    if list(tr.args.get("markers", [])) != want_marks:
        tr.args = {"markers": want_marks}
    tags = legend_items(colors, labels, markers)
    if fig.tags != tags:
        fig.tags = tags
    set_window(fig, source_data)


def set_selected_cell(fig, x: tuple[str, str] | None = None, row: int | None = None) -> None:
    """Outline the cell at nested factor ``x`` = ``(group, tp)``, model row ``row`` of a
    :func:`heatmap_figure`, or none."""
    src = fig.renderers[2].data_source
    want = ({"x": [(str(x[0]), str(x[1]))], "y": [-(float(row) + 0.5)]} if x is not None and row is not None
            else _empty_selection())
    have = {k: [tuple(v) if isinstance(v, list) else v for v in vals] for k, vals in src.data.items()}
    if have != want:
        src.data = want
