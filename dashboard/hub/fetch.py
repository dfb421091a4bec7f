"""One repository's ``config.json`` and quantization sidecars for ``tp-planner check`` and "Add a model"
(:func:`fetch_config`): one bounded request each through huggingface_hub, from the cache when offline,
errors as one :class:`FetchError` with a scrubbed, printable reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
import huggingface_hub
from huggingface_hub import constants as hf_constants, hf_hub_download
from huggingface_hub.utils import validate_repo_id
from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError, OfflineModeIsEnabled

from dashboard.hub.scrub import known_secrets, printable_text, Scrubber
from dashboard.hub.retry import classify_error, MAX_REASON, RETRY_EXCEPTIONS, root_cause, short_error
from dashboard.hub.rows import SHA_RE


from dashboard.schema import MAX_CONFIG_BYTES  # noqa: E402  (one cap: scraper, check, plan)

#: Longest one capped download (:func:`download_capped`) may take in all, seconds: a Hub that drips
#: its answer a byte at a time meets it (each read also has the request ``timeout``).
DOWNLOAD_DEADLINE_S = 60.0
_CHUNK = 64 * 1024


class SilentTqdm(tqdm):  # type: ignore[misc]
    """huggingface_hub's per-file byte bar, switched off (one bar per run is ours)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("name", None)
        kwargs["disable"] = True
        super().__init__(*args, **kwargs)


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


class _TooLarge(Exception):
    pass


def _stream_capped(url: str, headers: dict[str, str], timeout: float, max_bytes: int, deadline_s: float,
                   name: str) -> bytes:
    """GET ``url`` and return its body, never holding more than ``max_bytes`` of it (nor of its raw
    transfer): the body is read in chunks as it arrives, a ``gzip`` / ``deflate`` body is inflated with
    a bounded output, and the read stops at ``max_bytes + 1`` (:class:`FetchError` ``invalid_json``) or
    when ``deadline_s`` has passed in all (``error``). Nothing is written to disk."""
    import time
    import zlib

    from huggingface_hub.utils import get_session, hf_raise_for_status

    t_end = time.monotonic() + deadline_s
    with get_session().stream("GET", url, headers={**headers, "Accept-Encoding": "identity"}, timeout=timeout,
                              follow_redirects=True) as resp:
        if resp.status_code >= 400:
            length = resp.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) <= _CHUNK:
                resp.read()
                hf_raise_for_status(resp)
            raise FetchError("error", f"{name}: HTTP {resp.status_code} on download")
        enc = (resp.headers.get("Content-Encoding") or "identity").strip().lower()
        inflate = zlib.decompressobj(47) if enc in ("gzip", "x-gzip", "deflate") else None  # 47: gzip or zlib
        out = bytearray()
        raw = 0
        for chunk in resp.iter_raw():  # as the bytes arrive (a chunk size would wait to fill it)
            raw += len(chunk)
            if raw > max_bytes + _CHUNK and inflate is None:
                raise _TooLarge()
            if inflate is not None:
                out += inflate.decompress(chunk, max_bytes + 1 - len(out))
                if inflate.unconsumed_tail:
                    raise _TooLarge()
            else:
                out += chunk
            if len(out) > max_bytes:
                raise _TooLarge()
            if time.monotonic() > t_end:
                raise FetchError("error", f"{name}: the download took longer than {deadline_s:g} s "
                                          f"({len(out)} bytes read); the Hub is too slow, try again later")
        if inflate is not None:
            out += inflate.flush()
            if len(out) > max_bytes:
                raise _TooLarge()
        return bytes(out)


