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
