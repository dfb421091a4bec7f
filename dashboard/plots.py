"""DataFrames -> plots for the dashboard (no Panel, no widgets, no I/O).

Every function takes tidy frames from the pure modules (:func:`dashboard.rules.grid`,
:func:`dashboard.layout.rank_layout`, :mod:`dashboard.memory`) and returns a plot styled for a
meeting-room screen (large titles and tick labels, a colour-blind-safe palette; the layout and memory
plots draw their legend in the figure; the validity heatmaps share one legend on the page and their PNG
export draws it under the image). The validity heatmaps are plain Bokeh figures
(:func:`heatmap_figure`: thousands of cells, built per session, so no per-cell Python work); the
per-rank layout and memory plots are HoloViews elements.

Untrusted strings (model ids, messages) reach the browser only as Bokeh data-source columns: Bokeh
draws axis labels on the canvas and HTML-escapes ``@field`` values in tooltips (no ``{safe}`` format is
used here), so nothing from a config is ever interpreted as HTML.

HoloViews needs a plotting extension loaded (``hv.extension("bokeh")``) before these elements are
rendered; the app and the tests do that.
"""

from __future__ import annotations

from collections.abc import Sequence

import holoviews as hv
import numpy as np
import pandas as pd

from dashboard import schema

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
COMPONENT_COLORS: dict[str, str] = {
    "query": "#0072B2",
    "query (dummy)": "#CFCFCF",
    "kv": "#009E73",
    "kv (replica)": "#9ED9C6",
    "linear_key": "#E69F00",
    "linear_value": "#F0C560",
    "vision": "#CC79A7",
    "vision (dummy)": "#E6E6E6",
}
COMPONENT_LABELS: dict[str, str] = {
    "query": "query head",
    "query (dummy)": "query head (dummy / padding)",
    "kv": "KV head",
    "kv (replica)": "KV head (replica of another rank's)",
    "linear_key": "linear-attention key head",
    "linear_value": "linear-attention value head",
    "vision": "vision head",
    "vision (dummy)": "vision head (dummy / padding)",
}
COMPONENT_PREFIX: dict[str, str] = {
    "query": "Q",
    "kv": "KV",
    "linear_key": "LK",
    "linear_value": "LV",
    "vision": "V",
}
COMPONENT_ORDER = ("query", "kv", "linear_key", "linear_value", "vision")

TITLE_SIZE = "20pt"
LABEL_SIZE = "15pt"
TICK_SIZE = "12pt"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"



def framework_label(fw: str) -> str:
    """Human label of a framework id."""
    return schema.FRAMEWORK_LABELS.get(fw, fw)


# ------------------------------------------------------------------------------------------------
# Validity heatmaps
# ------------------------------------------------------------------------------------------------

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


#: Pixel width the side-by-side validity heatmaps may take on a 1920 px wide page (sidebar and details
#: column excluded); columns shrink to fit it, down to :data:`MIN_COL_PX`.
HEATMAP_BUDGET_PX = 1120
#: Narrowest TP column (pixels): two-digit TP labels in 12 pt stay apart; when the heatmaps need more
#: room than the page has, the heatmap area scrolls sideways instead of squeezing columns.
MIN_COL_PX = 28
#: Longest model id drawn in full on the y axis; longer ids keep their start and end around an ellipsis
#: (the tooltip and the details show the full id).
MAX_LABEL_CHARS = 34
#: Pixels per character of an 11 pt y-axis label (system sans-serif).
_PX_PER_CHAR = 8.8


def short_label(model_id: str, n: int = MAX_LABEL_CHARS) -> str:
    """``model_id`` cut to ``n`` characters with a middle ellipsis (start and quantization suffix kept)."""
    s = str(model_id)
    if len(s) <= n:
        return s
    head = (n - 1) // 2
    return s[:head] + "…" + s[len(s) - (n - 1 - head):]


#: BokehJS twin of :func:`short_label` (a tick formatter body; ``tick`` is the model id).
_SHORT_LABEL_JS = (
    "const n = %(n)d; const s = String(tick); if (s.length <= n) return s;"
    " const h = Math.floor((n - 1) / 2); return s.slice(0, h) + '\u2026' + s.slice(s.length - (n - 1 - h));"
)


