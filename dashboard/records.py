"""One reader of catalog rows and frames: one meaning for a missing value, dtypes from :mod:`dashboard.schema`.

Every part of the product reads catalog columns through this module (the rules' ``Ctx``, the per-rank
layout, the memory model, the planner), so a value that is missing, NA, ``None``, a NaN or a stray
string means the same everywhere:

* **counts and sizes** (schema dtype ``Int64``): :func:`count` gives int64 with NA -> 0 and a mask of
  present values (:func:`present`); :func:`number` gives float64 with NA -> NaN;
* **measures** (``float64``): :func:`number` (NaN = unknown);
* **flags** (``boolean``): :func:`flag` gives bool with NA -> False; :func:`flag_or_nan` keeps NA as NaN
  (float64 0/1/NaN) where "unknown" must stay distinguishable;
* **text** (``string``): :func:`text` gives lower-cased ``object`` strings with NA -> ``""``.

One record (a ``dict``, a ``pandas.Series`` or a namedtuple) or a whole catalog (a ``DataFrame``) is
accepted by :func:`frame`; the ``*_of`` functions read one scalar from one record.

Pure: no I/O, no Panel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dashboard import schema

#: Schema dtype of every catalog column (``Int64`` / ``float64`` / ``boolean`` / ``string``).
DTYPES: dict[str, str] = dict(schema.COLUMN_DTYPES)

_NA_TEXT = frozenset({"", "nan", "<na>", "none", "null"})


def kind(name: str) -> str:
    """The schema dtype of column ``name`` (``"Int64"`` for a column the schema does not list)."""
    return DTYPES.get(name, "Int64")


def frame(obj: Any) -> pd.DataFrame:
    """``obj`` as a DataFrame: a DataFrame itself, a Series / mapping / namedtuple as one row.

    Raises TypeError for anything else."""
    if isinstance(obj, pd.DataFrame):
        return obj
    if isinstance(obj, pd.Series):
        return obj.to_frame().T
    if isinstance(obj, Mapping):
        return pd.DataFrame([dict(obj)])
    if hasattr(obj, "_asdict"):
        return pd.DataFrame([obj._asdict()])
    raise TypeError(f"expected a catalog record (dict / Series) or DataFrame, got {type(obj).__name__}")


def number(df: pd.DataFrame, name: str) -> np.ndarray:
    """Column ``name`` as float64, NaN where missing, NA or not a number (booleans read as 0/1)."""
    if name not in df.columns:
        return np.full(len(df), np.nan)
    s = df[name]
    if s.dtype == object or str(s.dtype) in ("boolean", "bool"):
        s = s.map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v)
    return pd.to_numeric(s, errors="coerce").astype("float64").to_numpy()


def present(df: pd.DataFrame, name: str) -> np.ndarray:
    """True where count column ``name`` is present and > 0."""
    v = number(df, name)
    return np.isfinite(v) & (v > 0)


def count(df: pd.DataFrame, name: str) -> np.ndarray:
    """Count column ``name`` as int64, 0 where missing / NA / not finite (combine with :func:`present`).
    Fractional values are truncated toward zero (the catalog stores whole counts)."""
    v = number(df, name)
    return np.where(np.isfinite(v), v, 0).astype(np.int64)


def flag(df: pd.DataFrame, name: str) -> np.ndarray:
    """Flag column ``name`` as bool; missing / NA / anything that is not a boolean or a number -> False."""
    return np.nan_to_num(flag_or_nan(df, name), nan=0.0) > 0.5


def flag_or_nan(df: pd.DataFrame, name: str) -> np.ndarray:
    """Flag column ``name`` as float64 ``1.0`` / ``0.0``, NaN where unknown."""
    if name not in df.columns:
        return np.full(len(df), np.nan)
    vals = df[name].astype(object).to_numpy()
    out = np.full(len(vals), np.nan)
    for i, v in enumerate(vals):
        if isinstance(v, (bool, np.bool_)):
            out[i] = float(bool(v))
        elif isinstance(v, (int, float, np.integer, np.floating)) and not (isinstance(v, float) and math.isnan(v)):
            out[i] = float(v != 0)
    return out


def text(df: pd.DataFrame, name: str, *, lower: bool = True) -> np.ndarray:
    """Text column ``name`` as an object array of ``str``; missing / NA -> ``""``; lower-cased unless
    ``lower=False``."""
    if name not in df.columns:
        return np.full(len(df), "", dtype=object)
    s = df[name].astype(object)
    s = s.where(s.notna(), "").astype(str)
    if lower:
        s = s.str.lower()
    return s.to_numpy(dtype=object)


# -- one scalar of one record -----------------------------------------------------------------------

def _raw(record: Any, key: str) -> Any:
    try:
        return record[key]
    except (KeyError, IndexError, TypeError):
        return getattr(record, key, None)


def _is_na(v: Any) -> bool:
    if v is None or v is pd.NA:
        return True
    if isinstance(v, str):
        return False
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def int_of(record: Any, key: str) -> int | None:
    """Count ``key`` of one record as ``int``; None when missing, NA or not a finite number."""
    v = _raw(record, key)
    if _is_na(v):
        return None
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) else None


def number_of(record: Any, key: str) -> float | None:
    """Measure ``key`` of one record as ``float``; None when missing, NA or not a number."""
    v = _raw(record, key)
    if _is_na(v):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if not math.isnan(f) else None


def flag_of(record: Any, key: str) -> bool:
    """Flag ``key`` of one record; False when missing or NA."""
    v = _raw(record, key)
    if _is_na(v):
        return False
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return v != 0
    return False


def text_of(record: Any, key: str, *, lower: bool = False) -> str:
    """Text ``key`` of one record; ``""`` when missing or NA (``"nan"``, ``"<NA>"``, ``"None"`` too)."""
    v = _raw(record, key)
    if _is_na(v):
        return ""
    s = str(v)
    if s.strip().lower() in _NA_TEXT:
        return ""
    return s.lower() if lower else s


__all__ = ["DTYPES", "kind", "frame", "number", "present", "count", "flag", "flag_or_nan", "text",
           "int_of", "number_of", "flag_of", "text_of"]
