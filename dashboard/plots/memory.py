"""Memory plots: :mod:`dashboard.memory` frames -> per-rank curves and per-GPU stacked bars against the
GPU's capacity (HoloViews elements; no Panel, no widgets, no I/O).

The plots draw their legend in the figure. HoloViews needs a plotting extension loaded
(``hv.extension("bokeh")``) before the elements are rendered; the app and the tests do that.
"""

from __future__ import annotations

from collections.abc import Sequence

import holoviews as hv
import numpy as np
import pandas as pd

from dashboard.plots.style import framework_label, style_hook

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
        width=480,
        height=400,
        legend_position="top_right",
        fontsize={"title": "16pt", "labels": "13pt", "xticks": "12pt", "yticks": "12pt", "legend": "12pt"},
        show_grid=True,
        hooks=[style_hook, _categorical_x_hook(tps)],
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
    bars = hv.Bars(d, [hv.Dimension("setup", label="layout (✗ = does not fit, or refused)"), "part"],
                   hv.Dimension("GiB", label="memory per GPU (GiB)")).opts(
        stacked=True,
        cmap=MEMORY_COLORS,
        width=900,
        height=440,
        title=title,
        tools=["hover"],
        legend_position="right",
        fontsize={"title": "16pt", "labels": "13pt", "xticks": "12pt", "yticks": "12pt", "legend": "12pt"},
        show_legend=True,
        # ten or more layouts with "✗" marks do not fit side by side at this width: slant them
        xrotation=30 if len(setups) > 8 else 0,
        hooks=[style_hook, _capacity_line_hook(gpu_gib, setups)],
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


def _categorical_x_hook(tps: Sequence[str]):
    """Keep TP categories in numeric order on a curve plot's x axis."""

    def hook(plot, element) -> None:
        from bokeh.models import FactorRange

        if tps and isinstance(plot.state.x_range, FactorRange):
            plot.state.x_range.factors = list(tps)

    return hook


#: Colour of each part of :func:`gpu_breakdown` (keys: :data:`dashboard.memory.BREAKDOWN_PARTS`); the
#: weights and KV colours match :data:`MEMORY_COLORS`.
BREAKDOWN_COLORS = {
    "weights": "#0072B2", "activation peak": "#E69F00", "CUDA graphs": "#CC79A7", "non-torch": "#56B4E9",
    "reserve implied by your log": "#D55E00", "KV cache": "#009E73", "free": "#DDDDDD",
}


def gpu_breakdown(parts: pd.DataFrame, gpu_gib: float, title: str, *, width: int = 900) -> hv.Bars:
    """One horizontal stacked bar of a GPU's memory (GiB) split into parts, left to right in ``parts`` order.

    ``parts`` columns: part (a key of :data:`BREAKDOWN_COLORS`), gib. The x axis runs from 0 to the card's
    memory ``gpu_gib`` (GiB); the legend sits below the bar so long part names never widen the figure.
    """
    order = [str(p) for p in parts["part"]]
    d = pd.DataFrame({"gpu": "one GPU", "part": parts["part"].astype(str).astype(object),
                      "GiB": parts["gib"].astype(float).clip(lower=0.0)})
    d["gpu"] = d["gpu"].astype(object)
    total = float(d["GiB"].sum())
    right = max(total, gpu_gib if np.isfinite(gpu_gib) else 0.0) * 1.01 or 1.0

    def hook(plot, element) -> None:
        fig = plot.state
        fig.x_range.start, fig.x_range.end = 0.0, right
        for leg in fig.legend:  # one row of entries under the bar
            leg.orientation = "horizontal"

    return hv.Bars(d, [hv.Dimension("gpu", label="GPU"), "part"], hv.Dimension("GiB", label="memory per GPU (GiB)")).opts(
        stacked=True, invert_axes=True, cmap={p: BREAKDOWN_COLORS.get(p, "#999999") for p in order},
        width=width, height=200, title=title, tools=["hover"], show_legend=True, legend_position="bottom",
        fontsize={"title": "15pt", "labels": "13pt", "xticks": "12pt", "yticks": "12pt", "legend": "12pt"},
        hooks=[style_hook, hook], toolbar=None, default_tools=[],
    )
