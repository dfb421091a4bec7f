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


MAX_CONFIG_BYTES = 64 * 1024 * 1024


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
    else:
        try:
            path = Path(hf_hub_download(repo_id, "config.json", revision=revision, etag_timeout=timeout, **common))
        except Exception as exc:  # noqa: BLE001
            status, reason = classify_error(exc)
            hint = "; set HF_TOKEN to a token with access to it" if status == "gated" else ""
            raise fail(status, f"{repo_id}: {status}: {reason}{hint}") from None
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
            raise fail("unreachable", f"{repo_id}: the Hub did not answer ({short_error(root_cause(exc))})") from None
        status, reason = classify_error(exc)
        raise fail(status, f"{repo_id}: {status}: {reason}") from None
    sha = meta.commit_hash if meta.commit_hash and SHA_RE.match(meta.commit_hash) else None
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
            raise fail("unreachable", f"{repo_id}: the Hub did not answer ({short_error(root_cause(exc))})") from None
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
