"""Bokeh server hooks of the ``dashboard`` app directory (``panel serve dashboard`` loads this file).

``on_server_loaded`` runs once when the server starts, before any browser connects: it imports the
app, loads the catalog, computes the default validity grid and heatmap cells into the process-wide
read-only caches, and builds one throwaway session, so the first visitor's page is as fast as every
later one's (no ``--warm`` flag needed). A failure here is logged and left to the sessions, which show
it on the page.
"""

import logging
import time

log = logging.getLogger("dashboard")


def on_server_loaded(server_context) -> None:  # noqa: ARG001 -- Bokeh's hook signature
    t0 = time.perf_counter()
    try:
        from dashboard.app import warm_up

        warm_up()
    except Exception:  # noqa: BLE001 -- never stop the server: sessions report the problem visibly
        log.exception("dashboard warm-up failed; the first session will retry")
        return
    log.info("dashboard warm-up done in %.2f s", time.perf_counter() - t0)
