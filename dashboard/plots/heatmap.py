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

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard.plots.style import FONT, TITLE_SIZE, framework_label

# Okabe-Ito palette (colour-blind safe).
STATUS_COLORS: dict[str, str] = {
    "valid": "#009E73",
    "valid_replicated": "#56B4E9",
    "valid_padded": "#E69F00",
    "invalid": "#D55E00",
    "unknown": "#BBBBBB",
}
STATUS_LABELS: dict[str, str] = {
    "valid": "valid",
    "valid_replicated": "valid, KV replicated",
    "valid_padded": "valid, padded",
    "invalid": "invalid (refused)",
    "unknown": "unknown",
}
DISAGREE_COLORS: dict[str, str] = {
    "all_valid": "#009E73",
    "disagree": "#CC79A7",
    "all_invalid": "#D55E00",
    "unknown": "#BBBBBB",
}
DISAGREE_LABELS: dict[str, str] = {
    "all_valid": "every framework accepts",
    "disagree": "frameworks disagree",
    "all_invalid": "every framework refuses",
    "unknown": "unknown",
}

#: Column-group labels of the validity heatmap where the full label is longer than a group of narrow
#: TP columns (the legend, summary, hover and details keep the full labels).
SHORT_FRAMEWORK_LABELS: dict[str, str] = {
    "transformers-native-tp": "transformers TP",
    "transformers-cb-cache": "transformers CB cache",
}


def short_framework_label(fw: str) -> str:
    """Label of a framework id above its column group in the validity heatmap."""
    return SHORT_FRAMEWORK_LABELS.get(fw, framework_label(fw))


#: Bokeh ``name`` of every validity / disagreement heatmap figure.
HEATMAP_FIGURE_NAME = "tp-validity-heatmap"

HEATMAP_COLUMNS = (
    "tp",
    "model_id",
    "status",
    "verdict",
    "mark",
    "message",
    "messages",
    "rule_id",
    "n_failures",
    "q_heads_per_rank",
    "kv_heads_per_rank",
    "kv_replicas",
)


def heatmap_frame(grid: pd.DataFrame, framework: str, models: Sequence[str], tp_sizes: Sequence[int]) -> pd.DataFrame:
    """One framework's cells, ready for :func:`validity_heatmap`.

    Parameters
    ----------
    grid : DataFrame
        Output of :func:`dashboard.rules.grid` (one row per model_id, framework, tp).
    framework : str
        Framework id.
    models : sequence of str
        Model ids in display order (top to bottom). Ids absent from the grid become ``unknown`` cells.
    tp_sizes : sequence of int
        TP sizes in display order (left to right).

    Returns
    -------
    DataFrame with :data:`HEATMAP_COLUMNS`: ``tp`` as string categories, one row per (model, tp),
    text columns as plain Python objects (HoloViews cannot reshape Arrow-backed strings).
    """
    models = list(models)
    tps = [int(t) for t in tp_sizes]
    sub = grid.loc[(grid["framework"] == framework) & grid["tp"].isin(tps) & grid["model_id"].isin(models)]
    full = pd.MultiIndex.from_product([models, tps], names=["model_id", "tp"]).to_frame(index=False)
    keep = [c for c in ("model_id", "tp", "status", "rule_id", "message", "messages", "n_failures",
                        "q_heads_per_rank", "kv_heads_per_rank", "kv_replicas", "valid") if c in sub.columns]
    sub = sub[keep].drop_duplicates(["model_id", "tp"])
    sub = sub.assign(model_id=sub["model_id"].astype(object), tp=sub["tp"].astype("int64"))
    df = full.merge(sub, on=["model_id", "tp"], how="left")
    status = df["status"].astype(object) if "status" in df else pd.Series(np.nan, index=df.index, dtype=object)
    status = status.where(status.isin(list(STATUS_COLORS)), "unknown")
    df["status"] = status
    for c in ("message", "messages", "rule_id"):
        if c not in df:
            df[c] = ""
        df[c] = df[c].astype(object).where(df[c].notna(), "").astype(str)
    for c in ("n_failures", "q_heads_per_rank", "kv_heads_per_rank", "kv_replicas"):
        if c not in df:
            df[c] = np.nan
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["verdict"] = df["status"].map(STATUS_LABELS)
    reps = df["kv_replicas"].fillna(1).astype(int)
    mark = df["status"].map({"valid": "✓", "invalid": "✗", "valid_padded": "pad", "unknown": "?"})
    mark = mark.where(df["status"] != "valid_replicated", "×" + reps.astype(str))
    df["mark"] = mark.fillna("")
    df["messages"] = np.where(df["messages"] == "", df["message"], df["messages"])
    df["messages"] = np.where(
        df["status"].isin(["valid", "valid_replicated", "valid_padded"]) & (df["messages"] == ""),
        "no rule refuses this layout",
        df["messages"],
    )
    df["tp"] = df["tp"].astype(str)
    out = df[list(HEATMAP_COLUMNS)].copy()
    for c in ("tp", "model_id", "status", "verdict", "mark", "message", "messages", "rule_id"):
        out[c] = out[c].astype(object)
    return out


