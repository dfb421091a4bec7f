"""The Panel app: one :class:`DashboardApp` per browser session (or notebook cell).

``panel serve dashboard`` runs ``dashboard/main.py``, which calls :func:`serve_session`. From Python::

    import holoviews as hv, panel as pn
    from dashboard.app import DashboardApp
    hv.extension("bokeh"); pn.extension("tabulator")
    app = DashboardApp(catalog=df)          # or DashboardApp() for the shipped catalog
    app                                     # renders inline in a notebook (plain layout, no template)

Catalog: the ``TP_PLANNER_CATALOG`` environment variable names a parquet catalog to open instead of the
shipped ``data/catalog.parquet``. The catalog and its validity grid are loaded once per process and
shared read-only (:func:`dashboard.state.load_app_data`).

URL: with ``sync_url=True`` the whole :class:`~dashboard.state.PlannerState` is mirrored in the page's
query string (``?frameworks=vllm,sglang&model=meta-llama/Llama-3.1-8B&tp=8``); a malformed or hostile
query falls back to defaults and the page shows what was ignored.
"""

from __future__ import annotations

from functools import partial

import pandas as pd
import panel as pn
import param

from dashboard.state import (
    TAB_LABELS,
    TABS,
    AppData,
    PlannerState,
    app_data_from_catalog,
    catalog_path,
    load_app_data,
)
from dashboard.views import CatalogView, Controls, ExportPanel, LayoutView, MemoryView, PlanView, ValidityView
from dashboard.views.common import DEFER_MS, building_indicator, esc, notice_html

TITLE = "TP planner: which tensor-parallel sizes each serving framework accepts"

#: CSS for the whole page: large type for a meeting-room screen; no web fonts (system stack only).
PAGE_CSS = """
:root, body { --body-font: system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif; }
body { font-family: var(--body-font); font-size: 16px; }
.bk-panel-models-markup-HTML h2, h2 { font-size: 22px; }
"""

_STATE_PARAMS = [p for p in PlannerState.param if p != "name"]

#: Browser-side script of a tab click (``cb_obj``: the Tabs model; ``__TABS__``: the tab ids, in order): the
#: Location model's ``search`` gets the link's ``tab=`` at once, in the browser, so the address bar follows
#: the click even while the server is still busy with an earlier change. The server's own URL write for the
#: same state (:meth:`DashboardApp._push_url`) then finds the address already right. ``tab`` is the last
#: setting of :class:`PlannerState`, so the server writes it last, as this does.
_TAB_URL_JS = """
const tabs = __TABS__, tab = tabs[cb_obj.active];
if (tab !== undefined) {
  for (const m of cb_obj.document.all_models) {
    if (!String(m.type || "").endsWith("Location")) continue;
    const keep = String(m.search || "").replace(/^[?]/, "").split("&").filter((p) => p && !p.startsWith("tab="));
    if (tab !== __DEFAULT__) keep.push("tab=" + tab);
    const search = keep.length ? "?" + keep.join("&") : "";
    if (m.search !== search) m.search = search;
  }
}
"""

#: Page script (``document_ready``): on Back / Forward, tell the Location model the new address silently
#: and report it to the server through ``sink`` (a hidden Div: query string, NUL, a counter).
_POPSTATE_JS = """
let n = 0;
window.addEventListener("popstate", () => {
  for (const m of sink.document.all_models) {
    if (String(m.type || "").endsWith("Location")) {
      m.setv({search: window.location.search, href: window.location.href}, {silent: true});
    }
  }
  n += 1;
  sink.text = window.location.search + "\\u0000" + n;
});
"""

#: Page script (``document_ready``): report the width of the template's main area (``#main``, pixels) to
#: the server through ``sink`` (a hidden Div), at once and 150 ms after it last changed (window resized,
#: sidebar opened or closed), so the validity heatmap fits the page (:meth:`ValidityView.set_main_width`).
_MAIN_WIDTH_JS = """
const el = document.getElementById("main");
if (el) {
  let timer = null, last = -1;
  const report = () => {
    const w = Math.round(el.getBoundingClientRect().width);
    if (w > 0 && w !== last) { last = w; sink.text = String(w); }
  };
  if (typeof ResizeObserver !== "undefined") {
    new ResizeObserver(() => { clearTimeout(timer); timer = setTimeout(report, 150); }).observe(el);
  }
  report();
}
"""

