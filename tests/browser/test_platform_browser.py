"""The GPU decides the verdict in the dashboard too (issue 23), in a real browser against `panel serve dashboard`.

DeepSeek-V3.2 (sparse MLA) at vLLM TP 8: valid on an H100; on an A100 vLLM finds no attention backend
(``vllm/platforms/cuda.py:472``, reproduced on the A100 stand-in's table). Picking the GPU in the sidebar changes
that heatmap cell; the address keeps the GPU and the PP size, and the copied link reopens with both.
"""

from __future__ import annotations

import time
import urllib.parse

import pytest

from tests.browser.test_browser import HEATMAP_CANVAS, LOAD_TIMEOUT, _heatmap

pytestmark = pytest.mark.browser

MODEL = "deepseek-ai/DeepSeek-V3.2"
#: The hover text of one cell of the heatmap (row of ``model``, column of TP ``tp`` in the only group).
CELL_INFO_JS = """([model, tp]) => {
  const roots = Bokeh.index.roots ?? Object.values(Bokeh.index);
  let view = null;
  const walk = (v) => { if (!v || view) return; if (v.model && v.model.title && v.model.title.text === 'Valid TP sizes') { view = v; return; } for (const c of (v.child_views || [])) walk(c); };
  for (const r of roots) walk(r);
  if (!view) return null;
  const m = view.model, d = m.renderers[0].data_source.data;
  const axis = [...m.left, ...m.right].find((a) => a.formatter && a.formatter.args);
  const args = axis.formatter.args, names = Array.from(args instanceof Map ? args.get('names') : args.names);
  const tps = [...new Set(m.x_range.factors.map((f) => f[1]))];
  const row = names.indexOf(model), col = tps.indexOf(tp);
  for (let i = 0; i < d.row.length; i++) if (d.row[i] === row && d.col[i] === col) return String(d.info[i]);
  return null;
}"""


def _info(page, tp: str = "8") -> str | None:
    return page.evaluate(CELL_INFO_JS, [MODEL, tp])


def _wait_info(page, pred, what: str, timeout: float = 60_000) -> str:
    deadline = time.monotonic() + timeout / 1000
    while True:
        info = _info(page)
        if info is not None and pred(info):
            return info
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; the cell says {info!r}")
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
    h100 = _wait_info(page, lambda t: t.lower().startswith("valid"), "the H100 verdict")
    assert "No valid attention backend" not in h100

    page.locator(".tp-gpu select").select_option(label="A100-80GB")
    a100 = _wait_info(page, lambda t: "No valid attention backend found" in t, "the A100 verdict")
    assert "use_sparse=True" in a100 and "dtype=torch.bfloat16" in a100
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
        info = _wait_info(other, lambda t: "No valid attention backend found" in t, "the reopened A100 verdict")
        assert "use_sparse=True" in info
    finally:
        other.close()
