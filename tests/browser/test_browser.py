"""The dashboard in a real browser (Debian Chromium via Playwright) against `panel serve dashboard`.

Proves: the page loads with no console errors and requests nothing from any host but the server; the
heatmap (one figure, a column group per framework) is there, fits beside the details and scrolls
through a long catalog, the server sending the rows that come into view; switching framework updates
its column groups; tapping a cell outlines it and shows that model's details and per-rank layout; a URL
with state round-trips; a model id ``<img src=x onerror=alert(1)>`` renders as text (axis, tooltip,
details, catalog) and runs nothing; each export produces a file; a screenshot of every view is saved in
tests/artifacts/.
"""

from __future__ import annotations

import math

import time
import urllib.parse

import pytest
from conftest import HEATMAP_VIEW_JS  # tests/browser/conftest.py (its folder is on sys.path)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=alert(1)>"
HEATMAP_CANVAS = ".tp-heatmap canvas"
LOAD_TIMEOUT = 120_000

#: The validity heatmap (one Bokeh figure for every selected framework) as the browser holds it: the
#: plot frame in page coordinates, the nested x factors ``[group, tp]`` and the synthetic x extent, the
#: model axis (``start`` at the bottom, ``end`` at the top; row ``r`` centred at ``-(r + 0.5)``), every
#: model id in row order (the y-axis formatter's names), the y tick labels drawn now, the rows whose
#: cells the browser holds, the outline of the selected cell and the number of in-figure legends.
HEATMAP_JS = HEATMAP_VIEW_JS + """  if (!v) return null;
  const m = v.model, r = v.canvas_view.el.getBoundingClientRect(), b = v.frame.bbox;
  const axis = [...m.left, ...m.right].find((a) => a.formatter && a.formatter.args);
  const args = axis.formatter.args;
  const names = args instanceof Map ? args.get('names') : args.names;
  const av = v.renderer_views.get(axis);
  const ticks = Array.from(av.tick_coords.major[av.dimension]);
  const cells = m.renderers[0].data_source, sel = m.renderers[2].data_source.data;
  const legends = [...m.below, ...m.above, ...m.left, ...m.right, ...m.center]
    .filter((x) => x.type === 'Legend' || String(x).startsWith('Legend')).length;
  return {title: m.title.text, x: r.x + b.left, y: r.y + b.top, w: b.width, h: b.height,
          canvas: {left: r.left, right: r.right, top: r.top},
          xf: m.x_range.factors, x0: m.x_range.start, x1: m.x_range.end, gp: m.x_range.group_padding,
          start: m.y_range.start, end: m.y_range.end, names: Array.from(names),
          labels: av.compute_labels(ticks).items.map((t) => t.text),
          rows: [...new Set(Array.from(cells.data.row))].sort((p, q) => p - q),
          tapped: Array.from(cells.selected.indices),
          selected: {x: Array.from(sel.x), y: Array.from(sel.y)}, legends};
}"""

#: Every other plot with a title (the per-rank layout plots), with its frame and categorical factors.
PLOTS_JS = """() => {
  const out = [];
  const walk = (view) => {
    if (!view) return;
    if (view.frame && view.canvas_view && view.model.title) {
      const r = view.canvas_view.el.getBoundingClientRect();
      out.push({title: view.model.title.text, x: r.x + view.frame.bbox.left, y: r.y + view.frame.bbox.top,
                w: view.frame.bbox.width, h: view.frame.bbox.height,
                xf: view.model.x_range.factors, yf: view.model.y_range.factors});
    }
    for (const c of (view.child_views || [])) walk(c);
  };
  for (const root of (Bokeh.index.roots ?? Object.values(Bokeh.index))) walk(root);
  return out;
}"""