#: Pixel width of the validity heatmap, model names included, on a 1920 px wide page (sidebar and
#: details column excluded). The cells share it: their width is the same after most control changes, so
#: the browser re-lays out nothing but the cells (see :func:`heatmap_geometry`).
HEATMAP_BUDGET_PX = 1086
#: Pixels of the page's main area (the template's ``#main``) that the heatmap cannot use: its padding
#: (30) and the margin the heatmap's column adds to the figure (34), plus a few for rounding.
MAIN_INSET_PX = 70
#: Smallest width budget a reported main-area width can give (a narrower page scrolls the heatmap area).
MIN_BUDGET_PX = 480


def heatmap_budget(main_px: float | None) -> int:
    """Width budget (pixels) of the validity heatmap on a page whose main area (beside the sidebar) is
    ``main_px`` wide, as the browser reports it: :data:`HEATMAP_BUDGET_PX` where that fits, else the
    main area less :data:`MAIN_INSET_PX` (at least :data:`MIN_BUDGET_PX`); ``None`` or junk: the default.
    On a 1366 px laptop with the sidebar open (a 1026 px main area) the heatmap then fits the page, the
    "Selected cell" column wrapping below it."""
    try:
        px = float(main_px)
    except (TypeError, ValueError):
        return HEATMAP_BUDGET_PX
    if not math.isfinite(px) or px <= 0:
        return HEATMAP_BUDGET_PX
    return int(min(HEATMAP_BUDGET_PX, max(MIN_BUDGET_PX, px - MAIN_INSET_PX)))

#: Narrowest TP column (pixels): a two-digit TP label in :data:`HEATMAP_TICK_SIZE` (17 px in Chromium's
#: default sans-serif on Debian) keeps a gap of 4 px to the next; three frameworks x 11 TP sizes then fit
#: beside the "Selected cell" column on a 1920 px screen. When the columns need more room than the
#: budget, the heatmap grows and its area scrolls sideways.
MIN_COL_PX = 21
#: Widest TP column (pixels): with few columns the heatmap narrows instead of stretching its cells.
MAX_COL_PX = 56
#: Gap between two frameworks' column groups, in TP columns.
GROUP_PADDING = 0.6
#: Height of a model row (pixels).
ROW_PX = 24
#: Model rows the dashboard's heatmap shows at once (fits a 1080 px screen under the page header); more
#: rows scroll inside the plot (mouse wheel or drag), and the browser holds only the rows in view plus
#: :data:`WINDOW_MARGIN_ROWS` above and below (see :func:`window_rows`).
VISIBLE_ROWS = 25
#: Rows loaded beyond each edge of the visible ones, so a few wheel steps never show empty rows.
WINDOW_MARGIN_ROWS = 6
#: Longest model label on the y axis (characters): a longer id drops its organisation, and a name still
#: longer is cut around an ellipsis that spares its size (:func:`short_label`; the tooltip and the
#: details show the full id).
MAX_LABEL_CHARS = 34
#: Pixels per character of an 11 pt y-axis label (system sans-serif).
_PX_PER_CHAR = 8.8

#: A model-size token in a repo name: ``70B``, ``0.5B``, ``258M``, ``8x7B``, ``A3B`` / ``a400m`` (active
#: parameters of a mixture of experts); not ``Qwen3``, ``FP8``, ``2407`` or ``M2.5``.
SIZE_TOKEN = re.compile(r"(?<![A-Za-z0-9.])(?:\d+x)?[Aa]?\d+(?:\.\d+)?[BbMm](?![A-Za-z0-9])")
#: Characters at which a cut label prefers to break.
_SEPARATORS = "-_."


def _cut(name: str, n: int) -> str:
    """``name`` cut to at most ``n`` characters with one ellipsis, keeping its size tokens
    (:data:`SIZE_TOKEN`) whole when they fit: either the start up to the first token is shortened
    (``"ELYZA-japanese-Llama…-13b-instruct"``) or what follows the last token is
    (``"Llama-4-Scout-17B…-FP8-dynamic"``), whichever keeps the shorter side longer. Cuts fall at a
    ``-``, ``_`` or ``.`` when one is near. Without a size token (or when the tokens alone are too
    long), start and end are kept around a middle ellipsis."""
    spans = [m.span() for m in SIZE_TOKEN.finditer(name)]
    best: tuple[int, int, str] | None = None
    if spans:
        lo, hi = spans[0][0], spans[-1][1]
        # Size in the tail: the tail starts at the separator before the first token.
        t0 = lo - 1 if lo > 0 and name[lo - 1] in _SEPARATORS else lo
        tail = name[t0:]
        room = n - 1 - len(tail)
        if room >= 1:
            head = _snap_end(name[:room])
            cand = head + "…" + tail
            best = (min(len(head), len(tail)), len(cand), cand)
        # Size in the head: the head ends with the last token.
        head = name[:hi]
        room = n - 1 - len(head)
        if room >= 1:
            tail = _snap_start(name[len(name) - room:])
            cand = head + "…" + tail
            if best is None or (min(len(head), len(tail)), len(cand)) > best[:2]:
                best = (min(len(head), len(tail)), len(cand), cand)
    if best is not None:
        return best[2]
    h = (n - 1) // 2
    return name[:h] + "…" + name[len(name) - (n - 1 - h):]


