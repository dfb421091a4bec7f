"""What the rule modules of executed releases share (:mod:`dashboard.rules.vllm_executed`,
:mod:`dashboard.rules.sglang_executed`): the version range an executed release stands for, the model
registry the harness wrote beside its table, and building a rule whose raise sites come per release
(evidence ``executed`` for the releases whose conformance table reaches it first, else ``source``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

from dashboard.rules.common import Rule

CONFORMANCE = Path(__file__).resolve().parents[2] / "data" / "conformance"


def release_range(executed: tuple[str, ...], release: str) -> str:
    """The releases whose behaviour the executed ``release`` stands for: from it up to the next
    release of ``executed`` (releases in between were not run: evidence ``source``)."""
    i = executed.index(release)
    return f">={release}" + (f",<{executed[i + 1]}" if i + 1 < len(executed) else "")


def read_registry(name: str, empty: dict) -> dict:
    """``data/conformance/<name>`` (a release's model registry as the harness read it), or a copy of
    ``empty`` while that file is not committed."""
    p = CONFORMANCE / name
    if not p.is_file():
        return copy.deepcopy(empty)
    return json.loads(p.read_text(encoding="utf-8"))


def executed_in(executed: tuple[str, ...], sites: dict[str, str], rule_id: str,
                not_seen_first: dict[str, frozenset[str]]) -> tuple[str, ...]:
    """The executed releases with a raise site for the rule whose table reaches it first."""
    return tuple(r for r in executed if r in sites and rule_id not in not_seen_first.get(r, ()))


def executed_rule(fw: str, executed: tuple[str, ...], not_seen_first: dict[str, frozenset[str]], url_of,
                  id: str, kind: str, condition: str, message: str, sites: dict[str, str], predicate, *,
                  exc_type: str, archs, exclude, needs, note: str, severity: str, ours: bool, versions: str,
                  src: str, effect: str = "") -> Rule:
    """A :class:`Rule` of ``fw`` with raise sites per release (``sites``: release -> ``path:line``). Its
    source link is ``src``, else ``url_of(release, path, line)`` of the newest release's site; ``ours``
    rules (the planner's own warnings) carry no exception type."""
    from packaging.version import Version

    url = src
    if sites and not url:
        rel = sorted(sites, key=Version)[-1]
        path, _, line = sites[rel].rpartition(":")
        url = url_of(rel, path, line)
    ran = executed_in(executed, sites, id, not_seen_first)
    return Rule(id=id, framework=fw, kind=kind, versions=versions, condition=condition, message=message,
                source_url=url, predicate=predicate, severity=severity, effect=effect,
                needs=tuple(needs), note=note, architectures=tuple(archs), exclude_architectures=tuple(exclude),
                sites=dict(sites), evidence="executed" if ran else "source",
                executed_in=ran, exc_type=exc_type if not ours else "", ours=ours)


def join_release_sites(r: Rule, sites_by_release: dict[str, dict[str, str]], executed: tuple[str, ...],
                       not_seen_first: dict[str, frozenset[str]], site=lambda s: s) -> Rule:
    """``r`` with the raise sites of the other releases (``sites_by_release``: release -> rule id ->
    site, written through ``site``) for the releases its version range covers and it has no site for yet;
    its ``executed_in`` and evidence follow."""
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(r.versions)
    extra = {rel: site(sites_by_release[rel][r.id]) for rel in sites_by_release
             if r.id in sites_by_release[rel] and rel not in r.sites and spec.contains(rel)}
    if not extra:
        return r
    sites = {**r.sites, **extra}
    ran = executed_in(executed, sites, r.id, not_seen_first)
    return dataclasses.replace(r, sites=sites, executed_in=ran, evidence="executed" if ran else "source")
