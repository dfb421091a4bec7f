"""Memory view: KV cache and weights per rank against TP, tokens and sequences that fit on a GPU."""

from __future__ import annotations

import math

import pandas as pd
import panel as pn
import param

from dashboard.plots import memory as memory_plots
from dashboard.plots.style import framework_label
from dashboard.state import AppData, PlannerState, state_grid_args, state_rule_args
from dashboard.views.common import selected_record_changed, esc, notice_html, when_shown
from dashboard.views.controls import gpu_names, resolve_gpu

GIB = float(1 << 30)


def _weight_dtype(state: PlannerState) -> str | None:
    return None if state.weight_dtype == "checkpoint" else state.weight_dtype


def _pick(d: dict, *names: str, default=float("nan")):
    for n in names:
        if n in d and d[n] is not None:
            return d[n]
    return default


def _ep_args(state: PlannerState, framework: str) -> dict:
    """``ep`` / ``expert_parallel`` of :func:`dashboard.memory.capacity` for ``framework``: the same reading
    of the EP control as the rules (:func:`dashboard.state.rule_args`; for vLLM, EP > 1 is
    ``--enable-expert-parallel`` with an EP size of TP x DP)."""
    kw = state_rule_args(state, framework)
    return {"ep": kw["ep"], "expert_parallel": bool(kw.get("expert_parallel", False))}


#: GPU memory assumed for the per-rank curves: the KV bytes per token and the weight bytes per rank do not
#: depend on the card, only the budget does (which the curves do not show).
_NOMINAL_GPU_BYTES = 80 << 30


def refusals(state: PlannerState, data: AppData, model: str, frameworks, tp_sizes) -> dict[tuple[str, int], str]:
    """``{(framework, tp): first failing rule's message}`` for the layouts :mod:`dashboard.rules` refuses
    for ``model`` under the state's PP / DP / EP / DP-attention (the validity heatmaps' grid); accepted
    layouts are absent. Empty when the rules engine is unavailable."""
    fws, tps = list(frameworks), [int(t) for t in tp_sizes]
    out: dict[tuple[str, int], str] = {}
    try:
        g = data.grid(**state_grid_args(state), frameworks=fws)
        sub = g.loc[g["model_id"] == model]
        seen = set()
        for fw, tp, valid, msg in zip(sub["framework"].astype(str), sub["tp"].astype(int), sub["valid"],
                                      sub["message"].astype(str)):
            if fw in fws and tp in tps:
                seen.add((fw, tp))
                if not bool(valid):
                    out[(fw, tp)] = msg or "refused"
        missing = [(fw, tp) for fw in fws for tp in tps if (fw, tp) not in seen]
    except Exception:  # noqa: BLE001 -- fall back to one check per cell
        missing = [(fw, tp) for fw in fws for tp in tps]
    if missing:
        rec = data.record(model)
        if rec is None:
            return out
        try:
            from dashboard import rules
        except ImportError:
            return out
        for fw, tp in missing:
            try:
                v = rules.check(rec, fw, tp, **state_rule_args(state, fw))
            except Exception:  # noqa: BLE001 -- unknown: not marked refused
                continue
            if not v.valid:
                out[(fw, tp)] = v.failures[0].message if v.failures else "refused"
    return out


def per_rank_frame(state: PlannerState, data: AppData, record: dict) -> pd.DataFrame:
    """KV bytes per token per rank and weight bytes per rank for each selected framework x TP size.

    Columns: framework, tp, kv_bytes_per_token (bytes, per token, per rank), weight_bytes (bytes per
    rank), refused (the first failing rule's message when the framework refuses that TP size, else "").
    Both values are :func:`dashboard.memory.capacity`'s own (``kv_bytes_per_token_per_rank``,
    ``weight_bytes_per_gpu``) for the state's PP, EP, DP, DP-attention, dtypes and context length: a rank
    of a PP-stage holds only that stage's layers. NaN where :mod:`dashboard.memory` refuses the
    combination or the framework refuses the TP size.
    """
    from dashboard import memory

    refused = refusals(state, data, str(record.get("model_id") or state.model), state.frameworks, state.tp_sizes)
    rows = []
    for fw in state.frameworks:
        for tp in sorted(state.tp_sizes):
            try:
                c = memory.capacity(record, fw, _NOMINAL_GPU_BYTES, tp, pp=state.pp, **_ep_args(state, fw),
                                    kv_dtype=state.kv_dtype, weight_dtype=_weight_dtype(state),
                                    context_len=state.context_len, dp=state.dp, dp_attention=state.dp_attention)
                kv = float(_pick(c, "kv_bytes_per_token_per_rank"))
                w = float(_pick(c, "weight_bytes_per_gpu"))
            except Exception:  # noqa: BLE001 -- shown as a gap in the line
                kv = w = float("nan")
            why = refused.get((fw, int(tp)), "")
            if why:  # a layout the framework refuses has no per-rank size: a gap in the line
                kv = w = float("nan")
            rows.append({"framework": fw, "tp": int(tp), "kv_bytes_per_token": kv, "weight_bytes": w, "refused": why})
    return pd.DataFrame(rows, columns=["framework", "tp", "kv_bytes_per_token", "weight_bytes", "refused"])