#: Most characters a cut gives up to fall at a separator.
_SNAP_CHARS = 4


def _snap_end(head: str) -> str:
    """``head`` ending just before its last separator when that drops at most :data:`_SNAP_CHARS`."""
    cut = max(head.rfind(c) for c in _SEPARATORS)
    return head[:cut] if cut >= 1 and len(head) - cut <= _SNAP_CHARS else head


def _snap_start(tail: str) -> str:
    """``tail`` starting at its first separator when that drops at most :data:`_SNAP_CHARS`."""
    hits = [i for i in (tail.find(c) for c in _SEPARATORS) if i >= 0]
    cut = min(hits, default=-1)
    return tail[cut:] if 0 <= cut <= _SNAP_CHARS and cut < len(tail) - 1 else tail


def short_label(model_id: str, n: int = MAX_LABEL_CHARS) -> str:
    """The y-axis label of ``model_id``: the id itself when at most ``n`` characters; else its name
    without the organisation (``mistralai/Mixtral-8x22B-Instruct-v0.1`` -> ``Mixtral-8x22B-Instruct-v0.1``;
    a name longer than ``n`` that starts with the organisation drops that too); a name still longer than
    ``n`` is cut by :func:`_cut`, keeping its size visible
    (``RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic`` -> ``Llama-4-Scout-17B…-FP8-dynamic``)."""
    s = str(model_id)
    if len(s) <= n:
        return s
    org, sep, name = s.partition("/")
    name = name if sep and name else s
    # A name that repeats its organisation drops it too (nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16).
    if sep and len(name) > n and len(name) > len(org) + 1 and name[:len(org)].lower() == org.lower() \
            and name[len(org)] in _SEPARATORS:
        name = name[len(org) + 1:]
    return name if len(name) <= n else _cut(name, n)


def row_labels(models: Sequence[str], n: int = MAX_LABEL_CHARS) -> list[str]:
    """:func:`short_label` of each model id (the y axis's labels, in row order)."""
    return [short_label(m, n) for m in models]


#: BokehJS tick formatter body of the y axis: ``tick`` is a row centre ``-(row + 0.5)``; ``labels`` are
#: the rows' :func:`short_label` texts (computed on the server: one labeller, not a JS twin).
_ROW_LABEL_JS = (
    "const i = Math.round(-tick - 0.5);"
    " return (i >= 0 && i < labels.length) ? String(labels[i]) : '';"
)


#: Hover formatter body: the full model id of the row centred at ``value`` (``names`` in row order).
_ROW_NAME_JS = "const i = Math.round(-value - 0.5); return (i >= 0 && i < names.length) ? String(names[i]) : '';"

#: Hover formatter body for the synthetic x coordinate ``value`` of a cell's centre (column ``k`` of group
#: ``g`` is at ``g * step + k + 0.5``): ``format`` "group" gives the group's label, "tp" the TP size.
_COLUMN_JS = (
    "const g = Math.floor(value / step); const k = Math.floor(value - g * step);"
    " if (format === 'group') return (g >= 0 && g < groups.length) ? String(groups[g]) : '';"
    " return (k >= 0 && k < tps.length) ? String(tps[k]) : '';"
)

#: Separator of the hover texts in the info formatter's one string (ASCII record separator; the texts
#: never contain it: :func:`browser_data` replaces it).
INFO_SEPARATOR = "\x1e"

#: Hover formatter body: the details of the hovered cell, text number ``value`` (the cell's ``info``
#: column) of the distinct texts joined in ``texts``. One string of distinct texts plus a number per cell
#: rather than a column of strings: a string column costs the server and the browser per-element work
#: on every change, and the window's ~1,000 cells have a few hundred distinct texts. The split is cached
#: until the texts change.
_INFO_JS = (
    "const c = globalThis.__tpHeatmapInfo || (globalThis.__tpHeatmapInfo = {s: null, parts: []});"
    " if (c.s !== texts) { c.s = texts; c.parts = String(texts).split(sep); }"
    " const t = c.parts[value]; return t === undefined ? '' : t;"
)

#: Marker transform body: the mark of each cell's status code (``markers`` indexed by code). (``xs`` is a
#: typed array: its own ``map`` would coerce the names back to numbers.)
_MARKER_JS = "return Array.from(xs, (v) => markers[v] || 'circle');"


