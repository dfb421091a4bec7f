"""The verdict on one (model, parallel layout) and its suggestions: :func:`check`.

``check`` runs the very same vectorized predicates as the grid on a one-row frame
(:func:`~dashboard.rules.evaluate.evaluate`); suggestions try nearby layouts, asking the framework object
what it offers (attention-DP groups, the expert-parallel switch, the wording). Pure: no I/O, no Panel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from dashboard import frameworks as _frameworks
from dashboard import sharding
from dashboard.rules.evaluate import STATUS_CATS, Eval, evaluate, status_codes, to_ctx
from dashboard.rules.evidence import Evidence, evidence_for
from dashboard.rules.releases import resolve_version


@dataclass(frozen=True)
class RuleHit:
    """One rule that fired for a record: the framework's message with its numbers filled in."""

    rule_id: str
    framework: str
    kind: str
    message: str
    source_url: str
    severity: str  # "error" | "warning"
    location: str = ""  # raise site "path/in/package.py:line" in the release, where known
    exc_type: str = ""  # the exception the framework raises ("" for warnings / our own messages)
    evidence: str = "source"  # "executed" (a conformance table reproduces it) or "source"
    ours: bool = False  # the message is this project's words, not the framework's
    condition: str = ""  # the rule's condition in words (what is wrong, for messages that say nothing)


@dataclass(frozen=True)
class Verdict:
    """What a framework does with one (model, parallel layout).

    ``valid`` is True exactly when ``failures`` is empty. ``status`` is one of
    :data:`dashboard.schema.CELL_STATUSES`; read it too: ``status == "unknown"`` means the record lacks
    fields some rules need (they were skipped; a warning ``engine.missing_fields`` names them), so
    ``valid`` then only says that no *checkable* rule failed. Per-rank counts are heads (not bytes); ``None`` when the
    record lacks the heads. ``attn_tp`` is the TP degree of the attention layers (``tp / dp`` under
    SGLang DP-attention for model files on the attention-TP group -- from SGLang 0.5.23 per model file,
    the full TP for Llama, Qwen2, Gemma, ... --, 1 under TensorRT-LLM attention-DP).
    """

    model_id: str
    framework: str
    version: str | None
    tp: int
    pp: int
    dp: int
    ep: int
    dp_attention: bool
    valid: bool
    status: str
    failures: tuple[RuleHit, ...]
    warnings: tuple[RuleHit, ...]
    suggestions: tuple[str, ...]
    q_heads_per_rank: int | None
    kv_heads_per_rank: int | None
    kv_replicas: int | None
    attn_tp: int
    release: str | None = None  # the release whose rules were applied (a date maps to one)
    executed: bool = False  # that release was run through the conformance harness (not: this config)
    notice: str = ""  # how ``version`` was mapped to ``release``, when it was not the identity
    expert_parallel: bool = False  # vLLM --enable-expert-parallel (EP size = tp x dp)
    #: what backs this verdict for this very config (:func:`dashboard.rules.evidence.evidence_for`)
    conformance: "Evidence | None" = None

    @property
    def evidence(self) -> str:
        """``executed`` only when this config (its :func:`~dashboard.rules.evidence.config_hash`) and this
        layout are a judged row of the release's conformance table and the first error (if any) is a rule
        with executed evidence (the further failing rules may be read from source: the framework stops at
        the first); ``checked`` when the release was run, on other configs or layouts; else ``source``."""
        return self.conformance.kind if self.conformance is not None else "source"

    @property
    def evidence_text(self) -> str:
        """The one wording of :attr:`evidence` (:func:`dashboard.rules.evidence.evidence_text`)."""
        from dashboard.rules.evidence import Evidence, evidence_text

        return evidence_text(self.conformance or Evidence(self.framework, self.release, False, False))