def ylabel_px(models: Sequence[str]) -> int:
    """Width in pixels of the y-axis labels of ``models`` (after :func:`short_label`)."""
    chars = min(max((len(str(m)) for m in models), default=8), MAX_LABEL_CHARS)  # len(short_label(m))
    return int(_PX_PER_CHAR * max(chars, 8)) + 28


def heatmap_geometry(n_models: int, n_tp: int, n_frameworks: int, label_px: int,
                     budget: int = HEATMAP_BUDGET_PX) -> dict[str, int]:
    """Cell and figure sizes (pixels) for ``n_frameworks`` heatmaps side by side within ``budget``.

    Only the first heatmap draws the model names (``label_px`` wide); the others share its rows.
    Returns ``col`` (TP column width), ``row`` (model row height), ``first_width``, ``width`` (the
    others), ``height`` and ``font`` (cell mark size in pt).
    """
    n_tp, n_fw = max(n_tp, 1), max(n_frameworks, 1)
    pad, gap = 24, 12
    col = (budget - label_px - n_fw * pad - (n_fw - 1) * gap) // (n_fw * n_tp)
    col = int(max(MIN_COL_PX, min(48, col)))
    row = 24
    height = row * max(n_models, 1) + 2 * 34 + 46 + 8  # rows + top and bottom TP axes + title
    return {
        "col": col,
        "row": row,
        "first_width": label_px + n_tp * col + pad,
        "width": n_tp * col + pad,
        "frame_width": n_tp * col,
        "frame_height": row * max(n_models, 1),
        "height": height,
        "font": 11 if col >= 34 else 9,
    }


VALIDITY_TOOLTIP = """
<div style="max-width:520px;font-size:14px;line-height:1.35">
<div><b>@model_id</b></div>
<div>TP = <b>@tp</b></div>
<div style="white-space:pre-wrap;margin-top:2px">@info</div>
</div>"""

DISAGREE_TOOLTIP = VALIDITY_TOOLTIP

#: Columns of a heatmap's data source (all the browser gets): the glyphs use ``tp``, ``model_id``,
#: ``color`` and ``mark``; the hover shows ``model_id``, ``tp`` and ``info`` (every other detail of the
#: cell as one plain-text column; the full cell frame stays on the server).
SOURCE_COLUMNS = ("tp", "model_id", "color", "mark", "info")


def _num(values: pd.Series) -> np.ndarray:
    """Whole numbers as text, "–" where missing."""
    v = pd.to_numeric(values, errors="coerce")
    out = v.round().astype("Int64").astype(str).to_numpy(dtype=object)
    out[v.isna().to_numpy()] = "–"
    return out


def heatmap_source_data(frame: pd.DataFrame, colors: dict[str, str] = STATUS_COLORS) -> dict[str, np.ndarray]:
    """The data-source columns (:data:`SOURCE_COLUMNS`) of a :func:`heatmap_frame` or
    :func:`disagreement_frame`: one row per cell, in the frame's order (tap selection = row index).

    ``info`` is the hover text (plain text, newline-separated; Bokeh HTML-escapes it): the verdict, the
    per-rank head counts when the frame has them, and every failing rule's message.
    """
    n = len(frame)
    verdict = frame["verdict"].astype(object).fillna("").astype(str).to_numpy(dtype=object) if "verdict" in frame \
        else np.full(n, "", dtype=object)
    messages = frame["messages"].astype(object).fillna("").astype(str).to_numpy(dtype=object) if "messages" in frame \
        else np.full(n, "", dtype=object)
    mark = frame["mark"].astype(object).fillna("").astype(str).to_numpy(dtype=object)
    if "q_heads_per_rank" in frame:
        q, kv, rep = (_num(frame[c]) for c in ("q_heads_per_rank", "kv_heads_per_rank", "kv_replicas"))
        info = [f"{v}\nquery heads / rank: {a} · KV heads / rank: {b} · KV replicas: {c}\n{m}"
                for v, a, b, c, m in zip(verdict, q, kv, rep, messages, strict=True)]
    else:  # disagreement cells: "k/n" frameworks accept, one line per framework
        info = [f"{v} ({k} accept)\n{m}" for v, k, m in zip(verdict, mark, messages, strict=True)]
    return {
        "tp": frame["tp"].to_numpy(dtype=object),
        "model_id": frame["model_id"].to_numpy(dtype=object),
        "color": frame["status"].map(colors).fillna(colors.get("unknown", "#BBBBBB")).to_numpy(dtype=object),
        "mark": mark,
        "info": np.asarray(info, dtype=object),
    }


