"""The rule registry: every framework's rules, in one step, from the framework objects.

Each framework names the modules holding its rules (:attr:`dashboard.frameworks.base.Framework.rule_modules`,
each with ``rules() -> list[Rule]``). :func:`rules` walks the frameworks in display order and takes each
module once (transformers' two frameworks share theirs), so :data:`dashboard.rules.RULES` lists the rules
module by module, and each framework's in evaluation order (the order the framework reaches them).
Built on first use and cached; nothing is rewritten at import. Pure: no Panel.
"""

from __future__ import annotations

import functools
import importlib

from dashboard import frameworks as _frameworks
from dashboard.rules.common import Rule


@functools.lru_cache(maxsize=None)
def _built() -> tuple[tuple[Rule, ...], dict[str, tuple[Rule, ...]]]:
    seen: set[str] = set()
    every: list[Rule] = []
    for fw in _frameworks.all_frameworks():
        for m in fw.rule_modules:
            if m not in seen:
                seen.add(m)
                every.extend(importlib.import_module(m).rules())
    by_fw: dict[str, list[Rule]] = {name: [] for name in _frameworks.names()}
    for r in every:
        by_fw[r.framework].append(r)
    return tuple(every), {name: tuple(rs) for name, rs in by_fw.items()}


def rules() -> list[Rule]:
    """Every rule of every framework (a new list; the rules themselves are shared, frozen)."""
    return list(_built()[0])


def by_framework() -> dict[str, list[Rule]]:
    """Framework id -> its rules, every release, in evaluation order (a new dict of new lists)."""
    return {k: list(v) for k, v in _built()[1].items()}


def of(framework: str) -> tuple[Rule, ...]:
    """The rules of ``framework`` (every release, evaluation order). KeyError for an unknown id."""
    return _built()[1][framework]


__all__ = ["rules", "by_framework", "of"]
