"""Entry point of ``panel serve dashboard``: runs once per browser session (absolute imports only)."""

import holoviews as hv
import panel as pn

from dashboard.app import PAGE_CSS, serve_session

pn.extension("tabulator", raw_css=[PAGE_CSS], notifications=False)
hv.extension("bokeh", logo=False)

serve_session()
