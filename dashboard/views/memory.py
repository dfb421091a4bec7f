"""Memory view: KV cache and weights per rank against TP, tokens and sequences that fit on a GPU."""

from __future__ import annotations

import math

import pandas as pd
import panel as pn
import param

from dashboard.plots import memory as memory_plots
from dashboard.plots.style import framework_label
from dashboard.state import AppData, PlannerState, calibration_problem, state_grid_args, state_rule_args
from dashboard.views.common import behind_spinner, esc, notice_html, plural, selected_record_changed, when_shown
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


def capacity_frame(state: PlannerState, data: AppData, record: dict, gpu: str,
                   measured_gib: float | None = None) -> pd.DataFrame:
    """:func:`dashboard.memory.capacity` for the selected framework at each selected TP size.

    ``measured_gib`` (the KV-cache memory per GPU a log gave, GiB) calibrates the row of the selected TP
    size (``state.tp``) only: a log is one layout's figure. That row's ``calibrated`` is True.

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
    try:  # a framework that does not run on the GPU's family refuses every TP size there
        from dashboard import frameworks, gpus

        plat = frameworks.get(state.framework).platform_refusal(gpus.gpu_info(gpu))
    except ValueError:
        plat = ""
    if plat:
        refused = {(state.framework, int(tp)): plat for tp in state.tp_sizes}
    rows = []
    for tp in sorted(state.tp_sizes):
        row = {"tp": int(tp), "error": ""}
        measured = measured_gib * GIB if measured_gib is not None and int(tp) == int(state.tp) else None
        try:
            c = memory.capacity(record, state.framework, gpu, tp, pp=state.pp, **_ep_args(state, state.framework),
                                kv_dtype=state.kv_dtype,
                                weight_dtype=_weight_dtype(state), context_len=state.context_len, dp=state.dp,
                                dp_attention=state.dp_attention, measured_kv_bytes=measured)
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
        row["calibrated"] = bool(c.get("calibrated", False))
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
            status = f"needs {plural(row['gpus_needed'], 'GPU')} (have {state.gpu_count})"
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
        notes.append(f"needs {plural(row['gpus_needed'], 'GPU')} per replica (have {gpu_count})")
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


def selected_capacity(state: PlannerState, record: dict, gpu: str, measured_gib: float | None) -> dict:
    """:func:`dashboard.memory.capacity` of the selected layout (``state.framework`` at ``state.tp``) on
    ``gpu``, calibrated with ``measured_gib`` (GiB per GPU) when given. Raises ValueError as capacity does."""
    from dashboard import memory

    return memory.capacity(record, state.framework, gpu, state.tp, pp=state.pp, **_ep_args(state, state.framework),
                           kv_dtype=state.kv_dtype, weight_dtype=_weight_dtype(state), context_len=state.context_len,
                           dp=state.dp, dp_attention=state.dp_attention,
                           measured_kv_bytes=None if measured_gib is None else measured_gib * GIB)


#: What each breakdown part is, shown beside its GiB figure.
_PART_NOTES = {
    "weights": "model weights on this GPU",
    "activation peak": "profile run's peak activation (estimate)",
    "CUDA graphs": "captured decode graphs (estimate)",
    "non-torch": "NCCL, cuBLAS and CUDA-context memory (estimate)",
    "reserve implied by your log": "activations, graphs, non-torch: fraction × memory − weights − your KV",
    "KV cache": "the KV-cache pool",
    "free": "not given to the engine (its memory fraction's remainder)",
}


def breakdown_html(bd: dict, cap: dict, gpu: str) -> str:
    """The per-GPU breakdown as an HTML table: part, GiB, share of the card, what it is; and the total."""
    M = bd["memory_bytes"]
    rows = []
    for _, r in bd["parts"].iterrows():
        share = r["bytes"] / M if M else float("nan")
        rows.append(f'<tr data-part="{esc(r["part"])}"><td>{esc(r["part"])}</td>'
                    f'<td style="text-align:right">{r["gib"]:,.2f}</td>'
                    f'<td style="text-align:right">{share:.0%}</td><td style="color:#555">{esc(_PART_NOTES.get(r["part"], ""))}</td></tr>')
    over = ""
    if bd["over_bytes"] > 0:
        over = (f'<div style="color:#a33a00;font-weight:600">Does not fit: the charged parts exceed the card by '
                f'{bd["over_bytes"] / GIB:,.2f} GiB.</div>')
    tokens = _fmt_int(cap.get("tokens_per_gpu"))
    return (
        '<table class="tp-mem-breakdown" style="font-size:15px;border-collapse:collapse" cellpadding="4">'
        "<tr><th style='text-align:left'>part</th><th>GiB</th><th>of GPU</th><th style='text-align:left'>what</th></tr>"
        + "".join(rows)
        + f'<tr style="border-top:1px solid #999;font-weight:600"><td>total</td><td style="text-align:right">'
        f'{bd["parts"]["gib"].sum():,.2f}</td><td></td><td>{esc(gpu)}: {M / GIB:,.2f} GiB</td></tr></table>'
        f'<div style="font-size:15px;margin-top:4px">KV-cache tokens per GPU: <b>{tokens}</b>; budget rule: '
        f'{esc(cap.get("budget_rule", ""))}.</div>' + over
    )


def evidence_html(ev: dict) -> str:
    """The evidence mark of :func:`dashboard.memory.kv_evidence`: checked (green) or not (amber), the
    sentence, and the logged runs' sources as links (escaped)."""
    if ev["checked"]:
        head = '<span style="color:#0a6b4f;font-weight:700">✓ checked against logs</span>'
        links = ", ".join(f'<a href="{esc(u)}" target="_blank" rel="noopener noreferrer">log {i + 1}</a>'
                          for i, u in enumerate(ev["sources"][:6]))
        more = f" (+{len(ev['sources']) - 6} more)" if len(ev["sources"]) > 6 else ""
        ids = ", ".join(ev["oracle_ids"][:6]) + (", …" if len(ev["oracle_ids"]) > 6 else "")
        runs = f'<div style="font-size:13px;color:#555">Oracle runs {esc(ids)}; public logs: {links}{more}</div>'
    else:
        head = '<span style="color:#8a5a00;font-weight:700">⚠ not yet checked against a log</span>'
        runs = ""
    return (f'<div class="tp-mem-evidence" data-checked="{int(ev["checked"])}" style="font-size:15px;'
            f'border-left:4px solid {"#0a6b4f" if ev["checked"] else "#c98a00"};padding:4px 10px;margin:6px 0">'
            f'{head} <span style="color:#555">({esc(ev["family_label"])})</span><div>{esc(ev["text"])}</div>{runs}</div>')


