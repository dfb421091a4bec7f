"""Units of the ported parts of vLLM 0.33.0's attention-backend selection (dashboard/frameworks/vllm/attention.py):
the priority lists, the model dtype and KV-cache dtype as vLLM resolves them, the message, and that a platform
never executed (or a hostile id) gets no answer. The executed facts and per-model calls are held in
tests/rules/test_conformance_platform_rules.py."""

from __future__ import annotations

import pytest

from dashboard.frameworks.vllm import attention as A


def test_priorities_follow_the_compute_capability() -> None:
    mla = A.SelectorConfig(head_size=576, dtype="bfloat16", use_mla=True, use_sparse=True, num_heads=128)
    assert A.priorities(mla, (9, 0))[:4] == ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA"]
    assert A.priorities(mla, (9, 0))[-1] == "FLASHINFER_MLA_SPARSE_SM90"  # head 576: SM90 sparse last
    assert A.priorities(A.SelectorConfig(head_size=512, dtype="bfloat16", use_mla=True), (9, 0))[4] == \
        "FLASHINFER_MLA_SPARSE_SM90"
    assert A.priorities(mla, (12, 0)) == ["TRITON_MLA", "FLASHINFER_MLA_SPARSE_SM120"]
    b200 = A.priorities(mla, (10, 0))
    assert b200[0] == "FLASHINFER_MLA" and b200[-2:] == ["FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE"]
    few = A.SelectorConfig(head_size=576, dtype="bfloat16", use_mla=True, num_heads=16)
    assert A.priorities(few, (10, 0))[-3] == "FLASH_ATTN_MLA_SPARSE_FA4"
    fp8 = A.SelectorConfig(head_size=576, dtype="bfloat16", use_mla=True, kv_cache_dtype="fp8_e4m3", num_heads=16)
    assert A.priorities(fp8, (10, 0))[-2:] == ["FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
    dense = A.SelectorConfig(head_size=128, dtype="bfloat16")
    assert A.priorities(dense, (8, 0))[:2] == ["FLASH_ATTN", "FLASHINFER"]
    assert A.priorities(dense, (10, 0))[:2] == ["FLASHINFER", "FLASH_ATTN"]
    mm = A.SelectorConfig(head_size=256, dtype="bfloat16", use_mm_prefix=True)
    assert A.priorities(mm, (9, 0))[0] == "TRITON_FLASH_ATTN" and A.priorities(mm, (10, 0))[0] == "TRITON_FLASHINFER"


@pytest.mark.parametrize("cfg, mt, cap, want", [
    ("bfloat16", "llama", (9, 0), "bfloat16"), ("bfloat16", "llama", (7, 5), "float16"),
    ("bfloat16", "gemma3", (7, 5), "float32"), ("float32", "llama", (8, 0), "bfloat16"),
    (None, "llama", (7, 5), "float16"), ("float16", "gemma2", (9, 0), "bfloat16"), ("float16", "llama", (9, 0), "float16"),
])
def test_model_dtype(cfg, mt, cap, want) -> None:
    assert A.model_dtype(cfg, mt, cap) == want


@pytest.mark.parametrize("q, method, arch, cap, want", [
    ("float8", "modelopt", "X", (9, 0), "fp8_e4m3"), ("fp8", "modelopt", "X", (9, 0), "fp8_e4m3"),
    ("float4", "modelopt", "X", (10, 0), "nvfp4"), ("int8", "modelopt", "X", (9, 0), "auto"),
    ("float8", "compressed-tensors", "X", (8, 0), "fp8"), (None, "fp8", "X", (9, 0), "auto"),
    (None, None, "GlmMoeDsaForCausalLM", (10, 0), "fp8_e4m3"), (None, None, "GlmMoeDsaForCausalLM", (9, 0), "auto"),
])
def test_kv_cache_dtype(q, method, arch, cap, want) -> None:
    assert A.kv_cache_dtype(q, method, arch, cap) == want


def test_the_selector_config_prints_as_vllm_does() -> None:
    s = A.SelectorConfig(head_size=576, dtype="float16", use_mla=True, use_sparse=True)
    assert repr(s).startswith("AttentionSelectorConfig(head_size=576, dtype=torch.float16, kv_cache_dtype=auto, "
                              "block_size=None, use_mla=True, has_sink=False, use_sparse=True,")
    assert repr(s).endswith("use_pcp=False, use_dcp=False, use_rswa=False)")


def test_sparse_backends_rewrite_the_cache_dtype() -> None:
    assert A.canonical_sparse_kv("FLASHMLA_SPARSE", "fp8_e4m3") == "fp8_ds_mla"
    assert A.canonical_sparse_kv("FLASHMLA_SPARSE", "nvfp4_ds_mla") == "nvfp4_ds_mla"
    assert A.canonical_sparse_kv("FLASHMLA_SPARSE", "auto") == "auto"
    assert A.canonical_sparse_kv("FLASHINFER_MLA_SPARSE_SM120", "auto") == "fp8_ds_mla"


@pytest.mark.parametrize("pid", ["rocm-gfx942", "../etc", "cuda-sm99", "", "cuda-sm80/../../x"])
def test_no_answer_without_executed_facts(pid) -> None:
    assert A.facts(pid) is None
    s = A.SelectorConfig(head_size=128, dtype="bfloat16")
    assert A.select(s, pid).decided is False


def test_triton_fp8_kv_message() -> None:
    s = A.SelectorConfig(head_size=256, dtype="float16", kv_cache_dtype="fp8_e4m3")
    e = A.impl_error("TRITON_ATTN", s, (7, 5), "Tesla T4")
    assert e.message == ("FP8 KV cache is not supported by the Triton attention backend on Tesla T4 (compute "
                         "capability 7.5); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype float16.")
    assert A.impl_error("TRITON_ATTN", s, (8, 9), "NVIDIA L40S") is None
    assert A.impl_error("FLASH_ATTN", s, (8, 0), "x") is None
