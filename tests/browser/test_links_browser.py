"""Links carry the state at once (issue 22 item 5), in a real browser against `panel serve dashboard`.

For each change that is part of the state -- a tab, the memory calibration (``kv_measured_gib``), a tapped
cell (model, framework, TP), a framework ticked on -- the address bar holds the new state within
:data:`URL_WITHIN_MS` of the change (it used to arrive 1-15 s later: a debounced timeout callback queued
behind the tab's build), and the copied address, opened in a new page, shows the same state.
"""

from __future__ import annotations

import time
import urllib.parse

import pytest

from tests.browser.test_browser import HEATMAP_CANVAS, LOAD_TIMEOUT, _heatmap, _tap_cell, _wait_heatmap

pytestmark = pytest.mark.browser

#: The address must follow a change within this long (the poll starts at the change).
URL_WITHIN_MS = 1000
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _query(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def _url_follows(page, pred_js: str, what: str) -> tuple[str, float]:
    """Poll ``location.href`` from now until ``pred_js`` (a JS expression over ``q``, the decoded search)
    holds; at most :data:`URL_WITHIN_MS`. Returns the address and how long it took (ms)."""
    t0 = time.monotonic()
    try:
        page.wait_for_function(f"() => {{ const q = decodeURIComponent(location.search); return {pred_js}; }}",
                               timeout=URL_WITHIN_MS, polling=25)
    except Exception as exc:  # noqa: BLE001 -- name what was late and what the address said instead
        raise AssertionError(f"{what}: the address did not follow within {URL_WITHIN_MS} ms "
                             f"(it reads {page.evaluate('location.href')!r})") from exc
    return page.evaluate("location.href"), (time.monotonic() - t0) * 1000


def _active_tab(page) -> str:
    return page.locator(".bk-tab.bk-active").first.inner_text().strip()


def _reopen(browser, url: str, ready: str):
    other = browser.new_page()
    other.set_viewport_size({"width": 1366, "height": 768})
    other.goto(url, timeout=LOAD_TIMEOUT)
    other.wait_for_selector(ready, timeout=LOAD_TIMEOUT)
    other.wait_for_timeout(500)
    return other


def _wait_memory_built(page) -> None:
    page.wait_for_selector(".tp-mem-calib input", timeout=LOAD_TIMEOUT)
    page.wait_for_function("() => !document.querySelector('.pn-loading')", timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(300)


def test_every_change_reaches_the_url_at_once_and_the_copied_link_reopens_it(server, rpage, browser):
    page = rpage.page
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(server.url + f"?model={MODEL}&search=Llama-3.1-8B", timeout=LOAD_TIMEOUT)
    page.wait_for_selector(HEATMAP_CANVAS, timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(800)
    took = {}

    # 1. a tab: Memory, built for the first time (the slow case: the address used to wait for the build)
    page.locator(".bk-tab", has_text="Memory").first.click()
    url, took["tab=memory"] = _url_follows(page, "q.includes('tab=memory')", "Memory tab")
    other = _reopen(browser, url, ".tp-mem-calib input")
    try:
        assert _active_tab(other) == "Memory"
    finally:
        other.close()

    # 2. the calibration
    _wait_memory_built(page)
    box = page.locator(".tp-mem-calib input").first
    box.fill("40")
    box.press("Enter")
    url, took["kv_measured_gib"] = _url_follows(page, "q.includes('kv_measured_gib=40')", "calibration")
    assert _query(url)["kv_measured_gib"] == "40" and _query(url)["tab"] == "memory"
    other = _reopen(browser, url, ".tp-mem-calib input")
    try:
        _wait_memory_built(other)
        assert other.locator(".tp-mem-calib input").first.input_value() == "40"
        other.wait_for_selector(".tp-mem-calibrated", timeout=LOAD_TIMEOUT)
        assert _active_tab(other) == "Memory"
    finally:
        other.close()

    # 3. back to Validity (the default tab leaves the link), then a tapped cell: model, framework, TP
    page.locator(".bk-tab", has_text="Validity").first.click()
    url, took["tab=validity"] = _url_follows(page, "!q.includes('tab=')", "Validity tab")
    page.wait_for_selector(HEATMAP_CANVAS, timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(500)
    hm = _heatmap(page)
    model = next(m for m in hm["names"] if m == MODEL)
    t0 = time.monotonic()
    _tap_cell(page, "SGLang", model, "4")
    url, _ = _url_follows(page, "q.includes('framework=sglang') && q.includes('tp=4')", "tapped cell")
    took["cell"] = (time.monotonic() - t0) * 1000
    assert _query(url)["model"] == MODEL and _query(url)["kv_measured_gib"] == "40"
    other = _reopen(browser, url, HEATMAP_CANVAS)
    try:
        row = _heatmap(other)["names"].index(MODEL)
        _wait_heatmap(other, lambda h: h["selected"] == {"x": [["SGLang", "4"]], "y": [-(row + 0.5)]},
                      "the copied link's outlined cell", 30_000)
        assert other.locator(".tp-details-model").first.inner_text().strip() == MODEL
    finally:
        other.close()

    # 4. a framework ticked on
    page.locator(".tp-frameworks label", has_text="TensorRT-LLM").first.click()
    url, took["frameworks"] = _url_follows(page, "q.includes('tensorrt-llm')", "framework ticked")
    other = _reopen(browser, url, HEATMAP_CANVAS)
    try:
        _wait_heatmap(other, lambda h: "TensorRT-LLM" in {g for g, _ in h["xf"]}, "the TensorRT-LLM group", 30_000)
    finally:
        other.close()
    print("address followed the change after (ms):", {k: round(v) for k, v in took.items()})
    assert not rpage.page_errors, rpage.page_errors
