""""Add a model" in the dashboard: a Hub id or an uploaded ``config.json`` turned into a catalog row that
joins one session's catalog. No Panel; the Hub is reached only through :func:`dashboard.hub.fetch_config`.

* :func:`record_from_config` -- raw ``config.json`` bytes -> :class:`AddOutcome` holding the catalog row
  (:func:`dashboard.catalog.normalize_config`, the code that builds the shipped catalog) or the plain-text
  reason it cannot be used (not JSON, not a JSON object, not a transformer config the normalizer can
  read, larger than :data:`MAX_CONFIG_BYTES`).
* :func:`fetch_hub_model` -- a Hub id -> :class:`AddOutcome`, fetched with
  ``fetch_config(interactive=True)`` (one attempt per file, :data:`HUB_TIMEOUT_S` seconds each, so the page
  answers within seconds when the Hub is down) and **anonymously** unless the operator set
  :data:`TOKEN_ENV` to ``1`` (then huggingface_hub's ``HF_TOKEN`` / stored login is sent): a shared link
  cannot read a gated config through the server's token.
* :func:`upload_model_id` -- the id an uploaded config is shown under (``(upload)/<name>``: the
  parentheses make it impossible to mistake for a Hub id, and a link carrying it says so).
* :class:`RateLimiter` -- at most :data:`RATE_LIMIT_FETCHES` Hub fetches per :data:`RATE_LIMIT_WINDOW_S`
  seconds per session.

The extended catalog itself is :meth:`dashboard.state.AppData.with_models`: only the added rows' validity
grid is computed; the process-wide catalog and its grids are shared, never modified.
"""

from __future__ import annotations

import collections
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dashboard.catalog import normalize_config

#: Largest ``config.json`` accepted, uploaded or fetched (bytes; 1 MiB, the CLI's cap). The largest real
#: config in ../shared/hub-configs is under 40 KiB.
MAX_CONFIG_BYTES = 1 << 20
#: Seconds one Hub request of "Add a model" may take (each file: one ``HEAD``, then the download).
HUB_TIMEOUT_S = 4.0
#: Hub fetches one session may start per :data:`RATE_LIMIT_WINDOW_S` seconds (links included).
RATE_LIMIT_FETCHES = 6
RATE_LIMIT_WINDOW_S = 60.0
#: Most models one session may add (Hub ids and uploads together).
MAX_ADDED_MODELS = 50
#: Environment variable: ``1`` lets the dashboard send the server's Hugging Face token (``HF_TOKEN`` or
#: the stored login) when it fetches a config; anything else (the default): anonymous requests.
TOKEN_ENV = "TP_PLANNER_HUB_TOKEN"
#: Organisation part of the ids of uploaded configs (not a valid Hub organisation name).
UPLOAD_ORG = "(upload)"

_NAME_OK = re.compile(r"[^A-Za-z0-9._-]+")
#: A Hub model repo id as huggingface_hub's ``validate_repo_id`` accepts it, with the organisation
#: required (``org/name``): letters, digits, ``-``, ``_``, ``.``; no ``--`` or ``..``; not starting or
#: ending with ``-`` or ``.``; at most 96 characters per part.
_REPO_PART = r"(?![-.])(?!.*(--|\.\.))[A-Za-z0-9_.\-]{1,96}(?<![-.])"
_REPO_ID = re.compile(rf"{_REPO_PART}/{_REPO_PART}")


def is_hub_id(text: str) -> bool:
    """True when ``text`` is an ``org/name`` Hub model id (see ``_REPO_ID``)."""
    return isinstance(text, str) and len(text) <= 200 and bool(_REPO_ID.fullmatch(text))


def hub_token_opt_in(environ: Mapping[str, str] | None = None) -> bool:
    """True when the operator set :data:`TOKEN_ENV` to ``1`` / ``true`` / ``yes`` / ``on``."""
    env = os.environ if environ is None else environ
    return str(env.get(TOKEN_ENV, "")).strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class AddOutcome:
    """What adding one model gave.

    Attributes
    ----------
    ok : bool
        True when :attr:`record` is a usable catalog row (``status == "ok"``).
    model_id : str
        The id the row has (or would have had).
    kind : str
        ``added``; or why not: ``bad_id``, ``too_large``, ``invalid_json``, ``not_config`` (the normalizer
        cannot read it as a transformer config), ``not_found``, ``gated``, ``unreachable`` (no answer from
        the Hub), ``error`` (another Hub error), ``rate_limited``, ``too_many``.
    message : str
        One plain-text sentence for the page (untrusted fragments included: escape before rendering).
    record : dict or None
        The catalog row (keys of :data:`dashboard.schema.COLUMN_NAMES`) when ``ok``.
    notes : str
        The normalizer's ``parse_notes`` (what it had to guess or ignore), possibly empty.
    """

    ok: bool
    model_id: str
    kind: str
    message: str
    record: dict[str, Any] | None = None
    notes: str = ""


