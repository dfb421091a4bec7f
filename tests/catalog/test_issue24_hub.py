"""Issue 24, the scraper and the catalog against hostile configs and a faulty Hub (the local Hub-compatible
server of :mod:`tests.hubserver` on 127.0.0.1): a lone surrogate is a quarantined row (build, scrape and
journal replay), a read-only or full folder is refused before any request, resets and early closes are
retried and the row says so."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from dashboard.catalog import build_catalog, catalog_from_records, load_catalog, normalize_config
from dashboard.hub import ScrapeError, scrape

from tests.hubserver import FakeHub, llama_like_config

SURROGATE_CONFIG = json.dumps(llama_like_config()).replace('"llama"', '"\\ud800"').encode()


@pytest.fixture
def hub():
    with FakeHub() as h:
        yield h


@pytest.fixture
def run(hub, tmp_path):
    catalog = tmp_path / "catalog.parquet"

    def _run(*ids, **kw):
        opts = dict(catalog_path=catalog, cache_dir=tmp_path / "hf-cache", endpoint=hub.url, backoff_base=0.01,
                    backoff_max=0.05, timeout=2.0, progress=False, workers=2)
        opts.update(kw)
        return scrape(list(ids), **opts)

    _run.catalog = catalog
    return _run


# ---- item 1: a lone surrogate is one quarantined row --------------------------------------------------


def test_normalizer_quarantines_a_lone_surrogate_with_its_path():
    assert b"\\ud800" in SURROGATE_CONFIG  # valid JSON
    rec = normalize_config(SURROGATE_CONFIG, "evil/sur")
    assert rec["status"] == "invalid_json" and "model_type" in rec["status_reason"]
    nested = {**llama_like_config(), "text_config": {"name": ["ok", "\udc80"]}}
    assert "text_config.name[1]" in normalize_config(nested, "evil/n")["status_reason"]
    assert normalize_config({**llama_like_config(), "\ud800": 1}, "evil/k")["status"] == "invalid_json"
    # a valid pair (an emoji as \\ud83d\\ude00) is fine
    ok = json.dumps(llama_like_config()).replace('"llama"', '"llama", "note": "\\ud83d\\ude00"')
    assert normalize_config(ok, "fine/emoji")["status"] == "ok"


def test_catalog_from_records_quarantines_instead_of_failing():
    good = normalize_config(llama_like_config(), "good/llama")
    bad = dict(good, model_id="evil/row", model_type="\ud800", downloads=7)
    df = catalog_from_records([good, bad])
    row = df.set_index("model_id").loc["evil/row"]
    assert row["status"] == "invalid_json" and "model_type" in row["status_reason"] and row["downloads"] == 7
    assert df.set_index("model_id").loc["good/llama", "status"] == "ok"


def test_catalog_build_writes_a_catalog_with_the_bad_row(tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "evil--sur.json").write_bytes(SURROGATE_CONFIG)
    (folder / "good--llama.json").write_text(json.dumps(llama_like_config()))
    from dashboard.catalog import main

    out = tmp_path / "c.parquet"
    assert main(["build", str(folder), "-o", str(out), "--sidecars", str(tmp_path / "none")]) == 0
    df = load_catalog(out).set_index("model_id")
    assert df.loc["evil/sur", "status"] == "invalid_json" and df.loc["good/llama", "status"] == "ok"
    assert len(build_catalog(folder)) == 2


def test_a_surrogate_config_on_the_hub_is_a_row_and_later_runs_finish(hub, run):
    hub.add("evil/sur", SURROGATE_CONFIG)
    hub.add("good/llama")
    df, s = run("evil/sur", "good/llama")
    assert s.statuses["invalid_json"] == 1 and s.statuses["ok"] == 1
    assert "model_type" in df.set_index("model_id").loc["evil/sur", "status_reason"]
    assert not Path(str(run.catalog) + ".journal.jsonl").exists()
    df, s = run("evil/sur", "good/llama", refresh=True)  # and again: nothing blocks
    assert s.statuses["invalid_json"] == 1 and s.statuses["ok"] == 1


def test_a_poisoned_journal_is_replayed_and_never_blocks(hub, run):
    hub.add("evil/sur", SURROGATE_CONFIG)
    hub.add("good/llama")
    hub.add("odd/types")
    poisoned = dict(normalize_config(llama_like_config(), "evil/sur"), model_type="\ud800")
    wrong = dict(normalize_config(llama_like_config(), "odd/types"), num_hidden_layers="many")
    journal = Path(str(run.catalog) + ".journal.jsonl")
    journal.write_text(json.dumps({"model_id": "evil/sur", "status": "ok", "reason": "", "row": poisoned}) + "\n"
                       + json.dumps({"model_id": "odd/types", "status": "ok", "reason": "", "row": wrong}) + "\n")
    df, s = run("evil/sur", "good/llama", "odd/types")
    rows = df.set_index("model_id")
    assert rows.loc["evil/sur", "status"] == "invalid_json"
    assert rows.loc["odd/types", "status"] == "error" and "quarantined journal entry" in rows.loc["odd/types",
                                                                                                   "status_reason"]
    assert rows.loc["good/llama", "status"] == "ok" and not journal.exists()
    _, s = run("evil/sur", "good/llama", "odd/types")  # the next run fetches and finishes
    assert s.statuses["error"] == 0


# ---- item 9: a read-only or full folder is refused before any request ----------------------------------


@pytest.mark.parametrize("err", [errno.EROFS, errno.ENOSPC, errno.EACCES])
def test_an_unwritable_folder_is_refused_before_any_request(hub, run, monkeypatch, err):
    hub.add("acme/a")
    import tempfile as _tempfile

    real = _tempfile.mkstemp

    def refuse(*a, **kw):
        if "write-probe" in str(kw.get("prefix", "")):
            raise OSError(err, __import__("os").strerror(err))
        return real(*a, **kw)

    monkeypatch.setattr("dashboard.atomic.tempfile.mkstemp", refuse)
    with pytest.raises(ScrapeError, match="nothing was fetched"):
        run("acme/a")
    assert hub.count() == 0


def test_a_really_read_only_folder_is_refused(hub, run, tmp_path):
    """With a real read-only folder: a chmod for a normal user, a read-only tmpfs for root (skipped when it
    cannot be mounted)."""
    import os
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = False
    if os.geteuid() == 0:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
                                 capture_output=True).returncode == 0
        if not mounted:
            pytest.skip("root without mount: cannot make a read-only folder")
    else:
        ro.chmod(0o500)
    try:
        hub.add("acme/a")
        with pytest.raises(ScrapeError, match="cannot write the catalog's folder"):
            run("acme/a", catalog_path=ro / "c.parquet")
        assert hub.count() == 0
    finally:
        if mounted:
            subprocess.run(["umount", str(ro)])
        else:
            ro.chmod(0o700)


# ---- item 10: resets and early closes are retried, the row says how many times ------------------------


@pytest.mark.parametrize("kind,fault", [("info", {"reset": True}), ("head", {"reset": True}),
                                        ("get", {"reset": True}), ("get", {"truncate": 10})])
def test_resets_and_early_closes_are_retried(hub, run, kind, fault):
    hub.add("acme/a")
    hub.inject("acme/a", kind, fault, fault)
    df, s = run("acme/a")
    row = df.set_index("model_id").loc["acme/a"]
    assert row["status"] == "ok", row["status_reason"]
    if fault.get("reset"):
        assert s.retries == 2 and "2 retries in" in row["parse_notes"] and "reset" in row["parse_notes"]


def test_a_hub_that_keeps_resetting_is_an_error_row_with_the_count(hub, run):
    hub.add("acme/a")
    hub.inject("acme/a", "get", *[{"reset": True}] * 10)
    df, s = run("acme/a", max_retries=3)
    row = df.set_index("model_id").loc["acme/a"]
    assert row["status"] == "error" and "3 retries in" in row["status_reason"]
    assert hub.count("get", "acme/a") == 4


# ---- item 5: size caps before bytes --------------------------------------------------------------------

from dashboard.schema import MAX_CONFIG_BYTES  # noqa: E402

#: a config over the cap (valid JSON, padded)
BIG = (b'{"model_type": "llama", "pad": "' + b"x" * (MAX_CONFIG_BYTES + (1 << 20)) + b'"}')
#: a gzip bomb: a few KB on the wire, far over the cap inflated
BOMB_PLAIN = b'{"pad": "' + b"0" * (4 * MAX_CONFIG_BYTES) + b'"}'


def _largest_file(folder: Path) -> int:
    sizes = [p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    return max(sizes, default=0)


def test_the_scraper_cap_is_the_one_cap():
    from dashboard.check import MAX_CONFIG_BYTES as check_cap
    from dashboard.hub import fetch

    assert fetch.MAX_CONFIG_BYTES == check_cap == MAX_CONFIG_BYTES == 8 << 20  # not 64 MiB any more


def test_an_announced_oversized_config_is_never_downloaded(hub, run, tmp_path):
    hub.add("big/config", BIG)
    df, s = run("big/config")
    row = df.set_index("model_id").loc["big/config"]
    assert row["status"] == "invalid_json" and "not downloaded" in row["status_reason"]
    assert hub.count("get", "big/config") == 0 and _largest_file(tmp_path / "hf-cache") == 0


@pytest.mark.parametrize("fault", [{"understate": 100}, {"gzip": True}])
def test_an_understated_or_gzip_body_stops_at_the_cap(hub, run, tmp_path, fault):
    hub.add("lying/config", BOMB_PLAIN if fault.get("gzip") else BIG)
    hub.inject("lying/config", "resolve", dict(fault), dict(fault))  # the HEAD and the GET
    df, s = run("lying/config", max_retries=0)
    row = df.set_index("model_id").loc["lying/config"]
    assert row["status"] in ("invalid_json", "error"), row["status_reason"]
    assert "larger than" in row["status_reason"]
    assert _largest_file(tmp_path / "hf-cache") <= MAX_CONFIG_BYTES // 8  # nothing near the cap was written


def test_a_small_config_still_lands_in_the_cache_and_serves_offline(hub, run, tmp_path, monkeypatch):
    hub.add("acme/small")
    df, s = run("acme/small")
    assert df.loc[0, "status"] == "ok"
    snaps = list((tmp_path / "hf-cache").glob("models--acme--small/snapshots/*/config.json"))
    assert len(snaps) == 1 and json.loads(snaps[0].read_bytes())["model_type"] == "llama"
    from huggingface_hub import try_to_load_from_cache

    assert try_to_load_from_cache("acme/small", "config.json", cache_dir=tmp_path / "hf-cache",
                                  revision=hub.repos["acme/small"].sha) == str(snaps[0])
    _, s = run("acme/small")  # unchanged sha: nothing downloaded
    assert s.unchanged == 1 and hub.count("get", "acme/small") == 1


def test_a_dripping_hub_meets_the_overall_deadline(hub, tmp_path, monkeypatch):
    from dashboard.hub import fetch

    hub.add("slow/drip")
    hub.inject("slow/drip", "get", {"drip": 1, "drip_s": 0.05})
    import time

    t0 = time.monotonic()
    with pytest.raises(fetch.FetchError, match="longer than"):
        fetch.download_capped("slow/drip", "config.json", revision=None, endpoint=hub.url, token=False,
                              cache_dir=str(tmp_path / "c"), timeout=5.0, deadline_s=1.0)
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("interactive", [True, False])
def test_fetch_config_for_check_and_add_model_is_capped(hub, tmp_path, interactive):
    from dashboard.hub import FetchError, fetch_config

    hub.add("big/config", BIG)
    hub.add("lying/config", BIG)
    hub.inject("lying/config", "resolve", {"understate": 100}, {"understate": 100})
    for rid in ("big/config", "lying/config"):
        with pytest.raises(FetchError) as e:
            fetch_config(rid, endpoint=hub.url, token=False, cache_dir=tmp_path / "c", max_bytes=1 << 20,
                         interactive=interactive)
        assert e.value.status == "invalid_json" and "bytes" in e.value.reason
    assert hub.count("get", "big/config") == 0
    assert _largest_file(tmp_path / "c") == 0


def test_check_of_an_oversized_hub_config_leaves_nothing_in_hf_home(hub, tmp_path):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    hub.add("big/config", BIG)
    env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "home"), PYTHONPATH=str(root),
               HF_HUB_DISABLE_TELEMETRY="1")
    env.pop("HF_HUB_OFFLINE", None)
    p = subprocess.run([sys.executable, "-m", "dashboard.cli", "check", "big/config", "--tp", "8"], env=env,
                       capture_output=True, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 2 and "limit" in err and err.count("\n") == 1, err
    assert hub.count("get", "big/config") == 0
    assert _largest_file(tmp_path / "home") < 1 << 20
