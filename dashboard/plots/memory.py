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
        hooks=[style_hook, _categorical_x_hook(tps), _zero_based_y],
    )


def _zero_based_y(plot, element) -> None:
    """Per-rank curves on an axis from 0: a flat 68.6 KiB line drawn on 67.5-69.5 looked like a change."""
    fig = plot.state
    ys = [v for el in element for v in np.asarray(el.dimension_values(1), dtype=float) if np.isfinite(v)] \
        if isinstance(element, hv.Overlay) else []
    fig.y_range.start = 0.0
    if ys:
        fig.y_range.end = max(ys) * 1.12 or 1.0


MEMORY_PARTS = ("weights", "KV cache", "reserve")
MEMORY_COLORS = {"weights": "#0072B2", "KV cache": "#009E73", "reserve": "#BBBBBB"}
#: Fill of a layout the framework refuses or the deployment has too few GPUs for: grey, hatched.
NOT_RUN_FILL, NOT_RUN_HATCH = "#E4E4E4", "/"
#: The y axis runs to at most this many times the card's memory (bars above are clipped, their value
#: written at the top), so a 627 GiB single-GPU bar does not shrink an 80 GiB card to the bottom fifth.
AXIS_CAPACITY_FACTOR = 2.0


def bar_kind(row) -> str:
    """How a capacity row's bar is drawn: ``refused`` (the framework refuses the TP size), ``gpus`` (the
    deployment has fewer GPUs than one replica needs), ``over`` (memory does not fit the card) or ``fits``."""
    if str(row.get("refused", "") or ""):
        return "refused"
    if not bool(row.get("enough_gpus", True)):
        return "gpus"
    return "fits" if bool(row.get("fits", False)) else "over"


_SUFFIX = {"fits": "", "over": " ✗", "refused": " refused", "gpus": " too few GPUs"}


def memory_bars(frame: pd.DataFrame, gpu_gib: float, title: str) -> hv.Overlay:
    """Stacked bars of per-GPU memory (GiB) for each TP size, with the GPU's capacity as a line.

    ``frame`` columns: tp (int), weights_gib, kv_gib, reserve_gib, fits (bool); optional refused (text)
    and enough_gpus (bool). A layout that runs but does not fit the card is drawn stacked, labelled ``✗``;
    a layout the framework refuses, or one needing more GPUs than the deployment has, is one grey hatched
    bar labelled "refused" / "too few GPUs" (:func:`bar_kind`), never like a fitting bar. The y axis fits
    the card and the bars up to :data:`AXIS_CAPACITY_FACTOR` times the card's memory; taller bars are
    clipped with their total (GiB, with ``▲``) written at the top.
    """
    rows = []
    setups, kinds, totals = [], [], []
    for _, r in frame.iterrows():
        kind = bar_kind(r)
        label = f"TP {int(r['tp'])}{_SUFFIX[kind]}"
        setups.append(label)
        kinds.append(kind)
        parts = {part: (float(max(r[col], 0.0)) if pd.notna(r[col]) else 0.0)
                 for part, col in zip(MEMORY_PARTS, ("weights_gib", "kv_gib", "reserve_gib"), strict=True)}
        totals.append(sum(parts.values()))
        for part, gib in parts.items():
            rows.append({"setup": label, "part": part, "GiB": gib if kind in ("fits", "over") else 0.0})
    d = pd.DataFrame(rows, columns=["setup", "part", "GiB"])
    d["setup"] = d["setup"].astype(object)
    d["part"] = d["part"].astype(object)
    bars = hv.Bars(d, [hv.Dimension("setup", label="layout (✗ = does not fit the card; grey = not run)"), "part"],
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
        # ten or more layouts with their marks do not fit side by side at this width: slant them
        xrotation=30 if len(setups) > 6 else 0,
        hooks=[style_hook, _capacity_line_hook(gpu_gib, setups, kinds, totals)],
    )
    return bars


def axis_top(gpu_gib: float, totals: Sequence[float]) -> float:
    """Top of the memory bars' y axis (GiB): room for the card's line and the tallest bar, but at most
    :data:`AXIS_CAPACITY_FACTOR` times the card's memory (plus a margin for the labels)."""
    tallest = max([t for t in totals if np.isfinite(t)], default=0.0)
    if not np.isfinite(gpu_gib) or gpu_gib <= 0:
        return max(tallest, 1.0) * 1.12
    return max(gpu_gib * 1.15, min(tallest, gpu_gib * AXIS_CAPACITY_FACTOR) * 1.12)


def _capacity_line_hook(gpu_gib: float, setups: Sequence[str], kinds: Sequence[str] = (),
                        totals: Sequence[float] = ()):
    """Draw the GPU's memory as a dashed horizontal line with its own legend entry, keep the x axis
    categorical (only the TP layouts as ticks), fix the y axis to :func:`axis_top`, draw the layouts that
    do not run as grey hatched bars and write the total on every bar clipped at the top."""

    def hook(plot, element) -> None:
        from bokeh.models import ColumnDataSource, FactorRange, LabelSet, LegendItem, Span

        fig = plot.state
        if any(getattr(r, "name", "") == "gpu-capacity" for r in fig.renderers):
            return
        top = axis_top(gpu_gib, totals)
        fig.y_range.start, fig.y_range.end = 0.0, top
        if isinstance(fig.x_range, FactorRange) and setups:
            fig.x_range.factors = list(setups)
        cut = [(s, t) for s, t, k in zip(setups, totals, kinds, strict=False) if t > top]
        grey = [(s, min(t, top) if t > 0 else top * 0.25) for s, t, k in zip(setups, totals, kinds, strict=False)
                if k in ("refused", "gpus")]
        if grey:
            g = fig.vbar(x=[s for s, _ in grey], top=[h for _, h in grey], width=0.8, fill_color=NOT_RUN_FILL,
                         hatch_pattern=NOT_RUN_HATCH, hatch_color="#9A9A9A", hatch_alpha=0.9, line_color="#9A9A9A",
                         name="not-run")
            if fig.legend:
                fig.legend[0].items.append(LegendItem(label="not run (refused / too few GPUs)", renderers=[g]))
        if cut:
            src = ColumnDataSource({"x": [s for s, _ in cut], "y": [top] * len(cut),
                                    "text": [f"{t:,.0f}▲" for _, t in cut]})
            fig.add_layout(LabelSet(x="x", y="y", text="text", source=src, text_align="center", y_offset=-18,
                                    text_font_size="10pt", text_color="#222222", name="clipped-totals",
                                    background_fill_color="#ffffff", background_fill_alpha=0.8))
        if not np.isfinite(gpu_gib):
            return
        fig.add_layout(Span(location=gpu_gib, dimension="width", line_color="#D55E00", line_width=3,
                            line_dash="dashed"))
        # An invisible line whose only job is the legend entry of the capacity line.
        r = fig.line(x=[setups[0]] if setups else [], y=[gpu_gib] if setups else [], line_color="#D55E00",
                     line_width=3, line_dash="dashed", name="gpu-capacity")
        if fig.legend:
            fig.legend[0].items.append(LegendItem(label=f"GPU memory ({gpu_gib:.0f} GiB)", renderers=[r]))
            fig.legend[0].label_text_font_size = "13pt"

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
