"""Framework releases: which release a version string or a date means, and which releases were executed.

* ``data/releases/<framework>.csv``: every release of the framework with the time its first file
  reached PyPI (``version,first_upload_utc``; read from PyPI's simple index, PEP 700 ``upload-time``).
  A date such as ``"2023-07"`` (the failure cases give dates) means the newest release uploaded by the
  end of that period.
* ``data/releases/<framework>.txt``: for a framework without that table, its release numbers only (one a
  line, ``#`` comments), e.g. SGLang's: the dashboard offers them, but no date maps to one of them.
* ``data/conformance/<framework>-<version>.parquet``: releases whose own code was run over the catalog
  (:mod:`conformance`). With no version, the rules engine uses the newest of them.

Pure apart from reading those small files once (cached); no Panel.
"""

from __future__ import annotations

import calendar
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from dashboard import frameworks as _frameworks

DATA = Path(__file__).resolve().parents[2] / "data"

#: Releases run through the conformance harness, newest last (the tables in data/conformance/): each
#: framework's ``executed_releases`` (:mod:`dashboard.frameworks`), so the rules engine does not depend on
#: the tables being present at run time; ``tests/rules/test_conformance.py`` checks that every release listed has
#: its table and vice versa.
EXECUTED: dict[str, tuple[str, ...]] = _frameworks.executed()


@dataclass(frozen=True)
class Resolved:
    """What a ``version`` argument means for one framework.

    ``release``: the PEP 440 release whose rules apply (None = the framework's current rules, for
    frameworks without a release table). ``executed``: that release was run through the harness.
    ``notice``: a sentence for the user when the mapping was not the identity (a date, an unexecuted
    release, an unreadable string), else "".
    """

    release: str | None
    executed: bool
    notice: str


def _parse(version: str):
    from packaging.version import InvalidVersion, Version

    text = str(version).strip().lstrip("v")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)*((a|b|rc|\.post|\.dev)\d+)*(\+[\w.]+)?", text):
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


@functools.lru_cache(maxsize=None)
def releases(framework: str) -> tuple[tuple[str, str], ...]:
    """``(version, first_upload_utc)`` of every release, oldest first; empty when no table ships."""
    path = DATA / "releases" / f"{framework}.csv"
    if not path.is_file():
        return ()
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        v, _, t = line.partition(",")
        if v and t:
            rows.append((v.strip(), t.strip()))
    return tuple(sorted(rows, key=lambda r: r[1]))


@functools.lru_cache(maxsize=None)
def listed(framework: str) -> tuple[str, ...]:
    """Every known release number of ``framework``: those of its release-date table, else those of
    ``data/releases/<framework>.txt`` (no dates), else none. Unordered; executed releases not added."""
    table = releases(framework)
    if table:
        return tuple(v for v, _t in table)
    path = DATA / "releases" / f"{framework}.txt"
    if not path.is_file():
        return ()
    lines = (ln.split("#", 1)[0].strip() for ln in path.read_text(encoding="utf-8").splitlines())
    return tuple(ln for ln in lines if ln)


def has_dates(framework: str) -> bool:
    """Whether ``framework`` has a release-date table (so a date can name one of its releases)."""
    return bool(releases(framework))


def newest_executed(framework: str) -> str | None:
    ex = EXECUTED.get(framework, ())
    return ex[-1] if ex else None


_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?$")


def release_at(framework: str, date: str) -> str | None:
    """The newest release first uploaded by the end of ``date`` (``YYYY``, ``YYYY-MM`` or
    ``YYYY-MM-DD``); None when the table is missing or the date precedes the first release."""
    m = _DATE.match(str(date).strip())
    if not m:
        return None
    y = int(m.group(1))
    mo = int(m.group(2) or 12)
    if not 1 <= mo <= 12:
        return None
    d = int(m.group(3) or calendar.monthrange(y, mo)[1])
    end = f"{y:04d}-{mo:02d}-{d:02d}T23:59:59"
    best = None
    for v, t in releases(framework):
        if t <= end and _parse(v) is not None and not _parse(v).is_prerelease:
            if best is None or _parse(v) > _parse(best):
                best = v
    return best


def _unexecuted(label: str, rel: str, executed: tuple[str, ...]) -> str:
    from packaging.version import Version

    text = (f"{label} {rel} was never run through the conformance harness: its rules are read from source, "
            f"checked only against the executed releases ({', '.join(executed)}).")
    if Version(rel) < Version(executed[0]):
        text += (f" Before {executed[0]} the engine does not check whether the release knows the model's "
                 "architecture: a model newer than the release is not refused here.")
    return text


def resolve(framework: str, version: str | None) -> Resolved:
    """Map a user's ``version`` (None, a release such as "0.22.0", or a date such as "2025-05") to the
    release whose rules apply."""
    executed = EXECUTED.get(framework, ())
    fw = _frameworks.REGISTRY.get(framework)
    label = (fw.release_label if fw is not None else "") or framework
    if version is None or str(version).strip() == "":
        rel = newest_executed(framework)
        return Resolved(rel, rel is not None, "")
    text = str(version).strip()
    v = _parse(text)
    if v is not None:
        rel = str(v)
        if not executed:
            return Resolved(rel, False, "")
        if rel in executed:
            return Resolved(rel, True, "")
        return Resolved(rel, False, _unexecuted(label, rel, executed))
    rel = release_at(framework, text)
    if rel is not None:
        ex = rel in executed
        extra = "" if ex or not executed else " " + _unexecuted(label, rel, executed)
        return Resolved(rel, ex, f"{text!s} means {label} {rel}, the release current then.{extra}")
    rel = newest_executed(framework)
    if rel is not None:
        return Resolved(rel, True, f"Version {text!r} is not a release number or a date; {label} {rel}'s rules "
                                   f"were used.")
    return Resolved(None, False, f"Version {text!r} is not a release number; the current release's rules were used.")


#: A date argument (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``): public name of the pattern the resolver uses.
DATE_PATTERN = _DATE


def parse_release(version: str):
    """``version`` as a :class:`packaging.version.Version`, or None when it is not a release number."""
    return _parse(version)
