"""Reading a plan: refusals grouped by reason, the best layouts, the ``--json`` document and the text table."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dashboard import memory
from dashboard.planner.common import COLUMNS, FW_LABEL, PLAN_FRAMEWORKS, SCHEMA_VERSION
from dashboard.planner.ranking import RANKING_NOTE, best_per_group

__all__ = ["RANKING_NOTE", "best", "format_table", "fraction_notes", "plan_to_dict", "refusals", "without_attrs"]


def without_attrs(plan_df: pd.DataFrame) -> pd.DataFrame:
    """A shallow copy of ``plan_df`` without ``attrs``. pandas deep-copies ``attrs`` into every frame or
    Series derived from a frame (each ``df[col]``, ``df.loc[...]``), which dominates the cost of small
    selections on a plan; read ``plan_df.attrs`` first, then work on this."""
    out = plan_df.copy(deep=False)
    out.attrs = {}
    return out


def refusals(plan_df: pd.DataFrame) -> pd.DataFrame:
    """The refused layouts of a :func:`plan` result grouped by (framework, reason).

    Returns a DataFrame with ``framework``, ``refusal_kind``, ``reason`` (the message), ``layouts`` (tuple of
    layout labels), ``count`` and ``summary`` -- one sentence such as ``"TP 16 refused by vLLM: <message>"``
    (``"TP 3, TP 6 × DP 2 refused by SGLang: ..."`` when several layouts share the reason) -- ordered by
    framework, then by the smallest layout."""
    empty = pd.DataFrame(columns=["framework", "refusal_kind", "reason", "layouts", "count", "summary"])
    if plan_df.empty:
        return empty
    plan_df = without_attrs(plan_df)
    starts = plan_df["starts"].to_numpy(dtype=bool)
    if starts.all():  # every layout starts (a small model): nothing to group
        return empty
    bad = np.flatnonzero(~starts)
    col = {c: plan_df[c].to_numpy()[bad] for c in ("framework", "refusal_kind", "refusal", "layout")}
    sizes = [plan_df[c].to_numpy(dtype=np.int64)[bad] for c in ("tp", "pp", "dp", "attn_dp", "ep")]
    # groups (framework, kind, reason) numbered in order of first appearance
    key = np.zeros(len(bad), dtype=np.int64)
    for c in ("framework", "refusal_kind", "refusal"):
        codes, uniq = pd.factorize(col[c], sort=False, use_na_sentinel=False)
        key = key * (len(uniq) + 1) + codes
    group, _ = pd.factorize(key, sort=False)
    n_groups = int(group.max()) + 1
    # within a group, by size (tp, pp, dp, attn_dp, ep); ties keep their order (lexsort is stable)
    order = np.lexsort((*sizes[::-1], group))
    g_sorted = group[order]
    bounds = np.r_[0, np.flatnonzero(np.diff(g_sorted)) + 1, len(order)]
    labels_sorted = col["layout"][order].tolist()
    fw_order = {fw: i for i, fw in enumerate(PLAN_FRAMEWORKS)}
    tp_sorted = sizes[0][order].tolist()
    rows = []
    for gi in range(n_groups):
        lo, hi = int(bounds[gi]), int(bounds[gi + 1])
        j = int(order[lo])
        fw, kind, reason = col["framework"][j], col["refusal_kind"][j], col["refusal"][j]
        labels = tuple(labels_sorted[lo:hi])
        shown = ", ".join(labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "")
        rows.append(((fw_order.get(fw, len(fw_order)), tp_sorted[lo]),
                     {"framework": fw, "refusal_kind": kind, "reason": reason, "layouts": labels,
                      "count": len(labels), "summary": f"{shown} refused by {FW_LABEL.get(fw, fw)}: {reason}"}))
    rows.sort(key=lambda r: r[0])  # by framework, then the smallest TP (stable: ties keep first appearance)
    return pd.DataFrame([r for _, r in rows], columns=list(empty.columns))


def best(plan_df: pd.DataFrame) -> pd.DataFrame:
    """The layout with the most KV capacity per framework of a :func:`plan` result, by the interim ranking
    (:mod:`dashboard.planner.ranking`) applied to that framework's rows alone: its near-ties (within 10 % of
    its most sequences) prefer fewer pipeline stages, then more replicas. One row each, frameworks in the
    plan's order (the framework of the overall rank 1 first); frameworks with no fitting layout are absent."""
    df = without_attrs(plan_df)
    picks = best_per_group(df["framework"].to_numpy(dtype=object), df["fits"].to_numpy(dtype=bool),
                           df["sequences_total"].to_numpy(), df["pp"].to_numpy(), df["dp"].to_numpy(),
                           df["gpus_per_replica"].to_numpy())
    return df.iloc[picks].reset_index(drop=True)


