"""The SGLang worker's GPU stand-in as a function of the job's platform (issue 23): every device answer
(torch.cuda capability / name / properties / memory, the stub nvidia-smi, DeepGEMM's SM count) comes from the
device descriptor the driver sends; the cuda-sm90 answers are the H100's the sglang table was built with; ROCm
refuses with its reason; the cell plan of depth "platform". SGLang is not installed here: the worker's
stand-ins are exercised on fake ``torch.cuda`` / ``deep_gemm`` namespaces and a fake ``sglang`` package."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conformance import driver, worker_common
from dashboard import gpus

ROOT = Path(__file__).resolve().parents[2]
CUDA_PLATFORMS = ["cuda-sm75", "cuda-sm80", "cuda-sm89", "cuda-sm90", "cuda-sm100", "cuda-sm120"]
ROCM_PLATFORMS = [p for p in gpus.PLATFORMS if gpus.PLATFORMS[p].is_rocm]


def _worker():
    spec = importlib.util.spec_from_file_location("sglang_worker_p", ROOT / "conformance" / "sglang_worker.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _installed(pid: str):
    w = _worker()
    cuda = types.SimpleNamespace()
    props = w.install_cuda(w.check_device(pid, driver.device_descriptor(pid)), cuda)
    return w, cuda, props


# -- the descriptor reaches every answer ------------------------------------------------------------------

@pytest.mark.parametrize("pid", CUDA_PLATFORMS)
def test_torch_cuda_answers_as_the_descriptor(pid: str) -> None:
    d = driver.device_descriptor(pid)
    w, cuda, props = _installed(pid)
    assert cuda.is_available() and cuda.device_count() == w.DEVICE_COUNT
    assert cuda.get_device_capability() == cuda.get_device_capability(3) == tuple(d["capability"])
    assert cuda.get_device_name(0) == d["name"]
    p = cuda.get_device_properties(0)
    assert p is props
    assert (p.name, p.major, p.minor) == (d["name"], *d["capability"])
    assert p.total_memory == d["total_memory"] and p.multi_processor_count == d["compute_units"]
    assert cuda.mem_get_info(0) == (d["total_memory"], d["total_memory"])
    arch = w.CUDA_ARCH[tuple(d["capability"])]
    assert {k: getattr(p, k) for k in arch} == arch
    assert (p.warp_size, p.shared_memory_per_block) == (32, 48 * 1024)


def test_platforms_answer_differently() -> None:
    """Each CUDA platform gets its own GPU: no two answer the same capability, and the A100 is not an H100."""
    caps = {pid: _installed(pid)[1].get_device_capability() for pid in CUDA_PLATFORMS}
    assert len(set(caps.values())) == len(CUDA_PLATFORMS)
    _, cuda, p = _installed("cuda-sm80")
    assert cuda.get_device_name() == "NVIDIA A100-SXM4-80GB" and cuda.get_device_capability() == (8, 0)
    assert (p.multi_processor_count, p.total_memory) == (108, 85_899_345_920)
    assert p.shared_memory_per_block_optin == 163 * 1024 and p.max_threads_per_multi_processor == 2048
    _, _, t4 = _installed("cuda-sm75")
    assert t4.shared_memory_per_block_optin == 64 * 1024 and t4.max_threads_per_multi_processor == 1024


def test_sm90_answers_are_the_h100_ones_the_table_was_built_with() -> None:
    """The committed sglang-0.5.23 table was built with fixed H100 answers (the worker before issue 23):
    the cuda-sm90 descriptor gives exactly those, so the table stays valid."""
    w, cuda, p = _installed("cuda-sm90")
    assert w.check_device("cuda-sm90", None) == w.H100_DEVICE == {
        k: v for k, v in driver.device_descriptor("cuda-sm90").items()}
    assert cuda.get_device_capability() == (9, 0) and cuda.get_device_name() == "NVIDIA H100 80GB HBM3"
    assert cuda.mem_get_info() == (85_520_809_984, 85_520_809_984)
    before = dict(name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory=85_520_809_984,
                  multi_processor_count=132, max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536,
                  warp_size=32, is_integrated=0, is_multi_gpu_board=0, gcnArchName="NVIDIA H100 80GB HBM3",
                  uuid="GPU-00000000-0000-0000-0000-000000000000", shared_memory_per_block=49152,
                  shared_memory_per_block_optin=232448, shared_memory_per_multiprocessor=233472)
    assert {k: getattr(p, k) for k in before} == before


def test_unknown_property_and_capability_are_harness_errors() -> None:
    w, _, p = _installed("cuda-sm80")
    with pytest.raises(RuntimeError, match="harness: the stand-in device has no property 'L2_cache_size'") as e:
        p.L2_cache_size  # noqa: B018 - per card, not in the descriptor: never a made-up value
    assert w.harness_reason(e.value)
    d = dict(driver.device_descriptor("cuda-sm80"), capability=[8, 7])
    with pytest.raises(ValueError, match=r"no CUDA stand-in for capability 8\.7"):
        w.DeviceProperties(d)


@pytest.mark.parametrize("pid", CUDA_PLATFORMS)
def test_nvidia_smi_answers_as_the_descriptor(tmp_path, pid: str) -> None:
    d = driver.device_descriptor(pid)
    script = tmp_path / "nvidia-smi"
    script.write_text(_worker().nvidia_smi_script(d))

    def smi(*args):
        return subprocess.run(["sh", str(script), *args], capture_output=True, text=True)

    assert smi("--query-gpu=memory.total", "--format=csv,noheader,nounits").stdout.strip() == \
        str(d["total_memory"] // 2**20)
    assert smi("--query-gpu=compute_cap", "--format=csv,noheader").stdout.strip() == \
        f"{d['capability'][0]}.{d['capability'][1]}"
    assert smi("--query-gpu=name", "--format=csv,noheader").stdout.strip() == d["name"]
    bad = smi("--query-gpu=clocks.max.sm")
    assert bad.returncode == 9 and "harness nvidia-smi" in bad.stderr
    if pid == "cuda-sm90":
        assert smi("--query-gpu=memory.total").stdout.strip() == "81559"  # as before issue 23


def test_deep_gemm_sm_count_and_nvml_fallback() -> None:
    w = _worker()
    dg = types.SimpleNamespace(get_num_sms=lambda: 0)
    w.install_deep_gemm(driver.device_descriptor("cuda-sm100"), dg)
    assert dg.get_num_sms() == 148
    w.install_deep_gemm(driver.device_descriptor("cuda-sm90"), dg)
    assert dg.get_num_sms() == 132
    cuda = types.SimpleNamespace(_get_nvml_device_index=lambda d: 0)
    w.install_nvml_fallback(cuda)
    with pytest.raises(RuntimeError, match="harness: NVML"):  # SGLang's get_device_sm catches and asks torch
        cuda._get_nvml_device_index(0)


@pytest.mark.parametrize("change, match", [
    ({"capability": [8]}, "capability must be"),
    ({"total_memory": 0}, "total_memory must be"),
    ({"compute_units": None}, "compute_units must be"),
    ({"platform": "cuda-sm90"}, "is for 'cuda-sm90'"),
    ({"vendor": "intel"}, "vendor"),
])
def test_bad_descriptors_are_refused(change: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _worker().check_device("cuda-sm80", dict(driver.device_descriptor("cuda-sm80"), **change))


def test_no_descriptor_is_h100_on_sm90_only() -> None:
    w = _worker()
    with pytest.raises(ValueError, match="no device descriptor"):
        w.check_device("cuda-sm80", None)


# -- setup: the job's descriptor, through serve, into the stand-ins ---------------------------------------

def _fake_sglang(monkeypatch) -> None:
    for name in ("sglang", "sglang.srt", "sglang.srt.server_args", "sglang.srt.model_loader",
                 "sglang.srt.model_loader.loader"):
        mod = types.ModuleType(name)
        mod.__path__ = []  # a package, so the submodule imports resolve from sys.modules
        monkeypatch.setitem(sys.modules, name, mod)
    sys.modules["sglang"].__version__ = "0.5.23"
    sys.modules["sglang"].srt = sys.modules["sglang.srt"]
    sys.modules["sglang.srt"].server_args = sys.modules["sglang.srt.server_args"]
    sys.modules["sglang.srt"].model_loader = sys.modules["sglang.srt.model_loader"]
    sys.modules["sglang.srt.model_loader"].loader = sys.modules["sglang.srt.model_loader.loader"]


def _serve(w, job: dict, monkeypatch) -> list[dict]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(job) + "\n"))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    w.wc.serve(w.setup, w.exc_record, "SGLang import or GPU stand-in failed", w.registry, w.run_model,
               device_aware=True)
    return [json.loads(line[len(worker_common.CELL_PREFIX):]) for line in out.getvalue().splitlines()
            if line.startswith(worker_common.CELL_PREFIX)]


@pytest.mark.parametrize("pid", ["cuda-sm80", "cuda-sm120"])
def test_setup_installs_the_jobs_device(monkeypatch, pid: str) -> None:
    w = _worker()
    seen: dict = {}
    monkeypatch.setattr(w, "install_nvidia_smi", lambda d: seen.setdefault("smi", d))
    monkeypatch.setattr(w, "install_cuda", lambda d: seen.setdefault("props", w.DeviceProperties(d)))
    monkeypatch.setattr(w, "install_nvml_fallback", lambda: None)
    monkeypatch.setattr(w, "install_deep_gemm", lambda d: seen.setdefault("dg", d))
    monkeypatch.setattr(w, "run_model", lambda m, p, v, j: seen.setdefault("ran", (p, v)))
    _fake_sglang(monkeypatch)
    d = driver.device_descriptor(pid)
    _serve(w, {"platform": pid, "device": d, "models": [{"model_id": "a/b", "cells": [{"tp": 1}]}]}, monkeypatch)
    assert seen["smi"] == seen["dg"] == d
    assert (seen["props"].major, seen["props"].minor, seen["props"].name) == (*d["capability"], d["name"])
    assert seen["ran"] == (pid, "0.5.23")


@pytest.mark.parametrize("pid", ROCM_PLATFORMS)
def test_rocm_cells_are_harness_errors_with_the_reason(monkeypatch, pid: str) -> None:
    """A CUDA build of SGLang cannot stand in for an AMD GPU: the stand-in refuses before importing SGLang
    (nothing here provides it), and every cell says why."""
    w = _worker()
    with pytest.raises(RuntimeError, match="harness: ROCm stand-in not faithful") as e:
        w.setup(pid, driver.device_descriptor(pid))
    assert w.harness_reason(e.value) and "AITER" in str(e.value)
    job = {"platform": pid, "device": driver.device_descriptor(pid),
           "models": [{"model_id": "a/b", "cells": [{"tp": 1}, {"tp": 8, "ep": 1}]}]}
    recs = _serve(w, job, monkeypatch)
    assert len(recs) == 2 and all(r["outcome"] == "harness_error" for r in recs)
    assert all("ROCm stand-in not faithful" in r["reason"] and "aiter" in r["reason"] for r in recs)


# -- the cells of depth "platform" ------------------------------------------------------------------------

DENSE = {"model_type": "llama", "num_attention_heads": 32}
MOE = {"model_type": "qwen3_moe", "num_experts": 128}
VLM = {"model_type": "qwen2_5_vl", "vision_config": {"depth": 32}}


def test_sglang_platform_depth_cells() -> None:
    """Issue 23's depth off cuda-sm90: TP sizes x EP off/on for MoE, vision DP where a vision tower is;
    attention-DP 1 only (the full table keeps 1/2/4 and EP on every model)."""
    n = len(driver.TP_SIZES)
    dense = driver.plan_cells(DENSE, "platform", "sglang")
    assert [c.key() for c in dense] == [(tp, 1, 1, 0, 0) for tp in driver.TP_SIZES]
    moe = driver.plan_cells(MOE, "platform", "sglang")
    assert len(moe) == 2 * n and {c.ep for c in moe} == {False, True} and {c.dp for c in moe} == {1}
    vlm = driver.plan_cells(VLM, "platform", "sglang")
    assert len(vlm) == n + n - 1 and not any(c.ep for c in vlm)
    assert {c.tp for c in vlm if c.vision_dp} == set(driver.TP_SIZES) - {1}
    assert len(driver.plan_cells(DENSE, "full", "sglang")) == 60  # cuda-sm90's plan unchanged
    with pytest.raises(ValueError, match="unknown depth"):
        driver.plan_cells_sglang("deep")
    with pytest.raises(ValueError, match="pass raw"):
        driver.plan_cells_sglang("platform")


def test_vision_dp_cell_command_line() -> None:
    w = _worker()
    assert "--mm-enable-dp-encoder" in w.command_line("/m", {"tp": 4, "vision_dp": 1})
    assert "--mm-enable-dp-encoder" not in w.command_line("/m", {"tp": 4, "vision_dp": 0})
