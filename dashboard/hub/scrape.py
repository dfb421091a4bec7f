"""The scrape: select repos (ids, a file, a Hub query), fetch metadata and ``config.json`` in a bounded
thread pool, normalize, and merge into the catalog incrementally, with a journal, checkpoints and a file
lock so a killed run resumes (:func:`scrape`, :class:`ScrapeSummary`; the whole story is in
:mod:`dashboard.hub`).
"""

from __future__ import annotations

import logging
import hashlib
import json
import math
import os
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
from filelock import FileLock, Timeout as FileLockTimeout
from tqdm.auto import tqdm
import huggingface_hub
from huggingface_hub import HfApi, constants as hf_constants, hf_hub_download
from huggingface_hub.utils import validate_repo_id
from huggingface_hub.errors import HFValidationError

from dashboard import schema
from dashboard.atomic import check_writable
from dashboard.catalog import (
    catalog_from_records,
    default_catalog_path,
    load_catalog,
    merge_catalog,
    normalize_config,
    write_catalog,
)
from dashboard.hub.scrub import known_secrets, printable_text, Scrubber
from dashboard.hub.retry import capped_retryable, classify_error, MAX_REASON, Retrier, RetryPolicy, short_error
from dashboard.hub.rows import blank_record, META_COLUMNS, meta_columns, POPULARITY_COLUMNS, row_dict, SHA_RE, utcnow
from dashboard.hub.fetch import download_capped, FetchError, MAX_CONFIG_BYTES, SilentTqdm

logger = logging.getLogger("dashboard.hub")


#: ``--sort`` values -> ``HfApi.list_models(sort=...)``.
SORTS: dict[str, str] = {"downloads": "downloads", "likes": "likes", "trending": "trending_score"}
#: Statuses for which an unchanged sha means nothing to download.
_UNCHANGED_OK = frozenset({"ok", "invalid_json", "not_found"})
_INFO_EXPAND = ["sha", "lastModified", "downloads", "likes", "gated", "safetensors", "siblings"]
_LIST_EXPAND = ["sha", "lastModified", "downloads", "likes", "gated", "safetensors"]


class ScrapeError(RuntimeError):
    """The run cannot start or select repos (bad arguments, listing failed, catalog unreadable, locked)."""


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
            lines.append(printable_text(f"  - {m}: {r}"))
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
        # ASCII: a string UTF-8 cannot encode (a lone surrogate) is written as its \\u escape instead of
        # failing the write; the replay quarantines such a row (dashboard.catalog.frame.quarantine)
        line = json.dumps(entry, ensure_ascii=True, default=str) + "\n"
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


