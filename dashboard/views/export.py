"""Exports for meetings: heatmap PNGs (rendered in the browser from the Bokeh canvas, no network), the
grid as CSV, and a one-page HTML report of the chosen configuration."""

from __future__ import annotations

import datetime as _dt
import io

import pandas as pd
import panel as pn
import param

from dashboard.plots import heatmap
from dashboard.plots.style import framework_label
from dashboard.state import (
    TAB_LABELS,
    VERSION_PARAMS,
    AppData,
    PlannerState,
    filter_models,
    state_grid_args,
    state_version,
)
from dashboard.views.common import csv_buffer, esc
from dashboard.views.details import fw_label, verdict_html
from dashboard.views.plan import plan_csv, plan_report_html

#: Browser-side PNG export of every validity heatmap on the page (Bokeh renders its canvas to a PNG blob;
#: nothing leaves the browser). One file per heatmap, named after its title, with the heatmap's legend
#: (the ``[colour, label, marker]`` triples in the figure's ``tags``) drawn under the image: the page shows one
#: shared legend, so the figures themselves carry none.
PNG_EXPORT_JS = """
const views = [];
const walk = (v) => {
  if (!v) return;
  if (v.frame && v.canvas_view && v.model.name === name) views.push(v);
  for (const c of (v.child_views || [])) walk(c);
};
for (const r of (Bokeh.index.roots ?? Object.values(Bokeh.index))) walk(r);
// The cell mark of a legend entry (the figure's Scatter markers: x, circle, plus, dash, diamond).
const mark = (ctx, marker, cx, cy, r, lw) => {
  if (!marker) return;
  ctx.save();
  ctx.strokeStyle = "#111111";
  ctx.lineWidth = lw;
  ctx.beginPath();
  if (marker === "x") { ctx.moveTo(cx - r, cy - r); ctx.lineTo(cx + r, cy + r); ctx.moveTo(cx + r, cy - r); ctx.lineTo(cx - r, cy + r); }
  else if (marker === "circle") { ctx.arc(cx, cy, r, 0, 2 * Math.PI); }
  else if (marker === "plus") { ctx.moveTo(cx - r, cy); ctx.lineTo(cx + r, cy); ctx.moveTo(cx, cy - r); ctx.lineTo(cx, cy + r); }
  else if (marker === "dash") { ctx.moveTo(cx - r, cy); ctx.lineTo(cx + r, cy); }
  else if (marker === "diamond") { ctx.moveTo(cx, cy - r); ctx.lineTo(cx + r, cy); ctx.lineTo(cx, cy + r); ctx.lineTo(cx - r, cy); ctx.closePath(); }
  ctx.stroke();
  ctx.restore();
};
const withLegend = async (blob, items, cssWidth) => {
  const img = await createImageBitmap(blob);
  const s = cssWidth > 0 ? img.width / cssWidth : (window.devicePixelRatio || 1);
  const font = `${Math.round(15 * s)}px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif`;
  const sw = Math.round(16 * s), gap = Math.round(18 * s), pad = Math.round(10 * s), lh = Math.round(24 * s);
  const probe = document.createElement("canvas").getContext("2d");
  probe.font = font;
  const width = Math.max(img.width, Math.round(260 * s));
  const spots = [];
  let x = pad, y = pad;
  for (const [color, label, marker] of items) {
    const w = sw + Math.round(6 * s) + probe.measureText(String(label)).width;
    if (x > pad && x + w > width - pad) { x = pad; y += lh; }
    spots.push([x, y, color, String(label), String(marker || "")]);
    x += w + gap;
  }
  const extra = items.length ? y + lh + pad : 0;
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = img.height + extra;
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(img, 0, 0);
  ctx.font = font;
  ctx.textBaseline = "middle";
  for (const [lx, ly, color, label, marker] of spots) {
    const top = img.height + ly;
    ctx.fillStyle = color;
    ctx.fillRect(lx, top + (lh - sw) / 2, sw, sw);
    mark(ctx, marker, lx + sw / 2, top + lh / 2, sw * 0.36, Math.max(1, 2 * s));
    ctx.fillStyle = "#222222";
    ctx.fillText(label, lx + sw + Math.round(6 * s), top + lh / 2);
  }
  return await new Promise((ok) => canvas.toBlob(ok, "image/png"));
};
for (const v of views) {
  const title = (v.model.title && v.model.title.text) || "heatmap";
  const fname = "tp-heatmap-" + title.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") + ".png";
  const items = (v.model.tags || []).filter((t) => Array.isArray(t) && t.length >= 2);
  const cssWidth = v.canvas_view.el.getBoundingClientRect().width;
  v.export("png").to_blob().then((blob) => withLegend(blob, items, cssWidth)).then((blob) => {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = fname;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  });
}
"""


