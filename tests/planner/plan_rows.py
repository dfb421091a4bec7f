"""What the planner tests share: the single-layout :func:`dashboard.rules.check` of one plan row."""

from __future__ import annotations

from dashboard import rules


def check_plan_row(rec, r: dict):
    """``rules.check`` of ``rec`` at plan row ``r``'s layout, as the planner judges it: vLLM's EP is
    ``--enable-expert-parallel``; an SGLang / TensorRT-LLM attention-DP row is ``dp=attn_dp, dp_attention=True``."""
    fw = r["framework"]
    if fw == "vllm":
        return rules.check(rec, fw, r["tp"], pp=r["pp"], dp=r["dp"], expert_parallel=r["ep"] > 1)
    if r["attn_dp"] > 1:
        return rules.check(rec, fw, r["tp"], pp=r["pp"], dp=r["attn_dp"], ep=r["ep"], dp_attention=True)
    return rules.check(rec, fw, r["tp"], pp=r["pp"], dp=r["dp"], ep=r["ep"])
