"""Sidebar box "Add a model": a Hub id (fetched on the server, anonymously, rate-limited) or an uploaded
``config.json``; the model joins this session's catalog only (:meth:`dashboard.state.AppData.with_models`).

The logic is :mod:`dashboard.addmodel`; this view only wires widgets to it. The panel's ``data`` parameter
is this session's catalog: :class:`dashboard.app.DashboardApp` watches it and hands the new data to every
view. Hub ids added here (or by a link's ``add=``) are kept in ``state.add`` so a shared link fetches them
again; an uploaded config stays in this page only, and the box says so.
"""

from __future__ import annotations

import asyncio
from functools import partial

import panel as pn
import param

from dashboard.addmodel import (
    HUB_DEADLINE_S,
    MAX_ADDED_MODELS,
    MAX_CONFIG_BYTES,
    RATE_LIMIT_FETCHES,
    RATE_LIMIT_WINDOW_S,
    AddOutcome,
    RateLimiter,
    fetch_hub_model,
    hub_token_opt_in,
    is_hub_id,
    rate_limited,
    upload_too_large,
    uploaded_record,
)
from dashboard.state import AppData, PlannerState
from dashboard.views.common import is_served, esc, notice_html

#: Most notices the box keeps (newest first).
MAX_NOTICES = 3

#: Page script (``document_ready``; ``sink``: a hidden Div of this document): refuse an upload larger than
#: ``__LIMIT__`` bytes in the browser, before it is read or sent. Bokeh's ``FileInput`` reads the whole file
#: and sends it base64-encoded in one websocket message; over the server's message limit (Bokeh's
#: ``websocket_max_message_size``, 20 MiB by default: a file of about 15 MB) the server closes the
#: websocket and the page's session is dead. The file input's ``load_files`` (BokehJS 3.9
#: ``FileInputView``) is wrapped for inputs with the ``tp-add-upload`` class: an oversized file is not
#: read, the input is cleared, and the file's name and size (as the browser reports them) go to the server
#: through ``sink`` (JSON ``{name, size, n}``), which shows the notice.
_UPLOAD_CAP_JS = """
const limit = __LIMIT__;
let n = 0;
for (const m of sink.document.all_models) {
  const css = m.css_classes;
  if (!Array.isArray(css) || !css.includes("tp-add-upload")) continue;
  const View = m.default_view;
  if (!View || !View.prototype || typeof View.prototype.load_files !== "function") continue;
  if (View.prototype.__tp_capped) continue;
  const load = View.prototype.load_files;
  View.prototype.load_files = async function (files) {
    const own = Array.isArray(this.model.css_classes) && this.model.css_classes.includes("tp-add-upload");
    if (own) {
      for (const f of Array.from(files || [])) {
        if (f.size > limit) {
          if (this.input_el) this.input_el.value = "";
          n += 1;
          sink.text = JSON.stringify({name: String(f.name).slice(0, 200), size: f.size, n: n});
          return;
        }
      }
    }
    return load.call(this, files);
  };
  View.prototype.__tp_capped = true;
}
"""