def _version_text(framework: str, release: str) -> str:
    """``0.33.0 (rules checked against vLLM 0.33.0's own code run as an H100-80GB (cuda-sm90) on 182 catalog
    models)`` for an executed
    release, ``0.22.0 (rules read from vLLM 0.22.0 source)`` otherwise: the release, not any one config (a
    cell's own evidence is in the selected cell, :func:`dashboard.rules.evidence.evidence_text`)."""
    from dashboard.rules.evidence import Evidence, evidence_text, table

    t = table(framework, release)
    ev = Evidence(framework, release, False, t is not None, t.file if t else "", t.models if t else 0,
                  table_platform=t.platform if t else "")
    how = evidence_text(ev)
    how = how.split("; ")[0]  # the release's part of the wording, without "this config was not run"
    return f"{release} ({how})"


def _vllm_version_text(release: str) -> str:
    """:func:`_version_text` of vLLM."""
    return _version_text("vllm", release)


def _gpu_name(gpu: str) -> str:
    """The GPU the memory view uses for ``gpu`` (its default when the state names none or an unknown one)."""
    from dashboard.views.controls import gpu_names, resolve_gpu

    return resolve_gpu(gpu, gpu_names()) or gpu or "(GPU table unavailable)"

GRID_COLUMNS = ["model_id", "framework", "version", "tp", "valid", "status", "rule_id", "message", "n_failures", "messages",
                "q_heads_per_rank", "kv_heads_per_rank", "kv_replicas"]


def grid_csv_frame(state: PlannerState, data: AppData) -> pd.DataFrame:
    """The grid rows the page shows: selected models x frameworks x TP sizes, with every message.

    ``version`` is the framework release whose rules were applied (vLLM, SGLang: the selected one; empty
    for frameworks whose rules are not keyed by release); ``ep`` is the EP control's value, which for vLLM
    means ``--enable-expert-parallel`` (EP size TP x DP) when above 1."""
    grid = data.grid(**state_grid_args(state), frameworks=state.frameworks)
    models = filter_models(state, data)
    sub = grid.loc[grid["model_id"].isin(models) & grid["tp"].isin(state.tp_sizes)]
    sub = sub.assign(version=sub["framework"].astype(object).map({fw: state_version(state, fw) for fw in VERSION_PARAMS}).fillna(""))
    cols = [c for c in GRID_COLUMNS if c in sub.columns]
    sub = sub[cols].copy()
    order = {m: i for i, m in enumerate(models)}
    sub["_o"] = sub["model_id"].map(order)
    sub = sub.sort_values(["_o", "framework", "tp"]).drop(columns="_o")
    sub.insert(4, "pp", state.pp)
    sub.insert(5, "dp", state.dp)
    sub.insert(6, "ep", state.ep)
    sub.insert(7, "dp_attention", state.dp_attention)
    return sub.reset_index(drop=True)


def grid_csv(state: PlannerState, data: AppData) -> io.StringIO:
    """CSV text of :func:`grid_csv_frame` (UTF-8, header row, formulas neutralised)."""
    return csv_buffer(grid_csv_frame(state, data))


