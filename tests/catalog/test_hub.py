"""The Hub scraper (:mod:`dashboard.hub`) against a local Hub-compatible server (:mod:`tests.hubserver`).

The real huggingface_hub client talks HTTP to 127.0.0.1; nothing reaches huggingface.co. Backoff bases
are tiny so the fault tests stay fast. Command-line, kill/resume, token and offline tests are in
``test_hub_cli.py`` (subprocesses).
"""

from __future__ import annotations

import json
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from dashboard import schema
from dashboard.catalog import load_catalog, normalize_config, catalog_from_records, write_catalog
from dashboard.hub import ScrapeError, classify_error, parse_retry_after, read_repos_file, scrape
from dashboard.hub.scrub import Scrubber

from tests.hubserver import FakeHub, llama_like_config


@pytest.fixture
def hub():
    with FakeHub() as h:
        yield h


@pytest.fixture
def run(hub, tmp_path):
    """``run(...)`` = ``scrape`` against the fake hub, a temp catalog and a temp HF cache, fast backoff."""
    catalog = tmp_path / "catalog.parquet"

    def _run(*ids, **kw):
        opts = dict(
            catalog_path=catalog, cache_dir=tmp_path / "hf-cache", endpoint=hub.url, backoff_base=0.01,
            backoff_max=0.05, timeout=2.0, progress=False, workers=4,
        )
        opts.update(kw)
        return scrape(list(ids), **opts)

    _run.catalog = catalog
    return _run


# ---------------------------------------------------------------------------------------------
# selection: list + fetch
# ---------------------------------------------------------------------------------------------


def test_list_and_fetch_n_repos(hub, run):
    n = 12
    for i in range(n):
        hub.add(f"acme/model-{i:02d}", llama_like_config(layers=10 + i, kv_heads=8), downloads=100 * i, likes=i,
                safetensors={"BF16": 1000 + i, "F32": 10})
    hub.add("other/model", downloads=10**9)  # another author: not selected
    hub.add("acme/no-config", no_config=True, downloads=-1)  # the listing has no file list: found by the HEAD
    hub.page_size = 5  # pagination through the Link header: 3 pages

    df, s = run(author="acme", sort="downloads")

    assert s.selected == n + 1
    assert s.statuses == {"ok": n, "gated": 0, "not_found": 1, "invalid_json": 0, "error": 0}
    # sorted by downloads, descending
    assert s.model_ids == [f"acme/model-{i:02d}" for i in reversed(range(n))] + ["acme/no-config"]
    assert hub.count("list") == 3 and hub.count("get") == n and hub.count("head") == n + 1
    assert hub.count("info") == 0  # the listing carried sha + metadata: no per-repo model_info
    assert s.configs_downloaded == n + 1 and s.rows_written == n + 1
    assert "Entry Not Found" in s.reasons["acme/no-config"]
    df = df[df["model_id"] != "acme/no-config"].reset_index(drop=True)

    on_disk = load_catalog(run.catalog)
    pd.testing.assert_frame_equal(on_disk[on_disk["model_id"] != "acme/no-config"].reset_index(drop=True), df)
    assert list(df.columns) == list(schema.COLUMN_NAMES)
    assert df["model_id"].is_unique and set(df["model_id"]) == {f"acme/model-{i:02d}" for i in range(n)}
    row = df.set_index("model_id").loc["acme/model-07"]
    assert row["status"] == "ok" and row["source"] == "hub" and row["status_reason"] == ""
    assert row["num_hidden_layers"] == 17 and row["num_attention_heads"] == 32 and row["num_key_value_heads"] == 8
    assert row["sha"] == hub.repos["acme/model-07"].sha
    assert row["downloads"] == 700 and row["likes"] == 7 and not row["gated"]
    assert row["safetensors_params"] == 1017.0
    assert json.loads(row["safetensors_params_by_dtype"]) == {"BF16": 1007, "F32": 10}
    assert row["last_modified"] == "2026-11-01T00:00:00Z"
    assert datetime.strptime(row["fetched_at"], "%Y-%m-%dT%H:%M:%SZ")


