"""The hardware dtype rules of :mod:`dashboard.gpus` and the frameworks' own dtype behaviour on top of them
(vLLM's ``--dtype auto`` fallback and message, :mod:`dashboard.frameworks.vllm.dtypes`)."""

from __future__ import annotations

import pytest

from dashboard import frameworks, gpus, planner


def _gpu(cc: str, name: str = "Card") -> gpus.GPU:
    return gpus.GPU("card", name, "", 16 << 30, cc, 8)


@pytest.mark.parametrize("cc, bf16, fp8, nvfp4", [
    ("7.0", False, False, False), ("7.5", False, False, False), ("8.0", True, False, False),
    ("8.6", True, False, False), ("8.9", True, True, False), ("9.0", True, True, False),
    ("10.0", True, True, True), ("12.0", True, True, True),
    ("gfx90a", True, False, False), ("gfx942", True, True, False), ("gfx950", True, True, False),
    ("gfx1100", False, False, False), ("", None, None, None), ("sm_90", None, None, None),
])
def test_runs_by_capability(cc, bf16, fp8, nvfp4):
    g = _gpu(cc)
    assert (g.runs("bf16"), g.runs("fp8"), g.runs("nvfp4")) == (bf16, fp8, nvfp4)


def test_every_table_card_has_a_capability_the_rules_know():
    for row in gpus.load_gpus().to_dict("records"):
        g = gpus.gpu_info(row["gpu"])
        assert gpus.dtype_check_note(g) == "", row["gpu"]
        assert g.runs("bf16") is not None, row["gpu"]


def test_other_gpu_has_no_capability_and_the_check_is_skipped():
    g = gpus.gpu_info("other:24")
    assert g.compute_capability == "" and g.memory_bytes == 24 << 30
    assert "dtype check skipped" in gpus.dtype_check_note(g)
    assert gpus.dtype_refusal(g, "nvfp4", "fp8") == ""


def test_cc_below_compares_cuda_capabilities_only():
    assert gpus.cc_below(_gpu("7.5"), 8.0) and not gpus.cc_below(_gpu("8.0"), 8.0)
    assert not gpus.cc_below(_gpu("gfx942"), 8.0) and not gpus.cc_below(_gpu(""), 8.0)
    assert gpus.lacks_bf16(_gpu("7.5")) and not gpus.lacks_bf16(_gpu("gfx90a"))


def test_needs_list_weights_then_kv():
    assert gpus.dtype_needs("bf16", "fp8_e5m2") == [("bf16", "weights"), ("fp8", "KV cache")]
    assert gpus.dtype_needs("int4", "fp16") == []
    assert [gpus.kv_dtype_kind(k) for k in ("fp8", "FP8_E4M3", "bfloat16", "bf16", "fp16", "auto")] == \
        ["fp8", "fp8", "bf16", "bf16", "", ""]


def test_generic_refusal_names_the_dtype_and_what_it_needs():
    t4 = _gpu("7.5", "Tesla T4")
    assert gpus.dtype_refusal(t4, "fp8", "bf16") == (
        "Tesla T4 (compute capability 7.5) cannot run FP8 weights natively: FP8 needs compute capability 8.9 "
        "(Ada / Hopper) (planner rule from the GPU table, not the framework's message).")
    mi250 = _gpu("gfx90a", "MI250X")
    assert "LLVM target gfx90a" in gpus.dtype_refusal(mi250, "bf16", "fp8") and "FP8 KV cache" in \
        gpus.dtype_refusal(mi250, "bf16", "fp8")
    assert "NVFP4 needs compute capability 10.0 (Blackwell)" in gpus.dtype_refusal(_gpu("9.0"), "nvfp4", "bf16")
    assert gpus.dtype_refusal(_gpu("9.0"), "fp8", "fp8") == ""


def test_vllm_dtype_auto_and_its_own_bf16_message():
    t4 = _gpu("7.5", "Tesla T4")
    vllm = frameworks.get("vllm")
    assert vllm.dtype_refusal(t4, "bf16", "bf16", explicit=False) == ""  # --dtype auto -> float16
    assert vllm.dtype_refusal(t4, "bf16", "bf16", explicit=True).startswith("Bfloat16 is only supported")
    assert vllm.auto_dtype(t4, "bf16", "llama", False)[0] == "fp16"
    assert vllm.auto_dtype(t4, "bf16", "gemma2", False)[0] == "fp32"
    assert vllm.auto_dtype(t4, "bf16", "llama", True) == (None, "")
    assert vllm.auto_dtype(_gpu("8.0"), "bf16", "llama", False) == (None, "")
    # AMD: no CUDA capability, the planner's own message
    assert "LLVM target gfx1100" in vllm.dtype_refusal(_gpu("gfx1100"), "bf16", "bf16", explicit=True)


@pytest.mark.parametrize("fw", [f for f in frameworks.names() if f != "vllm"])
def test_other_frameworks_use_the_hardware_rule(fw):
    for cc in ("7.5", "8.0", "8.9", "gfx90a", ""):
        for wk in ("bf16", "fp8", "nvfp4", "fp16"):
            for kv in ("bf16", "fp8", "fp16"):
                g = _gpu(cc)
                assert frameworks.get(fw).dtype_refusal(g, wk, kv, explicit=False) == gpus.dtype_refusal(g, wk, kv)
                assert planner._dtype_refusal(g, wk, kv, fw) == gpus.dtype_refusal(g, wk, kv)


def test_planner_names_still_work():
    assert planner.GPU is gpus.GPU and planner.AMD_DTYPES is gpus.AMD_DTYPES
    assert planner.gpu_info("h100-80gb") is gpus.gpu_info("H100-80GB")
    assert planner.vllm_auto_dtype(_gpu("7.5"), "bf16", "glm4", False)[0] == "fp32"