def report_html(state: PlannerState, data: AppData, link: str = "") -> str:
    """A one-page, self-contained HTML report of the chosen configuration (every string escaped)."""
    s = state
    models = filter_models(s, data)
    tps = sorted(s.tp_sizes)
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cfg = [
        ("Catalog", data.path), ("Models shown", f"{len(models)}"), ("Name filter", s.search or "(none)"),
        ("Frameworks", ", ".join(framework_label(f) for f in s.frameworks)),
        ("vLLM version", _version_text("vllm", s.vllm_version)),
        ("SGLang version", _version_text("sglang", s.sglang_version)),
        ("TP sizes", ", ".join(map(str, tps))), ("PP / DP / EP", f"{s.pp} / {s.dp} / {s.ep}"
                                                  + (" (vLLM: --enable-expert-parallel, EP = TP × DP)" if s.ep > 1 else "")),
        ("DP-attention", "on" if s.dp_attention else "off"), ("Weight dtype", s.weight_dtype),
        ("KV-cache dtype", s.kv_dtype), ("GPU", f"{s.gpu_count} × {_gpu_name(s.gpu)}"),
        ("Context length", f"{s.context_len:,} tokens"),
        ("Plan", f"{', '.join(framework_label(f) for f in s.plan_frameworks) or '(no framework)'}; at least "
                 f"{s.min_sequences:,} sequences; GPUs per node: {s.gpus_per_node or 'from the GPU table'}"),
        ("View", TAB_LABELS.get(s.tab, s.tab)),
    ]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>TP planner report</title><style>"
        "body{font-family:system-ui,sans-serif;margin:24px;color:#111}table{border-collapse:collapse;font-size:13px}"
        "td,th{border:1px solid #ddd;padding:3px 6px;text-align:center}td.m{text-align:left}"
        ".valid{background:#009E73}.valid_replicated{background:#56B4E9}.valid_padded{background:#E69F00}"
        ".invalid{background:#D55E00}.unknown{background:#BBBBBB}</style></head><body>",
        "<h1>TP planner report</h1>",
        f"<p>Generated {esc(now)}." + (f" Link: <code>{esc(link)}</code>" if link else "") + "</p>",
        "<h2>Configuration</h2><table>" + "".join(f"<tr><th>{esc(k)}</th><td class='m'>{esc(v)}</td></tr>" for k, v in cfg) + "</table>",
    ]
    if models and tps and s.frameworks:
        grid = data.grid(**state_grid_args(s), frameworks=s.frameworks)
        for fw in s.frameworks:
            f = heatmap.heatmap_frame(grid, fw, models[:200], tps)
            parts.append(f"<h2>{esc(fw_label(s, fw))}</h2><table><tr><th>model</th>"
                         + "".join(f"<th>TP {t}</th>" for t in tps) + "</tr>")
            for m, sub in f.groupby("model_id", sort=False):
                cells = "".join(
                    f"<td class='{esc(st)}' title='{esc(msg)}'>{esc(mark)}</td>"
                    for st, mark, msg in zip(sub["status"], sub["mark"], sub["messages"], strict=True)
                )
                parts.append(f"<tr><td class='m'>{esc(m)}</td>{cells}</tr>")
            parts.append("</table>")
        if len(models) > 200:
            parts.append(f"<p>First 200 of {len(models)} models shown.</p>")
        legend = " ".join(f"<span class='{k}' style='padding:2px 6px'>{esc(v)}</span>" for k, v in heatmap.STATUS_LABELS.items())
        parts.append(f"<p>{legend}</p>")
    if s.model:
        parts.append("<h2>Selected cell</h2>" + verdict_html(s, data))
        parts.append(plan_report_html(s, data))
    parts.append("</body></html>")
    return "".join(parts)


class ExportPanel(pn.viewable.Viewer):
    """Download buttons: grid CSV and the HTML report (PNG: the save tool above each heatmap)."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")
    link = param.String(default="", doc="Shareable link of the current view (filled by the app).")

    def __init__(self, **params):
        super().__init__(**params)
        self.csv = pn.widgets.FileDownload(
            callback=lambda: grid_csv(self.state, self.data), filename="tp-grid.csv", label="Grid CSV",
            color="primary", variant="outline", css_classes=["tp-export-csv"], embed=False, width=150,
        )
        self.report = pn.widgets.FileDownload(
            callback=lambda: io.StringIO(report_html(self.state, self.data, self.link)), filename="tp-report.html",
            label="Report (HTML)", color="primary", variant="outline", css_classes=["tp-export-report"],
            embed=False, width=150,
        )
        self.plan_csv = pn.widgets.FileDownload(
            callback=lambda: plan_csv(self.state, self.data), filename="tp-plan.csv", label="Plan CSV",
            color="primary", variant="outline", css_classes=["tp-export-plan-csv"], embed=False, width=150,
        )
        self.png = pn.widgets.Button(label="Heatmap PNG", color="primary", variant="outline",
                                     css_classes=["tp-export-png"], width=150)
        self.png.js_on_click(args={"name": heatmap.HEATMAP_FIGURE_NAME}, code=PNG_EXPORT_JS)
        self.hint = pn.pane.HTML('<div style="font-size:13px;color:#555">PNG: the heatmap on the Validity tab, rows in '
                                 "view, with its legend (also the save icon above the heatmap).</div>")

    def __panel__(self):
        return pn.Column(pn.Row(self.png, self.csv), pn.Row(self.report, self.plan_csv), self.hint, sizing_mode="stretch_width")
