"""Plan tab: every way to split the cluster's GPUs for one model, per serving framework, ranked
(:func:`dashboard.planner.plan`), and on demand which catalog models fit the cluster
(:func:`dashboard.planner.plan_catalog`).

Controls (all in the URL through :class:`~dashboard.state.PlannerState`): model, GPU type, GPU count or
nodes x GPUs per node, context length, minimum sequences, frameworks. The view: a bar chart of the
concurrent sequences per layout and framework, a ranked table of the accepted layouts with their launch
commands (a copy button each), and the refused layouts greyed with their reason.

The plan is computed without commands (``plan(..., commands=False)``, memoized per setting for the
process) and the commands are built only for the rows the table shows (:func:`row_commands`).
"""

from __future__ import annotations

import io
import math

import pandas as pd
import panel as pn
import param

from dashboard.planner import CROSS_NODE_HINTS, RANKING_NOTE
from dashboard.plots import plan as plan_plots
from dashboard.plots.style import framework_label
from dashboard.state import MAX_MIN_SEQUENCES, PLAN_FRAMEWORKS, AppData, PlannerState
from dashboard.views.common import (
    COPY_JS, bind_two_way, command_html, csv_buffer, esc, notice_html, plural, selected_record_changed,
    when_shown)
from dashboard.views.controls import CheckBoxGroup, Select, Immediate, gpu_names, gpu_picker, resolve_gpu

GIB = float(1 << 30)
#: Accepted layouts the table shows before "Show all" (the CSV has every layout).
TABLE_ROWS = 10
#: Models the catalog ranking shows.
CATALOG_ROWS = 25
#: State parameters the plan depends on.
PLAN_PARAMS = ["model", "gpu", "gpu_count", "gpus_per_node", "context_len", "min_sequences", "plan_frameworks",
               "kv_dtype", "weight_dtype", "vllm_version", "sglang_version"]

#: Browser-side copy of a launch command, with feedback (:data:`dashboard.views.common.COPY_JS`).
_COPY_JS = COPY_JS

_KIND_LABELS = {"platform": "GPU family", "context": "context length", "rule": "framework rule", "cross_node_tp": "TP across nodes", "dtype": "GPU dtype",
                "memory": "memory"}

_TABLE_CSS = """
:host { width: 100%; }
table.tp-plan { border-collapse: collapse; width: 100%; font-size: 15px; table-layout: auto; }
table.tp-plan th { text-align: left; font-weight: 600; border-bottom: 2px solid #bbb; padding: 6px 8px;
  vertical-align: bottom; }
table.tp-plan th.num { text-align: right; }
table.tp-plan td { border-bottom: 1px solid #e3e3e3; padding: 6px 8px; vertical-align: top; }
table.tp-plan tr.tp-plan-row td { border-bottom: none; padding-bottom: 2px; }
table.tp-plan tr.tp-plan-cmd-row td { padding-top: 0; padding-bottom: 10px; }
table.tp-plan td.copy { width: 1%; white-space: nowrap; }
table.tp-plan td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.tp-plan td.lay { white-space: nowrap; font-weight: 600; }
table.tp-plan tr.below td { color: #8a5a00; }
pre.tp-cmd, details.tp-more pre { margin: 0; white-space: pre-wrap; overflow-wrap: normal; word-break: normal;
  overflow-x: auto; font-size: 12.5px;
  line-height: 1.35; background: #f5f7fa; border: 1px solid #e1e6ee; border-radius: 4px; padding: 4px 6px;
  color: #1d2733; }
button.tp-plan-copy { font-size: 14px; padding: 3px 10px; border: 1px solid #0b3d6b; color: #0b3d6b;
  background: #fff; border-radius: 4px; cursor: pointer; }
button.tp-plan-copy:hover { background: #0b3d6b; color: #fff; }
details.tp-more { margin-top: 4px; font-size: 13px; color: #444; }
details.tp-more pre { margin-top: 4px; }
table.tp-refused { border-collapse: collapse; width: 100%; font-size: 14px; color: #6b6b6b; }
table.tp-refused th { text-align: left; font-weight: 600; border-bottom: 1px solid #ccc; padding: 5px 8px;
  color: #555; }
table.tp-refused td { border-bottom: 1px solid #eee; padding: 5px 8px; vertical-align: top; background: #f6f6f6; }
table.tp-refused td.lays { max-width: 340px; }
.fw-dot { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px;
  vertical-align: baseline; }
"""