def _open(rec, url: str, selector: str = HEATMAP_CANVAS):
    page = rec.page
    page.goto(url)
    page.wait_for_selector(selector, timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(800)
    return page


def _tab(page, name: str) -> None:
    page.locator(".bk-tab", has_text=name).first.click()


def _wait_url(page, fragment: str, timeout: float = 30_000) -> None:
    page.wait_for_function("(f) => decodeURIComponent(location.search).includes(f)", arg=fragment, timeout=timeout)


def _plot(page, title: str) -> dict:
    plots = page.evaluate(PLOTS_JS)
    for f in plots:
        if f["title"] == title:
            return f
    raise AssertionError(f"no plot titled {title!r}: {[f['title'] for f in plots]}")


def _wait_title(page, title: str, present: bool = True, timeout: float = 60_000) -> None:
    page.wait_for_function(
        "([t, want]) => { const out = []; const walk = (v) => { if (!v) return; if (v.model && v.model.title && v.model.title.text === t && v.frame) out.push(v); for (const c of (v.child_views || [])) walk(c); }; for (const r of (Bokeh.index.roots ?? Object.values(Bokeh.index))) walk(r); return (out.length > 0) === want; }",
        arg=[title, present], timeout=timeout,
    )


def _heatmap(page) -> dict:
    hm = page.evaluate(HEATMAP_JS)
    assert hm is not None, "no validity heatmap on the page"
    return hm


def _brief(hm: dict | None) -> dict | None:
    """The heatmap state without its long lists (for assertion messages)."""
    if hm is None:
        return None
    return {**{k: v for k, v in hm.items() if k not in ("names", "labels", "xf", "rows")},
            "groups": _groups(hm), "rows": hm["rows"][:1] + hm["rows"][-1:], "labels": hm["labels"][:2]}


def _wait_heatmap(page, pred, what: str, timeout: float = 60_000) -> dict:
    """Poll the heatmap until ``pred(heatmap)`` holds; fail after ``timeout`` ms."""
    deadline = time.monotonic() + timeout / 1000
    while True:
        hm = page.evaluate(HEATMAP_JS)
        if hm is not None and pred(hm):
            return hm
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {_brief(hm)}")
        page.wait_for_timeout(100)


def _groups(hm: dict) -> list[str]:
    """Column groups (framework labels) left to right."""
    return list(dict.fromkeys(g for g, _ in hm["xf"]))


def _tps(hm: dict, group: str) -> list[str]:
    return [t for g, t in hm["xf"] if g == group]


def _units(hm: dict) -> float:
    """Width of the x axis in TP columns (nested factors, ``group_padding`` between groups)."""
    groups = _groups(hm)
    return len(groups) * len(_tps(hm, groups[0])) + (len(groups) - 1) * hm["gp"]


def _visible_rows(hm: dict) -> list[int]:
    """Rows whose centre ``-(r + 0.5)`` lies in the model axis's range."""
    return [r for r in range(len(hm["names"])) if hm["start"] <= -(r + 0.5) <= hm["end"]]


def _cell_point(hm: dict, group: str, tp: str, model: str) -> tuple[float, float]:
    """Page coordinates of the centre of the cell (``group``, ``tp``, ``model``); its row must be in view."""
    groups, tps = _groups(hm), _tps(hm, group)
    units = _units(hm)
    assert hm["x0"] == 0 and abs(hm["x1"] - units) < 1e-9, _brief(hm)  # no range/factor padding
    cx = 0.5 + tps.index(tp) + groups.index(group) * (len(tps) + hm["gp"])
    cy = -(hm["names"].index(model) + 0.5)
    assert hm["start"] < cy < hm["end"], f"{model!r} is not in view: {_brief(hm)}"
    return (hm["x"] + cx / units * hm["w"],
            hm["y"] + (hm["end"] - cy) / (hm["end"] - hm["start"]) * hm["h"])  # y grows upwards


def _tap_cell(page, group: str, model: str, tp: str) -> dict:
    """Click the cell; wait until the server outlines it (and only it). Returns the heatmap then."""
    hm = _heatmap(page)
    page.mouse.click(*_cell_point(hm, group, tp, model))
    want = {"x": [[group, tp]], "y": [-(hm["names"].index(model) + 0.5)]}
    return _wait_heatmap(page, lambda h: h["selected"] == want, f"the outline of {group} / {model} / TP {tp}", 30_000)


def _assert_clean(rec, server_url: str) -> None:
    host = urllib.parse.urlsplit(server_url).netloc
    foreign = [u for u in rec.requests if urllib.parse.urlsplit(u).netloc not in (host, "") and not u.startswith(("data:", "blob:"))]
    assert not foreign, f"requests to other hosts: {foreign[:10]}"
    assert not rec.console_errors, rec.console_errors
    assert not rec.page_errors, rec.page_errors
    assert not rec.dialogs, rec.dialogs


def test_page_loads_clean_with_heatmap(server, rpage, artifacts_dir):
    t0 = time.perf_counter()
    page = _open(rpage, server.url)
    # Not asserted (shared, noisy machine): printed for the record; includes _open's 0.8 s settle time.
    print(f"\nnavigation -> heatmap canvas + 0.8 s: {time.perf_counter() - t0:.2f} s")
    hm = _heatmap(page)
    assert hm["title"] == "Valid TP sizes"
    assert _groups(hm) == ["vLLM", "SGLang"]
    tps = ["1", "2", "3", "4", "6", "8", "12", "16", "32", "64"]
    assert _tps(hm, "vLLM") == _tps(hm, "SGLang") == tps
    assert len(hm["names"]) >= 100
    assert page.get_by_text("Selected cell").count() >= 1
    # One page legend: a colour swatch per status, with the cell's mark drawn in SVG where it has one.
    assert page.locator(".tp-legend").count() == 1
    assert page.locator(".tp-legend svg").count() == 4  # x, circle, plus, dash (plain valid has none)
    page.screenshot(path=str(artifacts_dir / "screenshot-validity.png"))
    _assert_clean(rpage, server.url)


def test_heatmap_fits_the_1920px_page_beside_the_details(server, rpage):
    """Default view (vLLM and SGLang, the shipped catalog, 10 TP sizes) at 1920 x 1080: the heatmap lies inside
    the viewport and left of the details column, each TP column keeps at least MIN_COL_PX pixels, and
    it shows VISIBLE_ROWS model rows at a time, so the page does not grow past the screen."""
    from dashboard.plots import heatmap

    page = _open(rpage, server.url)
    hm = _heatmap(page)
    details = page.locator(".tp-details-col").bounding_box()
    assert hm["x"] >= 0 and hm["x"] + hm["w"] <= 1920, _brief(hm)
    assert hm["x"] + hm["w"] <= details["x"], (_brief(hm), details)
    assert hm["w"] / _units(hm) >= heatmap.MIN_COL_PX, _brief(hm)  # readable cells
    assert hm["end"] - hm["start"] == heatmap.VISIBLE_ROWS and hm["h"] == heatmap.VISIBLE_ROWS * heatmap.ROW_PX
    assert len(hm["labels"]) == heatmap.VISIBLE_ROWS  # one model name per row in view
    # The heatmap scrolls inside its own area, so the page itself does not grow past the screen.
    box = page.locator(".tp-heatmap-scroll").first.bounding_box()
    assert box["y"] + box["height"] <= 1080


def test_heatmap_scrolls_and_loads_the_rows_in_view(server, rpage, artifacts_dir):
    """Shipped catalog (more models than VISIBLE_ROWS): the heatmap shows VISIBLE_ROWS rows and the browser holds only those
    plus a margin; the mouse wheel scrolls the rows, the server sends the rows that come into view, the
    model names follow, and a tap on a scrolled-in row selects that row's model."""
    from dashboard.plots import heatmap

    page = _open(rpage, server.url)
    hm = _heatmap(page)
    names, rows = hm["names"], heatmap.VISIBLE_ROWS
    assert len(names) > rows
    assert (hm["start"], hm["end"]) == (-rows, 0)
    assert _visible_rows(hm) == list(range(rows))
    assert hm["labels"] == [heatmap.short_label(m) for m in names[:rows]]
    assert set(range(rows)) <= set(hm["rows"]) and max(hm["rows"]) < rows + heatmap.WINDOW_MARGIN_ROWS, _brief(hm)
    before = hm["labels"]

    page.mouse.move(hm["x"] + hm["w"] / 2, hm["y"] + hm["h"] / 2)
    page.mouse.wheel(0, 600)

    def scrolled_and_loaded(h):
        return h["end"] <= -1 and set(_visible_rows(h)) <= set(h["rows"]) and h["labels"] != before

    hm = _wait_heatmap(page, scrolled_and_loaded, "the rows scrolled into view", 30_000)
    page.mouse.move(0, 0)  # (the tooltip off the screenshot)
    assert hm["end"] - hm["start"] == rows and hm["start"] >= -len(names), _brief(hm)
    assert hm["labels"] == [heatmap.short_label(names[r]) for r in _visible_rows(hm)]
    page.screenshot(path=str(artifacts_dir / "screenshot-validity-scrolled.png"))
    # The server maps a tap to the row under the pointer, wherever the view has scrolled.
    row = _visible_rows(hm)[-1]
    assert row >= rows, _brief(hm)
    _tap_cell(page, "SGLang", names[row], "2")
    expect(page.locator(".tp-details-model")).to_have_text(names[row], timeout=30_000)
    _assert_clean(rpage, server.url)


def _row_at(hm: dict, page_y: float) -> int:
    """The model row under page coordinate ``page_y`` of the heatmap's frame."""
    data_y = hm["end"] - (page_y - hm["y"]) / hm["h"] * (hm["end"] - hm["start"])
    return int(math.floor(-data_y))


def test_tooltip_never_shows_another_cell_after_a_scroll(server, rpage):
    """Wheel scrolling under a still pointer moves other cells under it: the tooltip must not keep
    describing the cell it was opened on (it hides; the next pointer move shows the cell now there), and
    the view stops on whole rows."""
    page = _open(rpage, server.url)
    hm = _heatmap(page)
    x, y = _cell_point(hm, "vLLM", "8", hm["names"][5])
    page.mouse.move(x, y)
    tip = page.locator(".bk-Tooltip .bk-tooltip-content").first
    tip.wait_for(state="visible", timeout=30_000)
    assert tip.inner_text().splitlines()[0] == hm["names"][5]
    for _ in range(3):
        page.mouse.wheel(0, 120)
        page.wait_for_timeout(600)
        hm = _heatmap(page)
        under = hm["names"][_row_at(hm, y)]
        if page.locator(".bk-Tooltip").first.is_visible():
            assert tip.inner_text().splitlines()[0] == under, (tip.inner_text(), under)
    assert hm["end"] == round(hm["end"]) and hm["start"] == round(hm["start"]), _brief(hm)  # whole rows
    _wait_heatmap(page, lambda h: _row_at(h, y) in h["rows"], "the rows in view loaded")
    page.mouse.move(x + 1, y)
    tip.wait_for(state="visible", timeout=30_000)
    hm = _heatmap(page)
    assert tip.inner_text().splitlines()[0] == hm["names"][_row_at(hm, y)]
    _assert_clean(rpage, server.url)


def test_picking_a_model_scrolls_its_row_into_view_with_its_cells(server, rpage):
    """The "Selected model" box: picking a model far down the list scrolls the heatmap to its row, and
    the browser gets that window's cells (the server moves the range itself, under a document hold)."""
    page = _open(rpage, server.url)
    hm = _heatmap(page)
    target = hm["names"][-3]
    box = page.locator(".tp-model-picker input").first
    box.click()
    box.press_sequentially(target[-12:], delay=30)  # (typed: the menu follows key presses)
    page.locator(".bk-menu div", has_text=target).first.click()
    row = hm["names"].index(target)
    hm = _wait_heatmap(page, lambda h: h["start"] < -(row + 0.5) < h["end"] and row in h["rows"],
                       f"row {row} ({target}) in view with its cells")
    assert all(r in hm["rows"] for r in _visible_rows(hm)), _brief(hm)  # every row in view has its cells
    _assert_clean(rpage, server.url)


def test_tap_outlines_the_cell_without_dimming_the_others(server, rpage):
    page = _open(rpage, server.url + "?search=Llama-3.1-8B,Qwen2.5-7B&frameworks=vllm,sglang")
    hm = _heatmap(page)
    assert hm["selected"] == {"x": [], "y": []}  # nothing selected yet
    model = next(m for m in hm["names"] if "Llama-3.1-8B" in m)
    hm = _tap_cell(page, "vLLM", model, "4")  # waits for exactly that one outline: vLLM, TP 4, the model's row
    page.locator(".tp-details-model").wait_for(timeout=30_000)
    assert page.locator(".tp-details-model").inner_text().strip() == model
    assert hm["tapped"] == []  # no Bokeh selection on the cells: none of them is dimmed
    _assert_clean(rpage, server.url)


def test_switching_framework_updates_heatmap(server, rpage):
    page = _open(rpage, server.url + "?search=llama")
    assert _groups(_heatmap(page)) == ["vLLM", "SGLang"]
    cb = "transformers CB cache"  # (the short label above its column group)
    page.locator(".tp-frameworks label", has_text="continuous-batching").click()
    _wait_heatmap(page, lambda h: cb in _groups(h), f"a {cb!r} column group")
    page.locator(".tp-frameworks label", has_text="SGLang").click()
    hm = _wait_heatmap(page, lambda h: "SGLang" not in _groups(h), "the SGLang column group to go")
    assert _groups(hm) == ["vLLM", cb]
    assert _tps(hm, cb) == _tps(hm, "vLLM")
    assert hm["title"] == "Valid TP sizes"
    _wait_url(page, "frameworks=vllm,transformers-cb-cache")
    page.locator(".tp-frameworks label", has_text="TensorRT-LLM").click()
    _wait_heatmap(page, lambda h: _groups(h) == ["vLLM", cb, "TensorRT-LLM"], "a TensorRT-LLM column group")
    page.locator(".tp-frameworks label", has_text="TensorRT-LLM").click()
    _wait_heatmap(page, lambda h: _groups(h) == ["vLLM", cb], "the TensorRT-LLM column group to go")
    _assert_clean(rpage, server.url)


#: Per cell of the heatmap, what BokehJS draws: the status code, the fill colour (RGBA packed in a uint32)
#: and mark the colour map and marker transform give it, and whether the mark is drawn (``ym`` not NaN).
CELLS_JS = """() => {
  let v = null;
  const walk = (view) => { if (!view || v) return; if (view.frame && view.model.name === 'tp-validity-heatmap') { v = view; return; }
    for (const c of (view.child_views || [])) walk(c); };
  for (const root of (Bokeh.index.roots ?? Object.values(Bokeh.index))) walk(root);
  const cells = v.renderer_views.get(v.model.renderers[0]).glyph, marks = v.renderer_views.get(v.model.renderers[1]).glyph;
  const data = v.model.renderers[0].data_source.data, out = [];
  for (let i = 0; i < data.code.length; i++)
    out.push([data.code[i], cells.visuals.fill.fill_color.get(i), marks.marker.get(i), !Number.isNaN(data.ym[i])]);
  return out;
}"""


def _rgba(hex_colour: str) -> int:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return (r << 24 | g << 16 | b << 8 | 255) & 0xFFFFFFFF


def test_cells_draw_their_status_colour_and_mark(server, rpage):
    """The data source carries only a status code per cell: the browser must turn it into the status's
    colour and mark (✕ refused, ○ KV replicated, + padded, – unknown; ◇ where frameworks disagree)."""
    from dashboard.plots import heatmap

    page = _open(rpage, server.url + "?search=qwen,llama&frameworks=vllm,sglang,transformers-cb-cache")
    for colors, markers in ((heatmap.STATUS_COLORS, heatmap.STATUS_MARKERS), (heatmap.DISAGREE_COLORS, heatmap.DISAGREE_MARKERS)):
        if colors is heatmap.DISAGREE_COLORS:
            page.locator(".tp-disagree label", has_text="Show only where frameworks disagree").click()  # (its text)
            _wait_title(page, "Where frameworks disagree")
        statuses = list(colors)
        cells = page.evaluate(CELLS_JS)
        deadline = time.monotonic() + 30
        while any(int(c[1]) != _rgba(colors[statuses[int(c[0])]]) for c in cells) and time.monotonic() < deadline:
            page.wait_for_timeout(100)  # (the palette arrives with the new data)
            cells = page.evaluate(CELLS_JS)
        assert cells, "no cells"
        seen = set()
        for code, fill, marker, drawn in cells:
            status = statuses[int(code)]
            seen.add(status)
            assert int(fill) == _rgba(colors[status]), (status, fill)
            assert drawn == bool(markers[status]), (status, drawn)
            if markers[status]:
                assert marker == markers[status], (status, marker)
        assert ({"valid", "valid_replicated", "invalid"} if colors is heatmap.STATUS_COLORS else {"disagree"}) <= seen, seen
    _assert_clean(rpage, server.url)


def test_tap_cell_shows_details_and_layout(server, rpage, artifacts_dir):
    page = _open(rpage, server.url + "?search=Llama-3.1-8B,Qwen2.5-7B&frameworks=sglang")
    hm = _heatmap(page)
    assert _groups(hm) == ["SGLang"]
    model = next(m for m in hm["names"] if "Llama-3.1-8B" in m)
    _tap_cell(page, "SGLang", model, "8")
    details = page.locator(".tp-details-model")
    details.wait_for(timeout=30_000)
    assert details.inner_text().strip() == model
    page.locator(".tp-verdict").wait_for()
    # The compact per-rank layout of the tapped cell appears under the verdict: 8 ranks.
    _wait_title(page, "TP = 8: heads per rank")
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts_dir / "screenshot-details.png"))
    page.locator(".bk-tab", has_text="Per-rank layout").click()
    title = page.locator(".tp-layout-title")
    title.wait_for(timeout=30_000)
    assert model in title.inner_text() and "TP = 8" in title.inner_text()
    _wait_title(page, "SGLang, TP = 8")  # short title: the model id is in the heading above
    lay = _plot(page, "SGLang, TP = 8")
    assert sorted(lay["yf"], key=lambda r: int(r.split()[1])) == [f"rank {r}" for r in range(8)]
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts_dir / "screenshot-layout.png"))
    _wait_url(page, "tab=layout")
    assert f"model={model}" in urllib.parse.unquote(page.url)
    _assert_clean(rpage, server.url)


