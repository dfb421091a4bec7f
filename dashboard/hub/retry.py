"""Retries around huggingface_hub's own calls: which failures are worth retrying (:data:`RETRY_STATUSES`,
:data:`RETRY_EXCEPTIONS`), ``Retry-After`` parsing, exponential backoff with jitter shared by the
workers (:class:`RetryPolicy`, :class:`Retrier`), and the one-status-per-repo classification of an
exception (:func:`classify_error`). How these wrap huggingface_hub's timeouts: :mod:`dashboard.hub`.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from huggingface_hub.errors import (
    DisabledRepoError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
try:  # huggingface_hub 2.x sends through httpx2; 1.x through httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover
    import httpx as _httpx

from dashboard.hub.scrub import URL_QUERY

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
MAX_REASON = 300


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


def download_retryable(exc: BaseException) -> bool:
    """Errors of ``hf_hub_download`` that huggingface_hub did not already retry itself.

    * ``LocalEntryNotFoundError``: the HEAD failed *after* huggingface_hub's own retries -> final.
    * A transport error raised bare (``ReadError`` from a connection reset, ``RemoteProtocolError`` from a
      connection closed before the whole answer): huggingface_hub did not retry it -> retry.
    * ``ValueError`` from a HEAD error under ``force_download`` (no internal retry there) -> retry if
      that error is retryable.
    * ``HfHubHTTPError`` 5xx on the GET (huggingface_hub retries only 408/429 there) -> retry.
    """
    if isinstance(exc, LocalEntryNotFoundError):
        return False
    if isinstance(exc, RETRY_EXCEPTIONS):  # raised bare: a reset or an early close huggingface_hub did not retry
        return True
    inner = root_cause(exc)
    if inner is not exc:
        return _is_retryable(inner)
    return isinstance(exc, HfHubHTTPError) and (_http_status(exc) or 0) >= 500 and _http_status(exc) in RETRY_STATUSES


def capped_retryable(exc: BaseException) -> bool:
    """Errors of :func:`dashboard.hub.fetch.download_capped` (its ``HEAD`` sent without huggingface_hub's
    retries) worth retrying here: 408/429/5xx and transport errors (timeouts, resets, early closes). A
    refusal of the file itself (too large, short) is final."""
    return _is_retryable(root_cause(exc))


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


class Retrier:
    """Calls with retries under one :class:`RetryPolicy`, shared by the workers of a run: backoff with jitter,
    ``Retry-After`` honoured, and a 429 pauses every worker until it has run out."""

    def __init__(self, policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep):
        self.policy = policy
        self.sleep = sleep
        self.gate = _Gate()
        self.retries = 0
        self._lock = threading.Lock()
        self._local = threading.local()

    def start_item(self) -> None:
        """Start counting this thread's attempts and retried errors afresh (one repo of a scrape)."""
        self._local.attempts = 0
        self._local.errors = []

    def item_attempts(self) -> tuple[int, list[str]]:
        """Requests made by this thread's :meth:`call` since :meth:`start_item`, and the errors retried."""
        return getattr(self._local, "attempts", 0), list(getattr(self._local, "errors", []))

    def call(self, fn: Callable[[], T], what: str, retryable: Callable[[BaseException], bool] = _is_retryable) -> T:
        attempt = 0
        while True:
            self.gate.wait(self.sleep)
            self._local.attempts = getattr(self._local, "attempts", 0) + 1
            try:
                return fn()
            except Exception as exc:
                if not retryable(exc) or attempt >= self.policy.max_retries:
                    raise
                if not hasattr(self._local, "errors"):
                    self._local.errors = []
                self._local.errors.append(short_error(exc)[:120])
                ra = _retry_after(exc)
                delay = self.policy.delay(attempt, ra)
                if _http_status(exc) == 429 and ra is not None:
                    self.gate.pause(delay)
                with self._lock:
                    self.retries += 1
                logger.info("%s: %s; retry %d/%d in %.2fs", what, short_error(exc), attempt + 1,
                            self.policy.max_retries, delay)
                self.sleep(delay)
                attempt += 1


# ------------------------------------------------------------------------------------------------
# errors -> status
# ------------------------------------------------------------------------------------------------


_BOILERPLATE = ("For more information", "Please make sure", "If you are trying", "For more details", "Make sure your")


def short_error(exc: BaseException) -> str:
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
    gist = URL_QUERY.sub(r"\1", gist)  # drop ?expand=... noise from URLs
    if code is not None and not gist.startswith(str(code)):
        gist = f"HTTP {code}: {gist}"
    if isinstance(exc, RETRY_EXCEPTIONS):
        gist = f"{type(exc).__name__}: {gist}"
    return gist[:MAX_REASON]


def root_cause(exc: BaseException) -> BaseException:
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
    inner = root_cause(exc)
    code = _http_status(inner)
    reason = short_error(inner)
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
    return "error", f"{type(inner).__name__}: {str(inner)[:MAX_REASON]}"
