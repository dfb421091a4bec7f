"""The planner's inputs: a model record resolved and cached with the rules' and the memory model's
per-model columns, and the weight kind it needs from the GPU."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dashboard import memory


_CACHE: "OrderedDict[tuple, tuple[pd.DataFrame, dict, dict]]" = OrderedDict()
CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64


def _typed_frame(record: Any) -> pd.DataFrame:
    """:func:`dashboard.check.source.typed_frame` (one record as a one-row frame with the schema's dtypes)."""
    from dashboard.check.source import typed_frame

    return typed_frame(record)


def _record_key(record: Any) -> tuple | None:
    """A hashable snapshot of a record's content (None when it cannot be taken)."""
    try:
        if isinstance(record, pd.DataFrame):
            if len(record) != 1:
                return None
            items = zip(record.columns, record.iloc[0].tolist())
        elif isinstance(record, pd.Series):
            items = record.items()
        elif isinstance(record, Mapping):
            items = record.items()
        else:
            return None
        return tuple((str(c), type(v).__name__, repr(v)) for c, v in items)
    except Exception:  # pragma: no cover - exotic values: no caching
        return None


def prepared(record: Any) -> tuple[pd.DataFrame, dict, dict]:
    """(typed one-row frame, rules model memo, memory columns), cached by the record's content: planning
    one model at many GPU counts reuses the per-model columns of the rules and the memory model."""
    key = _record_key(record)
    if key is not None:
        with CACHE_LOCK:
            hit = _CACHE.get(key)
            if hit is not None:
                _CACHE.move_to_end(key)
                return hit
    df = _typed_frame(record)
    entry = (df, {}, memory.model_columns(df))
    if key is None:
        return entry
    with CACHE_LOCK:
        _CACHE[key] = entry
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return entry


def default_catalog() -> pd.DataFrame:
    """The shipped catalog (``$TP_PLANNER_CATALOG`` when set), read once per file version (read-only):
    :func:`dashboard.check.source.shipped_catalog`, which ``tp-planner check`` shares."""
    from dashboard.check.source import shipped_catalog

    return shipped_catalog()


def catalog_row(model_id: str, catalog: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """The one-row frame of ``model_id`` in ``catalog`` (default: the shipped one): the exact id, else the id
    in another case; None when absent. Never asks the Hub (:func:`dashboard.check.source.catalog_row`)."""
    from dashboard.check.source import catalog_row as row

    return row(model_id, catalog)


def resolve_record(record: Any, catalog: pd.DataFrame | None = None) -> Any:
    """A model id -> its one-row frame in the shipped catalog (or ``catalog``); anything else unchanged.
    The Hub is never asked (``tp-planner plan`` and ``check`` fetch ids the catalog lacks, or all with
    ``--refresh``: :func:`dashboard.check.load_model`). ValueError for an id not in the catalog."""
    if isinstance(record, str):
        hit = catalog_row(record, catalog)
        if hit is None:
            raise ValueError(f"model {record!r} is not in the catalog")
        return hit
    return record


def weight_kind(df: pd.DataFrame, weight_dtype: str | None) -> str:
    """bf16 | fp16 | fp32 | fp8 | nvfp4 | other: what the weights need from the GPU."""
    if weight_dtype is not None:
        w = str(weight_dtype).lower()
        return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}.get(w, w)
    rec = df.iloc[0]

    def s(col):
        v = rec.get(col) if col in df.columns else None
        return "" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v).lower()

    method, fmt = s("quant_method"), s("quant_format")
    if "nvfp4" in fmt or "nvfp4" in method or method == "modelopt_fp4":
        return "nvfp4"
    if method == "fp8" or "fp8" in fmt or "float-quantized" in fmt:
        return "fp8"
    td = s("torch_dtype")
    if td in ("bfloat16", "bf16"):
        return "bf16"
    if td in ("float16", "fp16", "half"):
        return "fp16"
    return "other"


def weight_kind_cols(c: Mapping[str, np.ndarray], weight_dtype: str | None) -> str:
    """:func:`weight_kind` from the memory model's lower-cased model columns (first model)."""
    if weight_dtype is not None:
        return weight_kind(pd.DataFrame(), weight_dtype)
    method, fmt, td = (str(c[k][0]) for k in ("quant_method", "quant_format", "torch_dtype"))
    if "nvfp4" in fmt or "nvfp4" in method or method == "modelopt_fp4":
        return "nvfp4"
    if method == "fp8" or "fp8" in fmt or "float-quantized" in fmt:
        return "fp8"
    return {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16"}.get(td, "other")