def _at_share(r: dict, share: float, M: float) -> int:
    """Sequences row ``r`` would hold if its KV budget were ``share`` of the memory left after its weights
    (``share x (M - weights)`` per GPU): its KV sequences scaled by the budget ratio, capped by its scheduler
    default, times its replicas."""
    w, b = float(r["weight_bytes_per_gpu"]), float(r["kv_budget_bytes_per_gpu"])
    if not (math.isfinite(w) and math.isfinite(b)) or b <= 0:
        return int(r["sequences_total"])
    kv = math.floor(float(r["kv_sequences_per_replica"]) * share * (M - w) / b)
    return int(max(0, min(kv, int(r["scheduler_limit_per_replica"]))) * int(r["dp"]))


def fraction_notes(plan_df: pd.DataFrame) -> list[dict[str, Any]]:
    """Where one framework's best layout (:func:`best`) holds more sequences than another's, whether that
    lead comes only from the frameworks' default memory fractions.

    Each framework gives the KV cache its own share of the memory left after the weights (vLLM
    ``gpu_memory_utilization x total - weights - ...``; TensorRT-LLM ``free_gpu_memory_fraction x (total -
    weights - ...)``; SGLang ``mem_fraction_static x (total - startup) - weights``). For the leader L and
    each framework R behind it, both layouts are recomputed at the other's share (``kv_budget / (M -
    weights)``, bytes per GPU): the sequences scale with the budget, capped by the scheduler default. The lead
    "comes from the memory fraction" when L at R's share holds no more than R does (``flips``: the order
    flips or ties with equal fractions); otherwise the order holds at equal fractions.

    Returns one dict per other framework: ``leader``, ``other`` (framework ids), ``leader_layout``,
    ``other_layout``, ``leader_sequences``, ``other_sequences``, ``leader_share``, ``other_share`` (KV budget
    / memory after weights, 0..1), ``leader_at_other_share``, ``other_at_leader_share`` (sequences),
    ``from_fraction`` (bool) and ``text`` (one sentence). Empty when fewer than two frameworks fit."""
    from dashboard import frameworks

    M = float(plan_df.attrs.get("gpu_memory_bytes") or 0)
    b = best(plan_df)
    if len(b) < 2 or M <= 0:
        return []
    rows = sorted(b.to_dict("records"), key=lambda r: -int(r["sequences_total"]))
    lead = rows[0]

    def share(r):
        w, bud = float(r["weight_bytes_per_gpu"]), float(r["kv_budget_bytes_per_gpu"])
        return bud / (M - w) if math.isfinite(w) and math.isfinite(bud) and M > w else float("nan")

    def knob(fw, r):
        f = frameworks.get(fw)
        flag = (f.launch_flags.get("mem_fraction") or ("the memory fraction",))[0].lstrip("-")
        frac = r.get("mem_fraction")
        val = f" {float(frac):g}" if frac is not None and math.isfinite(float(frac)) else ""
        return f"{flag}{val}"

    out = []
    for r in rows[1:]:
        if int(r["sequences_total"]) >= int(lead["sequences_total"]):
            continue
        sl, sr = share(lead), share(r)
        if not (math.isfinite(sl) and math.isfinite(sr)):
            continue
        l_at = _at_share(lead, sr, M)
        r_at = _at_share(r, sl, M)
        flips = l_at <= int(r["sequences_total"])
        L, R = FW_LABEL.get(lead["framework"], lead["framework"]), FW_LABEL.get(r["framework"], r["framework"])
        rs = int(r["sequences_total"])
        head = (f"{L} {lead['layout']} ({int(lead['sequences_total']):,} sequences) leads {R} {r['layout']} "
                f"({rs:,}); by default {L} gives the KV cache {sl:.0%} of the memory left after the weights "
                f"({knob(lead['framework'], lead)}), {R} {sr:.0%} ({knob(r['framework'], r)}).")
        if flips:
            text = (head + f" The lead comes only from the default memory fractions: at {R}'s share {L} would "
                    f"hold {l_at:,}, " + ("the same as" if l_at == rs else "fewer than") + f" {R}'s {rs:,}, so "
                    "with equal fractions the ranking " + ("ties." if l_at == rs else "flips."))
        else:
            text = (head + f" At {R}'s share {L} would still hold {l_at:,}, more than {R}'s {rs:,}: the "
                    "ranking does not come from the memory fraction alone.")
        out.append(dict(leader=lead["framework"], other=r["framework"], leader_layout=lead["layout"],
                        other_layout=r["layout"], leader_sequences=int(lead["sequences_total"]),
                        other_sequences=int(r["sequences_total"]), leader_share=round(sl, 4),
                        other_share=round(sr, 4), leader_at_other_share=l_at, other_at_leader_share=r_at,
                        from_fraction=bool(flips), text=text))
    return out