class IntInput(Immediate, pn.widgets.IntInput):
    """An IntInput whose changes reach the server without Panel's 50 ms delay."""


# ------------------------------------------------------------------------------------------------
# state -> plan (no widgets)
# ------------------------------------------------------------------------------------------------


def plan_gpu(state: PlannerState) -> str:
    """The GPU the plan uses: the state's when the GPU table lists it, else the default GPU."""
    return resolve_gpu(state.gpu, gpu_names())


def table_gpus_per_node(gpu: str) -> int:
    """GPUs per node the GPU table gives ``gpu`` (8 when it says nothing or cannot be read)."""
    try:
        from dashboard import planner

        return int(planner.gpu_info(gpu).gpus_per_node or 8)
    except Exception:  # noqa: BLE001
        return 8


def effective_gpus_per_node(state: PlannerState) -> int:
    """The state's GPUs per node, or the GPU table's value for its GPU when the state says 0."""
    return int(state.gpus_per_node) or table_gpus_per_node(plan_gpu(state))


def plan_args(state: PlannerState) -> dict:
    """Keyword arguments of :func:`dashboard.planner.plan` for ``state`` (besides the record)."""
    return {
        "gpus": int(state.gpu_count), "gpu_type": plan_gpu(state),
        "gpus_per_node": int(state.gpus_per_node) or None, "context_len": int(state.context_len),
        "frameworks": tuple(f for f in PLAN_FRAMEWORKS if f in state.plan_frameworks),
        "versions": {"vllm": state.vllm_version or None, "sglang": state.sglang_version or None},
        "kv_dtype": state.kv_dtype, "weight_dtype": None if state.weight_dtype == "checkpoint" else state.weight_dtype,
        "min_sequences": int(state.min_sequences),
        "cross_node_hint": CROSS_NODE_HINTS["dashboard"],  # the Plan tab has no cross-node TP control
    }


def state_plan(state: PlannerState, data: AppData) -> tuple[pd.DataFrame | None, str]:
    """(:func:`dashboard.planner.plan` of the state's model without commands, "") or (None, why not).

    Memoized per setting for the life of the process (the frame is read-only: callers copy before
    changing it)."""
    if not state.model:
        return None, "Pick a model (above, or tap a heatmap cell) to plan its deployment."
    rec = data.record(state.model)
    if rec is None:
        return None, f"Model {state.model} is not in the catalog."
    if rec.get("status") != "ok":
        return None, f"{state.model}: no usable config ({rec.get('status')}), so no plan."
    kw = plan_args(state)
    if not kw["frameworks"]:
        return None, "Tick at least one framework to plan."
    if not kw["gpu_type"]:
        return None, "The GPU table is unavailable, so no plan."
    key = ("plan", state.model, *sorted((k, repr(v)) for k, v in kw.items()))

    def build():
        from dashboard import planner

        return planner.plan(rec, commands=False, **kw)

    try:
        return data.memo(key, build, maxsize=64), ""
    except (ValueError, TypeError) as exc:
        return None, f"No plan for {state.model}: {exc}"


def row_commands(row, attrs: dict, model_id: str) -> tuple[str, ...]:
    """Launch command(s) of one layout that starts (a row of a plan made with ``commands=False``): what
    ``plan(..., commands=True)`` puts in its ``commands`` column."""
    from dashboard import planner
    from dashboard.launch import command_model  # the Hub id, or <MODEL-PATH> when none is known

    if not bool(row["starts"]):
        return ()
    fw, ep = str(row["framework"]), int(row["ep"])
    return planner.launch_commands(
        {"framework": fw, "tp": int(row["tp"]), "pp": int(row["pp"]), "dp": int(row["dp"]),
         "attn_dp": int(row["attn_dp"]), "ep": ep, "expert_parallel": ep > 1, "mem_fraction": row["mem_fraction"]},
        command_model(model_id)[0], gpus_per_node=int(attrs["gpus_per_node"]), context_len=int(attrs["context_len"]),
        kv_dtype=str(attrs["kv_dtype"]), release=row["release"])


def copy_text(cmds) -> str:
    """What a row's copy button puts on the clipboard: every command of the layout, a blank line between."""
    return "\n\n".join(cmds)