class DashboardApp(pn.viewable.Viewer):
    """The whole dashboard for one session: controls, validity / layout / memory / catalog views, exports.

    Parameters
    ----------
    catalog : DataFrame, optional
        A catalog (schema columns). Default: the one named by ``TP_PLANNER_CATALOG`` or the shipped one.
    data : AppData, optional
        Pre-built process data (overrides ``catalog``).
    query : str or mapping, optional
        URL query to start from (``"?model=org/name&tp=8"``); refused values become :attr:`notices`.
    sync_url : bool
        Mirror the state into ``pn.state.location`` (served sessions).
    """

    state = param.ClassSelector(class_=PlannerState, doc="This session's choices.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")
    notices = param.List(default=[], item_type=str, doc="Plain-text notices about the link's ignored values.")

    def __init__(self, catalog: pd.DataFrame | None = None, *, data: AppData | None = None,
                 query=None, sync_url: bool = False, **params):
        if data is None:
            data = app_data_from_catalog(catalog) if catalog is not None else load_app_data(catalog_path())
        state = params.pop("state", None) or PlannerState()
        notices: list[str] = []
        if query:
            notices = _apply_link(state, data, query)
        super().__init__(state=state, data=data, notices=notices, **params)
        #: Width of the page's main area (pixels) as the browser last reported it; None until then.
        self.main_px: int | None = None
        self.controls = Controls(state=state, data=data)
        self.export = ExportPanel(state=state, data=data)
        #: "Add a model" (in the sidebar's controls): a model added there joins this session's data only.
        self.add_model = self.controls.add_model
        self.add_model.param.watch(lambda e: self._set_data(e.new), "data")
        self.notice_pane = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-url-notice"])
        self._show_notices()
        # Views are built when their tab is first shown (the validity view at once unless the link opens
        # another tab): a session that never opens the catalog never builds its 130-row table.
        self._views: dict[str, pn.viewable.Viewer] = {}
        self._slots = {t: pn.Column(sizing_mode="stretch_width", css_classes=[f"tp-tab-{t}"]) for t in TABS}
        self.tabs = pn.Tabs(
            *[(TAB_LABELS[t], self._slots[t]) for t in TABS],
            dynamic=True,
            sizing_mode="stretch_width",
            css_classes=["tp-tabs"],
            stylesheets=[":host .bk-tab { font-size: 18px; padding: 8px 18px; }"],
        )
        self._fill(state.tab)
        self.tabs.active = TABS.index(state.tab)
        self.tabs.param.watch(self._tab_changed, "active")
        if sync_url:
            import json

            self.tabs.jscallback(active=_TAB_URL_JS.replace("__TABS__", json.dumps(list(TABS))).replace(
                "__DEFAULT__", json.dumps(PlannerState.param["tab"].default)))
        state.param.watch(lambda e: setattr(self.tabs, "active", TABS.index(e.new)), "tab")
        # Tapping a cell or picking a row selects a model: the layout tab follows from the details link.
        self._sync_url = sync_url
        self._history_sink = None
        self._width_sink = None
        if sync_url:
            state.param.watch(self._push_url, _STATE_PARAMS)
            doc = pn.state.curdoc
            if doc is not None and doc.session_context is not None:
                # Once the page has loaded (before that the browser's Location reports the address it
                # was opened with, which would undo this): the address bar shows the view's canonical
                # link, without the values the notice says were ignored.
                pn.state.onload(self._push_url)
                self._follow_history(doc)
                self._follow_width(doc)
            else:
                self._push_url()
        # Hub ids the link adds: fetched once the page is up (a served session), or now (notebooks, tests).
        if state.add:
            if sync_url and pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
                pn.state.onload(self.add_model.fetch_pending)
            else:
                self.add_model.fetch_pending()

    def _set_data(self, data: AppData) -> None:
        """Make ``data`` (this session's catalog, extended by "Add a model") the data of every view; each
        view redraws what depends on it. The process-wide data is never modified."""
        if data is self.data:
            return
        with pn.io.hold():
            self.data = data
            for v in (self.controls, self.export, *self._views.values()):
                if v.data is not data:
                    v.data = data

    # -------------------------------------------------------------------------------------------
    _VIEW_CLASSES = {"validity": ValidityView, "layout": LayoutView, "memory": MemoryView, "plan": PlanView,
                     "catalog": CatalogView}

    def view(self, tab: str) -> pn.viewable.Viewer:
        """The view of ``tab`` (one of :data:`~dashboard.state.TABS`), built on first use."""
        if tab not in self._views:
            self._views[tab] = self._VIEW_CLASSES[tab](state=self.state, data=self.data)
            if tab == "validity" and self.main_px is not None:
                self._views[tab].set_main_width(self.main_px)
        return self._views[tab]

    def _fill(self, tab: str) -> None:
        slot = self._slots[tab]
        if not slot.objects:
            slot.objects = [self.view(tab)]

    def _tab_changed(self, event) -> None:
        """A tab was clicked: the state (and with it the URL, :meth:`_push_url`) changes first; a view shown
        for the first time is built after that, :data:`DEFER_MS` later in a served session, behind a
        "Building …" indicator, so the address bar and the indicator reach the browser before the build
        starts."""
        tab = TABS[event.new]
        slot = self._slots[tab]
        doc = pn.state.curdoc
        if slot.objects or doc is None or doc.session_context is None:
            self._fill(tab)
            self.state.tab = tab
            return
        with pn.io.unlocked():
            slot.objects = [building_indicator(TAB_LABELS[tab])]
        self.state.tab = tab
        # (a timeout, not the next tick: the address and the placeholder are written to the socket first;
        # a next-tick build ran before those writes and held them back for the length of the build)
        doc.add_timeout_callback(partial(self._fill_later, doc, tab), DEFER_MS)

    def _fill_later(self, doc, tab: str) -> None:
        from panel.io.state import set_curdoc

        with set_curdoc(doc):
            self._slots[tab].objects = [self.view(tab)]

    @property
    def validity(self) -> ValidityView:
        return self.view("validity")

    @property
    def layout(self) -> LayoutView:
        return self.view("layout")

    @property
    def memory(self) -> MemoryView:
        return self.view("memory")

    @property
    def plan(self) -> PlanView:
        return self.view("plan")

    @property
    def catalog(self) -> CatalogView:
        return self.view("catalog")

    def _show_notices(self) -> None:
        if self.notices:
            items = "".join(f"<li>{esc(n)}</li>" for n in self.notices)
            self.notice_pane.object = (
                '<div class="tp-notice tp-notice-warning" style="background:#fff4e0;color:#7a4a00;padding:10px 14px;'
                'border-radius:6px;font-size:15px">Some settings in the link were not understood (their '
                f"defaults are shown) or were adjusted:<ul style='margin:4px 0'>{items}</ul></div>"
            )
            self.notice_pane.visible = True
        else:
            self.notice_pane.object = ""
            self.notice_pane.visible = False

    def _push_url(self, *_):
        """Mirror the state into the page's URL at once, in the same server callback as the change.

        In a served session the new address is sent to the browser before anything else the change
        triggers (a tab's first build, the memory model's computation): :func:`panel.io.unlocked`
        dispatches the Location patch immediately instead of with the rest of the callback's patches, so a
        link copied right after a click, a typed calibration or a selection already carries it
        (``tests/browser/test_links_browser.py``). The report's link (``export.link``) follows at once."""
        qs = self.state.query_string()
        loc = pn.state.location
        href = str(getattr(loc, "href", "") or "") if loc is not None else ""
        base = href.split("#", 1)[0].split("?", 1)[0]
        self.export.link = base + qs if base.startswith(("http://", "https://")) else qs  # (the report's link)
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            self._write_url()
            return
        with pn.io.unlocked():
            self._write_url()

    def _follow_history(self, doc) -> None:
        """Make the browser's Back / Forward buttons show the view of the link they go to.

        Panel's ``Location`` pushes a history entry for every URL the server writes but ignores
        ``popstate``. A listener installed when the page is ready reports the address Back or Forward
        went to through a hidden ``Div`` of this document (``text`` = query string + a counter). The
        Location model is told the new address silently, so the server's next URL write for the same
        view does not push a duplicate entry (which would erase the Forward history).
        """
        from bokeh.models import CustomJS, Div

        sink = Div(name="tp-history", visible=False)
        self._history_sink = pn.pane.Bokeh(sink, visible=False, margin=0)  # (in main(): part of the page)
        sink.on_change("text", lambda attr, old, new: self._history_moved(new))
        doc.js_on_event("document_ready", CustomJS(args={"sink": sink}, code=_POPSTATE_JS))

    def _follow_width(self, doc) -> None:
        """Have the browser report the width of the page's main area (:data:`_MAIN_WIDTH_JS`) through a
        hidden ``Div`` of this document, so the validity heatmap fits it (:meth:`set_main_width`)."""
        from bokeh.models import CustomJS, Div

        sink = Div(name="tp-main-width", visible=False)
        self._width_sink = pn.pane.Bokeh(sink, visible=False, margin=0)  # (in main(): part of the page)
        sink.on_change("text", lambda attr, old, new: self.set_main_width(new))
        doc.js_on_event("document_ready", CustomJS(args={"sink": sink}, code=_MAIN_WIDTH_JS))

    def set_main_width(self, text) -> None:
        """The browser reports the main area's width (``text``: pixels, as text). Anything but a whole
        number from 1 to 100,000 is ignored (it comes from the page, so it is not trusted)."""
        raw = str(text or "").strip()
        if not raw.isdigit() or len(raw) > 6 or not 0 < int(raw) <= 100_000:
            return
        self.main_px = int(raw)
        if "validity" in self._views:
            self._views["validity"].set_main_width(self.main_px)

    def _history_moved(self, text: str) -> None:
        """The browser went Back / Forward to ``text`` (query string, then NUL and a counter): show that
        link's view (settings the link lacks return to their defaults)."""
        query = str(text or "").split("\x00", 1)[0]
        fresh = PlannerState()
        self.notices = _apply_link(fresh, self.data, query)
        changed = {k: getattr(fresh, k) for k in _STATE_PARAMS if getattr(fresh, k) != getattr(self.state, k)}
        with pn.io.hold():
            self._show_notices()
            if changed:
                self.state.param.update(**changed)

    def settle_styles(self) -> None:
        """Re-render the page's text panes once, before the page is sent.

        Panel gives a pane the template's design stylesheets (Bootstrap) only when the pane is updated,
        not when it is first rendered. The first update of each such pane in a session then sent the
        browser a new stylesheet list: it parsed Bootstrap's CSS into the pane and laid the whole page out
        again, ~0.1-0.2 s on the user's first click (scripts/bench_ui.py). Updating every HTML pane of the
        sidebar, the notice and the built tabs here, before the document goes to the browser, sends them
        complete from the start.
        """
        for part in (self.notice_pane, self.tabs, self.controls.__panel__(), self.export.__panel__()):
            for pane in part.select(pn.pane.HTML):
                pane.param.trigger("object")

    def _write_url(self) -> None:
        loc = pn.state.location
        if loc is None:
            return
        qs = self.state.query_string()
        if loc.search != qs:
            loc.search = qs

    # -------------------------------------------------------------------------------------------
    def sidebar(self) -> pn.Column:
        """Controls and exports (the template's sidebar)."""
        return pn.Column(self.controls, pn.layout.Divider(), pn.pane.HTML("<b>Export</b>"), self.export,
                         sizing_mode="stretch_width")

    def main(self) -> pn.Column:
        """URL notices and the tabs (the template's main area)."""
        extra = [x for x in (self._history_sink, self._width_sink) if x is not None]
        return pn.Column(self.notice_pane, self.tabs, *extra, sizing_mode="stretch_width")

    def __panel__(self):
        return pn.Row(pn.Column(self.sidebar(), width=330), self.main(), sizing_mode="stretch_width")

    def template(self) -> pn.template.BaseTemplate:
        """The served page: a template with no web fonts and every resource from the server."""
        # BootstrapTemplate: its CSS/JS are bundled with Panel and served by the server; unlike the Fast
        # and Material designs it requests no web font from an outside font service.
        tmpl = pn.template.BootstrapTemplate(
            title=TITLE,
            sidebar=[self.sidebar()],
            main=[self.main()],
            sidebar_width=340,
            header_background="#0b3d6b",
            collapsed_sidebar=False,
            # No busy spinner: it toggles on every server callback, and each toggle costs the browser a
            # re-layout of the whole page (measured with scripts/bench_ui.py); updates take ~0.1 s.
            busy_indicator=None,
        )
        return tmpl


