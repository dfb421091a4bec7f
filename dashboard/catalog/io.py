"""Catalog files: build a catalog from a folder of ``<org>--<name>.json`` configs, read one file (and its
quantization sidecars), load the shipped parquet, write atomically (temp file + ``os.replace``) and
merge catalogs by ``model_id``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard.atomic import atomic_write
from dashboard.catalog.quant import MAX_SIDECAR_BYTES, QUANT_SIDECARS
from dashboard.catalog.normalize import normalize_config
from dashboard.catalog.frame import catalog_from_records, conform


def model_id_from_filename(path: str | os.PathLike) -> str:
    """``<org>--<name>.json`` -> ``org/name`` (only the first ``--`` separates org from name)."""
    stem = Path(path).name
    if stem.endswith(".json"):
        stem = stem[:-5]
    org, sep, name = stem.partition("--")
    return f"{org}/{name}" if sep else stem


def read_sidecars(folder: str | os.PathLike | None, model_id: str) -> dict[str, bytes]:
    """``{file name: bytes}`` of the :data:`QUANT_SIDECARS` in ``folder/<org>--<name>/`` (empty when the
    folder or the files are absent; a file larger than 1 MiB or unreadable is skipped)."""
    if folder is None:
        return {}
    d = Path(folder) / model_id.replace("/", "--")
    out: dict[str, bytes] = {}
    for name in QUANT_SIDECARS:
        p = d / name
        try:
            if p.is_file() and p.stat().st_size <= MAX_SIDECAR_BYTES:
                out[name] = p.read_bytes()
        except OSError:
            continue
    return out


def default_sidecars_dir() -> Path:
    """``data/sidecars/``: verbatim quantization sidecars of catalog models (see its README)."""
    return default_catalog_path().with_name("sidecars")


def read_config_file(path: str | os.PathLike, *, source: str = "snapshot", sha: str | None = None,
                     fetched_at: str | None = None, sidecars: str | os.PathLike | None = None) -> dict[str, Any]:
    """Read and normalize one ``<org>--<name>.json`` file; unreadable files give a row with the reason.
    ``sidecars``: a folder holding ``<org>--<name>/quantize_config.json`` etc. (:func:`read_sidecars`)."""
    mid = model_id_from_filename(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        rec = normalize_config({}, mid, source=source, sha=sha, fetched_at=fetched_at)
        rec["status"], rec["status_reason"] = "error", f"unreadable file: {e.strerror or e}"
        rec["parse_notes"] = rec["status_reason"]
        return rec
    return normalize_config(data, mid, source=source, sha=sha, fetched_at=fetched_at,
                            sidecars=read_sidecars(sidecars, mid))


def build_catalog(folder: str | os.PathLike, *, fetched_at: str | None = None,
                  shas: Mapping[str, str] | None = None, sidecars: str | os.PathLike | None = None) -> pd.DataFrame:
    """Catalog of every ``*.json`` file in ``folder`` (named ``<org>--<name>.json``), one row per file.

    ``source`` is ``snapshot``; ``fetched_at`` defaults to each file's modification time (UTC);
    ``shas`` optionally maps model_id -> Hub commit sha; ``sidecars`` is a folder of per-model
    quantization sidecars (``<org>--<name>/quantize_config.json``, :func:`read_sidecars`; the shipped
    catalog uses :func:`default_sidecars_dir`). Rows are sorted by model_id.
    Raises ``FileNotFoundError`` / ``NotADirectoryError`` when ``folder`` is not a directory.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a directory")
    recs = []
    for p in sorted(folder.glob("*.json")):
        ts = fetched_at
        if ts is None:
            try:
                ts = datetime.fromtimestamp(p.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            except OSError:
                ts = None
        mid = model_id_from_filename(p)
        recs.append(read_config_file(p, fetched_at=ts, sha=(shas or {}).get(mid), sidecars=sidecars))
    df = catalog_from_records(recs)
    return df.sort_values("model_id", kind="stable").reset_index(drop=True)


def default_catalog_path() -> Path:
    """The shipped catalog, ``data/catalog.parquet`` beside the package (works with ``pip install -e .``)."""
    return Path(__file__).resolve().parents[2] / "data" / "catalog.parquet"


def load_catalog(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Read a catalog parquet file (default: the shipped one) and conform it to the schema.

    Raises ``FileNotFoundError`` when ``path`` is not a file, ``ValueError`` naming the column when a
    column cannot be cast to the schema's dtype, and pyarrow's error for a file that is not parquet.
    """
    p = Path(path) if path is not None else default_catalog_path()
    if not p.is_file():  # pyarrow reads a directory as a dataset and reports a bare path otherwise
        raise FileNotFoundError(f"no catalog file at {p}")
    df = pd.read_parquet(p)
    return conform(df)


def write_catalog(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``df`` (conformed to the schema) to parquet atomically: temp file beside it + ``os.replace``.

    A failure at any point leaves an existing file at ``path`` untouched. Returns the path.
    """
    out = conform(df)
    return atomic_write(path, lambda fh: out.to_parquet(fh, index=False))


def merge_catalog(old: pd.DataFrame | None, new: pd.DataFrame | None) -> pd.DataFrame:
    """Union of two catalogs by ``model_id``: rows of ``new`` replace rows of ``old`` with the same id.

    Rows of ``old`` absent from ``new`` are kept; duplicates inside ``new`` keep the last. Sorted by
    model_id, schema dtypes.
    """
    frames = [conform(d) for d in (old, new) if d is not None and len(d)]
    if not frames:
        return catalog_from_records([])
    both = pd.concat(frames, ignore_index=True)
    both = both.drop_duplicates("model_id", keep="last")
    return both.sort_values("model_id", kind="stable").reset_index(drop=True)
