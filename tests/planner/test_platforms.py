"""Issue 23 (one part): a framework that does not run on a GPU family is refused there with its reason
(``Framework.platform_refusal``), never ranked, never given a launch command -- in plan, plan_catalog,
check and the Plan tab."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dashboard import frameworks, gpus, planner

LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"


def _refusal(fw, gpu):
    return frameworks.get(fw).platform_refusal(gpus.gpu_info(gpu))


@pytest.mark.parametrize("gpu", ["MI250X-64GB", "MI300X-192GB", "MI325X-256GB", "MI355X-288GB"])
def test_tensorrt_llm_is_refused_on_every_amd_card(gpu):
    msg = _refusal("tensorrt-llm", gpu)
    assert "NVIDIA GPUs only" in msg and gpus.gpu_info(gpu).compute_capability in msg and "message ours" in msg


def test_the_amd_refusal_cites_the_hardware_page_not_the_turing_issue():
    amd, t4 = _refusal("tensorrt-llm", "MI300X-192GB"), _refusal("tensorrt-llm", "T4-16GB")
    assert "supported-hardware.html" in amd and "issues/2620" not in amd and "Turing" not in amd
    assert "supported-hardware.html" in t4 and "issues/2620" in t4


def test_tensorrt_llm_below_ampere_is_refused_and_ampere_up_accepted():
    assert "compute capability 8.0 or newer" in _refusal("tensorrt-llm", "T4-16GB")
    for g in ("A100-80GB", "A10-24GB", "L40S-48GB", "H100-80GB", "B200-180GB", "RTX-5090-32GB"):
        assert _refusal("tensorrt-llm", g) == "", g


def test_vllm_runs_on_every_card_of_the_table_but_refuses_below_sm75():
    for g in gpus.load_gpus()["gpu"]:
        assert _refusal("vllm", g) == "", g
    v100 = gpus.gpu_info({"gpu": "V100-32GB", "name": "Tesla V100", "vendor": "nvidia", "memory_bytes": 32 << 30,
                          "compute_capability": "7.0"})
    assert "7.5 or newer" in frameworks.get("vllm").platform_refusal(v100)
    mi100 = gpus.gpu_info({"gpu": "MI100", "name": "AMD Instinct MI100", "vendor": "amd", "memory_bytes": 32 << 30,
                           "compute_capability": "gfx908"})
    assert "gfx908" in frameworks.get("vllm").platform_refusal(mi100)


def test_frameworks_without_known_limits_and_memory_only_cards_refuse_nothing():
    for fw in ("sglang", "megatron-core", "transformers"):
        for g in ("MI300X-192GB", "T4-16GB", "H100-80GB"):
            if fw in frameworks.REGISTRY:
                assert _refusal(fw, g) == ""
    for fw in frameworks.REGISTRY:
        assert _refusal(fw, "other:24") == ""


def test_plan_on_mi300x_never_ranks_tensorrt_llm_nor_gives_it_a_command():
    df = planner.plan(LLAMA70, 8, "MI300X-192GB", context_len=32768)
    trt = df[df["framework"] == "tensorrt-llm"]
    assert len(trt) and not trt["starts"].any() and set(trt["refusal_kind"]) == {"platform"}
    assert all(c == () for c in trt["commands"]) and trt["rank"].isna().all()
    assert df.iloc[0]["framework"] != "tensorrt-llm" and df.iloc[0]["rank"] == 1
    assert "tensorrt-llm" not in set(planner.best(df)["framework"])
    d = planner.plan_to_dict(df)
    assert d["best"]["tensorrt-llm"] is None and "NVIDIA GPUs only" in d["platform_refusals"]["tensorrt-llm"]
    assert not any("trtllm-serve" in c for lay in d["layouts"] for c in lay["commands"])
    text = planner.format_table(df)
    assert "Launch, the TensorRT-LLM" not in text and "trtllm-serve" not in text
    # on H100 it is planned as before
    h = planner.plan(LLAMA70, 8, "H100-80GB", context_len=32768)
    assert h.loc[h["framework"] == "tensorrt-llm", "starts"].any()


def test_plan_catalog_marks_the_family_refusal():
    from dashboard.state import load_app_data

    cat = load_app_data(None).catalog
    cat = cat[cat["model_id"] == LLAMA70]
    res = planner.plan_catalog(cat, 8, "MI300X-192GB", min_sequences=1, context_len=32768)
    trt = res[res["framework"] == "tensorrt-llm"].iloc[0]
    assert not trt["serves"] and trt["why_not"] == "platform" and trt["best_layout"] == ""
    assert res[res["framework"] == "vllm"].iloc[0]["serves"]


def _check(*args):
    return subprocess.run([sys.executable, "-m", "dashboard.cli", "check", LLAMA70, "--framework", "tensorrt-llm",
                           "--tp", "8", *args], capture_output=True, text=True, timeout=300)


def test_check_exits_1_with_the_reason_on_amd_and_0_on_h100():
    r = _check("--gpu", "MI300X-192GB", "--json")
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    assert d["verdict"] == "refused" and d["exit_status"] == 1
    assert d["first_error"]["kind"] == "platform" and d["first_error"]["ours"] is True
    assert "NVIDIA GPUs only" in d["first_error"]["message"] and d["alternatives"] == []
    assert _check("--gpu", "H100-80GB").returncode == 0


def test_check_text_after_a_platform_refusal_points_to_plan_not_to_nearby_layouts():
    out = _check("--gpu", "MI300X-192GB").stdout
    assert "No valid layout found nearby" not in out
    assert "No TensorRT-LLM layout runs on MI300X-192GB" in out
    assert f"tp-planner plan {LLAMA70} --gpus 8 --gpu MI300X-192GB" in out


def test_plan_tab_shows_the_refusal_and_no_trtllm_command():
    from dashboard.app import DashboardApp
    from dashboard.state import load_app_data

    app = DashboardApp(data=load_app_data(None), query=f"?tab=plan&model={LLAMA70}&gpu=MI300X-192GB&gpu_count=8")
    v = app.plan
    assert 'data-framework="tensorrt-llm"' not in v._table.object and "trtllm-serve" not in v._table.object
    assert "does not run on MI300X-192GB" in v._summary.object
    assert "GPU family" in v._refused.object and "NVIDIA GPUs only" in v._refused.object
