"""Per-rank layout plot: :func:`dashboard.layout.rank_layout` frames -> a ranks x heads HoloViews heatmap
(no Panel, no widgets, no I/O).

The plot draws its legend in the figure. HoloViews needs a plotting extension loaded
(``hv.extension("bokeh")``) before the elements are rendered; the app and the tests do that.
"""

from __future__ import annotations

from collections.abc import Sequence

import holoviews as hv
import pandas as pd

from dashboard.plots.style import FONT, LABEL_SIZE, TICK_SIZE, style_hook

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


def cell_px(n_slots: int, max_width: int | None = None) -> int:
    """Width (pixels) of one head column: :data:`LAYOUT_CELL_PX` up to 40 heads per rank, 26 beyond; in a
    compact preview ``max_width`` pixels wide, what fits (8 to 40)."""
    if max_width:
        return max(8, min(40, (max_width - 110) // max(n_slots, 1)))
    return LAYOUT_CELL_PX if n_slots <= 40 else 26


def preview_height(n_ranks: int) -> int:
    """Height (pixels) of the compact preview of ``n_ranks`` ranks."""
    return max(150, 26 * n_ranks + 80)


def layout_plot(frame: pd.DataFrame, title: str, max_width: int | None = None) -> hv.Overlay | hv.Text:
    """Ranks x head slots coloured by head kind (replicas and dummy heads in their own shades).

    ``max_width`` (pixels) makes a compact preview: cells shrink to fit and the legend is left out.
    """
    if frame is None or len(frame) == 0:
        return hv.Text(0, 0, "no heads to show").opts(width=600, height=200, title=title, xaxis=None, yaxis=None)
    slots = list(dict.fromkeys(frame["slot"]))
    ranks = sorted(frame["rank"].unique(), key=lambda s: int(s.split()[-1]))
    n_slots, n_ranks = len(slots), len(ranks)
    cell = cell_px(n_slots, max_width)
    if max_width:
        # (the full width: a narrower plot clipped its title, "TP = 16" read as "TP = 1")
        size = {"width": max_width, "height": preview_height(n_ranks)}
    else:
        # Fixed cells (never squeezed, never stretched): the figure is as wide as its heads need, plus the
        # rank axis and the legend right of the plot; the view puts it in a container that scrolls
        # sideways (tp-layout-scroll), so a wide layout never widens the page.
        size = {"frame_width": max(cell * n_slots, 240), "frame_height": max(LAYOUT_ROW_PX * n_ranks, 90)}
    from bokeh.models import HoverTool

    hover = HoverTool(tooltips="<div style='font-size:14px'>@rank &middot; @slot: @detail</div>")
    present = [k for k in COMPONENT_COLORS if k in set(frame["kind"])]
    hooks = [style_hook] if max_width else [
        _status_legend_hook({k: COMPONENT_COLORS[k] for k in present}, COMPONENT_LABELS, place="right"), style_hook]
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


# -------------------------------------------------------------------------------------- compact preview ----
#: Width (pixels) of the compact preview under a heatmap cell's details.
PREVIEW_PX = 360
_PREVIEW_COLUMNS = ("slot", "rank", "kind", "text", "detail")
_PREVIEW_TOOLTIP = "<div style='font-size:14px'>@rank &middot; @slot: @detail</div>"


def layout_preview_figure():
    """The compact per-rank preview as a plain Bokeh figure, empty: the look of :func:`layout_plot` with
    ``max_width=PREVIEW_PX`` (ranks x head slots, cells coloured by head kind, head numbers in the cells
    when they fit, no toolbar, no legend). Fill and refill it with :func:`update_layout_preview`: the
    figure, its data source and ranges stay the same Bokeh models, so a new selection sends the browser
    their new values only, not a new plot."""
    from bokeh.models import CategoricalColorMapper, ColumnDataSource, FactorRange, HoverTool, Label
    from bokeh.plotting import figure

    source = ColumnDataSource({c: [] for c in _PREVIEW_COLUMNS}, name="tp-layout-preview-cells")
    fig = figure(
        x_range=FactorRange(factors=[]), y_range=FactorRange(factors=[]), width=PREVIEW_PX,
        height=preview_height(0), x_axis_location="above", toolbar_location=None,
        tools="wheel_zoom,save,reset,pan,box_zoom", output_backend="webgl", min_border=10,
        name="tp-layout-preview", margin=(5, 10),
    )
    fig.toolbar.logo = None
    next(t for t in fig.tools if type(t).__name__ == "WheelZoomTool").zoom_together = "none"
    mapper = CategoricalColorMapper(factors=list(COMPONENT_COLORS), palette=list(COMPONENT_COLORS.values()),
                                    nan_color="white")
    cells = fig.rect(x="slot", y="rank", width=1, height=1, source=source, line_color="white", line_width=1.5,
                     fill_color={"field": "kind", "transform": mapper})
    fig.text(x="slot", y="rank", text="text", source=source, text_color="black", text_font_size="10pt",
             text_align="center", text_baseline="middle")
    fig.tools.insert(0, HoverTool(renderers=[cells], tooltips=_PREVIEW_TOOLTIP))
    fig.add_layout(Label(x=PREVIEW_PX // 2 - 60, y=40, x_units="screen", y_units="screen", text="no heads to show",
                         visible=False, name="tp-layout-preview-empty", text_font=FONT))
    fig.title.text_font = FONT
    fig.title.text_font_size = "13pt"
    fig.title.text_color = "black"
    fig.outline_line_color = None
    fig.xgrid.grid_line_color = None
    fig.ygrid.grid_line_color = None
    for ax in (*fig.xaxis, *fig.yaxis):
        ax.axis_label = ""
        ax.major_label_text_font = FONT
        ax.axis_label_text_font = FONT
        ax.axis_label_text_font_style = "normal"
        ax.axis_label_text_font_size = LABEL_SIZE
        ax.major_tick_line_color = None
        ax.axis_line_color = None
        ax.major_label_text_font_size = "11pt"
        ax.group_text_font_size = "11pt"
    return fig


def update_layout_preview(fig, frame: pd.DataFrame | None, title: str, max_width: int = PREVIEW_PX) -> None:
    """Show ``frame`` (a :func:`layout_frame`, capped with :func:`cap_layout_slots`) in the preview
    ``fig`` of :func:`layout_preview_figure`, in place: only the properties whose values change are set
    (each set is a patch to the browser). Sizes, fonts and label rotation follow :func:`layout_plot`."""
    import math

    cells, labels = fig.renderers[0], fig.renderers[1]  # (as layout_preview_figure adds them)
    empty = next(a for a in fig.center if getattr(a, "name", "") == "tp-layout-preview-empty")
    if frame is None or len(frame) == 0:
        slots, ranks, data = [], [], {c: [] for c in _PREVIEW_COLUMNS}
    else:
        slots = list(dict.fromkeys(frame["slot"]))
        ranks = sorted(frame["rank"].unique(), key=lambda r: int(str(r).split()[-1]))
        data = {c: frame[c].astype(object).tolist() for c in _PREVIEW_COLUMNS}
    cell = cell_px(len(slots), max_width)

    def put(model, **values):
        changed = {k: v for k, v in values.items() if getattr(model, k) != v}
        if changed:
            model.update(**changed)

    # (factors before data: the browser maps the new cells on the new axes)
    put(fig.x_range, factors=[str(x) for x in slots])
    put(fig.y_range, factors=[str(r) for r in reversed(ranks)])  # rank 0 on top
    cells.data_source.data = data
    put(fig, width=max_width, height=preview_height(len(ranks)) if ranks else 200)
    put(fig.title, text=title)
    xaxis, yaxis = fig.xaxis[0], fig.yaxis[0]
    xfont = "11pt" if cell >= 26 else "7pt"
    put(xaxis, major_label_orientation=("horizontal" if cell >= 40 else math.pi / 2), major_label_text_font_size=xfont,
        group_text_font_size=xfont)
    put(labels, visible=bool(slots) and cell >= 26)
    put(labels.glyph, text_font_size="10pt" if cell >= 40 else "7pt")
    put(empty, visible=not slots)
    put(xaxis, visible=bool(slots))
    put(yaxis, visible=bool(slots))