def _short(text: Any, n: int = 200) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def record_from_config(raw: bytes | str, model_id: str, *, source: str, sha: str | None = None,
                       sidecars: Mapping[str, bytes] | None = None, what: str = "config") -> AddOutcome:
    """Normalize raw ``config.json`` content into a catalog row (:func:`dashboard.catalog.normalize_config`).

    ``what`` names the input in the message (``"the uploaded file x.json"``, ``"org/name's config.json"``).
    Never raises: an oversized, unreadable or unusable config gives ``ok=False`` with the reason.
    """
    size = len(raw.encode("utf-8") if isinstance(raw, str) else raw)
    if size > MAX_CONFIG_BYTES:
        return AddOutcome(False, model_id, "too_large",
                          f"{what} is {size:,} bytes; the limit is {MAX_CONFIG_BYTES:,} bytes (1 MiB).")
    if size == 0:
        return AddOutcome(False, model_id, "invalid_json", f"{what} is empty.")
    try:
        rec = normalize_config(raw, model_id, source=source, sha=sha, sidecars=sidecars or None)
    except Exception as exc:  # noqa: BLE001 -- normalize_config never raises; this is the last line of defence
        return AddOutcome(False, model_id, "not_config", f"{what} could not be read ({type(exc).__name__}).")
    notes = str(rec.get("parse_notes") or "")
    status, reason = rec.get("status"), _short(rec.get("status_reason") or rec.get("status"))
    if status == "invalid_json":
        return AddOutcome(False, model_id, "invalid_json", f"{what} is not a JSON object: {reason}.", notes=notes)
    if status != "ok":
        return AddOutcome(False, model_id, "not_config",
                          f"{what} is not a transformer config the planner can use: {reason}.", notes=notes)
    return AddOutcome(True, model_id, "added", f"Added {model_id}.", record=rec, notes=notes)


def upload_model_id(filename: str | None, raw: bytes | str, taken: Iterable[str] = ()) -> str:
    """The id an uploaded config is shown under: ``(upload)/<name>``.

    ``<name>``: ``org--name`` when the config's ``_name_or_path`` is a Hub id ``org/name`` or the file is
    named ``org--name.json`` (the commands map it back to ``org/name``:
    :func:`dashboard.launch.command_model`); else the last part of the config's ``_name_or_path`` when it
    has one (transformers writes the repo id or folder it saved from), else the file name without ``.json`` unless that is just ``config``,
    else the config's ``model_type``, else ``model``; reduced to ``A-Z a-z 0-9 . _ -`` (at most 64
    characters), with ``-2``, ``-3`` ... appended when ``taken`` already has it.
    """
    name = ""
    try:
        cfg = json.loads(raw) if raw else None
    except (ValueError, RecursionError, TypeError):
        cfg = None
    from dashboard.launch import hub_id, hub_id_from_config

    if isinstance(cfg, dict):
        nop = cfg.get("_name_or_path")
        hid = hub_id_from_config(cfg)
        if hid:  # a Hub id: keep its org, as org--name (the id's org part stays "(upload)")
            name = hid.replace("/", "--")
        elif isinstance(nop, str) and nop.strip():
            name = nop.strip().rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    if not _NAME_OK.sub("", name):
        stem = str(filename or "").replace("\\", "/").rsplit("/", 1)[-1]
        stem = stem[:-5] if stem.lower().endswith(".json") else stem
        if hub_id(stem):  # a file named org--name.json keeps its org too
            stem = hub_id(stem).replace("/", "--")
        name = stem if stem.lower() not in ("", "config") else ""
    if not _NAME_OK.sub("", name) and isinstance(cfg, dict) and isinstance(cfg.get("model_type"), str):
        name = cfg["model_type"]
    name = _NAME_OK.sub("-", name).strip("-.")[:64] or "model"
    taken = set(taken)
    base, n = f"{UPLOAD_ORG}/{name}", 1
    out = base
    while out in taken:
        n += 1
        out = f"{base}-{n}"
    return out


def uploaded_record(filename: str | None, raw: bytes, taken: Iterable[str] = ()) -> AddOutcome:
    """:func:`record_from_config` of an uploaded file, under :func:`upload_model_id` (``source="upload"``)."""
    shown = _short(filename or "config.json", 80)
    if len(raw) > MAX_CONFIG_BYTES:
        return AddOutcome(False, f"{UPLOAD_ORG}/model", "too_large",
                          f"The uploaded file {shown} is {len(raw):,} bytes; the limit is {MAX_CONFIG_BYTES:,} "
                          "bytes (1 MiB).")
    mid = upload_model_id(filename, raw, taken)
    return record_from_config(raw, mid, source="upload", what=f"The uploaded file {shown}")


