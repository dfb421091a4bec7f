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

import base64
import collections
import json
import os
import re
import subprocess
import sys
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
#: Seconds one "Add a model" fetch may take in all (``config.json`` and its sidecars, every request, a Hub
#: that answers one byte at a time included): the fetch runs in a child process that is killed then, so
#: its connections close at the deadline and the server never waits for it (:func:`fetch_hub_model`).
HUB_DEADLINE_S = 12.0
#: Most "Add a model" fetches (child processes) the server runs at once; a fetch waits for a free slot,
#: and the wait counts against its :data:`HUB_DEADLINE_S`.
MAX_CONCURRENT_FETCHES = 4
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
        the Hub, or no complete one within the deadline, :data:`HUB_DEADLINE_S`), ``error`` (another Hub error), ``rate_limited``, ``too_many``.
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


def upload_too_large(filename: str | None, size: int) -> AddOutcome:
    """The outcome of an upload of ``size`` bytes over :data:`MAX_CONFIG_BYTES`: refused by the server
    (:func:`uploaded_record`) or, before any byte was sent, by the page (the size the browser reported)."""
    shown = _short(filename or "config.json", 80)
    return AddOutcome(False, f"{UPLOAD_ORG}/model", "too_large",
                      f"The uploaded file {shown} is {size:,} bytes; the limit is {MAX_CONFIG_BYTES:,} bytes (1 MiB).")


def uploaded_record(filename: str | None, raw: bytes, taken: Iterable[str] = ()) -> AddOutcome:
    """:func:`record_from_config` of an uploaded file, under :func:`upload_model_id` (``source="upload"``)."""
    shown = _short(filename or "config.json", 80)
    if len(raw) > MAX_CONFIG_BYTES:
        return upload_too_large(filename, len(raw))
    mid = upload_model_id(filename, raw, taken)
    return record_from_config(raw, mid, source="upload", what=f"The uploaded file {shown}")


#: Plain-text notice per :class:`dashboard.hub.FetchError` status (then the Hub's own reason).
_HUB_MESSAGES = {
    "bad_id": "{rid} is not a Hub model id (expected org/name)",
    "not_found": "{rid} was not found on the Hub (no such repo, or it has no config.json)",
    "gated": "{rid} is gated: its config can only be read with an approved token",
    "unreachable": "The Hub did not answer, so {rid} could not be fetched: the server may be offline",
    "deadline": ("The Hub did not send {rid}'s config.json in full within {deadline:g} s, so the fetch was stopped "
                 "(the Hub may be slow or overloaded); try again later"),
    "invalid_json": "{rid}'s config.json could not be used",
    "error": "The Hub refused {rid}'s config.json or failed",
}


def fetch_hub_model(repo_id: str, *, endpoint: str | None = None, cache_dir: str | None = None,
                    timeout: float = HUB_TIMEOUT_S, environ: Mapping[str, str] | None = None,
                    deadline: float | None = HUB_DEADLINE_S) -> AddOutcome:
    """Fetch a Hub repo's ``config.json`` (and quantization sidecars) for "Add a model" and normalize it.

    Anonymous unless :func:`hub_token_opt_in`; one attempt per file, ``timeout`` seconds each
    (``fetch_config(interactive=True)``). ``endpoint`` / ``cache_dir`` override ``HF_ENDPOINT`` /
    ``HF_HOME`` (tests).

    ``deadline`` (seconds, default :data:`HUB_DEADLINE_S`): the whole fetch runs in a child process
    (:func:`fetch_config_within`), killed when the deadline passes: the answer is then ``unreachable``
    ("did not finish within ... s"), whatever the Hub was doing (a reply dripping one byte at a time never
    trips ``timeout``, which bounds each read). ``None``: in this process, no overall deadline. Never raises.
    """
    rid = str(repo_id or "").strip()
    if not is_hub_id(rid):
        return AddOutcome(False, _short(rid, 120), "bad_id",
                          f"{_short(rid, 120)!r} is not a Hub model id: expected org/name (letters, digits, "
                          "'-', '_', '.').")
    from dashboard import hub

    opt_in = hub_token_opt_in(environ)
    try:
        kw = dict(endpoint=endpoint, cache_dir=None if cache_dir is None else os.fspath(cache_dir), token=None if opt_in else False, timeout=timeout,
                  max_bytes=MAX_CONFIG_BYTES, interactive=True)
        got = hub.fetch_config(rid, **kw) if deadline is None else fetch_config_within(rid, deadline, **kw)
    except hub.FetchError as exc:
        head = _HUB_MESSAGES.get(exc.status, _HUB_MESSAGES["error"]).format(rid=rid, deadline=deadline or 0)
        if exc.status == "gated":
            head += (", and this server fetches anonymously (its operator can allow its own token with "
                     f"{TOKEN_ENV}=1); upload the config.json instead" if not opt_in else
                     ", and the server's token has no access to it")
        kind = ("too_large" if exc.status == "invalid_json" else "unreachable" if exc.status == "deadline" else
                exc.status if exc.status in _HUB_MESSAGES else "error")
        # the Hub's own words only where they say more than the sentence (its 404 / 401 texts repeat it)
        detail = f" ({_short(exc.reason, 200)})" if exc.status in ("unreachable", "error") else ""
        return AddOutcome(False, rid, kind, f"{head}.{detail}")
    except Exception as exc:  # noqa: BLE001 -- fetch_config raises FetchError only; never break the session
        return AddOutcome(False, rid, "error", f"Could not fetch {rid} ({type(exc).__name__}).")
    return record_from_config(got.config, rid, source="hub", sha=got.sha, sidecars=got.sidecars,
                              what=f"{rid}'s config.json")


