"""Small helpers shared by the views: escaping, notices, CSV cells, two-way widget binding.

A helper that two views need lives here (or in the pure layer), never in one of the views: the views
import this module and never each other in a circle (``tests/test_imports.py`` walks the imports).
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from typing import Any

import pandas as pd
import panel as pn
import param


def esc(value: Any) -> str:
    """HTML-escape anything for insertion into markup (quotes included)."""
    return html.escape("" if value is None else str(value), quote=True)


def safe_url(url: Any) -> str | None:
    """``url`` escaped for an ``href`` when it is a plain http(s) link, else ``None``."""
    s = "" if url is None else str(url).strip()
    if s.startswith(("https://", "http://")) and not any(c in s for c in "\"'<> \n\r\t"):
        return html.escape(s, quote=True)
    return None


def notice_html(text: str, kind: str = "info") -> str:
    """A notice box (escaped text). ``kind``: info, warning or error."""
    colors = {"info": ("#e8f1fb", "#0b4f8a"), "warning": ("#fff4e0", "#7a4a00"), "error": ("#fde8e4", "#8a1c0b")}
    bg, fg = colors.get(kind, colors["info"])
    return (
        f'<div class="tp-notice tp-notice-{esc(kind)}" style="background:{bg};color:{fg};padding:10px 14px;'
        f'border-radius:6px;font-size:15px;line-height:1.4">{esc(text)}</div>'
    )


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Neutralise spreadsheet formulas in untrusted text cells (a leading = + - @ gets a quote)."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object or str(out[c].dtype).startswith("string"):
            s = out[c].astype(object)
            out[c] = s.map(lambda v: ("'" + v) if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v)
    return out


def csv_buffer(df: pd.DataFrame) -> io.StringIO:
    """CSV text of ``df`` (header row, no index, formulas neutralised by :func:`csv_safe`), read from its start."""
    buf = io.StringIO()
    csv_safe(df).to_csv(buf, index=False)
    buf.seek(0)
    return buf


def bind_two_way(widget: pn.widgets.Widget, obj: param.Parameterized, pname: str,
                 to_widget: Callable[[Any], Any] = lambda v: v,
                 to_param: Callable[[Any], Any] = lambda v: v) -> None:
    """Keep ``widget.value`` and ``obj.<pname>`` equal in both directions (with converters).

    A widget change is applied under one document hold, so everything it changes (the heatmap, the
    URL, the details) reaches the browser as one patch rather than one per view."""
    busy = {"on": False}

    def w2p(event):
        if busy["on"]:
            return
        busy["on"] = True
        try:
            try:
                with pn.io.hold():
                    setattr(obj, pname, to_param(event.new))
            except (ValueError, TypeError):
                widget.value = to_widget(getattr(obj, pname))
        finally:
            busy["on"] = False

    def p2w(event):
        if busy["on"]:
            return
        busy["on"] = True
        try:
            widget.value = to_widget(event.new)
        finally:
            busy["on"] = False

    widget.value = to_widget(getattr(obj, pname))
    widget.param.watch(w2p, "value")
    obj.param.watch(p2w, pname)


#: Pause in typing (milliseconds) after which a text box's text is applied (:func:`bind_as_you_type`).
TYPING_DELAY_MS = 300


def bind_as_you_type(widget: pn.widgets.TextInput, obj: param.Parameterized, pname: str,
                     delay_ms: int = TYPING_DELAY_MS) -> None:
    """Keep a text box and the string ``obj.<pname>`` equal, applying the text as it is typed.

    The box's ``value_input`` (sent by the browser at each keystroke) is applied ``delay_ms`` after the
    last keystroke (a trailing debounce: typing "llama" applies once, not five times); Enter or leaving
    the box (``value``) applies at once. A change of ``obj.<pname>`` from elsewhere (a link, Back /
    Forward) is shown in the box, except while the box already shows it (so a debounced apply never
    rewrites text the user is still typing). Outside a served session every keystroke applies at once."""
    pending = {"gen": 0}
    busy = {"on": False}

    def apply(text) -> None:
        pending["gen"] += 1  # (a pending debounced apply is now stale)
        text = "" if text is None else str(text)
        busy["on"] = True
        try:
            with pn.io.hold():
                if getattr(obj, pname) != text:
                    setattr(obj, pname, text)
                # The box's value follows what was applied (so a later change from a link reaches the
                # browser), unless more has been typed since.
                if widget.value != text and widget.value_input == text:
                    widget.value = text
        except (ValueError, TypeError):
            widget.param.update(value=getattr(obj, pname), value_input=getattr(obj, pname))
        finally:
            busy["on"] = False

    def on_value(event) -> None:
        if not busy["on"]:
            apply(event.new)

    def on_input(event) -> None:
        if busy["on"]:
            return
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            apply(event.new)
            return
        pending["gen"] += 1
        gen, text = pending["gen"], event.new

        def fire() -> None:
            if pending["gen"] == gen:
                from panel.io.state import set_curdoc

                with set_curdoc(doc):
                    apply(text)

        doc.add_timeout_callback(fire, int(delay_ms))

    def p2w(event) -> None:
        if busy["on"]:
            return
        pending["gen"] += 1
        if widget.value_input == event.new and widget.value == event.new:
            return
        busy["on"] = True
        try:
            widget.param.update(value=event.new, value_input=event.new)
        finally:
            busy["on"] = False

    widget.param.update(value=getattr(obj, pname), value_input=getattr(obj, pname))
    widget.param.watch(on_value, "value")
    widget.param.watch(on_input, "value_input")
    obj.param.watch(p2w, pname)


def selected_record_changed(state, event) -> bool:
    """True when a change of a view's ``data`` (a model added to the session, :meth:`AppData.with_models`)
    changes the row of the selected model ``state.model``: it was not in the old data (a link selected a
    model that was still being fetched) or is a different row now. A model added and then selected
    redraws through the ``model`` watcher alone, not twice."""
    m = state.model
    if not m or event.old is None:
        return bool(m)
    return event.old.record(m) is not event.new.record(m) and event.old.record(m) != event.new.record(m)


def is_served() -> bool:
    """True inside a served Bokeh document (a browser session), False in a notebook or a test."""
    doc = pn.state.curdoc
    return doc is not None and doc.session_context is not None


def when_shown(view, tab: str, refresh: Callable[..., Any]) -> Callable[..., Any]:
    """A state watcher that runs ``refresh`` only while ``tab`` is the page's active tab (in a served
    session), and once when the tab is shown again if a change was missed meanwhile.

    Why: the tabs are dynamic, so a hidden tab's Bokeh models are detached from the document, and Panel
    1.9 rebuilds an updated pane's stylesheets from its CDN when the pane has no document -- on a page
    whose other models share those stylesheet objects, that pointed the page at cdn.holoviz.org (seen in
    the browser tests: memory view updated while the validity tab was shown). It also saves the server and
    the browser the work of redrawing what nobody sees. Outside a served session (notebooks, tests) every
    change refreshes at once."""
    stale = {"on": False}

    def on_change(*events):
        if is_served() and getattr(view.state, "tab", tab) != tab:
            stale["on"] = True
            return
        refresh(*events)

    def on_tab(event):
        if event.new == tab and stale["on"]:
            stale["on"] = False
            refresh()

    view.state.param.watch(on_tab, "tab")
    return on_change


#: Delay (ms) between sending what a change shows at once (the address, a spinner) and starting the slow
#: work it triggers, in a served session. A next-tick callback would run before the websocket writes of
#: the current one complete and hold them back for as long as the work takes.
DEFER_MS = 120


def building_indicator(what: str) -> pn.pane.HTML:
    """A spinner with "Building <what>…": the placeholder of a tab whose view is being built."""
    return pn.pane.HTML(
        "<style>@keyframes tp-spin{to{transform:rotate(360deg)}}</style>"
        '<div role="status" style="display:flex;align-items:center;gap:14px;font-size:17px;padding:18px 6px">'
        '<span style="width:28px;height:28px;border:4px solid #c9d6e4;border-top-color:#0b3d6b;border-radius:50%;'
        f'display:inline-block;animation:tp-spin 0.9s linear infinite"></span>Building {esc(what)}…</div>',
        css_classes=["tp-building"], sizing_mode="stretch_width", min_height=80,
    )


def behind_spinner(target: pn.viewable.Viewable, work: Callable[[], Any]) -> Callable[..., None]:
    """A watcher that runs ``work`` behind Panel's loading spinner on ``target``.

    In a served session the spinner is sent to the browser first (:func:`panel.io.unlocked`) and ``work``
    runs :data:`DEFER_MS` later, so the page shows that it is computing instead of staying blank; a burst of
    changes meanwhile runs ``work`` once. Outside a served session (notebooks, tests) ``work`` runs at
    once."""
    pending = {"on": False}

    def run(*_events) -> None:
        doc = pn.state.curdoc
        if not is_served() or doc is None:
            work()
            return
        if pending["on"]:
            return
        pending["on"] = True
        with pn.io.unlocked():
            target.loading = True

        def later() -> None:
            from panel.io.state import set_curdoc

            with set_curdoc(doc):
                pending["on"] = False
                try:
                    work()
                finally:
                    target.loading = False

        doc.add_timeout_callback(later, DEFER_MS)

    return run


def shell_tokens(line: str) -> list[str]:
    """``line`` split at the spaces a shell splits at: not inside single or double quotes, not after a
    backslash. Every character is kept (quotes included), so ``" ".join(...)`` of the tokens of a line
    with single spaces gives it back; runs of spaces give empty tokens."""
    out, cur, quote, i = [], [], "", 0
    while i < len(line):
        c = line[i]
        if quote:
            cur.append(c)
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"' and i + 1 < len(line):
                i += 1
                cur.append(line[i])
        elif c == " ":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
            if c in "'\"":
                quote = c
            elif c == "\\" and i + 1 < len(line):
                i += 1
                cur.append(line[i])
        i += 1
    out.append("".join(cur))
    return out


def command_html(text: Any) -> str:
    """A launch command as markup for a ``<pre>`` that wraps at spaces only: each shell token (escaped;
    :func:`shell_tokens`, so a quoted argument with spaces stays whole) in a ``nowrap`` span, so a line
    never breaks inside a flag (``--max-model-len`` after a hyphen) or a value; newlines are kept. The text
    content is ``text`` unchanged (copying it by hand gives the command as printed)."""
    return "\n".join(
        " ".join(f'<span class="tp-tok" style="white-space:nowrap">{esc(tok)}</span>' if tok else ""
                 for tok in shell_tokens(line))
        for line in str("" if text is None else text).split("\n"))


#: Browser-side copy of a button's ``data-cmd`` (set from escaped text), with feedback on the button for
#: two seconds: "Copied ✓", or "Press Ctrl+C" with the text selected when the browser gives no clipboard
#: access. ``navigator.clipboard`` exists only in a secure context (https or localhost): on a plain-http
#: server address the page falls back to a selected, hidden textarea and ``execCommand("copy")``.
COPY_JS = (
    "const b=this,t=b.dataset.cmd,label=b.dataset.label||b.textContent;b.dataset.label=label;"
    "const say=(m)=>{b.textContent=m;clearTimeout(b._tpTimer);b._tpTimer=setTimeout(()=>{b.textContent=label},2000)};"
    "const fallback=()=>{const a=document.createElement('textarea');a.value=t;a.setAttribute('readonly','');"
    "a.style.position='fixed';a.style.top='0';a.style.left='0';a.style.opacity='0';document.body.appendChild(a);"
    "a.focus();a.select();let ok=false;try{ok=document.execCommand('copy')}catch(e){ok=false}a.remove();"
    "say(ok?'Copied ✓':'Press Ctrl+C to copy')};"
    "if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t).then(()=>say('Copied ✓'),fallback)}"
    "else{fallback()}"
)


def plural(n: Any, one: str, many: str | None = None) -> str:
    """``"1 GPU"``, ``"8 GPUs"``, ``"1,024 GPUs"``: ``n`` (thousands separated) and the word in the number
    it needs (``many`` defaults to ``one + "s"``)."""
    k = int(n)
    return f"{k:,} {one if k == 1 else (many or one + 's')}"
