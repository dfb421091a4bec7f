"""Small helpers shared by the views: escaping, notices, two-way widget binding."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

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


def bind_two_way(widget: pn.widgets.Widget, obj: param.Parameterized, pname: str,
                 to_widget: Callable[[Any], Any] = lambda v: v,
                 to_param: Callable[[Any], Any] = lambda v: v) -> None:
    """Keep ``widget.value`` and ``obj.<pname>`` equal in both directions (with converters)."""
    busy = {"on": False}

    def w2p(event):
        if busy["on"]:
            return
        busy["on"] = True
        try:
            try:
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
