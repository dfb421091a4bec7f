"""Look shared by the dashboard's plots: fonts, framework labels and the Bokeh style hook (no Panel).

Plot modules (:mod:`dashboard.plots.heatmap`, :mod:`dashboard.plots.layout`,
:mod:`dashboard.plots.memory`) import from here; nothing here imports them.
"""

from __future__ import annotations

from dashboard import schema

TITLE_SIZE = "20pt"
LABEL_SIZE = "15pt"
TICK_SIZE = "12pt"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


def framework_label(fw: str) -> str:
    """Human label of a framework id."""
    return schema.FRAMEWORK_LABELS.get(fw, fw)


def style_hook(plot, element) -> None:
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
