"""The check itself: the rules' verdict, the context and quantization refusals, the memory check and
the corrected commands, as the ``--json`` document (:func:`run_check`)."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from dashboard import context, frameworks, schema
from dashboard.launch import check_flags, command_model, render_commands
from dashboard.check.common import CheckInputError, SCHEMA_VERSION, printable
from dashboard.check.request import (
    Issue, Request, capacity, gpu_count, hit_issue, kv_dtype, memory_issue, quant_family)
from dashboard.check.source import Source
from dashboard.check.suggestions import alternatives, fits


def context_issue(rec: dict[str, Any], req: Request) -> Issue | None:
    """The engine's refusal of ``--max-model-len`` / ``--context-length`` above the length it derives from
    the config (:mod:`dashboard.context`: vLLM 0.33.0, SGLang 0.5.23; other frameworks not modelled);
    None when no length is given or it is accepted."""
    if not req.max_model_len or not frameworks.get(req.framework).context_raise_site:
        return None
    msg = context.context_message(req.framework, int(req.max_model_len), rec)
    if not msg:
        return None
    site, rel, url = context.RAISE_SITES[req.framework]
    flag = frameworks.get(req.framework).context_flag
    return Issue(f"context.{req.framework}.max_model_len", msg, "ValueError", site, url, "source", False, "context",
                 f"{flag} {int(req.max_model_len)} > the longest context the engine derives from config.json "
                 f"({context.limit(req.framework, rec)} tokens; {context.__name__} port of {rel})")


def _message_origin(spec: dict[str, Any] | None) -> str:
    """Whose words a refusal from a spec read from source is in (the parser library's, as ported)."""
    lib = (spec or {}).get("parser_class") or "argparse"
    ver = ((spec or {}).get("click") or {}).get("version") if lib == "click" else None
    return (f"{lib} {ver}'s own text for this command (its parser ported in dashboard/flagspec.py, checked "
            f"against {lib} run on the command rebuilt from the spec)" if ver else f"{lib}'s text (ported)")


def gpu_platform(req: Request) -> str | None:
    """The platform id of ``req.gpu`` (:func:`dashboard.gpus.judged_on`): None without a GPU, ``"unknown"`` for a
    card given by its memory only (judged as the default platform, never executed evidence)."""
    from dashboard import gpus

    return gpus.judged_on(req.gpu)["platform"] if req.gpu else None


def gpu_device_name(req: Request) -> str | None:
    """The name ``req.gpu`` reports to the engine ("NVIDIA A10"), printed by the messages that name the device;
    None without a GPU or for a card given by its memory only."""
    from dashboard import gpus

    return gpus.judged_on(req.gpu)["device_name"] if req.gpu else None


def platform_issue(req: Request) -> Issue | None:
    """The refusal of a framework on a GPU family it does not run on (``Framework.platform_refusal``: TensorRT-LLM
    on AMD, an engine below its minimum compute capability); None when it runs there or the GPU is given by its
    memory only (``other:<GiB>``). The message is ours."""
    from dashboard import gpus

    try:
        gpu = gpus.gpu_info(req.gpu)
    except ValueError as e:
        raise CheckInputError(printable(e, 300)) from None
    fwo = frameworks.get(req.framework)
    msg = fwo.platform_refusal(gpu)
    if not msg:
        return None
    return Issue(f"platform.{req.framework}", msg, "", "", fwo.platform_source_url, "source", True, "platform",
                 f"{gpu.gpu} ({gpu.compute_capability or 'unknown'}) is not a GPU family {fwo.label} runs on")


def flag_check(req: Request, release: str | None) -> dict[str, Any] | None:
    """The launch command's flags as ``release``'s own parser reads them (its rebuilt spec,
    :func:`dashboard.launch.check_flags`): the engine's error line, "did you mean", the flags accepted but
    not modelled; None without a launch command."""
    if req.launch is None:
        return None
    fwo = frameworks.get(req.framework)
    if release is None and fwo.flag_spec_releases():
        # a framework whose rules name no release (read from source: TensorRT-LLM): its newest spec
        release = fwo.flag_spec_releases()[-1]
    rep = check_flags(req.launch, release)
    unmodeled = sorted(set(printable(u, 60) for u in req.launch.unmodeled))
    who = f"{fwo.label} {release}" if release else fwo.label
    if rep.evidence == "not checked":
        have = ", ".join(rep.spec_releases) or "none"
        note = (f"flags not checked: no flag spec for {who} (specs written for: {have}); values were read "
                f"by the planner, not the engine's parser")
        if unmodeled:
            note += "; not modelled: " + " ".join(unmodeled)
    else:
        how = "" if rep.evidence == "executed" else " (its parser read from source, not executed)"
        note = f"accepted by {who}{how}, not modelled: " + " ".join(unmodeled) if unmodeled and not rep.refused else ""
    condition, src = "", f"data/flags/{fwo.flag_spec_name or fwo.name}-{release}.json"
    if rep.refused:
        if rep.evidence == "executed":
            condition = (f"the engine's own argparse message: {who}'s argument parser ({rep.evidence}: {src}) "
                         "refuses the command before any model is loaded")
        else:
            condition = (f"{who}'s command-line parser, read from source, not executed ({src}), refuses the "
                         "command before any model is loaded; the message is "
                         + _message_origin(fwo.flag_spec(release)))
        if rep.history:
            condition += "; " + "; ".join(printable(h, 200) for h in rep.history)
    return {"release": release, "evidence": rep.evidence, "refused": rep.refused, "spec_file": src,
            "error": printable(rep.error, 1000), "did_you_mean": [printable(d, 80) for d in rep.suggestions],
            "history": [printable(h, 200) for h in rep.history], "condition": condition,
            "accepted_not_modelled": unmodeled if not rep.refused and rep.evidence != "not checked" else [],
            "spec_releases": rep.spec_releases, "note": note}


def _commands_for(req: Request, model: str, lay: dict[str, Any], max_model_len: int | None = None) -> dict[str, Any]:
    """``command`` (every instance's command, one per line) and ``instances`` (``[{"instance", "gpus",
    "command"}]``: one server process each, see :func:`dashboard.launch.render_commands`) of one layout."""
    if req.launch is not None:
        extra = {"max_model_len": max_model_len} if max_model_len else {}
        inst = req.launch.commands_with(version=req.version, **lay, **extra)
    else:
        inst = render_commands(req.framework, model, lay, version=req.version, max_model_len=max_model_len)
    inst = [dict(i, command=printable(i["command"], 4000)) for i in inst]
    return {"command": "\n".join(i["command"] for i in inst), "instances": inst}


#: Record fields the memory model needs, and the MLA fields it needs for an MLA model.
_MEMORY_FIELDS = ("hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads")
_MLA_FIELDS = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


def memory_gaps(typed, cap: dict[str, Any]) -> str:
    """'' when every figure of the memory check (``cap``, :func:`dashboard.memory.capacity`) is a finite
    number; else one line naming the unknown figures and the config fields behind them (a field the
    normalizer dropped: a negative or implausibly large ``vocab_size``, an MLA config without its
    ``qk_rope_head_dim``), with the normalizer's note on each."""
    import math

    import pandas as pd

    figures = {"weight_bytes_per_gpu": "weight bytes per GPU", "kv_bytes_per_token_per_rank": "KV bytes per token",
               "kv_budget_bytes_per_gpu": "KV budget", "memory_bytes": "GPU memory", "context_len": "context length"}
    unknown = []
    for key, label in figures.items():
        try:
            ok = math.isfinite(float(cap.get(key)))
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            unknown.append(label)
    if not unknown:
        return ""
    row = typed.iloc[0]
    mla = row.get("is_mla")
    need = list(_MEMORY_FIELDS) + (list(_MLA_FIELDS) if mla is not None and not pd.isna(mla) and bool(mla) else [])
    missing = [f for f in need if f in row.index and pd.isna(row[f])]
    notes = [n.strip() for n in str(row.get("parse_notes") or "").split(";")
             if any(n.strip().startswith(f) for f in missing)]
    why = ", ".join(unknown) + " unknown"
    if missing:
        why += "; the config lacks a usable " + ", ".join(missing)
    if notes:
        why += " (" + "; ".join(notes[:3]) + ")"
    return why


def run_check(rec: dict[str, Any], src: Source, req: Request) -> dict[str, Any]:
    """The result document (the ``--json`` output, :data:`SCHEMA_VERSION`)."""
    from dashboard import rules

    try:
        fwo = frameworks.get(req.framework)
    except ValueError:
        raise CheckInputError(f"unknown framework {printable(req.framework, 40)!r}; expected one of "
                              + ", ".join(schema.FRAMEWORKS)) from None
    notes: list[str] = [printable(src.note, 300)] if src.note else []
    if req.launch is not None:
        notes += [printable(n, 300) for n in req.launch.notes]
    rec = dict(rec)
    if req.quantization:
        have = rec.get("quant_method")
        if have and quant_family(str(have)) != quant_family(req.quantization):
            if fwo.refuses_quantization_mismatch:
                pass  # a failing rule below
            else:
                notes.append(f"--quantization {req.quantization} differs from the config's {have}; the "
                             "config's is modelled")
        elif not have:
            rec["quant_method"] = req.quantization.lower()
            rec["is_quantized"] = True
            notes.append(f"--quantization {req.quantization}: online quantization of an unquantized checkpoint "
                         "(weights modelled as " + req.quantization.lower() + ")")
    # the rules and the memory model read a typed one-row frame about twice as fast as a dict (the catalog's
    # dtypes: no per-column conversion in every one of the suggestions' re-evaluations)
    from dashboard.check.source import typed_frame

    typed = typed_frame(rec)
    try:
        v = rules.check(typed, req.framework, req.tp, version=req.version, pp=req.pp, dp=req.dp, ep=req.ep,
                        dp_attention=req.dp_attention, vision_dp=req.vision_dp, expert_parallel=req.expert_parallel,
                        platform=gpu_platform(req), device_name=gpu_device_name(req),
                        kv_cache_dtype=req.kv_cache_dtype)
    except ValueError as e:
        raise CheckInputError(printable(e, 300)) from None
    issues = [hit_issue(h) for h in v.failures]
    flags = flag_check(req, v.release)
    if req.quantization and fwo.refuses_quantization_mismatch and rec.get("quant_method") and \
            quant_family(str(rec["quant_method"])) != quant_family(req.quantization):
        issues.insert(0, Issue(**fwo.quantization_mismatch_issue(rec["quant_method"], req.quantization, v.release)))
    ctx_issue = context_issue(rec, req)
    if ctx_issue is not None:
        issues.insert(0, ctx_issue)  # ModelConfig raises it before any parallel-layout check
    # a command the engine's parser refuses never reaches its KV-cache dtype check
    kv = kv_dtype(None if flags and flags["refused"] else req.kv_cache_dtype, rec)
    mem = None
    plat = platform_issue(req) if req.gpu else None
    if plat is not None:  # the engine does not run on this GPU family: nothing else about the GPU matters
        issues.insert(0, plat)
    if req.gpu:
        try:
            cap = capacity(typed, req, req.layout(), kv)
        except ValueError as e:
            raise CheckInputError(printable(e, 300)) from None
        unsized = memory_gaps(typed, cap)
        if unsized:
            raise CheckInputError(f"--gpu {printable(req.gpu, 40)}: the memory check cannot size this config "
                                  f"({unsized}); without --gpu only the layout rules are checked")
        mi = memory_issue(req, v.release, cap) if not issues else None
        if mi is None and issues:
            mi = None
        mem = {
            "gpu": cap["gpu"], "gpu_memory_bytes": int(cap["memory_bytes"]), "kv_cache_dtype": kv,
            "mem_fraction": cap.get("fraction"), "budget_rule": cap["budget_rule"],
            "max_model_len": int(cap["context_len"]),
            "weight_bytes_per_gpu": int(cap["weight_bytes_per_gpu"]),
            "kv_budget_bytes_per_gpu": int(cap["kv_budget_bytes_per_gpu"]),
            "kv_bytes_per_token_per_gpu": int(cap["kv_bytes_per_token_per_rank"]),
            "kv_tokens_per_gpu": int(cap["tokens_per_gpu"] or 0),
            "sequences_at_max_model_len": int(cap["concurrent_sequences"] or 0),
            "holds_max_model_len": bool(cap["fits"]) and int(cap["tokens_per_gpu"] or 0) >= int(cap["context_len"]),
        }
        if mi is not None:
            issues.append(mi)
            mem["holds_max_model_len"] = False
    if flags and flags["refused"]:  # the engine stops while parsing its arguments, before any other check
        issues.insert(0, Issue(f"flags.{req.framework}", flags["error"], "", "", "", flags["evidence"], False,
                               "flags", flags["condition"]))
    accepted = not issues
    lay = req.layout()
    # the model as the written commands name it (a pasted command keeps its own)
    cmd_model, model_note = command_model(src.model_id, kind=src.kind, where=src.where)
    alts: list[dict[str, Any]] = []
    if not accepted and not (flags and flags["refused"]) and plat is None:  # no layout runs on a refused GPU
        # a context refusal: every layout meets it, so the nearest layouts are planned at the model's length
        lim = context.limit(req.framework, rec) if ctx_issue is not None else None
        areq = replace(req, max_model_len=lim) if lim else req
        if lim and len(issues) == 1:
            if fits(typed, areq, lay, kv):
                alts.append(dict(why="model_context", gpus=gpu_count(req.framework, lay), **lay, max_model_len=lim,
                                 **_commands_for(req, cmd_model, lay, lim)))
        elif ctx_issue is None or lim:
            for a in alternatives(typed, areq, kv):
                a.update(_commands_for(req, cmd_model, {k: a[k] for k in lay}, lim))
                if lim:
                    a["max_model_len"] = lim
                alts.append(a)
        if mem is not None and not v.failures and mem["kv_tokens_per_gpu"] > 0 and \
                mem["kv_tokens_per_gpu"] < mem["max_model_len"]:
            block = fwo.kv_block_tokens
            fit_len = mem["kv_tokens_per_gpu"] // block * block
            if fit_len > 0:
                alts.append(dict(why="shorter_context", gpus=gpu_count(req.framework, lay), **lay,
                                 max_model_len=fit_len, **_commands_for(req, cmd_model, lay, fit_len)))
    if model_note and alts and req.launch is None:
        notes.append(model_note)
    warnings = [printable(w.message, 600) for w in v.warnings]
    if flags and flags["note"]:
        notes.insert(0, flags["note"])
    warnings += fwo.check_warnings(req.launch, v.release, req.dp)
    issue_dicts = [{k: printable(val, 3000) if isinstance(val, str) else val for k, val in asdict(i).items()}
                   for i in issues]
    for d in issue_dicts:  # per config too: a rule the table reproduced elsewhere was only checked for this one
        if d.get("evidence") == "executed" and v.evidence != "executed":
            # ... and only read from source for a GPU whose platform the release was never run as
            d["evidence"] = "source" if v.conformance is not None and v.conformance.ran_elsewhere else "checked"
    refused_flags = bool(flags and flags["refused"])
    evidence, evidence_text = v.evidence, v.evidence_text
    if refused_flags:  # the answer is the parser's: no layout of this config was judged
        evidence = "parser"
        how = "executed" if flags["evidence"] == "executed" else "read from source, not executed"
        evidence_text = (f"{fwo.label} {flags['release']}'s own argument parser refuses the command "
                         f"({how}: {flags['spec_file']}); "
                         "the layout and the config were not judged")
    return {
        "schema_version": SCHEMA_VERSION,
        "verdict": "accepted" if accepted else "refused",
        "exit_status": 0 if accepted else 1,
        "model": {"id": printable(src.model_id, 300), "source": src.kind, "path": printable(src.where, 500),
                  "sha": src.sha, "sidecars": src.sidecars, "offline": src.offline, "snapshot_date": src.date,
                  "config": printable(src.describe(), 300)},
        "framework": req.framework,
        "framework_label": schema.FRAMEWORK_LABELS[req.framework],
        "version_requested": req.version,
        "release": v.release,
        # this config and layout were run (the release having been run is ``conformance.kind == "checked"``)
        # (False, with ``evidence`` "parser", when the engine's argument parser refuses the command)
        "executed": evidence == "executed",
        "evidence": evidence,
        "evidence_text": evidence_text,
        "conformance": v.conformance.as_dict() if v.conformance is not None else None,
        "layout": dict(lay, gpus=gpu_count(req.framework, lay),
                       # the expert-parallel size the framework uses: vLLM's --enable-expert-parallel is TP x DP
                       ep=fwo.ep_group(lay)),
        "status": v.status if accepted or v.failures else "invalid",
        "attn_tp": v.attn_tp,
        "q_heads_per_gpu": v.q_heads_per_rank,
        "kv_heads_per_gpu": v.kv_heads_per_rank,
        "first_error": issue_dicts[0] if issue_dicts else None,
        "failures": issue_dicts,
        "memory": mem,
        "alternatives": alts,
        "suggestions": [printable(s, 600) for s in v.suggestions],
        "launch_flags": flags,
        "warnings": warnings,
        # the release's notice is also one of its warnings: given once, as the warning
        "notes": notes + ([printable(v.notice, 300)] if v.notice and
                          all(w.message != v.notice for w in v.warnings) else []),
        "error": None,
    }