def test_vllm_version_selector_changes_the_details_and_the_link(server, rpage, artifacts_dir):
    """Picking another vLLM release in the sidebar re-checks the selected cell at that release: the details
    say where the verdict comes from (the default release, then 'Rules read from vLLM 0.27.1 source; not
    run' with the version notice), the summary names the release, and the link carries it."""
    from dashboard import rules
    from dashboard.state import DEFAULT_VLLM_VERSION, load_app_data
    from dashboard.views.controls import vllm_version_groups

    model = "meta-llama/Meta-Llama-3.1-70B"
    page = _open(rpage, server.url + f"?search=llama&model={model}&framework=vllm&tp=8")
    evidence = page.locator(".tp-evidence")
    evidence.wait_for(timeout=30_000)
    v = rules.check(load_app_data().record(model), "vllm", 8)
    from dashboard.views.details import evidence_text

    assert v.evidence == "executed"  # a catalog config at a layout of vLLM's table
    assert evidence.inner_text().strip().lstrip("✓ ") == evidence_text(v) + "."
    assert evidence_text(v).startswith(f"Reproduced by running vLLM {DEFAULT_VLLM_VERSION}'s own code on this config")
    select = page.locator(".tp-vllm-version select")  # (option values are the labels)
    assert select.input_value() == f"{DEFAULT_VLLM_VERSION} (executed)"
    assert select.locator("option").first.inner_text() == f"{DEFAULT_VLLM_VERSION} (executed)"
    assert select.locator("optgroup").count() == 2
    page.locator(".tp-details-col").screenshot(path=str(artifacts_dir / "screenshot-details-default-version.png"))
    label = next(lab for opts in vllm_version_groups().values() for lab, rel in opts.items() if rel == "0.27.1")
    select.select_option(label=label)
    expect(evidence).to_have_text("Rules read from vLLM 0.27.1 source; not run.", timeout=30_000)
    notice = page.locator(".tp-version-notice")
    expect(notice).to_contain_text("vLLM 0.27.1 was never run through the conformance harness")
    expect(page.locator(".tp-summary")).to_contain_text("vLLM 0.27.1 accepts")
    _wait_url(page, "vllm_version=0.27.1")
    page.wait_for_timeout(500)
    page.locator(".tp-details-col").screenshot(path=str(artifacts_dir / "screenshot-details-0.27.1.png"))
    page.screenshot(path=str(artifacts_dir / "screenshot-vllm-version.png"))
    # Controls with the selector (the whole sidebar of the template: a viewport tall enough for it).
    page.set_viewport_size({"width": 1920, "height": 1700})
    page.wait_for_timeout(500)
    page.locator("#sidebar").screenshot(path=str(artifacts_dir / "screenshot-controls.png"))
    _assert_clean(rpage, server.url)


