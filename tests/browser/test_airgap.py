"""Air-gapped page under the README's exact command: nothing is fetched from any host but the server,
even when the page's websocket connects after Bokeh discarded the unused session (a busy server during a
burst of visitors). Without :func:`dashboard.app._serve_resources_locally` that re-created document loads
every Panel stylesheet from Panel's CDN.
"""

from __future__ import annotations

import time

import pytest

from conftest import start_server, stop_server  # tests/browser/conftest.py (its folder is on sys.path)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def short_lived_server(tmp_path_factory):
    """`panel serve dashboard` as the README runs it, with unused sessions discarded after 1 s so a late
    websocket meets a discarded session."""
    srv = start_server(tmp_path_factory.mktemp("airgap"),
                       extra_args=("--unused-session-lifetime", "1000", "--check-unused-sessions", "500"))
    yield srv.url, srv.log
    stop_server(srv)


def _outside(urls: list[str], base: str) -> list[str]:
    host = base.split("/dashboard")[0]
    return [u for u in urls if not (u.startswith(host) or u.startswith("data:") or u.startswith("blob:"))]


def test_page_fetches_nothing_outside_the_server(short_lived_server, rpage):
    url, _ = short_lived_server
    rpage.page.goto(url)
    rpage.page.wait_for_selector(".tp-heatmap canvas, .tp-heatmap", timeout=120_000)
    rpage.page.wait_for_timeout(2000)
    assert _outside(rpage.requests, url) == []
    assert rpage.console_errors == [] and rpage.page_errors == []


def test_late_websocket_still_fetches_nothing_outside(short_lived_server, rpage):
    url, log = short_lived_server

    def late(ws):  # hold the websocket until the server has discarded the page's session
        time.sleep(4)
        ws.connect_to_server()

    rpage.page.route_web_socket("**/ws*", late)
    rpage.page.goto(url)
    rpage.page.wait_for_selector(".tp-heatmap canvas, .tp-heatmap", timeout=120_000)
    rpage.page.wait_for_timeout(2000)
    outside = _outside(rpage.requests, url)
    assert outside == [], f"fetched from outside the server: {outside[:5]}"
    assert rpage.console_errors == [] and rpage.page_errors == []