def _replayable(entry: dict[str, Any]) -> dict[str, Any]:
    """A journal entry whose row the catalog takes (:func:`catalog_from_records` quarantines a lone
    surrogate itself), else the entry quarantined: an ``error`` row with the reason, so one poisoned line
    never blocks a resumed run (the repo is fetched again by the next run that has no journal)."""
    mid = entry["model_id"]
    try:
        catalog_from_records([entry["row"]])
        if entry["row"].get("model_id") != mid:
            raise ValueError("the row names another model")
        return entry
    except Exception as exc:  # noqa: BLE001 - any row the catalog cannot take
        reason = f"quarantined journal entry: {type(exc).__name__}: {str(exc)[:200]}"
        logger.warning("%s: %s", printable_text(mid), reason)
        return {"model_id": mid, "status": "error", "reason": reason,
                "row": blank_record(mid, status="error", reason=reason, fetched_at=utcnow())}


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
        retrier: Retrier,
        scrub: Scrubber,
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
        """Never raises (except KeyboardInterrupt/SystemExit): every failure is an outcome. A repo whose
        requests were retried says so in its row: ``parse_notes`` (an ``ok`` row) or ``status_reason``
        (a failed one) ends with ``N retries in M requests (first: <error>)``."""
        self.retrier.start_item()
        try:
            out = self._fetch(model_id, listed)
        except Exception as exc:  # noqa: BLE001 - last line of defence: one repo never stops the run
            status, reason = "error", f"unexpected {type(exc).__name__}: {str(exc)[:MAX_REASON]}"
            logger.debug("unexpected error for %s", model_id, exc_info=True)
            out = self._failed(model_id, status, reason, None)
        return self._with_attempts(out)

    def _with_attempts(self, out: _Outcome) -> _Outcome:
        attempts, errors = self.retrier.item_attempts()
        if not errors:
            return out
        n = len(errors)
        what = self.scrub(printable_text(f"{n} {'retry' if n == 1 else 'retries'} in {attempts} requests "
                                         f"(first: {errors[0]})"))
        row = dict(out.row)
        if out.kept_previous or out.unchanged:
            return out
        if out.status == "ok":
            notes = str(row.get("parse_notes") or "")
            row["parse_notes"] = f"{notes}; {what}" if notes else what
            return _Outcome(out.model_id, out.status, out.reason, row, out.downloaded)
        reason = f"{out.reason} {what}".strip()[:MAX_REASON + 120]
        row["status_reason"] = reason
        return _Outcome(out.model_id, out.status, reason, row, out.downloaded)

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

        revision = sha if sha and SHA_RE.match(sha) else None
        fetched_at = utcnow()
        try:  # size-capped before the bytes arrive (the HEAD's size, then a capped streamed read)
            data, commit = self.retrier.call(
                lambda: download_capped(
                    model_id, "config.json", revision=revision, endpoint=self.endpoint, token=self.token,
                    cache_dir=self.cache_dir, timeout=self.timeout, max_bytes=MAX_CONFIG_BYTES, force=self.refresh,
                    retry_head=False,  # retried here: counted, with this run's backoff and Retry-After gate
                ),
                f"{model_id} config.json",
                retryable=capped_retryable,
            )
        except FetchError as exc:
            return self._failed(model_id, exc.status, exc.reason, meta, downloaded=True)
        except Exception as exc:  # noqa: BLE001
            status, reason = classify_error(exc, gated_hint=bool(meta.get("gated")))
            return self._failed(model_id, status, reason, meta, downloaded=True)
        return self._parse_bytes(model_id, data, meta, fetched_at, revision or commit)

    def _fetch_offline(self, model_id: str, old: dict[str, Any] | None) -> _Outcome:
        """No request at all: the config of the catalog's sha, else of ``main``, else the newest cached snapshot."""
        revisions = [old.get("sha")] if old is not None and SHA_RE.match(str(old.get("sha") or "")) else []
        revisions += ["main", self._newest_cached_revision(model_id)]
        path, last_exc = None, None
        for rev in dict.fromkeys(r for r in revisions if r):
            try:
                path = Path(
                    hf_hub_download(
                        model_id, "config.json", revision=rev, cache_dir=self.cache_dir, token=self.token,
                        endpoint=self.endpoint, local_files_only=True, tqdm_class=SilentTqdm,
                    )
                )
                break
            except Exception as exc:  # noqa: BLE001
                last_exc = exc
        if path is None:
            why = short_error(last_exc) if last_exc is not None else "no cached snapshot"
            return self._failed(
                model_id, "error", f"offline (HF_HUB_OFFLINE) and config.json is not in the local cache: {why}",
                None, downloaded=True,
            )
        sha = path.parent.name if SHA_RE.match(path.parent.name) else None
        if not self.refresh and old is not None and sha and old.get("sha") == sha and old.get("status") in _UNCHANGED_OK:
            return _Outcome(model_id, str(old.get("status")), str(old.get("status_reason") or ""), dict(old), unchanged=True)
        meta = dict.fromkeys(META_COLUMNS)
        meta["sha"] = sha
        return self._parse(model_id, path, meta, utcnow(), sha)

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
        sha = meta.get("sha") or (path.parent.name if SHA_RE.match(path.parent.name) else revision)
        try:
            size = path.stat().st_size
            if size > MAX_CONFIG_BYTES:
                return self._failed(model_id, "invalid_json", f"config.json is {size} bytes (limit {MAX_CONFIG_BYTES})",
                                    meta, downloaded=True)
            data = path.read_bytes()
        except OSError as exc:
            return self._failed(model_id, "error", f"cached config.json unreadable: {exc}", meta, downloaded=True)
        return self._parse_bytes(model_id, data, meta, fetched_at, sha)

    def _parse_bytes(self, model_id: str, data: bytes, meta: dict[str, Any], fetched_at: str,
                     sha: str | None) -> _Outcome:
        sha = meta.get("sha") or sha
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
        rec = blank_record(model_id, status=status, reason=reason, fetched_at=utcnow())
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
                row.update({k: meta[k] for k in POPULARITY_COLUMNS if meta.get(k) is not None})
            return _Outcome(model_id, status, reason, self.scrub.record(row), downloaded=downloaded, kept_previous=True)
        rec["status_reason"] = self.scrub(rec.get("status_reason") or "")
        return _Outcome(model_id, status, reason, self.scrub.record(rec), downloaded=downloaded)


def lock_path(catalog: Path) -> str:
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
    retrier: Retrier,
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
            raise ScrapeError(f"listing models failed: {short_error(exc)}") from exc
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
    try:  # a read-only or full folder is refused now, not after the whole run's network work
        need = 2 * path.stat().st_size if path.is_file() else 0  # the rewrite sits beside the old file
        check_writable(path.parent, need)
    except OSError as exc:
        raise ScrapeError(f"cannot write the catalog's folder {path.parent}: {exc.strerror or exc}; nothing was "
                          "fetched: give a writable --catalog path") from exc
    offline = hf_constants.is_offline_mode()
    scrub = Scrubber(known_secrets(token))
    retrier = Retrier(RetryPolicy(max_retries, backoff_base, backoff_max, retry_after_max))
    api = HfApi(endpoint=endpoint, token=token)
    summary = ScrapeSummary(catalog_path=str(path), offline=offline)

    lock = FileLock(lock_path(path))
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
            for mid, e in list(done.items()):
                done[mid] = _replayable(e)
            base = merge_catalog(base, catalog_from_records([e["row"] for e in done.values()]))
            write_catalog(base, path)
        old_rows = {r["model_id"]: row_dict(r) for r in base.to_dict("records")}

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
                summary.reasons[mid] = scrub(f"invalid repo id: {str(exc).splitlines()[0][:MAX_REASON]}")
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