def test_sglang_version_selector_reads_and_writes_the_link(server, rpage, artifacts_dir):
    """?sglang_version=0.5.20&frameworks=sglang opens with the SGLang selector on '0.5.20 (read from source)'
    next to the vLLM one, the details read from 0.5.20 source; picking a release in the selector rewrites
    the link (the default, 0.5.23, leaves it), and the rewritten link opens on that release again."""
    from dashboard.state import DEFAULT_SGLANG_VERSION

    model = "meta-llama/Meta-Llama-3.1-70B"
    q = f"?sglang_version=0.5.20&frameworks=sglang&search=llama&model={model}&framework=sglang&tp=8"
    page = _open(rpage, server.url + q)
    select = page.locator(".tp-sglang-version select")
    assert select.input_value() == "0.5.20 (read from source)"
    assert select.locator("optgroup").count() == 2
    assert select.locator("option").first.inner_text() == f"{DEFAULT_SGLANG_VERSION} (executed)"
    assert page.locator(".tp-vllm-version select").count() == 1
    evidence = page.locator(".tp-evidence")
    expect(evidence).to_have_text("Rules read from SGLang 0.5.20 source; not run.", timeout=30_000)
    expect(page.locator(".tp-version-notice")).to_contain_text("SGLang 0.5.20 was never run through")
    _wait_url(page, "sglang_version=0.5.20")
    select.select_option(label=f"{DEFAULT_SGLANG_VERSION} (executed)")
    expect(evidence).to_contain_text(f"SGLang {DEFAULT_SGLANG_VERSION}", timeout=30_000)
    page.wait_for_function("() => !location.search.includes('sglang_version')", timeout=30_000)
    select.select_option(label="0.5.22 (read from source)")
    expect(evidence).to_have_text("Rules read from SGLang 0.5.22 source; not run.", timeout=30_000)
    _wait_url(page, "sglang_version=0.5.22")
    expect(page.locator(".tp-summary")).to_contain_text("SGLang 0.5.22 accepts")
    # Round trip: the rewritten link opens on the same release.
    page = _open(rpage, page.url)
    assert page.locator(".tp-sglang-version select").input_value() == "0.5.22 (read from source)"
    expect(page.locator(".tp-evidence")).to_have_text("Rules read from SGLang 0.5.22 source; not run.", timeout=30_000)
    page.set_viewport_size({"width": 1920, "height": 1700})
    page.wait_for_timeout(500)
    page.locator("#sidebar").screenshot(path=str(artifacts_dir / "screenshot-controls-sglang-version.png"))
    _assert_clean(rpage, server.url)


