"""Records <-> DataFrame with the schema's dtypes (:mod:`dashboard.schema`): :func:`catalog_from_records`
and :func:`conform`. A value that cannot be cast raises ``ValueError`` naming the column.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from dashboard import schema


def _na(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _whole(v: Any) -> int:
    if isinstance(v, float) and not v.is_integer():
        raise ValueError(f"{v!r} is not a whole number")
    return int(v)


def _coerce_named(values: list, dtype: str, name: str) -> pd.api.extensions.ExtensionArray | Any:
    """:func:`coerce_column` whose errors name the column (a foreign or hand-edited catalog file used to
    fail with a bare ``invalid literal for int()``)."""
    try:
        return coerce_column(values, dtype)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"catalog column {name!r} ({dtype}): {type(exc).__name__}: {exc}") from exc


def coerce_column(values: list, dtype: str) -> pd.api.extensions.ExtensionArray | Any:
    """``values`` as a pandas array of schema dtype ``dtype`` (``Int64`` / ``boolean`` / ``float64`` / ``string``),
    None / NA / NaN -> NA. Raises ``ValueError`` for a non-whole number in an ``Int64`` column, ``TypeError`` /
    ``ValueError`` for a value that does not cast (:func:`catalog_from_records` names the column)."""
    if dtype == "Int64":
        return pd.array([None if _na(v) else _whole(v) for v in values], dtype="Int64")
    if dtype == "boolean":
        return pd.array([None if v is None or v is pd.NA else bool(v) for v in values], dtype="boolean")
    if dtype == "float64":
        return pd.array([math.nan if v is None or v is pd.NA else float(v) for v in values], dtype="float64")
    return pd.array([None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else str(v) for v in values], dtype="string")


def _unencodable(v: Any) -> bool:
    """True for a string that UTF-8 cannot encode (a lone surrogate such as ``"\\ud800"``: valid JSON,
    but no parquet file, journal line or terminal takes it)."""
    if not isinstance(v, str) or v.isascii():
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _fix_text(v: Any) -> Any:
    return v.encode("utf-8", "replace").decode("utf-8") if _unencodable(v) else v


def quarantine(rec: Mapping[str, Any]) -> dict[str, Any]:
    """``rec`` unchanged when every string of it is valid Unicode; else the record quarantined: the
    identity columns kept (any lone surrogate in them as ``?``), every shape column empty, ``status``
    ``invalid_json`` and a ``status_reason`` naming the columns. One poisoned config is then one row with
    its reason, never a catalog build, scrape or journal replay that cannot be written."""
    bad = [k for k, v in rec.items() if k in schema.COLUMN_DTYPES and _unencodable(v)]
    if not bad:
        return dict(rec)
    out: dict[str, Any] = dict.fromkeys(schema.COLUMN_NAMES)
    for k in ("model_id", "org", "name", "source", "sha", "fetched_at", *META_KEEP):
        if k in rec:
            out[k] = _fix_text(rec[k])
    out["status"] = "invalid_json"
    out["status_reason"] = (f"quarantined: {', '.join(bad)} holds a string that is not valid Unicode "
                            "(a lone surrogate such as \\ud800)")
    out["parse_notes"] = out["status_reason"]
    return out


#: Hub metadata columns a quarantined record keeps (they came from the Hub's API, not from the config).
META_KEEP = ("downloads", "likes", "gated", "last_modified")


def catalog_from_records(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """DataFrame with the schema's columns (order of ``schema.COLUMN_NAMES``) and dtypes.

    Missing keys become NA; extra keys are dropped. A record holding a string UTF-8 cannot encode (a lone
    surrogate) becomes its :func:`quarantine` row instead of failing the whole frame.
    """
    recs = [quarantine(r) for r in records]
    data = {}
    for name in schema.COLUMN_NAMES:
        data[name] = _coerce_named([rc.get(name) for rc in recs], schema.COLUMN_DTYPES[name], name)
    return pd.DataFrame(data, columns=list(schema.COLUMN_NAMES))


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """Cast a DataFrame to the schema (adds missing columns as NA, drops extras, fixes order)."""
    out = {}
    n = len(df)
    for name in schema.COLUMN_NAMES:
        dt = schema.COLUMN_DTYPES[name]
        if name in df.columns:
            col = df[name]
            if str(col.dtype) == dt:
                out[name] = col.reset_index(drop=True)
            else:
                out[name] = pd.Series(_coerce_named(col.tolist(), dt, name))
        else:
            out[name] = pd.Series(coerce_column([None] * n, dt))
    return pd.DataFrame(out, columns=list(schema.COLUMN_NAMES))
