"""DataFrames -> plots for the dashboard, one module per view (no Panel, no widgets, no I/O).

Every function takes tidy frames from the pure modules (:func:`dashboard.rules.grid`,
:func:`dashboard.layout.rank_layout`, :mod:`dashboard.memory`) and returns a plot styled for a
meeting-room screen (large titles and tick labels, a colour-blind-safe palette).

* :mod:`dashboard.plots.heatmap` -- the Validity tab's heatmaps (plain Bokeh figures) and their row-window
  machinery, the status palettes and legends (also used by the cell details and the report).
* :mod:`dashboard.plots.layout` -- the per-rank layout plot (HoloViews).
* :mod:`dashboard.plots.memory` -- the memory curves and bars (HoloViews).
* :mod:`dashboard.plots.style` -- fonts, :func:`~dashboard.plots.style.framework_label` and the Bokeh
  style hook the others share.

The Plan tab's plots go to ``dashboard/plots/plan.py`` (one module per view) when that tab is built.

Import the module a view needs (``from dashboard.plots import heatmap``); this package re-exports
nothing and has no side effects.
"""