def _whole(x) -> int | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) else None


def capacity_frame(state: PlannerState, data: AppData, record: dict, gpu: str) -> pd.DataFrame:
    """:func:`dashboard.memory.capacity` for the selected framework at each selected TP size.

    Columns: tp, fits (the framework accepts the layout and its memory fits), mem_fits (memory alone),
    refused (first failing rule's message when the framework refuses the TP size, else ""), gpus_needed
    (``tp * pp``, one replica), enough_gpus (``gpus_needed <= gpu_count``), status (``fits``, ``refused``,
    ``does not fit``, ``needs N GPUs (have M)``, ``no estimate``), weights_gib, kv_gib, reserve_gib,
    tokens_per_gpu, seqs_per_replica (whole numbers, ``None`` when unknown), replicas (``gpu_count //
    (tp * pp)``; ``None`` when fewer GPUs than one replica needs), seqs_total (``None`` unless the row
    fits with at least one replica), error (reason when the memory model refused).
    """
    from dashboard import memory

    refused = refusals(state, data, str(record.get("model_id") or state.model), [state.framework], state.tp_sizes)
    rows = []
    for tp in sorted(state.tp_sizes):
        row = {"tp": int(tp), "error": ""}
        try:
            c = memory.capacity(record, state.framework, gpu, tp, pp=state.pp, **_ep_args(state, state.framework),
                                kv_dtype=state.kv_dtype,
                                weight_dtype=_weight_dtype(state), context_len=state.context_len, dp=state.dp,
                                dp_attention=state.dp_attention)
        except Exception as exc:  # noqa: BLE001
            c = {}
            row["error"] = str(exc)
        row["mem_fits"] = bool(_pick(c, "fits", default=False))
        row["refused"] = refused.get((state.framework, int(tp)), "")
        row["fits"] = row["mem_fits"] and not row["refused"]
        row["gpus_needed"] = int(tp) * state.pp
        row["enough_gpus"] = row["gpus_needed"] <= state.gpu_count
        row["weights_gib"] = float(_pick(c, "weight_bytes_per_gpu", "weights_bytes_per_gpu", "weight_bytes")) / GIB
        row["kv_gib"] = max(0.0, float(_pick(c, "kv_budget_bytes_per_gpu", "kv_cache_bytes_per_gpu"))) / GIB
        row["reserve_gib"] = float(_pick(c, "reserve_bytes_per_gpu")) / GIB
        row["budget_rule"] = str(c.get("budget_rule", ""))
        row["tokens_per_gpu"] = _whole(_pick(c, "tokens_per_gpu", "kv_tokens_per_gpu"))
        row["seqs_per_replica"] = _whole(_pick(c, "concurrent_sequences", "sequences", "concurrent_seqs"))
        replicas = state.gpu_count // max(1, row["gpus_needed"])
        row["replicas"] = replicas if replicas >= 1 else None
        row["seqs_total"] = (row["seqs_per_replica"] * replicas
                             if row["fits"] and replicas >= 1 and row["seqs_per_replica"] is not None else None)
        if row["error"] and not c:
            status = "no estimate"
        elif row["refused"]:
            status = "refused"
        elif not row["mem_fits"]:
            status = "does not fit"
        elif not row["enough_gpus"]:
            status = f"needs {row['gpus_needed']} GPUs (have {state.gpu_count})"
        else:
            status = "fits"
        row["status"] = status
        rows.append(row)
    return pd.DataFrame(rows)


def _fmt(x: float, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}{unit}"
    return f"{x:,.1f}{unit}"


def _fmt_int(x) -> str:
    """A whole number with thousands separators, or "–" when unknown."""
    n = _whole(x)
    return "–" if n is None else f"{n:,}"


#: Colour of each capacity status in the table (green only for a layout that works as chosen).
_STATUS_STYLE = {"fits": "color:#0a6b4f", "refused": "color:#a33a00", "does not fit": "color:#a33a00",
                 "no estimate": "color:#555"}
_NEEDS_STYLE = "color:#8a5a00"


