"""The heatmap's geometry and axes: the width budget, column and row sizes, short row labels, the axis
fonts, the nested column factors and the JavaScript formatters of the axes and the hover."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence


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
ROW_LABEL_JS = (
    "const i = Math.round(-tick - 0.5);"
    " return (i >= 0 && i < labels.length) ? String(labels[i]) : '';"
)


#: Hover formatter body: the full model id of the row centred at ``value`` (``names`` in row order).
ROW_NAME_JS = "const i = Math.round(-value - 0.5); return (i >= 0 && i < names.length) ? String(names[i]) : '';"

#: Hover formatter body for the synthetic x coordinate ``value`` of a cell's centre (column ``k`` of group
#: ``g`` is at ``g * step + k + 0.5``): ``format`` "group" gives the group's label, "tp" the TP size.
COLUMN_JS = (
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
INFO_JS = (
    "const c = globalThis.__tpHeatmapInfo || (globalThis.__tpHeatmapInfo = {s: null, parts: []});"
    " if (c.s !== texts) { c.s = texts; c.parts = String(texts).split(sep); }"
    " const t = c.parts[value]; return t === undefined ? '' : t;"
)

#: Marker transform body: the mark of each cell's status code (``markers`` indexed by code). (``xs`` is a
#: typed array: its own ``map`` would coerce the names back to numbers.)
MARKER_JS = "return Array.from(xs, (v) => markers[v] || 'circle');"


def rows_label(start: float, end: float, n_models: int) -> str:
    """The y-axis title of a heatmap showing rows ``start`` to ``end`` (data units) of ``n_models``:
    "models 26–50 of 130", or "" when every row is in view. (BokehJS twin: ``ROWS_LABEL_JS``.)"""
    top = max(0, int(round(-float(end))))
    bottom = min(int(n_models), int(round(-float(start))))
    if top == 0 and bottom >= n_models:
        return ""
    return f"models {top + 1}–{bottom} of {int(n_models)}"


#: CustomJS body on the y range's ``start``: refresh the axis title (``ax.tags[0]`` = number of models).
ROWS_LABEL_JS = (
    "const n = ax.tags[0]; const r = cb_obj; const top = Math.max(0, Math.round(-r.end));"
    " const bottom = Math.min(n, Math.round(-r.start));"
    " ax.axis_label = (top == 0 && bottom >= n) ? '' : `models ${top + 1}–${bottom} of ${n}`;"
)


#: CustomJS body on the y range's ``end``: 150 ms after the view stops moving (wheel or drag), move it to
#: the nearest whole row, so no row is left cut in half at the top or bottom. (Not at every step: a
#: trackpad's small wheel steps would each be rounded back to where they started.)
SNAP_ROWS_JS = (
    "const r = cb_obj; clearTimeout(r.__tpSnap);"
    " r.__tpSnap = setTimeout(() => { const e = Math.round(r.end), n = Math.round(r.end - r.start);"
    " if (Math.abs(e - r.end) > 1e-6) r.setv({start: e - n, end: e}); }, 150);"
)


#: CustomJS body: hide the tooltips of HoverTool ``hover`` (BokehJS's own ``_clear`` of its view).
HIDE_TOOLTIP_JS = (
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