class AddModelPanel(pn.viewable.Viewer):
    """The "Add a model" box: Hub id + Add button, ``config.json`` upload, and notices."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="This session's catalog (the process-wide one plus added models).")
    busy = param.Boolean(default=False, doc="A Hub fetch is running.")

    def __init__(self, **params):
        super().__init__(**params)
        self.limiter = RateLimiter()
        self.hub_id = pn.widgets.TextInput(label="Hub id", placeholder="org/name",
                                           css_classes=["tp-add-hub-id"], sizing_mode="stretch_width")
        self.add_button = pn.widgets.Button(label="Add", color="primary", css_classes=["tp-add-button"], width=70,
                                            align="end")
        self.add_button.on_click(self._on_add_click)
        self.hub_id.param.watch(self._on_enter, "enter_pressed")
        self.upload = pn.widgets.FileInput(accept=".json,application/json", multiple=False,
                                           css_classes=["tp-add-upload"], sizing_mode="stretch_width")
        # (one call per upload: Panel sets both at once; an empty file arrives as value None)
        self.upload.param.watch(self._on_upload, ["value", "filename"])
        how = "with the server's Hugging Face token" if hub_token_opt_in() else "without a token (public repos only)"
        self.hint = pn.pane.HTML(
            f'<div style="font-size:13px;color:#555;line-height:1.35">The server fetches a Hub id {how}; the '
            "page's link carries it. An uploaded config.json stays in this page only: it cannot travel in a link. "
            "Added models join this page's catalog, no one else's.</div>",
            sizing_mode="stretch_width", css_classes=["tp-add-hint"])
        self.notice = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["tp-add-notice"], visible=False)
        self._notices: list[str] = []
        #: Every outcome of this session, oldest first (tests and the report read it).
        self.outcomes: list[AddOutcome] = []
        self.state.param.watch(self._add_changed, "add")
        #: Hidden sink of the page's upload size check (served sessions only; :data:`_UPLOAD_CAP_JS`).
        self._refused_sink = None
        if is_served():
            self._cap_uploads_in_browser(pn.state.curdoc)

    def _cap_uploads_in_browser(self, doc) -> None:
        """Install :data:`_UPLOAD_CAP_JS` on ``doc``: uploads over :data:`MAX_CONFIG_BYTES` are refused by
        the page before they are sent; the page reports them through a hidden ``Div``."""
        from bokeh.models import CustomJS, Div

        sink = Div(name="tp-upload-refused", visible=False)
        self._refused_sink = pn.pane.Bokeh(sink, visible=False, margin=0)
        sink.on_change("text", lambda attr, old, new: self._upload_refused(new))
        doc.js_on_event("document_ready", CustomJS(
            args={"sink": sink}, code=_UPLOAD_CAP_JS.replace("__LIMIT__", str(int(MAX_CONFIG_BYTES)))))

    def _upload_refused(self, text) -> None:
        """The page refused an upload over the cap (``text``: JSON ``{name, size, n}`` from the browser, not
        trusted: anything else is ignored)."""
        import json

        raw = str(text or "")
        if not raw or len(raw) > 1000:
            return
        try:
            got = json.loads(raw)
            name, size = str(got["name"])[:200], int(got["size"])
        except (ValueError, TypeError, KeyError, OverflowError):
            return
        if size <= MAX_CONFIG_BYTES:
            return
        self._apply(upload_too_large(name, size), upload=True)

    # ---- the link's (or Back / Forward's) Hub ids ----------------------------------------------------
    def pending(self) -> list[str]:
        """Ids of ``state.add`` not in this session's catalog yet."""
        have = set(self.data.model_ids)
        return [m for m in self.state.add if m not in have]

    def fetch_pending(self) -> None:
        """Fetch :meth:`pending` (a link's ``add=``): in a served session on a worker thread after the page
        has loaded, elsewhere at once."""
        ids = self.pending()
        if not ids:
            return
        if is_served():
            pn.state.execute(partial(self._fetch_async, ids, True))
        else:
            for rid in ids:
                self._apply(self._fetch_now(rid), link=True)

    def _add_changed(self, *_):
        if self.pending() and not self.busy:
            self.fetch_pending()

    # ---- user input --------------------------------------------------------------------------------
    def _on_enter(self, *_):
        self._on_add_click()

    def _on_add_click(self, *_):
        rid = (self.hub_id.value_input or self.hub_id.value or "").strip()
        if not rid:
            self._show(notice_html("Type a Hub model id such as Qwen/Qwen3-8B, then press Add.", "info"))
            return
        if self.busy:
            return
        if rid in self.data.model_ids:
            where = "added already" if rid in self.data.added_ids else "in the catalog already"
            self._show(notice_html(f"{rid} is {where}: selected it.", "info"))
            if is_served():  # as a fetched model is selected: from the event loop, not inside the click's
                # own document lock (selecting there left the heatmap and the link half-updated and made
                # Bokeh raise "_pending_writes should be non-None when we have a document lock")
                pn.state.execute(partial(self._select_later, rid))
            else:
                self._select(rid)
            return
        if is_served():
            pn.state.execute(partial(self._fetch_async, [rid], False))
        else:
            self._apply(self._fetch_now(rid))

    def _fetch_now(self, rid: str) -> AddOutcome:
        if len(self.data.added_ids) >= MAX_ADDED_MODELS:
            return _too_many(rid)
        if not is_hub_id(rid):  # a malformed id costs no fetch: say what is wrong, not "too many fetches"
            return fetch_hub_model(rid)
        wait = self.limiter.try_acquire()
        return rate_limited(rid, wait) if wait else fetch_hub_model(rid)

    async def _fetch_async(self, ids: list[str], link: bool) -> None:
        """Fetch ``ids`` one after the other on a worker thread (the server keeps serving other pages)."""
        self.busy = True
        self.add_button.disabled = True
        try:
            for rid in ids:
                self._show(notice_html(f"Fetching {rid}'s config.json from the Hub (at most "
                                       f"{HUB_DEADLINE_S:g} s)…", "info"), keep=False)
                if len(self.data.added_ids) >= MAX_ADDED_MODELS:
                    out = _too_many(rid)
                elif not is_hub_id(rid):  # malformed: its notice, without spending a fetch
                    out = fetch_hub_model(rid)
                else:
                    wait = self.limiter.try_acquire()
                    out = (rate_limited(rid, wait) if wait else
                           await asyncio.get_running_loop().run_in_executor(None, fetch_hub_model, rid))
                self._apply(out, link=link)
        except Exception as exc:  # noqa: BLE001 -- never break the session
            self._show(notice_html(f"Adding the model failed ({type(exc).__name__}).", "error"))
        finally:
            self.busy = False
            self.add_button.disabled = False

    def _on_upload(self, *_events):
        raw, name = self.upload.value, self.upload.filename
        if raw is None and not name:
            return
        try:
            if isinstance(raw, list):  # (multiple=False: never a list; a changed widget must not crash)
                raw = raw[0] if raw else None
            if len(self.data.added_ids) >= MAX_ADDED_MODELS:
                out = _too_many(str(name or "config.json"))
            else:
                out = uploaded_record(name, bytes(raw or b""), taken=self.data.model_ids)
            self._apply(out, upload=True)
        except Exception as exc:  # noqa: BLE001 -- a hostile file must never break the session
            self._show(notice_html(f"The uploaded file could not be used ({type(exc).__name__}).", "error"))

    # ---- results -------------------------------------------------------------------------------------
    def _apply(self, out: AddOutcome, *, link: bool = False, upload: bool = False) -> None:
        self.outcomes.append(out)
        s = self.state
        if not out.ok:
            text = out.message
            if link and out.model_id in s.add:
                text += " It was in the page's link; it is left out."
                drop = {"add": [m for m in s.add if m != out.model_id]}
                if s.model == out.model_id:
                    drop["model"] = ""
                if out.model_id in s.models:
                    drop["models"] = [m for m in s.models if m != out.model_id]
                with pn.io.hold():
                    s.param.update(**drop)
            self._show(notice_html(text, "error"))
            return
        with pn.io.hold():
            self.data = self.data.with_models([out.record])
            if not upload and out.model_id not in s.add:
                s.add = [*s.add, out.model_id]
            if not upload and not link and out.model_id in ((self.hub_id.value_input or "").strip(), self.hub_id.value.strip()):
                self.hub_id.value = self.hub_id.value_input = ""
            self._select(out.model_id)
        where = ("It is in this page only: an uploaded config cannot travel in a link." if upload else
                 "The page's link now carries it, so whoever opens the link fetches it again.")
        text = (f"Added {out.model_id} to this page's catalog and selected it: the heatmap shows it among "
                f"its family (or where the chosen order puts it) with its selected cell outlined. {where}")
        hidden = s.search_terms() and not any(t in out.model_id.lower() for t in s.search_terms())
        if hidden:
            text += " The name filter hides it on the heatmap: clear the filter to see it."
        html = notice_html(text, "info")
        if out.notes:
            html += notice_html(f"The config was read with notes: {out.notes[:600]}", "warning")
        self._show(html)

    async def _select_later(self, model_id: str) -> None:
        with pn.io.hold():
            self._select(model_id)

    def _select(self, model_id: str) -> None:
        s = self.state
        upd = {"model": model_id}
        if s.models and model_id not in s.models:
            upd["models"] = [*s.models, model_id]
        s.param.update(**upd)

    def _show(self, html: str, keep: bool = True) -> None:
        """Show ``html`` (already escaped) on top of the kept notices; ``keep=False``: a transient one.

        At most :data:`MAX_NOTICES` are kept; only the newest is open, the earlier ones fold into one
        collapsed "N earlier notices" line (:func:`notices_html`), so notices never push the sidebar's
        controls off the screen."""
        if keep:
            self._notices = [html, *self._notices][:MAX_NOTICES]
            shown = self._notices
        else:
            shown = [html, *self._notices][:MAX_NOTICES]
        body = notices_html(shown)
        self.notice.object = body
        self.notice.visible = bool(body)

    def __panel__(self):
        return pn.Column(
            pn.Row(self.hub_id, self.add_button, sizing_mode="stretch_width"),
            pn.pane.HTML(f'<div style="font-size:14px;margin:2px 0 -4px 0">…or upload a config.json '
                         f"(at most {esc(_size(MAX_CONFIG_BYTES))}):</div>", sizing_mode="stretch_width"),
            self.upload, self.hint, self.notice,
            *([self._refused_sink] if self._refused_sink is not None else []),
            sizing_mode="stretch_width", css_classes=["tp-add-model"],
        )


def notices_html(notices: list[str]) -> str:
    """The add box's notices (each already escaped markup), newest first: the newest open, the others in a
    collapsed ``<details>``."""
    if not notices:
        return ""
    first, rest = notices[0], notices[1:]
    body = f'<div style="margin-bottom:6px">{first}</div>'
    if rest:
        inner = "".join(f'<div style="margin:6px 0">{n}</div>' for n in rest)
        body += (f'<details class="tp-older-notices" style="font-size:13px;color:#444"><summary style="cursor:pointer">'
                 f'{len(rest)} earlier notice{"s" if len(rest) != 1 else ""}</summary>{inner}</details>')
    return body


def _size(n: int) -> str:
    """``n`` bytes in words: ``1 MiB``, ``512 KiB``."""
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB"


def _too_many(what: str) -> AddOutcome:
    return AddOutcome(False, what, "too_many",
                      f"{what} was not added: this page has added {MAX_ADDED_MODELS} models already, the most one "
                      "page may add. Open a new page to add more.")


__all__ = ["AddModelPanel", "RATE_LIMIT_FETCHES", "RATE_LIMIT_WINDOW_S"]