def _apply_link(state: PlannerState, data: AppData, query) -> list[str]:
    """Set ``state`` from a link's query string against this catalog's models and values; return the
    notices (:meth:`PlannerState.apply_query`)."""
    return state.apply_query(query, known_models=frozenset(data.model_ids), known_values=_known_values(data))


def _known_values(data: AppData) -> dict[str, list[str]]:
    """Accepted spellings of the link's free-text settings: the catalog's organisations, model types and
    quantization methods, and the GPU table's ids (omitted when the table cannot be read, so a link's GPU
    is then kept as given and the memory view falls back to its default GPU)."""
    from dashboard.state import catalog_choices
    from dashboard.views.controls import gpu_names

    known: dict[str, list[str]] = dict(data.memo(("catalog_choices",), lambda: catalog_choices(data.catalog)))
    gpus = gpu_names()
    if gpus:
        known["gpu"] = gpus
    return known


def error_page(message: str) -> pn.Column:
    """What a session shows when the catalog cannot be loaded (escaped message)."""
    return pn.Column(
        pn.pane.HTML(f"<h1>{esc(TITLE)}</h1>"),
        pn.pane.HTML(notice_html(message, "error"), sizing_mode="stretch_width"),
        sizing_mode="stretch_width",
    )


def _serve_resources_locally(doc) -> str:
    """Point every Panel stylesheet of this session's document at the server, never at Panel's CDN.

    Panel rewrites its components' stylesheet URLs from its CDN to the server only when it renders the
    HTML page of a session (``panel.io.server.server_html_page_for_session``). When a page's websocket
    connects after Bokeh discarded the unused session (``--unused-session-lifetime``, 15 s by default:
    a burst of visitors on a busy server), Bokeh builds a fresh document for the same session id without
    rendering a page, and every stylesheet then loads from ``cdn.holoviz.org`` -- console errors and a
    broken page on a closed network. Setting the document's ``dist_url`` before any model is built (Panel
    reads it for every model it renders later) and patching the roots once built closes that gap.
    Returns the dist URL used.
    """
    from panel.io.resources import LOCAL_DIST

    dist_url = f"{pn.state.rel_path}/{LOCAL_DIST}" if pn.state.rel_path else LOCAL_DIST
    doc._template_variables["dist_url"] = dist_url
    return dist_url


