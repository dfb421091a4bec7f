"""Validation of one untrusted config value: strings type-checked and length-capped, counts coerced
(integral floats, numeric strings) or rejected (booleans, zero, negative, non-finite, absurd), booleans
read from 0/1 and "true"/"false". Each coercion or rejection appends a note; nothing raises.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any

from dashboard.catalog.aliases import MAX_SIZE, MAX_STR


def utc_now() -> str:
    """Now, as ISO-8601 UTC to the second (``2026-01-31T12:00:00Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def short_repr(v: Any, n: int = 60) -> str:
    """``repr(v)`` cut to ``n`` characters (``...`` marks a cut): safe to put an untrusted value in a note."""
    try:
        s = repr(v)
    except Exception:  # pragma: no cover - repr of plain JSON values never fails
        s = f"<{type(v).__name__}>"
    return s if len(s) <= n else s[: n - 3] + "..."


def clean_str(v: Any, field: str, notes: list[str], cap: int = MAX_STR) -> str | None:
    """A config string, type-checked and length-capped (it is untrusted and may be megabytes)."""
    if v is None:
        return None
    if not isinstance(v, str):
        notes.append(f"{field} is not a string ({type(v).__name__}): ignored")
        return None
    if len(v) > cap:
        notes.append(f"{field} truncated from {len(v)} characters")
        return v[:cap]
    return v


def as_int(v: Any, field: str, notes: list[str], *, lo: int = 1, hi: int = MAX_SIZE) -> int | None:
    """Validate one integer field; None (noted) when unusable. ``lo``/``hi`` are inclusive bounds."""
    if v is None:
        return None
    if isinstance(v, bool):
        notes.append(f"{field} is a boolean ({v}), not a count: ignored")
        return None
    if isinstance(v, int):
        i = v
    elif isinstance(v, float):
        if not math.isfinite(v):
            notes.append(f"{field} is not finite ({v}): ignored")
            return None
        if not v.is_integer():
            notes.append(f"{field} is not an integer ({short_repr(v)}): ignored")
            return None
        i = int(v)
        notes.append(f"{field} given as float {v}: read as {i}")
    elif isinstance(v, str):
        s = v.strip()
        if len(s) > 20 or not re.fullmatch(r"[+-]?\d+", s):
            notes.append(f"{field} is a non-numeric string ({short_repr(v, 40)}): ignored")
            return None
        i = int(s)
        notes.append(f"{field} given as string {short_repr(v, 30)}: read as {i}")
    else:
        notes.append(f"{field} has type {type(v).__name__}: ignored")
        return None
    if i < lo:
        notes.append(f"{field} = {i} is below {lo}: ignored")
        return None
    if i > hi:
        notes.append(f"{field} = {short_repr(i, 30)} is implausibly large (> {hi}): ignored")
        return None
    return i


def as_bool(v: Any, field: str, notes: list[str]) -> bool | None:
    """A config boolean; ``0`` / ``1`` and ``"true"`` / ``"false"`` are read (noted); anything else is None (noted)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        notes.append(f"{field} given as integer {v}: read as {bool(v)}")
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        notes.append(f"{field} given as string {v!r}")
        return v.strip().lower() == "true"
    notes.append(f"{field} is not a boolean ({short_repr(v, 30)}): ignored")
    return None
