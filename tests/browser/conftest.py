"""Fixtures for the browser tests: `panel serve dashboard` in a subprocess on a free loopback port, and
Debian Chromium driven by Playwright (``playwright install`` cannot download browsers here).

Every page records its console errors, uncaught page errors, dialogs and every request URL, so tests can
assert the page ran no script it should not have and fetched nothing from any host but the server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.panelserver import CHROMIUM_FLAGS, free_port, serve_command, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
#: The start of a page function (``page.evaluate``) that reads the validity heatmap: ``v`` is its BokehJS
#: view (the figure named ``tp-validity-heatmap``, found through every root's child views), or null.
HEATMAP_VIEW_JS = """() => {
  let v = null;
  const walk = (view) => {
    if (!view || v) return;
    if (view.frame && view.canvas_view && view.model.name === 'tp-validity-heatmap') { v = view; return; }
    for (const c of (view.child_views || [])) walk(c);
  };
  for (const root of (Bokeh.index.roots ?? Object.values(Bokeh.index))) walk(root);
"""
#: Console messages that are not the page's fault (the software GL driver of headless Chromium).
BENIGN_CONSOLE = ("GL Driver Message", "GPU stall due to ReadPixels")


@dataclass
class Server:
    url: str
    proc: subprocess.Popen
    log: Path

    def tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def start_server(tmp: Path, env_extra: dict[str, str] | None = None, timeout: float = 240.0,
                 extra_args: tuple[str, ...] = (), port: int | None = None) -> Server:
    """Start ``panel serve dashboard`` on ``port`` (default: a free loopback port); wait until /dashboard answers.

    The environment carries no ``BOKEH_*`` setting, so the server loads its resources exactly as the
    README's plain ``panel serve dashboard`` does (the air-gap assertions hold for that command).
    """
    port = port or free_port()
    log = tmp / f"panel-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOKEH_")}
    env = {**env, **(env_extra or {}), "PYTHONUNBUFFERED": "1"}
    cmd = serve_command(port, *extra_args)
    fh = open(log, "wb")  # noqa: SIM115 -- closed with the process
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
    wait_until_serving(proc, f"http://127.0.0.1:{port}/", log, timeout)
    return Server(url=f"http://127.0.0.1:{port}/dashboard", proc=proc, log=log)


def stop_server(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait(timeout=20)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The dashboard on the shipped catalog."""
    srv = start_server(tmp_path_factory.mktemp("srv"))
    yield srv
    stop_server(srv)


@pytest.fixture(scope="session")
def browser():
    exe = shutil.which("chromium")
    if not exe:
        pytest.fail("Debian chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # launch() gives the browser a fresh temporary user-data-dir, removed on close.
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS, headless=True)
        ctx = b.new_context(viewport={"width": 1920, "height": 1080}, accept_downloads=True)
        yield ctx
        ctx.close()
        b.close()


@dataclass
class Recorded:
    page: object
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture()
def rpage(browser):
    """A fresh tab that records console errors, page errors, dialogs and requests."""
    page = browser.new_page()
    rec = Recorded(page=page)

    def on_console(msg):
        if msg.type == "error" and not any(b in msg.text for b in BENIGN_CONSOLE):
            rec.console_errors.append(msg.text)

    def on_dialog(d):
        rec.dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    page.on("console", on_console)
    page.on("pageerror", lambda e: rec.page_errors.append(str(e)))
    page.on("dialog", on_dialog)
    page.on("request", lambda r: rec.requests.append(r.url))
    yield rec
    page.close()
