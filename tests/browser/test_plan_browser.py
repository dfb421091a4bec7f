"""The Plan tab in a real browser (Debian Chromium via Playwright) against `panel serve dashboard`.

Proves (issue 12, part 2, "Done when"): the Plan tab renders its chart, ranked table and refused layouts
with no console errors and no request to any host but the server; changing the GPU count re-ranks the
layouts; a copied URL reproduces the plan in a fresh page; a row's copy button puts the layout's launch
command(s) on the clipboard. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import urllib.parse

import pytest

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000
LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"
PLAN_URL = f"?tab=plan&model={LLAMA70}&gpu=H100-80GB&gpu_count=16"

#: The ranked rows of the table as the browser shows them: [rank, framework, layout, sequences text].
ROWS_JS = """() => {
  const out = [];
  const walk = (root) => {
    for (const tr of root.querySelectorAll('tr.tp-plan-row'))
      out.push([tr.dataset.rank, tr.dataset.framework, tr.dataset.layout, tr.children[6].textContent]);
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  return out;
}"""

#: The Plan chart's bars (the Bokeh figure named tp-plan-sequences): factors, values and the title, and
#: whether its view has painted.
CHART_JS = """() => {
  let v = null;
  const walk = (view) => {
    if (!view || v) return;
    if (view.model && view.model.name === 'tp-plan-sequences' && view.frame) { v = view; return; }
    for (const c of (view.child_views || [])) walk(c);
  };
  for (const root of (Bokeh.index.roots ?? Object.values(Bokeh.index))) walk(root);
  if (!v) return null;
  const d = v.model.renderers[0].data_source.data;
  return {title: v.model.title.text, factors: v.model.y_range.factors, values: Array.from(d.sequences),
          xlabel: v.model.below[0].axis_label, painted: v.has_finished()};
}"""


def _open(rec, url: str):
    page = rec.page
    page.goto(url)
    page.wait_for_selector(".tp-plan-table", timeout=LOAD_TIMEOUT)
    page.wait_for_function(f"() => {{ const c = ({CHART_JS})(); return c && c.painted && c.values.length > 0; }}",
                           timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(500)
    return page


def _rows(page) -> list[list[str]]:
    return page.evaluate(ROWS_JS)


def _assert_clean(rec, server_url: str) -> None:
    host = urllib.parse.urlsplit(server_url).netloc
    foreign = [u for u in rec.requests if urllib.parse.urlsplit(u).netloc not in (host, "")
               and not u.startswith(("data:", "blob:"))]
    assert not foreign, f"requests to other hosts: {foreign[:10]}"
    assert not rec.console_errors, rec.console_errors
    assert not rec.page_errors, rec.page_errors
    assert not rec.dialogs, rec.dialogs


def _set_int(page, css: str, value: int) -> None:
    box = page.locator(f".{css} input").first
    box.fill(str(value))
    box.press("Enter")


def test_plan_tab_renders_clean(server, rpage, artifacts_dir):
    page = _open(rpage, server.url + PLAN_URL)
    rows = _rows(page)
    assert len(rows) == 10 and [r[0] for r in rows] == [str(i) for i in range(1, 11)]
    assert {r[1] for r in rows} <= {"vllm", "sglang", "tensorrt-llm"}
    chart = page.evaluate(CHART_JS)
    assert "16 × H100-80GB" in chart["title"] and "sequences" in chart["xlabel"]
    assert {f[0] for f in chart["factors"]} == {"vLLM", "SGLang", "TensorRT-LLM"}
    assert page.locator(".tp-plan-copy").count() == 10
    assert page.locator("tr.tp-refused-row").count() >= 1  # the refused layouts, greyed, with their reason
    assert "Most KV capacity for sequences of 32,768 tokens on 16 × H100-80GB" in page.locator(".tp-plan-best").inner_text()
    # The layout fits the page: no sideways scrolling, the table within the main column.
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths
    page.screenshot(path=str(artifacts_dir / "screenshot-plan.png"))
    _assert_clean(rpage, server.url)


def test_changing_the_gpu_count_re_ranks(server, rpage):
    page = _open(rpage, server.url + PLAN_URL)
    before = _rows(page)
    _set_int(page, "tp-plan-gpus", 32)
    page.wait_for_function(f"() => ({CHART_JS})().title.includes('32 × H100-80GB')", timeout=60_000)
    page.wait_for_function(f"(b) => JSON.stringify(({ROWS_JS})()) !== JSON.stringify(b)", arg=before,
                           timeout=60_000)
    after = _rows(page)
    assert after != before and len(after) == 10
    assert "32 × H100-80GB (4 nodes of 8)" in page.locator(".tp-plan-best").inner_text()
    page.wait_for_function("() => location.search.includes('gpu_count=32')", timeout=30_000)
    # Nodes × GPUs per node sets the count too: 2 nodes of 8 -> 16 GPUs, the first ranking again.
    assert page.locator(".tp-plan-nodes input").first.input_value() == "4"
    _set_int(page, "tp-plan-nodes", 2)
    page.wait_for_function("() => location.search.includes('gpu_count=16')", timeout=30_000)
    page.wait_for_function(f"(b) => JSON.stringify(({ROWS_JS})()) === JSON.stringify(b)", arg=before,
                           timeout=60_000)
    _assert_clean(rpage, server.url)


def test_copied_url_reproduces_the_plan(server, rpage, browser):
    page = _open(rpage, server.url + PLAN_URL)
    _set_int(page, "tp-plan-min-seqs", 90)
    page.locator(".tp-plan-frameworks label", has_text="SGLang").click()
    page.wait_for_function("() => location.search.includes('min_sequences=90') && "
                           "location.search.includes('plan_frameworks=vllm,tensorrt-llm')", timeout=30_000)
    page.wait_for_function(f"() => !({CHART_JS})().factors.some((f) => f[0] === 'SGLang')", timeout=60_000)
    page.wait_for_timeout(300)
    rows, summary = _rows(page), page.locator(".tp-plan-best").inner_text()
    assert rows and {r[1] for r in rows} <= {"vllm", "tensorrt-llm"}
    assert "at least 90 sequences" in summary
    other = browser.new_page()
    try:
        other.goto(page.url)
        other.wait_for_selector(".tp-plan-table", timeout=LOAD_TIMEOUT)
        other.wait_for_function(f"() => {{ const c = ({CHART_JS})(); return c && c.painted && c.values.length; }}",
                                timeout=LOAD_TIMEOUT)
        other.wait_for_timeout(500)
        assert _rows(other) == rows
        assert other.locator(".tp-plan-best").inner_text() == summary
        assert other.locator(".tp-url-notice .tp-notice-warning").count() == 0
        assert other.locator(".tp-plan-min-seqs input").first.input_value() == "90"
        assert other.evaluate(CHART_JS)["factors"] == page.evaluate(CHART_JS)["factors"]
    finally:
        other.close()
    _assert_clean(rpage, server.url)


def test_copy_button_puts_the_command_on_the_clipboard(server, browser):
    ctx = browser.browser.new_context(viewport={"width": 1920, "height": 1080})
    try:
        ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url.rsplit("/", 1)[0])
        page = ctx.new_page()
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(server.url + PLAN_URL)
        page.wait_for_selector(".tp-plan-copy", timeout=LOAD_TIMEOUT)
        page.wait_for_timeout(500)
        button = page.locator(".tp-plan-copy").nth(1)
        want = button.get_attribute("data-cmd")
        assert want and want.startswith("# ") and LLAMA70 in want
        button.click()
        page.wait_for_function("(el) => el.textContent.startsWith('Copied')", arg=button.element_handle(),
                               timeout=10_000)
        got = page.evaluate("() => navigator.clipboard.readText()")
        assert got == want
        # Every command of the layout, the visible first one included, verbatim.
        shown = page.locator("tr.tp-plan-cmd-row pre.tp-cmd").nth(1).inner_text()
        assert got.startswith(shown.strip())
        assert not [e for e in errors if "GL Driver" not in e], errors
    finally:
        ctx.close()
