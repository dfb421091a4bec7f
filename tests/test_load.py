"""Load test: 20 concurrent browser sessions against ``panel serve dashboard`` on loopback.

What it proves (issue 5, "Done when"):

* every one of 20 concurrent sessions renders the validity heatmap, with no console error, no page
  error and no error notice, and the server counts 20 live sessions at once;
* after the sessions close and the server discards them, the server's resident memory comes back within
  20 % of its level after a warm-up session. The server runs as the README serves it, with
  ``PYTHONMALLOC=malloc``: with Python's small-object allocator the 20 sessions' ~50 MiB stay mapped
  (before -> peak -> after 235 -> 282 -> 276 MiB, 1.18x: arenas are returned only when every object in
  them is freed, and a few long-lived objects pin them; tracemalloc shows the Python heap itself back at
  its level), with the system allocator and the app's ``malloc_trim`` hook 243 -> 298 -> 245 MiB (1.01x).

How: ``panel serve dashboard`` runs in a subprocess on a free 127.0.0.1 port with
``--check-unused-sessions 2000 --unused-session-lifetime 120000`` (a closed session is discarded about
2 minutes after its page goes away) and Panel's session log
(``PANEL_LOG_LEVEL=info``: ``Session <id> launching`` / ``Session <id> destroyed``), from which the test
counts the live sessions. (Panel's ``--rest-session-info`` endpoint would be simpler but refuses a
directory app: "dashboard is not a script (.py) or notebook (.ipynb)", Panel 1.9.) One Debian
Chromium (Playwright) opens one context per session.

Why a lifetime longer than the default 15 s: Bokeh also discards a session whose page has been served
but whose websocket has not connected yet, and when that page then connects the server builds a *new*
document that never went through Panel's stylesheet patching, so the page loads Panel's CSS from
cdn.holoviz.org (console errors; unstyled widgets on a closed network). The server builds the 20
documents one after another (~3 s each on 2 shared cores), so the first pages wait ~60 s for their
websocket to be served and lose their sessions under the default lifetime -- a real deployment issue,
reported, that this test must not mistake for an app error. The lifetime here exceeds that wait. Server RSS is read with psutil. Every wait is
bounded; the server and the browser are stopped by the test. Nothing leaves the loopback interface.

Figures (baseline / peak / after RSS, time for all 20 to render) are printed and written to
``tests/artifacts/load_test.json``. No timing is asserted.

Without browsers (issue 24): :func:`test_websocket_load_30_sessions` runs ``scripts/load_test.py``
(the Bokeh websocket protocol spoken directly, see its docstring) at :data:`WS_SESSIONS` sessions, each
making :data:`WS_CHANGES` control changes (model, TP, GPU) 2-5 s apart, against a server as the README
serves it, and gates the server-only figures: every session renders (its document holds the validity
heatmap) with no error; at least 90 % of the changes answered; RSS once the closed
sessions are discarded <= :data:`WS_MAX_RSS_RATIO` x the warm baseline (after one warm-up session). The
figures go to ``tests/artifacts/load_test_ws.json``; the p95 change round trip is printed against its target
:data:`WS_MAX_P95_MS`, not asserted (a speed target: ``scripts/load_test.py`` is its benchmark).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from tests.panelserver import CHROMIUM_FLAGS, free_port, serve_command, stop_group

psutil = pytest.importorskip("psutil")

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
N_SESSIONS = 20
#: After the sessions close, RSS must come back to at most this multiple of the warm-up level.
MAX_RSS_RATIO = 1.20
#: Where the heatmap's Bokeh canvas lives (Playwright CSS pierces Panel's shadow roots).
HEATMAP = ".tp-heatmap canvas"
_SESSION_LINE = re.compile(r"Session (\d+) (launching|destroyed)")


def _get_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 -- loopback only
        return json.loads(r.read().decode())


class Server:
    """``panel serve dashboard`` in a subprocess on 127.0.0.1 (log to a temp file)."""

    def __init__(self, extra_args: list[str] | None = None, env: dict | None = None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(tempfile.mkstemp(prefix="tp-load-", suffix=".log")[1])
        cmd = serve_command(self.port, "--liveness", "--check-unused-sessions", "2000",
                            "--unused-session-lifetime", "120000", *(extra_args or []))
        base_env = {k: v for k, v in os.environ.items() if k != "TP_PLANNER_CATALOG"}  # shipped catalog
        # PYTHONMALLOC=malloc, the allocator this test's bound was measured with (idle sessions: the system
        # allocator's freed pages are returned by the app's malloc_trim hook; Python's arenas stay mapped
        # while any object in them lives). The README now serves with the default allocator, which
        # scripts/load_test.py measured faster and no hungrier with sessions that change settings.
        env = {**base_env, "PANEL_LOG_LEVEL": "info", "PYTHONMALLOC": "malloc", **(env or {})}
        self._log = open(self.log_path, "w")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        self.ps = psutil.Process(self.proc.pid)

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"panel serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                _get_json(f"{self.base}/liveness", timeout=2)
                return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"panel serve not ready after {timeout} s:\n{self.log()}")

    def rss(self) -> int:
        """Resident bytes of the server process (and any children)."""
        total = self.ps.memory_info().rss
        for c in self.ps.children(recursive=True):
            try:
                total += c.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total

    def settled_rss(self, samples: int = 5, every: float = 0.5) -> int:
        vals = []
        for _ in range(samples):
            vals.append(self.rss())
            time.sleep(every)
        return int(statistics.median(vals))

    def sessions(self) -> dict:
        """``{"live": n, "total": n}`` from Panel's session log, in log order (ids may be reused)."""
        live: set[str] = set()
        total = 0
        for m in _SESSION_LINE.finditer(self.log()):
            sid, what = m.group(1), m.group(2)
            if what == "launching":
                if sid not in live:
                    total += 1
                live.add(sid)
            else:
                live.discard(sid)
        return {"live": len(live), "total": total}

    def wait_live(self, predicate, timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        info = self.sessions()
        while not predicate(info["live"]):
            if time.monotonic() > deadline:
                raise TimeoutError(f"live sessions stuck at {info['live']} (total {info['total']})")
            time.sleep(0.25)
            info = self.sessions()
        return info

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_group(self.proc)
        self._log.close()


async def _open_session(browser, url: str, timeout_ms: int) -> dict:
    """Open one page in its own context, wait for the heatmap; return what the page reported."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 900})
    page = await ctx.new_page()
    errors: list[str] = []
    foreign: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url} ({r.failure})"))
    origin = url.split("/dashboard")[0]
    page.on("request", lambda r: foreign.append(r.url)
            if not r.url.startswith((origin, "data:", "blob:")) else None)
    t0 = time.monotonic()
    rendered = False
    try:
        await page.goto(url, timeout=timeout_ms)
        await page.wait_for_selector(HEATMAP, state="visible", timeout=timeout_ms)
        rendered = True
        n_error_notices = await page.locator(".tp-notice-error").count()
        if n_error_notices:
            errors.append(f"{n_error_notices} error notice(s) on the page: "
                          f"{await page.locator('.tp-notice-error').first.inner_text()}")
    except Exception as exc:  # noqa: BLE001 -- reported per session below
        errors.append(f"did not render: {type(exc).__name__}: {str(exc)[:300]}")
    return {"ctx": ctx, "rendered": rendered, "seconds": time.monotonic() - t0, "errors": errors,
            "foreign": foreign}


async def _run_load(server: Server) -> dict:
    from playwright.async_api import async_playwright

    url = f"{server.base}/dashboard"
    out: dict = {}
    async with async_playwright() as pw:
        # Playwright's launch gives the browser a fresh temporary profile (user-data-dir).
        browser = await pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_FLAGS)
        try:
            # Warm-up: one session, closed, discarded; then the baseline.
            warm = await _open_session(browser, url, 180_000)
            await warm["ctx"].close()
            assert warm["rendered"], f"warm-up session did not render: {warm['errors']}"
            await asyncio.to_thread(server.wait_live, lambda n: n == 0, 300)
            out["rss_before"] = await asyncio.to_thread(server.settled_rss)

            peak = {"rss": 0}
            done = asyncio.Event()

            async def sample_rss():
                while not done.is_set():
                    peak["rss"] = max(peak["rss"], await asyncio.to_thread(server.rss))
                    await asyncio.sleep(0.5)

            sampler = asyncio.create_task(sample_rss())
            t0 = time.monotonic()
            results = await asyncio.gather(*[_open_session(browser, url, 300_000) for _ in range(N_SESSIONS)])
            out["all_rendered_s"] = time.monotonic() - t0
            info = await asyncio.to_thread(server.sessions)
            out["live_at_peak"] = info["live"]
            done.set()
            await sampler
            out["rss_peak"] = max(peak["rss"], await asyncio.to_thread(server.rss))
            out["per_session_s"] = sorted(round(r["seconds"], 2) for r in results)
            out["errors"] = [(i, e) for i, r in enumerate(results) for e in r["errors"]]
            out["foreign"] = sorted({u for r in results for u in r["foreign"]})
            out["rendered"] = sum(r["rendered"] for r in results)
            for r in results:
                await r["ctx"].close()
        finally:
            await browser.close()
    # Sessions closed: wait until the server has destroyed them all, then for memory to settle.
    server.wait_live(lambda n: n == 0, timeout=300)
    limit = MAX_RSS_RATIO * out["rss_before"]
    deadline = time.monotonic() + 45
    after = server.settled_rss()
    while after > limit and time.monotonic() < deadline:
        time.sleep(2)
        after = server.settled_rss()
    out["rss_after"] = after
    return out


@pytest.fixture(scope="module")
def load_run(artifacts_dir: Path) -> dict:
    """Run the whole scenario once (server, warm-up, 20 sessions, close, discard) for the tests below."""
    pytest.importorskip("playwright")
    if not shutil.which("chromium"):
        pytest.skip("Debian chromium not installed")
    server = Server()
    try:
        server.wait_ready()
        # Its own thread and event loop: the sync Playwright of the browser tests (same pytest process)
        # leaves an event loop running in the main thread, where asyncio.run() refuses to start.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            res = pool.submit(asyncio.run, _run_load(server)).result()
        res["log"] = server.log()
    finally:
        server.stop()
        server.log_path.unlink(missing_ok=True)
    mib = 1 << 20
    res["summary"] = summary = {
        "sessions": N_SESSIONS,
        "rendered": res["rendered"],
        "live_at_peak": res["live_at_peak"],
        "rss_before_mib": round(res["rss_before"] / mib, 1),
        "rss_peak_mib": round(res["rss_peak"] / mib, 1),
        "rss_after_mib": round(res["rss_after"] / mib, 1),
        "after_over_before": round(res["rss_after"] / res["rss_before"], 3),
        "all_rendered_s": round(res["all_rendered_s"], 1),
        "per_session_render_s": res["per_session_s"],
        "errors": res["errors"][:20],
    }
    (artifacts_dir / "load_test.json").write_text(json.dumps(summary, indent=2))
    print("\nload test:", json.dumps(summary))
    return res


@pytest.mark.browser
def test_twenty_concurrent_sessions_render_without_errors(load_run: dict):
    res = load_run
    assert res["rendered"] == N_SESSIONS, f"only {res['rendered']}/{N_SESSIONS} rendered: {res['errors'][:10]}"
    assert not res["foreign"], f"pages requested other hosts: {res['foreign'][:10]}"
    assert not res["errors"], f"errors in the sessions: {res['errors'][:10]}"
    assert res["live_at_peak"] >= N_SESSIONS, f"server saw only {res['live_at_peak']} live sessions at once"
    app_log = _without_client_disconnects(res["log"])
    assert "Traceback" not in app_log, f"server logged an exception:\n{app_log[-4000:]}"


def _without_client_disconnects(log: str) -> str:
    """The server log without tornado's "Task exception was never retrieved" reports of a write to a
    websocket the browser had already closed (``WebSocketClosedError``: the test closes 20 contexts at
    once while the server still pushes updates). Any other traceback is kept."""
    return re.sub(
        r"Task exception was never retrieved\nfuture: <Task finished [^\n]*WebSocketProtocol13\.write_message"
        r"[^\n]*\n(?:.*\n)*?tornado\.websocket\.WebSocketClosedError\n?",
        "", log)


@pytest.mark.browser
def test_server_memory_returns_after_sessions_close(load_run: dict):
    s = load_run["summary"]
    assert load_run["rss_after"] <= MAX_RSS_RATIO * load_run["rss_before"], (
        f"server RSS after the sessions closed is {s['rss_after_mib']} MiB, more than "
        f"{MAX_RSS_RATIO:.0%} of {s['rss_before_mib']} MiB before them (peak {s['rss_peak_mib']} MiB)"
    )


#: Sessions, control changes per session, and the gates of :func:`test_websocket_load_30_sessions`.
WS_SESSIONS = 30
WS_CHANGES = 8
#: Target p95 of the change round trips (ms), printed (not asserted): the view updated within half a second for
#: 19 changes in 20. Not met on the 2-core machines (best 3.75 s at 30 sessions; issue 24 stays open for it).
WS_MAX_P95_MS = 500.0
#: RSS after the sessions are discarded over the warm baseline: the process-wide caches are bounded
#: (issue 24: 2.1-2.5x before), so 30 sessions may leave at most half the baseline behind.
WS_MAX_RSS_RATIO = 1.5


def test_websocket_load_30_sessions(artifacts_dir: Path):
    import sys
    from dataclasses import asdict

    sys.path.insert(0, str(ROOT))
    from scripts import load_test

    # Its own thread (and so its own event loop): the sync Playwright of the browser tests in this pytest process
    # leaves a loop running in the main thread, where load_test's asyncio.run() refuses to start (CI, 2026-12-08).
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        figs = pool.submit(load_test.run, os.environ.get("TP_LOAD_ALLOCATOR", "default"), WS_SESSIONS,
                           rounds=1, changes=WS_CHANGES).result()
    (artifacts_dir / "load_test_ws.json").write_text(json.dumps([asdict(f) for f in figs], indent=1))
    f = figs[0]
    print("\n" + load_test.HEADER + "\n" + load_test.format_row(f))
    assert f.rendered == WS_SESSIONS and not f.errors, f"{f.rendered}/{WS_SESSIONS} rendered; errors: {f.errors}"
    assert f.rt_n >= WS_SESSIONS * WS_CHANGES * 0.9, f"only {f.rt_n} changes answered"
    assert f.rss_after_ratio <= WS_MAX_RSS_RATIO, (
        f"RSS after the sessions closed: {f.rss_after_mib:.0f} MiB, {f.rss_after_ratio:.2f}x the warm baseline "
        f"{f.rss_baseline_mib:.0f} MiB (bound {WS_MAX_RSS_RATIO}x)")
    # The p95 target (WS_MAX_P95_MS) is a speed target: the developers' guide keeps those out of tests (the
    # machines are shared and noisy) and in benchmark scripts -- `python scripts/load_test.py` prints it per
    # allocator. Here it is recorded (tests/artifacts/load_test_ws.json) and printed, never asserted.
    print(f"p95 change round trip {f.rt_p95_ms:.0f} ms (target {WS_MAX_P95_MS:.0f} ms: "
          f"{'met' if f.rt_p95_ms <= WS_MAX_P95_MS else 'NOT met'})")
