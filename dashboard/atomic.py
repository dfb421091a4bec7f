"""Atomic file writes: a temp file beside the target, fsync, then ``os.replace``.

A reader sees either the old file or the new one, never a torn one; a failure at any point leaves an
existing file untouched and removes the temp file. ``tempfile.mkstemp`` creates files with mode 0600,
so the result gets the mode of the file it replaces, or ``0666 & ~umask`` for a new file (what a plain
``open(path, "w")`` would give).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable


def _target_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Write ``path`` atomically by calling ``write(fh)`` on a binary temp file in the same folder.

    Raises whatever ``write`` or the file system raises; the old file is then intact.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _target_mode(p))
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write` for a string."""
    data = text.encode(encoding)
    return atomic_write(path, lambda fh: fh.write(data))


#: Bytes :func:`check_writable` writes (and removes) to prove a folder takes a file.
PROBE_BYTES = 64 * 1024


def check_writable(folder: str | os.PathLike, need_bytes: int = 0) -> None:
    """Refuse, before any long work, a folder :func:`atomic_write` could not write into: read-only (a
    read-only mount, no write permission), full, or not a folder. Writes a temp file of
    ``max(need_bytes, PROBE_BYTES)`` bytes there, fsyncs and removes it (this catches what ``os.access``
    misses: a read-only mount for root, quotas, ENOSPC). Raises ``OSError`` whose ``strerror`` says why
    (e.g. ``Read-only file system``, ``No space left on device``) and whose ``filename`` is ``folder``."""
    import errno

    p = Path(folder)
    if not p.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(p))
    size = max(int(need_bytes), PROBE_BYTES)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".write-probe.", suffix=".tmp", dir=p)
        with os.fdopen(fd, "wb") as fh:
            chunk = b"\0" * min(size, 1 << 20)
            left = size
            while left > 0:
                left -= fh.write(chunk[:left])
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(p)) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