def heatmap_figure(
    frame: pd.DataFrame,
    title: str,
    *,
    colors: dict[str, str] = STATUS_COLORS,
    labels: dict[str, str] = STATUS_LABELS,
    tooltip: str = VALIDITY_TOOLTIP,
    geometry: dict[str, int] | None = None,
    with_yaxis: bool = True,
    y_range=None,
    source_data: dict | None = None,
):
    """A Bokeh figure of models x TP sizes coloured by cell status, a mark in each cell, a legend.

    Built directly with Bokeh (one ColumnDataSource for the cells and their marks; no per-cell Python
    formatting): a 130 x 10 grid renders in a few milliseconds on the server.

    Parameters
    ----------
    frame : DataFrame
        :func:`heatmap_frame` or :func:`disagreement_frame` output (``tp`` str, ``model_id``,
        ``status`` a key of ``colors``, ``verdict``, ``mark``, ``messages``; the head counts optional).
    title : str
        Plot title (the framework's label).
    geometry : dict, optional
        :func:`heatmap_geometry` output; default: one heatmap alone.
    with_yaxis : bool
        Draw the model names (the first of side-by-side heatmaps); the others share ``y_range``.
    y_range : bokeh.models.FactorRange, optional
        Shared model axis of side-by-side heatmaps (scrolling/zooming one moves all).
    source_data : dict, optional
        :func:`heatmap_source_data` of ``frame`` if already computed (it is cached per process).

    Returns
    -------
    bokeh.plotting.figure named :data:`HEATMAP_FIGURE_NAME`; the cells' renderer is ``fig.renderers[0]``
    and its data source holds one row per cell (tap selection = the tapped cell's row index). The figure
    draws no legend (the page has one shared legend); ``fig.tags`` holds its ``[colour, label]`` pairs for
    the PNG export. It never shrinks below its fixed size (CSS ``flex: none``).
    Untrusted strings reach the browser only as data-source values: canvas text and ``@field`` tooltip
    values, which Bokeh HTML-escapes.
    """
    from bokeh.models import (CategoricalAxis, ColumnDataSource, CustomJSTickFormatter, FactorRange, HoverTool,
                              Rect, TapTool, Text)
    from bokeh.core.properties import value
    from bokeh.plotting import figure

    models = list(dict.fromkeys(frame["model_id"]))
    tps = list(dict.fromkeys(frame["tp"]))
    geo = geometry or heatmap_geometry(len(models), len(tps), 1, ylabel_px(models))
    data = source_data if source_data is not None else heatmap_source_data(frame, colors)
    source = ColumnDataSource(data=dict(data), name="tp-cells")
    if y_range is None:
        # Factors bottom-up: Bokeh draws the first factor at the bottom, so the first model ends on top.
        y_range = FactorRange(factors=models[::-1])
    fig = figure(
        name=HEATMAP_FIGURE_NAME,
        title=title,
        x_range=FactorRange(factors=tps),
        y_range=y_range,
        frame_width=geo["frame_width"],
        frame_height=geo["frame_height"],
        x_axis_location="above",
        tools="save,reset",
        toolbar_location="above",
        min_border_left=4 if not with_yaxis else 10,
        min_border_right=20,
        min_border_bottom=4,
    )
    rect = Rect(x="tp", y="model_id", width=1, height=1, fill_color="color", line_color="white", line_width=1.5)
    cells = fig.add_glyph(
        source, rect,
        selection_glyph=rect.clone(line_color="#111111", line_width=4),
        nonselection_glyph=rect.clone(),
    )
    text = Text(x="tp", y="model_id", text="mark", text_align="center", text_baseline="middle",
                text_color="#111111", text_font_size=f"{geo['font']}pt", text_font_style="bold", text_font=value(FONT))
    fig.add_glyph(source, text, selection_glyph=text.clone(), nonselection_glyph=text.clone())
    tap = TapTool(renderers=[cells])
    fig.add_tools(HoverTool(tooltips=tooltip, renderers=[cells], attachment="right"), tap)
    fig.toolbar.logo = None
    fig.toolbar.active_tap = tap
    fig.title.text_font_size = TITLE_SIZE
    fig.title.text_font = FONT
    fig.outline_line_color = None
    fig.grid.visible = False
    fig.add_layout(CategoricalAxis(), "below")
    for ax in fig.xaxis:
        ax.axis_label = "TP"
        ax.axis_label_standoff = 2
        ax.axis_label_text_font_size = "12pt"
        ax.axis_label_text_font_style = "normal"
    fig.xaxis[0].axis_label = "tensor-parallel size (TP)"
    for ax in (*fig.xaxis, *fig.yaxis):
        ax.major_label_text_font = FONT
        ax.axis_label_text_font = FONT
        ax.major_label_text_font_size = "11pt" if ax in fig.yaxis else TICK_SIZE
        ax.major_tick_line_color = None
        ax.axis_line_color = None
    if with_yaxis:
        # Long ids keep their start and end (same cut as short_label). A formatter, not
        # major_label_overrides: Bokeh sizes the axis from the formatted labels but ignores overrides
        # when it measures, so overrides left a 50-character-wide gap beside the names.
        fig.yaxis.formatter = CustomJSTickFormatter(code=_SHORT_LABEL_JS % {"n": MAX_LABEL_CHARS})
    else:
        fig.yaxis.visible = False
    # No legend inside the figure: the page shows one shared legend above the heatmaps, and the PNG
    # export (dashboard.views.export.PNG_EXPORT_JS) draws these (colour, label) pairs under the image.
    fig.tags = [[colors[k], labels.get(k, k)] for k in colors]
    # Never narrower than its frame: in a flex row a figure would otherwise be squeezed to a few px per
    # column on a narrow screen; the heatmap area scrolls sideways instead.
    fig.styles = {"flex": "none"}
    return fig


