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
