"""The heatmap's cells: status colours, marks and labels, the per-cell frame of one framework (or of the
frameworks' disagreement), and the column data the browser gets (windows of rows, hover texts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard.plots.style import framework_label
from dashboard.plots.heatmap_axes import GROUP_PADDING, INFO_SEPARATOR, VISIBLE_ROWS, WINDOW_MARGIN_ROWS


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


#: Hover text of a cell. ``@y{model}`` is the model id of the cell's row, ``@x{group}`` / ``@x{tp}`` the
#: column group and TP size of its column, ``@info{text}`` its details: each is a formatter holding the
#: strings (:data:`ROW_NAME_JS`, :data:`COLUMN_JS`, :data:`INFO_JS`), so the data source carries only
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


def markers_for(colors: dict[str, str], markers: dict[str, str] | None) -> dict[str, str]:
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
    markers = markers_for(colors, markers)
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


def legend_items(colors: dict[str, str] = STATUS_COLORS, labels: dict[str, str] = STATUS_LABELS,
                 markers: dict[str, str] | None = None) -> list[list[str]]:
    """``[colour, label, marker]`` per status (marker "" when the cells have none)."""
    markers = markers_for(colors, markers)
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
