"""The rules engine: which (model, TP) pairs each serving framework accepts, and why not.

Public API (the contract in the team preamble)
-----------------------------------------------
* :func:`check` -- one catalog record under one framework and parallel layout -> :class:`Verdict`
  (failing rules with the framework's own message and source, warnings, suggestions).
* :func:`grid` -- the whole catalog x TP sizes x frameworks -> tidy DataFrame, vectorized with numpy
  (no per-cell Python in the hot path); :func:`layout_grid` -- the same over whole parallel layouts.
* :data:`RULES` -- every rule as data (:class:`~dashboard.rules.common.Rule`); each framework's rules live
  in its package (``dashboard/frameworks/<pkg>/rules_*.py``), gathered by :mod:`.registry`.

This package is the face; one module per job:

* :mod:`.common` -- the rule record (:class:`Rule`) and the evaluation context (:class:`Ctx`);
  :mod:`.preds` -- predicates the frameworks' rules share; :mod:`.executed` -- the one factory for rules
  of executed releases and their evidence files; :mod:`.sources` -- shared source links;
* :mod:`.registry` -- the rule order, built in one step from the framework objects;
* :mod:`.releases` -- release resolution (which rules hold at a version, as they read there);
* :mod:`.evaluate` -- evaluation, shared by the grid and the verdict;
* :mod:`.grid` -- :func:`grid` and :func:`layout_grid`;
* :mod:`.verdict` -- :class:`Verdict`, :func:`check` and the suggestions;
* :mod:`.rulepage` -- :func:`rules_frame`, :func:`rules_markdown` (``python -m dashboard.rules.docs``).

``check`` runs the very same vectorized predicates on a one-row frame; there is one implementation.
Pure: no I/O, no Panel.
"""

from __future__ import annotations

from dashboard import frameworks as _frameworks
from dashboard.rules import registry as _registry
from dashboard.rules.common import KINDS, Ctx, Rule
from dashboard.rules.evaluate import evaluate
from dashboard.rules.grid import grid, layout_grid
from dashboard.rules.releases import resolve_version, rules_at, rules_for
from dashboard.rules.rulepage import rules_frame, rules_markdown
from dashboard.rules.verdict import (RuleHit, Verdict, check, is_moe_record, ok_sizes, sglang_dp_attention_flags,
                                     valid_with_ep_off)

__all__ = [
    "RULES",
    "RULES_BY_FRAMEWORK",
    "KINDS",
    "Rule",
    "RuleHit",
    "Verdict",
    "check",
    "grid",
    "layout_grid",
    "resolve_version",
    "rules_at",
    "rules_for",
    "rules_frame",
    "rules_markdown",
    "evaluate",
    "ok_sizes",
    "is_moe_record",
    "valid_with_ep_off",
    "sglang_dp_attention_flags",
    "SGLANG_ATTN_DP_SIZE_FROM",
]

#: First SGLang release that spells attention-DP ``--attn-dp-size D`` (kept for callers of the older API:
#: :attr:`dashboard.frameworks.sglang.SGLang.ATTN_DP_SIZE_FROM`).
SGLANG_ATTN_DP_SIZE_FROM = _frameworks.get("sglang").ATTN_DP_SIZE_FROM



def __getattr__(name: str):
    """``RULES`` (every rule, in evaluation order within each framework) and ``RULES_BY_FRAMEWORK``
    (framework id -> its rules), built on first use by :mod:`.registry`."""
    if name == "RULES":
        value = _registry.rules()
    elif name == "RULES_BY_FRAMEWORK":
        value = _registry.by_framework()
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
