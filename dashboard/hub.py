"""Scrape ``config.json`` files and metadata from the Hugging Face Hub into the catalog.

This is the only module of the project that imports :mod:`huggingface_hub` (tested with 2.4). It is
I/O: network, the Hugging Face cache, and the catalog file. Everything pure (turning a config into a
record, the catalog's dtypes, merging, atomic writes) lives in :mod:`dashboard.catalog`.

Command line::

    python -m dashboard.hub scrape [REPO_IDS...] [--repos-file F] [--author A] [--search S]
        [--pipeline-tag T] [--sort downloads|likes|trending] [--limit N] [--workers N]
        [--refresh] [--catalog PATH] [--timeout S] [--max-retries N] [--no-progress]

From a notebook::

    from dashboard.hub import scrape
    df, summary = scrape(["meta-llama/Llama-3.1-8B"], catalog_path="my-catalog.parquet")
    print(summary)

What one run does
-----------------
1. **Select** repos: explicit ids (arguments and/or a file, one id per line, ``#`` comments) and/or a
   Hub query through :meth:`huggingface_hub.HfApi.list_models` (``author``, ``search``,
   ``pipeline_tag``, ``sort`` = downloads | likes | trending, ``limit``), de-duplicated in order.
2. For each repo, in a bounded thread pool (``workers``): metadata (commit ``sha``, ``last_modified``,
   ``downloads``, ``likes``, ``gated``, safetensors parameter counts by dtype) from
   :meth:`HfApi.model_info` (or from the listing when it already carried them), then ``config.json``
   through :func:`huggingface_hub.hf_hub_download` pinned to that sha (so the Hugging Face cache under
   ``HF_HOME`` is used and filled), then :func:`dashboard.catalog.normalize_config`.
3. **Incremental**: a repo whose catalog row has the same sha (status ok, invalid_json or not_found)
   downloads nothing; only its popularity columns are refreshed. ``refresh=True`` forces a download.
4. **One status per repo**, never an exception: ``ok``; ``gated`` (401/403, ``GatedRepoError``);
   ``not_found`` (404: no such repo, revision or ``config.json``); ``invalid_json``; ``error`` with
   the reason (timeouts, 5xx after retries, a config the normalizer cannot use ...).
5. **Nothing is lost**: rows of repos not in this run are kept (:func:`dashboard.catalog.merge_catalog`);
   a row with status ``ok`` is only ever replaced by a newer ``ok`` row (a failed or gated re-fetch keeps
   the shapes already known and is reported as ``kept_previous``); every finished repo is appended at
   once to a journal beside the catalog (``<catalog>.journal.jsonl``), the catalog is rewritten
   atomically (:func:`dashboard.catalog.write_catalog`) every ``checkpoint_every`` seconds and at the
   end, and the journal is removed only after the final write. A run killed at any point and started
   again replays the journal, skips the repos it holds, and finishes the rest. A file lock
   (in the temp folder, keyed by the catalog's path) keeps two scrapes from writing one catalog.

Retries and timeouts (how they wrap huggingface_hub's own)
-----------------------------------------------------------
huggingface_hub 2.x talks HTTP through a shared ``httpx2.Client`` created with ``timeout=None``:

* ``HfApi.model_info`` sends one request with the ``timeout`` it is given and never retries: this module
  retries it (429, 408, 5xx, timeouts, connection errors) with exponential backoff
  ``backoff_base * 2**attempt`` (capped at ``backoff_max``, 0-10 % jitter), honouring ``Retry-After``
  (seconds or HTTP date; capped at ``retry_after_max``) and pausing *all* workers while a 429's
  ``Retry-After`` runs.
* ``HfApi.list_models`` pages through ``utils.http_backoff`` (5 retries, 1 s base, ``Retry-After``
  honoured, no timeout): this module adds its own retries around the whole listing.
* ``hf_hub_download``: the ``HEAD`` uses ``etag_timeout`` (= ``timeout`` here, unless the
  ``HF_HUB_ETAG_TIMEOUT`` variable overrides it); on 429/5xx/timeout it retries internally
  (``http_backoff``: 5 retries, 60 s timeout each) and then raises ``LocalEntryNotFoundError`` — this
  module does **not** retry on top of that. The ``GET`` of the file uses ``HF_HUB_DOWNLOAD_TIMEOUT``
  (default 10 s) and retries 408/429 and broken connections itself; a 5xx on the ``GET`` is retried here.

Environment (as huggingface_hub defines it): ``HF_TOKEN`` (or a stored login) authenticates, and is
never written to the catalog, the journal or the logs (every string written or logged is scrubbed of
it); ``HF_ENDPOINT`` selects the Hub (read by huggingface_hub at import; ``endpoint=`` overrides);
``HF_HOME`` / ``HF_HUB_CACHE`` locate the download cache (``cache_dir=`` overrides);
``HF_HUB_OFFLINE=1`` makes no request at all: configs come from the cache only (repos not in it get
``error``), and a Hub query (``author=`` ...) is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import random
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pandas as pd
from filelock import FileLock, Timeout as FileLockTimeout
from tqdm.auto import tqdm

import huggingface_hub
from huggingface_hub import HfApi, constants as hf_constants, hf_hub_download
from huggingface_hub.errors import (
    DisabledRepoError,
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import validate_repo_id

try:  # huggingface_hub 2.x sends through httpx2; 1.x through httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover
    import httpx as _httpx

from dashboard import schema
from dashboard.catalog import (
    catalog_from_records,
    default_catalog_path,
    load_catalog,
    merge_catalog,
    normalize_config,
    write_catalog,
)

__all__ = ["FetchError", "FetchedConfig", "RetryPolicy", "ScrapeError", "ScrapeSummary", "fetch_config", "main",
           "read_repos_file", "scrape"]

logger = logging.getLogger("dashboard.hub")

T = TypeVar("T")

#: HTTP statuses worth retrying (same set as huggingface_hub's ``http_backoff``).
RETRY_STATUSES: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})
#: Exceptions worth retrying (transport level).
RETRY_EXCEPTIONS: tuple[type[BaseException], ...] = (
    _httpx.TimeoutException,
    _httpx.NetworkError,
    _httpx.RemoteProtocolError,
)
#: ``--sort`` values -> ``HfApi.list_models(sort=...)``.
SORTS: dict[str, str] = {"downloads": "downloads", "likes": "likes", "trending": "trending_score"}
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
_POPULARITY = ("downloads", "likes", "gated")
#: Statuses for which an unchanged sha means nothing to download.
_UNCHANGED_OK = frozenset({"ok", "invalid_json", "not_found"})
_INFO_EXPAND = ["sha", "lastModified", "downloads", "likes", "gated", "safetensors", "siblings"]
_LIST_EXPAND = ["sha", "lastModified", "downloads", "likes", "gated", "safetensors"]
_MAX_CONFIG_BYTES = 64 * 1024 * 1024
_MAX_REASON = 300
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_URL_QUERY = re.compile(r"(https?://[^\s?]+)\?[^\s]*")


class ScrapeError(RuntimeError):
    """The run cannot start or select repos (bad arguments, listing failed, catalog unreadable, locked)."""


def _utcnow() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------------------
# secrets: the token never reaches a file or a log
# ------------------------------------------------------------------------------------------------

_TOKENISH = re.compile(r"\b(hf_|api_org_)[A-Za-z0-9]{8,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",;]+")


class _Scrubber:
    """Replaces known secrets, ``hf_...`` token shapes and ``Bearer ...`` values by ``***``."""

    def __init__(self, secrets: Iterable[str | None]):
        self.secrets = sorted({s for s in secrets if isinstance(s, str) and len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: Any) -> Any:
        if not isinstance(text, str) or not text:
            return text
        for s in self.secrets:
            text = text.replace(s, "***")
        text = _BEARER.sub(r"\1***", text)
        return _TOKENISH.sub(r"\1***", text)

    def record(self, rec: dict[str, Any]) -> dict[str, Any]:
        return {k: self(v) for k, v in rec.items()}


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    """Server-sent text for a terminal: control characters (ANSI escapes ...) shown as ``?``."""
    return _CONTROL.sub("?", text)


class _ScrubFilter(logging.Filter):
    """Logging filter: formats the message, then scrubs it (installed on the CLI's handler)."""

    def __init__(self, scrub: _Scrubber):
        super().__init__()
        self.scrub = scrub

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string must not kill logging
            msg = str(record.msg)
        record.msg, record.args = _printable(self.scrub(msg)), None
        if record.exc_info:
            record.exc_text = self.scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def _known_secrets(token: str | bool | None) -> list[str]:
    out: list[str] = []
    if isinstance(token, str):
        out.append(token)
    try:
        t = huggingface_hub.get_token()
    except Exception:  # noqa: BLE001 - e.g. a failing OIDC exchange: the env value is still scrubbed
        t = None
    out += [t or "", os.environ.get("HF_TOKEN", ""), os.environ.get("HUGGING_FACE_HUB_TOKEN", "")]
    return out


# ------------------------------------------------------------------------------------------------
# retries
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """Retry schedule. Times in seconds.

    Attempt ``n`` (0-based) that fails with a retryable error sleeps ``Retry-After`` when the answer
    carried one (capped at ``retry_after_max``), else ``min(backoff_max, backoff_base * 2**n)`` plus
    0-10 % jitter; after ``max_retries`` retries the last error is final.
    """

    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    retry_after_max: float = 300.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.retry_after_max))
        d = min(self.backoff_max, self.backoff_base * (2**attempt))
        return d * (1.0 + 0.1 * random.random())