def test_query_filters_and_limit(hub, run):
    hub.add("acme/chat-7b", downloads=5, likes=50, pipeline_tag="text-generation")
    hub.add("acme/chat-70b", downloads=9, likes=10, pipeline_tag="text-generation")
    hub.add("acme/vl-7b", downloads=7, likes=70, pipeline_tag="image-text-to-text")
    hub.add("zeta/chat-1b", downloads=1, likes=1)

    _, s = run(search="chat", sort="likes")
    assert s.model_ids == ["acme/chat-7b", "acme/chat-70b", "zeta/chat-1b"]
    _, s = run(pipeline_tag="image-text-to-text")
    assert s.model_ids == ["acme/vl-7b"]
    _, s = run(author="acme", sort="downloads", limit=2)
    assert s.model_ids == ["acme/chat-70b", "acme/vl-7b"]
    hub.repos["zeta/chat-1b"].trending = 9.0
    _, s = run(sort="trending", limit=1)
    assert s.model_ids == ["zeta/chat-1b"]
    # explicit ids and a query combine, de-duplicated in order
    _, s = run("zeta/chat-1b", "acme/vl-7b", pipeline_tag="image-text-to-text")
    assert s.model_ids == ["zeta/chat-1b", "acme/vl-7b"]


def test_repos_file(hub, run, tmp_path):
    hub.add("acme/a")
    hub.add("acme/b")
    f = tmp_path / "repos.txt"
    f.write_text("# my models\nacme/a   # the first\n\nhttps://huggingface.co/acme/b\nacme/a\n")
    assert read_repos_file(f) == ["acme/a", "acme/b", "acme/a"]
    df, s = run(repos_file=f)
    assert s.model_ids == ["acme/a", "acme/b"] and s.statuses["ok"] == 2
    assert hub.count("info") == 2  # explicit ids: metadata through model_info


def test_nothing_selected_or_bad_arguments(run, tmp_path):
    with pytest.raises(ScrapeError, match="nothing selected"):
        run()
    with pytest.raises(ScrapeError, match="--sort"):
        run("a/b", sort="newest")
    with pytest.raises(ScrapeError, match="workers"):
        run("a/b", workers=0)
    with pytest.raises(ScrapeError, match="repos-file"):
        run(repos_file=tmp_path / "missing.txt")
    assert not run.catalog.exists()


# ---------------------------------------------------------------------------------------------
# faults: one status per repo, never a crash
# ---------------------------------------------------------------------------------------------


