"""Entry point of ``panel serve dashboard``: runs once per browser session (absolute imports only)."""

import holoviews as hv
import panel as pn

from dashboard.app import PAGE_CSS, serve_session

pn.extension("tabulator", raw_css=[PAGE_CSS], notifications=False)
if hv.Store.current_backend != "bokeh" or "bokeh" not in hv.Store.renderers:
    hv.extension("bokeh", logo=False)  # once per process: re-running it costs every session ~0.2 s

serve_session()
