"""No code outside ``dashboard/frameworks/`` branches on a framework's name (issue 21, hard rule 1).

A branch is ``framework == ...`` / ``!=``, ``framework in ...`` / ``not in``, ``fw == ...``, ``fw in (...)``;
loops and comprehensions (``for fw in fws``) are fine. The knowledge belongs on the framework class; callers
ask ``frameworks.get(name).<thing>``. Read from the source (nothing is imported).

Parametrized over folders so the check can widen to the whole package: folders another helper is still
moving are marked ``xfail(strict=False)``; ``KNOWN`` holds the branches of code another helper owns and
rewrites (each with a reason), to be emptied when that work is merged.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: ``framework ==``/``!=``, ``fw ==``/``!=``, ``framework [not] in``, ``fw [not] in (``/``[``/``{`` -- not after ``for``.
BRANCH = re.compile(r"(?<!for )(?<![\w.])(?:framework\s*[!=]=|fw\s*[!=]=|framework\s+(?:not\s+)?in\b"
                    r"|fw\s+(?:not\s+)?in\s*[(\[{])")

#: file -> branches allowed for now, and why.
KNOWN: dict[str, tuple[int, str]] = {}

FOLDERS = [
    "dashboard/rules",
    "conformance",
    "dashboard",
]


def branches(path: Path) -> list[tuple[int, str]]:
    """``(line number, line)`` of every name branch in ``path``, comments and docstring lines skipped."""
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("#", 1)[0]
        if code.strip().startswith(('"', "'", ":", "``")):
            continue
        if BRANCH.search(code):
            out.append((i, line.strip()))
    return out


def test_the_pattern_sees_branches_and_not_loops():
    hits = [bool(BRANCH.search(s)) for s in (
        'if framework == "vllm":', "x = 1 if fw == NATIVE else 2", 'if framework in ("sglang", "trt"):',
        "if framework not in REGISTRY:", 'if fw in ("a", "b"):', "for fw in fws:", "[r for fw in fws]",
        "r.framework == fw", "if fw not in known:")]
    assert hits == [True, True, True, True, True, False, False, False, False]


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_framework_name_branch_outside_frameworks(folder):
    base = ROOT / folder
    found = {}
    for path in sorted(base.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel.startswith("dashboard/frameworks/"):
            continue
        hits = branches(path)
        allowed = KNOWN.get(rel, (0, ""))[0]
        if len(hits) > allowed:
            found[rel] = hits
    assert not found, "framework-name branches (ask the framework object instead): " + "; ".join(
        f"{f}: " + ", ".join(f"{n}: {t}" for n, t in h) for f, h in found.items())