def test_every_fault_gets_its_status_and_counts(hub, run):
    hub.add("acme/ok")
    hub.add("acme/rate-limited")
    hub.inject("acme/rate-limited", "info", {"status": 429, "headers": {"Retry-After": "0.4"}})
    hub.add("acme/flaky")
    hub.inject("acme/flaky", "info", {"status": 500}, {"status": 502}, {"status": 503})
    hub.add("acme/broken")
    hub.inject("acme/broken", "info", *[{"status": 500, "body": b'{"error": "boom \\u001b[2J"}'}] * 10)
    hub.add("acme/slow-once")
    hub.inject("acme/slow-once", "info", {"sleep": 1.5})
    hub.add("acme/slow-always")
    hub.inject("acme/slow-always", "info", *[{"sleep": 1.5}] * 10)
    hub.add("acme/truncated", b'{"model_type": "llama", "num_attention_heads": 3')
    hub.add("acme/not-an-object", b"[1, 2, 3]")
    hub.add("acme/gated", gated=True)
    hub.add("acme/no-config", no_config=True)
    hub.add("acme/get-500")
    hub.inject("acme/get-500", "get", {"status": 500})
    hub.add("acme/html-info")  # a proxy answering 200 with an HTML page
    hub.inject("acme/html-info", "info", {"status": 200, "body": b"<html>\x1b[31mlogin</html>"})
    ids = list(hub.repos) + ["acme/does-not-exist", "not a repo id!"]

    df, s = run(*ids, timeout=0.3, max_retries=3, workers=6)

    expected = {
        "acme/ok": "ok", "acme/rate-limited": "ok", "acme/flaky": "ok", "acme/broken": "error",
        "acme/slow-once": "ok", "acme/slow-always": "error", "acme/truncated": "invalid_json",
        "acme/not-an-object": "invalid_json", "acme/gated": "gated", "acme/no-config": "not_found",
        "acme/get-500": "ok", "acme/html-info": "error", "acme/does-not-exist": "not_found",
    }
    got = df.set_index("model_id")["status"].to_dict()
    assert got == expected  # the invalid id is reported, not written
    assert s.statuses == {"ok": 5, "gated": 1, "not_found": 2, "invalid_json": 2, "error": 4}  # + the bad id
    assert s.invalid_ids == ["not a repo id!"] and "invalid repo id" in s.reasons["not a repo id!"]
    assert set(s.reasons) == {m for m, st in expected.items() if st != "ok"} | {"not a repo id!"}

    # retries: exactly as many requests as faults + 1, or max_retries + 1 when the fault persists
    assert hub.count("info", "acme/rate-limited") == 2
    assert hub.count("info", "acme/flaky") == 4
    assert hub.count("info", "acme/broken") == 4
    assert hub.count("info", "acme/slow-always") == 4
    assert hub.count("get", "acme/get-500") == 2
    # Retry-After (0.4 s) wins over the 0.01 s backoff base
    t429, tretry = hub.times("info", "acme/rate-limited")
    assert tretry - t429 >= 0.39
    rows = df.set_index("model_id")
    assert "500" in rows.loc["acme/broken", "status_reason"] and "boom" in s.reasons["acme/broken"]
    assert "Timeout" in rows.loc["acme/slow-always", "status_reason"]
    assert "JSON" in rows.loc["acme/truncated", "status_reason"]
    assert "401" in rows.loc["acme/gated", "status_reason"]
    assert "config.json" in rows.loc["acme/no-config", "status_reason"]
    assert "404" in rows.loc["acme/does-not-exist", "status_reason"]
    assert "JSONDecodeError" in rows.loc["acme/html-info", "status_reason"]
    assert "\x1b" in s.reasons["acme/broken"]  # stored verbatim (the dashboard escapes what it shows) ...
    assert "\x1b" not in str(s) and "boom ?[2J" in str(s)  # ... but never printed raw to a terminal
    assert rows.loc["acme/gated", "gated"] and rows.loc["acme/gated", "sha"] == hub.repos["acme/gated"].sha
    assert s.retries >= 1 + 3 + 3 + 1 + 3 + 1
    assert (rows["status_reason"].fillna("") == "").loc[[m for m, st in expected.items() if st == "ok"]].all()


def test_429_pauses_every_worker(hub, run):
    """A 429 with Retry-After holds all workers, not only the one that got it."""
    hub.add("acme/first")
    hub.inject("acme/first", "info", {"status": 429, "headers": {"Retry-After": "0.5"}})
    for i in range(6):
        hub.add(f"acme/later-{i}")
        hub.inject(f"acme/later-{i}", "info", {"sleep": 0.15})  # still in flight when the 429 lands
    ids = ["acme/first"] + [f"acme/later-{i}" for i in range(6)]
    _, s = run(*ids, workers=2)
    assert s.statuses["ok"] == 7
    (t429, _retry) = hub.times("info", "acme/first")
    # at most the request already in flight when the 429 landed starts before the pause has run out
    starts = sorted(t for i in range(6) for t in hub.times("info", f"acme/later-{i}"))
    assert len(starts) == 6 and sum(t < t429 + 0.45 for t in starts) <= 1


def test_resolve_head_faults_are_retried_here(hub, run):
    """A 500 then a 429 on the HEAD of config.json: the capped download sends its HEAD without
    huggingface_hub's retries, and this module retries it (counted, the row says so; issue 24)."""
    hub.add("acme/head-faults")
    hub.inject("acme/head-faults", "head", {"status": 500}, {"status": 429, "headers": {"Retry-After": "0"}})
    df, s = run("acme/head-faults")
    assert s.statuses["ok"] == 1 and hub.count("head", "acme/head-faults") == 3
    assert s.retries == 2 and "2 retries in" in df.loc[0, "parse_notes"]


def test_gated_with_granted_token_is_ok(hub, run):
    hub.add("acme/gated", gated=True)
    hub.granted_tokens.add("hf_granted_token_123456")
    df, s = run("acme/gated", token="hf_granted_token_123456")
    assert s.statuses["ok"] == 1 and bool(df.loc[0, "gated"]) is True
    assert any(auth == "Bearer hf_granted_token_123456" for _m, _p, auth, _t in hub.requests)
    df, s = run("acme/gated", token="hf_wrong_token_0000000", refresh=True)
    assert s.statuses["gated"] == 1 and s.kept_previous == 1  # the ok row (shapes) is kept
    assert df.loc[0, "status"] == "ok"