def update_heatmap(
    fig,
    title: str,
    source_data: dict,
    *,
    colors: dict[str, str] = STATUS_COLORS,
    labels: dict[str, str] = STATUS_LABELS,
    tooltip: str = VALIDITY_TOOLTIP,
    geometry: dict[str, int],
    tps: Sequence[str],
) -> None:
    """Show new cells in a :func:`heatmap_figure` in place (no new Bokeh models).

    Replaces the data source's ``.data`` with ``source_data`` (:func:`heatmap_source_data`) and sets the
    title, TP factors, frame size, mark size, tooltip and legend tags only where they differ (Bokeh sends
    a change only for those). The shared model axis (``fig.y_range``) is the caller's to update. Call it
    inside one document hold so the browser gets a single patch.
    """
    from bokeh.models import HoverTool

    if fig.title.text != title:
        fig.title.text = title
    tps = list(tps)
    if list(fig.x_range.factors) != tps:
        fig.x_range.factors = tps
    if fig.frame_width != geometry["frame_width"]:
        fig.frame_width = geometry["frame_width"]
    if fig.frame_height != geometry["frame_height"]:
        fig.frame_height = geometry["frame_height"]
    size = f"{geometry['font']}pt"
    text = fig.renderers[1]
    for g in (text.glyph, text.selection_glyph, text.nonselection_glyph):
        if g is not None and g.text_font_size != size:
            g.text_font_size = size
    for tool in fig.toolbar.tools:  # (not fig.select: that walks every model of the figure)
        if isinstance(tool, HoverTool) and tool.tooltips != tooltip:
            tool.tooltips = tooltip
    tags = [[colors[k], labels.get(k, k)] for k in colors]
    if fig.tags != tags:
        fig.tags = tags
    fig.renderers[0].data_source.data = dict(source_data)


