"""The rule documentation: every rule as data (:func:`rules_frame`) and the rule page ``docs/rules.md``
(:func:`rules_markdown`; written by ``python -m dashboard.rules.docs``). Pure: no I/O, no Panel.
"""

from __future__ import annotations

import pandas as pd

from dashboard import frameworks as _frameworks
from dashboard import schema
from dashboard.rules import registry as _registry
from dashboard.rules import versions as _versions


def rules_frame() -> pd.DataFrame:
    """Every rule's data as a DataFrame (one row per rule; no predicates)."""
    return pd.DataFrame([r.as_dict() for r in _registry.rules()])


def md_escape(s: str) -> str:
    """``s`` safe in one Markdown table cell (pipes escaped, newlines as spaces)."""
    return str(s).replace("|", "\\|").replace("\n", " ")


def rules_markdown() -> str:
    """The rule page (``docs/rules.md``), generated from :data:`RULES`."""
    ex = ", ".join(f"{fw} {', '.join(v)}" for fw, v in _versions.EXECUTED.items())
    lines = [
        "# TP rules, per framework",
        "",
        "Generated from `dashboard.rules.RULES` by `python -m dashboard.rules.docs` -- do not edit by hand.",
        "",
        "Each rule: id, kind, the framework releases it holds for (PEP 440 specifier; empty = every",
        "version we checked), the architectures it applies to (empty = all not excluded), the condition",
        "as the framework tests it, the message with `{fields}` the engine fills in (`{site}` = the raise",
        "site of the release asked about), the source, and the evidence:",
        "",
        f"- **executed**: a conformance table reproduces the rule (the release's own code raised it, same",
        f"  message and raise site; `data/conformance/`). Releases run so far: {ex}.",
        "- **source**: read from the release's source only (older releases, and rules the harness does not",
        "  reach).",
        "",
        "Severity `warning` = the framework runs, with a caveat. A message marked *ours* is this project's",
        "wording (the framework prints none, or only a log line). Effect `run_time` = the failure appears only",
        "when the model is built/run, not at load; `padded` = dummy heads (status `valid_padded`).",
        "",
    ]
    for fw in schema.FRAMEWORKS:
        rules = _registry.of(fw)
        lines += [f"## {schema.FRAMEWORK_LABELS[fw]} (`{fw}`)", ""]
        if _frameworks.get(fw).lists_verified_runs:
            vw = sorted({r.verified_with for r in rules if r.verified_with})
            if vw:
                lines += ["Checked against a real library run: " + "; ".join(vw), ""]
            else:
                lines += [
                    "Checked against a real library run: not yet -- read from the source only (pinned links "
                    "below); the transformers-matrix test (torchrun, gloo, CPU) fills in `verified_with`.",
                    "",
                ]
        lines += [
            "| id | kind | versions | architectures | severity | condition | message | source | evidence | notes |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rules:
            note = r.note
            if r.effect:
                note = (f"effect: {r.effect}. " + note).strip()
            if r.verified_with:
                note = (note + f" Verified with: {r.verified_with}").strip()
            if r.exclude_architectures:
                note = (note + " Not for: " + ", ".join(r.exclude_architectures) + ".").strip()
            if r.platforms:
                note = (note + " Judged on the GPU platforms: " + ", ".join(r.platforms) + ".").strip()
            src = ""
            if r.source_url:
                src = f"[{r.source_url.split('/blob/')[-1][:48]}]({r.source_url})"
            if r.sites:
                src = "; ".join(f"{k}: `{v}`" for k, v in sorted(r.sites.items())) + (f" ({src})" if src else "")
            evidence = r.evidence + (f" ({', '.join(r.executed_in)})" if r.executed_in else "")
            msg = "`" + md_escape(r.message if len(r.message) < 700 else r.message[:700] + "...") + "`"
            if r.ours:
                msg += " *(ours)*"
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"`{r.id}`",
                        r.kind,
                        md_escape(r.versions or "all checked"),
                        md_escape(", ".join(r.architectures) or "all"),
                        r.severity,
                        md_escape(r.condition),
                        msg,
                        src,
                        evidence,
                        md_escape(note),
                    ]
                )
                + " |"
            )
        lines.append("")
    return "\n".join(lines)


__all__ = ["rules_frame", "rules_markdown", "md_escape"]
