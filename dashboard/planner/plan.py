""":func:`plan`: every layout of N GPUs for one model, judged by the rules, the node size, the dtype
rules and the memory model, ranked, with launch commands."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard import context, memory, rules, sharding
from dashboard import frameworks as fw_registry
from dashboard.launch import command_model
from dashboard.frameworks.sglang import attn_dp_with_replicas as sglang_attn_dp_with_replicas
from dashboard.planner.common import COLUMNS, PLAN_FRAMEWORKS
from dashboard.planner.enumeration import (
    CONTEXT_COLUMNS, CROSS_NODE_HINTS, cross_node, cross_node_message, layout_labels, layouts_cached, unique_rows)
from dashboard.planner.hardware import dtype_check_note, dtype_refusal, gpu_info, rules_platform, vllm_auto_dtype
from dashboard.planner.inputs import prepared, resolve_record, weight_kind_cols
from dashboard.rules.evidence import config_hash, evidence_for
from dashboard.rules.evidence import table as evidence_table
from dashboard.planner.ranking import best_per_group, rank_order


def launch_commands(row: Mapping, model_id: str, *, gpus_per_node: int, context_len: int, kv_dtype: str,
                    release: str | None) -> tuple[str, ...]:
    """Launch command(s) for one accepted layout (a row of :func:`plan`): one per node for multi-node
    vLLM / SGLang (vLLM ``--data-parallel-address`` / ``--headless`` when every replica fits in a node,
    ``--nnodes`` / ``--node-rank`` / ``--master-addr`` when a replica spans nodes; SGLang ``--nnodes`` /
    ``--node-rank`` / ``--dist-init-addr``), one per replica for TensorRT-LLM (it has no DP flag; replicas
    spanning nodes go through ``mpirun ... trtllm-llmapi-launch``). Each command starts with a ``#``
    comment naming where it runs; ``$HEAD_IP`` stands for the head node's address. The KV dtype and the
    memory fraction the plan assumed are spelled out."""
    return fw_registry.get(row["framework"]).plan_commands(
        row, model_id, gpus_per_node=gpus_per_node, context_len=context_len, kv_dtype=kv_dtype, release=release)


def layout_evidence(record: Any, record_hash: str, platform: str | None, releases: Mapping[str, str | None],
                    fw_rows: Mapping[str, np.ndarray], L: Mapping[str, np.ndarray],
                    first_error_executed: np.ndarray) -> np.ndarray:
    """The evidence kind (``executed`` | ``checked`` | ``source``) of every layout row, equal to
    :func:`dashboard.rules.evidence.evidence_for` asked row by row.

    ``fw_rows``: framework -> row positions; ``L``: the layout columns (``tp``, ``pp``, ``r_dp``, ``r_ep``,
    ``r_dp_attention``, ``r_expert_parallel``), one entry per row; ``first_error_executed``: bool per row.
    Only a row of a config the release's table ran, whose first error has executed evidence, and whose
    ``(tp, pp, dp)`` is that of a judged cell of the config (the first three entries of
    :func:`dashboard.rules.evidence.layout_key`) can be ``executed``; every other row of a framework has the
    framework's one non-executed evidence, which is asked once. Returns an object array of the kinds."""
    out = np.empty(len(first_error_executed), dtype=object)
    for fw, rows in fw_rows.items():
        rel = releases[fw]
        base = evidence_for(record, fw, rel, 1, record_hash=record_hash, first_error_executed=False,
                            platform=platform)  # not executed: the same for every layout of this framework
        out[rows] = base.kind
        if not base.config_run:  # no table, or the table never ran this config: no row is executed
            continue
        t = evidence_table(fw, rel, platform)
        judged = {key[:3] for key in t.cells.get(record_hash, ())} if t is not None else set()
        tp, pp, dp = (L[c][rows].tolist() for c in ("tp", "pp", "r_dp"))
        fe = first_error_executed[rows].tolist()
        for j, (a, b, c, e) in enumerate(zip(tp, pp, dp, fe)):
            if e and (a, b, c) in judged:
                i = rows[j]
                out[i] = evidence_for(record, fw, rel, int(a), pp=int(b), dp=int(c), ep=int(L["r_ep"][i]),
                                      dp_attention=bool(L["r_dp_attention"][i]),
                                      expert_parallel=bool(L["r_expert_parallel"][i]), record_hash=record_hash,
                                      first_error_executed=True, platform=platform).kind
    return out