def test_url_state_round_trips(server, rpage, browser):
    q = ("?search=llama&frameworks=sglang,tensorrt-llm&tp_sizes=1,2,4,8&model=meta-llama/Meta-Llama-3.1-70B"
         "&framework=tensorrt-llm&tp=4&pp=2&dp_attention=1&kv_dtype=fp8&tab=memory")
    page = _open(rpage, server.url + q, ".tp-mem-kv canvas, .tp-notice")
    page.wait_for_timeout(1000)
    # The page keeps the state in its URL (model id with '/', readable).
    assert urllib.parse.unquote(page.url).endswith(urllib.parse.unquote(q)) or all(
        part in urllib.parse.unquote(page.url) for part in urllib.parse.unquote(q)[1:].split("&"))
    assert page.locator(".tp-url-notice .tp-notice-warning").count() == 0
    # A second tab opened on the copied link shows the same view.
    other = browser.new_page()
    try:
        other.goto(page.url)
        other.wait_for_selector(".tp-mem-kv canvas, .tp-notice", timeout=LOAD_TIMEOUT)
        other.wait_for_timeout(800)
        assert other.locator(".tp-url-notice .tp-notice-warning").count() == 0
        _tab(other, "Validity")
        other.wait_for_selector(HEATMAP_CANVAS, timeout=LOAD_TIMEOUT)
        other.wait_for_timeout(800)
        hm = _heatmap(other)
        assert _groups(hm) == ["SGLang", "TensorRT-LLM"]
        assert _tps(hm, "SGLang") == _tps(hm, "TensorRT-LLM") == ["1", "2", "4", "8"]
        # The selected cell of the link is outlined: TensorRT-LLM, TP 4, the 70B's row.
        row = hm["names"].index("meta-llama/Meta-Llama-3.1-70B")
        assert hm["selected"] == {"x": [["TensorRT-LLM", "4"]], "y": [-(row + 0.5)]}, _brief(hm)
        assert other.locator(".tp-search input").input_value() == "llama"
        other.wait_for_function("() => !location.search.includes('tab=')", timeout=30_000)  # default tab omitted
        state = lambda u: {k: v for k, v in urllib.parse.parse_qsl(urllib.parse.urlsplit(u).query) if k != "tab"}  # noqa: E731
        assert state(other.url) == state(page.url) == {k: v for k, v in urllib.parse.parse_qsl(q[1:]) if k != "tab"}
    finally:
        other.close()
    _assert_clean(rpage, server.url)