def rows_label(start: float, end: float, n_models: int) -> str:
    """The y-axis title of a heatmap showing rows ``start`` to ``end`` (data units) of ``n_models``:
    "models 26–50 of 130", or "" when every row is in view. (BokehJS twin: ``_ROWS_LABEL_JS``.)"""
    top = max(0, int(round(-float(end))))
    bottom = min(int(n_models), int(round(-float(start))))
    if top == 0 and bottom >= n_models:
        return ""
    return f"models {top + 1}–{bottom} of {int(n_models)}"


#: CustomJS body on the y range's ``start``: refresh the axis title (``ax.tags[0]`` = number of models).
_ROWS_LABEL_JS = (
    "const n = ax.tags[0]; const r = cb_obj; const top = Math.max(0, Math.round(-r.end));"
    " const bottom = Math.min(n, Math.round(-r.start));"
    " ax.axis_label = (top == 0 && bottom >= n) ? '' : `models ${top + 1}–${bottom} of ${n}`;"
)


#: CustomJS body on the y range's ``end``: 150 ms after the view stops moving (wheel or drag), move it to
#: the nearest whole row, so no row is left cut in half at the top or bottom. (Not at every step: a
#: trackpad's small wheel steps would each be rounded back to where they started.)
_SNAP_ROWS_JS = (
    "const r = cb_obj; clearTimeout(r.__tpSnap);"
    " r.__tpSnap = setTimeout(() => { const e = Math.round(r.end), n = Math.round(r.end - r.start);"
    " if (Math.abs(e - r.end) > 1e-6) r.setv({start: e - n, end: e}); }, 150);"
)


#: CustomJS body: hide the tooltips of HoverTool ``hover`` (BokehJS's own ``_clear`` of its view).
_HIDE_TOOLTIP_JS = (
    "const idx = globalThis.Bokeh && Bokeh.index; const views = idx && idx.find ? idx.find(hover) : [];"
    " for (const v of views) if (v && typeof v._clear === 'function') v._clear();"
)


def ylabel_px(models: Sequence[str]) -> int:
    """Width in pixels of the y-axis labels of ``models`` (after :func:`short_label`)."""
    chars = max((len(short_label(m)) for m in models), default=8)
    return int(_PX_PER_CHAR * max(chars, 8)) + 28


def heatmap_units(n_groups: int, n_tp: int) -> float:
    """Width of the heatmap's x axis in TP columns: ``n_groups`` groups of ``n_tp`` columns with
    :data:`GROUP_PADDING` between groups (Bokeh's synthetic coordinates of the nested factors)."""
    n_groups, n_tp = max(int(n_groups), 1), max(int(n_tp), 1)
    return n_groups * n_tp + (n_groups - 1) * GROUP_PADDING


def heatmap_geometry(n_models: int, n_tp: int, n_groups: int, label_px: int,
                     budget: int = HEATMAP_BUDGET_PX, visible_rows: int | None = VISIBLE_ROWS,
                     keep_width: int | None = None) -> dict[str, int]:
    """Sizes (pixels) of the validity heatmap: ``n_groups`` column groups (frameworks) of ``n_tp`` TP
    columns, ``n_models`` rows, model names ``label_px`` wide.

    The frame takes the ``budget`` left by the names whenever its columns then stay between
    :data:`MIN_COL_PX` and :data:`MAX_COL_PX` wide, so its width does not change when a framework or TP
    size is added or removed; otherwise it is as wide as that many columns of the nearest bound.
    ``keep_width`` (the frame width shown now) is kept instead of a narrower width when the columns then
    stay within those bounds: a heatmap that widened for more columns does not shrink back when they
    are removed again, so the page keeps its layout while frameworks are ticked on and off (each change
    of the figure's size costs the browser a re-layout of the whole page). At most ``visible_rows`` rows
    are shown at once (``None``: every row; a static figure for a notebook).
    Returns ``col`` (TP column width, float), ``row`` (row height), ``rows`` (rows shown), ``label_px``,
    ``frame_width``, ``frame_height``, ``width`` and ``height`` (the whole figure, approximately).
    """
    units = heatmap_units(n_groups, n_tp)
    frame_budget = max(int(budget) - int(label_px) - 40, 1)
    if frame_budget > units * MAX_COL_PX:
        frame_width = int(round(units * MAX_COL_PX))
    elif frame_budget < units * MIN_COL_PX:
        frame_width = int(math.ceil(units * MIN_COL_PX))
    else:
        frame_width = frame_budget
    if keep_width is not None and frame_width < int(keep_width) <= units * MAX_COL_PX:
        frame_width = int(keep_width)
    rows = max(n_models, 1) if visible_rows is None else max(1, min(n_models, visible_rows))
    return {
        "col": frame_width / units,
        "row": ROW_PX,
        "rows": rows,
        "label_px": int(label_px),
        "frame_width": frame_width,
        "frame_height": ROW_PX * rows,
        "width": int(label_px) + frame_width + 40,
        "height": ROW_PX * rows + 2 * 58 + 46 + 8,  # rows + top and bottom axes (TP and group) + title
    }


