"""What the conformance harness (``conformance/``) needs to know about one framework: its adapter.

The harness lives outside ``dashboard`` and reads these objects (``frameworks.get(name).conformance()``);
``dashboard`` never imports ``conformance``. Pure data plus small pure functions: stdlib only, so any
module may import this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


def _no_layouts(dp: int, ep: bool, vision_dp: bool, pp: int, tps: list[int]) -> list[tuple[list[int], dict]]:
    return []


@dataclass(frozen=True)
class ConformanceAdapter:
    """One framework as the harness runs and judges it.

    Fields
    ------
    worker : file name of the worker script in ``conformance/`` that the framework's venv runs.
    executed_rules : module of the rules of executed releases (``rules()``, ``EXECUTED``), whose raise
        sites ``python -m conformance sites`` derives for another release.
    cell_plan : which cells the driver runs per model: ``"tp_ep_dp_vision"`` (TP x EP off/on, DP for MoE,
        vision-DP), ``"attention_dp"`` (TP x EP x attention-DP) or ``"pipeline_ep"`` (TP x PP, EP for MoE).
    readme_key_has_framework : the README block of a release is keyed ``<framework>-<release>`` (else
        ``<release>``, vLLM's, written first).
    judges_harness_reason : refusals the worker classifies as harness limitations are left unjudged.
    reasons : ``(needle, why)`` pairs: why a known kind of cell still differs (needle matched in the raise
        site, message or model id).
    mismatch_caption : the mismatch table's caption (its columns in words).
    mismatch_columns : ``(header, cell)`` of the layout columns after the model; ``cell`` is one of
        ``tp``, ``pp``, ``dp``, ``ep_on``, ``ep_size_from_dp``, ``vision_dp_on``.
    tracks_not_seen_first : the evidence lists the rules the table never reaches first (their evidence
        is ``source``); False: every rule with a site in an executed release counts as executed there.
    site_prefix : the package folder a rule's short site is relative to (``"sglang/srt/"``), "" if none.
    layouts : ``(dp, ep, vision_dp, pp, tp_sizes) -> [(tp_sizes, grid keyword arguments), ...]``: how a
        table's cell group maps to :func:`dashboard.rules.grid` calls.
    """

    worker: str
    executed_rules: str
    cell_plan: str
    readme_key_has_framework: bool = True
    judges_harness_reason: bool = True
    reasons: tuple[tuple[str, str], ...] = ()
    mismatch_caption: str = ""
    mismatch_columns: tuple[tuple[str, str], ...] = ()
    tracks_not_seen_first: bool = True
    site_prefix: str = ""
    layouts: Callable[[int, bool, bool, int, list[int]], list[tuple[list[int], dict]]] = field(
        default=_no_layouts, compare=False)

    def readme_key(self, framework: str, release: str) -> str:
        """The key of the release's generated README block (``<!-- release KEY -->``)."""
        return f"{framework}-{release}" if self.readme_key_has_framework else release


__all__ = ["ConformanceAdapter"]
