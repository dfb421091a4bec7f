""""Add a model" in a real browser (Debian Chromium via Playwright) against `panel serve dashboard`, with the
local Hub-compatible server (tests/hubserver.py) as the server's ``HF_ENDPOINT``.

Proves: a Hub id typed in the sidebar is fetched by the server and shows on the validity heatmap, and the
link then carries it (``add=``); opening such a link fetches it again and shows it; an uploaded
``config.json`` shows too; every file of tests/hostile/ uploaded in one page gives a notice, runs no
script and logs no console error, and the page keeps working; a second page does not see the first page's
models; a gated repo is not read through the server's ``HF_TOKEN`` unless the operator opted in
(``TP_PLANNER_HUB_TOKEN=1``); the Hub is not called when a page loads. Screenshots of the sidebar box
(1366x768 and 1920x1080, a success and an error notice) go to tests/artifacts/.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import HEATMAP_VIEW_JS, start_server, stop_server  # tests/browser/conftest.py (its folder is on sys.path)

try:
    from tests.hubserver import FakeHub
except ImportError:
    from hubserver import FakeHub

from dashboard import addmodel as am
from dashboard.state import load_app_data
from tests.conftest import SHARED

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "hostile"
HUB_CONFIGS = SHARED / "hub-configs"
LOAD_TIMEOUT = 120_000
SECRET = "hf_ServerTokenForGatedRepos0123"
#: Repos on the local Hub: real configs from ../shared/hub-configs under ids the catalog lacks.
NEW = "acme-labs/Qwen3-8B-ft"
LINKED = "acme-labs/Yi-34B-ft"
GATED = "acme-labs/gated-70b"

#: Model ids of the validity heatmap's rows, as the browser holds them (the y-axis formatter's names).
NAMES_JS = HEATMAP_VIEW_JS + """  if (!v) return null;
  const axis = [...v.model.left, ...v.model.right].find((a) => a.formatter && a.formatter.args);
  const args = axis.formatter.args;
  return Array.from(args instanceof Map ? args.get('names') : args.names);
}"""


def _config(name: str) -> bytes:
    return (HUB_CONFIGS / name).read_bytes()


@pytest.fixture(scope="module")
def hub():
    with FakeHub() as h:
        h.add(NEW, json.loads(_config("Qwen--Qwen3-8B.json")))
        h.add(LINKED, json.loads(_config("01-ai--Yi-34B.json")))
        h.add(GATED, json.loads(_config("Qwen--Qwen3-8B.json")), gated=True)
        h.granted_tokens.add(SECRET)
        yield h


def _env(hub: FakeHub, home: Path, **extra: str) -> dict[str, str]:
    return {"HF_ENDPOINT": hub.url, "HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1", "HF_TOKEN": SECRET,
            am.TOKEN_ENV: "", **extra}


@pytest.fixture(scope="module")
def add_server(hub, tmp_path_factory):
    """The dashboard with the server's own HF_TOKEN (granted for the gated repo) but no opt-in."""
    tmp = tmp_path_factory.mktemp("add-srv")
    srv = start_server(tmp, env_extra=_env(hub, tmp / "hf-home"))
    yield srv
    stop_server(srv)


def _open(rec, url: str):
    page = rec.page
    page.goto(url)
    page.wait_for_selector(".tp-heatmap canvas", timeout=LOAD_TIMEOUT)
    page.wait_for_selector(".tp-add-model input[type=file]", state="attached", timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(500)
    return page


def _names(page) -> list[str]:
    names = page.evaluate(NAMES_JS)
    assert names is not None, "no validity heatmap on the page"
    return names


def _wait_row(page, model_id: str, present: bool = True, timeout: float = 30_000) -> list[str]:
    deadline = time.monotonic() + timeout / 1000
    while True:
        names = page.evaluate(NAMES_JS) or []
        if (model_id in names) == present:
            return names
        if time.monotonic() > deadline:
            raise AssertionError(f"{model_id!r} {'never appeared on' if present else 'stayed on'} the heatmap "
                                 f"({len(names)} rows, last: {names[-3:]})")
        page.wait_for_timeout(150)


def _notice(page) -> str:
    """Every notice of the "Add a model" box, newest first (Playwright's CSS pierces Panel's shadow roots)."""
    return "\n".join(page.locator(".tp-add-notice .tp-notice").all_inner_texts())


def _first_notice(page) -> str:
    loc = page.locator(".tp-add-notice .tp-notice")
    return loc.first.inner_text() if loc.count() else ""


def _wait_notice(page, text: str, timeout: float = 30_000) -> str:
    deadline = time.monotonic() + timeout / 1000
    while True:
        got = _notice(page)
        if text in got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"no notice with {text!r}; notices: {got!r}")
        page.wait_for_timeout(100)


