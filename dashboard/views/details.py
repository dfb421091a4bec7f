"""Details of the selected heatmap cell: verdict, failing rules with source links, suggestions."""

from __future__ import annotations

import panel as pn
import param

from dashboard import plots
from dashboard.state import AppData, PlannerState
from dashboard.views.common import esc, notice_html, safe_url, when_shown
from dashboard.views.layout import layout_object


def verdict_html(state: PlannerState, data: AppData) -> str:
    """HTML (escaped) of :func:`dashboard.rules.check` for the selected cell."""
    s = state
    if not s.model:
        return notice_html("Tap a cell of a heatmap to see its verdict, every failing rule and suggestions.")
    rec = data.record(s.model)
    if rec is None:
        return notice_html(f"Model {s.model} is not in the catalog.", "warning")
    head = (
        f'<div class="tp-details-model" style="font-size:18px;font-weight:600;overflow-wrap:anywhere">{esc(s.model)}</div>'
        f'<div style="font-size:16px;margin:2px 0 8px">{esc(plots.framework_label(s.framework))} &middot; TP = {s.tp}'
        + (f" &middot; PP = {s.pp}" if s.pp > 1 else "")
        + (f" &middot; DP = {s.dp}" if s.dp > 1 else "")
        + (f" &middot; EP = {s.ep}" if s.ep > 1 else "")
        + (" &middot; DP-attention" if s.dp_attention else "")
        + "</div>"
    )
    if rec.get("status") != "ok":
        return head + notice_html(
            f"Config unreadable ({rec.get('status')}): {rec.get('status_reason') or ''}", "warning"
        )
    try:
        from dashboard import rules
    except ImportError:
        return head + notice_html("The rules engine (dashboard.rules) is not installed.", "error")
    try:
        v = rules.check(rec, s.framework, s.tp, pp=s.pp, dp=s.dp, ep=s.ep, dp_attention=s.dp_attention)
    except Exception as exc:  # noqa: BLE001 -- show the reason instead of a broken page
        return head + notice_html(f"The rules engine could not check this cell: {exc}", "error")
    status = getattr(v, "status", "unknown")
    color = plots.STATUS_COLORS.get(status, "#BBBBBB")
    parts = [head]
    parts.append(
        f'<div class="tp-verdict" style="display:inline-block;padding:4px 12px;border-radius:14px;background:{color};'
        f'color:#111;font-size:17px;font-weight:600">{esc(plots.STATUS_LABELS.get(status, status))}</div>'
    )
    facts = []
    # A refused layout has no per-rank head counts (40 heads over TP 3 is not "13 per rank"): only the
    # attention TP it was checked at.
    per_rank = ("attention TP", "attn_tp"),
    if status != "invalid":
        per_rank = (("query heads / rank", "q_heads_per_rank"), ("KV heads / rank", "kv_heads_per_rank"),
                    ("KV replicas", "kv_replicas"), ("attention TP", "attn_tp"))
    for label, attr in per_rank:
        val = getattr(v, attr, None)
        if val is not None:
            facts.append(f"<li>{label}: <b>{esc(val)}</b></li>")
    if facts:
        parts.append(f'<ul style="font-size:15px;margin:8px 0">{"".join(facts)}</ul>')
    for title, hits in (("Failing rules", getattr(v, "failures", ())), ("Warnings", getattr(v, "warnings", ()))):
        if not hits:
            continue
        items = []
        for h in hits:
            url = safe_url(getattr(h, "source_url", ""))
            link = f' <a href="{url}" target="_blank" rel="noopener noreferrer">source</a>' if url else ""
            items.append(
                f'<li style="margin-bottom:6px"><code>{esc(getattr(h, "rule_id", ""))}</code>{link}<br>'
                f'<span class="tp-message">{esc(getattr(h, "message", ""))}</span></li>'
            )
        parts.append(f'<h3 style="margin:10px 0 4px;font-size:17px;font-weight:600">{title}</h3><ul style="font-size:15px">{"".join(items)}</ul>')
    sugg = getattr(v, "suggestions", ())
    if sugg:
        parts.append(
            '<h3 style="margin:10px 0 4px;font-size:17px;font-weight:600">Suggestions</h3><ul style="font-size:15px">'
            + "".join(f"<li>{esc(x)}</li>" for x in sugg)
            + "</ul>"
        )
    return "".join(parts)


class CellDetails(pn.viewable.Viewer):
    """Verdict, messages with source links, suggestions and a compact per-rank layout of the cell."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        self._html = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-details"])
        self._layout = pn.pane.HoloViews(None)
        self._layout_note = pn.pane.HTML(visible=False, sizing_mode="stretch_width")
        self.state.param.watch(when_shown(self, "validity", self._refresh), ["model", "framework", "tp", "pp", "dp", "ep", "dp_attention"])
        self._refresh()

    def _refresh(self, *_):
        self._html.object = verdict_html(self.state, self.data)
        if self.state.model:
            obj, note = layout_object(self.state, self.data, compact=True)
        else:
            obj, note = None, ""
        self._layout.object = obj
        self._layout_note.object = note
        self._layout_note.visible = bool(note)

    def __panel__(self):
        return pn.Column(self._html, self._layout_note, self._layout, sizing_mode="stretch_width")
