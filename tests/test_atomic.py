"""dashboard.atomic: all-or-nothing writes with ordinary file modes."""

from __future__ import annotations

import os
import stat

import pytest

from dashboard.atomic import atomic_write, atomic_write_text


def _mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


def test_new_file_gets_umask_mode_not_mkstemp_0600(tmp_path):
    old = os.umask(0o022)
    try:
        p = atomic_write_text(tmp_path / "a.txt", "hello")
    finally:
        os.umask(old)
    assert p.read_text() == "hello"
    assert _mode(p) == 0o644


def test_existing_mode_is_kept(tmp_path):
    p = tmp_path / "b.txt"
    p.write_text("old")
    os.chmod(p, 0o640)
    atomic_write_text(p, "new")
    assert p.read_text() == "new" and _mode(p) == 0o640


def test_failure_leaves_old_file_and_no_temp(tmp_path):
    p = tmp_path / "c.bin"
    p.write_bytes(b"old")

    def boom(fh):
        fh.write(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(p, boom)
    assert p.read_bytes() == b"old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["c.bin"]
