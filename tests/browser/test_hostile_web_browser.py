"""Issue 24 in a real browser (Debian Chromium via Playwright) against ``panel serve dashboard``, with a
hostile local Hub (tests/driphub.py: it answers one byte at a time) as the server's ``HF_ENDPOINT``.

Proves, each against today's failure:

* item 3: an upload of 16 MB (over Bokeh's 20 MiB websocket message limit once base64-encoded) is refused
  by the page before it is sent, with the "limit is 1 MiB" notice; the websocket stays open and the next
  upload works (today: the server closes the websocket, no notice, every control dead);
* item 4: "Add a model" against the dripping Hub ends at its overall deadline with a notice and the Add
  button enabled again (today: "Fetching ..." for as long as the drip lasts), and a server stopped during
  such a fetch exits within the deadline (today: it stays alive until the drip ends);
* item 12: a link adding a dozen ids renders the page first (ids over the cap dropped with a notice, the
  rest fetched after the page is drawn); a 60 KB ``add=`` link renders with a notice (today: a blank page,
  the websocket refused); a link with 3,000 unknown keys renders with a notice (today: HTTP 400).

Ports: ``TP_BROWSER_PORT`` (default 5722) and the next one. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from conftest import start_server, stop_server  # tests/browser/conftest.py (its folder is on sys.path)

try:
    from tests.driphub import DripHub
except ImportError:
    from driphub import DripHub

from dashboard import addmodel as am
from tests.conftest import SHARED

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PORT = int(os.environ.get("TP_BROWSER_PORT", "5722"))
LOAD_TIMEOUT = 120_000
HEATMAP = ".tp-heatmap canvas"
#: "Add a model"'s overall deadline (s); today's code has none, so the tests bound it by this figure.
DEADLINE_S = getattr(am, "HUB_DEADLINE_S", 12.0)


@pytest.fixture(scope="module")
def drip():
    with DripHub(mode="body", interval=0.5) as hub:
        yield hub


def _env(drip: DripHub, home: Path) -> dict[str, str]:
    return {"HF_ENDPOINT": drip.url, "HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1", am.TOKEN_ENV: ""}


@pytest.fixture(scope="module")
def web(drip, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile-web")
    srv = start_server(tmp, env_extra=_env(drip, tmp / "hf-home"), port=PORT)
    yield srv
    stop_server(srv)


def _open(rec, url: str):
    page = rec.page
    closed: list[float] = []
    page.on("websocket", lambda ws: ws.on("close", lambda *_: closed.append(time.monotonic())))
    page.goto(url)
    page.wait_for_selector(HEATMAP, timeout=LOAD_TIMEOUT)
    page.wait_for_selector(".tp-add-model input[type=file]", state="attached", timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(500)
    return page, closed


def _notice(page) -> str:
    return "\n".join(page.locator(".tp-add-notice .tp-notice").all_inner_texts())


def _wait_notice(page, text: str | tuple[str, ...], timeout: float = 30.0) -> str:
    """The add-model notice once it holds ``text`` (or any of a tuple of texts)."""
    end = time.monotonic() + timeout
    texts = (text,) if isinstance(text, str) else text
    while True:
        got = _notice(page)
        if any(t in got for t in texts):
            return got
        if time.monotonic() > end:
            raise AssertionError(f"no notice with {text!r} within {timeout} s; notices: {got!r}")
        page.wait_for_timeout(200)


def _url_notice(page) -> str:
    return "\n".join(page.locator(".tp-url-notice .tp-notice").all_inner_texts())


def _shot(page, artifacts_dir: Path, name: str, selector: str | None = None) -> None:
    if selector:
        page.locator(selector).first.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
    page.screenshot(path=str(artifacts_dir / f"screenshot-{name}.png"))


def test_a_16_mb_upload_is_refused_in_the_page_and_the_session_survives(web, rpage, tmp_path, artifacts_dir):
    page, closed = _open(rpage, web.url)
    big = tmp_path / "huge-config.json"
    size = 16_000_000  # (base64: 21.3 MB, over Bokeh's 20 MiB message limit; 15 MB is 20.0 MB)
    big.write_bytes(b'{"pad": "' + b"x" * (size - 11) + b'"}')
    assert big.stat().st_size == size
    page.locator(".tp-add-model input[type=file]").set_input_files(str(big))
    text = _wait_notice(page, "huge-config.json is", timeout=20)
    assert f"huge-config.json is {size:,} bytes; the limit is 1,048,576 bytes (1 MiB)" in text
    _shot(page, artifacts_dir, "upload-refused-in-the-page", ".tp-add-model")
    # the session is alive: the next (good) upload is added
    good = tmp_path / "my-finetune.json"
    good.write_bytes((SHARED / "hub-configs" / "Qwen--Qwen3-8B.json").read_bytes())
    page.locator(".tp-add-model input[type=file]").set_input_files(str(good))
    _wait_notice(page, "Added (upload)/", timeout=60)
    assert not closed, "the page's websocket was closed"
    assert not rpage.page_errors, rpage.page_errors


def test_add_against_a_dripping_hub_ends_at_the_deadline(web, rpage, artifacts_dir):
    page, closed = _open(rpage, web.url)
    page.locator(".tp-add-hub-id input").fill("acme-labs/drip-model")
    page.locator(".tp-add-button button").click()
    _wait_notice(page, "Fetching acme-labs/drip-model", timeout=20)
    t0 = time.monotonic()
    # whichever deadline ends the drip first says so: the capped download's own (dashboard/hub/fetch.py,
    # "took longer than N s") or the dashboard's overall one for the fetch (addmodel.HUB_DEADLINE_S)
    text = _wait_notice(page, ("in full within", "took longer than"), timeout=DEADLINE_S + 25)
    assert "acme-labs/drip-model" in text
    assert "the fetch was stopped" in text or "the Hub is too slow" in text
    assert time.monotonic() - t0 <= DEADLINE_S + 25
    assert page.locator(".tp-add-button button").is_enabled()
    _shot(page, artifacts_dir, "add-model-deadline", ".tp-add-model")
    assert not closed


def test_a_server_stopped_during_a_dripping_fetch_exits_within_the_deadline(drip, rpage, tmp_path):
    srv = start_server(tmp_path, env_extra=_env(drip, tmp_path / "hf-home"), port=PORT + 1)
    try:
        page, _closed = _open(rpage, srv.url)
        page.locator(".tp-add-hub-id input").fill("acme-labs/drip-stop")
        page.locator(".tp-add-button button").click()
        _wait_notice(page, "Fetching acme-labs/drip-stop", timeout=20)
        page.wait_for_timeout(1500)  # (the fetch is running: the drip has started)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        try:
            srv.proc.wait(timeout=DEADLINE_S + 15)
        except Exception:  # noqa: BLE001
            pytest.fail(f"the server was still running {DEADLINE_S + 15:.0f} s after SIGTERM")
        assert time.monotonic() - t0 <= DEADLINE_S + 15
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait(timeout=20)


def test_a_link_adding_a_dozen_ids_renders_first_and_says_what_it_dropped(web, rpage):
    ids = ",".join(f"acme-labs/linked-{i}" for i in range(12))
    t0 = time.monotonic()
    page, _closed = _open(rpage, f"{web.url}?add={ids}")
    took = time.monotonic() - t0
    notice = _url_notice(page)
    assert f"more than {am_link_cap()} models: only the first {am_link_cap()}" in notice, notice
    # fetched after the page was drawn, one notice per id as it goes
    _wait_notice(page, "Fetching acme-labs/linked-0", timeout=30)
    assert took < 60, f"the page took {took:.0f} s to render"


def am_link_cap() -> int:
    from dashboard.state import MAX_LINK_ADDS

    return MAX_LINK_ADDS


def test_a_60_kb_add_link_renders_with_a_notice(web, rpage, artifacts_dir):
    ids = ",".join(f"acme-labs/m{i:05d}-" + "abcdefghij" * 3 for i in range(1700))[:60_000]
    page, closed = _open(rpage, f"{web.url}?add={ids}")
    notice = _url_notice(page)
    assert "Ignored link parameter 'add'" in notice and "longer than" in notice, notice
    _shot(page, artifacts_dir, "link-60kb-add", ".tp-url-notice")
    assert not closed
    # the session works: the address bar now carries the page's canonical link, without the oversized value
    end = time.monotonic() + 20
    while "add=" in page.evaluate("location.search") and time.monotonic() < end:
        page.wait_for_timeout(200)
    assert "add=" not in page.evaluate("location.search")


def test_a_link_with_3000_unknown_keys_renders_with_a_notice(web, rpage, artifacts_dir):
    query = "&".join(f"junk{i}=v" for i in range(3000))
    page, closed = _open(rpage, f"{web.url}?tp=4&{query}")
    notice = _url_notice(page)
    assert "junk0" in notice and "3000" in notice.replace(",", ""), notice
    assert len(notice) < 3000, "the notice should summarise the unknown keys, not list them all"
    _shot(page, artifacts_dir, "link-3000-unknown-keys", ".tp-url-notice")
    assert not closed