def accepted(df: pd.DataFrame) -> pd.DataFrame:
    """Layouts that start: those that fit by rank, then those holding fewer sequences than asked (most first)."""
    ok = df.loc[df["starts"].astype(bool)]
    fit = ok.loc[ok["fits"].astype(bool)]
    below = ok.loc[~ok["fits"].astype(bool)].sort_values(["sequences_total", "gpus_per_replica"],
                                                        ascending=[False, True], kind="stable")
    return pd.concat([fit, below])


def _gib(x) -> str:
    try:
        f = float(x) / GIB
    except (TypeError, ValueError):
        return "–"
    return "–" if not math.isfinite(f) else f"{f:,.1f}"


def cluster_text(attrs: dict) -> str:
    """``16 × H100-80GB (2 nodes of 8)``."""
    n, gpn = int(attrs["gpus"]), int(attrs["gpus_per_node"])
    nodes = -(-n // gpn)
    return f"{n} × {attrs['gpu']} ({nodes} node{'s' if nodes != 1 else ''} of {gpn})"


def summary_html(df: pd.DataFrame) -> str:
    """The plan's headline: the layout with the most KV capacity overall and per framework by the interim
    ranking (:mod:`dashboard.planner.ranking`), and the leads that come only from default memory fractions
    (escaped)."""
    from dashboard.planner import without_attrs

    a = df.attrs
    df = without_attrs(df)
    ctx, k = int(a["context_len"]), int(a["min_sequences"])
    ask = f"at least {k:,} sequences of {ctx:,} tokens" if k > 1 else f"sequences of {ctx:,} tokens"
    fits = df["fits"].to_numpy(dtype=bool)
    if not fits.any():
        starts = int(df["starts"].sum())
        why = (f"{starts} layout{'s' if starts != 1 else ''} start but hold fewer than {k:,} sequences"
               if starts else "no layout starts (see the refused layouts below)")
        return (f'<div class="tp-plan-best" style="font-size:17px;color:#8a1c0b;margin:6px 0">'
                f"Nothing fits {esc(ask)} on {esc(cluster_text(a))}: {esc(why)}.</div>")
    # the plan is ranked (dashboard.planner.ranking): its first fitting row leads; each framework's own
    # layout with the most KV capacity is planner.best's (near-ties measured within that framework)
    from dashboard.planner import best, fraction_notes

    fit = list(zip(*(df[c].to_numpy()[fits].tolist() for c in ("framework", "layout", "sequences_total"))))
    b = dict(zip(("framework", "layout", "sequences_total"), fit[0]))
    first: dict[str, tuple] = {r["framework"]: (r["framework"], r["layout"], r["sequences_total"])
                               for r in best(df).to_dict("records")}
    df.attrs = dict(a)
    notes = fraction_notes(df)
    per_fw = []
    for fw in a.get("releases", {}):
        color = plan_plots.FRAMEWORK_COLORS.get(fw, "#777")
        dot = f'<span class="fw-dot" style="background:{color}"></span>'
        if fw in a.get("platform_refusals", {}):
            per_fw.append(f'<span class="tp-plan-platform" title="{esc(a["platform_refusals"][fw])}">{dot}'
                          f"{esc(framework_label(fw))}: <i>does not run on {esc(a['gpu'])}</i></span>")
        elif fw not in first:
            per_fw.append(f"<span>{dot}{esc(framework_label(fw))}: <i>nothing fits</i></span>")
        else:
            _, layout, seqs = first[fw]
            per_fw.append(f"<span>{dot}{esc(framework_label(fw))}: <b>{esc(layout)}</b>, "
                          f"{int(seqs):,}</span>")
    return (
        '<div class="tp-plan-best" style="font-size:17px;margin:6px 0 2px 0;line-height:1.45">'
        f"Most KV capacity for {esc(ask)} on {esc(cluster_text(a))}: <b>{esc(framework_label(b['framework']))} "
        f"{esc(b['layout'])}</b>, {int(b['sequences_total']):,} concurrent sequences "
        f"({len(fit)} of {len(df)} layouts fit; near-ties within 10 % prefer fewer pipeline stages, then more "
        "replicas).</div>"
        f'<div style="font-size:15px;color:#333;display:flex;flex-wrap:wrap;gap:4px 22px">{"".join(per_fw)}</div>'
        + "".join(f'<div class="tp-plan-fraction" style="font-size:14px;color:#555;margin-top:4px">'
                  f"{esc(n['text'])}</div>" for n in notes)
    )


def table_html(df: pd.DataFrame, model_id: str, limit: int | None = TABLE_ROWS) -> str:
    """The ranked table of the layouts that start (the first ``limit``; all when None), with their
    launch commands and a copy button each (every string escaped)."""
    from dashboard.planner import without_attrs

    attrs = df.attrs
    df = without_attrs(df)
    acc = accepted(df)
    shown = acc if limit is None else acc.head(limit)
    body = []
    for r in shown.to_dict("records"):
        cmds = row_commands(r, attrs, model_id)
        fits = bool(r["fits"])
        rank = "" if pd.isna(r["rank"]) or not fits else str(int(r["rank"]))
        color = plan_plots.FRAMEWORK_COLORS.get(str(r["framework"]), "#777")
        first = cmds[0] if cmds else ""
        more = ""
        if len(cmds) > 1:
            rest = "\n\n".join(cmds[1:])
            more = (f'<details class="tp-more"><summary>{len(cmds) - 1} more command'
                    f'{"s" if len(cmds) > 2 else ""} (other nodes / replicas)</summary><pre>{command_html(rest)}</pre></details>')
        copy = (f'<button class="tp-plan-copy" type="button" title="Copy every command of this layout" '
                f'data-cmd="{esc(copy_text(cmds))}" onclick="{esc(_COPY_JS)}">Copy</button>' if cmds else "")
        seq = f"{int(r['sequences_total']):,}" + ("" if fits else f" (fewer than {int(attrs['min_sequences']):,})")
        limited = "the engine's scheduler cap" if r["limited_by"] == "scheduler" else "the KV cache"
        cls = "tp-plan-row" + ("" if fits else " below")
        body.append(
            f'<tr class="{cls}" data-rank="{esc(rank)}" '
            f'data-framework="{esc(r["framework"])}" data-layout="{esc(r["layout"])}">'
            f'<td class="num">{esc(rank) or "–"}</td>'
            f'<td style="white-space:nowrap"><span class="fw-dot" style="background:{color}"></span>'
            f'{esc(framework_label(str(r["framework"])))}</td>'
            f'<td class="lay">{esc(r["layout"])}</td>'
            f'<td class="num">{int(r["gpus_per_replica"])}</td>'
            f'<td class="num">{_gib(r["weight_bytes_per_gpu"])}</td>'
            f'<td class="num">{_gib(r["kv_budget_bytes_per_gpu"])}</td>'
            f'<td class="num" title="limited by {esc(limited)}">{esc(seq)}</td>'
            f'<td class="copy">{copy}</td></tr>'
            f'<tr class="tp-plan-cmd-row{"" if fits else " below"}"><td></td><td colspan="7">'
            f'<pre class="tp-cmd">{command_html(first)}</pre>{more}</td></tr>'
        )
    if not body:
        return notice_html("No layout of these GPUs starts under the selected frameworks: see the refused "
                           "layouts below.", "warning")
    note = ""
    if limit is not None and len(acc) > limit:
        note = (f'<div style="font-size:14px;color:#555;margin-top:6px">Showing the best {limit} of {len(acc)} '
                "layouts that start: tick “Show every layout” or download the Plan CSV.</div>")
    return (
        '<table class="tp-plan tp-plan-table"><thead><tr><th class="num">#</th><th>framework</th><th>layout</th>'
        '<th class="num" title="GPUs of one replica (TP × PP)">GPUs per replica</th>'
        '<th class="num">weights per GPU (GiB)</th><th class="num">KV cache per GPU (GiB)</th>'
        '<th class="num" title="concurrent sequences on all GPUs">sequences (all GPUs)</th>'
        '<th>launch command</th></tr></thead><tbody>'
        + "".join(body) + "</tbody></table>" + note
    )


def _refusals(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`dashboard.planner.refusals`, or an empty frame when every layout starts (``refusals`` fails on
    a plan without refused layouts: it sorts an empty frame by columns it lacks)."""
    from dashboard import planner

    if bool(df["starts"].astype(bool).all()):
        return pd.DataFrame(columns=["framework", "refusal_kind", "reason", "layouts", "count", "summary"])
    return planner.refusals(df)


def refused_html(df: pd.DataFrame) -> str:
    """The refused layouts grouped by framework and reason, greyed (escaped)."""
    from dashboard.planner import without_attrs

    df = without_attrs(df)
    ref = _refusals(df)
    if ref.empty:
        return ""
    rows = []
    for r in ref.to_dict("records"):
        lays = list(r["layouts"])
        shown = ", ".join(lays[:8]) + (f" and {len(lays) - 8} more" if len(lays) > 8 else "")
        rows.append(
            f'<tr class="tp-refused-row" data-framework="{esc(r["framework"])}"><td style="white-space:nowrap">'
            f'{esc(framework_label(str(r["framework"])))}</td><td class="lays">{esc(shown)}</td>'
            f'<td style="white-space:nowrap">{esc(_KIND_LABELS.get(str(r["refusal_kind"]), str(r["refusal_kind"])))}</td>'
            f'<td>{esc(r["reason"])}</td></tr>'
        )
    n = int((~df["starts"].astype(bool)).sum())
    return (
        f'<h3 style="font-size:18px;font-weight:600;color:#555;margin:14px 0 4px 0">Refused layouts ({n})</h3>'
        '<table class="tp-refused"><thead><tr><th>framework</th><th>layouts</th><th>refused by</th>'
        "<th>reason (what the user would see)</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def plan_csv_frame(state: PlannerState, data: AppData) -> pd.DataFrame:
    """Every layout of the state's plan, one row each (the columns of :data:`dashboard.planner.COLUMNS`,
    ``failures`` as ``rule: message`` lines, ``commands`` every launch command joined by blank lines), with
    the model, GPU, GPU count, GPUs per node and context length in front; one ``note`` row when there is no
    plan."""
    df, why = state_plan(state, data)
    if df is None:
        return pd.DataFrame([{"model_id": state.model, "note": why}])
    out = df.copy()
    out["commands"] = ["\n\n".join(row_commands(r, df.attrs, state.model)) for _, r in df.iterrows()]
    out["failures"] = ["\n".join(f"{rid}: {msg}" for rid, msg in (f or ())) for f in df["failures"]]
    a = df.attrs
    for i, (k, v) in enumerate((("model_id", state.model), ("gpu", a["gpu"]), ("gpus_per_node", a["gpus_per_node"]),
                                ("context_len", a["context_len"]), ("min_sequences", a["min_sequences"]))):
        out.insert(i, k, v)
    return out.reset_index(drop=True)


def plan_csv(state: PlannerState, data: AppData) -> io.StringIO:
    """CSV text of :func:`plan_csv_frame` (formulas neutralised)."""
    return csv_buffer(plan_csv_frame(state, data))


def plan_report_html(state: PlannerState, data: AppData, rows: int = TABLE_ROWS) -> str:
    """The Plan section of the one-page report: the headline, the best layouts with their commands and
    the refusals (escaped; "" when no model is selected)."""
    if not state.model:
        return ""
    df, why = state_plan(state, data)
    head = f"<h2>Plan: {esc(state.model)}</h2>"
    if df is None:
        return head + f"<p>{esc(why)}</p>"
    parts = [head, summary_html(df), "<table><tr><th>#</th><th>framework</th><th>layout</th><th>sequences</th>"
             "<th>launch command</th></tr>"]
    for _, r in accepted(df).head(rows).iterrows():
        rank = "" if pd.isna(r["rank"]) or not bool(r["fits"]) else str(int(r["rank"]))
        cmds = "\n\n".join(row_commands(r, df.attrs, state.model))
        parts.append(f"<tr><td>{esc(rank) or '–'}</td><td>{esc(framework_label(str(r['framework'])))}</td>"
                     f"<td class='m'>{esc(r['layout'])}</td><td>{int(r['sequences_total']):,}</td>"
                     f"<td class='m'><pre style='white-space:pre-wrap;overflow-wrap:normal;word-break:normal;margin:0;font-size:11px'>{esc(cmds)}</pre></td></tr>")
    parts.append("</table>")
    ref = _refusals(df)
    if not ref.empty:
        parts.append("<h3>Refused layouts</h3><ul style='color:#555'>"
                     + "".join(f"<li>{esc(s)}</li>" for s in ref["summary"]) + "</ul>")
    return "".join(parts)


def catalog_ranking(state: PlannerState, data: AppData) -> pd.DataFrame:
    """:func:`dashboard.planner.plan_catalog` of the session's catalog (readable configs) on the state's
    cluster, one row per model: its best framework and layout by total sequences; models that serve
    first. Columns: model_id, serves, framework, best_layout, sequences_total, gpus_per_replica,
    frameworks_serving (labels), why_not."""
    from dashboard import planner

    kw = plan_args(state)
    cat = data.catalog.loc[data.catalog["status"] == "ok"]
    res = planner.plan_catalog(cat, kw["gpus"], kw["gpu_type"], min_sequences=kw["min_sequences"],
                               context_len=kw["context_len"], gpus_per_node=kw["gpus_per_node"],
                               frameworks=kw["frameworks"], versions=kw["versions"], kv_dtype=kw["kv_dtype"],
                               weight_dtype=kw["weight_dtype"])
    res = res.assign(_s=res["serves"].astype(int))
    serving = (res.loc[res["serves"]].groupby("model_id", sort=False)["framework"]
               .agg(lambda s: ", ".join(framework_label(f) for f in s)))
    best = (res.sort_values(["_s", "sequences_total", "gpus_per_replica"], ascending=[False, False, True], kind="stable")
               .groupby("model_id", sort=False).head(1))
    best = best.assign(frameworks_serving=best["model_id"].map(serving).fillna(""))
    best = best.sort_values(["_s", "sequences_total"], ascending=[False, False], kind="stable")
    return best[["model_id", "serves", "framework", "best_layout", "sequences_total", "gpus_per_replica",
                 "frameworks_serving", "why_not"]].reset_index(drop=True)


def catalog_html(rank: pd.DataFrame, what: str, rows: int = CATALOG_ROWS) -> str:
    """The catalog ranking as a table (the first ``rows`` models; escaped)."""
    n_serve = int(rank["serves"].sum())
    body = []
    for i, r in rank.head(rows).iterrows():
        ok = bool(r["serves"])
        color = plan_plots.FRAMEWORK_COLORS.get(str(r["framework"]), "#777")
        body.append(
            f'<tr class="tp-catalog-plan-row{"" if ok else " below"}"><td class="num">{i + 1 if ok else "–"}</td>'
            f"<td>{esc(r['model_id'])}</td><td style='white-space:nowrap'><span class='fw-dot' style='background:{color}'>"
            f"</span>{esc(framework_label(str(r['framework'])))}</td><td class='lay'>{esc(r['best_layout'] or '–')}</td>"
            f"<td class='num'>{int(r['sequences_total']):,}</td><td>{esc(r['frameworks_serving'] or r['why_not'])}</td></tr>"
        )
    return (
        f'<div style="font-size:16px;margin:4px 0 6px 0"><b>{n_serve}</b> of {len(rank)} models fit {esc(what)}. '
        f"{'Top ' + str(min(rows, len(rank))) + ' by KV capacity (concurrent sequences):' if len(rank) else ''}</div>"
        '<table class="tp-plan tp-catalog-plan"><thead><tr><th>#</th><th>model</th><th>best framework</th>'
        "<th>best layout</th><th>sequences</th><th>frameworks that fit it (or why not)</th></tr></thead><tbody>"
        + "".join(body) + "</tbody></table>"
    )


# ------------------------------------------------------------------------------------------------
# the view
# ------------------------------------------------------------------------------------------------


class PlanView(pn.viewable.Viewer):
    """Deployment planner for the selected model on the chosen cluster; catalog ranking on demand."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self.model = pn.widgets.AutocompleteInput(
            label="Model", options=list(self.data.model_ids), case_sensitive=False, search_strategy="includes",
            min_characters=1, restrict=True, placeholder="type part of a model id", width=330,
            css_classes=["tp-plan-model"])
        bind_two_way(self.model, s, "model")
        self.gpu, self.gpu_gib = gpu_picker(s, width=150, css_class="tp-plan-gpu")
        self.gpu_count = IntInput(label="GPUs", start=1, end=4096, width=90, css_classes=["tp-plan-gpus"])
        bind_two_way(self.gpu_count, s, "gpu_count")
        self.nodes = IntInput(label="Nodes", start=1, end=4096, width=80, css_classes=["tp-plan-nodes"])
        self.gpn = IntInput(label="GPUs / node", start=1, end=1024, width=100, css_classes=["tp-plan-gpn"])
        self._sync_cluster()
        self.nodes.param.watch(self._nodes_changed, "value")
        self.gpn.param.watch(self._gpn_changed, "value")
        s.param.watch(self._sync_cluster, ["gpu", "gpu_count", "gpus_per_node"])
        self.context_len = IntInput(label="Context (tokens)", start=1, end=10_000_000, step=1024, width=130,
                                    css_classes=["tp-plan-context"])
        bind_two_way(self.context_len, s, "context_len")
        self.min_sequences = IntInput(label="Min. sequences", start=1, end=MAX_MIN_SEQUENCES, width=120,
                                      css_classes=["tp-plan-min-seqs"])
        bind_two_way(self.min_sequences, s, "min_sequences")
        self.frameworks = CheckBoxGroup(
            label="Frameworks", options={framework_label(f): f for f in PLAN_FRAMEWORKS}, inline=True,
            css_classes=["tp-plan-frameworks"])
        bind_two_way(self.frameworks, s, "plan_frameworks", to_widget=list,
                     to_param=lambda v: [f for f in PLAN_FRAMEWORKS if f in v])
        self.show_all = pn.widgets.Checkbox(label="Show every layout that starts", css_classes=["tp-plan-show-all"])
        self.show_all.param.watch(lambda _e: self._refresh(), "value")

        self._title = pn.pane.HTML(sizing_mode="stretch_width")
        self._notice = pn.pane.HTML(sizing_mode="stretch_width", visible=False)
        self._summary = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-plan-summary"],
                                     stylesheets=[_TABLE_CSS])
        self._fig = plan_plots.sequences_figure()
        self._chart = pn.pane.Bokeh(self._fig, sizing_mode="stretch_width", css_classes=["tp-plan-chart-pane"])
        self._table = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-plan-table-pane"],
                                   stylesheets=[_TABLE_CSS])
        self._refused = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["tp-plan-refused"],
                                     stylesheets=[_TABLE_CSS])
        self.csv = pn.widgets.FileDownload(
            callback=lambda: plan_csv(self.state, self.data), filename="tp-plan.csv", label="Plan CSV (every layout)",
            color="primary", variant="outline", css_classes=["tp-export-plan"], embed=False, width=220)
        self.rank_button = pn.widgets.Button(label="Which models fit this cluster?", color="primary",
                                             css_classes=["tp-plan-catalog-button"], width=260)
        self.rank_button.on_click(self._rank_catalog)
        self._catalog = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["tp-plan-catalog"],
                                     stylesheets=[_TABLE_CSS])
        self._catalog_key = None
        s.param.watch(when_shown(self, "plan", self._refresh), PLAN_PARAMS)
        self.param.watch(self._data_changed, "data")  # a model added to the session
        _redraw = when_shown(self, "plan", self._refresh)
        self.param.watch(lambda e: _redraw(e) if selected_record_changed(self.state, e) else None, "data")
        self._refresh()

    def _data_changed(self, event):
        ids = list(event.new.model_ids)
        if list(self.model.options) != ids:
            self.model.options = ids

    # ---- cluster: GPU count or nodes x GPUs per node -----------------------------------------------
    def _sync_cluster(self, *_):
        gpn = effective_gpus_per_node(self.state)
        self._cluster_busy = True
        try:
            self.gpn.value = gpn
            self.nodes.value = max(1, -(-int(self.state.gpu_count) // gpn))
        finally:
            self._cluster_busy = False

    def _nodes_changed(self, event):
        if self._cluster_busy or event.new is None:
            return
        gpn = effective_gpus_per_node(self.state)
        with pn.io.hold():
            self.state.gpu_count = int(min(4096, max(1, int(event.new)) * gpn))
        self._sync_cluster()

    def _gpn_changed(self, event):
        if self._cluster_busy or event.new is None:
            return
        v = max(1, min(1024, int(event.new)))
        table = table_gpus_per_node(plan_gpu(self.state))
        with pn.io.hold():
            self.state.gpus_per_node = 0 if v == table else v
        self._sync_cluster()

    # ---- rendering ---------------------------------------------------------------------------------
    def _settings_key(self) -> tuple:
        return tuple((k, repr(v)) for k, v in plan_args(self.state).items())

    def _refresh(self, *_):
        # one websocket message for the title, notice, summary, chart, table and refusals (each assignment
        # would otherwise be its own patch, and the browser lays the page out after each)
        with pn.io.hold():
            self._repaint()

    def _repaint(self) -> None:
        s = self.state
        self._title.object = (
            f'<h2 class="tp-plan-title" style="margin:4px 0;font-size:22px">Plan: '
            f'{esc(s.model or "no model selected")}</h2>'
            '<div style="font-size:15px;color:#444">Every way to split the GPUs (TP × PP × DP, expert and '
            "attention data parallelism where the framework has them), as each framework judges it, with the "
            f"concurrent sequences it holds. KV cache {esc(s.kv_dtype)}, weights {esc(s.weight_dtype)}. "
            f"{esc(RANKING_NOTE)}</div>"
        )
        self._mark_catalog_stale()
        df, why = state_plan(s, self.data)
        if df is None:
            self._notice.object = notice_html(why, "info" if not s.model else "warning")
            self._notice.visible = True
            self._summary.object = ""
            self._table.object = ""
            self._refused.object = ""
            plan_plots.update_sequences(self._fig, plan_plots.sequences_frame(None), title="No plan", xlabel="")
            return
        self._notice.object = ""
        self._notice.visible = False
        a = df.attrs
        limit = None if self.show_all.value else TABLE_ROWS

        def render():  # the plan is memoized per setting; so is what it renders to (read-only strings)
            return summary_html(df), plan_plots.sequences_frame(df), table_html(df, s.model, limit), refused_html(df)

        key = ("plan-view", s.model, *sorted((k, repr(v)) for k, v in plan_args(s).items()), limit)
        summary, bars, table, refused = self.data.memo(key, render, maxsize=64)
        self._summary.object = summary + (notice_html(str(a["dtype_check"]), "info") if a.get("dtype_check") else "")
        plan_plots.update_sequences(
            self._fig, bars, minimum=int(a["min_sequences"]),
            title=f"Sequences per layout: {int(a['gpus'])} × {a['gpu']}, {int(a['context_len']):,} tokens",
            xlabel=(f"concurrent {int(a['context_len']):,}-token sequences on all {plural(a['gpus'], 'GPU')}"
                    if int(a["gpus"]) != 1 else f"concurrent {int(a['context_len']):,}-token sequences on 1 GPU")
                   + (f" (dashed: the minimum, {int(a['min_sequences']):,})" if int(a["min_sequences"]) > 1 else ""),
        )
        self._table.object = table
        self._refused.object = refused

    def _mark_catalog_stale(self) -> None:
        if self._catalog_key is not None and self._catalog_key != self._settings_key() and self._catalog.object:
            if "tp-catalog-stale" not in self._catalog.object:
                self._catalog.object = (notice_html("The cluster settings changed since this ranking: press the "
                                                    "button again to rank for the new settings.", "warning")
                                        .replace("tp-notice ", "tp-notice tp-catalog-stale ", 1) + self._catalog.object)

    def _rank_catalog(self, *_):
        s = self.state
        kw = plan_args(s)
        if not kw["frameworks"] or not kw["gpu_type"]:
            self._catalog.object = notice_html("Tick a framework (and have a GPU table) to rank the catalog.", "warning")
            return
        try:
            rank = catalog_ranking(s, self.data)
        except (ValueError, TypeError) as exc:
            self._catalog.object = notice_html(f"Could not rank the catalog: {exc}", "warning")
            return
        gpn = kw["gpus_per_node"] or table_gpus_per_node(kw["gpu_type"])
        k = kw["min_sequences"]
        what = (f"{kw['gpus']} × {kw['gpu_type']} ({plural(-(-kw['gpus'] // gpn), 'node')} of {gpn}) with "
                f"{'at least ' + format(k, ',') + ' sequences' if k > 1 else 'one sequence or more'} of "
                f"{kw['context_len']:,} tokens")
        self._catalog_key = self._settings_key()
        self._catalog.object = catalog_html(rank, what)

    def __panel__(self):
        controls = pn.FlexBox(self.model, self.gpu, self.gpu_gib, self.gpu_count, self.nodes, self.gpn, self.context_len,
                              self.min_sequences, self.frameworks, gap="0 6px", align_items="flex-end",
                              sizing_mode="stretch_width", css_classes=["tp-plan-controls"])
        return pn.Column(
            self._title, controls, self._notice, self._summary, self._chart,
            pn.pane.HTML('<h3 style="font-size:18px;font-weight:600;margin:10px 0 4px 0">Layouts that start, '
                         "ranked (launch commands)</h3>", sizing_mode="stretch_width"),
            self._table, pn.Row(self.show_all, self.csv), self._refused,
            pn.pane.HTML('<h3 style="font-size:18px;font-weight:600;margin:14px 0 4px 0">Catalog: which models fit '
                         "this cluster</h3>", sizing_mode="stretch_width"),
            self.rank_button, self._catalog,
            sizing_mode="stretch_width", styles={"min-width": "0", "max-width": "100%"},
        )
