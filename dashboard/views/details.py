"""Details of the selected heatmap cell: verdict, failing rules with source links, suggestions."""

from __future__ import annotations

import panel as pn
import param

from dashboard import frameworks

from dashboard.plots import heatmap
from dashboard.plots import layout as layout_plots
from dashboard.plots.style import framework_label
from dashboard.state import AppData, PlannerState, state_rule_args, state_version
from dashboard.views.common import selected_record_changed, esc, notice_html, safe_url, when_shown
from dashboard.views.layout import layout_parts


def fw_label(state: PlannerState, framework: str | None = None) -> str:
    """The selected cell's framework as shown in its details: vLLM and SGLang with the release their rules
    follow."""
    fw = framework or state.framework
    label = framework_label(fw)
    version = state_version(state, fw)
    return f"{label} {version}" if version else label


def ep_text(state: PlannerState) -> str:
    """The EP part of the details' layout line (HTML): for vLLM, EP > 1 means ``--enable-expert-parallel``
    with an EP size of TP x DP (see :func:`dashboard.state.rule_args`)."""
    if frameworks.get(state.framework).expert_parallel_mode == "flag":
        return (' &middot; EP on (<code style="color:inherit">--enable-expert-parallel</code>, EP size = '
                f"TP &times; DP = {state.tp * state.dp})")
    return f" &middot; EP = {state.ep}"


def evidence_text(verdict) -> str:
    """What backs a verdict, in the one wording of :func:`dashboard.rules.evidence.evidence_text` (the CLI,
    its JSON and the exports say the same): reproduced by running the release's own code only when this
    config and layout are a row of its conformance table."""
    from dashboard.rules.evidence import Evidence
    from dashboard.rules.evidence import evidence_text as wording

    ev = getattr(verdict, "conformance", None) or Evidence(getattr(verdict, "framework", ""),
                                                           getattr(verdict, "release", None), False, False)
    text = wording(ev)
    return text[:1].upper() + text[1:]


def evidence_html(verdict) -> str:
    """:func:`evidence_text` and the verdict's version notice (escaped)."""
    kind = getattr(verdict, "evidence", "source")
    executed = kind == "executed"
    out = (f'<div class="tp-evidence tp-evidence-{kind}" '
           f'style="font-size:15px;margin:8px 0 4px;color:{"#0b5d3b" if executed else "#444"}">'
           f'{"&#10003; " if executed else ""}{esc(evidence_text(verdict))}.</div>')
    notice = getattr(verdict, "notice", "")
    if notice:
        out += f'<div class="tp-version-notice" style="margin:4px 0 8px">{notice_html(notice)}</div>'
    return out