#: Font of the validity heatmap's TP-size labels, whatever the column width: a two-digit TP label is
#: 17 px wide at 10 pt, inside the narrowest column (:data:`MIN_COL_PX`). One size for every column
#: width keeps the x axis's height constant, so ticking a framework or a TP size on or off does not make
#: BokehJS lay the whole figure out again (measured with ``scripts/bench_ui.py``: ~35 ms a change).
HEATMAP_TICK_SIZE = "10pt"


def axis_fonts(groups: Sequence[str], n_tp: int, col: float) -> dict[str, str]:
    """Font sizes of the heatmap's x axis for column groups ``groups`` of ``n_tp`` columns ``col`` px
    wide: ``tick`` (TP sizes: always :data:`HEATMAP_TICK_SIZE`) and ``group`` (15 pt bold, smaller only
    when the longest label would overrun its group: about 0.75 px per pt per character)."""
    width = max(int(n_tp), 1) * float(col)
    longest = max((len(str(g)) for g in groups), default=1)
    group = "15pt"
    for pt in (15, 13, 11, 10):
        group = f"{pt}pt"
        if longest * 0.75 * pt <= width - 8:
            break
    return {"tick": HEATMAP_TICK_SIZE, "group": group}


def heatmap_factors(groups: Sequence[str], tps: Sequence[str]) -> list[tuple[str, str]]:
    """The heatmap's nested x factors: ``(group, tp)`` for each group (framework label), then each TP."""
    return [(str(g), str(t)) for g in groups for t in tps]


def tap_column(x: float, groups: Sequence[str], tps: Sequence[str]) -> tuple[int, str] | None:
    """The column under a tap at synthetic x coordinate ``x``: ``(group index, tp)``, or None between
    groups or outside. (Bokeh maps nested factor ``k`` of group ``g`` to ``k + 0.5 + g * (len(tps) +
    GROUP_PADDING)``, with ``range_padding`` and ``factor_padding`` 0.)"""
    n_tp = len(tps)
    if not n_tp or not groups:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(x):
        return None
    step = n_tp + GROUP_PADDING
    g = int(math.floor(x / step))
    k = int(math.floor(x - g * step))
    if 0 <= g < len(groups) and 0 <= k < n_tp:
        return g, str(tps[k])
    return None


#: Hover text of a cell. ``@y{model}`` is the model id of the cell's row, ``@x{group}`` / ``@x{tp}`` the
#: column group and TP size of its column, ``@info{text}`` its details: each is a formatter holding the
#: strings (:data:`_ROW_NAME_JS`, :data:`_COLUMN_JS`, :data:`_INFO_JS`), so the data source carries only
#: numbers. Bokeh HTML-escapes every value, formatted or not.
VALIDITY_TOOLTIP = """
<div style="max-width:520px;font-size:14px;line-height:1.35">
<div><b>@y{model}</b></div>
<div>@x{group} &middot; TP = <b>@x{tp}</b></div>
<div style="white-space:pre-wrap;margin-top:2px">@info{text}</div>
</div>"""

DISAGREE_TOOLTIP = VALIDITY_TOOLTIP

#: Mark drawn in a cell of each status (a Bokeh marker; "" draws none), so the status reads without
#: colour too: ✕ refused, ○ valid with KV heads replicated, + valid with dummy (padding) heads, – unknown.
STATUS_MARKERS: dict[str, str] = {
    "valid": "",
    "valid_replicated": "circle",
    "valid_padded": "plus",
    "invalid": "x",
    "unknown": "dash",
}
DISAGREE_MARKERS: dict[str, str] = {
    "all_valid": "",
    "disagree": "diamond",
    "all_invalid": "x",
    "unknown": "dash",
}
MARK_COLOR = "#111111"


def _markers_for(colors: dict[str, str], markers: dict[str, str] | None) -> dict[str, str]:
    """``markers``, or the marks that go with ``colors`` (:data:`DISAGREE_MARKERS` for
    :data:`DISAGREE_COLORS`, else :data:`STATUS_MARKERS`)."""
    if markers is not None:
        return markers
    return DISAGREE_MARKERS if colors is DISAGREE_COLORS else STATUS_MARKERS

#: Columns of the heatmap's data source, all numeric (Bokeh sends them as binary arrays; a column of
#: strings costs the server and the browser per-element work on every change): ``x`` (the cell's centre
#: on the nested factor axis: column ``k`` of group ``g`` is at ``g * (n_tp + GROUP_PADDING) + k +
#: 0.5``), ``y`` (the row centre ``-(row + 0.5)``, row 0 on top), ``row`` (the model's row index: the
#: server sends a window of rows), ``ym`` (``y``, or NaN where the status has no mark), ``code`` (the
#: status's position in the colour map: the cell's colour and mark are looked up from it) and ``info``
#: (the number of the cell's hover text among the distinct texts the info formatter holds:
#: :func:`browser_data`).
SOURCE_COLUMNS = ("x", "y", "row", "ym", "code", "info")


