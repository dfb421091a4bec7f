"""Bokeh server hooks of the ``dashboard`` app directory (``panel serve dashboard`` loads this file).

``on_server_loaded`` runs once when the server starts, before any browser connects: it imports the
app, loads the catalog, computes the default validity grid and heatmap cells into the process-wide
read-only caches, and builds one throwaway session, so the first visitor's page is as fast as every
later one's (no ``--warm`` flag needed). A catalog that cannot be loaded (``TP_PLANNER_CATALOG`` naming a
missing or unreadable file) is logged as one line and left to the sessions, which show it on the page;
only an unexpected failure after the catalog loaded logs a traceback. It also lets the web server parse
long links (:func:`allow_long_links`).

``process_request`` bounds what a session's token carries of the page's request, so the page's websocket
request stays within the web server's header limit whatever the link (:func:`process_request`).
"""

import logging
import time

log = logging.getLogger("dashboard")


#: Largest request argument (key + values, bytes) carried in a session's token (:func:`process_request`).
TOKEN_MAX_ARGUMENT = 4096
#: Most request arguments and most bytes of them a session's token carries.
TOKEN_MAX_ARGUMENTS = 64
TOKEN_MAX_ARGUMENT_BYTES = 16 * 1024
#: Largest request header value carried in a session's token (bytes).
TOKEN_MAX_HEADER = 4096


def allow_long_links() -> None:
    """Let the web server parse a query string of up to :data:`dashboard.state.MAX_QUERY_FIELDS` fields.

    Tornado (6.5.8+) answers HTTP 400, before the app is asked, to a request whose query string has more
    than 1,000 fields (``ParseUrlEncodedConfig.max_arguments``, applied to query strings too). The request
    line itself is bounded at 64 KiB (``max_header_size``), so a query holds at most ~32,000 fields;
    parsing that many costs milliseconds. With the limit raised, such a link opens the page, which says
    what it ignored. (Process-wide: it also bounds urlencoded request bodies, which this app never reads.)
    """
    try:
        from tornado import httputil

        from dashboard.state import MAX_QUERY_FIELDS

        cfg = httputil.ParseBodyConfig()  # (Tornado's defaults, but for the number of arguments)
        cfg.urlencoded.max_arguments = MAX_QUERY_FIELDS
        httputil.set_parse_body_config(cfg)
    except (ImportError, AttributeError):  # an older Tornado has no such limit
        pass


def process_request(request) -> dict:
    """What the session token carries of the page's request: its arguments and headers, bounded.

    Bokeh puts the page request's arguments, headers and cookies into the session token, and the page
    sends the token back in a header of its websocket request (``Sec-WebSocket-Protocol``). A link
    near the 64 KiB request-line limit (a 60 KB ``add=``) made that header larger than the web server
    accepts (Tornado's ``max_header_size``, 64 KiB): the websocket was refused and the page stayed blank.
    The app reads the link from the page's address (:func:`dashboard.app.serve_session`: the request URI,
    not the token), and refuses oversized values there with a notice, so the token keeps only what fits:
    at most :data:`TOKEN_MAX_ARGUMENTS` arguments of at most :data:`TOKEN_MAX_ARGUMENT` bytes each and
    :data:`TOKEN_MAX_ARGUMENT_BYTES` in all, and header values of at most :data:`TOKEN_MAX_HEADER` bytes.
    (Bokeh merges this dict into the token's payload: ``session_handler.get_session``.)
    """
    args: dict[str, list[bytes]] = {}
    total = 0
    for key, values in (getattr(request, "arguments", None) or {}).items():
        vals = list(values) if isinstance(values, list | tuple) else [values]
        size = len(str(key)) + sum(len(v) for v in vals)
        if size > TOKEN_MAX_ARGUMENT or total + size > TOKEN_MAX_ARGUMENT_BYTES or len(args) >= TOKEN_MAX_ARGUMENTS:
            continue
        args[key] = vals
        total += size
    out: dict = {"arguments": args}
    headers = getattr(request, "headers", None)
    if headers is not None and any(len(str(v)) > TOKEN_MAX_HEADER for v in headers.values()):
        out["headers"] = {k: v for k, v in headers.items() if len(str(v)) <= TOKEN_MAX_HEADER and k != "Cookie"}
    return out


def on_server_loaded(server_context) -> None:  # noqa: ARG001 -- Bokeh's hook signature
    allow_long_links()
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
