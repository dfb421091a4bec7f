"""Memory view: KV cache and weights per rank against TP, tokens and sequences that fit on a GPU."""

from __future__ import annotations

import math

import pandas as pd
import panel as pn
import param

from dashboard import plots
from dashboard.state import AppData, PlannerState
from dashboard.views.common import esc, notice_html
from dashboard.views.controls import gpu_names, resolve_gpu

GIB = float(1 << 30)


def _weight_dtype(state: PlannerState) -> str | None:
    return None if state.weight_dtype == "checkpoint" else state.weight_dtype


def _pick(d: dict, *names: str, default=float("nan")):
    for n in names:
        if n in d and d[n] is not None:
            return d[n]
    return default


def per_rank_frame(state: PlannerState, data: AppData, record: dict) -> pd.DataFrame:
    """KV bytes per token per rank and weight bytes per rank for each selected framework x TP size.

    Columns: framework, tp, kv_bytes_per_token (bytes, per token, per rank), weight_bytes (bytes per
    rank). NaN where :mod:`dashboard.memory` refuses the combination.
    """
    from dashboard import memory

    rows = []
    for fw in state.frameworks:
        for tp in sorted(state.tp_sizes):
            try:
                kv = float(memory.kv_cache_bytes_per_token_per_rank(record, fw, tp, kv_dtype=state.kv_dtype))
            except Exception:  # noqa: BLE001 -- shown as a gap in the line
                kv = float("nan")
            try:
                w = float(memory.weight_bytes_per_rank(record, fw, tp, pp=state.pp, ep=state.ep,
                                                       weight_dtype=_weight_dtype(state)))
            except Exception:  # noqa: BLE001
                w = float("nan")
            rows.append({"framework": fw, "tp": int(tp), "kv_bytes_per_token": kv, "weight_bytes": w})
    return pd.DataFrame(rows, columns=["framework", "tp", "kv_bytes_per_token", "weight_bytes"])


def capacity_frame(state: PlannerState, data: AppData, record: dict, gpu: str) -> pd.DataFrame:
    """:func:`dashboard.memory.capacity` for the selected framework at each selected TP size.

    Columns: tp, fits, weights_gib, kv_gib, reserve_gib, tokens_per_gpu, seqs_per_replica, replicas
    (``gpu_count // (tp * pp)``), seqs_total, error (reason when the memory model refused).
    """
    from dashboard import memory

    rows = []
    for tp in sorted(state.tp_sizes):
        row = {"tp": int(tp), "error": ""}
        try:
            c = memory.capacity(record, state.framework, gpu, tp, pp=state.pp, ep=state.ep, kv_dtype=state.kv_dtype,
                                weight_dtype=_weight_dtype(state), context_len=state.context_len, dp=state.dp,
                                dp_attention=state.dp_attention)
        except Exception as exc:  # noqa: BLE001
            c = {}
            row["error"] = str(exc)
        row["fits"] = bool(_pick(c, "fits", default=False))
        row["weights_gib"] = float(_pick(c, "weight_bytes_per_gpu", "weights_bytes_per_gpu", "weight_bytes")) / GIB
        row["kv_gib"] = max(0.0, float(_pick(c, "kv_budget_bytes_per_gpu", "kv_cache_bytes_per_gpu"))) / GIB
        row["reserve_gib"] = float(_pick(c, "reserve_bytes_per_gpu")) / GIB
        row["budget_rule"] = str(c.get("budget_rule", ""))
        row["tokens_per_gpu"] = float(_pick(c, "tokens_per_gpu", "kv_tokens_per_gpu"))
        row["seqs_per_replica"] = float(_pick(c, "concurrent_sequences", "sequences", "concurrent_seqs"))
        replicas = state.gpu_count // max(1, tp * state.pp)
        row["replicas"] = replicas
        row["seqs_total"] = row["seqs_per_replica"] * replicas if replicas else 0.0
        rows.append(row)
    return pd.DataFrame(rows)


def _fmt(x: float, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}{unit}"
    return f"{x:,.1f}{unit}"


