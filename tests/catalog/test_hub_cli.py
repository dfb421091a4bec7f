"""``python -m dashboard.hub scrape`` in subprocesses against the local fake Hub.

Covers what only a real process shows: ``HF_ENDPOINT`` / ``HF_HOME`` / ``HF_TOKEN`` / ``HF_HUB_OFFLINE``
read from the environment as huggingface_hub defines them, exit statuses, a run killed with SIGKILL
mid-way and started again, and the token never reaching stdout, stderr, the catalog, the journal or
the cache.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dashboard.catalog import load_catalog

from tests.hubserver import FakeHub, llama_like_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hub():
    with FakeHub() as h:
        yield h


def _env(hub: FakeHub, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE_"))}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HOME=str(tmp_path / "hf-home"),
        HF_HUB_DISABLE_TELEMETRY="1",
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    env.update(extra)
    return env


def _cli(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dashboard.hub", "scrape", *args, "--no-progress", "--backoff-base", "0.01"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )


def test_cli_uses_hf_endpoint_and_hf_home(hub, tmp_path):
    hub.add("acme/a")
    hub.add("acme/b", b"{not json")
    hub.add("acme/c", gated=True)
    repos = tmp_path / "repos.txt"
    repos.write_text("acme/b\nacme/c\nacme/missing\n")
    catalog = tmp_path / "out" / "catalog.parquet"
    r = _cli("acme/a", "--repos-file", str(repos), "--catalog", str(catalog), env=_env(hub, tmp_path))
    assert r.returncode == 0, r.stderr
    assert "ok=1  gated=1  not_found=1  invalid_json=1  error=0" in r.stdout
    df = load_catalog(catalog).set_index("model_id")
    assert df["status"].to_dict() == {"acme/a": "ok", "acme/b": "invalid_json", "acme/c": "gated",
                                      "acme/missing": "not_found"}
    assert hub.count("get", "acme/a") == 1
    # the config went through huggingface_hub's cache under HF_HOME
    snap = tmp_path / "hf-home" / "hub" / "models--acme--a" / "snapshots" / hub.repos["acme/a"].sha / "config.json"
    assert json.loads(snap.read_text())["num_attention_heads"] == 32
    assert not Path(str(catalog) + ".journal.jsonl").exists()


def test_cli_exit_status_when_the_run_cannot_start(hub, tmp_path):
    env = _env(hub, tmp_path)
    r = _cli("--catalog", str(tmp_path / "c.parquet"), env=env)
    assert r.returncode == 2 and "nothing selected" in r.stderr
    bad = tmp_path / "bad.parquet"
    bad.write_text("garbage")
    r = _cli("acme/a", "--catalog", str(bad), env=env)
    assert r.returncode == 2 and "refusing to overwrite" in r.stderr and bad.read_text() == "garbage"
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_killed_run_resumes_and_loses_nothing(tmp_path):
    n = 60
    with FakeHub(latency=0.03) as hub:
        ids = [f"acme/m{i:03d}" for i in range(n)]
        for i, m in enumerate(ids):
            hub.add(m, llama_like_config(layers=8 + i))
        catalog = tmp_path / "catalog.parquet"
        journal = Path(str(catalog) + ".journal.jsonl")
        args = [sys.executable, "-m", "dashboard.hub", "scrape", "--author", "acme", "--workers", "2",
                "--catalog", str(catalog), "--checkpoint-every", "0.2", "--no-progress"]
        env = _env(hub, tmp_path)
        proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if journal.exists() and journal.read_text().count("\n") >= 15 and catalog.exists():
                    break
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == -signal.SIGKILL

        done_before = {json.loads(line)["model_id"] for line in journal.read_text().splitlines() if line.endswith("}")}
        assert 15 <= len(done_before) < n  # killed mid-way
        mid = load_catalog(catalog)  # the checkpoint written during the run is a readable catalog
        assert mid["model_id"].is_unique and set(mid["model_id"]) <= set(ids)

        hub.reset_counts()
        r = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        df = load_catalog(catalog)
        assert sorted(df["model_id"]) == ids  # every repo exactly once
        assert (df["status"] == "ok").all()
        assert df.set_index("model_id").loc["acme/m042", "num_hidden_layers"] == 50
        assert all(hub.count("info", m) + hub.count("get", m) == 0 for m in done_before)  # not fetched again
        assert f"resumed={len(done_before)}" in r.stdout and "ok=60" in r.stdout
        assert not journal.exists()


def test_token_never_written_or_logged(hub, tmp_path):
    secret = "hf_TopSecretToken0123456789abcdef"
    hub.add("acme/gated", gated=True)
    hub.granted_tokens.add(secret)
    hub.add("acme/echo")
    hub.inject("acme/echo", "info", *[{"echo_auth": True}] * 10)
    hub.add("acme/plain")
    catalog = tmp_path / "catalog.parquet"
    env = _env(hub, tmp_path, HF_TOKEN=secret, HF_DEBUG="1")
    r = _cli("acme/gated", "acme/echo", "acme/plain", "--catalog", str(catalog), "--max-retries", "2", "-v",
             env=env)
    assert r.returncode == 0, r.stderr
    df = load_catalog(catalog).set_index("model_id")
    assert df.loc["acme/gated", "status"] == "ok"  # HF_TOKEN was used ...
    assert any(auth == f"Bearer {secret}" for _m, _p, auth, _t in hub.requests)
    assert df.loc["acme/echo", "status"] == "error" and "***" in df.loc["acme/echo", "status_reason"]
    # ... and is nowhere: output, logs, catalog, cache
    assert secret not in r.stdout and secret not in r.stderr
    assert "retry" in r.stderr  # the verbose log did run
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f


def test_offline_mode_reads_the_cache_only(hub, tmp_path):
    hub.add("acme/a", llama_like_config(heads=40, kv_heads=8, hidden=5120))
    hub.add("acme/b")
    online = _cli("acme/a", "--catalog", str(tmp_path / "online.parquet"), env=_env(hub, tmp_path))
    assert online.returncode == 0, online.stderr

    hub.reset_counts()
    env = _env(hub, tmp_path, HF_HUB_OFFLINE="1")
    catalog = tmp_path / "offline.parquet"
    r = _cli("acme/a", "acme/b", "--catalog", str(catalog), env=env)
    assert r.returncode == 0, r.stderr
    assert hub.count() == 0  # not a single request
    df = load_catalog(catalog).set_index("model_id")
    assert df.loc["acme/a", "status"] == "ok" and df.loc["acme/a", "num_attention_heads"] == 40
    assert df.loc["acme/a", "sha"] == hub.repos["acme/a"].sha
    assert df.loc["acme/b", "status"] == "error" and "offline" in df.loc["acme/b", "status_reason"]
    assert "[offline]" in r.stdout

    r = _cli("--author", "acme", "--catalog", str(catalog), env=env)
    assert r.returncode == 2 and "HF_HUB_OFFLINE" in r.stderr