def _wait_text(page, text: str, timeout: float = 30_000) -> None:
    page.get_by_text(text).first.wait_for(state="attached", timeout=timeout)


def _add(page, repo_id: str) -> None:
    box = page.locator(".tp-add-hub-id input")
    box.fill(repo_id)
    page.locator(".tp-add-button button").click()


def _upload(page, path: Path) -> None:
    page.locator(".tp-add-model input[type=file]").set_input_files(str(path))


def _clean(rec) -> None:
    assert not rec.console_errors, rec.console_errors
    assert not rec.page_errors, rec.page_errors
    assert not rec.dialogs, rec.dialogs


def _shot(page, artifacts_dir: Path, name: str) -> None:
    """The sidebar's "Add a model" box and what is around it, at 1366x768 and 1920x1080."""
    for w, h in ((1366, 768), (1920, 1080)):
        page.set_viewport_size({"width": w, "height": h})
        page.wait_for_timeout(400)
        page.locator(".tp-add-model").first.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        page.screenshot(path=str(artifacts_dir / f"screenshot-add-model-{name}-{w}x{h}.png"))
    page.set_viewport_size({"width": 1920, "height": 1080})


def test_page_load_calls_no_hub_and_hub_id_add_shows_on_the_heatmap(add_server, hub, rpage, artifacts_dir):
    hub.reset_counts()
    page = _open(rpage, add_server.url)
    _shot(page, artifacts_dir, "empty")
    assert hub.count() == 0  # a page that adds nothing never calls the Hub
    before = _names(page)
    assert NEW not in before
    _add(page, NEW)
    names = _wait_row(page, NEW)
    # it joined this page's catalog: one row more, in its family's place (the heatmap's sort order)
    assert names.count(NEW) == 1 and len(names) == len(before) + 1
    text = _wait_notice(page, f"Added {NEW}")
    assert "link now carries it" in text
    page.wait_for_function("(f) => decodeURIComponent(location.search).includes(f)", arg=f"add={NEW}", timeout=30_000)
    assert f"model={NEW}" in urllib.parse.unquote(page.evaluate("location.search"))
    assert hub.count("get", NEW) == 1 and all(auth is None for _m, _p, auth, _t in hub.requests)  # anonymous
    # it is selected: the details column names it
    page.locator(".tp-details").get_by_text(NEW).first.wait_for(state="attached", timeout=30_000)
    _shot(page, artifacts_dir, "added")
    # an unknown repo: an error notice (escaped), the page keeps its rows
    _add(page, "acme-labs/no-such-model")
    text = _wait_notice(page, "was not found on the Hub")
    assert page.locator(".tp-add-notice .tp-notice-error").count() >= 1
    _shot(page, artifacts_dir, "not-found")
    assert NEW in _names(page)
    _clean(rpage)


def test_upload_shows_on_the_heatmap_and_says_it_cannot_travel_in_a_link(add_server, rpage, tmp_path):
    page = _open(rpage, add_server.url)
    raw = _config("Qwen--Qwen3-8B.json")
    path = tmp_path / "my-finetune.json"
    path.write_bytes(raw)
    want = am.upload_model_id(path.name, raw, taken=load_app_data(None).model_ids)
    _upload(page, path)
    names = _wait_row(page, want)
    assert names.count(want) == 1
    text = _wait_notice(page, f"Added {want}")
    assert "cannot travel in a link" in text
    assert "add=" not in page.evaluate("location.search")
    # larger than the cap: refused with a notice saying the cap
    big = tmp_path / "big.json"
    big.write_bytes(b'{"pad": "' + b"x" * (2 << 20) + b'"}')
    _upload(page, big)
    assert "the limit is 1,048,576 bytes (1 MiB)" in _wait_notice(page, "big.json is")
    _clean(rpage)


def test_every_hostile_upload_gives_a_notice_and_no_console_error(add_server, rpage, tmp_path):
    page = _open(rpage, add_server.url)
    expected = json.loads((HOSTILE / "expected.json").read_text())
    files = [HOSTILE / name for name in sorted(expected)]  # every file of the corpus (expected.json lists them)
    assert len(files) >= 60 and len(files) == len(list(HOSTILE.glob("[0-9]*.json")))
    added = []
    for f in files:
        before = _first_notice(page)
        _upload(page, f)
        deadline = time.monotonic() + 30
        while (text := _first_notice(page)) == before or text.startswith("Fetching"):
            assert time.monotonic() < deadline, f"no new notice after uploading {f.name}"
            page.wait_for_timeout(50)
        kind = page.locator(".tp-add-notice .tp-notice").first.get_attribute("class")
        if expected[f.name]["status"] == "ok":
            assert "tp-notice-info" in kind and text.startswith("Added (upload)/"), (f.name, text)
            added.append(text.split()[1])
            _wait_row(page, added[-1])  # (let the page redraw before the next file, as a person would)
            page.wait_for_timeout(300)
        else:
            assert "tp-notice-error" in kind and f.name in text, (f.name, text)
    assert rpage.dialogs == [] and rpage.page_errors == []  # nothing ran (34-html-in-strings.json)
    _clean(rpage)
    # the session still works: every added model is a heatmap row
    names = _names(page)
    assert added and all(m in names for m in added)