def node_note(gpus: int, gpus_per_node: int) -> str:
    """'' when ``gpus`` fill whole nodes of ``gpus_per_node``; else the sentence saying the last node is
    partial (``8 GPUs on nodes of 3: 3 nodes, the last with 2 of its 3 GPUs``)."""
    n, g = int(gpus), int(gpus_per_node)
    if n <= g or n % g == 0:
        return ""
    nodes, last = -(-n // g), n % g
    return (f"{n} GPUs on nodes of {g}: {nodes} nodes, the last with {last} of its {g} GPU{'s' if g != 1 else ''} "
            f"(a partial node; the plan uses {n} GPUs, not {nodes * g}).")


def check_frameworks(frameworks: Iterable[str]) -> list[str]:
    if isinstance(frameworks, str):
        frameworks = [frameworks]
    fws = list(dict.fromkeys(frameworks))
    if not fws:
        raise ValueError("no frameworks given")
    bad = [f for f in fws if f not in PLAN_FRAMEWORKS]
    if bad:
        raise ValueError(f"unknown or unplanned framework(s) {bad}; expected some of {', '.join(PLAN_FRAMEWORKS)}")
    return fws


def check_versions(versions: Mapping[str, str | None] | None, fws: list[str]) -> dict[str, str | None]:
    if versions is None:
        return {}
    if not isinstance(versions, Mapping):
        raise TypeError(f"versions must map framework -> release, got {type(versions).__name__}")
    bad = [k for k in versions if k not in PLAN_FRAMEWORKS]
    if bad:
        raise ValueError(f"versions names unknown framework(s) {bad}; expected some of {', '.join(PLAN_FRAMEWORKS)}")
    return {k: (None if v is None or str(v).strip() == "" else str(v)) for k, v in versions.items() if k in fws}


def check_args(gpus, gpu_type, gpus_per_node, context_len, kv_dtype, weight_dtype, min_sequences):
    n = sharding.parallel_size(gpus, "gpus")
    gpu = gpu_info(gpu_type)
    if gpus_per_node is None:
        gpn = gpu.gpus_per_node or 8
    else:
        gpn = sharding.parallel_size(gpus_per_node, "gpus_per_node")
    ctx = memory.check_context_len(context_len)
    memory.dtype_bytes(kv_dtype, memory.KV_DTYPE_BYTES, "kv_dtype")
    if weight_dtype is not None:
        memory.dtype_bytes(weight_dtype, memory.WEIGHT_DTYPE_BYTES, "weight_dtype")
    k = None if min_sequences is None else sharding.parallel_size(min_sequences, "min_sequences", hi=1 << 40)
    return n, gpu, gpn, ctx, k


def plan(record: Any, gpus: int, gpu_type: str, *, gpus_per_node: int | None = None,
         frameworks: Sequence[str] = PLAN_FRAMEWORKS, versions: Mapping[str, str | None] | None = None,
         context_len: int, kv_dtype: str = "bf16", weight_dtype: str | None = None,
         min_sequences: int | None = None, cross_node_tp: bool = False,
         commands: bool | str = True, cross_node_hint: str = CROSS_NODE_HINTS["api"]) -> pd.DataFrame:
    """Every way to serve one model on ``gpus`` x ``gpu_type``, per framework, ranked.

    Parameters
    ----------
    record : one catalog record (mapping, Series, one-row DataFrame) or a model id in the shipped catalog.
    gpus : N, the total GPU count (whole number >= 1); every layout uses exactly N GPUs.
    gpu_type : GPU id of ``data/gpus.csv`` (e.g. ``"H100-80GB"``), or ``"other:<GiB>"`` for a card given by its
        memory per GPU (e.g. ``"other:24"``: unknown compute capability, so no dtype is refused and
        ``attrs["dtype_check"]`` says the check was skipped; 8 GPUs per node unless ``gpus_per_node``).
    gpus_per_node : GPUs per node; default the GPU table's ``gpus_per_node`` (8 on HGX boards, 72 in an
        NVL72 rack, 4 for PCIe servers where the table says so).
    frameworks : some of :data:`PLAN_FRAMEWORKS`.
    versions : framework -> release (or a date, see :func:`dashboard.rules.check`); a framework not named
        uses the newest executed release (vLLM, SGLang) or the current rules (TensorRT-LLM).
    context_len : tokens per sequence (prompt + output), also the engines' max model length in the commands.
    kv_dtype : KV-cache dtype (``bf16``, ``fp16``, ``fp8`` ...; :data:`dashboard.memory.KV_DTYPE_BYTES`).
    weight_dtype : weight format override (:data:`dashboard.memory.WEIGHT_DTYPE_BYTES`); None: the
        checkpoint's own (its quantization config / ``torch_dtype``).
    min_sequences : concurrent sequences a layout must hold to ``fit`` (default 1).
    cross_node_tp : allow a TP group to span nodes (default: TP stays within a node; such layouts are
        refused with ``refusal_kind == "cross_node_tp"``).
    commands : build the launch commands (``commands`` column): True for every layout that starts, False for
        none (empty tuples), ``"best"`` for each framework's best layout only (:func:`dashboard.planner.best`,
        what :func:`dashboard.planner.format_table` prints; the text of ``tp-planner plan``).
    cross_node_hint : how the cross-node refusal says to allow it, for where it is read
        (:data:`dashboard.planner.enumeration.CROSS_NODE_HINTS`: the API's argument by default, the CLI flag,
        the dashboard's wording).

    Returns
    -------
    DataFrame, one row per (framework, layout), columns :data:`COLUMNS` (bytes per GPU, tokens per GPU,
    sequences per replica / total). Sorted by ``rank`` (:mod:`dashboard.planner.ranking`): layouts that fit
    first; among them the near-ties (``sequences_total`` within 10 % of the most) by fewest pipeline stages,
    then most replicas, then most sequences; then the other fitting layouts by most ``sequences_total``, then
    fewest ``gpus_per_replica``; then the rest by framework and size. ``df.attrs`` carries the
    inputs (``model_id``, ``gpus``, ``gpu``, ``gpus_per_node``, ``context_len``, ``kv_dtype``,
    ``weight_dtype``, ``min_sequences``, ``cross_node_tp``, ``releases``, ``node_note``: '' or
    :func:`node_note`'s sentence when the last node is partial, ``command_model``: the model the commands
    name, :func:`dashboard.launch.command_model` of ``model_id``, ``model_note``: '' or why it is a
    placeholder).

    Raises
    ------
    ValueError for an unknown GPU, framework, dtype or model id, a size / count that is not a whole
    number >= 1 (``gpus``, ``gpus_per_node``, ``context_len``, ``min_sequences``), or a frame of several
    rows; TypeError for a record of another type.
    """
    fws = check_frameworks(frameworks)
    vers = check_versions(versions, fws)
    n, gpu, gpn, ctx, k = check_args(gpus, gpu_type, gpus_per_node, context_len, kv_dtype, weight_dtype,
                                      min_sequences)
    df, model_memo, cols = prepared(resolve_record(record))
    model_id = cols["model_id"][0] if "model_id" in df.columns else ""
    model_id = str(df["model_id"].iloc[0]) if model_id else ""
    moe = bool(memory.is_set(cols["is_moe"])[0] or memory.nz(cols["num_experts"])[0] > 0)
    resolved = {fw: rules.resolve_version(fw, vers.get(fw)) for fw in fws}
    releases = {fw: r.release for fw, r in resolved.items()}
    lays = pd.concat([layouts_cached(n, fw, moe, sglang_attn_dp_with_replicas(releases[fw]))
                      for fw in fws], ignore_index=True)
    L = {c: lays[c].to_numpy() for c in lays.columns}
    fw_arr = L["framework"].astype(object)
    n_rows = len(fw_arr)

    # rules: per framework, one evaluation over that framework's own distinct rule parameters (a layout is
    # judged only under the framework that spells it)
    keys = ["tp", "pp", "r_dp", "r_ep", "r_dp_attention", "r_expert_parallel"]
    valid = np.zeros(n_rows, dtype=bool)
    status, failures, first, first_rule = (np.empty(n_rows, dtype=object) for _ in range(4))
    fw_rows = {fw: np.flatnonzero(fw_arr == fw) for fw in fws}
    on_gpu = rules_platform(gpu_type)  # the rules judge on the GPU's platform
    for fw, rows in fw_rows.items():
        if not len(rows):
            continue
        uniq, u = unique_rows({c: L[c][rows] for c in keys}, keys)
        rg = rules.layout_grid(df, uniq, [fw], versions=vers, detail=True, model_memo=model_memo, **on_gpu)
        valid[rows] = rg["valid"].to_numpy(dtype=bool)[u]
        status[rows] = rg["status"].astype(object).to_numpy()[u]
        failures[rows] = rg["failures"].to_numpy()[u]
        first[rows] = rg["message"].astype(object).to_numpy()[u]
        first_rule[rows] = rg["rule_id"].astype(object).to_numpy()[u]
    meta = {}
    for fw in fws:
        for r in rules.rules_for(fw, vers.get(fw)):
            meta.setdefault((fw, r.id), r)
    rule_of = [meta.get((fw, rid)) if rid else None for fw, rid in zip(fw_arr, first_rule)]
    src = [r.source_url if r else "" for r in rule_of]
    loc = [r.location if r else "" for r in rule_of]
    ours = [bool(r.ours) if r else False for r in rule_of]
    # evidence per config and layout (dashboard.rules.evidence): "executed" only for a cell of this very config
    # in the release's conformance table
    cfg_hash = config_hash(df)
    from dashboard import gpus as _gpus

    try:
        gpu_platform = _gpus.evidence_platform(gpu_type)  # the evidence is the GPU's platform's ("unknown": other:<GiB>)
    except ValueError:
        gpu_platform = None
    executed_first = np.array([bool(ok or (r is not None and r.evidence == "executed"))
                               for ok, r in zip(valid.tolist(), rule_of)], dtype=bool)
    evid = layout_evidence(df, cfg_hash, gpu_platform, releases, fw_rows, L, executed_first).tolist()

    # memory: one vectorized call per framework over its layouts
    mc = {key: np.full(n_rows, np.nan) for key in ("weight_bytes_per_gpu", "kv_budget_bytes_per_gpu",
                                                 "kv_bytes_per_token_per_rank", "tokens_per_gpu", "fraction",
                                                 "concurrent_sequences", "reserve_bytes_per_gpu")}
    wk = weight_kind_cols(cols, weight_dtype)
    text_type = str(memory.text_model_type(cols)[0])
    auto_dtype, auto_note = vllm_auto_dtype(gpu, wk, text_type, weight_dtype is not None)
    for fw in fws:
        m = fw_arr == fw
        sel = {"tp": L["tp"][m], "pp": L["pp"][m], "dp": L["r_dp"][m], "ep": L["r_ep"][m],
               "dp_attention": L["r_dp_attention"][m], "expert_parallel": L["r_expert_parallel"][m]}
        w_fw, kv_fw = weight_dtype, kv_dtype
        if fw_registry.get(fw).auto_dtype_fallback and auto_dtype:  # --dtype auto's fallback; the KV cache (auto) follows the weights
            w_fw = auto_dtype
            kv_fw = auto_dtype if str(kv_dtype).lower() in ("bf16", "bfloat16") else kv_dtype
        cap = memory.layout_capacity(df, fw, gpu.memory_bytes, sel, kv_dtype=kv_fw, weight_dtype=w_fw,
                                     context_len=ctx, cols=cols)
        for key in mc:
            mc[key][m] = np.asarray(cap[key])[0]
    weights, budget = mc["weight_bytes_per_gpu"], mc["kv_budget_bytes_per_gpu"]
    tokens, frac = mc["tokens_per_gpu"], mc["fraction"]

    # sequences: per attention group, per replica (its attention-DP groups), capped by the scheduler
    tp, pp, dp = L["tp"].astype(np.int64), L["pp"].astype(np.int64), L["dp"].astype(np.int64)
    groups = L["attn_dp"].astype(np.int64)
    seq_group = np.nan_to_num(mc["concurrent_sequences"], nan=0.0)
    kv_rep = (np.maximum(seq_group, 0) * groups).astype(np.int64)
    tok0 = np.nan_to_num(tokens, nan=0.0)
    cap_rep = np.zeros(len(fw_arr), dtype=np.int64)
    for fw in fws:
        m = fw_arr == fw
        cap_rep[m] = np.broadcast_to(fw_registry.get(fw).scheduler_cap(gpu, tok0[m], ctx, groups[m]), (int(m.sum()),))

    # why a layout would not start, in the order the user meets it
    M = float(gpu.memory_bytes)
    plat_msg = {fw: fw_registry.get(fw).platform_refusal(gpu) for fw in fws}
    dtype_msg = {fw: dtype_refusal(gpu, wk, kv_dtype, fw, explicit=weight_dtype is not None) for fw in fws}
    cross, uneven = cross_node(tp, pp, n, gpn, fw_arr)
    rec0 = {c: df[c].iloc[0] for c in CONTEXT_COLUMNS if c in df.columns}
    ctx_msg = {fw: context.context_refusal(fw, ctx, rec0) for fw in fws}
    # the first reason that applies, in the order above, decided per framework where it is one for all
    # of the framework's rows and by masks elsewhere; messages built only for the rows that get them
    kind_arr = np.full(n_rows, "", dtype=object)
    refusal = np.full(n_rows, "", dtype=object)
    open_ = np.ones(n_rows, dtype=bool)  # no reason found yet

    def refuse(rows: np.ndarray, what: str, msg) -> None:
        kind_arr[rows] = what
        refusal[rows] = msg
        open_[rows] = False

    for fw in fws:
        rows = fw_rows[fw]
        if plat_msg[fw]:  # the framework does not run on this GPU family at all
            refuse(rows, "platform", plat_msg[fw])
        elif ctx_msg[fw]:
            refuse(rows, "context", ctx_msg[fw])
    rows = np.flatnonzero(open_ & ~valid)
    refuse(rows, "rule", first[rows])
    if not cross_node_tp:
        rows = np.flatnonzero(open_ & cross)
        refuse(rows, "cross_node_tp", np.array(
            [cross_node_message(int(tp[i]), int(pp[i]), gpn, fw_arr[i], bool(uneven[i]), cross_node_hint)
             for i in rows] + [None], dtype=object)[:-1])
    for fw in fws:
        if dtype_msg[fw]:
            rows = fw_rows[fw]
            refuse(rows[open_[rows]], "dtype", dtype_msg[fw])
    reserve, kv_tok = mc["reserve_bytes_per_gpu"], mc["kv_bytes_per_token_per_rank"]
    for i in np.flatnonzero(open_):
        mmsg = _memory_refusal(fw_arr[i], weights[i], budget[i], reserve[i], M, seq_group[i], ctx, kv_tok[i],
                               tok0[i], frac[i])
        if mmsg:
            kind_arr[i] = "memory"
            refusal[i] = mmsg
    starts = kind_arr == ""
    per_rep = np.where(starts, np.minimum(kv_rep, cap_rep), 0).astype(np.int64)
    total = per_rep * dp
    need = 1 if k is None else k
    fits = starts & (total >= need)
    why = [("" if f else (r if not st else f"holds {t} sequences of {ctx} tokens, fewer than the {need} asked"))
           for f, st, r, t in zip(fits, starts, refusal, total.tolist())]
    labels = layout_labels(tp, pp, dp, groups, L["ep"])
    tok_na = ~np.isfinite(tokens)
    data = {
        "framework": fw_arr, "release": np.array([releases[f] for f in fw_arr], dtype=object), "layout": labels,
        "tp": tp, "pp": pp, "dp": dp, "attn_dp": groups, "ep": L["ep"].astype(np.int64),
        "gpus": np.full(n_rows, n, dtype=np.int64), "gpus_per_replica": tp * pp,
        "nodes": np.full(n_rows, -(-n // gpn), dtype=np.int64),
        "valid": valid, "status": status, "failures": failures, "first_error": first,
        "first_error_rule": first_rule, "first_error_source": src, "first_error_location": loc,
        "first_error_ours": np.array(ours, dtype=bool), "evidence": evid,
        "weight_bytes_per_gpu": weights, "kv_budget_bytes_per_gpu": budget,
        "kv_bytes_per_token_per_gpu": mc["kv_bytes_per_token_per_rank"],
        "kv_tokens_per_gpu": pd.arrays.IntegerArray(np.where(tok_na, 0, np.maximum(tok0, 0)).astype(np.int64), tok_na),
        "mem_fraction": frac, "kv_sequences_per_replica": kv_rep, "scheduler_limit_per_replica": cap_rep,
        "sequences_per_replica": per_rep, "sequences_total": total,
        "limited_by": np.where(~starts, "", np.where(cap_rep < kv_rep, "scheduler", "kv")).astype(object),
        "starts": starts, "refusal_kind": kind_arr, "refusal": refusal, "fits": fits,
        "why_not": np.array(why, dtype=object),
    }
    # ranking (dashboard.planner.ranking): layouts that fit first; near-ties (within 10 % of the most KV
    # capacity) by fewest pipeline stages, then most replicas; the rest by most sequences
    order = rank_order(total, pp, dp, tp * pp, fits)
    nf = int(fits.sum())
    rank = pd.arrays.IntegerArray(np.concatenate([np.arange(1, nf + 1), np.zeros(n_rows - nf, dtype=np.int64)]),
                                  np.concatenate([np.zeros(nf, dtype=bool), np.ones(n_rows - nf, dtype=bool)]))
    ordered = {c: (v[order] if isinstance(v, (np.ndarray, pd.api.extensions.ExtensionArray))
                   else [v[j] for j in order]) for c, v in data.items()}
    ordered["rank"] = rank
    cmd_model, model_note = command_model(model_id)
    if commands not in (True, False, "best"):
        raise ValueError(f"commands must be True, False or 'best', not {commands!r}")
    ordered["commands"] = [()] * n_rows
    if commands:
        epf = L["expert_parallel"][order]
        rows = (np.flatnonzero(ordered["starts"]).tolist() if commands is True else
                best_per_group(ordered["framework"], ordered["fits"], ordered["sequences_total"], ordered["pp"],
                               ordered["dp"], ordered["gpus_per_replica"]))
        for j in rows:
            ordered["commands"][j] = launch_commands(
                {"framework": ordered["framework"][j], "tp": ordered["tp"][j], "pp": ordered["pp"][j],
                 "dp": ordered["dp"][j], "attn_dp": ordered["attn_dp"][j], "ep": ordered["ep"][j],
                 "expert_parallel": bool(epf[j]), "mem_fraction": ordered["mem_fraction"][j]},
                cmd_model, gpus_per_node=gpn, context_len=ctx, kv_dtype=kv_dtype, release=ordered["release"][j])
    out = pd.DataFrame({c: ordered[c] for c, _ in COLUMNS})
    out.attrs.update(node_note=node_note(n, gpn), command_model=cmd_model, model_note=model_note)
    out.attrs.update(model_id=model_id, gpus=n, gpu=gpu.gpu, gpus_per_node=gpn, context_len=ctx,
                     kv_dtype=str(kv_dtype), weight_dtype=weight_dtype, min_sequences=need,
                     cross_node_tp=bool(cross_node_tp), releases=releases, moe=moe,
                     gpu_memory_bytes=int(gpu.memory_bytes),
                     platform_refusals={fw: m for fw, m in plat_msg.items() if m},
                     dtype_check=" ".join(x for x in (dtype_check_note(gpu), auto_note if any(fw_registry.get(f).auto_dtype_fallback for f in fws) else "") if x))
    return out


def _memory_refusal(fw: str, weights: float, budget: float, reserve: float, M: float, seq_group: float, ctx: int,
                    kv_tok: float, tokens: float, frac: float) -> str:
    """The start-up refusal for a layout whose weights or KV cache do not fit ('' when it starts)."""
    gib = memory.GiB
    if not np.isfinite(weights) or not np.isfinite(budget):
        return "Not planned: the record lacks the shapes the memory model needs (weights / KV bytes unknown)."
    if weights + reserve >= M:
        return (f"Weights need {weights / gib:.2f} GiB per GPU plus {reserve / gib:.2f} GiB the framework "
                f"holds back, more than the GPU's {M / gib:.2f} GiB: loading runs out of memory "
                "(torch.OutOfMemoryError: CUDA out of memory) (planner estimate).")
    if budget <= 0 or seq_group < 1:
        return fw_registry.get(fw).memory_refusal(weights=weights, budget=budget, ctx=ctx, kv_tok=kv_tok,
                                                 tokens=tokens, frac=frac, seq_group=seq_group)
    return ""