def capacity_note(row, framework: str, gpu_count: int) -> str:
    """Plain-text note of one capacity row: why the framework refuses it, GPUs it lacks, model errors."""
    notes = []
    if row.get("refused"):
        notes.append(f"refused by {framework_label(framework)}: {row['refused']}")
    if not row.get("enough_gpus", True) and not str(row.get("status", "")).startswith("needs "):
        notes.append(f"needs {row['gpus_needed']} GPUs per replica (have {gpu_count})")
    if row.get("error"):
        notes.append(str(row["error"]))
    out = ""
    for n in notes:  # a framework's message keeps its own full stop: the next note starts a sentence
        if not out:
            out = n
        elif out.rstrip().endswith("."):
            out += " " + n[:1].upper() + n[1:]
        else:
            out += "; " + n
    return out


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
        self._chart_note = pn.pane.HTML(sizing_mode="stretch_width", visible=False)
        self._table = pn.pane.HTML(sizing_mode="stretch_width")
        self.state.param.watch(when_shown(self, "memory", self._refresh), ["model", "framework", "frameworks", "tp_sizes", "pp", "ep", "kv_dtype",
                                               "weight_dtype", "gpu", "gpu_count", "context_len", "dp",
                                               "dp_attention", "vllm_version", "sglang_version"])
        # a model added to the session: redraw when the selected model's row changed
        _redraw = when_shown(self, "memory", self._refresh)
        self.param.watch(lambda e: _redraw(e) if selected_record_changed(self.state, e) else None, "data")
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
            self._chart_note.object = ""
            self._chart_note.visible = False

    def _refresh(self, *_):
        s = self.state
        self._title.object = (f'<h2 style="margin:4px 0;font-size:22px">Memory: {esc(s.model or "no model selected")}</h2>'
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
        layout = f"PP = {s.pp}" + (f", DP = {s.dp}" if s.dp > 1 else "") + (", DP-attention" if s.dp_attention else "")
        self._kv.object = memory_plots.per_rank_curves(per_rank, "kv_bytes_per_token",
                                                       "KV cache per token per rank (KiB)",
                                                       f"KV cache per token, per rank ({layout})", scale=1024.0)
        self._w.object = memory_plots.per_rank_curves(per_rank, "weight_bytes", "weights per rank (GiB)",
                                                      f"Weights per rank ({layout})", scale=GIB)
        gaps = per_rank.loc[per_rank["refused"] != ""]
        if len(gaps):
            by_fw = [f"{framework_label(fw)} TP {', '.join(str(int(t)) for t in sub['tp'])}"
                     for fw, sub in gaps.groupby("framework", sort=False)]
            self._chart_note.object = ('<div class="tp-mem-refused" style="font-size:14px;color:#555">Not drawn '
                                       f"(the framework refuses these TP sizes): {esc('; '.join(by_fw))}.</div>")
        else:
            self._chart_note.object = ""
        self._chart_note.visible = bool(len(gaps))
        gpus = gpu_names()
        gpu = resolve_gpu(s.gpu, gpus)
        if not gpu:
            self._show(None)
            self._bars.object = None
            self._table.object = notice_html("GPU table unavailable.", "warning")
            return
        from dashboard import memory as m

        try:
            gpu_gib = float(m.gpu_row(gpu)["memory_bytes"]) / GIB  # a table id or other:<GiB>
        except (ValueError, KeyError):
            gpu_gib = float("nan")
        cap = capacity_frame(s, self.data, rec, gpu)
        self._bars.object = memory_plots.memory_bars(
            cap, gpu_gib, f"Memory per GPU: {framework_label(s.framework)} on {gpu}"
        )
        self._show(None)
        body = []
        for _, r in cap.iterrows():
            status = str(r["status"])
            style = _STATUS_STYLE.get(status, _NEEDS_STYLE)
            fit = f'<span style="{style};font-weight:600">{esc(status)}</span>'
            body.append(
                f"<tr><td>TP {int(r['tp'])}</td><td>{fit}</td><td>{_fmt(r['weights_gib'])}</td>"
                f"<td>{_fmt(r['kv_gib'])}</td><td>{_fmt_int(r['tokens_per_gpu'])}</td>"
                f"<td>{_fmt_int(r['seqs_per_replica'])}</td><td>{_fmt_int(r['replicas'])}</td>"
                f"<td>{_fmt_int(r['seqs_total'])}</td><td>{esc(capacity_note(r, s.framework, s.gpu_count))}</td></tr>"
            )
        self._table.object = (
            f'<h3 style="font-size:17px;font-weight:600">Capacity on {s.gpu_count} × {esc(gpu)} at {s.context_len:,} tokens of context, '
            f'{esc(framework_label(s.framework))}</h3>'
            '<table class="tp-capacity" style="font-size:15px;border-collapse:collapse" cellpadding="6">'
            "<tr><th>layout</th><th>fits?</th><th>weights / GPU (GiB)</th><th>KV cache / GPU (GiB)</th>"
            "<th>KV tokens / GPU</th><th>sequences / replica</th><th>replicas</th><th>sequences total</th><th>note</th></tr>"
            + "".join(body) + "</table>"
        )

    def __panel__(self):
        return pn.Column(self._title, self._notice, pn.Row(self._kv, self._w), self._chart_note, self._bars, self._table,
                         sizing_mode="stretch_width")
