"""``tp-planner check`` / ``plan``: the shipped catalog answers first, the Hub only for other ids or with
``--refresh``; evidence per config for every source (issue 22, Build 2 and 3).

In-process runs make the Hub client raise, so an answer that needed the Hub fails; one subprocess run per
command proves huggingface_hub is not even imported for a catalog id with a dead ``HF_ENDPOINT``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dashboard import check as chk
from dashboard import hub
from dashboard.planner import cli as plan_cli

try:
    from tests.hubserver import FakeHub
    from tests.test_check import LLAMA_70B_CONFIG
except ImportError:  # tests/ is not a package
    from hubserver import FakeHub
    from test_check import LLAMA_70B_CONFIG

ROOT = Path(__file__).resolve().parents[1]
LLAMA = "meta-llama/Llama-3.1-70B-Instruct"
DEAD = "http://127.0.0.1:9"
NOT_RUN = "rules checked against vLLM 0.33.0's own code run as an H100-80GB (cuda-sm90) on 182 catalog models; this config was not run"
ODD = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2560, "intermediate_size": 6912,
       "num_attention_heads": 20, "num_key_value_heads": 5, "head_dim": 128, "num_hidden_layers": 8,
       "vocab_size": 32000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}


@pytest.fixture
def no_hub(monkeypatch):
    """A dead endpoint, HF_HUB_OFFLINE unset, and a Hub client that raises if asked."""
    calls = []

    def boom(*a, **k):
        calls.append(a)
        raise AssertionError("the Hub was asked")

    monkeypatch.setenv("HF_ENDPOINT", DEAD)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "fetch_config", boom)
    return calls


def run_check(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = chk.main(list(argv), stdin=io.BytesIO(b""), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def test_check_on_a_catalog_id_answers_from_the_catalog_without_the_hub(no_hub):
    rc, out, err = run_check(LLAMA, "--framework", "vllm", "--tp", "6")
    assert rc == 1 and err == "" and no_hub == []
    assert ("  config: shipped catalog, snapshot of 2026-12-01 (sha not recorded); --refresh fetches the Hub's "
            "current config") in out
    assert ("  evidence: reproduced by running vLLM 0.33.0's own code on this config and layout, as an H100-80GB (cuda-sm90); conformance "
            "table vllm-0.33.0.parquet") in out
    rc, out, err = run_check(LLAMA, "--framework", "vllm", "--tp", "8", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["model"]["source"] == "catalog" and doc["model"]["snapshot_date"].startswith("2026-12-01")
    assert doc["executed"] is True and doc["evidence"] == "executed"
    assert doc["conformance"]["table"] == "vllm-0.33.0.parquet" and doc["conformance"]["config_run"] is True
    # a launch command naming the catalog model answers from the catalog too
    rc, out, _ = run_check("--", "vllm", "serve", LLAMA, "--tensor-parallel-size", "8")
    assert rc == 0 and "config: shipped catalog" in out and no_hub == []
    # the id in another case is the same Hub repo
    rc, out, _ = run_check(LLAMA.lower(), "--tp", "8")
    assert rc == 0 and out.startswith(f"ACCEPTED: {LLAMA} on vLLM") and no_hub == []


def test_plan_on_a_catalog_id_answers_from_the_catalog_without_the_hub(no_hub, capsys):
    rc = plan_cli.main([LLAMA, "--gpus", "8", "--gpu", "H100-80GB", "--limit", "3"])
    out = capsys.readouterr().out
    assert rc == 0 and no_hub == [] and out.startswith("config: shipped catalog, snapshot of 2026-12-01")
    rc = plan_cli.main([LLAMA, "--gpus", "8", "--gpu", "H100-80GB", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["config"].startswith("shipped catalog") and no_hub == []


def test_refresh_asks_the_hub_and_a_dead_one_is_one_line_naming_the_id_once(monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", DEAD)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)

    def unreachable(repo_id, **k):
        raise hub.FetchError("unreachable", f"{repo_id}: the Hub did not answer (ConnectError: [Errno 111] "
                                            "Connection refused)")

    monkeypatch.setattr(hub, "fetch_config", unreachable)
    rc, out, err = run_check(LLAMA, "--tp", "8", "--refresh")
    lines = err.strip().splitlines()
    assert rc == 2 and out == "" and len(lines) == 1 and lines[0].count(LLAMA) == 1
    assert lines[0] == (f"tp-planner check: error: cannot fetch {LLAMA}'s config.json from the Hub ({DEAD}): the Hub "
                        "did not answer (ConnectError: [Errno 111] Connection refused); give a local copy with "
                        "--config PATH")
    assert ": error: " not in lines[0].split("tp-planner check: error: ", 1)[1]
    rc = plan_cli.main([LLAMA, "--gpus", "8", "--gpu", "H100-80GB", "--refresh"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count(LLAMA) == 1 and "the Hub did not answer" in err
    assert err.strip().endswith("give a local config.json (or its folder) as MODEL") and "--config" not in err

    def gated(repo_id, **k):
        raise hub.FetchError("gated", f"{repo_id}: gated: 401 Unauthorized; set HF_TOKEN to a token with access to it")

    monkeypatch.setattr(hub, "fetch_config", gated)
    rc, out, err = run_check("acme/gated-model", "--tp", "8")
    assert rc == 2 and err.strip() == (
        "tp-planner check: error: acme/gated-model is gated on the Hub and no token with access was sent (401 "
        "Unauthorized): set HF_TOKEN to a token with access to it, or give a local copy with --config PATH")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE_"))}
    env.update(PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""), HF_HUB_DISABLE_TELEMETRY="1")
    env.update(extra)
    return env


PROBE = """
import sys, time
t0 = time.perf_counter()
from dashboard.cli import main
rc = main(sys.argv[1:])
print("seconds", round(time.perf_counter() - t0, 3), "hub-imported", "huggingface_hub" in sys.modules, "rc", rc)
"""


@pytest.mark.parametrize("argv", [["check", LLAMA, "--framework", "vllm", "--tp", "6"],
                                  ["plan", LLAMA, "--gpus", "8", "--gpu", "H100-80GB", "--limit", "1"]])
def test_a_subprocess_with_a_dead_endpoint_never_loads_the_hub_client(argv, tmp_path):
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], env=_env(HF_ENDPOINT=DEAD, HF_HOME=str(tmp_path)),
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    last = r.stdout.strip().splitlines()[-1].split()
    assert "Traceback" not in r.stderr, r.stderr
    assert last[2:] == ["hub-imported", "False", "rc", "1" if argv[0] == "check" else "0"], r.stdout
    assert "config: shipped catalog" in r.stdout
    print(" ".join(argv[:2]), "took", last[1], "s in-process after start-up")  # scripts/bench_catalog_first.py times it


def test_a_non_catalog_id_with_a_dead_endpoint_fails_fast_with_the_config_hint(tmp_path):
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "dashboard.cli", "check", "acme/not-in-the-catalog", "--tp", "4"],
                       env=_env(HF_ENDPOINT=DEAD, HF_HOME=str(tmp_path), TP_PLANNER_HUB_DEADLINE_S="30"),
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and r.stdout == "" and len(lines) == 1, r.stderr
    assert lines[0].count("acme/not-in-the-catalog") == 1 and lines[0].endswith("give a local copy with --config PATH")
    assert "cannot fetch acme/not-in-the-catalog's config.json from the Hub (http://127.0.0.1:9)" in lines[0]
    assert took < 30, took  # one connection attempt, not huggingface_hub's ~23 s of retries (and the deadline holds)


# ------------------------------------------------------------------------------------------------
# evidence per config: a file, the Hub, an upload, the plan
# ------------------------------------------------------------------------------------------------


def _no_claim(text: str) -> None:
    low = text.lower()
    assert "reproduced" not in low and "executed" not in low, text


def test_a_made_up_file_was_not_run(tmp_path, no_hub):
    p = tmp_path / "odd.json"
    p.write_text(json.dumps(ODD))
    rc, out, err = run_check(str(p), "--framework", "vllm", "--tp", "4", "--json")
    doc = json.loads(out)
    assert doc["executed"] is False and doc["evidence"] == "checked" and doc["conformance"]["executed"] is False
    assert doc["evidence_text"].startswith(NOT_RUN) and doc["conformance"]["agreement"]["judged"] == 5459
    # no failing check of a config that was not run says "executed" either
    assert doc["failures"] and {f["evidence"] for f in doc["failures"]} <= {"checked", "source"}
    assert all(ln.strip().startswith('"executed": false') for ln in out.splitlines() if "executed" in ln), out
    _no_claim(doc["evidence_text"])
    rc, out, err = run_check(str(p), "--framework", "vllm", "--tp", "4")
    ev = [ln for ln in out.splitlines() if ln.startswith("  evidence: ")]
    assert ev and ev[0].startswith("  evidence: " + NOT_RUN)
    _no_claim("\n".join(ln for ln in out.splitlines() if not ln.startswith("  ")) + ev[0])
    # the same verbatim Llama config given as a file is the very config the table ran: that is no claim
    llama = tmp_path / "llama.json"
    llama.write_text(json.dumps(LLAMA_70B_CONFIG))
    rc, out, _ = run_check(str(llama), "--tp", "6", "--json")
    assert json.loads(out)["executed"] is True


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dashboard.cli", "check", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=180)


def test_hub_ids_the_catalog_lacks_or_refreshed_configs_that_differ_were_not_run(tmp_path):
    with FakeHub() as fake:
        fake.add("acme/odd-20-5", ODD)
        env = _env(HF_ENDPOINT=fake.url, HF_HOME=str(tmp_path / "home"))
        r = _cli("acme/odd-20-5", "--framework", "vllm", "--tp", "4", "--json", env=env)
        doc = json.loads(r.stdout)
        assert doc["model"]["source"] == "hub" and doc["executed"] is False and doc["evidence_text"].startswith(NOT_RUN)
        _no_claim(doc["evidence_text"])
        # the catalog model, refreshed: the Hub now serves another config
        fake.add(LLAMA, {**LLAMA_70B_CONFIG, "max_position_embeddings": 65536})
        r = _cli(LLAMA, "--tp", "8", "--refresh", "--json", env=env)
        doc = json.loads(r.stdout)
        assert doc["model"]["source"] == "hub" and doc["executed"] is False and doc["evidence"] == "checked"
        assert doc["evidence_text"].startswith(NOT_RUN)
        assert "the Hub's current config differs from the shipped catalog's (snapshot of 2026-12-01)" in doc["notes"]
        r = _cli(LLAMA, "--tp", "8", "--refresh", env=env)
        assert "  config: hub @ " in r.stdout and "  evidence: " + NOT_RUN in r.stdout


def test_an_upload_was_not_run_in_the_details_and_the_report(monkeypatch):
    from dashboard import rules
    from dashboard.addmodel import uploaded_record
    from dashboard.state import PlannerState, load_app_data
    from dashboard.views.details import evidence_text, verdict_html
    from dashboard.views.export import report_html

    got = uploaded_record("odd.json", json.dumps(ODD).encode())
    assert got.ok
    v = rules.check(got.record, "vllm", 4)
    assert v.evidence == "checked" and evidence_text(v) == "R" + v.evidence_text[1:]
    assert evidence_text(v).startswith("R" + NOT_RUN[1:])
    data = load_app_data().with_models([got.record])
    state = PlannerState(model=got.model_id, framework="vllm", tp=4, frameworks=["vllm"], models=[got.model_id])
    html = verdict_html(state, data)
    assert 'class="tp-evidence tp-evidence-checked"' in html and "this config was not run" in html
    assert "Reproduced" not in html and "&#10003;" not in html
    rep = report_html(state, data)
    assert "this config was not run" in rep and "reproduced by running" not in rep.lower()
    # a catalog cell that was run says so, in the same words
    state2 = PlannerState(model=LLAMA, framework="vllm", tp=8, frameworks=["vllm"])
    assert "Reproduced by running vLLM 0.33.0&#x27;s own code on this config and layout" in verdict_html(state2, data)


def test_the_plan_evidence_column_is_per_config():
    import pandas as pd

    from dashboard import planner
    from dashboard.catalog import normalize_config

    odd = pd.DataFrame([normalize_config(json.dumps(ODD).encode(), "acme/odd", source="upload")])
    df = planner.plan(odd, 8, "H100-80GB", context_len=4096)
    assert "executed" not in set(df["evidence"]) and set(df["evidence"]) <= {"checked", "source"}
    cat = planner.plan(LLAMA, 8, "H100-80GB", context_len=32768)
    tp8 = cat[(cat["layout"] == "TP 8") & (cat["framework"] == "vllm")]
    assert list(tp8["evidence"]) == ["executed"]
    assert set(cat.loc[cat["framework"] == "tensorrt-llm", "evidence"]) == {"source"}