def _store_in_cache(repo_id: str, name: str, data: bytes, commit: str, etag: str | None, revision: str | None,
                    cache_dir: str | None) -> None:
    """Put a file read by :func:`download_capped` where huggingface_hub's cache has it (``blobs/<etag>``,
    ``snapshots/<commit>/<name>`` pointing to it, ``refs/<revision>``), so offline runs and
    ``try_to_load_from_cache`` find it; the blob is written atomically. Best effort: a cache that cannot
    be written costs only a later download."""
    import hashlib

    from huggingface_hub import file_download as fd

    from dashboard.atomic import atomic_write

    try:
        storage = Path(cache_dir or hf_constants.HF_HUB_CACHE) / fd.repo_folder_name(repo_id=repo_id, repo_type="model")
        blob_name = (etag or "").strip('"').removeprefix("W/").strip('"') or hashlib.sha256(data).hexdigest()
        if not re.fullmatch(r"[0-9a-fA-F]{20,128}", blob_name):
            blob_name = hashlib.sha256(data).hexdigest()
        blob = storage / "blobs" / blob_name
        pointer = storage / "snapshots" / commit / name
        if not blob.exists():
            atomic_write(blob, lambda fh: fh.write(data))
        pointer.parent.mkdir(parents=True, exist_ok=True)
        if not pointer.exists():
            fd._create_symlink(str(blob), str(pointer), new_blob=True)
        if revision and revision != commit:
            fd._cache_commit_hash_for_specific_revision(str(storage), revision, commit)
    except Exception:  # noqa: BLE001 - the bytes are in hand; a cache we cannot fill is not an error
        pass


def download_capped(repo_id: str, name: str, *, revision: str | None, endpoint: str | None,
                    token: str | bool | None, cache_dir: str | None, timeout: float, max_bytes: int = MAX_CONFIG_BYTES,
                    force: bool = False, retry_head: bool = True,
                    deadline_s: float = DOWNLOAD_DEADLINE_S) -> tuple[bytes, str | None]:
    """One small file of a Hub repo (``config.json``, a quantization sidecar), size-capped before its bytes
    arrive: ``(content, commit sha or None)``.

    1. ``HEAD`` (:func:`huggingface_hub.get_hf_file_metadata`, ``timeout`` s; huggingface_hub's retries
       when ``retry_head``): a file whose announced size exceeds ``max_bytes`` is refused, nothing downloaded.
    2. The copy already in the Hugging Face cache at that commit, when there is one (and not ``force``).
    3. Else a streamed ``GET`` read at most ``max_bytes`` (:func:`_stream_capped`): a Hub that understates the
       size, gzip-encodes the body or drips it meets the cap or the ``deadline_s`` overall deadline, and
       nothing oversized is ever written; a body whose length differs from the announced size is refused.
       What was read is then stored in the cache (:func:`_store_in_cache`).

    Raises :class:`FetchError` (``invalid_json`` for too large, ``error`` for a short or slow answer) or
    huggingface_hub's / httpx's exceptions for an HTTP or transport failure (see :func:`classify_error`).
    """
    from huggingface_hub import get_hf_file_metadata, hf_hub_url, try_to_load_from_cache
    from huggingface_hub.utils import build_hf_headers

    url = hf_hub_url(repo_id, name, revision=revision, endpoint=endpoint)
    meta = get_hf_file_metadata(url, token=token, timeout=timeout, endpoint=endpoint, retry_on_errors=retry_head)
    commit = meta.commit_hash if meta.commit_hash and SHA_RE.match(meta.commit_hash) else None
    if meta.size is not None and meta.size > max_bytes:
        raise FetchError("invalid_json", f"{name} is {meta.size} bytes (limit {max_bytes}); not downloaded")
    if commit and not force:
        cached = try_to_load_from_cache(repo_id, name, cache_dir=cache_dir, revision=commit)
        if isinstance(cached, str):
            try:
                return _read_capped(Path(cached), name, max_bytes), commit
            except OSError:
                pass
    get_url = hf_hub_url(repo_id, name, revision=commit or revision, endpoint=endpoint)
    try:
        data = _stream_capped(get_url, build_hf_headers(token=token), timeout, max_bytes, deadline_s, name)
    except _TooLarge:
        raise FetchError("invalid_json", f"{name} is larger than {max_bytes} bytes (limit {max_bytes}; the Hub "
                                         f"announced {meta.size if meta.size is not None else 'no'} size); "
                                         "read no further, nothing stored") from None
    if meta.size is not None and len(data) != meta.size:
        raise FetchError("error", f"{name}: the Hub announced {meta.size} bytes and sent {len(data)}; not used")
    if commit:
        _store_in_cache(repo_id, name, data, commit, meta.etag, revision, cache_dir)
    return data, commit


