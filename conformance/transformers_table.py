"""transformers 5.24 conformance table: per catalog model x TP, native TP and the continuous-batching cache.

``data/conformance/transformers-<version>.parquet`` is assembled from the two executed sources:

* the plans table (``transformers_plans``): the library itself on every catalog config -- the config
  registry, the model class, the plan resolution at every TP size (the "no `tp_plan`" refusal) and the
  ``PagedAttentionCache`` constructor at every TP size (the KV-head and layer-type checks). Cells decided
  there are ``evidence = "executed"`` (on the model's own config);
* the tiny runs (``transformers_tp``): load + ``generate_batch`` + forward under ``torchrun``. A cell that
  passes the load and cache stages takes its forward-stage outcome from the tiny run of the same plan
  shape with the same failing condition (``evidence = "inferred"``, ``inferred_from = <case>@tp<T>``):
  query heads split colwise and ``heads % tp``; key heads split colwise and ``kv % tp``; experts split and a
  rank's share of ``moe_intermediate_size`` not a multiple of 16 bytes; under continuous batching, the first
  step's cache write (MLA, or k/v split but not named for the cache, or named but gathered).

Columns: ``framework`` (``transformers-native-tp`` / ``transformers-cb-cache``), ``version``,
``model_id``, ``model_type``, ``tp``, ``outcome`` (``ran`` / ``refused_load`` / ``failed_cache`` /
``failed_forward`` / ``not_run``), ``cause`` (``model_type``, ``no_plan``, ``cb_kv``, ``cb_layer``, ``cb_config``,
``q_reshape``, ``kv_reshape``, ``grouped_mm``, ``cb_update_shape``, ``cb_update_sig``; "" when it ran),
``exc_type``, ``message`` (verbatim for executed cells; for inferred cells the library's message where it
depends only on the model, else the tiny run's message), ``file``, ``line`` (raise site, innermost frame in
``transformers``), ``evidence``, ``inferred_from``, ``reason``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from conformance import transformers_plans as TP_PLANS
from conformance import transformers_tp as TP_RUNS
from dashboard.atomic import atomic_write, atomic_write_text

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data" / "conformance"
README = DATA / "README.md"
NATIVE = "transformers-native-tp"
CB = "transformers-cb-cache"
TP_SIZES = TP_PLANS.TP_SIZES
OUTCOMES = ("ran", "refused_load", "failed_cache", "failed_forward", "not_run")
COLUMNS = ("framework", "version", "model_id", "model_type", "tp", "outcome", "cause", "exc_type", "message",
           "file", "line", "evidence", "inferred_from", "reason")


def table_path(version: str) -> Path:
    return DATA / f"transformers-{version}.parquet"


def runs_path(version: str) -> Path:
    return DATA / f"transformers-{version}-runs.parquet"


def load_table(version: str) -> pd.DataFrame:
    return pd.read_parquet(table_path(version))


# ----------------------------------------------------------------------------------------------------
# per model_type: what the rules need (dashboard/rules/transformers_executed.PLANS is checked against it)
# ----------------------------------------------------------------------------------------------------


def _cb_other(cb_by_tp: str) -> list:
    """The paged cache's refusal at TP 1 when it is neither the KV-head nor the layer-type check
    (``[exc_type, message, file, line]``; [] when none)."""
    x = json.loads(cb_by_tp or "{}").get("1") or []
    if x and not x[1].startswith(("Invalid layer type: ", "Number of key value heads")):
        return list(x)
    return []


def _bad_layer(cb_by_tp: str) -> str:
    x = json.loads(cb_by_tp or "{}").get("1") or []
    if x and x[1].startswith("Invalid layer type: "):
        return x[1][len("Invalid layer type: "):]
    return ""


def model_info(p: pd.Series, catalog_row: pd.Series | None = None) -> dict:
    """One plans-table row read as the rules read it (see ``transformers_executed.PLANS``)."""
    q = p["q_module"].rsplit(".", 1)[-1] if p["heads_sharded"] else ""
    kv = p["k_module"].rsplit(".", 1)[-1] if p["kv_sharded"] and p["k_module"].endswith("k_proj") else ""
    experts = "moe_tp_experts" in p["experts_style"] and "packed_rowwise" not in p["experts_style"]
    mla = bool(catalog_row is not None and str(catalog_row.get("is_mla")) == "True")
    return {"cls": p["model_class"], "q": q, "kv": kv, "cb_kv": bool(p["cb_kv_tp"]), "experts": bool(experts),
            "bad_layer": _bad_layer(p.get("cb_by_tp", "{}")), "no_plan": p["outcome"] == "no_plan", "mla": mla,
            "linear_first": p["linear_attn_style"] != "none", "cb_other": _cb_other(p.get("cb_by_tp", "{}"))}


def plans_by_model_type(plans: pd.DataFrame, catalog: pd.DataFrame) -> dict[str, dict]:
    """``{model_type: info}`` over the catalog models the library built; raises when two models of one
    ``model_type`` disagree (the rules key on ``model_type``). ``experts`` is true when any does;
    ``bad_layer`` joins the checkpoints' first refused layer types with ``|`` (DeepSeek-V4 Flash and Pro
    start with different layer types)."""
    cat = catalog.set_index("model_id")
    out: dict[str, dict] = {}
    for _, p in plans[plans["outcome"].isin(["plan", "no_plan"])].iterrows():
        info = model_info(p, cat.loc[p["model_id"]] if p["model_id"] in cat.index else None)
        mt = p["model_type"]
        if mt in out:
            prev = out[mt]
            layers = sorted({x for x in (prev["bad_layer"].split("|") + info["bad_layer"].split("|")) if x})
            merged = dict(prev, experts=prev["experts"] or info["experts"], bad_layer="|".join(layers))
            info = dict(info, bad_layer=merged["bad_layer"])
            if {k: v for k, v in merged.items() if k != "experts"} != {k: v for k, v in info.items() if k != "experts"}:
                raise ValueError(f"model_type {mt}: {prev} != {info} ({p['model_id']})")
            out[mt] = merged
        else:
            out[mt] = info
    return dict(sorted(out.items()))


# ----------------------------------------------------------------------------------------------------
# the executed tiny runs
# ----------------------------------------------------------------------------------------------------


def tiny_cause(o: dict, mode: str) -> tuple[str, str, str, str, int]:
    """(cause, exc_type, message, file, line) of an executed tiny cell in ``mode`` ("" cause = it ran)."""
    if mode == "cb" and o["stage"] != "load":
        if o["cb_ok"]:
            return "", "", "", "", 0
        where, code, msg, exc = o["cb_where"], o["cb_where_code"], o["cb_message"], o["cb_exc_type"]
    else:
        if o["ok"]:
            return "", "", "", "", 0
        where, code, msg, exc = o["where"], o["where_code"], o["message"], o["exc_type"]
    site = where.split(" ", 1)[0]
    f, _, ln = site.rpartition(":")
    if "has no `tp_plan`" in msg:
        cause = "no_plan"
    elif msg.startswith("Number of key value heads"):
        cause = "cb_kv"
    elif msg.startswith("Invalid layer type"):
        cause = "cb_layer"
    elif "grouped_mm" in code or "strides should be multiple of 16 bytes" in msg:
        cause = "grouped_mm"
    elif "index_copy_" in msg:
        cause = "cb_update_shape"
    elif "missing 1 required positional argument: 'kwargs'" in msg:
        cause = "cb_update_sig"
    elif any(k in code for k in ("q_proj", "q_b_proj", "query_key_value", "qkv")) or "query" in code:
        cause = "q_reshape"
    elif any(k in code for k in ("k_proj", "v_proj", "key", "value")):
        cause = "kv_reshape"
    else:
        cause = "other"
    return cause, exc, msg, f, int(ln or 0)


def runs_frame(version: str) -> pd.DataFrame:
    """Every executed tiny cell (case x TP), with its native and CB cause."""
    rows = []
    for o in TP_RUNS.load_runs(version):
        for mode in ("native", "cb"):
            cause, exc, msg, f, ln = tiny_cause(o, mode)
            rows.append({**{k: v for k, v in o.items()}, "mode": mode, "cause": cause, "cause_exc_type": exc,
                         "cause_message": msg, "cause_file": f, "cause_line": ln})
    df = pd.DataFrame(rows)
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = df[c].map(lambda v: "" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else v))
    return df.sort_values(["case_id", "tp", "mode"]).reset_index(drop=True)


def tiny_info(case_model_type: str, plans_info: dict[str, dict]) -> dict:
    return plans_info[case_model_type]


#: Which tiny shape a catalog model's forward stage is inferred from (by plan shape).
def representative(info: dict, plan_row: pd.Series) -> str:
    attn = plan_row["attn_style"]
    if info["no_plan"]:
        return "gpt2"
    if attn.startswith("mla"):
        return "glm4_moe_lite"
    if attn.startswith("fused_colwise_gather"):
        return "phi3"
    if attn.startswith("fused"):
        return plan_row["model_type"] if plan_row["model_type"] in ("gpt_neox", "codegen") else "gpt_neox"
    if attn == "colwise_gather_output":
        return "olmo2"
    if attn == "colwise":
        if plan_row["linear_attn_style"] != "none":
            return "qwen3_next"
        return "qwen3_moe" if info["experts"] else "llama"
    return "deepseek_v3" if (info["experts"] or plan_row["mlp_style"] != "none") else "gpt_oss"


# ----------------------------------------------------------------------------------------------------
# the forward / first-step stage, as the tiny runs showed it
# ----------------------------------------------------------------------------------------------------


def forward_cause(info: dict, h: int, kv: int, moe_i: int, nbytes: int, is_moe: bool, tp: int, mode: str,
                  model_type: str) -> str:
    """The first forward-stage failure (after load and cache construction passed), "" when it runs.

    The order is the attention's (query, key, the cache write) then the experts; each condition is the
    one the tiny runs exercise (``tests/test_conformance_transformers.py`` checks this function against
    every executed tiny cell)."""
    moe = bool(info["experts"] and is_moe and moe_i and nbytes and tp > 1
               and (moe_i % tp or ((moe_i // tp) * nbytes) % 16))
    if info["linear_first"] and moe:
        return "grouped_mm"  # layer 0 is linear attention (gathered): its experts run before any attention
    if info["q"] and h and h % tp:
        return "q_reshape"
    if model_type == "codegen" and 4 % tp:
        return "q_reshape"  # qkv_proj's output is laid out in mp_num = 4 blocks: the split must follow them
    if info["kv"] and kv and tp > 1 and kv % tp and (mode == "native" or not info["cb_kv"]):
        return "kv_reshape"
    if mode == "cb":
        if model_type == "gpt_neox":
            return "cb_update_sig"
        if info["mla"] or (tp > 1 and bool(info["kv"] or info["q"] in ("query_key_value", "qkv_proj"))
                           != info["cb_kv"]):
            return "cb_update_shape"
    return "grouped_mm" if moe else ""


def _catalog_numbers(row: pd.Series) -> tuple[int, int, int, int, bool]:
    def i(c):
        v = row.get(c)
        return int(v) if v is not None and not pd.isna(v) else 0

    def s(c):
        v = row.get(c)
        return "" if v is None or pd.isna(v) else str(v)

    dt = s("torch_dtype").lower()
    nbytes = 0 if s("quant_method") else (4 if dt == "float32" else 2)
    is_moe = s("is_moe") == "True" or i("num_experts") > 0
    return i("num_attention_heads"), i("num_key_value_heads"), i("moe_intermediate_size"), nbytes, is_moe


def build(version: str, catalog: pd.DataFrame | None = None) -> pd.DataFrame:
    """The catalog x TP x {native, CB} table (see the module docstring)."""
    from dashboard.catalog import load_catalog

    catalog = load_catalog() if catalog is None else catalog
    plans = TP_PLANS.load_table(version)
    info_by_type = plans_by_model_type(plans, catalog)
    runs = runs_frame(version)
    cat = catalog.set_index("model_id")
    rows = []
    for _, p in plans.iterrows():
        mid = p["model_id"]
        crow = cat.loc[mid]
        for fw, mode in ((NATIVE, "native"), (CB, "cb")):
            for tp in TP_SIZES:
                r = {"framework": fw, "version": version, "model_id": mid, "model_type": p["model_type"], "tp": tp,
                     "outcome": "ran", "cause": "", "exc_type": "", "message": "", "file": "", "line": 0,
                     "evidence": "executed", "inferred_from": "", "reason": ""}
                rows.append(r)
                if p["outcome"] == "not_run":
                    r.update(outcome="not_run", reason=p["reason"], exc_type=p["exc_type"], message=p["message"])
                    continue
                if p["outcome"] == "refused_config":
                    r.update(outcome="refused_load", cause="model_type", exc_type=p["exc_type"],
                             message=p["message"], file=p["file"], line=int(p["line"]))
                    continue
                if p["outcome"] not in ("plan", "no_plan"):
                    r.update(outcome="not_run", reason=f"harness: {p['outcome']} {p['reason']}")
                    continue
                load = json.loads(p["load_by_tp"] or "{}").get(str(tp), "")
                if load:
                    r.update(outcome="refused_load", cause="no_plan", exc_type="ValueError", message=load,
                             file=p["file"] or "transformers/distributed/mixin.py", line=int(p["line"]) or 260)
                    continue
                if mode == "cb":
                    by_tp = json.loads(p["cb_by_tp"] or "{}")
                    c = by_tp.get(str(tp)) or []
                    first = by_tp.get("1") or []
                    if first and first[1].startswith("Invalid layer type"):
                        # generate_batch groups the layers by type before the cache checks its KV heads (the tiny
                        # Qwen3-Next runs at TP 3 report the layer type): the TP 1 refusal holds at every TP
                        c = first
                    if c:
                        cause = "cb_kv" if c[1].startswith("Number of key value heads") else (
                            "cb_layer" if c[1].startswith("Invalid layer type") else "cb_config")
                        r.update(outcome="failed_cache", cause=cause, exc_type=c[0], message=c[1], file=c[2],
                                 line=int(c[3]))
                        continue
                info = info_by_type[p["model_type"]]
                h, kv, moe_i, nbytes, is_moe = _catalog_numbers(crow)
                cause = forward_cause(info, h, kv, moe_i, nbytes, is_moe, tp, mode, p["model_type"])
                rep = representative(info, p)
                ev = _evidence(runs, rep, cause, tp, mode)
                r.update(evidence="inferred", inferred_from=ev.get("ref", ""))
                if not ev:
                    r.update(reason=f"no executed tiny run of {rep} shows {cause or 'a clean run'}")
                if cause:
                    r.update(outcome="failed_forward", cause=cause, exc_type=ev.get("exc", ""),
                             message=ev.get("msg", ""), file=ev.get("file", ""), line=int(ev.get("line", 0)))
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df["tp"] = df["tp"].astype("int64")
    df["line"] = df["line"].astype("int64")
    return df.sort_values(["framework", "model_id", "tp"]).reset_index(drop=True)


def _evidence(runs: pd.DataFrame, rep: str, cause: str, tp: int, mode: str) -> dict:
    """The tiny run of shape ``rep`` that shows ``cause`` ("" = ran) in ``mode``: the same TP size when
    one does, else the smallest TP > 1 (TP 1 for a clean run at TP 1)."""
    m = runs[(runs["model_type"] == rep) & (runs["mode"] == mode) & (runs["cause"] == cause)]
    if cause == "" and tp > 1:
        m = m[m["tp"] > 1]
    if m.empty:  # the shape's tiny runs never reach this step (or never run clean): a tiny run that does
        m = runs[(runs["mode"] == mode) & (runs["cause"] == cause)]
        if cause == "" and tp > 1:
            m = m[m["tp"] > 1]
    if m.empty:
        return {}
    same = m[m["tp"] == tp]
    x = (same if not same.empty else m.sort_values("tp")).iloc[0]
    return {"ref": f"{x['case_id']}@tp{int(x['tp'])}", "exc": x["cause_exc_type"], "msg": x["cause_message"],
            "file": x["cause_file"], "line": int(x["cause_line"])}


def assemble(version: str) -> tuple[Path, Path]:
    runs = runs_frame(version)
    atomic_write(runs_path(version), lambda fh: runs.to_parquet(fh, index=False))
    df = build(version)
    atomic_write(table_path(version), lambda fh: df.to_parquet(fh, index=False))
    return table_path(version), runs_path(version)


# ----------------------------------------------------------------------------------------------------
# the rules engine against the table
# ----------------------------------------------------------------------------------------------------

#: rule id prefix -> table cause
RULE_CAUSE = {
    "model_type": "model_type", "no_plan": "no_plan", "kv_cache": "cb_kv", "layer_type": "cb_layer",
    "config": "cb_config",
    "attention_heads": "q_reshape", "kv_heads": "kv_reshape", "moe_intermediate": "grouped_mm",
    "cache_update.shape": "cb_update_shape", "cache_update.signature": "cb_update_sig",
}


def rule_cause(rule_id: str) -> str:
    tail = rule_id.split(".", 1)[1] if "." in rule_id else rule_id
    for k, v in RULE_CAUSE.items():
        if tail == k or tail.startswith(k + "."):
            return v
    return "?"


def compare(table: pd.DataFrame, catalog: pd.DataFrame, version: str) -> pd.DataFrame:
    """One row per judged cell (not ``not_run``): the table, the engine, and whether the verdict, the
    cause (the first failing rule's) and -- where the library's message depends only on the model -- the
    message agree."""
    from dashboard import rules

    judged = table[table["outcome"] != "not_run"]
    cat = catalog.set_index("model_id", drop=False)
    out = []
    for fw, grp in judged.groupby("framework"):
        models = [m for m in grp["model_id"].unique() if m in cat.index]
        g = rules.grid(cat.loc[models], tp_sizes=sorted(grp["tp"].unique()), frameworks=[fw], version=version)
        g = g.set_index(["model_id", "tp"])
        by_id = {r.id: r for r in rules.rules_at(fw, version)}
        for idx, row in grp.iterrows():
            p = g.loc[(row["model_id"], row["tp"])]
            rid = str(p["rule_id"])
            rule = by_id.get(rid)
            out.append({"index": idx, "engine_valid": bool(p["valid"]), "engine_rule": rid,
                        "engine_cause": rule_cause(rid) if rid else "", "engine_message": str(p["message"]),
                        "engine_location": getattr(rule, "location", "") if rule else "",
                        "engine_ours": bool(getattr(rule, "ours", False)) if rule else False})
    pred = pd.DataFrame(out).set_index("index")
    t = judged.loc[pred.index].copy()
    for c in pred.columns:
        t[c] = pred[c]
    t["table_valid"] = t["outcome"] == "ran"
    t["verdict_ok"] = t["table_valid"] == t["engine_valid"]
    refused = ~t["table_valid"]
    t["cause_ok"] = ~refused | (t["cause"] == t["engine_cause"])
    site = t["file"] + ":" + t["line"].astype(str)
    # the engine's first message: verbatim where the library's own text depends on the model only (not on
    # the batch: reshape and cache-write errors name tensor shapes, and the engine's text is ours there)
    first_msg = t["engine_message"].str.split("\n").str[0]
    verbatim = refused & ~t["engine_ours"]
    t["message_ok"] = ~verbatim | (t["message"] == t["engine_message"]) | (t["message"] == first_msg)
    t["location_ok"] = ~refused | (t["engine_location"] == "") | (site == t["engine_location"])
    return t


def summary(cmp: pd.DataFrame) -> dict:
    refused = cmp[~cmp["table_valid"]]
    both = refused[refused["verdict_ok"]]
    return {"cells": int(len(cmp)), "verdict_agree": int(cmp["verdict_ok"].sum()), "refused": int(len(refused)),
            "cause_agree": int(both["cause_ok"].sum()),
            "first_error_agree": int((both["cause_ok"] & both["message_ok"] & both["location_ok"]).sum())}


# ----------------------------------------------------------------------------------------------------
# CLI (python -m conformance transformers ...)
# ----------------------------------------------------------------------------------------------------


def report(version: str) -> str:
    from dashboard.catalog import load_catalog

    t = load_table(version)
    runs = pd.read_parquet(runs_path(version))
    plans = TP_PLANS.load_table(version)
    cmp = compare(t, load_catalog(), version)
    s = summary(cmp)
    lines = [f"plans: {len(plans)} models: " + ", ".join(f"{k} {v}" for k, v in plans['outcome'].value_counts().items())]
    lines.append(f"tiny runs: {runs['case_id'].nunique()} models x TP {sorted(runs['tp'].unique())} = "
                 f"{len(runs) // 2} executed cells")
    for fw, g in t.groupby("framework"):
        lines.append(f"{fw}: {len(g)} cells: " + ", ".join(f"{k} {v}" for k, v in g['outcome'].value_counts().items())
                     + "; evidence " + ", ".join(f"{k} {v}" for k, v in g['evidence'].value_counts().items()))
    lines.append(f"rules engine vs table: verdict {s['verdict_agree']}/{s['cells']}; cause {s['cause_agree']}/"
                 f"{s['refused']}; first error (cause, verbatim message where the library's text depends on the "
                 f"model only, raise site) {s['first_error_agree']}/{s['refused']}")
    return "\n".join(lines)


def cli(args) -> int:
    if args.action == "plans":
        version, _ = TP_PLANS.run(args.configs, models=args.models)
        print(TP_PLANS.assemble(version))
        return 0
    if args.action == "verify":
        same, n, _ = TP_PLANS.verify(args.configs, sample=args.sample, seed=args.seed)
        return 0 if same == n else 1
    if args.action == "runs":
        version, wd = TP_RUNS.run(tuple(args.tp) if args.tp else TP_RUNS.RUN_TP)
        print(wd)
        return 0
    import transformers

    version = transformers.__version__
    if args.action == "assemble":
        print(*assemble(version), sep="\n")
        return 0
    if args.action == "report":
        print(report(version))
        return 0
    return 2


__all__ = ["build", "assemble", "compare", "summary", "plans_by_model_type", "forward_cause", "runs_frame",
           "atomic_write_text"]