def legend_html(colors: dict[str, str] = STATUS_COLORS, labels: dict[str, str] = STATUS_LABELS) -> str:
    """One-line HTML legend of the cell colours (the labels are ours, not untrusted)."""
    items = "".join(
        f'<span style="display:inline-flex;align-items:center;margin-right:18px">'
        f'<span style="display:inline-block;width:18px;height:18px;background:{c};border-radius:3px;'
        f'margin-right:6px"></span>{labels.get(k, k)}</span>'
        for k, c in colors.items()
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


# ------------------------------------------------------------------------------------------------
# Per-rank layout
# ------------------------------------------------------------------------------------------------


def layout_frame(layout: pd.DataFrame) -> pd.DataFrame:
    """Cells of the ranks x heads grid from :func:`dashboard.layout.rank_layout`.

    Each (rank, component) gets its heads in slots ``Q0, Q1, ...`` / ``KV0 ...`` / ``LK0 ...`` /
    ``LV0 ...`` / ``V0 ...``; ``kind`` says query / kv / kv (replica) / ... / dummy; ``text`` is the
    global head index (``pad`` for a dummy head, ``h·r1`` for replica 1 of head h).
    """
    if layout is None or len(layout) == 0:
        return pd.DataFrame(columns=["slot", "rank", "kind", "text", "head", "replica", "component", "detail"])
    df = layout.copy()
    df["component"] = df["component"].astype(str)
    order = {c: i for i, c in enumerate(COMPONENT_ORDER)}
    df["_c"] = df["component"].map(order).fillna(len(order)).astype(int)
    df = df.sort_values(["rank", "_c", "head", "replica"], kind="stable")
    df["j"] = df.groupby(["rank", "component"]).cumcount()
    df["slot"] = df["component"].map(COMPONENT_PREFIX).fillna("?") + df["j"].astype(str)
    dummy = df["dummy"].astype("boolean").fillna(False).astype(bool)
    rep = pd.to_numeric(df["replica"], errors="coerce").fillna(0).astype(int)
    kind = df["component"].copy()
    kind = kind.where(~((df["component"] == "kv") & (rep > 0)), "kv (replica)")
    kind = kind.where(~(dummy & (df["component"] == "vision")), "vision (dummy)")
    kind = kind.where(~(dummy & (df["component"] == "query")), "query (dummy)")
    df["kind"] = kind
    head = pd.to_numeric(df["head"], errors="coerce").fillna(-1).astype(int)
    text = head.astype(str)
    text = text.where(rep == 0, text + "·r" + rep.astype(str))
    text = text.where(~dummy, "pad")
    df["text"] = text
    df["rank"] = "rank " + df["rank"].astype(int).astype(str)
    df["detail"] = [
        f"{COMPONENT_LABELS.get(k, k)}" + ("" if d else f" {h}") + (f", replica {r}" if r else "")
        for k, h, r, d in zip(df["kind"], head, rep, dummy, strict=True)
    ]
    df["head"] = head
    df["replica"] = rep
    # Slot order: components in COMPONENT_ORDER, slots numerically.
    df = df.sort_values(["_c", "j"], kind="stable")
    out = df[["slot", "rank", "kind", "text", "head", "replica", "component", "detail"]].copy()
    for c in ("slot", "rank", "kind", "text", "component", "detail"):
        out[c] = out[c].astype(object)
    return out.reset_index(drop=True)


#: Most head columns the per-rank layout draws (a model with 65,536 heads at TP=64 has 1,024 per rank);
#: the rest are summarised in a note and stay in the tidy layout frame.
MAX_LAYOUT_SLOTS = 64
#: The same for the compact preview under a heatmap cell's details.
MAX_COMPACT_SLOTS = 24


def cap_layout_slots(frame: pd.DataFrame, max_slots: int = MAX_LAYOUT_SLOTS
                     ) -> tuple[pd.DataFrame, dict[str, tuple[int, int]]]:
    """Keep at most ``max_slots`` head columns of a :func:`layout_frame` for drawing.

    Every component present keeps its first slots (an equal share of ``max_slots``, at least 4;
    components with fewer slots leave their spare share to the others). Returns the frame to draw and,
    for each component that lost columns, ``(slots drawn, slots per rank)``. The input is not changed.
    """
    if frame is None or len(frame) == 0:
        return frame, {}
    slots = list(dict.fromkeys(frame["slot"]))
    comp_of_slot = dict(zip(frame["slot"], frame["component"], strict=True))
    comps = list(dict.fromkeys(comp_of_slot[x] for x in slots))
    counts = {c: sum(1 for x in slots if comp_of_slot[x] == c) for c in comps}
    if len(slots) <= max_slots:
        return frame, {}
    quota, left = {}, max_slots
    pending = sorted(comps, key=lambda c: counts[c])
    while pending:
        share = max(4, left // len(pending))
        c = pending.pop(0)
        quota[c] = min(counts[c], share)
        left = max(0, left - quota[c])
    keep: set[str] = set()
    cut: dict[str, tuple[int, int]] = {}
    for c in comps:
        keep.update([x for x in slots if comp_of_slot[x] == c][: quota[c]])
        if counts[c] > quota[c]:
            cut[c] = (quota[c], counts[c])
    return frame.loc[frame["slot"].isin(keep)].reset_index(drop=True), cut


def hidden_slots_note(cut: dict[str, tuple[int, int]]) -> str:
    """Plain-text note of the head columns :func:`cap_layout_slots` left out ("" if none)."""
    if not cut:
        return ""
    parts = [f"the first {shown} of {total:,} {COMPONENT_LABELS.get(c, c)}s per rank ({total - shown:,} more not drawn)"
             for c, (shown, total) in cut.items()]
    return "Too many heads per rank to draw: showing " + "; ".join(parts) + "."


#: Width of a head column and height of a rank row of the per-rank layout (pixels): 40 px per head up to
#: 40 heads per rank, 26 px beyond (at most :data:`MAX_LAYOUT_SLOTS` columns are drawn).
LAYOUT_CELL_PX = 40
LAYOUT_ROW_PX = 34


def layout_plot(frame: pd.DataFrame, title: str, max_width: int | None = None) -> hv.Overlay | hv.Text:
    """Ranks x head slots coloured by head kind (replicas and dummy heads in their own shades).

    ``max_width`` (pixels) makes a compact preview: cells shrink to fit and the legend is left out.
    """
    if frame is None or len(frame) == 0:
        return hv.Text(0, 0, "no heads to show").opts(width=600, height=200, title=title, xaxis=None, yaxis=None)
    slots = list(dict.fromkeys(frame["slot"]))
    ranks = sorted(frame["rank"].unique(), key=lambda s: int(s.split()[-1]))
    n_slots, n_ranks = len(slots), len(ranks)
    cell = LAYOUT_CELL_PX if n_slots <= 40 else 26
    if max_width:
        cell = max(8, min(40, (max_width - 110) // max(n_slots, 1)))
        size = {"width": min(max_width, cell * n_slots + 90), "height": max(150, 26 * n_ranks + 80)}
    else:
        # Fixed cells (never squeezed, never stretched): the figure is as wide as its heads need, plus the
        # rank axis and the legend right of the plot; the view puts it in a container that scrolls
        # sideways (tp-layout-scroll), so a wide layout never widens the page.
        size = {"frame_width": max(cell * n_slots, 240), "frame_height": max(LAYOUT_ROW_PX * n_ranks, 90)}
    from bokeh.models import HoverTool

    hover = HoverTool(tooltips="<div style='font-size:14px'>@rank &middot; @slot: @detail</div>")
    present = [k for k in COMPONENT_COLORS if k in set(frame["kind"])]
    hooks = [_style_hook] if max_width else [
        _status_legend_hook({k: COMPONENT_COLORS[k] for k in present}, COMPONENT_LABELS, place="right"), _style_hook]
    kdims = [hv.Dimension("slot", label="heads held by the rank"), hv.Dimension("rank", label="TP rank")]
    hm = hv.HeatMap(frame, kdims, ["kind", "text", "detail", "head", "replica"], group="Layout").opts(
        cmap=dict(COMPONENT_COLORS),
        tools=[hover],
        default_tools=["save", "reset"],
        toolbar=None if max_width else "above",
        line_color="white",
        line_width=1.5,
        **size,
        invert_yaxis=True,
        xaxis="top",
        title=title,
        xlabel="" if max_width else "heads held by the rank",
        ylabel="" if max_width else "TP rank",
        fontsize={"title": "13pt" if max_width else "17pt", "labels": LABEL_SIZE,
                  "xticks": "11pt" if cell >= 26 else "7pt", "yticks": "11pt" if max_width else TICK_SIZE},
        xrotation=90 if cell < 40 else 0,
        hooks=hooks,
        colorbar=False,
    )
    if cell < 26:
        return hm * hv.Labels([], kdims, ["text"])
    labels = hv.Labels(frame, kdims, ["text"]).opts(text_color="black", text_font_size="10pt" if cell >= 40 else "7pt")
    return hm * labels


# ------------------------------------------------------------------------------------------------
# Memory
# ------------------------------------------------------------------------------------------------

GIB = float(1 << 30)
KIB = 1024.0


def per_rank_curves(frame: pd.DataFrame, value: str, ylabel: str, title: str, scale: float = 1.0) -> hv.Overlay:
    """One line per framework of ``frame[value] / scale`` against TP (string categories).

    ``frame`` columns: framework, tp (int), ``value`` (float; NaN where unavailable). Frameworks whose
    values coincide at every TP size share one line labelled "vLLM = SGLang" (otherwise the last-drawn
    line would hide the others); the remaining lines differ in colour, marker and dash.
    """
    curves = []
    tps = [str(t) for t in sorted(frame["tp"].unique())] if len(frame) else []
    palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]
    markers = ["circle", "square", "triangle", "diamond", "inverted_triangle", "hex"]
    dashes = ["solid", "dashed", "dotdash", "dotted", "dashdot", "solid"]
    groups: list[tuple[list[str], pd.DataFrame]] = []
    for fw, sub in frame.groupby("framework", sort=False):
        d = pd.DataFrame({"tp": sub["tp"].astype(int).astype(str).astype(object),
                          "y": sub[value].astype(float) / scale}).dropna().reset_index(drop=True)
        for names, other in groups:
            if len(other) == len(d) and (other["tp"] == d["tp"]).all() and np.allclose(other["y"], d["y"], rtol=1e-9):
                names.append(fw)
                break
        else:
            groups.append(([fw], d))
    for i, (names, d) in enumerate(groups):
        label = " = ".join(framework_label(f) for f in names)
        kd = hv.Dimension("tp", label="tensor-parallel size (TP, GPUs)")
        vd = hv.Dimension("y", label=ylabel)
        color = palette[i % len(palette)]
        c = hv.Curve(d, kd, vd, label=label).opts(color=color, line_width=3, line_dash=dashes[i % len(dashes)])
        sc = hv.Scatter(d, kd, vd, label=label).opts(color=color, size=10, marker=markers[i % len(markers)],
                                                    tools=["hover"])
        curves.extend([c, sc])
    if not curves:
        return hv.Overlay([hv.Curve([])]).opts(title=title)
    return hv.Overlay(curves).opts(
        title=title,
        width=680,
        height=400,
        legend_position="top_right",
        fontsize={"title": "16pt", "labels": "13pt", "xticks": "12pt", "yticks": "12pt", "legend": "12pt"},
        show_grid=True,
        hooks=[_style_hook, _categorical_x_hook(tps)],
    )


MEMORY_PARTS = ("weights", "KV cache", "reserve")
MEMORY_COLORS = {"weights": "#0072B2", "KV cache": "#009E73", "reserve": "#BBBBBB"}


def memory_bars(frame: pd.DataFrame, gpu_gib: float, title: str) -> hv.Overlay:
    """Stacked bars of per-GPU memory (GiB) for each TP size, with the GPU's capacity as a line.

    ``frame`` columns: tp (int), weights_gib, kv_gib, reserve_gib, fits (bool). A TP size whose bar
    rises above the line does not fit; its label says so (``✗``).
    """
    rows = []
    setups = []
    for _, r in frame.iterrows():
        label = f"TP {int(r['tp'])}" + ("" if bool(r["fits"]) else " ✗")
        setups.append(label)
        for part, col in zip(MEMORY_PARTS, ("weights_gib", "kv_gib", "reserve_gib"), strict=True):
            rows.append({"setup": label, "part": part, "GiB": float(max(r[col], 0.0)) if pd.notna(r[col]) else 0.0})
    d = pd.DataFrame(rows, columns=["setup", "part", "GiB"])
    d["setup"] = d["setup"].astype(object)
    d["part"] = d["part"].astype(object)
    bars = hv.Bars(d, [hv.Dimension("setup", label="layout (✗ = does not fit)"), "part"],
                   hv.Dimension("GiB", label="memory per GPU (GiB)")).opts(
        stacked=True,
        cmap=MEMORY_COLORS,
        width=960,
        height=440,
        title=title,
        tools=["hover"],
        legend_position="right",
        fontsize={"title": "16pt", "labels": "13pt", "xticks": "12pt", "yticks": "12pt", "legend": "12pt"},
        show_legend=True,
        hooks=[_style_hook, _capacity_line_hook(gpu_gib, setups)],
    )
    return bars


def _capacity_line_hook(gpu_gib: float, setups: Sequence[str]):
    """Draw the GPU's memory as a dashed horizontal line with its own legend entry, keep the x axis
    categorical (only the TP layouts as ticks) and the y range tall enough to show the line."""

    def hook(plot, element) -> None:
        from bokeh.models import FactorRange, LegendItem, Span

        fig = plot.state
        if not np.isfinite(gpu_gib) or any(getattr(r, "name", "") == "gpu-capacity" for r in fig.renderers):
            return
        fig.add_layout(Span(location=gpu_gib, dimension="width", line_color="#D55E00", line_width=3,
                            line_dash="dashed"))
        if isinstance(fig.x_range, FactorRange) and setups:
            fig.x_range.factors = list(setups)
        # An invisible line whose only job is the legend entry of the capacity line.
        r = fig.line(x=[setups[0]] if setups else [], y=[gpu_gib] if setups else [], line_color="#D55E00",
                     line_width=3, line_dash="dashed", name="gpu-capacity")
        if fig.legend:
            fig.legend[0].items.append(LegendItem(label=f"GPU memory ({gpu_gib:.0f} GiB)", renderers=[r]))
            fig.legend[0].label_text_font_size = "13pt"
        top = getattr(fig.y_range, "end", None)
        if top is not None and top < gpu_gib * 1.08:
            fig.y_range.end = gpu_gib * 1.08

    return hook


# ------------------------------------------------------------------------------------------------
# Bokeh hooks
# ------------------------------------------------------------------------------------------------


def _style_hook(plot, element) -> None:
    """Readable fonts and no outline on every Bokeh figure."""
    fig = plot.state
    fig.title.text_font = FONT
    fig.outline_line_color = None
    for ax in (*fig.xaxis, *fig.yaxis):
        ax.major_label_text_font = FONT
        ax.axis_label_text_font = FONT
        ax.axis_label_text_font_style = "normal"
        ax.major_tick_line_color = None
        ax.axis_line_color = None
    fig.toolbar.logo = None


def _name_hook(name: str):
    """Name the Bokeh figure (the in-browser PNG export finds the validity heatmaps by it)."""

    def hook(plot, element) -> None:
        plot.state.name = name

    return hook


#: Bokeh ``name`` of every validity / disagreement heatmap figure.
HEATMAP_FIGURE_NAME = "tp-validity-heatmap"


def _status_legend_hook(colors: dict[str, str], labels: dict[str, str], present: Sequence[str] = (), ncols: int = 1,
                        place: str = "above"):
    """A hook adding a legend of every key of ``colors`` outside the plot area (``place``: "above" -- between
    the title and the plot -- or "right")."""

    def hook(plot, element) -> None:
        from bokeh.models import Legend, LegendItem

        fig = plot.state
        if any(getattr(x, "name", "") == "status-legend" for x in fig.above + fig.below + fig.right):
            return
        keys = list(colors)
        items = []
        # A zero-size rect at a real data point: invisible on the plot, a filled swatch in the legend
        # (renderers with no data draw no legend glyph).
        data = element.dframe() if hasattr(element, "dframe") else None
        x0 = y0 = None
        if data is not None and len(data):
            x0, y0 = data.iloc[0, 0], data.iloc[0, 1]
        for k in keys:
            if x0 is None:
                r = fig.scatter(x=[], y=[], marker="square", size=16, fill_color=colors[k], line_color=None)
            else:
                r = fig.rect(x=[x0], y=[y0], width=0, height=0, fill_color=colors[k], line_color=None)
            items.append(LegendItem(label=labels.get(k, k), renderers=[r]))
        legend = Legend(
            items=items,
            name="status-legend",
            orientation="vertical",
            ncols=ncols,
            label_text_font_size="13pt",
            label_text_font=FONT,
            label_height=18,
            glyph_height=18,
            glyph_width=18,
            spacing=4,
            padding=4,
            margin=4,
            border_line_color=None,
            location="top_left",
        )
        fig.add_layout(legend, place)

    return hook


def _categorical_x_hook(tps: Sequence[str]):
    """Keep TP categories in numeric order on a curve plot's x axis."""

    def hook(plot, element) -> None:
        from bokeh.models import FactorRange

        if tps and isinstance(plot.state.x_range, FactorRange):
            plot.state.x_range.factors = list(tps)

    return hook