#: Plain-text notice per :class:`dashboard.hub.FetchError` status (then the Hub's own reason).
_HUB_MESSAGES = {
    "bad_id": "{rid} is not a Hub model id (expected org/name)",
    "not_found": "{rid} was not found on the Hub (no such repo, or it has no config.json)",
    "gated": "{rid} is gated: its config can only be read with an approved token",
    "unreachable": "The Hub did not answer, so {rid} could not be fetched: the server may be offline",
    "invalid_json": "{rid}'s config.json could not be used",
    "error": "The Hub refused {rid}'s config.json or failed",
}


def fetch_hub_model(repo_id: str, *, endpoint: str | None = None, cache_dir: str | None = None,
                    timeout: float = HUB_TIMEOUT_S, environ: Mapping[str, str] | None = None) -> AddOutcome:
    """Fetch a Hub repo's ``config.json`` (and quantization sidecars) for "Add a model" and normalize it.

    Anonymous unless :func:`hub_token_opt_in`; one attempt per file, ``timeout`` seconds each
    (``fetch_config(interactive=True)``). ``endpoint`` / ``cache_dir`` override ``HF_ENDPOINT`` /
    ``HF_HOME`` (tests). Never raises.
    """
    rid = str(repo_id or "").strip()
    if not is_hub_id(rid):
        return AddOutcome(False, _short(rid, 120), "bad_id",
                          f"{_short(rid, 120)!r} is not a Hub model id: expected org/name (letters, digits, "
                          "'-', '_', '.').")
    from dashboard import hub

    opt_in = hub_token_opt_in(environ)
    try:
        got = hub.fetch_config(rid, endpoint=endpoint, cache_dir=cache_dir, token=None if opt_in else False,
                               timeout=timeout, max_bytes=MAX_CONFIG_BYTES, interactive=True)
    except hub.FetchError as exc:
        head = _HUB_MESSAGES.get(exc.status, _HUB_MESSAGES["error"]).format(rid=rid)
        if exc.status == "gated":
            head += (", and this server fetches anonymously (its operator can allow its own token with "
                     f"{TOKEN_ENV}=1); upload the config.json instead" if not opt_in else
                     ", and the server's token has no access to it")
        kind = "too_large" if exc.status == "invalid_json" else (exc.status if exc.status in _HUB_MESSAGES else "error")
        # the Hub's own words only where they say more than the sentence (its 404 / 401 texts repeat it)
        detail = f" ({_short(exc.reason, 200)})" if exc.status in ("unreachable", "error") else ""
        return AddOutcome(False, rid, kind, f"{head}.{detail}")
    except Exception as exc:  # noqa: BLE001 -- fetch_config raises FetchError only; never break the session
        return AddOutcome(False, rid, "error", f"Could not fetch {rid} ({type(exc).__name__}).")
    return record_from_config(got.config, rid, source="hub", sha=got.sha, sidecars=got.sidecars,
                              what=f"{rid}'s config.json")


class RateLimiter:
    """At most ``limit`` events per ``window`` seconds (a sliding window; thread-safe).

    ``clock`` returns seconds (default :func:`time.monotonic`); tests pass their own.
    """

    def __init__(self, limit: int = RATE_LIMIT_FETCHES, window: float = RATE_LIMIT_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic):
        if limit < 1 or window <= 0:
            raise ValueError("limit must be >= 1 and window > 0")
        self.limit, self.window, self.clock = int(limit), float(window), clock
        self._times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def try_acquire(self) -> float:
        """Record one event and return 0.0 when allowed; else record nothing and return the seconds until
        the next event will be allowed (> 0)."""
        with self._lock:
            now = self.clock()
            while self._times and now - self._times[0] >= self.window:
                self._times.popleft()
            if len(self._times) < self.limit:
                self._times.append(now)
                return 0.0
            return max(self.window - (now - self._times[0]), 1e-3)

    def remaining(self) -> int:
        """Events still allowed in the current window."""
        with self._lock:
            now = self.clock()
            return self.limit - sum(1 for t in self._times if now - t < self.window)


def rate_limited(repo_id: str, wait_s: float) -> AddOutcome:
    """The outcome of a fetch refused by :class:`RateLimiter` (``wait_s`` seconds until the next is allowed)."""
    return AddOutcome(False, repo_id, "rate_limited",
                      f"Too many Hub fetches from this page: at most {RATE_LIMIT_FETCHES} per "
                      f"{RATE_LIMIT_WINDOW_S:.0f} s. Try {repo_id} again in {max(1, round(wait_s))} s.")
