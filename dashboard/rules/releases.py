"""Release resolution: which of a framework's rules hold at a version, as they read in that release.

A ``version`` is a PEP 440 release, a date (the release current then) or None (the newest executed
release): :func:`resolve_version` maps it (:mod:`dashboard.rules.versions`), :func:`rules_at` picks the
rules whose specifier holds there and, for frameworks with executed releases, fills each rule's raise
site, source link and evidence for that release (:meth:`dashboard.rules.common.Rule.for_release`).
Pure apart from the cached release tables; no Panel.
"""

from __future__ import annotations

import re

from dashboard import frameworks as _frameworks
from dashboard import schema
from dashboard.rules import registry as _registry
from dashboard.rules import versions as _versions
from dashboard.rules.common import Rule


def parse_version(version: str | None):
    if version is None:
        return None
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging ships with pip/setuptools
        return None
    text = str(version).strip().lstrip("v")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)*((a|b|rc|\.post|\.dev)\d+)*(\+[\w.]+)?", text):
        return None  # dates ("2025-05"), bare years, words ("seed") are not release numbers
    try:
        return Version(text)
    except InvalidVersion:
        return None


def rule_applies_to_version(rule: Rule, version: str | None) -> bool:
    """A rule holds for ``version`` when its specifier contains it. ``None`` (or a version that is not a
    PEP 440 version, e.g. a date) means "the current release": every rule without an upper bound."""
    if not rule.versions:
        return True
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(rule.versions)
    v = parse_version(version)
    if v is None:
        return not any(s.operator in ("<", "<=", "==", "~=") for s in spec)
    return spec.contains(v, prereleases=True)


def resolve_version(framework: str, version: str | None) -> _versions.Resolved:
    """What ``version`` means for ``framework`` (see :func:`dashboard.rules.versions.resolve`)."""
    if _frameworks.REGISTRY.get(framework) is None:
        raise ValueError(f"unknown framework {framework!r}; expected one of {schema.FRAMEWORKS}")
    return _versions.resolve(framework, version)


_RULES_CACHE: dict[tuple[str, str | None], list[Rule]] = {}


def rules_at(framework: str, version: str | None) -> list[Rule]:
    """The framework's rules that hold at ``version``, each as it reads in the resolved release (the
    cached list itself: do not modify it). ValueError for an unknown framework."""
    res = resolve_version(framework, version)
    executed = bool(_versions.EXECUTED.get(framework))  # rules read as in the resolved release
    key = (framework, res.release if executed else version)
    if key not in _RULES_CACHE:
        rel = res.release if executed else version
        picked = [r for r in _registry.of(framework) if rule_applies_to_version(r, rel)]
        if executed:
            picked = [r.for_release(res.release, _frameworks.get(framework).source_repo_url) for r in picked]
        _RULES_CACHE[key] = picked
    return _RULES_CACHE[key]


def rules_for(framework: str, version: str | None = None) -> list[Rule]:
    """The rules of ``framework`` that hold at ``version``, each as it reads in the resolved release
    (message ``{site}`` filled, ``location``, ``source_url`` and ``evidence`` for that release), in the
    order the framework reaches them. ValueError for an unknown framework."""
    return list(rules_at(framework, version))



__all__ = ["parse_version", "rule_applies_to_version", "resolve_version", "rules_at", "rules_for"]