def test_back_and_forward_show_the_view_of_their_link(server, rpage):
    """Each settled view is a history entry; Back and Forward show the view of the address they go to
    (Panel's Location alone changes the address bar but not the page)."""
    page = _open(rpage, server.url + "?frameworks=vllm&search=llama")
    _wait_url(page, "search=llama&frameworks=vllm")  # (the opening view's canonical link)
    page.locator(".tp-frameworks label", has_text="TensorRT-LLM").click()
    _wait_url(page, "frameworks=vllm,tensorrt-llm")
    page.wait_for_timeout(600)
    page.locator(".tp-frameworks label", has_text="SGLang").click()
    _wait_url(page, "frameworks=vllm,sglang,tensorrt-llm")
    _wait_heatmap(page, lambda h: _groups(h) == ["vLLM", "SGLang", "TensorRT-LLM"], "three column groups")
    page.go_back()
    page.wait_for_function("() => location.search.endsWith('frameworks=vllm,tensorrt-llm')", timeout=30_000)
    _wait_heatmap(page, lambda h: _groups(h) == ["vLLM", "TensorRT-LLM"], "the view of the previous link (Back)")
    sgl = page.locator(".tp-frameworks label", has_text="SGLang").locator("input")
    page.wait_for_function("(el) => !el.checked", arg=sgl.element_handle(), timeout=30_000)
    page.wait_for_timeout(800)  # (no URL write may push a new entry: Forward must still go forward)
    assert page.evaluate("location.search").endswith("frameworks=vllm,tensorrt-llm")
    page.go_forward()
    _wait_url(page, "frameworks=vllm,sglang,tensorrt-llm")
    _wait_heatmap(page, lambda h: _groups(h) == ["vLLM", "SGLang", "TensorRT-LLM"], "the view of the next link (Forward)")
    _assert_clean(rpage, server.url)


def test_link_with_refused_values_is_rewritten_to_the_view_shown(server, rpage):
    page = _open(rpage, server.url + "?frameworks=nope&tp=abc&search=llama")
    page.locator(".tp-url-notice").wait_for(timeout=30_000)
    page.wait_for_function("() => !location.search.includes('nope') && !location.search.includes('abc')"
                           " && location.search.includes('search=llama')", timeout=30_000)