def hits(ev: Eval, row: int) -> tuple[list[RuleHit], list[RuleHit]]:
    """The failing rules and the warnings of cell ``row`` of ``ev``, in evaluation order (a run-time
    failure adds a warning saying the model loads first)."""
    failures, warnings = [], []
    for r, f, flds in zip(ev.rules, ev.fire, ev.fields):
        if not f[row]:
            continue
        vals = {k: (np.asarray(v)[row] if np.ndim(v) else v) for k, v in flds.items()}
        hit = RuleHit(r.id, r.framework, r.kind, r.format(vals), r.source_url, r.severity, r.location,
                      r.exc_type, r.evidence, r.ours, r.condition)
        (failures if r.severity == "error" else warnings).append(hit)
        if r.severity == "error" and r.effect == "run_time":
            warnings.append(
                RuleHit(
                    r.id,
                    r.framework,
                    r.kind,
                    "Passes the config check and loads, fails when the model is built/run (forward pass).",
                    r.source_url,
                    "warning",
                )
            )
    return failures, warnings


def ok_sizes(record, framework: str, version, sizes: np.ndarray, **kw) -> np.ndarray:
    """The TP sizes of ``sizes`` (int array) where ``framework`` accepts ``record`` (neither invalid nor
    unknown) under the parallel settings ``kw`` (``pp``, ``dp``, ``ep``, ``dp_attention``, ...)."""
    ctx = to_ctx(record, sizes, **kw)
    ev = evaluate(ctx, framework, version)
    err = np.zeros(ctx.n, dtype=bool)
    for r, f in zip(ev.rules, ev.fire):
        if r.severity == "error":
            err |= f
    st = status_codes(err, ev)
    return sizes[(st != 3) & (st != 4)]