def fetch_config(repo_id: str, *, revision: str | None = None, endpoint: str | None = None,
                 token: str | bool | None = None, cache_dir: str | os.PathLike | None = None,
                 timeout: float = 10.0, max_bytes: int = 1 << 20, interactive: bool = False) -> FetchedConfig:
    """``config.json`` and the quantization sidecars (:data:`dashboard.catalog.QUANT_SIDECARS`) of one Hub
    repo, through huggingface_hub's cache (``HF_HOME``), ``HF_TOKEN``, ``HF_ENDPOINT`` and
    ``HF_HUB_OFFLINE`` as it defines them. Offline, only the cache is read (``revision``, else ``main``,
    else the newest cached snapshot). Files larger than ``max_bytes`` are refused.

    ``token``: as huggingface_hub defines it (``None``: ``HF_TOKEN`` or the stored login; ``False``: no
    token, an anonymous request; a string: that token).

    Online, every file goes through :func:`download_capped`: its ``HEAD``'s size is checked against
    ``max_bytes`` before any byte of it is downloaded, and the body is read streamed and capped (an
    understated size or a gzip body never writes more than the cap; nothing oversized lands in ``HF_HOME``).

    ``interactive=True`` (the dashboard's "Add a model"): each file is first asked for once with a ``HEAD``
    (:func:`huggingface_hub.get_hf_file_metadata` without retries, ``timeout`` seconds), so a Hub that is
    down or unreachable is reported after one attempt instead of huggingface_hub's own ~23 s of retries
    (``http_backoff``: 1 + 2 + 4 + 8 + 8 s); only a file the Hub just answered for is then downloaded,
    pinned to the commit it named, within ``2 * timeout`` seconds in all. The cache never stands in for an answer the Hub refused or did not
    give, and ``HF_HUB_OFFLINE`` refuses at once (status ``unreachable``): a gated config cached with the
    operator's token is never served to an anonymous request.

    Raises :class:`FetchError` (never another exception) with a one-line reason: ``bad_id`` (not a repo
    id), ``not_found``, ``gated``, ``invalid_json`` (too large) or ``error`` (offline and not cached,
    network); with ``interactive=True`` ``unreachable`` for no answer (offline, connection refused,
    timeout).
    """
    from dashboard.catalog import QUANT_SIDECARS

    scrub = Scrubber(known_secrets(token))

    def fail(status: str, reason: str) -> FetchError:
        return FetchError(status, printable_text(scrub(reason)).replace("\n", " ")[:MAX_REASON])

    try:
        validate_repo_id(repo_id)
    except (HFValidationError, ValueError, TypeError) as exc:
        raise fail("bad_id", f"not a Hub repo id ({short_error(exc)})") from None
    if revision is not None and not re.fullmatch(r"[\w.\-/]{1,200}", revision):
        raise fail("bad_id", "not a revision name")
    cache = str(cache_dir) if cache_dir is not None else None
    offline = hf_constants.is_offline_mode()
    common = dict(cache_dir=cache, token=token, endpoint=endpoint, tqdm_class=SilentTqdm)
    if interactive:
        return _fetch_interactive(repo_id, revision, common, timeout, max_bytes, offline, fail)
    path: Path | None = None
    if offline:
        for rev in dict.fromkeys(r for r in (revision, "main", _cached_revision(repo_id, cache)) if r):
            try:
                path = Path(hf_hub_download(repo_id, "config.json", revision=rev, local_files_only=True, **common))
                break
            except Exception:  # noqa: BLE001  (not cached at this revision: try the next)
                continue
        if path is None:
            where = cache or hf_constants.HF_HUB_CACHE
            raise fail("error", f"offline (HF_HUB_OFFLINE is set) and {repo_id}'s config.json is not in the "
                                f"Hugging Face cache ({where})")
    else:  # size-capped before the bytes arrive: the HEAD's size, then a capped streamed read
        capped = dict(revision=revision, endpoint=endpoint, token=token, cache_dir=cache, timeout=timeout,
                      max_bytes=max_bytes)
        try:
            data, sha = download_capped(repo_id, "config.json", **capped)
        except FetchError as exc:
            raise fail(exc.status, f"{repo_id}: {exc.reason}") from None
        except Exception as exc:  # noqa: BLE001
            status, reason = classify_error(exc)
            hint = "; set HF_TOKEN to a token with access to it" if status == "gated" else ""
            raise fail(status, f"{repo_id}: {status}: {reason}{hint}") from None
        sidecars: dict[str, bytes] = {}
        for name in QUANT_SIDECARS:
            try:
                sidecars[name] = download_capped(repo_id, name, **dict(capped, revision=sha or revision))[0]
            except Exception:  # noqa: BLE001 - absent (404), oversized or unreadable: no sidecar, as the catalog does
                continue
        return FetchedConfig(repo_id, data, sidecars, sha, False)
    sha = path.parent.name if SHA_RE.match(path.parent.name) else revision
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
    return FetchedConfig(repo_id, data, sidecars, sha if sha and SHA_RE.match(sha) else None, offline)


