"""Catalog rows from the Hub's answers: the metadata columns of a ``ModelInfo`` (:func:`meta_columns`,
:data:`META_COLUMNS`), a row for a repo whose config could not be read (:func:`blank_record`), and
JSON-safe rows for the journal (:func:`row_dict`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from dashboard import schema


#: Metadata columns this module fills (the rest come from :func:`dashboard.catalog.normalize_config`).
META_COLUMNS: tuple[str, ...] = (
    "sha",
    "last_modified",
    "downloads",
    "likes",
    "gated",
    "safetensors_params",
    "safetensors_params_by_dtype",
)
#: Columns refreshed on a row whose config is unchanged or kept (popularity, gating).
POPULARITY_COLUMNS = ("downloads", "likes", "gated")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")


def utcnow() -> str:
    """Now, as ISO-8601 UTC to the second."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------------------
# records
# ------------------------------------------------------------------------------------------------


def blank_record(model_id: str, *, status: str, reason: str, fetched_at: str | None) -> dict[str, Any]:
    """A catalog record for a repo whose config was not read: every column None, ``status`` / ``status_reason``
    set (reason scrubbed by the caller), ``source`` ``hub``."""
    rec: dict[str, Any] = dict.fromkeys(schema.COLUMN_NAMES)
    org, sep, name = model_id.partition("/")
    rec.update(
        model_id=model_id,
        org=org if sep else "",
        name=name if sep else model_id,
        status=status,
        status_reason=reason,
        source="hub",
        fetched_at=fetched_at,
        parse_notes=reason,
    )
    return rec


def _iso(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return v.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(v)


def _int_or_none(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return None


def meta_columns(info: Any) -> dict[str, Any]:
    """Catalog metadata columns from a :class:`huggingface_hub.ModelInfo` (fields absent -> None)."""
    out: dict[str, Any] = dict.fromkeys(META_COLUMNS)
    if info is None:
        return out
    sha = getattr(info, "sha", None)
    out["sha"] = sha if isinstance(sha, str) else None
    out["last_modified"] = _iso(getattr(info, "last_modified", None))
    out["downloads"] = _int_or_none(getattr(info, "downloads", None))
    out["likes"] = _int_or_none(getattr(info, "likes", None))
    gated = getattr(info, "gated", None)
    out["gated"] = None if gated is None else bool(gated)
    st = getattr(info, "safetensors", None)
    params = getattr(st, "parameters", None) if st is not None else None
    if isinstance(params, Mapping):
        by_dtype = {str(k): int(v) for k, v in params.items() if _int_or_none(v) is not None}
        out["safetensors_params_by_dtype"] = json.dumps(dict(sorted(by_dtype.items())))
        total = _int_or_none(getattr(st, "total", None))
        out["safetensors_params"] = float(total if total is not None else sum(by_dtype.values()))
    return out


def _jsonable(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalars
        try:
            return v.item()
        except Exception:  # noqa: BLE001
            pass
    return v


def row_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    """One catalog row as a JSON-safe dict over :data:`dashboard.schema.COLUMN_NAMES` (NA / NaN -> None,
    numpy scalars -> Python), as the journal stores it."""
    return {c: _jsonable(row.get(c)) for c in schema.COLUMN_NAMES}
