"""Layout at 1366 x 768 and 1920 x 1080 (issue 22 items 6 and 8), in a real browser against `panel serve
dashboard`.

On every tab, at both sizes: nothing runs past the right edge of the page or of the scrolling area it sits in
(a table or heatmap that scrolls sideways on purpose hides its own overflow; content cut off by the page is
an overflow); the selected cell's details take the free width and show their suggestions without a nested
scroll; Bokeh logs no font-family warning. At 1366: the Memory tab shows a loading indicator while it is
built, plan commands wrap at spaces only (no token split over two lines), Copy confirms for about two
seconds, the catalog count follows the table's own column filter, and the calibration box refuses 500 GiB
and -3 with an inline error. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.browser.test_browser import LOAD_TIMEOUT
from tests.browser.conftest import ROOT

pytestmark = pytest.mark.browser

SIZES = [(1366, 768), (1920, 1080)]
TABS = ["Validity", "Per-rank layout", "Memory", "Plan", "Catalog"]
#: Llama-3.1-70B at TP 3: vLLM refuses it (64 heads), so the details list suggestions; 16 GPUs plan.
URL = "?model=meta-llama/Llama-3.1-70B-Instruct&tp=3&gpu_count=16"

#: Visible elements that run past the right edge of the viewport, or of the scrolling area they sit in
#: (#main, #sidebar). Clipping by an element inside those areas counts (a sideways-scrolling table or
#: heatmap hides its own overflow on purpose); clipping by the areas themselves does not (hidden content).
OVERFLOW_JS = """() => {
  const areas = [document.getElementById('main'), document.getElementById('sidebar')].filter(Boolean);
  const parentOf = (e) => e.parentElement || (e.parentNode && e.parentNode.host) || null;
  const edgeOf = (a) => a.getBoundingClientRect().left + a.clientLeft + a.clientWidth;
  const out = [];
  const check = (e) => {
    const r = e.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0)) return;
    let limit = window.innerWidth, clip = Infinity;
    for (let a = parentOf(e); a; a = parentOf(a)) {
      if (areas.includes(a)) { limit = Math.min(limit, edgeOf(a)); break; }
      if (a === document.body || a === document.documentElement) break;
      if (getComputedStyle(a).overflowX !== 'visible') clip = Math.min(clip, a.getBoundingClientRect().right);
    }
    const right = Math.min(r.right, clip);
    if (right > limit + 1 && r.left < right) {
      const s = getComputedStyle(e);
      if (s.visibility === 'hidden' || s.display === 'none' || s.opacity === '0') return;
      out.push({tag: e.tagName, cls: String(e.className || '').slice(0, 60), left: Math.round(r.left),
                right: Math.round(right), limit: Math.round(limit), text: (e.textContent || '').trim().slice(0, 40)});
    }
  };
  const visit = (root) => { for (const e of root.querySelectorAll('*')) { check(e); if (e.shadowRoot) visit(e.shadowRoot); } };
  visit(document);
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, over: out.slice(0, 20)};
}"""

#: Where the details' "Suggestions" heading is, its list's bottom, and every ancestor below #main that
#: scrolls its content (overflow auto/scroll with more content than room).
SUGGESTIONS_JS = """() => {
  const parentOf = (e) => e.parentElement || (e.parentNode && e.parentNode.host) || null;
  let h = null;
  const visit = (root) => { for (const e of root.querySelectorAll('h3')) if (!h && e.textContent.trim() === 'Suggestions') h = e;
                            for (const e of root.querySelectorAll('*')) if (e.shadowRoot) visit(e.shadowRoot); };
  visit(document);
  if (!h) return null;
  const list = h.nextElementSibling, main = document.getElementById('main'), scrollers = [];
  for (let a = parentOf(h); a && a !== main; a = parentOf(a)) {
    const s = getComputedStyle(a);
    if (['auto', 'scroll'].includes(s.overflowY) && a.scrollHeight > a.clientHeight + 1)
      scrollers.push(String(a.className || a.tagName).slice(0, 60));
  }
  const r = h.getBoundingClientRect(), lr = list ? list.getBoundingClientRect() : r;
  return {top: r.top, left: r.left, right: lr.right, scrollers, items: list ? list.children.length : 0};
}"""

#: Command tokens of the plan table split over more than one line box.
SPLIT_TOKENS_JS = """() => { const out = []; let n = 0;
  const visit = (root) => { for (const e of root.querySelectorAll('pre.tp-cmd .tp-tok')) { n += 1;
      if (e.getClientRects().length > 1) out.push(e.textContent); }
    for (const e of root.querySelectorAll('*')) if (e.shadowRoot) visit(e.shadowRoot); };
  visit(document); return {tokens: n, split: out.slice(0, 10)}; }"""


@pytest.fixture(params=SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def sized(request, browser):
    w, h = request.param
    page = browser.new_page()
    page.set_viewport_size({"width": w, "height": h})
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type in ("warning", "error") else None)
    yield page, w, h, warnings
    page.close()


def _idle(page) -> None:
    """Wait until no view is being built or computed (no "Building …" placeholder, no loading spinner)."""
    page.wait_for_function("() => { const busy = (root) => { if (root.querySelector('.tp-building, .pn-loading')) return true;"
                           " for (const e of root.querySelectorAll('*')) if (e.shadowRoot && busy(e.shadowRoot)) return true;"
                           " return false; }; return !busy(document); }", timeout=LOAD_TIMEOUT, polling=200)
    page.wait_for_timeout(800)


def test_no_tab_overflows_and_the_suggestions_show_without_a_nested_scroll(server, sized, artifacts_dir):
    page, w, h, warnings = sized
    page.goto(server.url + URL, timeout=LOAD_TIMEOUT)
    page.wait_for_selector(".tp-heatmap canvas", timeout=LOAD_TIMEOUT)
    _idle(page)
    sugg = page.evaluate(SUGGESTIONS_JS)
    assert sugg is not None and sugg["items"] >= 1, "the refused cell's details list no suggestions"
    assert sugg["scrollers"] == [], f"the suggestions sit in a nested scroll: {sugg['scrollers']}"
    details = page.locator(".tp-details-col").first.bounding_box()
    main = page.locator("#main").bounding_box()
    assert details["width"] >= 380 and details["x"] + details["width"] >= main["x"] + main["width"] - 60, details
    if w >= 1920:  # beside the heatmap, taking the rest of the row
        canvas = page.locator(".tp-heatmap canvas").first.bounding_box()
        assert details["x"] >= canvas["x"] + canvas["width"] - 1, (details, canvas)
    for tab in TABS:
        page.locator(".bk-tab", has_text=tab).first.click()
        page.wait_for_timeout(300)
        _idle(page)
        got = page.evaluate(OVERFLOW_JS)
        page.screenshot(path=str(artifacts_dir / f"layout-{w}-{re.sub(r'[^a-z]+', '-', tab.lower())}.png"))
        assert got["scrollWidth"] <= got["innerWidth"], (tab, got)
        assert got["over"] == [], (tab, got["over"])
    fonts = [m for m in warnings if "nonexistent field" in m or "font" in m.lower()]
    assert fonts == [], fonts


def test_memory_tab_shows_a_loading_indicator_while_it_is_built(server, browser):
    page = browser.new_page()
    try:
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(server.url + URL, timeout=LOAD_TIMEOUT)
        page.wait_for_selector(".tp-heatmap canvas", timeout=LOAD_TIMEOUT)
        _idle(page)
        page.locator(".bk-tab", has_text="Memory").first.click()
        page.wait_for_selector(".tp-building, .pn-loading", timeout=5_000)
        assert page.locator(".tp-mem-bars canvas").count() == 0  # the indicator came before the charts
        page.wait_for_selector(".tp-mem-bars canvas", timeout=LOAD_TIMEOUT)
        _idle(page)
        assert page.locator(".tp-building").count() == 0
    finally:
        page.close()


def test_plan_commands_wrap_at_spaces_and_copy_confirms(server, browser):
    page = browser.new_page()
    try:
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(server.url + URL + "&tab=plan", timeout=LOAD_TIMEOUT)
        page.wait_for_selector(".tp-plan-copy", timeout=LOAD_TIMEOUT)
        _idle(page)
        got = page.evaluate(SPLIT_TOKENS_JS)
        assert got["tokens"] > 20 and got["split"] == [], got
        shown = " ".join(page.locator("pre.tp-cmd").all_inner_texts()).split()
        assert any(t.startswith("--") and "-" in t[2:] for t in shown), shown[:40]  # hyphenated flags, whole
        button = page.locator(".tp-plan-copy").first
        button.click()
        page.wait_for_function("(el) => /^(Copied|Press Ctrl)/.test(el.textContent)", arg=button.element_handle(),
                               timeout=1_500)
        assert button.inner_text().startswith("Copied")
        page.wait_for_function("(el) => el.textContent === 'Copy'", arg=button.element_handle(), timeout=4_000)
    finally:
        page.close()


def test_catalog_count_follows_the_tables_column_filter(server, browser):
    ids = pd.read_parquet(ROOT / "data" / "catalog.parquet", columns=["model_id"])["model_id"].astype(str)
    want = int(ids.str.lower().str.contains("qwen", regex=False).sum())
    assert 0 < want < len(ids)
    page = browser.new_page()
    try:
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(server.url + "?tab=catalog", timeout=LOAD_TIMEOUT)
        page.wait_for_selector(".tp-catalog-table .tabulator-row", timeout=LOAD_TIMEOUT)
        _idle(page)
        assert page.locator(".tp-catalog-count b").first.inner_text() == str(len(ids))
        box = page.locator(".tp-catalog-table .tabulator-header-filter input").first
        box.click()
        box.press_sequentially("qwen", delay=50)
        box.press("Enter")
        page.locator(".tp-catalog-count b", has_text=str(want)).first.wait_for(timeout=30_000)
        assert f"({len(ids)} before the table's column filters)" in page.locator(".tp-catalog-count").first.inner_text()
    finally:
        page.close()


@pytest.mark.parametrize("typed,why", [("500", "more than the"), ("-3", "more than 0 GiB")])
def test_calibration_box_refuses_an_impossible_figure_with_an_inline_error(server, browser, typed, why):
    page = browser.new_page()
    try:
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(server.url + "?tab=memory&model=meta-llama/Llama-3.1-8B-Instruct&tp=1&kv_measured_gib=40",
                  timeout=LOAD_TIMEOUT)
        page.wait_for_selector(".tp-mem-calibrated", timeout=LOAD_TIMEOUT)
        _idle(page)
        box = page.locator(".tp-mem-calib input").first
        box.fill(typed)
        box.press("Enter")
        err = page.locator(".tp-notice-warning", has_text="not used").first
        err.wait_for(timeout=30_000)
        text = err.inner_text()
        assert why in text and typed.lstrip("-") in text, text
        assert box.input_value() == typed  # the refused figure stays in the box beside its error
        page.wait_for_function("() => !location.search.includes('kv_measured_gib')", timeout=5_000)
        assert page.locator(".tp-mem-calibrated").count() == 0  # and the view is no longer calibrated
    finally:
        page.close()
