"""The GPU platform as a dimension of the conformance harness (issue 23): the device descriptor the driver
builds per platform from data/gpus.csv, the paths of a platform's checkpoints and table, the cell plan of
depth "platform", the CLI's ``--platform``, the job JSON a worker receives, and the comparison with the
cuda-sm90 table. No framework is installed here: the worker is exercised through its pure parts and a fake
worker script."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from conformance import __main__ as cli
from conformance import driver, platforms, worker_common
from dashboard import gpus

ROOT = Path(__file__).resolve().parents[2]


def _vllm_worker():
    spec = importlib.util.spec_from_file_location("vllm_worker_t", ROOT / "conformance" / "vllm_worker.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


# -- the device descriptor ------------------------------------------------------------------------------

@pytest.mark.parametrize("pid", list(gpus.PLATFORMS))
def test_descriptor_is_the_representative_gpu(pid: str) -> None:
    p = gpus.PLATFORMS[pid]
    row = gpus.gpu_row(p.stand_in)
    d = driver.device_descriptor(pid)
    assert d["platform"] == pid and d["gpu"] == row["gpu"] and d["name"] == row["name"]
    assert d["total_memory"] == int(row["memory_bytes"]) and isinstance(d["total_memory"], int)
    assert d["capability"] == list(p.capability)
    assert d["vendor"] == p.vendor
    assert (d["arch"] == p.arch) and (d["arch"].startswith("gfx") if p.is_rocm else d["arch"] == "")
    assert json.loads(json.dumps(d)) == d  # goes through the job JSON unchanged
    assert _vllm_worker().check_device(pid, d) == d  # and the worker accepts it


def test_descriptor_values() -> None:
    a100 = driver.device_descriptor("cuda-sm80")
    assert a100 == {"platform": "cuda-sm80", "vendor": "nvidia", "gpu": "A100-80GB", "name": "NVIDIA A100-SXM4-80GB",
                    "capability": [8, 0], "total_memory": 85_899_345_920, "arch": "", "compute_units": 108}
    assert driver.device_descriptor("cuda-sm75")["capability"] == [7, 5]
    assert driver.device_descriptor("rocm-gfx942")["arch"] == "gfx942"
    assert driver.device_descriptor("rocm-gfx942")["capability"] == [9, 4]
    assert driver.device_descriptor("cpu") is None
    with pytest.raises(ValueError, match="unknown platform 'cuda-sm99'"):
        driver.device_descriptor("cuda-sm99")


def test_sm90_descriptor_is_what_the_worker_answered_before() -> None:
    """The cuda-sm90 table was built with the worker's built-in H100 answers: the descriptor from
    data/gpus.csv gives the same ones, so the sm90 table does not change."""
    w = _vllm_worker()
    d = driver.device_descriptor("cuda-sm90")
    for k in ("name", "capability", "total_memory", "vendor", "platform", "compute_units"):
        assert d[k] == w.H100_DEVICE[k], k
    assert w.check_device("cuda-sm90", None) == w.H100_DEVICE


@pytest.mark.parametrize("change, match", [
    ({"capability": [8]}, "capability must be"),
    ({"capability": [8, "0"]}, "capability must be"),
    ({"total_memory": 0}, "total_memory"),
    ({"total_memory": 1.5e9}, "total_memory"),
    ({"platform": "cuda-sm90"}, "is for 'cuda-sm90'"),
    ({"vendor": "intel"}, "vendor"),
])
def test_worker_rejects_a_bad_descriptor(change: dict, match: str) -> None:
    w = _vllm_worker()
    d = dict(driver.device_descriptor("cuda-sm80"), **change)
    with pytest.raises(ValueError, match=match):
        w.check_device("cuda-sm80", d)


def test_worker_needs_a_descriptor_off_sm90_and_an_arch_on_rocm() -> None:
    w = _vllm_worker()
    with pytest.raises(ValueError, match="no device descriptor"):
        w.check_device("cuda-sm80", None)
    d = dict(driver.device_descriptor("rocm-gfx942"), arch="")
    with pytest.raises(ValueError, match="gcnArchName"):
        w.check_device("rocm-gfx942", d)
    d = dict(driver.device_descriptor("cuda-sm80"))
    del d["name"]
    with pytest.raises(ValueError, match="lacks name"):
        w.check_device("cuda-sm80", d)


def test_worker_imports_without_side_effects() -> None:
    import os

    before = dict(os.environ)
    mods = set(sys.modules)
    _vllm_worker()
    assert dict(os.environ) == before
    assert not {m for m in set(sys.modules) - mods if m.split(".")[0] in ("vllm", "torch")}


# -- paths ------------------------------------------------------------------------------------------------

def test_paths_per_platform() -> None:
    assert driver.work_dir("vllm", "0.33.0") == driver.DATA / ".work" / "vllm-0.33.0"
    assert driver.work_dir("vllm", "0.33.0", "cuda-sm90") == driver.DATA / ".work" / "vllm-0.33.0"
    assert driver.table_path("vllm", "0.33.0") == driver.DATA / "vllm-0.33.0.parquet"
    assert driver.work_dir("vllm", "0.33.0", "cuda-sm80") == driver.DATA / ".work" / "cuda-sm80" / "vllm-0.33.0"
    assert driver.table_path("vllm", "0.33.0", "rocm-gfx942") == driver.DATA / "rocm-gfx942" / "vllm-0.33.0.parquet"
    with pytest.raises(ValueError, match="unknown platform"):
        driver.table_path("vllm", "0.33.0", "../x")


def test_assemble_refuses_rows_of_another_platform(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(driver, "DATA", tmp_path)
    wd = driver.work_dir("vllm", "0.33.0", "cuda-sm80")
    wd.mkdir(parents=True)
    rec = {"tp": 1, "pp": 1, "dp": 1, "ep": 0, "vision_dp": 0, "outcome": "built", "model_id": "a/b",
           "platform": "cuda-sm80"}
    (wd / "a--b.json").write_text(json.dumps({"model_id": "a/b", "records": [rec]}))
    out = driver.assemble("vllm", "0.33.0", "cuda-sm80")
    assert out == tmp_path / "cuda-sm80" / "vllm-0.33.0.parquet"
    t = pd.read_parquet(out)
    assert list(t["platform"]) == ["cuda-sm80"] and list(t["version"]) == ["0.33.0"]
    (wd / "c--d.json").write_text(json.dumps({"model_id": "c/d", "records": [dict(rec, platform="cuda-sm90")]}))
    with pytest.raises(SystemExit, match="holds rows of cuda-sm90"):
        driver.assemble("vllm", "0.33.0", "cuda-sm80")
    with pytest.raises(SystemExit, match="no checkpoints"):
        driver.assemble("vllm", "0.33.0", "cuda-sm75")


# -- the cell plan of depth "platform" -------------------------------------------------------------------

DENSE = {"model_type": "llama", "num_attention_heads": 32}
MOE = {"model_type": "qwen3_moe", "num_experts": 128}
VLM = {"model_type": "qwen2_5_vl", "vision_config": {"depth": 32}}
MOE_VLM = {"model_type": "x", "text_config": {"num_experts": 16}, "vision_config": {}}


def test_platform_depth_cells() -> None:
    tp = list(driver.TP_SIZES)
    assert tp == [1, 2, 3, 4, 6, 8, 12, 16, 32, 64]
    dense = driver.plan_cells(DENSE, "platform")
    assert [c.key() for c in dense] == [(t, 1, 1, 0, 0) for t in tp]
    moe = driver.plan_cells(MOE, "platform")
    assert [c.key() for c in moe] == [(t, 1, 1, 0, 0) for t in tp] + [(t, 1, 1, 1, 0) for t in tp]
    vlm = driver.plan_cells(VLM, "platform")
    assert [c.key() for c in vlm] == [(t, 1, 1, 0, 0) for t in tp] + [(t, 1, 1, 0, 1) for t in tp if t > 1]
    both = driver.plan_cells(MOE_VLM, "platform")
    assert len(both) == 10 + 10 + 9 and len({c.key() for c in both}) == 29
    for raw in (DENSE, MOE, VLM, MOE_VLM):  # no DP, no PP; a subset of the full (cuda-sm90) plan
        cells = driver.plan_cells(raw, "platform")
        assert all(c.dp == 1 and c.pp == 1 for c in cells)
        assert {c.key() for c in cells} <= {c.key() for c in driver.plan_cells(raw, "full")}
    with pytest.raises(ValueError, match="unknown depth"):
        driver.plan_cells(DENSE, "deep")


def test_default_depth() -> None:
    assert driver.default_depth("cuda-sm90") == "full"
    assert {driver.default_depth(p) for p in gpus.PLATFORMS if p != "cuda-sm90"} == {"platform"}


# -- the CLI ----------------------------------------------------------------------------------------------

@pytest.fixture()
def fake_run(monkeypatch):
    calls: dict = {}
    monkeypatch.setattr(driver, "python_of", lambda venv: "/venv/bin/python")
    monkeypatch.setattr(cli.libcuda_stub, "build", lambda venv: None)
    monkeypatch.setattr(cli, "_venv_version", lambda python, fw: "0.33.0")
    monkeypatch.setattr(driver, "dump_registry", lambda *a, **k: calls.setdefault("registry", (a, k)))
    monkeypatch.setattr(driver, "run", lambda *a, **k: calls.setdefault("run", (a, k)))
    monkeypatch.setattr(driver, "assemble", lambda *a, **k: calls.setdefault("assemble", (a, k)))
    return calls


def test_cli_run_platform(fake_run) -> None:
    assert cli.main(["run", "--venv", "/v", "--platform", "cuda-sm80", "--workers", "1"]) == 0
    a, k = fake_run["run"]
    assert k["platform"] == "cuda-sm80" and k["depth"] == "platform" and k["workers"] == 1
    assert fake_run["assemble"][0] == ("vllm", "0.33.0", "cuda-sm80")
    assert fake_run["registry"][0][-1] == "cuda-sm80"


def test_cli_run_default_is_sm90_full(fake_run) -> None:
    assert cli.main(["run", "--venv", "/v"]) == 0
    _, k = fake_run["run"]
    assert k["platform"] == "cuda-sm90" and k["depth"] == "full"
    assert fake_run["assemble"][0] == ("vllm", "0.33.0", "cuda-sm90")


def test_cli_run_explicit_depth(fake_run) -> None:
    cli.main(["run", "--venv", "/v", "--platform", "cuda-sm75", "--depth", "tp"])
    assert fake_run["run"][1]["depth"] == "tp"


def test_cli_assemble_and_bad_platform(fake_run, capsys) -> None:
    assert cli.main(["assemble", "--version", "0.33.0", "--platform", "cuda-sm89"]) == 0
    assert fake_run["assemble"][0] == ("vllm", "0.33.0", "cuda-sm89")
    with pytest.raises(SystemExit):
        cli.main(["assemble", "--version", "0.33.0", "--platform", "cuda-sm99"])
    assert "invalid choice: 'cuda-sm99'" in capsys.readouterr().err


def test_cli_verify_passes_the_platform(fake_run, monkeypatch) -> None:
    seen = {}

    def verify(*a, **k):
        seen.update(k)
        return pd.DataFrame([{"same": True}])

    monkeypatch.setattr(driver, "verify", verify)
    assert cli.main(["verify", "--venv", "/v", "--platform", "cuda-sm80", "--sample", "3"]) == 0
    assert seen["platform"] == "cuda-sm80" and seen["sample"] == 3


def test_cli_report_platform(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(platforms, "update", lambda *a: seen.append(a) or "block")
    assert cli.main(["report", "--version", "0.33.0", "--platform", "cuda-sm80"]) == 0
    assert seen == [("0.33.0", "cuda-sm80", "vllm")]


# -- the job a worker receives ---------------------------------------------------------------------------

FAKE_WORKER = r'''
import json, sys
job = json.loads(sys.stdin.readline())
for m in job["models"]:
    print("@@MODEL_START " + json.dumps(m["model_id"]))
    for c in m["cells"]:
        print("@@CELL " + json.dumps(dict(c, outcome="built", device=job.get("device"), platform=job["platform"])))
    print("@@MODEL_DONE " + json.dumps(m["model_id"]))
'''


@pytest.mark.parametrize("pid", ["cuda-sm80", "cuda-sm90", "rocm-gfx950"])
def test_worker_job_carries_the_device(tmp_path, monkeypatch, pid: str) -> None:
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    monkeypatch.setitem(driver.WORKER, "vllm", script)
    cfg = tmp_path / "org--model.json"
    cfg.write_text(json.dumps(MOE))
    got: dict = {}
    driver.run_batch(sys.executable, "vllm", [(cfg, driver.plan_cells(MOE, "platform"))], platform=pid,
                     model_timeout=60, on_model=lambda mid, recs: got.setdefault(mid, recs))
    recs = got["org/model"]
    assert len(recs) == 20
    assert all(r["device"] == driver.device_descriptor(pid) and r["platform"] == pid for r in recs)


def _serve(job: dict, monkeypatch, device_aware: bool):
    seen: list = []

    def setup(*args):
        seen.append(args)
        return "9.9"

    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(job) + "\n"))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    worker_common.serve(setup, lambda e: {"message": str(e)}, "import failed", lambda v: {},
                        lambda m, p, v, j: None, device_aware=device_aware)
    return seen, out.getvalue()


def test_serve_hands_the_device_to_setup(monkeypatch) -> None:
    d = driver.device_descriptor("cuda-sm80")
    seen, _ = _serve({"platform": "cuda-sm80", "device": d, "models": []}, monkeypatch, True)
    assert seen == [("cuda-sm80", d)]


def test_serve_refuses_other_platforms_in_a_worker_without_stand_ins(monkeypatch) -> None:
    job = {"platform": "cuda-sm80", "device": driver.device_descriptor("cuda-sm80"),
           "models": [{"model_id": "a/b", "cells": [{"tp": 1}]}]}
    seen, out = _serve(job, monkeypatch, False)
    assert seen == []  # never set up: the records would claim a platform the worker did not stand in for
    rec = json.loads(out.splitlines()[0][len(worker_common.CELL_PREFIX):])
    assert rec["outcome"] == "harness_error" and "cuda-sm90 only, not cuda-sm80" in rec["reason"]
    seen, _ = _serve(dict(job, platform="cuda-sm90", device=None), monkeypatch, False)
    assert seen == [("cuda-sm90",)]


# -- the comparison with cuda-sm90 ------------------------------------------------------------------------

def _row(tp, outcome, msg="", file="", line=0, dtype="bfloat16", **kw):
    built = outcome == "built"
    return dict(model_id="a/b", tp=tp, pp=1, dp=1, ep=False, vision_dp=False, outcome=outcome,
                exc_type="ValueError" if msg else "", message=msg, file=file, line=line,
                param_bytes=100 if built else None, param_bytes_by_dtype=json.dumps({dtype: 100}) if built else "", **kw)


def test_differences() -> None:
    base = pd.DataFrame([_row(1, "built"), _row(2, "refused_build", "x", "vllm/a.py", 1), _row(3, "built"),
                         _row(4, "refused_engine", "y", "vllm/b.py", 2), _row(64, "built")])
    new = pd.DataFrame([_row(1, "built", dtype="float16"),
                        _row(2, "refused_build", "Weight input_size_per_partition = 7 is not divisible by "
                             "min_thread_k = 128", "vllm/model_executor/layers/quantization/utils/marlin_utils.py", 9),
                        _row(3, "refused_engine", "Bfloat16 is only supported", "vllm/platforms/cuda.py", 5),
                        _row(4, "refused_engine", "y", "vllm/b.py", 2)])
    d = platforms.differences(new, base)
    assert list(d["tp"]) == [2, 3]  # tp 1 and 4 agree; tp 64 is in one table only
    assert list(d["kind"]) == ["kernel selection: Marlin (weight-only) path", "dtype: bfloat16 needs SM 8.0"]
    assert d.loc[0, "shown_sm90"] == "x at vllm/a.py:1"
    assert d.loc[1, "shown_sm90"] == "built" and d.loc[1, "shown_new"].endswith("at vllm/platforms/cuda.py:5")
    text = platforms.section("vllm", "0.33.0", "cuda-sm80", new.assign(reason=""), base)
    assert "4 cells in both tables, **2 differ**" in text and "| `a/b` | 2/-/- |" in text
    assert "Of the 1 cells built in both, 0 differ in rank 0's parameter bytes and 1 in their bytes per dtype." in text
    new.loc[0, "param_bytes"] = 150
    new.loc[0, "param_bytes_by_dtype"] = json.dumps({"float16": 100, "uint8": 50})
    text = platforms.section("vllm", "0.33.0", "cuda-sm80", new.assign(reason=""), base)
    assert "1 differ in rank 0's parameter bytes" in text
    assert "| `a/b` | 1 (TP 1) | 100 B (bfloat16 100, float16 0, uint8 0) | 150 B (bfloat16 0, float16 100, uint8 50) |" in text


# -- ROCm -------------------------------------------------------------------------------------------------

def test_rocm_cells_are_harness_errors_with_the_reason() -> None:
    """vLLM's CUDA build cannot stand in for a ROCm GPU faithfully: the stand-in refuses before importing
    anything, with a ``harness:`` reason (so the cell is a harness_error, not a refusal)."""
    w = _vllm_worker()
    with pytest.raises(RuntimeError, match="harness: ROCm stand-in not faithful") as e:
        w.install_platform("rocm-gfx942", driver.device_descriptor("rocm-gfx942"))
    assert w.harness_reason(e.value)


def test_fake_amdsmi_answers_as_the_gpu() -> None:
    w = _vllm_worker()
    d = driver.device_descriptor("rocm-gfx950")
    smi = w.fake_amdsmi(d)
    h = smi.amdsmi_get_processor_handles()[0]
    assert smi.amdsmi_get_gpu_asic_info(h)["target_graphics_version"] == "gfx950"
    assert smi.amdsmi_get_gpu_asic_info(h)["market_name"] == "AMD Instinct MI355X"
    assert smi.amdsmi_get_gpu_memory_total(h, smi.AmdSmiMemoryType.VRAM) == d["total_memory"] == 287_999_787_008
    assert smi.amdsmi_topo_get_link_type(h, 1) == {"hops": 1, "type": 2}


def test_device_properties_answer_or_refuse() -> None:
    w = _vllm_worker()
    p = w.DeviceProperties(driver.device_descriptor("cuda-sm75"))
    assert (p.name, p.major, p.minor, p.total_memory, p.multi_processor_count) == ("Tesla T4", 7, 5, 16_106_127_360, 40)
    with pytest.raises(RuntimeError, match="harness: the stand-in device has no property 'L2_cache_size'"):
        p.L2_cache_size  # noqa: B018 - never a made-up value
