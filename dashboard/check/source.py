"""The model's config for ``tp-planner check`` and ``tp-planner plan``: a local file or folder, standard
input, or a Hub id, read into a catalog record. A Hub id is looked up in the shipped catalog first (no
network: :func:`catalog_source`); the Hub is asked (within :data:`HUB_DEADLINE_S`) only for ids the
catalog lacks, or for every id with ``refresh=True`` (``--refresh``)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dashboard.check.common import CheckInputError, MAX_CONFIG_BYTES, printable


@dataclass
class Source:
    """Where a config came from: ``kind`` ``catalog`` (the shipped catalog's row: ``sha`` and ``date`` as the
    row records them), ``hub`` (``sha`` the commit read), ``folder``, ``file`` or ``stdin``. ``note``: one
    line about it (e.g. a refreshed Hub config that differs from the catalog's)."""

    model_id: str
    kind: str  # catalog | hub | folder | file | stdin
    where: str = ""
    sha: str | None = None
    sidecars: list[str] = field(default_factory=list)
    offline: bool = False
    date: str | None = None  # catalog: the row's fetched_at (ISO-8601 UTC)
    note: str = ""

    def describe(self) -> str:
        """The ``config:`` line of the text output: which snapshot answered."""
        if self.kind == "catalog":
            day = (self.date or "")[:10] or "an unrecorded date"
            sha = f"sha {self.sha[:12]}" if self.sha else "sha not recorded"
            return f"shipped catalog, snapshot of {day} ({sha}); --refresh fetches the Hub's current config"
        out = self.kind
        if self.kind in ("file", "folder") and self.where:
            out += " " + quote_path(self.where)
        out += (f" @ {self.sha[:12]}" if self.sha else "") + (" (offline cache)" if self.offline else "")
        return out




def quote_path(path: str) -> str:
    """A path as a shell would take it back: bare when it has only safe characters, else single-quoted
    (:func:`shlex.quote`); a path with a character :func:`dashboard.terminal.safe_text` would replace (a
    newline, an ANSI escape, a bidi override) is written as a bash ``$'...'`` string with each one escaped
    (``\\n``, ``\\x1b``, ``\\u202e``), so nothing reaches the terminal raw."""
    import shlex

    from dashboard.terminal import is_unsafe_char

    if not any(is_unsafe_char(ch) for ch in path):
        return shlex.quote(path)
    out = []
    for ch in path:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif is_unsafe_char(ch):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def _read_capped(path: Path, what: str) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise CheckInputError(f"cannot read {what}: {printable(e.strerror or e)}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise CheckInputError(f"{what} is larger than {MAX_CONFIG_BYTES} bytes")
    return data


def _read_stdin(stdin: Any) -> bytes:
    buf = getattr(stdin, "buffer", stdin)
    data = buf.read(MAX_CONFIG_BYTES + 1)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if len(data) > MAX_CONFIG_BYTES:
        raise CheckInputError(f"standard input is larger than {MAX_CONFIG_BYTES} bytes")
    if not data.strip():
        raise CheckInputError("standard input is empty: expected a config.json")
    return data


def _looks_like_path(s: str) -> bool:
    return s.startswith(("/", "./", "../", "~", ".\\")) or s in (".", "..") or s.endswith(".json") or "\\" in s


def _load_local(arg: str, model_id: str | None) -> tuple[bytes, dict[str, bytes], Source]:
    from dashboard.catalog import QUANT_SIDECARS

    p = Path(os.path.expanduser(arg))
    if p.is_dir():
        cfg = p / "config.json"
        if not cfg.is_file():
            raise CheckInputError(f"{printable(arg)} is a folder without a config.json")
        folder, kind = p, "folder"
    elif p.is_file():
        cfg, folder, kind = p, p.parent, "file"
    else:
        raise CheckInputError(f"no such file or folder: {printable(arg, 200)}")
    data = _read_capped(cfg, printable(str(cfg), 200))
    sidecars: dict[str, bytes] = {}
    for name in QUANT_SIDECARS:
        sp = folder / name
        if sp.is_file() and sp.stat().st_size <= MAX_CONFIG_BYTES:
            try:
                sidecars[name] = sp.read_bytes()
            except OSError:
                pass
    from dashboard.launch import hub_id, hub_id_from_config

    # the Hub id the config names (_name_or_path), else the file's org--name stem as org/name, else the name
    stem = p.name if kind == "folder" else (p.parent.name if p.name == "config.json" else p.stem)
    mid = model_id or hub_id_from_config(data) or hub_id(stem) or stem
    return data, sidecars, Source(mid or "local", kind, str(p), sidecars=sorted(sidecars))


#: Longest a Hub fetch may take, seconds (``TP_PLANNER_HUB_DEADLINE_S`` overrides): huggingface_hub retries
#: each request with its own timeouts, so a Hub that accepts connections but never answers could otherwise
#: keep the command waiting for minutes.
HUB_DEADLINE_S = 60.0


def _fetch_with_deadline(repo_id: str):
    """:func:`dashboard.hub.fetch_config` bounded by :data:`HUB_DEADLINE_S` (a worker thread; on expiry the
    command gives up with one line and the thread is left to die with the process). huggingface_hub's
    per-retry warnings are silenced: the outcome is reported once, by the caller."""
    import logging
    import threading

    from dashboard import hub

    from dashboard.environment import EnvironmentError_, hub_deadline_s

    try:
        deadline = hub_deadline_s(default=HUB_DEADLINE_S)  # checked at start-up; here for library callers
    except EnvironmentError_ as e:
        raise CheckInputError(str(e)) from None
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    box: dict[str, Any] = {}
    # online: one request per file, no retry ladder (a Hub that does not answer is reported at once, not after
    # huggingface_hub's ~23 s of backoff); offline (HF_HUB_OFFLINE): the cache answers
    offline = (os.environ.get("HF_HUB_OFFLINE") or "").strip().upper() in {"1", "ON", "YES", "TRUE"}

    def run() -> None:
        try:
            box["ok"] = hub.fetch_config(repo_id, max_bytes=MAX_CONFIG_BYTES, interactive=not offline)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["err"] = exc

    t = threading.Thread(target=run, name="hub-fetch", daemon=True)
    t.start()
    t.join(max(deadline, 0.1))
    if t.is_alive():
        raise hub.FetchError("unreachable", f"{repo_id}: it did not answer within {deadline:g} s (try again later)")
    if "err" in box:
        raise box["err"]
    return box["ok"]


def _plain(v: Any) -> Any:
    """A catalog cell as a plain Python value (NA -> None), as :func:`dashboard.catalog.normalize_config`
    gives it."""
    import pandas as pd

    if v is None or (not isinstance(v, (str, bytes, list, tuple)) and pd.isna(v)):
        return None
    return v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v


_CATALOG_CACHE: dict[tuple, Any] = {}
_CATALOG_LOCK = threading.Lock()


def shipped_catalog():
    """The shipped catalog (``$TP_PLANNER_CATALOG`` when set), read once per file version (a DataFrame;
    read-only). Lives here, not in :mod:`dashboard.planner`, so ``tp-planner check`` answers a catalog id
    without importing the planner (or huggingface_hub)."""
    from dashboard.catalog import default_catalog_path, load_catalog

    path = os.environ.get("TP_PLANNER_CATALOG") or str(default_catalog_path())
    try:
        st = os.stat(path)
        key = (path, st.st_mtime_ns, st.st_size)
    except OSError:
        key = (path, None, None)
    with _CATALOG_LOCK:
        hit = _CATALOG_CACHE.get(key)
    if hit is None:
        hit = load_catalog(path)
        with _CATALOG_LOCK:
            _CATALOG_CACHE.clear()
            _CATALOG_CACHE[key] = hit
    return hit


def catalog_row(model_id: str, catalog: Any = None):
    """The one-row frame of ``model_id`` in ``catalog`` (default: :func:`shipped_catalog`): the exact id,
    else the id in another case (Hub ids are case-insensitive); None when absent. Never asks the Hub."""
    cat = shipped_catalog() if catalog is None else catalog
    ids = cat["model_id"].astype(str)
    hit = cat[ids == model_id]
    if hit.empty:
        hit = cat[ids.str.lower() == str(model_id).lower()]
    return None if hit.empty else hit.iloc[[0]]


def typed_frame(record: Any):
    """One catalog record (mapping, Series or one-row DataFrame) as a one-row DataFrame with the schema's
    dtypes: the rules and the memory model read typed columns much faster than an object-typed row.
    ValueError for a frame of another length, TypeError for another type."""
    import pandas as pd

    from dashboard import schema

    if isinstance(record, pd.DataFrame):
        if len(record) != 1:
            raise ValueError(f"plan() takes one model; got a frame of {len(record)} rows (use plan_catalog)")
        df = record.reset_index(drop=True)
    elif isinstance(record, pd.Series):
        df = pd.DataFrame([record.to_dict()])
    elif isinstance(record, Mapping):
        df = pd.DataFrame([dict(record)])
    else:
        raise TypeError(f"record must be a catalog record (mapping / Series / one-row DataFrame) or a model id, "
                        f"got {type(record).__name__}")
    for col, dtype in schema.COLUMN_DTYPES.items():
        if col in df.columns and str(df[col].dtype) != dtype:
            try:
                df[col] = df[col].astype(dtype)
            except (TypeError, ValueError):
                try:
                    df[col] = pd.to_numeric(df[col], errors="coerce").astype(dtype) if dtype in (
                        "Int64", "float64") else df[col]
                except (TypeError, ValueError):
                    pass
    return df


def catalog_source(model_id: str) -> tuple[dict[str, Any], Source] | None:
    """``model_id``'s record in the shipped catalog (``$TP_PLANNER_CATALOG`` when set) and its
    :class:`Source` (kind ``catalog``, the row's ``sha`` and ``fetched_at``), or None when the catalog has
    no usable (status ``ok``) row for it. Never touches the network."""
    try:
        row = catalog_row(model_id.strip())
    except Exception:  # noqa: BLE001 - no readable catalog: the Hub answers instead
        return None
    if row is None:
        return None
    return source_of_row(row)


def source_of_row(row: Any) -> tuple[dict[str, Any], Source] | None:
    """A catalog row (one-row frame or Series) as a record and its :class:`Source` (kind ``catalog``);
    None for a row whose status is not ``ok``."""
    if hasattr(row, "iloc") and hasattr(row, "columns"):
        row = row.iloc[0]
    rec = {str(k): _plain(v) for k, v in row.items()}
    if rec.get("status") != "ok":
        return None
    return rec, Source(str(rec["model_id"]), "catalog", "shipped catalog", rec.get("sha"), [], False,
                       rec.get("fetched_at"))


def hub_error(repo_id: str, e: Any, config_hint: str = "give a local copy with --config PATH") -> CheckInputError:
    """One line for a :class:`dashboard.hub.FetchError` of ``repo_id`` (the id named once), with what to
    do: ``config_hint`` (a local config) when the Hub cannot be reached, ``HF_TOKEN`` for a gated repo."""
    rid = printable(repo_id, 120)
    reason = printable(e.reason, 300)
    for prefix in (f"{repo_id}: {e.status}: ", f"{repo_id}: "):
        if reason.startswith(prefix):
            reason = reason[len(prefix):]
            break
    if e.status == "bad_id":
        return CheckInputError(f"{rid} is neither a local path nor a Hub repo id ({reason})")
    if e.status == "gated":
        if "; set HF_TOKEN" in reason:
            reason = reason[: reason.index("; set HF_TOKEN")]
        return CheckInputError(f"{rid} is gated on the Hub and no token with access was sent ({reason}): set "
                               "HF_TOKEN to a token with access to it, or " + config_hint)
    if e.status == "not_found":
        return CheckInputError(f"{rid}: not found on the Hub ({reason}); check the id, or {config_hint}")
    if reason.startswith("offline (HF_HUB_OFFLINE is set)"):  # the reason names the id
        return CheckInputError(f"{reason}; {config_hint}")
    endpoint = printable(os.environ.get("HF_ENDPOINT") or "https://huggingface.co", 100)
    return CheckInputError(f"cannot fetch {rid}'s config.json from the Hub ({endpoint}): {reason}; {config_hint}")


def load_model(arg: str, *, stdin: Any = None, model_id: str | None = None, refresh: bool = False,
               config_hint: str = "give a local copy with --config PATH") -> tuple[dict[str, Any], Source]:
    """The normalized catalog record of MODEL (Hub id, folder, file or ``-``) and where it came from. A Hub
    id is answered by the shipped catalog when it has the model (no network), else by the Hub;
    ``refresh=True`` always asks the Hub (its current config). Raises :class:`CheckInputError` for
    anything that cannot be judged, and for a Hub that cannot be reached (one line naming the id once and
    suggesting ``config_hint``: ``--config PATH`` for ``check``)."""
    from dashboard.catalog import normalize_config

    if arg == "-":
        data, sidecars = _read_stdin(stdin if stdin is not None else sys.stdin), {}
        src = Source(model_id or "stdin", "stdin", "<stdin>")
    elif _looks_like_path(arg) or Path(os.path.expanduser(arg)).exists():
        data, sidecars, src = _load_local(arg, model_id)
    else:
        known = catalog_source(arg)
        if known is not None and not refresh:
            return known  # no network, and huggingface_hub is not even imported
        from dashboard import hub

        try:
            got = _fetch_with_deadline(arg.strip())
        except hub.FetchError as e:
            raise hub_error(arg.strip(), e, config_hint) from None
        data, sidecars = got.config, got.sidecars
        src = Source(arg.strip(), "hub", "Hub", got.sha, sorted(sidecars), got.offline)
        if known is not None:
            from dashboard.rules.evidence import config_hash

            new = normalize_config(data, src.model_id, source="check", sha=src.sha, sidecars=sidecars or None)
            same = new.get("status") == "ok" and config_hash(new) == config_hash(known[0])
            day = (known[1].date or "")[:10]
            src.note = (f"the Hub's current config is the shipped catalog's (snapshot of {day})" if same else
                        f"the Hub's current config differs from the shipped catalog's (snapshot of {day})")
    rec = normalize_config(data, src.model_id, source="check", sha=src.sha, sidecars=sidecars or None)
    if rec.get("status") != "ok":
        reason = printable(rec.get("status_reason") or rec.get("status"), 300)
        what = (f"Hub repo {printable(src.model_id, 200)}" if src.kind == "hub"
                else f"{src.kind} {printable(src.where or src.model_id, 200)}")
        raise CheckInputError(f"unreadable config ({what}): {reason}")
    return rec, src
