"""SGLang's conformance adapter (see :class:`dashboard.frameworks.conformance.ConformanceAdapter`)."""

from __future__ import annotations

from dashboard.frameworks.conformance import ConformanceAdapter

#: Why a known kind of cell still differs.
REASONS: tuple[tuple[str, str], ...] = (
    ("THUDM/chatglm-6b", "SGLang's ChatGLMConfig ignores vocab_size and reads padded_vocab_size (default 65024), "
                         "which chatglm-6b's config lacks; the catalog keeps vocab_size (130528), padded to "
                         "130560, which 3, 6 and 12 divide, so the engine's first rule is the attention assert"),
)


def layouts(dp: int, ep: bool, vision_dp: bool, pp: int, tps: list[int]) -> list[tuple[list[int], dict]]:
    """SGLang cells: ``dp`` is the attention-DP size (``--attn-dp-size``), ``ep`` means ``--ep-size`` = tp,
    so under EP one grid per TP size."""
    kw = dict(pp=int(pp), dp=int(dp), dp_attention=int(dp) > 1, vision_dp=bool(vision_dp))
    if ep:
        return [([int(t)], dict(ep=int(t), expert_parallel=True, **kw)) for t in tps]
    return [(tps, dict(ep=1, **kw))]


ADAPTER = ConformanceAdapter(
    worker="sglang_worker.py",
    executed_rules="dashboard.frameworks.sglang.rules_executed",
    cell_plan="attention_dp",
    reasons=REASONS,
    mismatch_caption="Cells whose first error still differs (model, tp, attention-DP, EP, reason):",
    mismatch_columns=(("tp", "tp"), ("attention-DP", "dp"), ("EP", "ep_on")),
    site_prefix="sglang/srt/",
    layouts=layouts,
)