def _num(values: pd.Series) -> np.ndarray:
    """Whole numbers as text, "–" where missing."""
    v = pd.to_numeric(values, errors="coerce")
    out = v.round().astype("Int64").astype(str).to_numpy(dtype=object)
    out[v.isna().to_numpy()] = "–"
    return out


def status_codes(colors: Mapping[str, str] = STATUS_COLORS) -> dict[str, int]:
    """The code of each status: its position in ``colors`` (the colour map's palette order)."""
    return {k: i for i, k in enumerate(colors)}


def heatmap_source_data(frame: pd.DataFrame, colors: dict[str, str] = STATUS_COLORS,
                        markers: dict[str, str] | None = None,
                        tps: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Server-side columns of the cells of a :func:`heatmap_frame` or :func:`disagreement_frame` (one
    column group), one row per cell in the frame's order: ``col`` (the TP size's position in ``tps``,
    default the frame's TP sizes in order of first appearance), ``y``, ``row``, ``ym``, ``code`` (see
    :data:`SOURCE_COLUMNS`) and ``info`` (the hover text).

    ``row`` numbers the models in order of first appearance (the heatmap's top row is 0); ``info`` is
    plain text, newline-separated (Bokeh HTML-escapes it): the verdict, the per-rank head counts when the
    frame has them, and every failing rule's message. A status missing from ``colors`` gets the code of
    "unknown". ``markers`` defaults to :data:`STATUS_MARKERS` (:data:`DISAGREE_MARKERS` when ``colors`` is
    :data:`DISAGREE_COLORS`). :func:`concat_source_data` puts column groups side by side.
    """
    markers = _markers_for(colors, markers)
    n = len(frame)
    verdict = frame["verdict"].astype(object).fillna("").astype(str).to_numpy(dtype=object) if "verdict" in frame \
        else np.full(n, "", dtype=object)
    messages = frame["messages"].astype(object).fillna("").astype(str).to_numpy(dtype=object) if "messages" in frame \
        else np.full(n, "", dtype=object)
    mark = frame["mark"].astype(object).fillna("").astype(str).to_numpy(dtype=object)
    if "q_heads_per_rank" in frame:
        q, kv, rep = (_num(frame[c]) for c in ("q_heads_per_rank", "kv_heads_per_rank", "kv_replicas"))
        refused = (frame["status"].astype(object) == "invalid").to_numpy()
        # A refused layout has no per-rank head counts (40 heads over TP 3 is not "13 per rank").
        info = [f"{v}\n{m}" if r else f"{v}\nquery heads / rank: {a} · KV heads / rank: {b} · KV replicas: {c}\n{m}"
                for v, a, b, c, m, r in zip(verdict, q, kv, rep, messages, refused, strict=True)]
    else:  # disagreement cells: "k/n" frameworks accept, one line per framework
        info = [f"{v} ({k} accept)\n{m}" for v, k, m in zip(verdict, mark, messages, strict=True)]
    row = pd.factorize(frame["model_id"], sort=False)[0].astype("int32")
    y = -(row.astype("float64") + 0.5)
    status = frame["status"].astype(object)
    marker = status.map(markers).fillna("").to_numpy(dtype=object)
    ym = np.where(marker == "", np.nan, y)
    codes = status_codes(colors)
    code = status.map(codes).fillna(codes.get("unknown", len(codes) - 1)).to_numpy(dtype="uint8")
    tp = frame["tp"].astype(str)
    order = [str(t) for t in tps] if tps is not None else list(dict.fromkeys(tp))
    col = tp.map({t: i for i, t in enumerate(order)}).fillna(-1).to_numpy(dtype="int32")
    return {"col": col, "y": y, "row": row, "ym": ym, "code": code, "info": np.asarray(info, dtype=object)}


def window_rows(start: float, end: float, n_rows: int, margin: int = WINDOW_MARGIN_ROWS) -> tuple[int, int]:
    """Rows ``[r0, r1)`` to load for a y range from ``start`` to ``end`` (data units; row ``r`` spans
    ``-(r + 1)`` to ``-r``): the rows in view plus ``margin`` rows above and below, clipped to
    ``[0, n_rows)``."""
    lo, hi = sorted((float(start), float(end)))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        lo, hi = -float(VISIBLE_ROWS), 0.0
    top = int(np.floor(-hi))
    bottom = int(np.ceil(-lo))
    r0 = max(0, min(n_rows, top - margin))
    r1 = max(r0, min(n_rows, bottom + margin))
    return r0, r1


def window_data(source_data: dict, r0: int, r1: int) -> dict[str, np.ndarray]:
    """The cells of rows ``[r0, r1)`` of :func:`heatmap_source_data` output (what the browser holds)."""
    row = np.asarray(source_data["row"])
    keep = (row >= r0) & (row < r1)
    return {k: v[keep] for k, v in source_data.items()}


def column_x(group: int, col, n_tp: int) -> np.ndarray:
    """Synthetic x of the centres of columns ``col`` (TP positions) of column group ``group`` on the
    nested factor axis of ``n_tp`` TP sizes per group (Bokeh's mapping with ``group_padding``
    :data:`GROUP_PADDING`, ``factor_padding`` and ``range_padding`` 0; inverse: :func:`tap_column`)."""
    return int(group) * (int(n_tp) + GROUP_PADDING) + np.asarray(col, dtype="float64") + 0.5


def concat_source_data(parts: Sequence[dict], n_tp: int | None = None) -> dict[str, np.ndarray]:
    """Column groups side by side: the :func:`heatmap_source_data` / :func:`window_data` outputs of each
    group, left to right, concatenated, with ``x`` (:func:`column_x` of each group's ``col``; ``n_tp``
    defaults to the largest ``col`` + 1). Returns :data:`SOURCE_COLUMNS`, ``info`` being the hover texts
    (object array; :func:`browser_data` makes the browser's columns)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        out = {c: np.empty(0, dtype="float64") for c in SOURCE_COLUMNS}
        out["row"], out["code"] = np.empty(0, dtype="int32"), np.empty(0, dtype="uint8")
        out["info"] = np.empty(0, dtype=object)
        return out
    if n_tp is None:
        n_tp = max((int(np.max(p["col"])) + 1 for p in parts if len(p["col"])), default=1)
    out = {"x": np.concatenate([column_x(g, p["col"], n_tp) for g, p in enumerate(parts)])}
    for c in ("y", "row", "ym", "code", "info"):
        out[c] = np.concatenate([np.asarray(p[c]) for p in parts])
    return out


def browser_data(source_data: dict) -> tuple[dict[str, np.ndarray], str]:
    """What the browser gets of :func:`concat_source_data` output: the data-source columns
    (:data:`SOURCE_COLUMNS`, ``info`` replaced by the number of the cell's text among the distinct
    texts) and those distinct texts as one string (separated by :data:`INFO_SEPARATOR`, which is
    removed from the texts), for the hover's info formatter."""
    codes, texts = pd.factorize(pd.Series(source_data["info"], dtype=object).fillna(""), sort=False)
    cols = {c: source_data[c] for c in SOURCE_COLUMNS if c != "info"}
    cols["info"] = codes.astype("int32")
    joined = INFO_SEPARATOR.join(str(t).replace(INFO_SEPARATOR, " ") for t in texts)
    return cols, joined


def hover_texts(fig) -> list[str]:
    """The hover text of each cell in a :func:`heatmap_figure`'s data source, in its order (tests,
    exports)."""
    from bokeh.models import HoverTool

    tool = next(t for t in fig.toolbar.tools if isinstance(t, HoverTool))
    texts = str(tool.formatters["@info"].args["texts"]).split(INFO_SEPARATOR)
    return [texts[int(i)] for i in fig.renderers[0].data_source.data["info"]]


def set_window(fig, source_data: dict) -> None:
    """Put :func:`concat_source_data` output (e.g. another window of rows) in a :func:`heatmap_figure`: its
    data source and the hover's texts."""
    from bokeh.models import HoverTool

    cols, joined = browser_data(source_data)
    for tool in fig.toolbar.tools:  # (not fig.select: that walks every model of the figure)
        if isinstance(tool, HoverTool) and tool.formatters.get("@info") is not None:
            fmt = tool.formatters["@info"]
            if fmt.args.get("texts") != joined:
                fmt.args = {"texts": joined, "sep": INFO_SEPARATOR}
    fig.renderers[0].data_source.data = cols


def _color_map(colors: Mapping[str, str]) -> dict:
    """``LinearColorMapper`` settings mapping status code ``k`` (:func:`status_codes`) to the ``k``-th
    colour of ``colors``."""
    return {"palette": list(colors.values()), "low": -0.5, "high": len(colors) - 0.5}


def _marker_list(colors: Mapping[str, str], markers: Mapping[str, str]) -> list[str]:
    """The mark of each status code ("" where none: those cells' ``ym`` is NaN, so nothing is drawn)."""
    return [str(markers.get(k, "") or "") for k in colors]


def _column_args(groups: Sequence[str], tps: Sequence[str]) -> dict:
    """Arguments of the hover's column formatter (:data:`_COLUMN_JS`)."""
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

    markers = _markers_for(colors, markers)
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
                              v_func=_MARKER_JS)
    mark = Scatter(x="x", y="ym", marker={"field": "code", "transform": marks}, size=12, fill_color=None,
                   line_color=MARK_COLOR, line_width=2.4)
    fig.add_glyph(source, mark)
    sel = Rect(x="x", y="y", width=1, height=1, fill_color=None, line_color=MARK_COLOR, line_width=4)
    fig.add_glyph(ColumnDataSource(data=_empty_selection(), name="tp-selected"), sel)
    # attachment "horizontal": right of the pointer, or left of it near the right edge of the screen.
    hover = HoverTool(tooltips=tooltip, renderers=[cells], attachment="horizontal", formatters={
        "@y": CustomJSHover(args={"names": models}, code=_ROW_NAME_JS),
        "@x": CustomJSHover(args=_column_args(groups, tps), code=_COLUMN_JS),
        "@info": CustomJSHover(args={"texts": texts, "sep": INFO_SEPARATOR}, code=_INFO_JS),
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
                                                code=_ROW_LABEL_JS)
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
    y_range.js_on_change("start", CustomJS(args={"ax": yaxis}, code=_ROWS_LABEL_JS))
    y_range.js_on_change("end", CustomJS(code=_SNAP_ROWS_JS))
    # A scroll moves other cells under a still pointer: hide the tooltip (the next pointer move shows the
    # cell now under it) rather than leave the previous cell's verdict on screen.
    y_range.js_on_change("start", CustomJS(args={"hover": hover}, code=_HIDE_TOOLTIP_JS))
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

    markers = _markers_for(colors, markers)
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


def legend_items(colors: dict[str, str] = STATUS_COLORS, labels: dict[str, str] = STATUS_LABELS,
                 markers: dict[str, str] | None = None) -> list[list[str]]:
    """``[colour, label, marker]`` per status (marker "" when the cells have none)."""
    markers = _markers_for(colors, markers)
    return [[c, labels.get(k, k), markers.get(k, "")] for k, c in colors.items()]


#: SVG path (in a 12 x 12 box) of each cell mark, for the HTML legend.
_MARKER_SVG: dict[str, str] = {
    "x": '<path d="M2 2L10 10M10 2L2 10"/>',
    "circle": '<circle cx="6" cy="6" r="4.2"/>',
    "plus": '<path d="M6 1.5V10.5M1.5 6H10.5"/>',
    "dash": '<path d="M1.5 6H10.5"/>',
    "diamond": '<path d="M6 1L11 6L6 11L1 6Z"/>',
}


def marker_svg(marker: str, size: int = 12) -> str:
    """Inline SVG of a cell mark (empty string for none); ours, not untrusted."""
    body = _MARKER_SVG.get(marker, "")
    if not body:
        return ""
    return (f'<svg width="{size}" height="{size}" viewBox="0 0 12 12" fill="none" stroke="{MARK_COLOR}" '
            f'stroke-width="2" style="display:block">{body}</svg>')


def legend_html(colors: dict[str, str] = STATUS_COLORS, labels: dict[str, str] = STATUS_LABELS,
                markers: dict[str, str] | None = None) -> str:
    """One-line HTML legend of the cell colours and marks (the labels are ours, not untrusted)."""
    items = "".join(
        f'<span style="display:inline-flex;align-items:center;margin-right:18px">'
        f'<span style="display:inline-flex;align-items:center;justify-content:center;width:20px;height:20px;'
        f'background:{c};border-radius:3px;margin-right:6px">{marker_svg(m)}</span>{label}</span>'
        for c, label, m in legend_items(colors, labels, markers)
    )
    return f'<div class="tp-legend" style="font-size:16px;display:flex;flex-wrap:wrap;gap:4px 0">{items}</div>'


def disagreement_frame(grid: pd.DataFrame, frameworks: Sequence[str], models: Sequence[str], tp_sizes: Sequence[int]) -> pd.DataFrame:
    """Cells where the selected frameworks agree or disagree.

    Returns a frame with ``tp`` (str), ``model_id``, ``status`` (a key of :data:`DISAGREE_COLORS`),
    ``verdict``, ``mark`` (``k/n`` frameworks accept) and ``messages`` (one line per framework: its
    verdict and first failing message).
    """
    frames = [heatmap_frame(grid, fw, models, tp_sizes).assign(framework=fw) for fw in frameworks]
    if not frames:
        return pd.DataFrame(columns=["tp", "model_id", "status", "verdict", "mark", "messages"])
    long = pd.concat(frames, ignore_index=True)
    long["ok"] = long["status"].isin(["valid", "valid_replicated", "valid_padded"])
    long["unk"] = long["status"] == "unknown"
    long["line"] = [
        f"{framework_label(fw)}: {STATUS_LABELS[s]}" + (f" — {m}" if m and s == "invalid" else "")
        for fw, s, m in zip(long["framework"], long["status"], long["message"], strict=True)
    ]
    g = long.groupby(["model_id", "tp"], sort=False)
    out = g.agg(n_ok=("ok", "sum"), n_unk=("unk", "sum"), n=("ok", "size"), messages=("line", "\n".join)).reset_index()
    status = np.where(
        out["n_unk"] == out["n"],
        "unknown",
        np.where(out["n_ok"] == out["n"], "all_valid", np.where(out["n_ok"] == 0, "all_invalid", "disagree")),
    )
    out["status"] = status
    out["verdict"] = out["status"].map(DISAGREE_LABELS)
    out["mark"] = out["n_ok"].astype(int).astype(str) + "/" + out["n"].astype(int).astype(str)
    for c in ("tp", "model_id", "status", "verdict", "mark", "messages"):
        out[c] = out[c].astype(object)
    return out[["tp", "model_id", "status", "verdict", "mark", "messages"]]