class MemoryView(pn.viewable.Viewer):
    """Per-rank KV and weights against TP per framework; per-GPU memory and capacity on a chosen GPU."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        self._title = pn.pane.HTML(sizing_mode="stretch_width")
        self._notice = pn.pane.HTML(sizing_mode="stretch_width", visible=False)
        self._kv = pn.pane.HoloViews(None, css_classes=["tp-mem-kv"])
        self._w = pn.pane.HoloViews(None, css_classes=["tp-mem-weights"])
        self._bars = pn.pane.HoloViews(None, css_classes=["tp-mem-bars"])
        self._table = pn.pane.HTML(sizing_mode="stretch_width")
        self.state.param.watch(self._refresh, ["model", "framework", "frameworks", "tp_sizes", "pp", "ep", "kv_dtype",
                                               "weight_dtype", "gpu", "gpu_count", "context_len", "dp",
                                               "dp_attention"])
        self._refresh()

    def _show(self, note: str | None) -> None:
        self._notice.object = note or ""
        self._notice.visible = bool(note)
        # HoloViews panes are emptied, not hidden: toggling their `visible` trips a Panel bug
        # (ImportedStyleSheet in Bokeh.stylesheets) that aborts the other watchers.
        if note is not None:
            for p in (self._kv, self._w, self._bars):
                p.object = None
            self._table.object = ""

    def _refresh(self, *_):
        s = self.state
        self._title.object = (f'<h2 style="margin:4px 0">Memory: {esc(s.model or "no model selected")}</h2>'
                              f'<div style="font-size:15px;color:#444">KV-cache dtype {esc(s.kv_dtype)}, weights '
                              f'{esc(s.weight_dtype)}, PP = {s.pp}, EP = {s.ep}; context {s.context_len:,} tokens.</div>')
        if not s.model:
            return self._show(notice_html("Select a model (tap a heatmap cell or use the model picker) to see its memory."))
        rec = self.data.record(s.model)
        if rec is None or rec.get("status") != "ok":
            return self._show(notice_html(f"{s.model}: no usable config, so no memory estimate.", "warning"))
        try:
            import dashboard.memory  # noqa: F401 -- availability check
        except ImportError:
            return self._show(notice_html("The memory model is not available: dashboard.memory is not installed yet.", "warning"))
        per_rank = per_rank_frame(s, self.data, rec)
        self._kv.object = plots.per_rank_curves(per_rank, "kv_bytes_per_token", "KV cache per token per rank (KiB)",
                                                "KV cache per token, per rank", scale=1024.0)
        self._w.object = plots.per_rank_curves(per_rank, "weight_bytes", "weights per rank (GiB)",
                                               "Weights per rank", scale=GIB)
        gpus = gpu_names()
        gpu = resolve_gpu(s.gpu, gpus)
        if not gpu:
            self._show(None)
            self._bars.object = None
            self._table.object = notice_html("GPU table unavailable.", "warning")
            return
        from dashboard import memory as m

        g = m.load_gpus()
        row = g.loc[g["gpu"].astype(str) == gpu]
        gpu_gib = float(row["memory_bytes"].iloc[0]) / GIB if len(row) and "memory_bytes" in row else float("nan")
        cap = capacity_frame(s, self.data, rec, gpu)
        self._bars.object = plots.memory_bars(
            cap, gpu_gib, f"Memory per GPU: {plots.framework_label(s.framework)} on {gpu}"
        )
        self._show(None)
        body = []
        for _, r in cap.iterrows():
            fit = '<span style="color:#0a6b4f;font-weight:600">fits</span>' if r["fits"] else '<span style="color:#a33a00;font-weight:600">does not fit</span>'
            gpus_needed = int(r["tp"]) * s.pp
            enough = "" if gpus_needed <= s.gpu_count else f" (needs {gpus_needed} GPUs)"
            body.append(
                f"<tr><td>TP {int(r['tp'])}</td><td>{fit}{esc(enough)}</td><td>{_fmt(r['weights_gib'])}</td>"
                f"<td>{_fmt(r['kv_gib'])}</td><td>{_fmt(r['tokens_per_gpu'])}</td><td>{_fmt(r['seqs_per_replica'])}</td>"
                f"<td>{int(r['replicas'])}</td><td>{_fmt(r['seqs_total'])}</td><td>{esc(r['error'])}</td></tr>"
            )
        self._table.object = (
            f'<h3>Capacity on {s.gpu_count} × {esc(gpu)} at {s.context_len:,} tokens of context</h3>'
            '<table class="tp-capacity" style="font-size:15px;border-collapse:collapse" cellpadding="6">'
            "<tr><th>layout</th><th>fits?</th><th>weights / GPU (GiB)</th><th>KV cache / GPU (GiB)</th>"
            "<th>KV tokens / GPU</th><th>sequences / replica</th><th>replicas</th><th>sequences total</th><th>note</th></tr>"
            + "".join(body) + "</table>"
        )

    def __panel__(self):
        return pn.Column(self._title, self._notice, pn.Row(self._kv, self._w), self._bars, self._table,
                         sizing_mode="stretch_width")