def _response(exc: BaseException) -> Any:
    return getattr(exc, "response", None)


def _http_status(exc: BaseException) -> int | None:
    resp = _response(exc)
    code = getattr(resp, "status_code", None)
    return code if isinstance(code, int) else None


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delay-seconds or an HTTP date; None if absent/bad."""
    if value is None:
        return None
    value = value.strip()
    try:
        secs = float(value)
        return secs if math.isfinite(secs) and secs >= 0 else None
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _retry_after(exc: BaseException) -> float | None:
    resp = _response(exc)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    try:
        return parse_retry_after(headers.get("Retry-After"))
    except Exception:  # noqa: BLE001
        return None


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, RETRY_EXCEPTIONS):
        return True
    return isinstance(exc, HfHubHTTPError) and _http_status(exc) in RETRY_STATUSES


def _download_retryable(exc: BaseException) -> bool:
    """Errors of ``hf_hub_download`` that huggingface_hub did not already retry itself.

    * ``LocalEntryNotFoundError``: the HEAD failed *after* huggingface_hub's own retries -> final.
    * ``ValueError`` from a HEAD error under ``force_download`` (no internal retry there) -> retry if
      that error is retryable.
    * ``HfHubHTTPError`` 5xx on the GET (huggingface_hub retries only 408/429 there) -> retry.
    """
    if isinstance(exc, LocalEntryNotFoundError):
        return False
    inner = _cause(exc)
    if inner is not exc:
        return _is_retryable(inner)
    return isinstance(exc, HfHubHTTPError) and (_http_status(exc) or 0) >= 500 and _http_status(exc) in RETRY_STATUSES


class _Gate:
    """Shared pause: a 429 with ``Retry-After`` holds every worker until it has run out."""

    def __init__(self) -> None:
        self._until = 0.0
        self._lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._until = max(self._until, time.monotonic() + seconds)

    def wait(self, sleep: Callable[[float], None]) -> None:
        while True:
            with self._lock:
                left = self._until - time.monotonic()
            if left <= 0:
                return
            sleep(min(left, 1.0))


class _Retrier:
    def __init__(self, policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep):
        self.policy = policy
        self.sleep = sleep
        self.gate = _Gate()
        self.retries = 0
        self._lock = threading.Lock()

    def call(self, fn: Callable[[], T], what: str, retryable: Callable[[BaseException], bool] = _is_retryable) -> T:
        attempt = 0
        while True:
            self.gate.wait(self.sleep)
            try:
                return fn()
            except Exception as exc:
                if not retryable(exc) or attempt >= self.policy.max_retries:
                    raise
                ra = _retry_after(exc)
                delay = self.policy.delay(attempt, ra)
                if _http_status(exc) == 429 and ra is not None:
                    self.gate.pause(delay)
                with self._lock:
                    self.retries += 1
                logger.info("%s: %s; retry %d/%d in %.2fs", what, _short_error(exc), attempt + 1,
                            self.policy.max_retries, delay)
                self.sleep(delay)
                attempt += 1


# ------------------------------------------------------------------------------------------------
# errors -> status
# ------------------------------------------------------------------------------------------------


_BOILERPLATE = ("For more information", "Please make sure", "If you are trying", "For more details", "Make sure your")


def _short_error(exc: BaseException) -> str:
    """One line: HTTP code, huggingface_hub's gist and the server's own message (untrusted; scrubbed later)."""
    code = _http_status(exc)
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(_BOILERPLATE)]
    server = getattr(exc, "server_message", None)
    server = server.strip().replace("\n", " ") if isinstance(server, str) else ""
    lines = [ln for ln in lines if not server or ln not in server]
    gist = " ".join(lines[:2]) if lines else type(exc).__name__
    if server:
        gist += f" (server says: {server})"
    gist = _URL_QUERY.sub(r"\1", gist)  # drop ?expand=... noise from URLs
    if code is not None and not gist.startswith(str(code)):
        gist = f"HTTP {code}: {gist}"
    if isinstance(exc, RETRY_EXCEPTIONS):
        gist = f"{type(exc).__name__}: {gist}"
    return gist[:_MAX_REASON]


def _cause(exc: BaseException) -> BaseException:
    """The HTTP/transport error under huggingface_hub's wrappers, if any.

    ``hf_hub_download`` raises ``LocalEntryNotFoundError`` *from* the HEAD's error when it cannot fall
    back to the cache, and ``ValueError("Force download failed ...")`` from it under ``force_download``.
    """
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 6:
        if isinstance(cur, (HfHubHTTPError, OfflineModeIsEnabled, *RETRY_EXCEPTIONS)):
            return cur
        cur, seen = cur.__cause__, seen + 1
    return exc


def classify_error(exc: BaseException, *, gated_hint: bool = False) -> tuple[str, str]:
    """Map an exception from huggingface_hub to ``(status, reason)``; ``status`` is one of schema.STATUSES.

    ``gated_hint``: the repo's metadata says it is gated, so a 401/403 (even without ``X-Error-Code``)
    means "no access", not "no such repo".
    """
    inner = _cause(exc)
    code = _http_status(inner)
    reason = _short_error(inner)
    if isinstance(inner, GatedRepoError):  # before RepositoryNotFoundError: it is a subclass
        return "gated", reason
    if isinstance(inner, (OfflineModeIsEnabled, LocalEntryNotFoundError)):  # no network answer, not in cache
        return "error", "offline or unreachable, and config.json is not in the local cache: " + reason
    if isinstance(inner, DisabledRepoError):
        return "not_found", reason
    if code in (401, 403) and gated_hint:
        return "gated", reason
    if isinstance(inner, (RepositoryNotFoundError, RevisionNotFoundError, RemoteEntryNotFoundError)):
        return "not_found", reason
    if code in (401, 403):
        return "gated", reason
    if code == 404:
        return "not_found", reason
    if isinstance(inner, (*RETRY_EXCEPTIONS, HfHubHTTPError)):
        return "error", reason
    return "error", f"{type(inner).__name__}: {str(inner)[:_MAX_REASON]}"


# ------------------------------------------------------------------------------------------------
# records
# ------------------------------------------------------------------------------------------------


def _blank_record(model_id: str, *, status: str, reason: str, fetched_at: str | None) -> dict[str, Any]:
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


def _row_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    return {c: _jsonable(row.get(c)) for c in schema.COLUMN_NAMES}


# ------------------------------------------------------------------------------------------------
# selection
# ------------------------------------------------------------------------------------------------


def _clean_repo_id(raw: str) -> str:
    s = raw.strip()
    if s.startswith(("http://", "https://")):
        path = [p for p in urlsplit(s).path.split("/") if p]
        s = "/".join(path[:2])
    return s.strip("/")


def read_repos_file(path: str | os.PathLike) -> list[str]:
    """Repo ids from a text file: one per line (first whitespace-separated field), ``#`` starts a comment.

    Hub URLs (``https://huggingface.co/org/name``) are accepted. Raises ``OSError`` when unreadable.
    """
    out = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(_clean_repo_id(line.split()[0]))
    return out


# ------------------------------------------------------------------------------------------------
# summary
# ------------------------------------------------------------------------------------------------


@dataclass
class ScrapeSummary:
    """What a run did.

    Attributes
    ----------
    selected : repos in the selection (after de-duplication; invalid ids included).
    statuses : repos per outcome status of this run (``ok``, ``gated``, ``not_found``, ``invalid_json``,
        ``error``); unchanged repos count under their catalog status, resumed ones under the status
        they got in the killed run.
    configs_downloaded : ``hf_hub_download`` calls made (served from the network or the HF cache).
    unchanged : repos whose sha equalled the catalog's, so no config was fetched.
    resumed : repos taken from the journal of a killed run (no request made for them).
    kept_previous : repos whose re-fetch failed (or was not ``ok``) while the catalog held an ``ok`` row:
        that row was kept.
    retries : retry sleeps taken by this module (huggingface_hub's internal retries not counted).
    reasons : model_id -> reason, for every repo whose outcome is not ``ok``.
    invalid_ids : ids that are not valid Hub repo ids (counted as ``error``, not written).
    rows_written : rows of the catalog file after the run.
    """

    selected: int = 0
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(schema.STATUSES, 0))
    configs_downloaded: int = 0
    unchanged: int = 0
    resumed: int = 0
    kept_previous: int = 0
    retries: int = 0
    elapsed_s: float = 0.0
    catalog_path: str = ""
    rows_written: int = 0
    offline: bool = False
    reasons: dict[str, str] = field(default_factory=dict)
    invalid_ids: list[str] = field(default_factory=list)
    model_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def __str__(self) -> str:
        rate = self.selected / self.elapsed_s if self.elapsed_s > 0 else float("nan")
        lines = [
            f"scraped {self.selected} repos in {self.elapsed_s:.1f}s ({rate:.1f} repos/s)"
            + (" [offline]" if self.offline else ""),
            "  " + "  ".join(f"{k}={v}" for k, v in self.statuses.items()),
            f"  configs downloaded={self.configs_downloaded}  unchanged={self.unchanged}  resumed={self.resumed}"
            f"  kept_previous={self.kept_previous}  retries={self.retries}",
            f"  catalog: {self.catalog_path} ({self.rows_written} rows)",
        ]
        bad = [(m, r) for m, r in self.reasons.items()]
        for m, r in bad[:20]:
            lines.append(_printable(f"  - {m}: {r}"))
        if len(bad) > 20:
            lines.append(f"  ... and {len(bad) - 20} more (see the catalog's status_reason column)")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# the scraper
# ------------------------------------------------------------------------------------------------


@dataclass
class _Outcome:
    model_id: str
    status: str
    reason: str
    row: dict[str, Any]
    downloaded: bool = False
    unchanged: bool = False
    kept_previous: bool = False


class _SilentTqdm(tqdm):  # type: ignore[misc]
    """huggingface_hub's per-file byte bar, switched off (one bar per run is ours)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("name", None)
        kwargs["disable"] = True
        super().__init__(*args, **kwargs)


class _Journal:
    """Append-only JSON-lines file of finished repos; flushed on every line, fsynced at checkpoints."""

    def __init__(self, path: Path):
        self.path = path
        self._fh = None
        self._lock = threading.Lock()

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        entries = []
        with open(self.path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line torn by a kill
                if isinstance(e, dict) and isinstance(e.get("row"), dict) and isinstance(e.get("model_id"), str):
                    entries.append(e)
        return entries

    def append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._fh is None:
                self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
                if self._fh.tell() and not self._ends_with_newline():
                    self._fh.write("\n")  # seal a line torn by a kill
            self._fh.write(line)
            self._fh.flush()

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def sync(self) -> None:
        with self._lock:
            if self._fh is not None:
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def remove(self) -> None:
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


class _Scraper:
    def __init__(
        self,
        *,
        api: HfApi,
        endpoint: str | None,
        token: str | bool | None,
        cache_dir: str | None,
        timeout: float,
        refresh: bool,
        offline: bool,
        retrier: _Retrier,
        scrub: _Scrubber,
        old_rows: Mapping[str, dict[str, Any]],
    ):
        self.api = api
        self.endpoint = endpoint
        self.token = token
        self.cache_dir = cache_dir
        self.timeout = timeout
        self.refresh = refresh
        self.offline = offline
        self.retrier = retrier
        self.scrub = scrub
        self.old_rows = old_rows
        self._scan_lock = threading.Lock()
        self._cached_revisions: dict[str, str] | None = None

    # -- one repo ---------------------------------------------------------------------------------
    def fetch(self, model_id: str, listed: Any = None) -> _Outcome:
        """Never raises (except KeyboardInterrupt/SystemExit): every failure is an outcome."""
        try:
            return self._fetch(model_id, listed)
        except Exception as exc:  # noqa: BLE001 - last line of defence: one repo never stops the run
            status, reason = "error", f"unexpected {type(exc).__name__}: {str(exc)[:_MAX_REASON]}"
            logger.debug("unexpected error for %s", model_id, exc_info=True)
            return self._failed(model_id, status, reason, None)

    def _fetch(self, model_id: str, listed: Any) -> _Outcome:
        old = self.old_rows.get(model_id)
        if self.offline:
            return self._fetch_offline(model_id, old)

        info = listed if listed is not None and isinstance(getattr(listed, "sha", None), str) else None
        if info is None:
            try:
                info = self.retrier.call(
                    lambda: self.api.model_info(model_id, expand=_INFO_EXPAND, timeout=self.timeout),
                    f"{model_id} info",
                )
            except Exception as exc:  # noqa: BLE001
                status, reason = classify_error(exc)
                return self._failed(model_id, status, reason, None)
        meta = meta_columns(info)
        sha = meta["sha"]

        if (
            not self.refresh
            and old is not None
            and sha
            and old.get("sha") == sha
            and old.get("status") in _UNCHANGED_OK
        ):
            row = dict(old)
            row.update({k: v for k, v in meta.items() if v is not None})
            return _Outcome(model_id, str(old.get("status")), str(old.get("status_reason") or ""), row, unchanged=True)

        siblings = getattr(info, "siblings", None)
        if siblings is not None and not any(getattr(s, "rfilename", None) == "config.json" for s in siblings):
            return self._failed(model_id, "not_found", f"no config.json in the repo at {sha or 'main'}", meta)

        revision = sha if sha and _SHA_RE.match(sha) else None
        fetched_at = _utcnow()
        try:
            path = self.retrier.call(
                lambda: hf_hub_download(
                    model_id,
                    "config.json",
                    revision=revision,
                    cache_dir=self.cache_dir,
                    token=self.token,
                    endpoint=self.endpoint,
                    etag_timeout=self.timeout,
                    force_download=self.refresh,
                    tqdm_class=_SilentTqdm,
                ),
                f"{model_id} config.json",
                retryable=_download_retryable,
            )
        except Exception as exc:  # noqa: BLE001
            status, reason = classify_error(exc, gated_hint=bool(meta.get("gated")))
            return self._failed(model_id, status, reason, meta, downloaded=True)
        return self._parse(model_id, Path(path), meta, fetched_at, revision)

    def _fetch_offline(self, model_id: str, old: dict[str, Any] | None) -> _Outcome:
        """No request at all: the config of the catalog's sha, else of ``main``, else the newest cached snapshot."""
        revisions = [old.get("sha")] if old is not None and _SHA_RE.match(str(old.get("sha") or "")) else []
        revisions += ["main", self._newest_cached_revision(model_id)]
        path, last_exc = None, None
        for rev in dict.fromkeys(r for r in revisions if r):
            try:
                path = Path(
                    hf_hub_download(
                        model_id, "config.json", revision=rev, cache_dir=self.cache_dir, token=self.token,
                        endpoint=self.endpoint, local_files_only=True, tqdm_class=_SilentTqdm,
                    )
                )
                break
            except Exception as exc:  # noqa: BLE001
                last_exc = exc
        if path is None:
            why = _short_error(last_exc) if last_exc is not None else "no cached snapshot"
            return self._failed(
                model_id, "error", f"offline (HF_HUB_OFFLINE) and config.json is not in the local cache: {why}",
                None, downloaded=True,
            )
        sha = path.parent.name if _SHA_RE.match(path.parent.name) else None
        if not self.refresh and old is not None and sha and old.get("sha") == sha and old.get("status") in _UNCHANGED_OK:
            return _Outcome(model_id, str(old.get("status")), str(old.get("status_reason") or ""), dict(old), unchanged=True)
        meta = dict.fromkeys(META_COLUMNS)
        meta["sha"] = sha
        return self._parse(model_id, path, meta, _utcnow(), sha)

    def _newest_cached_revision(self, model_id: str) -> str | None:
        """Commit of the most recent cached snapshot of ``model_id`` holding config.json (``scan_cache_dir``)."""
        with self._scan_lock:
            if self._cached_revisions is None:
                self._cached_revisions = {}
                try:
                    info = huggingface_hub.scan_cache_dir(self.cache_dir)
                except Exception:  # noqa: BLE001 - no cache folder yet
                    info = None
                for repo in getattr(info, "repos", ()):
                    if repo.repo_type != "model":
                        continue
                    revs = [r for r in repo.revisions if any(f.file_name == "config.json" for f in r.files)]
                    if revs:
                        self._cached_revisions[repo.repo_id] = max(revs, key=lambda r: r.last_modified).commit_hash
            return self._cached_revisions.get(model_id)

    def _parse(self, model_id: str, path: Path, meta: dict[str, Any], fetched_at: str, revision: str | None) -> _Outcome:
        sha = meta.get("sha") or (path.parent.name if _SHA_RE.match(path.parent.name) else revision)
        try:
            size = path.stat().st_size
            if size > _MAX_CONFIG_BYTES:
                return self._failed(model_id, "invalid_json", f"config.json is {size} bytes (limit {_MAX_CONFIG_BYTES})",
                                    meta, downloaded=True)
            data = path.read_bytes()
        except OSError as exc:
            return self._failed(model_id, "error", f"cached config.json unreadable: {exc}", meta, downloaded=True)
        rec = normalize_config(data, model_id, source="hub", sha=sha, fetched_at=fetched_at)
        for k, v in meta.items():
            if k != "sha" and v is not None:
                rec[k] = v
        rec["sha"] = sha
        rec["source"] = "hub"
        status = rec.get("status") if rec.get("status") in schema.STATUSES else "error"
        reason = str(rec.get("status_reason") or "")
        return self._settle(model_id, status, reason, rec, meta, downloaded=True)

    def _failed(self, model_id: str, status: str, reason: str, meta: dict[str, Any] | None, *,
                downloaded: bool = False) -> _Outcome:
        rec = _blank_record(model_id, status=status, reason=reason, fetched_at=_utcnow())
        if meta:
            rec.update({k: v for k, v in meta.items() if v is not None})
        return self._settle(model_id, status, reason, rec, meta, downloaded=downloaded)

    def _settle(self, model_id: str, status: str, reason: str, rec: dict[str, Any], meta: dict[str, Any] | None, *,
                downloaded: bool) -> _Outcome:
        """Apply the keep rule (an ``ok`` row is replaced only by an ``ok`` row) and scrub secrets."""
        old = self.old_rows.get(model_id)
        reason = self.scrub(reason)
        if status != "ok" and old is not None and old.get("status") == "ok":
            row = dict(old)
            if meta:  # popularity and gating describe the repo now; sha stays that of the kept config
                row.update({k: meta[k] for k in _POPULARITY if meta.get(k) is not None})
            return _Outcome(model_id, status, reason, self.scrub.record(row), downloaded=downloaded, kept_previous=True)
        rec["status_reason"] = self.scrub(rec.get("status_reason") or "")
        return _Outcome(model_id, status, reason, self.scrub.record(rec), downloaded=downloaded)


# ------------------------------------------------------------------------------------------------
# one repo's config and quantization sidecars (``tp-planner check``)
# ------------------------------------------------------------------------------------------------


class FetchError(RuntimeError):
    """A repo's config.json could not be had: ``status`` (schema.STATUSES, or ``bad_id``) and a one-line,
    token-scrubbed, printable ``reason``."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class FetchedConfig:
    """``config.json`` bytes of a Hub repo, its quantization sidecars (``{file name: bytes}``, only those
    the repo has), the commit they were read at and whether the answer came from the cache alone."""

    repo_id: str
    config: bytes
    sidecars: dict[str, bytes]
    sha: str | None
    offline: bool


def _cached_revision(repo_id: str, cache_dir: str | None) -> str | None:
    """Newest cached snapshot of ``repo_id`` holding config.json (``scan_cache_dir``), or None."""
    try:
        info = huggingface_hub.scan_cache_dir(cache_dir)
    except Exception:  # noqa: BLE001 - no cache folder yet
        return None
    for repo in getattr(info, "repos", ()):
        if repo.repo_type == "model" and repo.repo_id == repo_id:
            revs = [r for r in repo.revisions if any(f.file_name == "config.json" for f in r.files)]
            if revs:
                return max(revs, key=lambda r: r.last_modified).commit_hash
    return None


def _read_capped(path: Path, name: str, max_bytes: int) -> bytes:
    size = path.stat().st_size
    if size > max_bytes:
        raise FetchError("invalid_json", f"{name} is {size} bytes (limit {max_bytes})")
    return path.read_bytes()


def fetch_config(repo_id: str, *, revision: str | None = None, endpoint: str | None = None,
                 token: str | bool | None = None, cache_dir: str | os.PathLike | None = None,
                 timeout: float = 10.0, max_bytes: int = 1 << 20, interactive: bool = False) -> FetchedConfig:
    """``config.json`` and the quantization sidecars (:data:`dashboard.catalog.QUANT_SIDECARS`) of one Hub
    repo, through huggingface_hub's cache (``HF_HOME``), ``HF_TOKEN``, ``HF_ENDPOINT`` and
    ``HF_HUB_OFFLINE`` as it defines them. Offline, only the cache is read (``revision``, else ``main``,
    else the newest cached snapshot). Files larger than ``max_bytes`` are refused.

    ``token``: as huggingface_hub defines it (``None``: ``HF_TOKEN`` or the stored login; ``False``: no
    token, an anonymous request; a string: that token).

    ``interactive=True`` (the dashboard's "Add a model"): each file is first asked for once with a ``HEAD``
    (:func:`huggingface_hub.get_hf_file_metadata` without retries, ``timeout`` seconds), so a Hub that is
    down or unreachable is reported after one attempt instead of huggingface_hub's own ~23 s of retries
    (``http_backoff``: 1 + 2 + 4 + 8 + 8 s); only a file the Hub just answered for is then downloaded,
    pinned to the commit it named. The cache never stands in for an answer the Hub refused or did not
    give, and ``HF_HUB_OFFLINE`` refuses at once (status ``unreachable``): a gated config cached with the
    operator's token is never served to an anonymous request.

    Raises :class:`FetchError` (never another exception) with a one-line reason: ``bad_id`` (not a repo
    id), ``not_found``, ``gated``, ``invalid_json`` (too large) or ``error`` (offline and not cached,
    network); with ``interactive=True`` ``unreachable`` for no answer (offline, connection refused,
    timeout).
    """
    from dashboard.catalog import QUANT_SIDECARS

    scrub = _Scrubber(_known_secrets(token))

    def fail(status: str, reason: str) -> FetchError:
        return FetchError(status, _printable(scrub(reason)).replace("\n", " ")[:_MAX_REASON])

    try:
        validate_repo_id(repo_id)
    except (HFValidationError, ValueError, TypeError) as exc:
        raise fail("bad_id", f"not a Hub repo id ({_short_error(exc)})") from None
    if revision is not None and not re.fullmatch(r"[\w.\-/]{1,200}", revision):
        raise fail("bad_id", "not a revision name")
    cache = str(cache_dir) if cache_dir is not None else None
    offline = hf_constants.is_offline_mode()
    common = dict(cache_dir=cache, token=token, endpoint=endpoint, tqdm_class=_SilentTqdm)
    if interactive:
        return _fetch_interactive(repo_id, revision, common, timeout, max_bytes, offline, fail)
    path: Path | None = None
    if offline:
        last: BaseException | None = None
        for rev in dict.fromkeys(r for r in (revision, "main", _cached_revision(repo_id, cache)) if r):
            try:
                path = Path(hf_hub_download(repo_id, "config.json", revision=rev, local_files_only=True, **common))
                break
            except Exception as exc:  # noqa: BLE001
                last = exc
        if path is None:
            where = cache or hf_constants.HF_HUB_CACHE
            raise fail("error", f"offline (HF_HUB_OFFLINE is set) and {repo_id}'s config.json is not in the "
                                f"Hugging Face cache ({where})")
    else:
        try:
            path = Path(hf_hub_download(repo_id, "config.json", revision=revision, etag_timeout=timeout, **common))
        except Exception as exc:  # noqa: BLE001
            status, reason = classify_error(exc)
            hint = "; set HF_TOKEN to a token with access to it" if status == "gated" else ""
            raise fail(status, f"{repo_id}: {status}: {reason}{hint}") from None
    sha = path.parent.name if _SHA_RE.match(path.parent.name) else revision
    try:
        data = _read_capped(path, "config.json", max_bytes)
    except OSError as exc:
        raise fail("error", f"cached config.json unreadable: {exc}") from None
    sidecars: dict[str, bytes] = {}
    for name in QUANT_SIDECARS:
        try:
            p = Path(hf_hub_download(repo_id, name, revision=sha or revision, local_files_only=offline,
                                     **({} if offline else {"etag_timeout": timeout}), **common))
            sidecars[name] = _read_capped(p, name, max_bytes)
        except FetchError:
            continue  # an oversized sidecar is ignored, as the catalog does
        except Exception:  # noqa: BLE001 - absent (404 / not cached) or unreadable: no sidecar
            continue
    return FetchedConfig(repo_id, data, sidecars, sha if sha and _SHA_RE.match(sha) else None, offline)


def _no_answer(exc: BaseException) -> bool:
    """True when the Hub gave no HTTP answer at all (connection refused, DNS, timeout, offline mode)."""
    inner = _cause(exc)
    return isinstance(inner, (*RETRY_EXCEPTIONS, OfflineModeIsEnabled, LocalEntryNotFoundError))


def _fetch_interactive(repo_id: str, revision: str | None, common: dict[str, Any], timeout: float,
                       max_bytes: int, offline: bool, fail: Callable[[str, str], FetchError]) -> FetchedConfig:
    """:func:`fetch_config` with ``interactive=True``: one ``HEAD`` per file (no retries), then the download
    pinned to the commit the ``HEAD`` named."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    from dashboard.catalog import QUANT_SIDECARS

    if offline:
        raise fail("unreachable", "the server is offline (HF_HUB_OFFLINE is set), so it cannot ask the Hub")
    endpoint, token = common["endpoint"], common["token"]

    def head(name: str, rev: str | None):
        url = hf_hub_url(repo_id, name, revision=rev, endpoint=endpoint)
        return get_hf_file_metadata(url, token=token, timeout=timeout, endpoint=endpoint, retry_on_errors=False)

    try:
        meta = head("config.json", revision)
    except Exception as exc:  # noqa: BLE001
        if _no_answer(exc):
            raise fail("unreachable", f"{repo_id}: the Hub did not answer ({_short_error(_cause(exc))})") from None
        status, reason = classify_error(exc)
        raise fail(status, f"{repo_id}: {status}: {reason}") from None
    sha = meta.commit_hash if meta.commit_hash and _SHA_RE.match(meta.commit_hash) else None
    if meta.size is not None and meta.size > max_bytes:
        raise fail("invalid_json", f"{repo_id}: config.json is {meta.size} bytes (limit {max_bytes})")

    def download(name: str) -> bytes:
        p = Path(hf_hub_download(repo_id, name, revision=sha or revision, etag_timeout=timeout, **common))
        return _read_capped(p, name, max_bytes)

    try:
        data = download("config.json")
    except FetchError as exc:
        raise fail(exc.status, f"{repo_id}: {exc.reason}") from None
    except Exception as exc:  # noqa: BLE001
        if _no_answer(exc):
            raise fail("unreachable", f"{repo_id}: the Hub did not answer ({_short_error(_cause(exc))})") from None
        status, reason = classify_error(exc)
        raise fail(status, f"{repo_id}: {status}: {reason}") from None
    sidecars: dict[str, bytes] = {}
    for name in QUANT_SIDECARS:
        try:
            head(name, sha or revision)
            sidecars[name] = download(name)
        except Exception:  # noqa: BLE001 - absent (404), oversized or no answer: no sidecar, as the catalog does
            continue
    return FetchedConfig(repo_id, data, sidecars, sha, False)


def _lock_path(catalog: Path) -> str:
    """Lock file for a catalog: in the temp folder (keeps data/ clean), named after the catalog's real path."""
    key = hashlib.sha1(str(catalog.resolve()).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"tp-planner-scrape-{key}.lock")


def _load_base_catalog(path: Path) -> pd.DataFrame:
    if not path.exists():
        return catalog_from_records([])
    try:
        return load_catalog(path)
    except Exception as exc:  # noqa: BLE001 - never overwrite a catalog we cannot read
        raise ScrapeError(
            f"the catalog {path} exists but cannot be read ({type(exc).__name__}: {exc}); "
            "refusing to overwrite it: move it away or pass --catalog"
        ) from exc


def _select(
    api: HfApi,
    retrier: _Retrier,
    *,
    repo_ids: Sequence[str],
    repos_file: str | os.PathLike | None,
    author: str | None,
    search: str | None,
    pipeline_tag: str | None,
    sort: str | None,
    limit: int | None,
    offline: bool,
) -> tuple[list[str], dict[str, Any]]:
    ids = [_clean_repo_id(r) for r in repo_ids if isinstance(r, str) and r.strip()]
    if repos_file is not None:
        try:
            ids += read_repos_file(repos_file)
        except OSError as exc:
            raise ScrapeError(f"cannot read --repos-file {repos_file}: {exc}") from exc
    listed: dict[str, Any] = {}
    query = any(v is not None for v in (author, search, pipeline_tag)) or (not ids and (sort or limit))
    if sort is not None and sort not in SORTS:
        raise ScrapeError(f"--sort must be one of {', '.join(SORTS)}, not {sort!r}")
    if limit is not None and limit < 1:
        raise ScrapeError("--limit must be >= 1")
    if query:
        if offline:
            raise ScrapeError("HF_HUB_OFFLINE is set: a Hub query (--author/--search/--pipeline-tag) needs the network; "
                              "pass repo ids instead")

        def _list() -> list[Any]:
            return list(
                api.list_models(
                    author=author, search=search, pipeline_tag=pipeline_tag,
                    sort=SORTS[sort] if sort else None, limit=limit, expand=_LIST_EXPAND,  # type: ignore[arg-type]
                )
            )

        try:
            models = retrier.call(_list, "list_models")
        except Exception as exc:  # noqa: BLE001
            raise ScrapeError(f"listing models failed: {_short_error(exc)}") from exc
        for m in models:
            if isinstance(getattr(m, "id", None), str):
                listed.setdefault(m.id, m)
                ids.append(m.id)
    if not ids:
        raise ScrapeError("nothing selected: give repo ids, --repos-file, or a query (--author/--search/--pipeline-tag)")
    return list(dict.fromkeys(ids)), listed


def scrape(
    repo_ids: Sequence[str] | str = (),
    *,
    repos_file: str | os.PathLike | None = None,
    author: str | None = None,
    search: str | None = None,
    pipeline_tag: str | None = None,
    sort: str | None = None,
    limit: int | None = None,
    workers: int = 8,
    refresh: bool = False,
    catalog_path: str | os.PathLike | None = None,
    timeout: float = 10.0,
    max_retries: int = 5,
    backoff_base: float = 1.0,
    backoff_max: float = 60.0,
    retry_after_max: float = 300.0,
    checkpoint_every: float = 10.0,
    endpoint: str | None = None,
    token: str | bool | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, ScrapeSummary]:
    """Scrape repos' ``config.json`` and metadata into the catalog file; returns ``(catalog, summary)``.

    Parameters
    ----------
    repo_ids : explicit Hub repo ids (``org/name``; a single string is one id).
    repos_file : text file of repo ids, one per line.
    author, search, pipeline_tag, sort, limit : a Hub query through ``HfApi.list_models``; ``sort`` is
        ``downloads``, ``likes`` or ``trending`` (descending), ``limit`` caps the listing.
    workers : threads fetching repos concurrently (>= 1).
    refresh : download every config even when the catalog's sha is unchanged.
    catalog_path : parquet file read, merged into and written (default: the shipped
        :func:`dashboard.catalog.default_catalog_path`).
    timeout : seconds for ``model_info`` and the download's HEAD (see the module docstring).
    max_retries, backoff_base, backoff_max, retry_after_max : :class:`RetryPolicy` (seconds).
    checkpoint_every : seconds between atomic rewrites of the catalog during the run.
    endpoint, token, cache_dir : passed to huggingface_hub; None = its defaults (``HF_ENDPOINT``,
        ``HF_TOKEN`` / stored login, ``HF_HOME``).
    progress : show a tqdm bar on stderr.

    Returns
    -------
    (DataFrame, ScrapeSummary) : the whole merged catalog as written (schema dtypes, sorted by
        model_id), and what the run did.

    Raises
    ------
    ScrapeError : nothing selected, bad arguments, listing failed after retries, the existing catalog is
        unreadable, or another scrape holds the catalog's lock. Per-repo failures never raise: they are
        rows with a status.
    """
    t0 = time.monotonic()
    if isinstance(repo_ids, str):
        repo_ids = [repo_ids]
    if workers < 1:
        raise ScrapeError("--workers must be >= 1")
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise ScrapeError(f"--timeout must be a number of seconds > 0, not {timeout!r}")
    if max_retries < 0:
        raise ScrapeError(f"--max-retries must be >= 0, not {max_retries!r}")
    path = Path(catalog_path) if catalog_path is not None else default_catalog_path()
    if path.is_dir():
        raise ScrapeError(f"--catalog {path} is a directory: give the parquet file to read and write")
    try:  # before any request: a catalog we could not write would lose the whole run's work
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScrapeError(f"cannot create the catalog's folder {path.parent}: {exc}") from exc
    offline = hf_constants.is_offline_mode()
    scrub = _Scrubber(_known_secrets(token))
    retrier = _Retrier(RetryPolicy(max_retries, backoff_base, backoff_max, retry_after_max))
    api = HfApi(endpoint=endpoint, token=token)
    summary = ScrapeSummary(catalog_path=str(path), offline=offline)

    lock = FileLock(_lock_path(path))
    try:
        lock.acquire(timeout=0)
    except FileLockTimeout as exc:
        raise ScrapeError(f"another scrape is writing {path} (lock {lock.lock_file} is held)") from exc
    try:
        base = _load_base_catalog(path)
        journal = _Journal(path.with_name(path.name + ".journal.jsonl"))
        replay = journal.read()
        done: dict[str, dict[str, Any]] = {}
        for e in replay:  # last entry per repo wins
            done[e["model_id"]] = e
        if replay:
            logger.warning("resuming: %d repos from the journal of an interrupted run", len(done))
            base = merge_catalog(base, catalog_from_records([e["row"] for e in done.values()]))
            write_catalog(base, path)
        old_rows = {r["model_id"]: _row_dict(r) for r in base.to_dict("records")}

        ids, listed = _select(
            api, retrier, repo_ids=repo_ids, repos_file=repos_file, author=author, search=search,
            pipeline_tag=pipeline_tag, sort=sort, limit=limit, offline=offline,
        )
        summary.selected = len(ids)
        summary.model_ids = list(ids)
        todo: list[str] = []
        for mid in ids:
            try:
                validate_repo_id(mid)
            except HFValidationError as exc:
                summary.invalid_ids.append(mid)
                summary.statuses["error"] += 1
                summary.reasons[mid] = scrub(f"invalid repo id: {str(exc).splitlines()[0][:_MAX_REASON]}")
                continue
            if mid in done:
                e = done[mid]
                st = e.get("status") if e.get("status") in schema.STATUSES else "error"
                summary.statuses[st] += 1
                summary.resumed += 1
                if st != "ok":
                    summary.reasons[mid] = str(e.get("reason") or "")
                continue
            todo.append(mid)

        scraper = _Scraper(
            api=api, endpoint=endpoint, token=token, cache_dir=str(cache_dir) if cache_dir is not None else None,
            timeout=timeout, refresh=refresh, offline=offline, retrier=retrier, scrub=scrub, old_rows=old_rows,
        )
        rows: dict[str, dict[str, Any]] = {}
        last_ckpt = time.monotonic()

        def checkpoint() -> pd.DataFrame:
            journal.sync()
            merged = merge_catalog(base, catalog_from_records(list(rows.values()))) if rows else base
            write_catalog(merged, path)
            return merged

        bar = tqdm(total=len(ids), initial=len(ids) - len(todo), desc="scrape", unit="repo",
                   disable=not progress, file=sys.stderr, dynamic_ncols=True)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hub")
        try:
            pending: set[Future[_Outcome]] = {pool.submit(scraper.fetch, mid, listed.get(mid)) for mid in todo}
            while pending:
                finished, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                for fut in finished:
                    out = fut.result()
                    journal.append({"model_id": out.model_id, "status": out.status, "reason": out.reason,
                                    "row": out.row})
                    rows[out.model_id] = out.row
                    summary.statuses[out.status if out.status in schema.STATUSES else "error"] += 1
                    summary.configs_downloaded += out.downloaded
                    summary.unchanged += out.unchanged
                    summary.kept_previous += out.kept_previous
                    if out.status != "ok":
                        summary.reasons[out.model_id] = out.reason
                    bar.update(1)
                if progress:
                    bar.set_postfix({k: v for k, v in summary.statuses.items() if v}, refresh=False)
                if time.monotonic() - last_ckpt >= checkpoint_every:
                    checkpoint()
                    last_ckpt = time.monotonic()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            try:  # keep what finished; the journal has it too
                checkpoint()
            finally:
                journal.close()
                bar.close()
            raise
        pool.shutdown(wait=True)
        bar.close()
        merged = checkpoint()
        journal.remove()
    finally:
        lock.release()
    summary.retries = retrier.retries
    summary.rows_written = len(merged)
    summary.elapsed_s = time.monotonic() - t0
    return merged, summary


# ------------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------------


def _build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m dashboard.hub",
        description="Scrape config.json files and metadata from the Hugging Face Hub into the catalog.",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scrape", help="fetch repos' config.json + metadata and merge them into the catalog",
                       description=(__doc__ or "").split("\n\n")[0])
    s.add_argument("repo_ids", nargs="*", metavar="REPO_ID", help="Hub repo ids (org/name)")
    s.add_argument("--repos-file", help="text file of repo ids, one per line (# comments)")
    s.add_argument("--author", help="Hub query: models of this user/organisation")
    s.add_argument("--search", help="Hub query: substring of the repo id")
    s.add_argument("--pipeline-tag", help="Hub query: e.g. text-generation, image-text-to-text")
    s.add_argument("--sort", choices=sorted(SORTS), help="Hub query order (descending)")
    s.add_argument("--limit", type=int, help="Hub query: at most N models")
    s.add_argument("--workers", type=int, default=8, help="concurrent repos (default 8)")
    s.add_argument("--refresh", action="store_true", help="download configs even when the sha is unchanged")
    s.add_argument("--catalog", help=f"catalog parquet to merge into (default {default_catalog_path()})")
    s.add_argument("--timeout", type=float, default=10.0, help="seconds per metadata request / HEAD (default 10)")
    s.add_argument("--max-retries", type=int, default=5, help="retries on 429/5xx/timeouts (default 5)")
    s.add_argument("--backoff-base", type=float, default=1.0, help="first backoff sleep in seconds (default 1)")
    s.add_argument("--checkpoint-every", type=float, default=10.0, help="seconds between catalog rewrites")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("-v", "--verbose", action="store_true", help="log retries and details")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m dashboard.hub``. Exit status: 0 done (whatever the per-repo statuses),
    2 the run could not start (bad arguments, listing failed, catalog unreadable or locked), 130 interrupted."""
    args = _build_parser().parse_args(argv)
    scrub = _Scrubber(_known_secrets(None))
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_ScrubFilter(scrub))
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO if args.verbose else logging.WARNING)
    if not args.verbose:  # huggingface_hub warns on every retried request: our summary says it once
        logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    try:
        _, summary = scrape(
            args.repo_ids, repos_file=args.repos_file, author=args.author, search=args.search,
            pipeline_tag=args.pipeline_tag, sort=args.sort, limit=args.limit, workers=args.workers,
            refresh=args.refresh, catalog_path=args.catalog, timeout=args.timeout, max_retries=args.max_retries,
            backoff_base=args.backoff_base, checkpoint_every=args.checkpoint_every, progress=not args.no_progress,
        )
    except ScrapeError as exc:
        print(scrub(f"error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished repos are saved; run the same command again to finish the rest",
              file=sys.stderr)
        return 130
    print(scrub(str(summary)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
