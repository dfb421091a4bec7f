"""The text form of a check document (what ``tp-planner check`` prints without ``--json``)."""

from __future__ import annotations

import shlex
from typing import Any

from dashboard.check.common import GiB


def gpus(n: int) -> str:
    """``1 GPU`` / ``6 GPUs``."""
    return f"{int(n)} GPU{'s' if int(n) != 1 else ''}"


def _gib(b: float) -> str:
    return f"{b / GiB:.1f} GiB"


def render_text(doc: dict[str, Any]) -> str:
    lay = doc["layout"]
    fwl = doc["framework_label"]
    rel = f" {doc['release']}" if doc["release"] else ""
    parts = [f"tp={lay['tp']}", f"pp={lay['pp']}", f"dp={lay['dp']}"]
    if lay["ep"] > 1:
        parts.append(f"ep={lay['ep']}")
    if lay["expert_parallel"]:
        parts.append("expert-parallel")
    if lay["dp_attention"]:
        parts.append("dp-attention")
    if lay["vision_dp"]:
        parts.append("vision-dp")
    head = "ACCEPTED" if doc["verdict"] == "accepted" else "REFUSED"
    m = doc["model"]
    where = m.get("config") or m["source"]
    flags_refused = bool((doc.get("launch_flags") or {}).get("refused"))
    shape = (f"{' '.join(parts)} ({gpus(lay['gpus'])})" if not flags_refused else
             "the command does not start (argument parsing; no layout judged)")
    # a local config with no Hub id is named by its file or folder: say so, so the name is not read as an id
    name = m["id"] if "/" in str(m["id"]) or m["source"] in ("catalog", "hub") else \
        f"{m['id']} (config on stdin, no Hub id)" if m["source"] == "stdin" else f"{m['id']} (local config, no Hub id)"
    lines = [f"{head}: {name} on {fwl}{rel}, {shape}",
             f"  config: {where}" + (f"; quantization read from {', '.join(m['sidecars'])}" if m["sidecars"] else "")]
    lines.append(f"  evidence: {doc['evidence_text']}")
    fails = doc["failures"]
    if fails:
        lines.append("")
        lines.append(f"{fwl} stops at the first error" + (f" ({len(fails)} failing checks):" if len(fails) > 1 else ":"))
        for i, f in enumerate(fails, 1):
            msg = f["message"]
            if f["exc_type"] and not msg.startswith(f["exc_type"]) and not f["ours"]:
                msg = f"{f['exc_type']}: {msg}"
            lines.append(f"  {i}. {msg}" + ("  [our wording]" if f["ours"] else ""))
            at = f["location"] and f["location"] not in msg and f"at {f['location']}"
            src = " ".join(x for x in (at, f["source_url"]) if x)
            if src:
                lines.append(f"     {src}")
            if f["kind"] == "flags":
                lines.append(f"     {f['condition']}")
                near = (doc.get("launch_flags") or {}).get("did_you_mean") or []
                if near:
                    lines.append(f"     did you mean {' or '.join(near)}? (our suggestion: the nearest spellings in the flag spec)")
                continue
            if f["ours"] or "no message" in f["message"] or f["kind"] == "memory":
                if f["condition"]:
                    lines.append(f"     why: {f['condition']}")
    mem = doc["memory"]
    if mem:
        lines.append("")
        lines.append(f"Memory on {mem['gpu']} (KV cache {mem['kv_cache_dtype']}, max-model-len {mem['max_model_len']}):")
        lines.append(f"  weights {_gib(mem['weight_bytes_per_gpu'])}/GPU, KV budget {_gib(max(mem['kv_budget_bytes_per_gpu'], 0))}/GPU, "
                     f"{mem['kv_bytes_per_token_per_gpu']:,} B/token/GPU")
        lines.append(f"  KV tokens per GPU: {mem['kv_tokens_per_gpu']:,}; sequences of {mem['max_model_len']:,} tokens: "
                     f"{mem['sequences_at_max_model_len']:,}")
    if flags_refused:  # the command does not start: no layout was judged, so none is offered nearby
        lines.append("")
        lines.append(f"Layout not judged: {fwl}{rel} stops at argument parsing.")
    elif doc["alternatives"]:
        lines.append("")
        lines.append("Nearest valid layouts:" if mem else
                     "Nearest valid layouts (rules only: memory not checked; add --gpu to keep only layouts that fit):")
        label = {"same_gpus": "same {g}", "smaller_tp": "smaller TP ({g})",
                 "larger_tp": "larger TP ({g})", "shorter_context": "shorter context",
                 "model_context": "the model's context"}
        for a in doc["alternatives"]:
            inst = a.get("instances") or []
            if len(inst) > 1:  # no data-parallel flag: one server process per replica, each on its GPUs
                lines.append(f"  {label[a['why']].format(g=gpus(a['gpus']))}: run {len(inst)} instances of "
                             f"{gpus(len(inst[0]['gpus']))}, one command each:")
                lines += [f"      {i['command']}" for i in inst]
            else:
                lines.append(f"  {label[a['why']].format(g=gpus(a['gpus']))}: {a['command']}")
    elif doc["verdict"] == "refused" and (doc.get("first_error") or {}).get("kind") == "platform":
        lines.append("")
        gpu = (doc.get("memory") or {}).get("gpu") or "this GPU"
        lines.append(f"No {fwl} layout runs on {gpu}. To rank the layouts of the frameworks that do:")
        mid = (doc.get("model") or {}).get("id") or "<MODEL>"
        lines.append(f"  tp-planner plan {shlex.quote(str(mid))} --gpus {lay['gpus']} --gpu {shlex.quote(str(gpu))}")
    elif doc["verdict"] == "refused":
        lines.append("")
        lines.append("No valid layout found nearby.")
    if doc["suggestions"] and doc["verdict"] == "refused":
        lines.append("")
        lines.append("The rules engine suggests:")
        lines += [f"  - {s}" for s in doc["suggestions"]]
    if doc["warnings"] or doc["notes"]:
        lines.append("")
        for w in doc["warnings"]:
            lines.append(f"warning: {w}")
        for n in doc["notes"]:
            lines.append(f"note: {n}")
    return "\n".join(lines)
