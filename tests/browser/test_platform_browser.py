"""The GPU decides the verdict in the dashboard too (issue 23), in a real browser against `panel serve dashboard`.

DeepSeek-V3.2 (sparse MLA) at vLLM TP 8: valid on an H100; on an A100 vLLM finds no attention backend
(``vllm/platforms/cuda.py:472``, reproduced on the A100 stand-in's table). Picking the GPU in the sidebar changes
that heatmap cell; the address keeps the GPU and the PP size, and the copied link reopens with both.
"""

from __future__ import annotations

import time
import urllib.parse

import pytest

from tests.browser.test_browser import HEATMAP_CANVAS, LOAD_TIMEOUT, _heatmap, _tap_cell

pytestmark = pytest.mark.browser

MODEL = "deepseek-ai/DeepSeek-V3.2"
def _details(page) -> str:
    """The text of the selected-cell pane (its HTML pane's content, inside Panel's shadow roots)."""
    m = page.locator(".tp-details-model")
    if m.count() == 0:
        return ""
    return m.first.evaluate("(e) => e.parentElement.innerText")


def _wait_details(page, pred, what: str, timeout: float = 60_000) -> str:
    deadline = time.monotonic() + timeout / 1000
    while True:
        text = _details(page)
        if pred(text):
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; the details say {text[:600]!r}")
        page.wait_for_timeout(150)


def _query(page) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(page.evaluate("location.href")).query))


def test_the_gpu_picker_changes_the_verdict_and_the_link_keeps_gpu_and_pp(server, rpage, browser, artifacts_dir):
    page = rpage.page
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(server.url + f"?model={MODEL}&search=DeepSeek-V3.2&frameworks=vllm&gpu=H100-80GB",
              timeout=LOAD_TIMEOUT)
    page.wait_for_selector(HEATMAP_CANVAS, timeout=LOAD_TIMEOUT)
    assert MODEL in _heatmap(page)["names"]
    _tap_cell(page, "vLLM", MODEL, "8")
    h100 = _wait_details(page, lambda t: "H100-80GB (cuda-sm90)" in t and "TP = 8" in t, "the H100 verdict")
    assert "\nvalid\n" in h100
    assert "No valid attention backend" not in h100

    page.locator(".tp-gpu select").select_option(label="A100-80GB")
    a100 = _wait_details(page, lambda t: "No valid attention backend found" in t, "the A100 verdict")
    assert "use_sparse=True" in a100 and "cuda-sm80" in a100
    page.mouse.move(5, 700)  # the cell's hover text off the heatmap
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts_dir / "heatmap-gpu-a100-1366.png"))

    # the PP size: set in the sidebar, kept in the address with the GPU
    pp = page.locator(".tp-pp input").first
    pp.fill("2")
    pp.press("Enter")
    page.wait_for_function("() => decodeURIComponent(location.search).includes('pp=2')", timeout=30_000)
    q = _query(page)
    assert q.get("gpu") == "A100-80GB" and q.get("pp") == "2", q

    other = browser.new_page()
    try:
        other.set_viewport_size({"width": 1366, "height": 768})
        other.goto(page.evaluate("location.href"), timeout=LOAD_TIMEOUT)
        other.wait_for_selector(HEATMAP_CANVAS, timeout=LOAD_TIMEOUT)
        assert other.locator(".tp-gpu select").input_value() == "A100-80GB"
        assert other.locator(".tp-pp input").first.input_value() == "2"
        _tap_cell(other, "vLLM", MODEL, "8")
        info = _wait_details(other, lambda t: "No valid attention backend found" in t, "the reopened A100 verdict")
        assert "cuda-sm80" in info
    finally:
        other.close()