def suggestions(record, framework, version, tp, pp, dp, ep, dp_attention, vision_dp, failures,
                 expert_parallel: bool = False, platform: str | None = None,
                 device_name: str | None = None, kv_cache_dtype: str | None = None) -> list[str]:
    """What the user could change for ``record`` to run under ``framework`` (sentences; [] when nothing
    fails): nearby valid TP sizes, then the framework's attention-DP and expert-parallel switches
    (:class:`dashboard.frameworks.base.Framework` ``dp_attention_groups`` / ``dp_attention_suggestion`` /
    ``expert_parallel_suggestion`` / ``ep_off_hint``), pipeline parallelism over the same GPUs, a
    data-parallel vision encoder. Each is checked by re-running the rules at that layout, on ``platform``
    (None: an H100)."""
    out: list[str] = []
    fw = _frameworks.get(framework)
    upper = min(max(64, 2 * tp), sharding.MAX_PARALLEL)
    sizes = np.arange(1, upper + 1, dtype=np.int64)
    base = dict(pp=pp, dp=dp, ep=ep, dp_attention=dp_attention, vision_dp=vision_dp,
                expert_parallel=expert_parallel, platform=platform, device_name=device_name,
                kv_cache_dtype=kv_cache_dtype)
    ok = ok_sizes(record, framework, version, sizes, **base)
    if not failures:
        return out
    if any(f.rule_id.endswith("ep_without_moe") for f in failures):
        out.append("This model has no experts: launch it without expert parallelism " + fw.ep_off_hint)
        if valid_with_ep_off(record, framework, version, tp, pp, dp, dp_attention, vision_dp,
                             platform=platform, device_name=device_name, kv_cache_dtype=kv_cache_dtype):
            out.append(f"Valid at tp={tp} without expert parallelism.")
            return out
    below = ok[ok < tp]
    above = ok[ok > tp]
    near = []
    if below.size:
        near.append(int(below.max()))
    if above.size:
        near.append(int(above.min()))
    if near:
        out.append("Nearest valid TP sizes: " + " and ".join(str(x) for x in near) + ".")
    else:
        out.append(f"No TP size in 1..{upper} is valid under {framework} with these settings.")

    def valid_with(at_tp: int = tp, **over) -> bool:
        kw = dict(base, **over)
        return bool(ok_sizes(record, framework, version, np.array([at_tp], dtype=np.int64), **kw).size)

    if not dp_attention:
        for d in fw.dp_attention_groups(tp):
            if valid_with(dp=d, dp_attention=True):
                out.append(fw.dp_attention_suggestion(version, tp, d))
                break
    if is_moe_record(record) and ep == 1 and not expert_parallel and tp * dp > 1:
        hint = fw.expert_parallel_suggestion(tp, dp, valid_with)
        if hint:
            out.append(hint)
    if pp == 1:
        for t2 in sorted((d for d in range(1, tp) if tp % d == 0), reverse=True):
            if valid_with(at_tp=t2, pp=tp // t2):
                out.append(f"The same {tp} GPUs as tp={t2} x pp={tp // t2} (pipeline parallel) is valid.")
                break
    if not vision_dp and any(f.kind == "vision_heads" for f in failures) and valid_with(vision_dp=True):
        out.append(f"Valid at tp={tp} with a data-parallel vision encoder (mm_encoder_tp_mode='data').")
    return out


def valid_with_ep_off(record, framework, version, tp, pp, dp, dp_attention, vision_dp, *,
                      platform: str | None = None, device_name: str | None = None,
                      kv_cache_dtype: str | None = None) -> bool:
    """Whether ``framework`` accepts ``record`` at this layout with expert parallelism off (on ``platform``)."""
    return bool(ok_sizes(record, framework, version, np.array([tp], dtype=np.int64), pp=pp, dp=dp, ep=1,
                          dp_attention=dp_attention, vision_dp=vision_dp, expert_parallel=False,
                          platform=platform, device_name=device_name, kv_cache_dtype=kv_cache_dtype).size)


def is_moe_record(record) -> bool:
    """Whether ``record`` has routed experts (False when it cannot be read)."""
    try:
        ctx = to_ctx(record, [1])
        return bool(ctx.is_moe()[0])
    except Exception:  # pragma: no cover - defensive: suggestions must never break a verdict
        return False


def _opt_int(mask: bool, v) -> int | None:
    return None if mask else int(v)


def check(
    record: Mapping | pd.Series,
    framework: str,
    tp: int,
    *,
    version: str | None = None,
    pp: int = 1,
    dp: int = 1,
    ep: int = 1,
    dp_attention: bool = False,
    vision_dp: bool = False,
    expert_parallel: bool = False,
    platform: str | None = None,
    device_name: str | None = None,
    kv_cache_dtype: str | None = None,
) -> Verdict:
    """Would ``framework`` accept this model at this parallel layout, and if not, what would it say?

    Parameters
    ----------
    record : one catalog record (mapping or Series of schema columns; missing keys count as NA).
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    tp, pp, dp, ep : tensor, pipeline, data and expert parallel sizes (>= 1). ``ep > 1`` means expert
        parallelism (vLLM ``--enable-expert-parallel``: experts are not TP-sliced).
    version : framework release (PEP 440, e.g. "0.22.0"), a date (``"2023-07"``: the newest release
        uploaded by then, from ``data/releases/<framework>.csv``) or None: for vLLM the newest release
        run through the conformance harness, for the others their current rules. The verdict's
        ``release``/``executed``/``notice`` say what was used.
    expert_parallel : vLLM ``--enable-expert-parallel`` (EP size = tp x dp; ``ep`` stays 1).
    dp_attention : SGLang DP-attention (``--attn-dp-size``; before 0.5.22 ``--enable-dp-attention --dp-size``; attention-TP = tp / dp) or TensorRT-LLM attention-DP.
    vision_dp : the vision encoder runs data-parallel (vLLM ``mm_encoder_tp_mode="data"``).
    platform : the platform of the user's GPU (``dashboard.gpus.platform_of(gpu)``, e.g. ``"cuda-sm75"``), or
        None when no GPU is given. It decides the evidence (``executed`` only for a table run as that
        platform; a release run as other platforms only is ``source`` for this one) and the rules keyed by
        platform (kernel and attention-backend selection; None: judged as on an H100, ``cuda-sm90``).
    device_name : the name the GPU reports (``dashboard.gpus`` ``name``: "NVIDIA A10"), printed by messages
        that name the device; None: the platform's stand-in card's.
    kv_cache_dtype : ``--kv-cache-dtype`` as given (None / "auto": the checkpoint's scheme, else the model dtype).

    Returns
    -------
    :class:`Verdict`. Quantization comes from the record (``quant_method``, block sizes, group size).

    Raises
    ------
    ValueError for an unknown framework or a parallel size that is not a whole number in
    ``1 .. dashboard.sharding.MAX_PARALLEL`` (``4.5`` is refused, not truncated); TypeError for a record
    of another type.
    """
    tp = sharding.parallel_size(tp, "tp")  # whole number in 1 .. MAX_PARALLEL (ValueError otherwise)
    pp, dp, ep = (sharding.parallel_size(v, n) for v, n in ((pp, "pp"), (dp, "dp"), (ep, "ep")))
    ctx = to_ctx(record, [tp], pp=pp, dp=dp, ep=ep, dp_attention=dp_attention, vision_dp=vision_dp,
                  expert_parallel=expert_parallel, platform=platform, device_name=device_name,
                  kv_cache_dtype=kv_cache_dtype)
    ev = evaluate(ctx, framework, version)
    failures, warnings = hits(ev, 0)
    res = resolve_version(framework, version)
    if res.notice:
        warnings.append(RuleHit("engine.version", framework, "attention_heads", res.notice, "", "warning",
                                ours=True))
    err = np.array([bool(failures)])
    status = STATUS_CATS[int(status_codes(err, ev)[0])]
    if ev.unknown[0]:
        missing = sorted({c for r in ev.rules for c in r.needs if not ctx.has(c)[0]})
        warnings.append(
            RuleHit("engine.missing_fields", framework, "attention_heads",
                    f"Not fully checked: the record has no {', '.join(missing)}, so the rules that need "
                    f"{'it' if len(missing) == 1 else 'them'} were skipped (status unknown).",
                    "", "warning", ours=True)
        )
    hints = suggestions(record, framework, version, tp, pp, dp, ep, dp_attention, vision_dp, failures,
                        expert_parallel, platform=platform, device_name=device_name, kv_cache_dtype=kv_cache_dtype)
    model_id = ""
    try:
        model_id = str(ctx.models["model_id"].iloc[0]) if "model_id" in ctx.models.columns else ""
    except Exception:  # pragma: no cover
        model_id = ""
    ev_of = evidence_for(record, framework, res.release, tp, pp=pp, dp=dp, ep=ep,
                         dp_attention=dp_attention, vision_dp=vision_dp, expert_parallel=expert_parallel,
                         first_error_executed=not failures or failures[0].evidence == "executed",
                         platform=platform)
    if kv_cache_dtype not in (None, "", "auto") and ev_of.executed:
        # the tables ran --kv-cache-dtype auto: another KV dtype is that config and layout, not that run
        import dataclasses

        ev_of = dataclasses.replace(ev_of, executed=False)
    return Verdict(
        model_id=model_id,
        framework=framework,
        version=version,
        tp=tp,
        pp=int(pp),
        dp=int(dp),
        ep=int(ep),
        dp_attention=bool(dp_attention),
        valid=not failures,
        status=status,
        failures=tuple(failures),
        warnings=tuple(warnings),
        suggestions=tuple(hints),
        q_heads_per_rank=_opt_int(not ev.has_q[0], ev.q_per_rank[0]),
        kv_heads_per_rank=_opt_int(not ev.has_kv[0], ev.kv_per_rank[0]),
        kv_replicas=_opt_int(not ev.has_kv[0], ev.kv_rep[0]),
        attn_tp=int(ev.attn_tp[0]),
        release=res.release,
        executed=res.executed,
        notice=res.notice,
        expert_parallel=bool(expert_parallel or ep > 1),
        conformance=ev_of,
    )


def sglang_dp_attention_flags(version: str | None, dp: int) -> str:
    """SGLang's launch flags for attention-DP over ``dp`` groups at ``version`` (kept for callers of the
    older API: :meth:`dashboard.frameworks.sglang.SGLang.dp_attention_flags`)."""
    return _frameworks.get("sglang").dp_attention_flags(version, dp)


__all__ = ["RuleHit", "Verdict", "check", "hits", "ok_sizes", "suggestions", "valid_with_ep_off",
           "is_moe_record", "sglang_dp_attention_flags"]