def test_token_is_scrubbed_from_reasons(hub, run):
    secret = "hf_NeverWriteMe0123456789"
    hub.add("acme/echo")
    hub.inject("acme/echo", "info", *[{"echo_auth": True}] * 5)
    df, s = run("acme/echo", token=secret, max_retries=1)
    assert s.statuses["error"] == 1
    assert "internal error" in s.reasons["acme/echo"]
    assert secret not in s.reasons["acme/echo"] and secret not in str(s)
    assert secret.encode() not in run.catalog.read_bytes()
    assert any(secret in (auth or "") for _m, _p, auth, _t in hub.requests)  # it was sent, as it should be


# ---------------------------------------------------------------------------------------------
# incremental, merge, nothing lost
# ---------------------------------------------------------------------------------------------


def test_second_run_downloads_nothing_for_unchanged_repos(hub, run):
    ids = [f"acme/m{i}" for i in range(8)]
    for m in ids:
        hub.add(m, downloads=1)
    hub.add("acme/trunc", b'{"model_type": ')
    hub.add("acme/noconf", no_config=True)
    ids += ["acme/trunc", "acme/noconf"]
    df1, s1 = run(*ids)
    assert s1.configs_downloaded == 9  # noconf: known from the file list, no download attempted

    hub.reset_counts()
    hub.repos["acme/m0"].downloads = 999  # popularity changes without a new commit
    df2, s2 = run(*ids)
    assert hub.count("head") == 0 and hub.count("get") == 0  # no config request at all
    assert hub.count("info") == len(ids)
    assert s2.unchanged == len(ids) and s2.configs_downloaded == 0
    assert s2.statuses == s1.statuses
    row = df2.set_index("model_id").loc["acme/m0"]
    assert row["downloads"] == 999 and row["fetched_at"] == df1.set_index("model_id").loc["acme/m0", "fetched_at"]

    # a new commit on one repo: only that config is downloaded
    hub.reset_counts()
    new_sha = hub.update("acme/m3", llama_like_config(heads=64, kv_heads=8, hidden=8192))
    df3, s3 = run(*ids)
    assert hub.count("get") == 1 and hub.count("get", "acme/m3") == 1 and s3.unchanged == len(ids) - 1
    row = df3.set_index("model_id").loc["acme/m3"]
    assert row["sha"] == new_sha and row["num_attention_heads"] == 64

    # --refresh forces the downloads
    hub.reset_counts()
    _, s4 = run(*ids, refresh=True)
    assert hub.count("get") == 9 and s4.unchanged == 0


def test_rows_of_earlier_runs_are_never_dropped(hub, run):
    snap = normalize_config(llama_like_config(), "snap/only-in-snapshot", source="snapshot")
    write_catalog(catalog_from_records([snap]), run.catalog)
    hub.add("acme/a")
    hub.add("acme/b")
    run("acme/a")
    df, _ = run("acme/b")
    assert sorted(df["model_id"]) == ["acme/a", "acme/b", "snap/only-in-snapshot"]
    assert df.set_index("model_id").loc["snap/only-in-snapshot", "source"] == "snapshot"


def test_failed_refetch_keeps_the_ok_row(hub, run):
    hub.add("acme/a", downloads=1)
    df1, _ = run("acme/a")
    hub.update("acme/a", llama_like_config(heads=16))
    hub.repos["acme/a"].downloads = 5
    hub.inject("acme/a", "get", *[{"status": 503}] * 10)
    df2, s = run("acme/a", max_retries=2)
    assert s.statuses["error"] == 1 and s.kept_previous == 1 and "503" in s.reasons["acme/a"]
    row = df2.iloc[0]
    assert row["status"] == "ok" and row["num_attention_heads"] == 32  # the known shapes stay
    assert row["sha"] == df1.iloc[0]["sha"]  # still the sha of the config we hold: next run retries
    assert row["downloads"] == 5
    # the repo then disappears: the row stays too
    del hub.repos["acme/a"]
    df3, s = run("acme/a")
    assert s.statuses["not_found"] == 1 and s.kept_previous == 1 and df3.iloc[0]["status"] == "ok"