_FETCH_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT_FETCHES)
_CHILD = "from dashboard.addmodel import _fetch_child; _fetch_child()"


def fetch_config_within(repo_id: str, deadline: float, **kw: Any):
    """:func:`dashboard.hub.fetch_config` (``repo_id``, keyword arguments ``kw``: JSON-able values only)
    in a child process that must answer within ``deadline`` seconds (the wait for one of
    :data:`MAX_CONCURRENT_FETCHES` slots included), else is killed.

    Why a process: the fetch is huggingface_hub's, whose reads are bounded one by one, not in all; a
    thread cannot be stopped, and a worker thread stuck in a dripping read kept a stopped server alive
    until the read ended (an hour, issue 24). Killing the child closes its connections at the deadline.
    On Linux the child is a ``fork`` of this process (a few ms: everything is imported already;
    huggingface_hub drops its HTTP session in a forked child); elsewhere a new interpreter (about 1 s of
    imports). The child also ends itself (``SIGALRM``) shortly after the deadline, should this process die
    first. With ``HF_HUB_OFFLINE`` set no request is made, so the fetch runs here, at once.

    Returns :class:`dashboard.hub.FetchedConfig`; raises :class:`dashboard.hub.FetchError` (status
    ``deadline`` when the deadline passed, ``unreachable`` when the server is too busy or the child could
    not run).
    """
    import math

    from dashboard import hub
    from dashboard.hub import fetch as _fetch

    if not (isinstance(deadline, int | float) and math.isfinite(deadline) and 0 < deadline < 3600):
        raise ValueError(f"deadline must be a number of seconds in (0, 3600), not {deadline!r}")
    if _fetch.hf_constants.is_offline_mode():  # (no request at all: answered at once, in this process)
        return hub.fetch_config(repo_id, **kw)
    start = time.monotonic()
    late = hub.FetchError("deadline", f"{repo_id}: no complete answer within {deadline:g} s")
    if not _FETCH_SLOTS.acquire(timeout=deadline):
        raise hub.FetchError("unreachable", f"{repo_id}: the server is busy with other fetches; try again")
    try:
        left = deadline - (time.monotonic() - start)
        if left <= 0:
            raise late
        request = {"repo_id": repo_id, "kw": kw, "alarm": int(left) + 2}
        run = _run_forked if sys.platform.startswith("linux") else _run_spawned
        out = run(request, left)
    finally:
        _FETCH_SLOTS.release()
    if out is None:
        raise late
    try:
        got = json.loads(out)
    except ValueError:
        raise hub.FetchError("error", f"{repo_id}: the fetch ended without an answer") from None
    if not got.get("ok"):
        raise hub.FetchError(str(got.get("status") or "error"), str(got.get("reason") or "fetch failed"))
    return hub.FetchedConfig(repo_id, base64.b64decode(got["config"]),
                             {k: base64.b64decode(v) for k, v in got["sidecars"].items()}, got["sha"], bool(got["offline"]))


def _child_answer(request: dict) -> bytes:
    """What the child of :func:`fetch_config_within` sends back: one JSON document."""
    from dashboard import hub

    try:
        got = hub.fetch_config(request["repo_id"], **request["kw"])
        out = {"ok": True, "config": base64.b64encode(got.config).decode(), "sha": got.sha, "offline": got.offline,
               "sidecars": {k: base64.b64encode(v).decode() for k, v in got.sidecars.items()}}
    except hub.FetchError as exc:
        out = {"ok": False, "status": exc.status, "reason": exc.reason}
    except Exception as exc:  # noqa: BLE001 -- fetch_config raises FetchError only; report anything else
        out = {"ok": False, "status": "error", "reason": f"{type(exc).__name__}"}
    return json.dumps(out).encode()


def _run_forked(request: dict, left: float) -> bytes | None:
    """Run :func:`_child_answer` in a forked child; its answer, or None when ``left`` seconds passed (the
    child is then killed)."""
    import select
    import signal

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the server's code
        code = 1
        try:
            os.close(r)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            signal.alarm(max(1, int(request["alarm"])))  # (default action: the process ends)
            data = memoryview(_child_answer(request))
            while data:
                data = data[os.write(w, data):]
            code = 0
        except BaseException:  # noqa: BLE001 -- whatever happens, the child ends here
            pass
        finally:
            os._exit(code)
    os.close(w)
    chunks: list[bytes] = []
    end = time.monotonic() + left
    try:
        while True:
            wait = end - time.monotonic()
            if wait <= 0:
                return None
            ready, _, _ = select.select([r], [], [], wait)
            if not ready:
                return None
            chunk = os.read(r, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)


def _run_spawned(request: dict, left: float) -> bytes | None:
    """Run :func:`_child_answer` in a new interpreter (``python -c``); its answer, or None when ``left``
    seconds passed (the child is then killed)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    except OSError as exc:
        from dashboard import hub

        raise hub.FetchError("unreachable", f"{request['repo_id']}: could not start the fetch ({exc})") from None
    try:
        out, _ = proc.communicate(json.dumps(request).encode(), timeout=left)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None
    return out


def _fetch_child() -> None:
    """The spawned child of :func:`fetch_config_within`: a JSON request on stdin, one JSON answer on stdout."""
    import signal

    req = json.loads(sys.stdin.buffer.read())
    signal.alarm(max(1, int(req["alarm"])))  # (default action: the process ends)
    sys.stdout.buffer.write(_child_answer(req))
    sys.stdout.flush()


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
