"""Reading a plan: refusals grouped by reason, the best layouts, the ``--json`` document and the text table."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dashboard import memory
from dashboard.planner.common import COLUMNS, FW_LABEL, PLAN_FRAMEWORKS, SCHEMA_VERSION


RANKING_NOTE = ("Ranked by concurrent sequences (KV-cache capacity), then fewest GPUs per replica, then fewest "
                "pipeline stages. Latency and throughput are not modelled: a deep pipeline or a small TP group "
                "holds more sequences but serves each one more slowly.")


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
    bad = plan_df.loc[~plan_df["starts"].to_numpy(dtype=bool)]
    if bad.empty:  # every layout starts (a small model): nothing to group
        return empty
    # plain Python over the refused rows (a few hundred at most): a pandas groupby costs more here
    groups: dict[tuple, list[tuple]] = {}  # (framework, kind, reason) -> rows, in order of first appearance
    cols = ("framework", "refusal_kind", "refusal", "tp", "pp", "dp", "attn_dp", "ep", "layout")
    for fw, kind, reason, *sizes, label in zip(*(bad[c].tolist() for c in cols)):
        groups.setdefault((fw, kind, reason), []).append((*(int(x) for x in sizes), label))
    order = {fw: i for i, fw in enumerate(PLAN_FRAMEWORKS)}
    rows = []
    for (fw, kind, reason), items in groups.items():
        items.sort(key=lambda r: r[:5])
        labels = tuple(r[5] for r in items)
        shown = ", ".join(labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "")
        rows.append(((order.get(fw, len(order)), items[0][0]),
                     {"framework": fw, "refusal_kind": kind, "reason": reason, "layouts": labels,
                      "count": len(labels), "summary": f"{shown} refused by {FW_LABEL.get(fw, fw)}: {reason}"}))
    rows.sort(key=lambda r: r[0])  # by framework, then the smallest TP (stable: ties keep first appearance)
    return pd.DataFrame([r for _, r in rows], columns=list(empty.columns))


def best(plan_df: pd.DataFrame) -> pd.DataFrame:
    """The best fitting layout per framework of a :func:`plan` result (one row each; frameworks with no
    fitting layout are absent)."""
    ok = plan_df[plan_df["fits"]]
    return ok.groupby("framework", sort=False, observed=True).head(1).reset_index(drop=True)


def plan_to_dict(plan_df: pd.DataFrame) -> dict[str, Any]:
    """A :func:`plan` result as plain JSON-able data (the ``--json`` output of ``tp-planner plan``).

    Keys: ``schema_version`` (:data:`SCHEMA_VERSION`), ``model_id``, ``gpus``, ``gpu``, ``gpus_per_node``,
    ``context_len``, ``kv_dtype``, ``weight_dtype``, ``min_sequences``, ``cross_node_tp``, ``releases``
    (framework -> release), ``dtype_check`` ('' or the note that the GPU's compute capability is unknown
    and no dtype was checked), ``best`` (framework -> the rank-1 layout label of that framework or null),
    ``layouts`` (one object per row with the fields of :data:`COLUMNS`; ``failures`` as a list of
    ``{"rule_id", "message"}``, ``commands`` as a list of strings), ``refusals`` (:func:`refusals` rows:
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
        "best": {fw: (b.loc[b["framework"] == fw, "layout"].iloc[0] if (b["framework"] == fw).any() else None)
                 for fw in dict(a.get("releases", {}))},
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
            f"sequence(s); releases: " + ", ".join(f"{FW_LABEL.get(f, f)} {r or 'current'}"
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
    lines = [head, "", "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    if limit is not None and len(plan_df) > limit:
        lines.append(f"... {len(plan_df) - limit} more layouts (--limit 0 shows all)")
    ref = refusals(plan_df)
    if len(ref):
        lines += ["", "Refused:"] + [f"  - {s}" for s in ref["summary"]]
    b = best(plan_df)
    for r in b.to_dict("records"):
        lines += ["", f"Launch, best {FW_LABEL.get(r['framework'], r['framework'])} layout ({r['layout']}, "
                      f"{r['sequences_total']} sequences):"]
        for cmd in r["commands"]:
            lines += ["  " + ln for ln in cmd.splitlines()]
    return "\n".join(lines)
