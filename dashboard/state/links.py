"""Reading a link's values: added model ids, release names, canonical catalog choices, query pairs."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dashboard import schema
from dashboard.rules import versions as _versions
from dashboard.state.choices import DEFAULT_VERSIONS, MAX_LINK_ADDS, MAX_QUERY_FIELDS, UPLOAD_PREFIX, VERSION_PARAMS


def added_ids(raw: str, notices: list[str] | None = None) -> list[str]:
    """Hub ids of a link's ``add=`` value (comma-separated ``org/name``), de-duplicated, in order: at most
    :data:`MAX_LINK_ADDS`; anything that is not a Hub model id is dropped with a notice in ``notices``."""
    from dashboard.addmodel import is_hub_id

    out: list[str] = []
    for item in (s.strip() for s in str(raw).split(",")):
        if not item or item in out:
            continue
        if not is_hub_id(item):
            if notices is not None:
                why = ("an uploaded config.json cannot travel in a link: upload it again" if item.startswith(UPLOAD_PREFIX)
                       else "not a Hub model id (org/name)")
                notices.append(f"Ignored {short(item)!r} in the link's add=: {why}.")
            continue
        if len(out) >= MAX_LINK_ADDS:
            if notices is not None:
                notices.append(f"The link adds more than {MAX_LINK_ADDS} models: only the first {MAX_LINK_ADDS} "
                               "are fetched.")
            break
        out.append(item)
    return out


def framework_releases(framework: str) -> list[tuple[str, str, bool]]:
    """``(release, first upload date YYYY-MM-DD or "", executed)`` of every release of ``framework`` (one
    of :data:`VERSION_PARAMS`) its selector offers: the releases run through the conformance harness first
    (newest first), then every other listed release (:func:`dashboard.rules.versions.listed`: for vLLM
    ``data/releases/vllm.csv``, with dates; for SGLang ``data/releases/sglang.txt``, without), newest first."""
    from packaging.version import InvalidVersion, Version

    executed = list(_versions.EXECUTED.get(framework, ()))
    dates = {v: t[:10] for v, t in _versions.releases(framework)}

    def order(v: str):
        try:
            return (1, Version(v))
        except InvalidVersion:
            return (0, Version("0"))

    rest = sorted((v for v in set(_versions.listed(framework)) if v not in executed), key=order, reverse=True)
    return ([(v, dates.get(v, ""), True) for v in sorted(executed, key=order, reverse=True)]
            + [(v, dates.get(v, ""), False) for v in rest])


def vllm_releases() -> list[tuple[str, str, bool]]:
    """:func:`framework_releases` of vLLM."""
    return framework_releases("vllm")


def sglang_releases() -> list[tuple[str, str, bool]]:
    """:func:`framework_releases` of SGLang (no dates: SGLang has no release-date table)."""
    return framework_releases("sglang")


_DATE = re.compile(r"\d{4}(-\d{1,2}){0,2}")
#: URL key -> framework of :data:`VERSION_PARAMS`.
VERSION_KEYS: dict[str, str] = {p: fw for fw, p in VERSION_PARAMS.items()}


def framework_release(framework: str, raw: str, notices: list[str] | None = None) -> str:
    """The release of ``framework`` (one of :data:`VERSION_PARAMS`) a link's version value names, spelled
    as in :func:`framework_releases`.

    Accepts a listed release (``0.22.0``, ``v0.22.0``; PEP 440 spellings of a listed release) or, for a
    framework with a release-date table (vLLM), a date (``2025``, ``2025-05``, ``2025-05-20``: the newest
    release uploaded by then, see :func:`dashboard.rules.versions.release_at`; a notice in ``notices``
    says which). A framework without one (SGLang) accepts exact releases only. An empty value is the
    default (:data:`DEFAULT_VERSIONS`). Raises ValueError for anything else (its text names no part of
    ``raw``: the caller's notice quotes it).
    """
    from packaging.version import InvalidVersion, Version

    key, label, default = VERSION_PARAMS[framework], schema.FRAMEWORK_LABELS[framework], DEFAULT_VERSIONS[framework]
    text = raw.strip()
    if not text:
        return default
    if any(ord(c) < 32 for c in text):
        raise ValueError("control characters")
    listed = framework_releases(framework)
    dated = _versions.has_dates(framework)
    if _DATE.fullmatch(text):
        if not dated:
            raise ValueError(f"{label} has no release-date table here, so a date cannot name one of its releases: "
                             f"give an exact release such as {default}; the default, {default}, is used")
        rel = _versions.release_at(framework, text)
        if rel is None:
            first = min((d for _v, d, _ex in listed if d), default="?")
            raise ValueError(f"no {label} release by that date (the first is from {first}); the default is used")
        if notices is not None:
            notices.append(f"{key}={text}: the link names a date; {label} {rel}, the release current then, "
                           "is shown.")
        return rel
    by_version = {}
    for v, _date, _ex in listed:
        try:
            by_version.setdefault(Version(v), v)
        except InvalidVersion:
            continue
    try:
        hit = by_version.get(Version(text[1:] if text[:1] in "vV" else text))
    except InvalidVersion:
        hit = None
    if hit is None:
        span = f"releases {by_version[min(by_version)]} to {by_version[max(by_version)]}" if by_version else ""
        if dated:
            raise ValueError(f"not a {label} release or a date such as 2025-05{f' ({span})' if span else ''}; "
                             f"the default, {default}, is used")
        raise ValueError(f"not a listed {label} release ({span + '; ' if span else ''}exact releases only: {label} has "
                         f"no release-date table here, so dates are not accepted); the default, {default}, is used")
    return hit


def vllm_release(raw: str, notices: list[str] | None = None) -> str:
    """:func:`framework_release` of vLLM."""
    return framework_release("vllm", raw, notices)


def sglang_release(raw: str, notices: list[str] | None = None) -> str:
    """:func:`framework_release` of SGLang (exact releases only: no date table)."""
    return framework_release("sglang", raw, notices)


#: How a refused free-text value is named in its notice.
_CHOICE_LABELS: dict[str, str] = {
    "org": "organisation in the catalog",
    "model_type": "model_type in the catalog",
    "quant": "quantization method in the catalog",
    "gpu": "GPU in the GPU table",
}


def canonical_choice(key: str, value: str, choices: Any) -> str:
    """``value`` spelled as in ``choices`` (case-insensitive, surrounding spaces ignored); ``""`` stays
    ``""``. Raises ValueError naming the accepted values when ``value`` is not one of them."""
    v = value.strip()
    if not v:
        return ""
    options = [str(c) for c in choices if str(c)]
    by_lower = {}
    for c in options:
        by_lower.setdefault(c.strip().lower(), c)
    hit = by_lower.get(v.lower())
    if hit is None:
        listed = ", ".join(options[:12]) + (", ..." if len(options) > 12 else "")
        raise ValueError(f"not a known {_CHOICE_LABELS.get(key, key + ' value')} (known: {listed}); "
                         "the default is used")
    return hit


def catalog_choices(catalog: pd.DataFrame) -> dict[str, list[str]]:
    """Values the catalog filters accept: ``org``, ``model_type`` (``model_type`` or ``text_model_type``)
    and ``quant`` (``none`` plus every ``quant_method``), each sorted case-insensitively."""

    def values(*cols: str) -> list[str]:
        out = set()
        for c in cols:
            if c in catalog.columns:
                out |= {str(x) for x in catalog[c].dropna().tolist() if str(x)}
        return sorted(out, key=str.lower)

    return {"org": values("org"), "model_type": values("model_type", "text_model_type"),
            "quant": ["none", *values("quant_method")]}


class _Skip:
    pass


SKIP = _Skip()


def equal(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return a == b


def short(s: str, n: int = 80) -> str:
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def query_lists(query: str | Mapping[str, Any]) -> dict[str, list[str]]:
    """Every value of each key, as text, in link order. Accepts a raw search string or Panel/Tornado-style
    mappings (key -> str / bytes / list of them). A key without any value gets ``[""]``. Raises ValueError
    for a query string of more than :data:`MAX_QUERY_FIELDS` fields."""
    if isinstance(query, str):
        q = query[1:] if query.startswith("?") else query
        parsed = urllib.parse.parse_qs(q, keep_blank_values=True, strict_parsing=False, max_num_fields=MAX_QUERY_FIELDS)
        return {k: list(v) or [""] for k, v in parsed.items()}
    out: dict[str, list[str]] = {}
    for k, v in query.items():
        vals = list(v) if isinstance(v, list | tuple) else [v]
        out[str(k)] = [x.decode("utf-8", errors="replace") if isinstance(x, bytes) else str(x) for x in vals] or [""]
    return out


def _query_pairs(query: str | Mapping[str, Any]) -> dict[str, str]:
    """Last value of each key, as text (see :func:`query_lists`)."""
    return {k: v[-1] for k, v in query_lists(query).items()}


def folded(values: pd.Series) -> pd.Series:
    """Text values stripped and lower-cased for sorting; missing values as ``""``."""
    return values.astype(object).where(values.notna(), "").astype(str).str.strip().str.lower()
