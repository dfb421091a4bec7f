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



RANGES_JS = """() => { const out = [];
  for (const d of Bokeh.documents) for (const m of d._all_models.values()) {
    if (!m.x_range || !m.y_range || !m.title || !m.title.text) continue;
    const num = (r) => (typeof r.start === 'number' && typeof r.end === 'number') ? [r.start, r.end] : null;
    out.push({title: m.title.text, x: num(m.x_range), y: num(m.y_range)});
  }
  return out; }"""


def _gib(gpu: str) -> float:
    from dashboard import memory

    return float(memory.load_gpus().set_index("gpu").loc[gpu, "memory_gib"])


def test_axes_follow_the_gpu_after_a_change(mem_server, rpage):
    """Issue 22: after the GPU changes, the breakdown bar's x axis (GiB) and the memory-per-GPU bars' y axis
    (GiB) are redrawn for the new card: no range kept from the previous GPU, no axis shared between them."""
    from dashboard.plots.memory import axis_top

    page = rpage.page
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(mem_server.url + "?tab=memory&model=meta-llama/Llama-3.1-8B-Instruct&gpu=H100-80GB&tp=1")
    page.wait_for_function(f"() => ({TEXT_JS})('table.tp-mem-breakdown').length > 0", timeout=LOAD_TIMEOUT)

    def plots(card: str) -> tuple[dict, dict]:
        """(breakdown bar, memory-per-GPU bars) of ``card``, waiting until both are drawn for it."""
        page.wait_for_function(
            f"() => {{ const t = ({RANGES_JS})().map(r => r.title);"
            f" return t.some(x => x.endsWith(' on {card}') && !x.startsWith('Memory per GPU'))"
            f" && t.some(x => x.startsWith('Memory per GPU') && x.endsWith(' on {card}')); }}", timeout=60_000)
        page.wait_for_timeout(1000)
        rs = [r for r in page.evaluate(RANGES_JS) if r["title"].endswith(f" on {card}")]
        bd = next(r for r in rs if not r["title"].startswith("Memory per GPU"))
        bars = next(r for r in rs if r["title"].startswith("Memory per GPU"))
        return bd, bars

    for i, card in enumerate(("H100-80GB", "T4-16GB", "H100-80GB")):
        if i:  # the link opened the first card; pick the next ones in the GPU select
            page.locator(".tp-gpu select").select_option(label=card)
            page.wait_for_function(f"() => location.search.includes('gpu={card}')", timeout=30_000)
        bd, bars = plots(card)
        gib = _gib(card)
        # the breakdown bar: horizontal, 0 .. max(card, parts) * 1.01 (dashboard/plots/memory.py gpu_breakdown)
        assert bd["x"] is not None and bd["x"][0] == 0.0, bd
        assert gib * 1.01 - 1e-6 <= bd["x"][1] <= gib * 1.6, (card, bd)
        # the memory bars: 0 .. axis_top(card, totals), at least the card's line plus 15 %, at most 2 x 1.12
        assert bars["y"] is not None and bars["y"][0] == 0.0, bars
        assert axis_top(gib, [0.0]) - 1e-6 <= bars["y"][1] <= gib * 2.3, (card, bars)
        if card == "T4-16GB":
            ART.mkdir(exist_ok=True)
            page.screenshot(path=str(ART / "memory-after-gpu-change-1366.png"), full_page=True)
    assert rpage.page_errors == []
