"""Bokeh server hooks of the ``dashboard`` app directory (``panel serve dashboard`` loads this file).

``on_server_loaded`` runs once when the server starts, before any browser connects: it imports the
app, loads the catalog, computes the default validity grid and heatmap cells into the process-wide
read-only caches, and builds one throwaway session, so the first visitor's page is as fast as every
later one's (no ``--warm`` flag needed). A catalog that cannot be loaded (``TP_PLANNER_CATALOG`` naming a
missing or unreadable file) is logged as one line and left to the sessions, which show it on the page;
only an unexpected failure after the catalog loaded logs a traceback.
"""

import logging
import time

log = logging.getLogger("dashboard")


def on_server_loaded(server_context) -> None:  # noqa: ARG001 -- Bokeh's hook signature
    t0 = time.perf_counter()
    from dashboard.state import catalog_path, load_app_data

    path = catalog_path()
    try:
        load_app_data(path)
    except Exception as exc:  # noqa: BLE001 -- any unreadable catalog: one line, the page says the same
        log.warning("dashboard warm-up skipped: could not load the catalog (%s): %s",
                    path or "shipped data/catalog.parquet", " ".join(str(exc).split()) or type(exc).__name__)
        return
    try:
        from dashboard.app import warm_up

        warm_up()
    except Exception:  # noqa: BLE001 -- never stop the server: sessions report the problem visibly
        log.exception("dashboard warm-up failed; the first session will retry")
        return
    # The catalog, its grids and the heatmap cells now live for the whole process: move them (and the
    # imported modules) out of the collector's view, so each full collection -- Panel runs one after a
    # session closes -- does not walk them again while a user waits for a repaint.
    import gc

    gc.collect()
    gc.freeze()
    log.info("dashboard warm-up done in %.2f s", time.perf_counter() - t0)


def on_session_destroyed(session_context) -> None:  # noqa: ARG001 -- Bokeh's hook signature
    """Give closed sessions' memory back to the operating system.

    A session's Bokeh document, Panel views and per-session frames become garbage when Bokeh destroys
    the session, but CPython's collector only frees their reference cycles on its own schedule, and glibc's
    allocator keeps freed heap pages mapped. After a burst of sessions the server's resident memory then
    stays near its peak. Shortly after a session is destroyed (once for a burst of them: the hook runs
    before Bokeh drops the document), a full collection followed by ``malloc_trim(0)`` (glibc only;
    skipped elsewhere) returns that memory, so the server comes back near its level before the sessions.
    """
    global _trim_pending
    if _trim_pending:
        return
    _trim_pending = True
    try:
        from tornado.ioloop import IOLoop

        IOLoop.current().call_later(_TRIM_DELAY_S, _collect_and_trim)
    except Exception:  # noqa: BLE001 -- no loop (called outside the server): do it now
        _collect_and_trim()


_TRIM_DELAY_S = 2.0
_trim_pending = False


def _collect_and_trim() -> None:
    import ctypes
    import ctypes.util
    import gc

    global _trim_pending
    _trim_pending = False
    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass
