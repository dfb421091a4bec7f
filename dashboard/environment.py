"""The environment variables the project reads, checked once at start-up (:func:`check_environment`) so
a bad value is one line naming the variable, not an internal error later.

=================================  ========================================================================
``TP_PLANNER_HUB_DEADLINE_S``      longest a Hub fetch of ``check`` / ``plan`` may take, seconds: a finite
                                   number in 0.1 .. 3600 (default 60, :data:`dashboard.check.source.HUB_DEADLINE_S`)
``TP_PLANNER_CATALOG``             catalog parquet file used instead of the shipped one: an existing file
``TP_PLANNER_HUB_TOKEN``           the dashboard sends the operator's token: 1/true/yes/on or 0/false/no/off
``HF_HUB_ETAG_TIMEOUT``,           huggingface_hub's timeouts, seconds: whole numbers >= 1 (huggingface_hub
``HF_HUB_DOWNLOAD_TIMEOUT``        reads them with ``int()`` at import and fails with a traceback otherwise)
``HF_HUB_OFFLINE``                 1/true/yes/on or 0/false/no/off (or empty)
=================================  ========================================================================

``TP_PLANNER_DEBUG`` and ``TP_PLANNER_NO_TRANSFORMERS`` are flags (any non-empty value), never invalid.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from dashboard.terminal import safe_text

#: ``TP_PLANNER_HUB_DEADLINE_S`` bounds, seconds.
DEADLINE_RANGE = (0.1, 3600.0)
_BOOL_WORDS = {"1", "true", "yes", "on", "0", "false", "no", "off", ""}


class EnvironmentError_(ValueError):
    """A variable of the environment has a value the project cannot use (one-line message)."""


def _show(name: str, value: str) -> str:
    return f"{name}={safe_text(value, 40)!r}"


def hub_deadline_s(environ: Mapping[str, str] | None = None, default: float = 60.0) -> float:
    """``TP_PLANNER_HUB_DEADLINE_S`` in seconds (``default`` when unset or empty). Raises
    :class:`EnvironmentError_` for anything but a finite number in :data:`DEADLINE_RANGE` (``nan``, ``inf``,
    ``garbage``, ``0``)."""
    env = os.environ if environ is None else environ
    raw = str(env.get("TP_PLANNER_HUB_DEADLINE_S", "")).strip()
    if not raw:
        return default
    try:
        v = float(raw) if raw.isascii() else math.nan  # float() also reads "٨" and "1_0"
    except ValueError:
        v = math.nan
    if "_" in raw:
        v = math.nan
    lo, hi = DEADLINE_RANGE
    if not math.isfinite(v) or not lo <= v <= hi:
        raise EnvironmentError_(f"{_show('TP_PLANNER_HUB_DEADLINE_S', raw)}: expected a number of seconds in "
                                f"{lo:g}..{hi:g}")
    return v


def environment_errors(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per variable whose value cannot be used (see the module docstring); [] when all are fine."""
    env = os.environ if environ is None else environ
    errors = []
    try:
        hub_deadline_s(env)
    except EnvironmentError_ as e:
        errors.append(str(e))
    cat = str(env.get("TP_PLANNER_CATALOG", "")).strip()
    if cat and not os.path.isfile(cat):
        errors.append(f"{_show('TP_PLANNER_CATALOG', cat)}: no such catalog file")
    for name in ("TP_PLANNER_HUB_TOKEN", "HF_HUB_OFFLINE"):
        v = str(env.get(name, "")).strip()
        if v.lower() not in _BOOL_WORDS:
            errors.append(f"{_show(name, v)}: expected 1/true/yes/on or 0/false/no/off")
    for name in ("HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT"):
        v = str(env.get(name, "")).strip()
        if v and not (v.isascii() and v.isdigit() and int(v) >= 1):
            errors.append(f"{_show(name, v)}: expected a whole number of seconds >= 1")
    return errors


def check_environment(prog: str, environ: Mapping[str, str] | None = None, err=None) -> bool:
    """Print each of :func:`environment_errors` as ``<prog>: error: <line>`` on ``err`` (stderr); True when
    there was none. Every command calls it before any other work (exit status 2 otherwise)."""
    import sys

    errors = environment_errors(environ)
    for line in errors:
        print(f"{prog}: error: {line}", file=err or sys.stderr)
    return not errors
