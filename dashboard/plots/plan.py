"""Plan tab plots: :func:`dashboard.planner.plan` results -> a horizontal bar chart of the concurrent
sequences each accepted layout holds, grouped by framework (plain Bokeh; no Panel, no widgets, no I/O).

The figure is built once per session (:func:`sequences_figure`) and updated in place
(:func:`update_sequences`): a control change then sends the browser new bar data and factors rather than a
new figure, which keeps the Plan tab's repaint short (``scripts/bench_plan_ui.py``).
"""

from __future__ import annotations

import math

import pandas as pd

from dashboard.plots.style import FONT, framework_label

#: Colour of each framework's bars (Okabe-Ito, colour-blind safe; the memory curves use the same order).
FRAMEWORK_COLORS: dict[str, str] = {"vllm": "#0072B2", "sglang": "#D55E00", "tensorrt-llm": "#009E73"}
#: Bars drawn per framework (its best layouts; the table below the chart lists every one).
BARS_PER_FRAMEWORK = 4
#: Height of one bar's row and of the figure's frame around the bars (title, axis, padding), pixels.
ROW_PX = 27
FRAME_PX = 118
#: Name of the chart's Bokeh figure (tests and the benchmark find it by this name).
FIGURE_NAME = "tp-plan-sequences"


def sequences_frame(plan_df: pd.DataFrame, per_framework: int = BARS_PER_FRAMEWORK) -> pd.DataFrame:
    """The bars of the chart: each framework's ``per_framework`` layouts that start with the most
    ``sequences_total`` (then fewest GPUs per replica), frameworks in plan order.

    Columns: framework, label (framework label), layout, sequences (int), fits (bool), y (the nested
    factor ``(label, layout)``), color, text (the value shown at the bar's end)."""
    cols = ["framework", "label", "layout", "sequences", "fits", "y", "color", "text"]
    if plan_df is None or plan_df.empty:
        return pd.DataFrame(columns=cols)
    order = list(dict.fromkeys(plan_df.attrs.get("releases", {}) or plan_df["framework"].tolist()))
    plan_df = plan_df.copy(deep=False)
    plan_df.attrs = {}  # pandas deep-copies attrs into every selection: drop them (dashboard.planner.without_attrs)
    ok = plan_df.loc[plan_df["starts"].to_numpy(dtype=bool)]
    # plain Python over the starting rows (a stable sort, as pandas' kind="stable"): cheaper than a
    # groupby per framework on every repaint
    recs = sorted(zip(ok["framework"].tolist(), ok["layout"].tolist(), ok["sequences_total"].tolist(),
                      ok["fits"].tolist(), ok["gpus_per_replica"].tolist()), key=lambda r: (-int(r[2]), int(r[4])))
    rows = []
    for fw in order:
        label = framework_label(fw)
        for _, layout, seqs, fits in [r[:4] for r in recs if r[0] == fw][:per_framework]:
            n = int(seqs)
            rows.append({"framework": fw, "label": label, "layout": str(layout), "sequences": n, "fits": bool(fits),
                         "y": (label, str(layout)), "color": FRAMEWORK_COLORS.get(fw, "#777777"),
                         "text": f"{n:,}" + ("" if fits else " (below minimum)")})
    return pd.DataFrame(rows, columns=cols)


def sequences_figure():
    """An empty bar chart (a Bokeh figure) for :func:`update_sequences` to fill."""
    from bokeh.core.properties import value
    from bokeh.models import ColumnDataSource, FactorRange, LabelSet, Range1d, Span
    from bokeh.plotting import figure

    src = ColumnDataSource({"y": [], "sequences": [], "color": [], "text": [], "alpha": [], "layout": [],
                            "label": []})
    fig = figure(
        name=FIGURE_NAME, y_range=FactorRange(factors=[(" ", " ")]), x_range=Range1d(0, 1), height=FRAME_PX + ROW_PX,
        sizing_mode="stretch_width", min_width=480, toolbar_location=None, tools="",
        title="Concurrent sequences per layout", css_classes=["tp-plan-chart"],
    )
    fig.hbar(y="y", right="sequences", height=0.72, source=src, color="color", fill_alpha="alpha",
             line_color=None)
    # text_font is a data spec: a bare string names a column (Bokeh warned "nonexistent field" on every
    # render); value() makes the font stack a constant
    fig.add_layout(LabelSet(x="sequences", y="y", text="text", source=src, x_offset=6, y_offset=0,
                            text_baseline="middle", text_font_size="13pt", text_font=value(FONT), text_color="#222222"))
    fig.add_layout(Span(location=0, dimension="height", line_color="#444444", line_dash="dashed", line_width=2,
                        visible=False, name="tp-plan-minimum"))
    fig.title.text_font_size = "17pt"
    fig.title.text_font = FONT
    fig.outline_line_color = None
    fig.ygrid.grid_line_color = None
    fig.xaxis.axis_label = "concurrent sequences (all GPUs)"
    for ax in (*fig.xaxis, *fig.yaxis):
        ax.axis_label_text_font = FONT
        ax.axis_label_text_font_style = "normal"
        ax.axis_label_text_font_size = "14pt"
        ax.major_label_text_font = FONT
        ax.major_label_text_font_size = "13pt"
        ax.major_tick_line_color = None
    fig.yaxis.group_text_font_size = "14pt"
    fig.yaxis.group_text_font = FONT
    fig.yaxis.group_text_color = "#222222"
    fig.yaxis.group_label_orientation = "vertical"
    fig.xaxis.formatter.use_scientific = False
    fig.x_range.start = 0
    return fig


def update_sequences(fig, frame: pd.DataFrame, *, title: str, xlabel: str, minimum: int = 1) -> None:
    """Show ``frame`` (:func:`sequences_frame`) in ``fig`` (:func:`sequences_figure`): bars, factors, x
    range (room for the value labels), height (one row per bar), title, x-axis label and, when
    ``minimum > 1``, a dashed line at the minimum number of sequences."""
    src = fig.renderers[0].data_source
    n = len(frame)
    top = max([int(minimum) if minimum > 1 else 0, *(frame["sequences"].tolist() if n else [1])]) or 1
    # Room right of the longest bar for its value label (~8 characters at 13 pt on a ~700 px wide frame).
    fig.x_range.end = float(top) * 1.22 + 1
    span = next(r for r in fig.center if getattr(r, "name", "") == "tp-plan-minimum")
    span.location = float(minimum)
    span.visible = minimum > 1
    # the factors stay two-level even with no bars (a blank placeholder): switching a FactorRange between
    # nested and flat factors while the renderers still hold the other kind makes BokehJS throw
    # "Attempted to map 2 levels of factors with an L1FactorMap"
    fig.y_range.factors = list(reversed(frame["y"].tolist())) if n else [(" ", " ")]
    src.data = {
        "y": list(frame["y"]), "sequences": [int(x) for x in frame["sequences"]], "color": list(frame["color"]),
        "text": list(frame["text"]), "alpha": [1.0 if f else 0.45 for f in frame["fits"]],
        "layout": list(frame["layout"]), "label": list(frame["label"]),
    }
    fig.height = FRAME_PX + ROW_PX * max(n, 1) + (12 if n and frame["framework"].nunique() > 1 else 0)
    fig.title.text = title
    fig.xaxis.axis_label = xlabel


def nice_count(x: float) -> str:
    """A whole count with thousands separators ("–" for NaN)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{int(x):,}"