def serve_session() -> pn.viewable.Viewable:
    """Build the app for the current server session from its URL and mark it servable."""
    from panel.io.resources import patch_model_css

    doc = pn.state.curdoc
    dist_url = _serve_resources_locally(doc) if doc is not None else None
    query = pn.state.location.search if pn.state.location is not None else ""
    try:
        data = load_app_data(catalog_path())
    except Exception as exc:  # noqa: BLE001 -- a missing or corrupt catalog is a visible error, not a blank page
        page = error_page(f"Could not load the catalog ({catalog_path() or 'shipped data/catalog.parquet'}): {exc}")
        served = page.servable(title="TP planner")
    else:
        app = DashboardApp(data=data, query=query, sync_url=True)
        served = app.template().servable()
        app.settle_styles()
    if doc is not None:
        for root in doc.roots:
            patch_model_css(root, dist_url=dist_url)
    return served


def warm_up() -> None:
    """Fill the process-wide caches and import everything a session needs (server start-up hook).

    Loads the catalog, computes the default view's grid and every framework's heatmap cells, and renders
    one default session into a throwaway Bokeh document. Raises what loading the catalog raises.
    """
    from bokeh.document import Document

    from dashboard import schema
    from dashboard.views.validity import heatmap_cube

    data = load_app_data(catalog_path())
    app = DashboardApp(data=data)
    app.__panel__().get_root(Document())
    for fw in schema.FRAMEWORKS:  # every framework's cells: ticking one on never computes them
        heatmap_cube(data, app.state, fw)
