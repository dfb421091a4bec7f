"""Compare the rules engine with a conformance table: verdict, first error's message and raise site.

Pure pandas + :mod:`dashboard.rules` (no framework install): the CI tests use it on the committed
tables, and the closing numbers ("agreement before and after") come from :func:`summary`.

A table cell's *verdict* is ``built`` (valid) or ``refused_engine``/``refused_build`` (invalid);
``harness_error`` and ``not_run`` cells are not judged. What the user sees of a refusal is
:func:`shown_message`: the exception's message, or ``"<Type> (no message) at <file>:<line>"`` for a bare
``assert``; its raise site is ``file:line`` (innermost frame inside the framework's package).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard import frameworks, rules

JUDGED = ("built", "refused_engine", "refused_build")
MESSAGE_LIMIT = 4000  # conformance/vllm_worker.py keeps this many characters of a message


def shown_message(exc_type: str, message: str, file: str, line: int) -> str:
    """The first error as the user reads it (see the module docstring)."""
    if not exc_type:
        return ""
    if message:
        return message
    return f"{exc_type} (no message) at {file}:{line}"


def table_platform(table: pd.DataFrame) -> str | None:
    """The one GPU platform a table ran as (its ``platform`` column, a :data:`dashboard.gpus.PLATFORMS` id), None
    when it has none, several, or ran on the CPU (``cpu``, Megatron-Core's ``cpu-meta``)."""
    from dashboard import gpus

    if "platform" not in table.columns:
        return None
    p = table["platform"].dropna().astype(str).unique()
    return str(p[0]) if len(p) == 1 and p[0] in gpus.PLATFORMS else None


def predictions(table: pd.DataFrame, catalog: pd.DataFrame, framework: str, version: str,
                platform: str | None = None) -> pd.DataFrame:
    """The rules engine's verdict for every judged cell of ``table`` (same index): ``valid``,
    ``rule_id``, ``message`` (first failing rule) and ``location`` (its raise site). The cells are judged on
    ``platform`` (default: the table's own, :func:`table_platform`)."""
    platform = platform or table_platform(table)
    cells = table[table["outcome"].isin(JUDGED)]
    cat = catalog.set_index("model_id", drop=False)
    out = []
    by_id = {r.id: r for r in rules.rules_at(framework, version)}  # as they read in that release
    adapter = frameworks.get(framework).conformance()
    for (dp, ep, vdp, pp), grp in cells.groupby(["dp", "ep", "vision_dp", "pp"], sort=False):
        models = [m for m in grp["model_id"].unique() if m in cat.index]
        if not models:
            continue
        tps = sorted(grp["tp"].unique())
        # how the table's cell group maps to layouts is the framework's (its conformance adapter)
        parts = [rules.grid(cat.loc[models], tp_sizes=t, frameworks=[framework], version=version,
                            platform=platform, **kw)
                 for t, kw in adapter.layouts(int(dp), bool(ep), bool(vdp), int(pp), tps)]
        g = parts[0] if len(parts) == 1 else pd.concat(parts)
        g = g.set_index(["model_id", "tp"])
        for idx, row in grp.iterrows():
            key = (row["model_id"], row["tp"])
            if row["model_id"] not in cat.index or key not in g.index:
                continue
            p = g.loc[key]
            rid = str(p["rule_id"])
            rule = by_id.get(rid)
            out.append({"index": idx, "valid": bool(p["valid"]), "rule_id": rid, "message": str(p["message"]),
                        "location": getattr(rule, "location", "") if rule else ""})
    return pd.DataFrame(out).set_index("index") if out else pd.DataFrame(
        columns=["valid", "rule_id", "message", "location"])


def compare(table: pd.DataFrame, catalog: pd.DataFrame, framework: str, version: str,
            platform: str | None = None) -> pd.DataFrame:
    """One row per judged table cell present in the catalog: what the framework did, what the engine
    says (on ``platform``, default the table's), and whether verdict / message / location agree."""
    pred = predictions(table, catalog, framework, version, platform)
    t = table.loc[pred.index].copy()
    t["table_valid"] = t["outcome"] == "built"
    t["table_message"] = [shown_message(a, b, c, d) for a, b, c, d in
                          zip(t["exc_type"], t["message"], t["file"], t["line"])]
    t["table_location"] = np.where(t["file"] != "", t["file"] + ":" + t["line"].astype(str), "")
    t["engine_valid"] = pred["valid"]
    t["engine_rule"] = pred["rule_id"]
    t["engine_message"] = pred["message"]
    t["engine_location"] = pred["location"]
    t["verdict_ok"] = t["table_valid"] == t["engine_valid"]
    refused = ~t["table_valid"]
    # the harness keeps the first MESSAGE_LIMIT characters of a message (the registry's "not supported"
    # message lists every architecture): compare that much
    eng = t["engine_message"].where(t["table_message"].str.len() < MESSAGE_LIMIT,
                                    t["engine_message"].str[:MESSAGE_LIMIT])
    t["message_ok"] = ~refused | (t["table_message"] == eng)
    t["location_ok"] = ~refused | (t["table_location"] == t["engine_location"])
    return t


def summary(cmp: pd.DataFrame) -> dict:
    refused = cmp[~cmp["table_valid"]]
    both = refused[refused["verdict_ok"]]
    return {
        "cells": int(len(cmp)),
        "verdict_agree": int(cmp["verdict_ok"].sum()),
        "refused": int(len(refused)),
        "first_error_agree": int((both["message_ok"] & both["location_ok"]).sum()),
        "message_agree": int(both["message_ok"].sum()),
        "location_agree": int(both["location_ok"].sum()),
    }