class MemoryView(pn.viewable.Viewer):
    """Per-rank KV and weights against TP per framework; per-GPU memory and capacity on a chosen GPU."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        self._title = pn.pane.HTML(sizing_mode="stretch_width")
        self._notice = pn.pane.HTML(sizing_mode="stretch_width", visible=False)
        self._kv = pn.pane.HoloViews(None, css_classes=["tp-mem-kv"], linked_axes=False)
        self._w = pn.pane.HoloViews(None, css_classes=["tp-mem-weights"], linked_axes=False)
        self._bars = pn.pane.HoloViews(None, css_classes=["tp-mem-bars"], linked_axes=False)
        self._chart_note = pn.pane.HTML(sizing_mode="stretch_width", visible=False)
        self._table = pn.pane.HTML(sizing_mode="stretch_width")
        self._calib = pn.widgets.FloatInput(
            label="Measured KV cache memory (GiB)", value=self.state.kv_measured_gib, step=0.01,
            placeholder="e.g. 54.12", width=260, css_classes=["tp-mem-calib"],
            description="From your engine's log line 'Available KV cache memory: 54.12 GiB' (vLLM; SGLang: K size "
                        "+ V size), per GPU, for the layout shown below. Empty: the model's own estimate.")
        self._calib_help = pn.pane.HTML(
            '<div style="font-size:14px;color:#444;max-width:640px">Calibrate with a real run: enter the figure '
            "from your engine's log line <code>Available KV cache memory: 54.12 GiB</code> (per GPU, at the "
            "framework and TP size shown). Leave empty to use the model's estimate.</div>", sizing_mode="stretch_width")
        self._calib_note = pn.pane.HTML(sizing_mode="stretch_width")
        self._bd_title = pn.pane.HTML(sizing_mode="stretch_width")
        self._bd_bar = pn.pane.HoloViews(None, css_classes=["tp-mem-breakdown-bar"], width=760, height=210,
                                         linked_axes=False)
        self._bd_table = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-mem-breakdown-table"])
        self._evidence = pn.pane.HTML(sizing_mode="stretch_width")
        self._calib_warn = ""  # why the figure typed in the box was refused ("" when it was not)
        # the two per-rank charts are 480 px wide each (plots.memory.per_rank_curves): side by side they fit
        # the 1366 px page with the sidebar open (at 680 px the right-hand one was clipped).
        self._root = pn.Column(self._title, self._notice, self._calib_help, self._calib, self._calib_note,
                               self._bd_title, self._evidence, self._bd_bar, self._bd_table,
                               pn.Row(self._kv, self._w, styles={"flex-wrap": "wrap"}), self._chart_note,
                               self._bars, self._table, sizing_mode="stretch_width", css_classes=["tp-memory"])
        #: a served session computes behind Panel's loading spinner (the tab is not blank meanwhile)
        self._redraw = behind_spinner(self._root, self._refresh)
        self._calib.param.watch(self._calib_edited, "value")
        self.state.param.watch(self._calib_from_state, "kv_measured_gib")
        self.state.param.watch(when_shown(self, "memory", self._redraw), ["model", "framework", "frameworks", "tp_sizes", "pp", "ep", "kv_dtype",
                                               "weight_dtype", "gpu", "gpu_count", "context_len", "dp",
                                               "dp_attention", "vllm_version", "sglang_version", "tp",
                                               "kv_measured_gib"])
        # a model added to the session: redraw when the selected model's row changed
        _redraw = when_shown(self, "memory", self._redraw)
        self.param.watch(lambda e: _redraw(e) if selected_record_changed(self.state, e) else None, "data")
        self._refresh()

    def _calib_edited(self, event) -> None:
        """Box -> state: an empty box clears the calibration; a value that cannot be one is refused with a
        note beside the box and leaves the state uncalibrated."""
        v = event.new
        why = "" if v is None else calibration_problem(v, resolve_gpu(self.state.gpu, gpu_names()))
        self._calib_warn = f"Measured KV cache memory ({v:g} GiB) not used: {why}." if why else ""
        new = None if (v is None or why) else float(v)
        if self.state.kv_measured_gib == new:
            self._redraw()  # the state does not change: show the warning (or clear it) now
        else:
            self.state.kv_measured_gib = new

    def _calib_from_state(self, event) -> None:
        if event.new is None and self._calib_warn:
            return  # keep the refused figure in the box beside its warning
        if self._calib.value != event.new:
            self._calib.value = event.new

    def _measured(self, gpu: str) -> tuple[float | None, str]:
        """The state's calibration figure when usable on ``gpu`` (GiB), and a warning when it is not."""
        v = self.state.kv_measured_gib
        if v is None:
            return None, self._calib_warn
        why = calibration_problem(v, gpu)
        return (None, f"Measured KV cache memory ({v:g} GiB) not used: {why}.") if why else (float(v), "")

    def _show_breakdown(self, rec: dict, gpu: str, gpu_gib: float) -> None:
        from dashboard import memory as m

        s = self.state
        measured, warn = self._measured(gpu)
        label = f"{framework_label(s.framework)} TP {s.tp}" + (f" × PP {s.pp}" if s.pp > 1 else "")
        self._bd_title.object = (f'<h3 style="font-size:17px;font-weight:600;margin:10px 0 2px">Where one GPU\'s memory '
                                 f"goes: {esc(label)} on {esc(gpu)}</h3>")
        try:
            cap = selected_capacity(s, rec, gpu, measured)
            bd = m.memory_breakdown(cap)
        except Exception as exc:  # noqa: BLE001 -- a refused combination is a notice
            self._bd_bar.object = None
            self._bd_table.object = notice_html(f"No breakdown for this layout: {exc}", "warning")
            self._calib_note.object = notice_html(warn, "warning") if warn else ""
            self._evidence.object = ""
            return
        self._bd_bar.object = memory_plots.gpu_breakdown(bd["parts"], gpu_gib, f"{label} on {gpu}", width=750)
        self._bd_table.object = breakdown_html(bd, cap, gpu)
        if cap.get("calibrated"):
            est = m.capacity(rec, s.framework, gpu, s.tp, pp=s.pp, **_ep_args(s, s.framework), kv_dtype=s.kv_dtype,
                             weight_dtype=_weight_dtype(s), context_len=s.context_len, dp=s.dp,
                             dp_attention=s.dp_attention)
            est_kv = max(est["kv_budget_bytes_per_gpu"], 0.0) / GIB
            diff = est_kv / measured - 1
            self._calib_note.object = (
                '<div class="tp-mem-calibrated" style="background:#e6f4ee;color:#0a4f3a;padding:8px 12px;'
                'border-radius:6px;font-size:15px"><b>Calibrated from your log:</b> '
                f"{measured:,.2f} GiB of KV cache per GPU ({esc(label)}) replaces the model's reserve estimate "
                f"(which gave {est_kv:,.2f} GiB, {diff:+.1%} against your log). KV-cache tokens per GPU: "
                f"<b>{_fmt_int(cap.get('tokens_per_gpu'))}</b> (estimate: {_fmt_int(est.get('tokens_per_gpu'))}). "
                "Other TP sizes in the table below stay estimates.</div>")
        else:
            self._calib_note.object = (notice_html(warn, "warning") if warn else
                                       '<div class="tp-mem-uncalibrated" style="font-size:14px;color:#555">Not '
                                       "calibrated: the figures are the model's estimate.</div>")
        try:
            self._evidence.object = evidence_html(m.kv_evidence(rec, s.framework))
        except Exception as exc:  # noqa: BLE001
            self._evidence.object = notice_html(f"Evidence unavailable: {exc}", "warning")

    def _show(self, note: str | None) -> None:
        self._notice.object = note or ""
        self._notice.visible = bool(note)
        # HoloViews panes are emptied, not hidden: toggling their `visible` trips a Panel bug
        # (ImportedStyleSheet in Bokeh.stylesheets) that aborts the other watchers.
        if note is not None:
            for p in (self._kv, self._w, self._bars, self._bd_bar):
                p.object = None
            self._table.object = ""
            for p in (self._bd_title, self._bd_table, self._calib_note, self._evidence):
                p.object = ""
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
                                                       f"KV cache / token / rank ({layout})", scale=1024.0)
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
        self._show_breakdown(rec, gpu, gpu_gib)
        cap = capacity_frame(s, self.data, rec, gpu, self._measured(gpu)[0])
        self._bars.object = memory_plots.memory_bars(
            cap, gpu_gib, f"Memory per GPU: {framework_label(s.framework)} on {gpu}"
        )
        self._show(None)
        body = []
        for _, r in cap.iterrows():
            status = str(r["status"])
            style = _STATUS_STYLE.get(status, _NEEDS_STYLE)
            fit = f'<span style="{style};font-weight:600">{esc(status)}</span>'
            mark = " (calibrated)" if bool(r.get("calibrated", False)) else ""
            body.append(
                f"<tr><td>TP {int(r['tp'])}{mark}</td><td>{fit}</td><td>{_fmt(r['weights_gib'])}</td>"
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
        return self._root
