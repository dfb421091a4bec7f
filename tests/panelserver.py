"""``panel serve dashboard`` in a subprocess, as the browser tests (tests/browser/conftest.py), the load test
(tests/test_load.py) and the UI benchmarks (scripts/bench_ui.py, scripts/bench_plan_ui.py) run it: the
Chromium flags they launch Debian Chromium with, a free loopback port, waiting until the server answers and
stopping a server started in its own process group.

Standard library only; the scripts import it as ``tests.panelserver`` with the repository root on
``sys.path``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

#: Headless Debian Chromium with nothing that reaches the network on its own.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run",
]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_command(port: int, *extra: str) -> list[str]:
    """``panel serve dashboard`` (this interpreter) on ``127.0.0.1:port``, accepting websockets from that
    origin, in one process; then the ``extra`` arguments."""
    return [sys.executable, "-m", "panel", "serve", "dashboard", "--address", "127.0.0.1", "--port", str(port),
            "--allow-websocket-origin", f"127.0.0.1:{port}", "--num-procs", "1", *extra]


def wait_until_serving(proc: subprocess.Popen, url: str, log: Path, timeout: float) -> None:
    """Poll ``url`` every 0.5 s until it answers. Raises RuntimeError with the server's ``log`` when the
    process exits first, or (after killing it) when ``timeout`` seconds pass."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited early:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url, timeout=5):  # noqa: S310 -- loopback only
                return
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"panel serve did not start:\n{log.read_text(errors='replace')}")


def stop_group(proc: subprocess.Popen) -> None:
    """Stop a server started with ``start_new_session=True``: SIGTERM to its process group, SIGKILL after
    20 s; nothing when it has exited already."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
