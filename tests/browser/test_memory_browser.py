"""The Memory tab in a real browser (Debian Chromium via Playwright) against `panel serve dashboard`.

Issue 14 item 5: a link carrying a measured KV-cache figure opens the Memory tab calibrated ("Calibrated from
your log"), with the per-GPU breakdown table (weights, reserve implied by the log, KV cache, free) and the
evidence mark, and no console errors. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.browser.conftest import start_server, stop_server

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000
ART = Path(__file__).resolve().parents[1] / "artifacts"
URL = "?tab=memory&model=meta-llama/Llama-3.1-8B-Instruct&gpu=H100-80GB&tp=1&kv_measured_gib=54.12"

TEXT_JS = """(sel) => { const out = [];
  const walk = (root) => { for (const el of root.querySelectorAll(sel)) out.push(el.textContent);
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot); };
  walk(document); return out; }"""


def _port() -> int | None:
    """A free port of the 5700-5799 range this branch was given (TP_BROWSER_PORT overrides)."""
    want = [int(os.environ["TP_BROWSER_PORT"])] if os.environ.get("TP_BROWSER_PORT") else range(5760, 5800)
    for p in want:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                continue
            return p
    return None


@pytest.fixture(scope="module")
def mem_server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("mem"), port=_port())
    yield srv
    stop_server(srv)


def test_calibrated_memory_tab_from_a_link(mem_server, rpage):
    page = rpage.page
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(mem_server.url + URL)
    page.wait_for_function(f"() => ({TEXT_JS})('.tp-mem-calibrated').length > 0", timeout=LOAD_TIMEOUT)
    note = page.evaluate(TEXT_JS, ".tp-mem-calibrated")[0]
    assert "Calibrated from your log" in note and "54.12 GiB" in note
    parts = [t.strip() for t in page.evaluate(TEXT_JS, "table.tp-mem-breakdown tr[data-part] td:first-child")]
    assert parts == ["weights", "reserve implied by your log", "KV cache", "free"]
    ev = page.evaluate(TEXT_JS, ".tp-mem-evidence")
    assert ev and "checked against logs" in ev[0]
    assert any("TP 1 (calibrated)" in t for t in page.evaluate(TEXT_JS, "table.tp-capacity"))
    page.wait_for_timeout(1500)
    ART.mkdir(exist_ok=True)
    page.screenshot(path=str(ART / "memory-calibrated-1366.png"))
    assert rpage.console_errors == [] and rpage.page_errors == []
    host = mem_server.url.split("/dashboard")[0]
    assert all(u.startswith(host) or u.startswith("data:") or u.startswith("blob:") for u in rpage.requests)