def test_hostile_query_string_falls_back_with_notice(server, rpage):
    page = _open(rpage, server.url + "?tp=%3Cscript%3Ealert(1)%3C/script%3E&frameworks=nope&model=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
    notice = page.locator(".tp-url-notice .tp-notice-warning")
    notice.wait_for(timeout=30_000)
    text = notice.inner_text()
    assert "not understood" in text and "<script>" in text  # rendered as text
    assert _groups(_heatmap(page))[:2] == ["vLLM", "SGLang"]  # default frameworks
    _assert_clean(rpage, server.url)


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    """The dashboard on a catalog with a model id that is an HTML injection attempt."""
    from conftest import start_server, stop_server  # tests/browser/conftest.py

    from dashboard import catalog as cat

    tmp = tmp_path_factory.mktemp("hostile")
    cfg = {"model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
           "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16"}
    recs = [cat.normalize_config(dict(cfg), HOSTILE),
            cat.normalize_config(dict(cfg), "meta-llama/Llama-3.1-8B"),
            cat.normalize_config({**cfg, "model_type": "<b>bold</b>"}, 'evil/"><script>alert(2)</script>')]
    path = tmp / "hostile.parquet"
    cat.write_catalog(cat.catalog_from_records(recs), path)
    srv = start_server(tmp, {"TP_PLANNER_CATALOG": str(path)})
    yield srv
    stop_server(srv)


def test_hostile_model_id_renders_as_text(hostile_server, rpage, artifacts_dir):
    url = hostile_server.url + "?" + urllib.parse.urlencode({"model": HOSTILE, "tp": "2"})
    page = _open(rpage, url)
    hm = _heatmap(page)
    assert HOSTILE in hm["names"]
    row = hm["names"].index(HOSTILE)
    assert HOSTILE in hm["labels"]  # the y-axis label is the literal id (canvas text)
    assert hm["selected"] == {"x": [["vLLM", "2"]], "y": [-(row + 0.5)]}, _brief(hm)
    assert page.locator(".tp-details-model").inner_text().strip() == HOSTILE
    # Hovering a cell of that row: the tooltip shows the id as text and creates no element from it.
    page.mouse.move(*_cell_point(hm, "SGLang", "2", HOSTILE))
    tip = page.locator(".bk-Tooltip .bk-tooltip-content", has_text=HOSTILE).first  # (in the tooltip's shadow root)
    tip.wait_for(state="visible", timeout=30_000)
    text = tip.inner_text()
    assert HOSTILE in text and "SGLang · TP = 2" in text, text
    assert "valid" in text or "unknown" in text, text  # the cell's verdict and details (the info formatter)
    assert page.locator('img[src="x"]').count() == 0
    page.screenshot(path=str(artifacts_dir / "screenshot-hostile-tooltip.png"))
    page.mouse.move(0, 0)
    _tab(page, "Catalog")
    page.locator(".tp-catalog-table").wait_for(timeout=30_000)
    page.locator(".tabulator-cell", has_text=HOSTILE).first.wait_for(timeout=30_000)
    assert page.locator(".tabulator-cell", has_text=HOSTILE).first.inner_text().strip() == HOSTILE
    page.locator(".tabulator-cell", has_text='evil/"><script>alert(2)</script>').first.wait_for(timeout=30_000)
    page.wait_for_timeout(1000)
    assert page.locator('img[src="x"]').count() == 0
    assert page.locator(".tabulator-cell", has_text="<b>bold</b>").count() >= 1
    page.screenshot(path=str(artifacts_dir / "screenshot-hostile-catalog.png"))
    for tab in ("Per-rank layout", "Memory"):
        _tab(page, tab)
        page.wait_for_timeout(1500)
    assert page.locator('img[src="x"]').count() == 0
    _assert_clean(rpage, hostile_server.url)


def test_exports_produce_files(server, rpage, artifacts_dir):
    page = _open(rpage, server.url + "?search=Llama-3.1&model=meta-llama/Meta-Llama-3.1-8B&tp=8")
    out = artifacts_dir / "exports"
    out.mkdir(exist_ok=True)
    with page.expect_download(timeout=60_000) as d:
        page.locator(".tp-export-csv button").click()
    csv_path = out / "tp-grid.csv"
    d.value.save_as(csv_path)
    text = csv_path.read_text()
    assert text.startswith("model_id,framework,version,tp") and "meta-llama/Meta-Llama-3.1-8B" in text
    with page.expect_download(timeout=60_000) as d:
        page.locator(".tp-export-report button").click()
    rep = out / "tp-report.html"
    d.value.save_as(rep)
    html = rep.read_text()
    assert "TP planner report" in html and "meta-llama/Meta-Llama-3.1-8B" in html
    assert f"Link: <code>{server.url}?" in html  # a link that opens the view, not a bare query string
    # Heatmap PNG: rendered in the browser from the Bokeh canvas (the one heatmap, every framework in it).
    with page.expect_download(timeout=60_000) as d:
        page.locator(".tp-export-png button").click()
    assert d.value.suggested_filename.startswith("tp-heatmap-") and d.value.suggested_filename.endswith(".png")
    png = out / d.value.suggested_filename
    d.value.save_as(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    _assert_clean(rpage, server.url)


def test_screenshots_of_every_view(server, rpage, artifacts_dir):
    base = server.url + "?search=llama,qwen3,deepseek&model=meta-llama/Meta-Llama-3.1-70B&tp=8"
    page = _open(rpage, base)
    page.screenshot(path=str(artifacts_dir / "screenshot-overview.png"))
    for tab, name in (("Memory", "memory"), ("Catalog", "catalog"), ("Per-rank layout", "layout-70b")):
        _tab(page, tab)
        page.wait_for_timeout(2500)
        page.screenshot(path=str(artifacts_dir / f"screenshot-{name}.png"))
    _tab(page, "Validity")
    page.locator(".tp-frameworks label", has_text="continuous-batching").click()
    page.locator(".tp-disagree input").click()
    from dashboard.state import DEFAULT_SGLANG_VERSION, DEFAULT_VLLM_VERSION

    names = (f"vLLM {DEFAULT_VLLM_VERSION}, SGLang {DEFAULT_SGLANG_VERSION}, "
             "transformers (continuous-batching cache)")
    hm = _wait_heatmap(page, lambda h: h["title"] == "Where frameworks disagree", "the disagreement heatmap")
    _wait_heatmap(page, lambda h: _groups(h) == ["vLLM vs SGLang vs transformers CB cache"], "one disagreement column group")
    assert _tps(hm, _groups(hm)[0]) == ["1", "2", "3", "4", "6", "8", "12", "16", "32", "64"]
    page.get_by_text(f"{names} disagree on").wait_for(timeout=30_000)
    page.wait_for_timeout(800)
    page.screenshot(path=str(artifacts_dir / "screenshot-disagreement.png"))
    _assert_clean(rpage, server.url)


@pytest.mark.parametrize("width, height", [(1280, 720), (1536, 864)])
def test_heatmap_readable_on_projector_and_laptop_widths(server, rpage, artifacts_dir, width, height):
    """Meeting-room projectors (1280 x 720) and laptops (1536 x 864): every TP column keeps at least
    MIN_COL_PX pixels (two-digit TP labels stay apart), the heatmap area scrolls sideways when the
    heatmap is wider than the page, and the figure carries no legend of its own (one legend on the page)."""
    from dashboard.plots import heatmap

    page = rpage.page
    page.set_viewport_size({"width": width, "height": height})
    page = _open(rpage, server.url)
    hm = _heatmap(page)
    assert _groups(hm) == ["vLLM", "SGLang"]
    assert hm["w"] / _units(hm) >= heatmap.MIN_COL_PX, _brief(hm)
    assert hm["legends"] == 0, _brief(hm)
    scroll = page.locator(".tp-heatmap-scroll").first
    box = scroll.bounding_box()
    assert box["x"] + box["width"] <= width
    sw, cw = scroll.evaluate("(el) => [el.scrollWidth, el.clientWidth]")
    if hm["canvas"]["right"] > box["x"] + box["width"]:
        assert sw > cw  # the rest is reachable by scrolling sideways
    # The page legend is there once, above the heatmap.
    assert page.locator(".tp-legend").count() == 1
    page.screenshot(path=str(artifacts_dir / f"screenshot-validity-{width}x{height}.png"))
    _assert_clean(rpage, server.url)


def test_hostile_catalog_heatmap_draws_one_legend(hostile_server, rpage, artifacts_dir):
    page = _open(rpage, hostile_server.url)
    assert _heatmap(page)["legends"] == 0
    assert page.locator(".tp-legend").count() == 1
    page.screenshot(path=str(artifacts_dir / "screenshot-hostile-validity.png"))
    _assert_clean(rpage, hostile_server.url)


@pytest.mark.parametrize("width, height", [(1280, 720), (1920, 1080)])
def test_wide_per_rank_layout_scrolls_instead_of_widening_the_page(server, rpage, artifacts_dir, width, height):
    """Llama 3.1 405B at TP 1 holds 128 query + 8 KV heads on one rank (64 columns drawn, 26 px each):
    the layout plot is wider than the page, so it scrolls sideways in its own container and the page
    never grows wider than the window."""
    page = rpage.page
    page.set_viewport_size({"width": width, "height": height})
    page = _open(rpage, server.url + "?model=meta-llama/Meta-Llama-3.1-405B&framework=vllm&tp=1&tab=layout",
                 ".tp-layout-plot canvas")
    _wait_title(page, "vLLM, TP = 1")
    page.wait_for_timeout(500)
    lay = _plot(page, "vLLM, TP = 1")
    assert len(lay["xf"]) > 40 and lay["w"] / len(lay["xf"]) >= 26  # fixed, readable cells
    doc_w = page.evaluate("() => document.documentElement.scrollWidth")
    assert doc_w <= width, doc_w
    scroll = page.locator(".tp-layout-scroll").first
    box = scroll.bounding_box()
    assert box["x"] + box["width"] <= width
    sw, cw = scroll.evaluate("(el) => [el.scrollWidth, el.clientWidth]")
    assert sw > cw  # the rest of the heads is reachable by scrolling sideways
    page.screenshot(path=str(artifacts_dir / f"screenshot-layout-wide-{width}x{height}.png"))
    _assert_clean(rpage, server.url)


def test_changes_made_on_another_tab_show_when_the_tab_opens(server, rpage):
    """A hidden tab's view is refreshed when it is shown (not while hidden: Panel would rebuild the
    detached panes' stylesheets from its CDN). Change the GPU and the frameworks on the Validity tab, then
    open Memory, Per-rank layout and Catalog: each shows the new state, and nothing loads from outside."""
    page = _open(rpage, server.url + "?model=meta-llama/Meta-Llama-3.1-70B&tp=8")
    _tab(page, "Memory")
    page.wait_for_selector(".tp-mem-kv canvas", timeout=LOAD_TIMEOUT)
    _tab(page, "Validity")
    page.locator(".tp-frameworks label", has_text="continuous-batching").click()
    page.locator(".tp-disagree input").click()
    _wait_heatmap(page, lambda h: h["title"] == "Where frameworks disagree", "the disagreement heatmap")
    page.locator(".tp-tp-sizes label", has_text="24").first.click()
    _wait_url(page, "24")
    _tab(page, "Memory")
    _wait_title(page, "Memory per GPU: vLLM on H100-80GB")
    page.wait_for_function("""() => { const out = []; const walk = (v) => { if (!v) return;
        if (v.model && v.model.x_range && v.model.x_range.factors && v.model.title
            && String(v.model.title.text).startsWith('Memory per GPU')) out.push(...v.model.x_range.factors.map(String));
        for (const c of (v.child_views || [])) walk(c); };
      for (const r of (Bokeh.index.roots ?? Object.values(Bokeh.index))) walk(r);
      return out.some((x) => x.startsWith('TP 24')); }""", timeout=30_000)
    _tab(page, "Per-rank layout")
    page.locator(".tp-layout-title").first.wait_for(timeout=30_000)
    _tab(page, "Validity")
    _wait_heatmap(page, lambda h: "24" in _tps(h, _groups(h)[0]), "TP 24 in the heatmap")
    _assert_clean(rpage, server.url)