def test_non_ok_rows_are_replaced(hub, run):
    hub.add("acme/a", b"{broken")
    df, _ = run("acme/a")
    assert df.iloc[0]["status"] == "invalid_json"
    hub.update("acme/a", llama_like_config())
    df, s = run("acme/a")
    assert df.iloc[0]["status"] == "ok" and s.unchanged == 0


def test_unreadable_catalog_is_not_overwritten(hub, run):
    run.catalog.write_bytes(b"not parquet at all")
    hub.add("acme/a")
    with pytest.raises(ScrapeError, match="cannot be read"):
        run("acme/a")
    assert run.catalog.read_bytes() == b"not parquet at all"


def test_second_scrape_on_same_catalog_is_refused(hub, run):
    from filelock import FileLock

    from dashboard.hub.scrape import lock_path

    hub.add("acme/a")
    with FileLock(lock_path(run.catalog)):
        with pytest.raises(ScrapeError, match="another scrape"):
            run("acme/a")


def test_journal_of_a_killed_run_is_replayed(hub, run):
    """In-process half of the resume story (the SIGKILL half is in test_hub_cli.py)."""
    hub.add("acme/a")
    hub.add("acme/b")
    done = normalize_config(llama_like_config(heads=8, kv_heads=8, hidden=1024), "acme/a", source="hub", sha="f" * 40)
    journal = Path(str(run.catalog) + ".journal.jsonl")
    journal.write_text(json.dumps({"model_id": "acme/a", "status": "ok", "reason": "", "row": done}) + "\n"
                       + '{"model_id": "acme/b", "status": "ok", "row": {"torn')
    df, s = run("acme/a", "acme/b")
    assert s.resumed == 1 and s.statuses["ok"] == 2
    assert hub.count(repo_id="acme/a") == 0 and hub.count("get", "acme/b") == 1
    assert df.set_index("model_id").loc["acme/a", "num_attention_heads"] == 8
    assert not journal.exists()


# ---------------------------------------------------------------------------------------------
# units
# ---------------------------------------------------------------------------------------------


def test_parse_retry_after():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-1") is None
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    assert 25 <= parse_retry_after(format_datetime(when, usegmt=True)) <= 31
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_classify_error_without_server():
    import httpx2

    from huggingface_hub.errors import HfHubHTTPError

    def http_error(code: int) -> HfHubHTTPError:
        req = httpx2.Request("GET", "http://x/api/models/a/b")
        return HfHubHTTPError(f"{code} error", response=httpx2.Response(code, request=req))

    assert classify_error(http_error(403))[0] == "gated"
    assert classify_error(http_error(401), gated_hint=True)[0] == "gated"
    assert classify_error(http_error(404))[0] == "not_found"
    assert classify_error(http_error(500))[0] == "error"
    assert classify_error(httpx2.ReadTimeout("slow"))[0] == "error"
    assert classify_error(ValueError("boom")) == ("error", "ValueError: boom")


def test_scrubber():
    scrub = Scrubber(["s3cr3t-value"])
    assert scrub("a s3cr3t-value b") == "a *** b"
    assert scrub("Authorization: Bearer abc.def") == "Authorization: Bearer ***"
    assert scrub("token hf_abcdefghijklmnop in text") == "token hf_*** in text"
    assert scrub(None) is None


def test_only_the_hub_package_imports_huggingface_hub() -> None:
    """``dashboard/hub/`` is the one place that talks to the Hub: no other dashboard module imports
    huggingface_hub (anywhere in the file, lazy imports included)."""
    import ast

    pkg = Path(__file__).resolve().parents[2] / "dashboard"
    offenders = []
    for path in sorted(pkg.rglob("*.py")):
        if path.is_relative_to(pkg / "hub"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "huggingface_hub" or n.startswith("huggingface_hub.") for n in names):
                offenders.append(f"{path.relative_to(pkg)}:{node.lineno}")
    assert not offenders, offenders
    assert sum(1 for p in (pkg / "hub").glob("*.py") if "huggingface_hub" in p.read_text()) >= 3
