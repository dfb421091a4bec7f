"""The model's config for ``tp-planner check``: a local file or folder, standard input, or a Hub id
(fetched within :data:`HUB_DEADLINE_S`), read into a catalog record."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dashboard.check.common import CheckInputError, MAX_CONFIG_BYTES, printable


@dataclass
class Source:
    model_id: str
    kind: str  # hub | folder | file | stdin
    where: str = ""
    sha: str | None = None
    sidecars: list[str] = field(default_factory=list)
    offline: bool = False


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

    try:
        deadline = float(os.environ.get("TP_PLANNER_HUB_DEADLINE_S") or HUB_DEADLINE_S)
    except ValueError:
        deadline = HUB_DEADLINE_S
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["ok"] = hub.fetch_config(repo_id, max_bytes=MAX_CONFIG_BYTES)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["err"] = exc

    t = threading.Thread(target=run, name="hub-fetch", daemon=True)
    t.start()
    t.join(max(deadline, 0.1))
    if t.is_alive():
        endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
        raise hub.FetchError("unreachable", f"{repo_id}: the Hub ({printable(endpoint, 100)}) did not answer within "
                                            f"{deadline:g} s; try again later, or give a local config.json")
    if "err" in box:
        raise box["err"]
    return box["ok"]


def load_model(arg: str, *, stdin: Any = None, model_id: str | None = None) -> tuple[dict[str, Any], Source]:
    """The normalized catalog record of MODEL (Hub id, folder, file or ``-``) and where it came from.
    Raises :class:`CheckInputError` for anything that cannot be judged."""
    from dashboard.catalog import normalize_config

    if arg == "-":
        data, sidecars = _read_stdin(stdin if stdin is not None else sys.stdin), {}
        src = Source(model_id or "stdin", "stdin", "<stdin>")
    elif _looks_like_path(arg) or Path(os.path.expanduser(arg)).exists():
        data, sidecars, src = _load_local(arg, model_id)
    else:
        from dashboard import hub

        try:
            got = _fetch_with_deadline(arg.strip())
        except hub.FetchError as e:
            if e.status == "bad_id":
                raise CheckInputError(f"{printable(arg, 120)} is neither a local path nor a Hub repo id "
                                      f"({printable(e.reason, 200)})") from None
            raise CheckInputError(printable(e.reason, 400)) from None
        data, sidecars = got.config, got.sidecars
        src = Source(arg.strip(), "hub", "Hub", got.sha, sorted(sidecars), got.offline)
    rec = normalize_config(data, src.model_id, source="check", sha=src.sha, sidecars=sidecars or None)
    if rec.get("status") != "ok":
        reason = printable(rec.get("status_reason") or rec.get("status"), 300)
        what = (f"Hub repo {printable(src.model_id, 200)}" if src.kind == "hub"
                else f"{src.kind} {printable(src.where or src.model_id, 200)}")
        raise CheckInputError(f"unreadable config ({what}): {reason}")
    return rec, src
