"""Finding models in a big catalog, in a real browser (Debian Chromium via Playwright) against
`panel serve dashboard`: the name filter narrows the heatmap as it is typed (no Enter) and the link
follows; a ``sort=`` in the link orders the rows (a hostile one is ignored with a notice); row labels keep
the model size; on a 1366 x 768 laptop with the sidebar open the heatmap fits the page.
"""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import HEATMAP_VIEW_JS  # tests/browser/conftest.py (its folder is on sys.path)
from playwright.sync_api import expect

from dashboard.plots import heatmap
from dashboard.state import SORT_LABELS, order_catalog
from tests.browser.test_browser import HEATMAP_JS, _assert_clean, _brief, _heatmap, _open, _wait_heatmap, _wait_url
from tests.conftest import DATA

pytestmark = pytest.mark.browser

#: The y-axis labels the browser draws for every row (the axis's own formatter over every row's tick).
ALL_LABELS_JS = HEATMAP_VIEW_JS + """  const axis = [...v.model.left, ...v.model.right].find((a) => a.formatter && a.formatter.args);
  const av = v.renderer_views.get(axis);
  return av.compute_labels(Array.from(axis.ticker.ticks)).items.map((t) => t.text);
}"""


@pytest.fixture(scope="module")
def catalog() -> pd.DataFrame:
    return pd.read_parquet(DATA / "catalog.parquet")


def test_typing_in_the_filter_narrows_the_heatmap_without_enter(server, rpage, catalog, artifacts_dir):
    page = _open(rpage, server.url)
    n_all = len(_heatmap(page)["names"])
    box = page.locator(".tp-search input")
    box.click()
    box.press_sequentially("mixtral", delay=60)  # typed, no Enter, no leaving the box
    want = [m for m in order_catalog(catalog, "family")["model_id"] if "mixtral" in m.lower()]
    assert 2 <= len(want) < n_all
    hm = _wait_heatmap(page, lambda h: h["names"] == want, "the rows narrowed to the typed filter", 30_000)
    assert hm["labels"] == [heatmap.short_label(m) for m in want], _brief(hm)
    _wait_url(page, "search=mixtral")
    expect(box).to_have_value("mixtral")  # the applied filter did not rewrite the box
    expect(box).to_be_focused()
    page.screenshot(path=str(artifacts_dir / "screenshot-find-models-typed.png"))
    # Deleting the text widens it again, still without Enter.
    box.press("Control+a")
    box.press("Backspace")
    _wait_heatmap(page, lambda h: len(h["names"]) == n_all, "every row back after clearing the filter", 30_000)
    _assert_clean(rpage, server.url)


def test_sort_in_the_link_orders_the_rows(server, rpage, catalog, artifacts_dir):
    page = _open(rpage, server.url + "?sort=size")
    hm = _heatmap(page)
    assert hm["names"] == list(order_catalog(catalog, "size")["model_id"]), _brief(hm)
    expect(page.locator(".tp-sort select")).to_have_value(SORT_LABELS["size"])
    # Every row's label, as the browser draws it, is the server's short_label (sizes kept).
    labels = page.evaluate(ALL_LABELS_JS)
    assert labels == [heatmap.short_label(m) for m in hm["names"]]
    assert "Llama-4-Scout-17B…-FP8-dynamic" in labels
    page.screenshot(path=str(artifacts_dir / "screenshot-find-models-sorted.png"))
    # Picking another order in the sidebar reorders the rows and the link follows.
    page.locator(".tp-sort select").select_option(label=SORT_LABELS["org"])
    want = list(order_catalog(catalog, "org")["model_id"])
    _wait_heatmap(page, lambda h: h["names"] == want, "the rows in organisation order", 30_000)
    _wait_url(page, "sort=org")
    _assert_clean(rpage, server.url)


def test_hostile_sort_in_the_link_is_ignored_with_a_notice(server, rpage, catalog):
    page = _open(rpage, server.url + "?sort=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
    notice = page.locator(".tp-url-notice")
    expect(notice).to_contain_text("Ignored link parameter sort=")
    expect(notice).to_contain_text("expected one of family, name, size, org")
    hm = _heatmap(page)
    assert hm["names"] == list(order_catalog(catalog, "family")["model_id"]), _brief(hm)
    _assert_clean(rpage, server.url)


def test_heatmap_fits_a_1366px_laptop_with_the_sidebar_open(server, browser, artifacts_dir):
    """1366 x 768, sidebar open: the browser reports the main area's width and the heatmap fits it (the
    "Selected cell" column wraps below); the page itself does not scroll sideways. Also the Catalog tab."""
    page = browser.new_page()
    page.set_viewport_size({"width": 1366, "height": 768})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(server.url + "?sort=name")
        page.wait_for_selector(".tp-heatmap canvas", timeout=120_000)

        def fits(h):
            return h["canvas"]["right"] <= 1366 and h["x"] + h["w"] <= 1366

        hm = _wait_heatmap(page, fits, "the heatmap inside a 1366 px page", 30_000)
        assert hm["w"] / (2 * 10 + heatmap.GROUP_PADDING) >= heatmap.MIN_COL_PX, _brief(hm)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 1366
        page.wait_for_timeout(500)
        page.screenshot(path=str(artifacts_dir / "screenshot-find-models-1366.png"))
        assert page.evaluate(HEATMAP_JS)["names"][0] == "FlagAlpha/Atom-7B"  # name order: "Atom-7B" first
        page.locator(".bk-tab", has_text="Catalog").first.click()
        page.wait_for_selector(".tp-catalog-table .tabulator-row", timeout=60_000)
        first = page.locator(".tp-catalog-table .tabulator-row").first
        expect(first).to_contain_text("FlagAlpha/Atom-7B")
        button = page.locator(".tp-use-selection").bounding_box()
        assert button["x"] + button["width"] <= 1366  # the filter rows wrap instead of running off the page
        page.screenshot(path=str(artifacts_dir / "screenshot-find-models-catalog-1366.png"))
        assert not errors, errors
    finally:
        page.close()