def launch_item(command: str) -> dict[str, Any]:
    """One planned command as structured fields: ``where`` (its ``#`` comment: node, replica), ``gpus`` (the
    ``CUDA_VISIBLE_DEVICES`` it sets, as device indices, or None: every GPU of its node) and ``command``
    (the shell text without the comment)."""
    lines = str(command).splitlines()
    where = lines[0][1:].strip() if lines and lines[0].startswith("#") else ""
    body = "\n".join(lines[1:] if where else lines)
    gpus = None
    for tok in body.replace("&&", " ").split():
        if tok.startswith("CUDA_VISIBLE_DEVICES="):
            gpus = [int(x) for x in tok.split("=", 1)[1].split(",") if x.isdigit()]
    return {"where": where, "gpus": gpus, "command": body}


def plan_to_dict(plan_df: pd.DataFrame) -> dict[str, Any]:
    """A :func:`plan` result as plain JSON-able data (the ``--json`` output of ``tp-planner plan``).

    Keys: ``schema_version`` (:data:`SCHEMA_VERSION`), ``model_id``, ``gpus``, ``gpu``, ``gpus_per_node``,
    ``context_len``, ``kv_dtype``, ``weight_dtype``, ``min_sequences``, ``cross_node_tp``, ``releases``
    (framework -> release), ``platform_refusals`` (framework -> why it does not run on this GPU family,
    only the frameworks refused there), ``dtype_check`` ('' or the note that the GPU's compute capability is unknown
    and no dtype was checked), ``node_note`` ('' or the sentence saying the last node is partial), ``command_model`` (the model the commands
    name: the Hub id, or ``<MODEL-PATH>`` when none is known) and ``model_note`` ('' or why), ``best`` (framework -> the label of that framework's layout with the most KV
    capacity by :func:`best`, or null), ``ranking`` (the rule, :data:`RANKING_NOTE`), ``fraction_notes``
    (:func:`fraction_notes`: leads that come only from default memory fractions),
    ``layouts`` (one object per row with the fields of :data:`COLUMNS`; ``failures`` as a list of
    ``{"rule_id", "message"}``, ``commands`` as a list of strings, and ``launch``: the same commands as
    :func:`launch_item` objects ``{"where", "gpus", "command"}``), ``refusals`` (:func:`refusals` rows:
    ``framework, refusal_kind, reason, layouts, count, summary``)."""
    a = plan_df.attrs
    layouts = []
    for r in plan_df.to_dict("records"):
        item = {}
        for c, _ in COLUMNS:
            v = r[c]
            if c == "failures":
                v = [{"rule_id": rid, "message": msg} for rid, msg in (v or ())]
            elif c == "commands":
                v = list(v or ())
            item[c] = _plain(v)
        item["launch"] = [launch_item(cmd) for cmd in item["commands"]]
        layouts.append(item)
    b = best(plan_df)
    ref = refusals(plan_df)
    return {
        "schema_version": SCHEMA_VERSION,
        "model_id": a.get("model_id"), "gpus": a.get("gpus"), "gpu": a.get("gpu"),
        "gpus_per_node": a.get("gpus_per_node"), "context_len": a.get("context_len"),
        "kv_dtype": a.get("kv_dtype"), "weight_dtype": a.get("weight_dtype"),
        "min_sequences": a.get("min_sequences"), "cross_node_tp": a.get("cross_node_tp"),
        "releases": dict(a.get("releases", {})), "dtype_check": a.get("dtype_check", ""),
        "platform_refusals": dict(a.get("platform_refusals", {})),
        "node_note": a.get("node_note", ""), "command_model": a.get("command_model"),
        "model_note": a.get("model_note", ""),
        "best": {fw: (b.loc[b["framework"] == fw, "layout"].iloc[0] if (b["framework"] == fw).any() else None)
                 for fw in dict(a.get("releases", {}))},
        "ranking": RANKING_NOTE,
        "fraction_notes": fraction_notes(plan_df),
        "layouts": layouts,
        "refusals": [{k_: _plain(list(v) if k_ == "layouts" else v) for k_, v in r.items()}
                     for r in ref.to_dict("records")],
    }


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def format_table(plan_df: pd.DataFrame, *, limit: int | None = None, width: int = 60) -> str:
    """A plain-text table of a :func:`plan` result (one line per layout), the refusals grouped by reason
    and the launch commands of each framework's best layout."""
    a = plan_df.attrs
    gib = memory.GiB
    head = (f"{a.get('model_id', '')} on {a.get('gpus')} x {a.get('gpu')} ({a.get('gpus_per_node')} per node), "
            f"{a.get('context_len'):,}-token sequences, KV {a.get('kv_dtype')}, at least {a.get('min_sequences')} "
            f"sequence{'s' if a.get('min_sequences') != 1 else ''}; releases: " + ", ".join(f"{FW_LABEL.get(f, f)} {r or 'current'}"
                                                      for f, r in a.get("releases", {}).items()))
    cols = ["rank", "framework", "layout", "verdict", "weights GiB/GPU", "KV GiB/GPU", "KV tokens/GPU",
            "seq/replica", "seq total", "limit", "why not"]
    rows = []
    body = plan_df if limit is None else plan_df.head(limit)
    for r in body.to_dict("records"):
        verdict = "fits" if r["fits"] else ("starts" if r["starts"] else f"refused ({r['refusal_kind']})")
        why = str(r["why_not"]).replace("\n", " ")
        rows.append([
            "" if r["rank"] is pd.NA or pd.isna(r["rank"]) else str(int(r["rank"])),
            FW_LABEL.get(r["framework"], r["framework"]), r["layout"], verdict,
            "" if not np.isfinite(r["weight_bytes_per_gpu"]) else f"{r['weight_bytes_per_gpu'] / gib:.1f}",
            "" if not np.isfinite(r["kv_budget_bytes_per_gpu"]) else f"{max(r['kv_budget_bytes_per_gpu'], 0) / gib:.1f}",
            "" if pd.isna(r["kv_tokens_per_gpu"]) else f"{int(r['kv_tokens_per_gpu']):,}",
            str(r["sequences_per_replica"]), str(r["sequences_total"]), r["limited_by"],
            why if len(why) <= width else why[: width - 1] + "…"])
    widths = [max(len(c), *(len(x[i]) for x in rows)) if rows else len(c) for i, c in enumerate(cols)]
    head += "\n" + RANKING_NOTE
    if a.get("dtype_check"):
        head += "\nNote: " + str(a["dtype_check"])
    if a.get("node_note"):
        head += "\nNote: " + str(a["node_note"])
    if a.get("model_note"):
        head += "\nNote: " + str(a["model_note"])
    lines = [head, "", "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    if limit is not None and len(plan_df) > limit:
        lines.append(f"... {len(plan_df) - limit} more layouts (--limit 0 shows all)")
    ref = refusals(plan_df)
    if len(ref):
        lines += ["", "Refused:"] + [f"  - {s}" for s in ref["summary"]]
    notes = fraction_notes(plan_df)
    if notes:
        lines += ["", "Memory fractions:"] + [f"  - {n['text']}" for n in notes]
    b = best(plan_df)
    for r in b.to_dict("records"):
        lines += ["", f"Launch, the {FW_LABEL.get(r['framework'], r['framework'])} layout with the most KV capacity "
                      f"({r['layout']}, {r['sequences_total']} sequences):"]
        for cmd in r["commands"]:
            lines += ["  " + ln for ln in cmd.splitlines()]
    return "\n".join(lines)