def test_second_page_does_not_see_the_first_pages_model(add_server, browser):
    first, second = browser.new_page(), browser.new_page()
    try:
        _open_plain(first, add_server.url)
        _add(first, NEW)
        _wait_row(first, NEW)
        _open_plain(second, add_server.url)
        assert NEW not in _names(second)
        n = len(load_app_data(None).model_ids)
        second.locator(".bk-tab", has_text="Catalog").first.click()
        _wait_text(second, f"{n} of {n} models match", timeout=LOAD_TIMEOUT)
        # the first page's catalog has one more row, and the name filter finds it there only
        first.locator(".bk-tab", has_text="Catalog").first.click()
        _wait_text(first, f"{n + 1} of {n + 1} models match", timeout=LOAD_TIMEOUT)
        for page, want in ((first, "1 of"), (second, "0 of")):
            page.locator(".tp-search input").fill("Qwen3-8B-ft")
            page.locator(".tp-search input").press("Enter")
            _wait_text(page, f"{want} {n + 1 if page is first else n} models match")
    finally:
        first.close()
        second.close()


def _open_plain(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector(".tp-heatmap canvas", timeout=LOAD_TIMEOUT)
    page.wait_for_timeout(500)


def test_a_link_with_add_fetches_the_model_again(add_server, hub, rpage):
    hub.reset_counts()
    page = rpage.page
    page.goto(f"{add_server.url}?add={LINKED}&model={LINKED}&tp=6")
    page.wait_for_selector(".tp-heatmap canvas", timeout=LOAD_TIMEOUT)
    names = _wait_row(page, LINKED)
    assert names.count(LINKED) == 1 and hub.count("get", LINKED) >= 1
    _wait_notice(page, f"Added {LINKED}")
    assert rpage.page.evaluate("location.search").count("add=") == 1
    # a hostile add= falls back with the link notice; the page still loads
    page.goto(f"{add_server.url}?add=%3Cscript%3Ealert(1)%3C/script%3E")
    page.wait_for_selector(".tp-heatmap canvas", timeout=LOAD_TIMEOUT)
    _wait_text(page, "not a Hub model id")
    _clean(rpage)


def test_gated_repo_is_not_read_through_the_servers_token_without_opt_in(add_server, hub, rpage):
    hub.reset_counts()
    page = _open(rpage, add_server.url)
    _add(page, GATED)
    text = _wait_notice(page, "is gated")
    assert f"{am.TOKEN_ENV}=1" in text and SECRET not in text
    assert GATED not in _names(page)
    assert all(auth is None for _m, _p, auth, _t in hub.requests)  # the server's HF_TOKEN was not sent
    _clean(rpage)


@pytest.fixture(scope="module")
def opt_in_server(hub, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("add-srv-optin")
    srv = start_server(tmp, env_extra=_env(hub, tmp / "hf-home", **{am.TOKEN_ENV: "1"}))
    yield srv
    stop_server(srv)


def test_gated_repo_is_read_with_the_servers_token_when_opted_in(opt_in_server, hub, rpage):
    hub.reset_counts()
    page = _open(rpage, opt_in_server.url)
    assert "with the server's Hugging Face token" in page.locator(".tp-add-hint div").first.inner_text()
    _add(page, GATED)
    _wait_row(page, GATED)
    assert any(auth == f"Bearer {SECRET}" for _m, _p, auth, _t in hub.requests)
    _clean(rpage)


def test_adding_a_model_already_in_the_catalog_selects_it_cleanly(add_server, hub, rpage):
    """An id the catalog has is selected without a fetch, as a fetched one is: the link gains model=,
    the selected cell is outlined, and the server logs no Bokeh document-lock error."""
    hub.reset_counts()
    page = _open(rpage, add_server.url)
    have = "Qwen/Qwen3-8B"
    assert have in _names(page)
    _add(page, have)
    text = _wait_notice(page, f"{have} is in the catalog already")
    assert "selected it" in text
    page.wait_for_function("(m) => decodeURIComponent(location.search).includes('model=' + m)", arg=have,
                           timeout=30_000)
    assert hub.count() == 0
    log = add_server.log.read_text(errors="replace")
    assert "_pending_writes" not in log and "Traceback" not in log
    _clean(rpage)