def raise_site_html(hit) -> str:
    """``<br>AssertionError at vllm/.../llama.py:151`` for a failing rule whose raise site is known, and
    the rule's condition in words (a bare ``assert`` prints nothing, so the condition is what tells the
    user what is wrong); escaped. "" when neither is known."""
    exc, loc = getattr(hit, "exc_type", ""), getattr(hit, "location", "")
    cond = getattr(hit, "condition", "")
    out = ""
    msg = getattr(hit, "message", "")
    if (exc or loc) and not (loc and loc in msg):  # a bare assert's message already names its site
        text = f"{exc} at {loc}" if exc and loc else (exc or f"at {loc}")
        # (a long path may wrap after a "/", never inside a file name or line number)
        out += (f'<br><span class="tp-raise-site" style="font-size:14px;color:#444">'
                f'<code style="color:inherit;overflow-wrap:break-word">{esc(text).replace("/", "/<wbr>")}</code></span>')
    if cond:
        out += (f'<br><span class="tp-rule-condition" style="font-size:13px;color:#555;overflow-wrap:anywhere">'
                f'Condition: {esc(cond)}</span>')
    return out


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
        f'<div style="font-size:16px;margin:2px 0 8px">{esc(fw_label(s))} &middot; TP = {s.tp}'
        + (f" &middot; PP = {s.pp}" if s.pp > 1 else "")
        + (f" &middot; DP = {s.dp}" if s.dp > 1 else "")
        + (ep_text(s) if s.ep > 1 else "")
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
        v = rules.check(rec, s.framework, s.tp, **state_rule_args(s, s.framework))
    except Exception as exc:  # noqa: BLE001 -- show the reason instead of a broken page
        return head + notice_html(f"The rules engine could not check this cell: {exc}", "error")
    status = getattr(v, "status", "unknown")
    color = heatmap.STATUS_COLORS.get(status, "#BBBBBB")
    parts = [head]
    parts.append(
        f'<div class="tp-verdict" style="display:inline-block;padding:4px 12px;border-radius:14px;background:{color};'
        f'color:#111;font-size:17px;font-weight:600">{esc(heatmap.STATUS_LABELS.get(status, status))}</div>'
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
    parts.append(evidence_html(v))
    if facts:
        parts.append(f'<ul style="font-size:15px;margin:8px 0">{"".join(facts)}</ul>')
    notice = getattr(v, "notice", "")
    for title, hits in (("Failing rules", getattr(v, "failures", ())), ("Warnings", getattr(v, "warnings", ()))):
        # (the engine repeats the version notice as a warning; it is shown once, above)
        hits = [h for h in hits if not (notice and getattr(h, "message", "") == notice)]
        if not hits:
            continue
        items = []
        for h in hits:
            url = safe_url(getattr(h, "source_url", ""))
            link = f' <a href="{url}" target="_blank" rel="noopener noreferrer">source</a>' if url else ""
            ours = (' <span class="tp-ours" style="color:#555;font-style:italic">(our wording)</span>'
                    if getattr(h, "ours", False) else "")
            items.append(
                f'<li style="margin-bottom:6px"><code>{esc(getattr(h, "rule_id", ""))}</code>{link}<br>'
                f'<span class="tp-message">{esc(getattr(h, "message", ""))}</span>{ours}{raise_site_html(h)}</li>'
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
        # The compact per-rank layout: one Bokeh figure for the session, refilled in place
        # (dashboard.plots.layout.update_layout_preview), so a new selection sends its cells, not a new plot.
        self._layout_fig = layout_plots.layout_preview_figure()
        self._layout_fig.visible = False
        self._layout = pn.pane.Bokeh(self._layout_fig, css_classes=["tp-layout-preview"])
        self._layout_note = pn.pane.HTML(visible=False, sizing_mode="stretch_width")
        #: What the preview shows now: the catalog it was drawn from and (model, framework, tp, dp,
        #: dp_attention); None before the first.
        self._layout_data: AppData | None = None
        self._layout_key: tuple | None = None
        self.state.param.watch(when_shown(self, "validity", self._refresh), ["model", "framework", "tp", "pp", "dp", "ep", "dp_attention", "gpu", "vllm_version",
                                                                                   "sglang_version"])
        # a model added to the session: redraw when the selected model's row changed
        _redraw = when_shown(self, "validity", self._refresh)
        self.param.watch(lambda e: _redraw(e) if selected_record_changed(self.state, e) else None, "data")
        self._refresh()

    def _refresh(self, *_):
        html = verdict_html(self.state, self.data)
        if self._html.object != html:
            self._html.object = html
        s = self.state
        # The layout depends on the cell alone (not on the GPU, PP, EP or the releases): redrawn only when
        # the cell, or the session's catalog, changed.
        key = (s.model, s.framework, s.tp, s.dp, bool(s.dp_attention))
        if key == self._layout_key and self._layout_data is self.data:
            return
        self._layout_key, self._layout_data = key, self.data
        frame, title, note = layout_parts(s, self.data, compact=True) if s.model else (None, "", "")
        if frame is not None:
            layout_plots.update_layout_preview(self._layout_fig, frame, title)
        # Shown or hidden on the figure itself (the pane's model): toggling the Bokeh pane's own ``visible``
        # is not passed on to the figure, and in a served session it stopped the session's later updates
        # from reaching the browser.
        shown = frame is not None
        if self._layout_fig.visible != shown:
            self._layout_fig.visible = shown
        if self._layout_note.object != note:
            self._layout_note.object = note
        if self._layout_note.visible != bool(note):
            self._layout_note.visible = bool(note)

    def __panel__(self):
        return pn.Column(self._html, self._layout_note, self._layout, sizing_mode="stretch_width")