def _no_answer(exc: BaseException) -> bool:
    """True when the Hub gave no HTTP answer at all (connection refused, DNS, timeout, offline mode)."""
    inner = root_cause(exc)
    return isinstance(inner, (*RETRY_EXCEPTIONS, OfflineModeIsEnabled, LocalEntryNotFoundError))


def _fetch_interactive(repo_id: str, revision: str | None, common: dict[str, Any], timeout: float,
                       max_bytes: int, offline: bool, fail: Callable[[str, str], FetchError]) -> FetchedConfig:
    """:func:`fetch_config` with ``interactive=True``: one ``HEAD`` per file (no retries), then the download
    pinned to the commit the ``HEAD`` named."""
    from dashboard.catalog import QUANT_SIDECARS

    if offline:
        raise fail("unreachable", "the server is offline (HF_HUB_OFFLINE is set), so it cannot ask the Hub")
    endpoint, token = common["endpoint"], common["token"]

    def download(name: str, rev: str | None) -> tuple[bytes, str | None]:
        return download_capped(repo_id, name, revision=rev, endpoint=endpoint, token=token,
                               cache_dir=common["cache_dir"], timeout=timeout, max_bytes=max_bytes,
                               retry_head=False, deadline_s=max(timeout, 1.0) * 2)

    try:
        data, sha = download("config.json", revision)
    except FetchError as exc:
        raise fail(exc.status, f"{repo_id}: {exc.reason}") from None
    except Exception as exc:  # noqa: BLE001
        if _no_answer(exc):
            raise fail("unreachable", f"{repo_id}: the Hub did not answer ({short_error(root_cause(exc))})") from None
        status, reason = classify_error(exc)
        raise fail(status, f"{repo_id}: {status}: {reason}") from None
    sidecars: dict[str, bytes] = {}
    for name in QUANT_SIDECARS:
        try:
            sidecars[name] = download(name, sha or revision)[0]
        except Exception:  # noqa: BLE001 - absent (404), oversized or no answer: no sidecar, as the catalog does
            continue
    return FetchedConfig(repo_id, data, sidecars, sha, False)
