"""Memory model: KV bytes per token per rank, state per sequence, weights per rank, GPU table, capacity.

Oracles come from issue 4 (records from the shipped catalog); the vLLM 0.19 capacity oracle is the
llm-d capacity-planner accuracy report (Llama-3.1-8B-Instruct, one H100 80GB, utilization 0.95:
weights 14.99 GiB, activation 1.89 GiB, non-torch 0.25 GiB, KV 58.11 GiB = 476,016 tokens; with
``--kv-cache-dtype fp8`` 952,032 tokens).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import memory, schema, sharding

GiB = 2**30
SERVING = ("vllm", "sglang", "tensorrt-llm")


@pytest.fixture(scope="module")
def rec(catalog):
    by_id = catalog.set_index("model_id", drop=False)

    def get(model_id: str) -> pd.Series:
        return by_id.loc[model_id]

    return get


# ---------------------------------------------------------------- KV-cache oracles ----------
@pytest.mark.parametrize("framework", schema.FRAMEWORKS)
def test_llama31_8b_kv_bytes_per_token_bf16_tp1(rec, framework):
    r = rec("meta-llama/Llama-3.1-8B-Instruct")
    assert memory.kv_cache_bytes_per_token_per_rank(r, framework, 1, kv_dtype="bf16") == 131_072


@pytest.mark.parametrize("framework", schema.FRAMEWORKS)
def test_llama31_70b_kv_bytes_total_and_tp4(rec, framework):
    r = rec("meta-llama/Llama-3.1-70B-Instruct")
    assert memory.kv_cache_bytes_per_token_per_rank(r, framework, 1) == 327_680
    assert memory.kv_cache_bytes_per_token_per_rank(r, framework, 4) == 81_920


@pytest.mark.parametrize("framework", ("vllm", "sglang", "megatron-core"))
def test_qwen3_235b_tp4_one_kv_head_per_rank(rec, framework):
    r = rec("Qwen/Qwen3-235B-A22B")
    assert int(sharding.kv_heads_per_rank(r["num_key_value_heads"], 4, framework)) == 1
    k_bytes = 1 * 94 * 128 * 2
    assert k_bytes == 24_064
    # K and V have the same head_dim: K is half of the per-rank KV bytes
    assert memory.kv_cache_bytes_per_token_per_rank(r, framework, 4) == 2 * 24_064


@pytest.mark.parametrize("framework", SERVING)
@pytest.mark.parametrize("tp", (1, 2, 4, 8, 16, 32))
def test_deepseek_v3_mla_latent_same_on_every_rank(rec, framework, tp):
    r = rec("deepseek-ai/DeepSeek-V3")
    assert memory.kv_cache_bytes_per_token_per_rank(r, framework, tp) == 70_272  # 61 x (512 + 64) x 2


def test_mla_transformers_caches_up_projected_heads(rec):
    r = rec("deepseek-ai/DeepSeek-V3")
    # 61 layers x 128 heads x (192 + 128) x 2 B, split over TP when the heads divide
    assert memory.kv_cache_bytes_per_token_per_rank(r, "transformers-native-tp", 1) == 61 * 128 * 320 * 2
    assert memory.kv_cache_bytes_per_token_per_rank(r, "transformers-native-tp", 8) == 61 * 16 * 320 * 2


def test_four_kv_heads_at_tp8_replicated_bytes_show_it(rec):
    r = rec("Qwen/Qwen3-235B-A22B")  # 4 KV heads
    assert r["num_key_value_heads"] == 4
    per_rank_tp8 = memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 8)
    per_rank_tp4 = memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 4)
    total = memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 1)
    assert per_rank_tp8 == per_rank_tp4 == 2 * 94 * 128 * 2  # one head per rank either way
    assert per_rank_tp8 * 8 == 2 * total  # every head held twice


def test_tensorrt_llm_uses_ceil_kv_heads():
    r = {"num_hidden_layers": 10, "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 64}
    assert memory.kv_cache_bytes_per_token_per_rank(r, "tensorrt-llm", 3) == 10 * 3 * 128 * 2
    assert memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 16) == 10 * 1 * 128 * 2


def test_transformers_holds_all_kv_heads_when_not_sharded():
    r = {"num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128}
    assert memory.kv_cache_bytes_per_token_per_rank(r, "transformers-cb-cache", 8) == 2 * 4 * 256 * 2
    assert memory.kv_cache_bytes_per_token_per_rank(r, "transformers-cb-cache", 4) == 2 * 1 * 256 * 2


@pytest.mark.parametrize("dtype,factor", (("bf16", 1.0), ("fp16", 1.0), ("fp8", 0.5), ("fp32", 2.0)))
def test_kv_dtype_scales_bytes(rec, dtype, factor):
    r = rec("meta-llama/Llama-3.1-8B-Instruct")
    assert memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 1, kv_dtype=dtype) == 131_072 * factor


def test_sliding_window_layers_capped_at_window(rec):
    r = rec("google/gemma-2-9b-it")  # 21 global + 21 sliding (4096) layers, 8 KV heads x 256
    per_layer = 8 * 512 * 2
    assert memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 1) == 42 * per_layer
    assert memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 1, context_len=4096) == 42 * per_layer
    assert memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 1, context_len=8192) == (21 + 21 * 0.5) * per_layer
    gpt = rec("openai/gpt-oss-120b")  # 18 full + 18 sliding (128) layers
    b = memory.kv_cache_bytes_per_token_per_rank(gpt, "vllm", 1, context_len=131_072)
    assert b == pytest.approx((18 + 18 * 128 / 131_072) * 8 * 128 * 2)


def test_linear_attention_layers_hold_no_per_token_kv(rec):
    qn = rec("Qwen/Qwen3-Next-80B-A3B-Instruct")  # 12 attention + 36 GDN layers, 2 KV heads x 256
    assert memory.kv_cache_bytes_per_token_per_rank(qn, "vllm", 1) == 12 * 2 * 512 * 2


# -------------------------------------------------------------------- linear / SSM state ----
def test_gdn_state_per_sequence_matches_vllm_shapes(rec):
    qn = rec("Qwen/Qwen3-Next-80B-A3B-Instruct")  # nk 16, nv 32, dk = dv = 128, conv kernel 4
    for tp in (1, 2, 4):
        conv = 3 * (2 * 16 * 128 + 32 * 128) // tp
        temporal = 32 // tp * 128 * 128
        expected = 36 * (conv + temporal) * 2
        assert memory.linear_state_bytes_per_sequence_per_rank(qn, "vllm", tp) == expected


def test_mamba2_groups_replicated_when_tp_exceeds_them(rec):
    nh = rec("nvidia/Nemotron-H-56B-Base-8K")  # 54 Mamba2 layers, 256 heads x 64, 8 groups, state 256
    def expected(tp):
        groups = 8 if 8 % tp == 0 else max(8, tp)
        conv = 3 * (256 * 64 + 2 * groups * 256) // tp
        return 54 * (conv + 256 // tp * 64 * 256) * 2
    for tp in (1, 8, 16):
        assert memory.linear_state_bytes_per_sequence_per_rank(nh, "vllm", tp) == expected(tp)


def test_kda_recurrent_state_is_float32(rec):
    kl = rec("moonshotai/Kimi-Linear-48B-A3B-Instruct")  # 20 KDA layers, 32 heads x 128
    conv = 3 * (32 * 128 + 2 * 32 * 128) * 2
    rec_state = 32 * 128 * 128 * 4
    assert memory.linear_state_bytes_per_sequence_per_rank(kl, "vllm", 1) == 20 * (conv + rec_state)
    assert memory.linear_state_bytes_per_sequence_per_rank(rec("meta-llama/Llama-3.1-8B-Instruct"), "vllm", 1) == 0


# ----------------------------------------------------------------------------- weights ----
def test_llama_8b_weights_bf16(rec):
    r = rec("meta-llama/Llama-3.1-8B-Instruct")
    w1 = memory.weight_bytes_per_rank(r, "vllm", 1)
    assert w1 == r["params_total"] * 2
    assert w1 / GiB == pytest.approx(14.99, rel=0.01)  # vLLM 0.19 "Model loading took 14.99 GiB"
    w2 = memory.weight_bytes_per_rank(r, "vllm", 2)
    # vLLM reports 7.51 GiB at TP 2 (norms replicated)
    assert w2 / GiB == pytest.approx(7.51, rel=0.01)
    assert w2 > w1 / 2


def test_quantized_checkpoints_use_fewer_bytes(rec):
    ds = rec("deepseek-ai/DeepSeek-V3")  # block-FP8 checkpoint: ~1 B per parameter
    w = memory.weight_bytes_per_rank(ds, "vllm", 1)
    assert 1.0 * ds["params_total"] < w < 1.05 * ds["params_total"]
    assert memory.weight_bytes_per_rank(ds, "vllm", 1, weight_dtype="bf16") == pytest.approx(2 * ds["params_total"], rel=0.01)
    gpt = rec("openai/gpt-oss-120b")  # MXFP4 experts, 16-bit attention and embeddings
    w = memory.weight_bytes_per_rank(gpt, "vllm", 1)
    assert 0.53 * gpt["params_total"] < w < 0.6 * gpt["params_total"]
    nv = rec("nvidia/Qwen3-235B-A22B-NVFP4")
    assert memory.weight_bytes_per_rank(nv, "vllm", 1) < 0.6 * nv["params_total"]


def test_mla_latent_projections_replicated(rec):
    ds = rec("deepseek-ai/DeepSeek-V3")
    w1 = memory.weight_bytes_per_rank(ds, "vllm", 1, weight_dtype="bf16")
    w8 = memory.weight_bytes_per_rank(ds, "vllm", 8, weight_dtype="bf16")
    replicated = 61 * (7168 * 1536 + 1536 + 7168 * 576 + 512) * 2
    assert w8 > w1 / 8 + replicated * (1 - 1 / 8) * 0.99


def test_expert_parallel_and_pipeline_parallel_split_weights(rec):
    q = rec("Qwen/Qwen3-235B-A22B")
    tp8 = memory.weight_bytes_per_rank(q, "vllm", 8)
    ep8 = memory.weight_bytes_per_rank(q, "vllm", 8, ep=8)
    assert ep8 == pytest.approx(tp8, rel=0.01)  # 16 whole experts vs 1/8 of 128 experts: same bytes
    pp2 = memory.weight_bytes_per_rank(q, "vllm", 4, pp=2)
    assert pp2 < 0.6 * memory.weight_bytes_per_rank(q, "vllm", 4)
    odd = memory.weight_bytes_per_rank(rec("meta-llama/Llama-3.1-8B-Instruct"), "vllm", 1, pp=3)
    assert odd > 16_060_522_496 / 3  # the heaviest stage holds ceil(32 / 3) = 11 layers + embeddings


def test_latent_moe_projections_replicated_and_experts_over_tp_times_dp(rec):
    # Nemotron-3 Ultra: relu2 experts (2 matrices) at moe_latent_size, fc1/fc2_latent_proj whole on every rank
    u = rec("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    H, lat, E, I, n_moe = 8192, 2048, 512, 5120, 48
    experts = n_moe * E * 2 * lat * I * 2
    latent_proj = n_moe * 2 * H * lat * 2
    tp8 = memory.weight_bytes_per_rank(u, "vllm", 8)
    tp8dp2 = memory.weight_bytes_per_rank(u, "vllm", 8, dp=2)
    assert tp8 - tp8dp2 == pytest.approx(experts / 16, rel=1e-6)  # only the experts shrink with DP
    assert tp8 > latent_proj + experts / 8


def test_kimi_moe_pads_thin_expert_shards(rec):
    # KimiMoE (Kimi-Linear): moe_intermediate_size 1024 // tp < 256 -> experts built with 256 * tp
    k = rec("moonshotai/Kimi-Linear-48B-A3B-Instruct")
    experts = 26 * 256 * 3 * 2304 * 1024 * 2  # 26 MoE layers of 256 experts, bf16
    tp8 = memory.weight_bytes_per_rank(k, "vllm", 8)
    ep8 = memory.weight_bytes_per_rank(k, "vllm", 8, expert_parallel=True)  # EP: 32 whole experts, no padding
    assert tp8 - ep8 == pytest.approx(experts / 4 - experts / 8, rel=1e-9)  # TP 8: 2048 / 8 = 256 per rank
    assert memory.weight_bytes_per_rank(k, "vllm", 8, dp=2) == pytest.approx(tp8 - experts / 8, rel=1e-9)  # 128
    assert memory.weight_bytes_per_rank(k, "vllm", 4) - memory.weight_bytes_per_rank(k, "vllm", 4, expert_parallel=True) \
        == pytest.approx(0.0, abs=1.0)  # 1024 / 4 = 256: no padding needed


def test_moonvit_whole_when_vision_heads_do_not_divide_tp(rec):
    k = rec("moonshotai/Kimi-K2.5")  # 16 vision heads
    for tp in (2, 4, 8, 16):
        assert memory.weight_bytes_per_rank(k, "vllm", tp) < memory.weight_bytes_per_rank(k, "vllm", tp, vision_dp=True)
    assert memory.weight_bytes_per_rank(k, "vllm", 32) == memory.weight_bytes_per_rank(k, "vllm", 32, vision_dp=True)
    # SGLang is not modelled with that fallback: its tower stays split
    assert memory.weight_bytes_per_rank(k, "sglang", 32) < memory.weight_bytes_per_rank(k, "vllm", 32)


# ------------------------------------------------------------------------- GPU table ----
def test_gpu_table_has_required_gpus_in_driver_bytes():
    g = memory.load_gpus()
    ids = set(g["gpu"])
    assert {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "B200-180GB", "L40S-48GB", "MI300X-192GB"} <= ids
    assert int(g.set_index("gpu").loc["H100-80GB", "memory_bytes"]) == 85_520_809_984
    assert (g["memory_mib"].astype("int64") * 2**20 == g["memory_bytes"]).all()
    assert (g["memory_gib"] - g["memory_bytes"] / GiB).abs().max() < 0.001
    assert g["memory_source"].str.len().min() > 20
    g.loc[0, "memory_bytes"] = 1  # a copy: the cached table is untouched
    assert memory.load_gpus().loc[0, "memory_bytes"] != 1


# -------------------------------------------------------------------------- capacity ----
def test_vllm_llama_8b_h100_matches_vllm_019_within_5_percent(rec):
    r = rec("meta-llama/Llama-3.1-8B-Instruct")
    cap = memory.capacity(r, "vllm", "H100-80GB", 1, mem_fraction=0.95, context_len=8192)
    assert abs(cap["tokens_per_gpu"] / 476_016 - 1) < 0.05
    assert cap["weight_bytes_per_gpu"] / GiB == pytest.approx(14.99, rel=0.01)
    assert cap["activation_bytes_per_gpu"] / GiB == pytest.approx(1.89, rel=0.10)
    assert cap["kv_budget_bytes_per_gpu"] / GiB == pytest.approx(58.11, rel=0.05)
    assert cap["tokens_per_gpu"] % 16 == 0  # whole vLLM blocks
    assert cap["concurrent_sequences"] == cap["kv_budget_bytes_per_gpu"] // (8192 * 131_072)
    assert cap["fits"] is True
    fp8 = memory.capacity(r, "vllm", "H100-80GB", 1, mem_fraction=0.95, context_len=8192, kv_dtype="fp8")
    assert abs(fp8["tokens_per_gpu"] / 952_032 - 1) < 0.05


def test_capacity_budget_rules(rec):
    r = rec("meta-llama/Llama-3.1-8B-Instruct")
    M = 85_520_809_984
    v = memory.capacity(r, "vllm", "H100-80GB", 1, context_len=8192)
    assert v["fraction"] == 0.9
    assert v["kv_budget_bytes_per_gpu"] == pytest.approx(0.9 * M - v["weight_bytes_per_gpu"] - v["reserve_bytes_per_gpu"])
    s = memory.capacity(r, "sglang", "H100-80GB", 1, context_len=8192)
    assert s["fraction"] == memory.sglang_default_mem_fraction_static(M, 1) == 0.835
    # SGLang sizes against the memory free before the weights load (pre_model_load_memory), minus its load extras
    pre = M - memory.SGLANG_STARTUP_BYTES["tp1"]
    assert s["kv_budget_bytes_per_gpu"] == pytest.approx(0.835 * pre - s["weight_bytes_per_gpu"] - memory.SGLANG_LOAD_EXTRA_BYTES)
    assert v["cuda_graph_bytes_per_gpu"] > 0  # vLLM >= 0.21 charges the CUDA-graph estimate
    assert v["reserve_bytes_per_gpu"] == pytest.approx(v["activation_bytes_per_gpu"] + v["non_torch_bytes_per_gpu"]
                                                       + v["cuda_graph_bytes_per_gpu"])
    old = memory.capacity(r, "vllm", "H100-80GB", 1, context_len=8192, engine_version="0.19.0")
    assert old["kv_budget_bytes_per_gpu"] == pytest.approx(v["kv_budget_bytes_per_gpu"] + v["cuda_graph_bytes_per_gpu"])
    t = memory.capacity(r, "tensorrt-llm", "H100-80GB", 1, context_len=8192)
    free = M - t["weight_bytes_per_gpu"] - t["reserve_bytes_per_gpu"]
    assert t["kv_budget_bytes_per_gpu"] == pytest.approx(0.9 * free)
    assert t["tokens_per_gpu"] % 32 == 0
    for cap in (v, s, t):
        assert cap["budget_rule"]
        assert cap["weight_bytes_per_gpu"] + cap["kv_budget_bytes_per_gpu"] <= M


def test_capacity_fits_and_tp(rec):
    ds = rec("deepseek-ai/DeepSeek-V3")
    assert memory.capacity(ds, "vllm", "H100-80GB", 8, context_len=4096)["fits"] is False
    assert memory.capacity(ds, "vllm", "H200-141GB", 8, context_len=4096)["fits"] is True
    assert memory.capacity(ds, "vllm", "H100-80GB", 16, context_len=4096)["fits"] is True
    r = rec("meta-llama/Llama-3.1-70B-Instruct")
    caps = [memory.capacity(r, "vllm", "H100-80GB", tp, context_len=8192) for tp in (1, 2, 4, 8)]
    # TP 2: 65.7 GiB of weights per GPU; after vLLM 0.33's activation, non-torch and CUDA-graph reserve no
    # 8192-token sequence fits at utilization 0.9 (it did before graphs were charged, vLLM < 0.21)
    assert [c["fits"] for c in caps] == [False, False, True, True]
    assert memory.capacity(r, "vllm", "H100-80GB", 2, context_len=8192, engine_version="0.19.0")["fits"] is True
    assert caps[2]["tokens_per_gpu"] < caps[3]["tokens_per_gpu"]


def test_capacity_hybrid_counts_state_per_sequence(rec):
    nh = rec("nvidia/Nemotron-H-56B-Base-8K")
    cap = memory.capacity(nh, "vllm", "H200-141GB", 2, context_len=8192)
    per_seq = cap["kv_bytes_per_token_per_rank"] * 8192 + cap["linear_state_bytes_per_sequence_per_rank"]
    assert cap["linear_state_bytes_per_sequence_per_rank"] > 0
    # vLLM's hybrid manager: 10 attention + 54 Mamba layers -> group size 10, 1 attention + 6 Mamba groups; each
    # request takes cdiv(8192, block) attention blocks + one block per Mamba group, all of one page size
    blocks = cap["kv_blocks_per_gpu"]
    assert cap["kv_cache_groups"] == 7
    assert cap["concurrent_sequences"] <= math.floor(cap["kv_budget_bytes_per_gpu"] / per_seq)
    kv_layer, state_layer = cap["kv_bytes_per_token_per_rank"] / 10, cap["linear_state_bytes_per_sequence_per_rank"] / 54
    blk = 16 * math.ceil(state_layer / (16 * kv_layer))  # attention block grown until its page holds a Mamba state
    assert blocks == math.floor(cap["kv_budget_bytes_per_gpu"] / (10 * blk * kv_layer))
    assert cap["concurrent_sequences"] == math.floor(blocks / (math.ceil(8192 / blk) + 6))


def test_errors_are_clear(rec):
    r = rec("meta-llama/Llama-3.1-8B-Instruct")
    with pytest.raises(ValueError, match="unknown framework"):
        memory.kv_cache_bytes_per_token_per_rank(r, "tgi", 1)
    with pytest.raises(ValueError, match="kv_dtype"):
        memory.kv_cache_bytes_per_token_per_rank(r, "vllm", 1, kv_dtype="int3")
    with pytest.raises(ValueError, match="unknown GPU"):
        memory.capacity(r, "vllm", "RTX-9090", 1)
    with pytest.raises(ValueError, match="tp must be"):
        memory.weight_bytes_per_rank(r, "vllm", 0)
    assert math.isnan(memory.kv_cache_bytes_per_token_per_rank({"num_attention_heads": 8}, "vllm", 1))


# ---------------------------------------------------------------------- vectorized grid ----
def test_memory_grid_matches_scalar_functions(catalog, rec):
    grid = memory.memory_grid(catalog, gpu="H100-80GB", context_len=8192)
    assert len(grid) == len(catalog) * len(schema.DEFAULT_TP_SIZES) * len(schema.FRAMEWORKS)
    assert grid[["model_id", "framework", "tp"]].duplicated().sum() == 0
    sample = ["meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-Next-80B-A3B-Instruct",
              "google/gemma-2-9b-it", "openai/gpt-oss-120b"]
    for mid in sample:
        for fw in schema.FRAMEWORKS:
            for tp in (1, 4, 8):
                row = grid[(grid.model_id == mid) & (grid.framework == fw) & (grid.tp == tp)].iloc[0]
                cap = memory.capacity(rec(mid), fw, "H100-80GB", tp, context_len=8192)
                for k in ("kv_bytes_per_token_per_rank", "weight_bytes_per_gpu", "kv_budget_bytes_per_gpu"):
                    assert row[k] == pytest.approx(cap[k], nan_ok=True), (mid, fw, tp, k)
                assert row["tokens_per_gpu"] == cap["tokens_per_gpu"]
                assert bool(row["fits"]) == cap["fits"]


def test_memory_grid_every_catalog_model_has_numbers(catalog):
    grid = memory.memory_grid(catalog, tp_sizes=(1, 8), frameworks=("vllm",), context_len=4096)
    ok = grid[grid.model_id.isin(catalog.loc[catalog.status == "ok", "model_id"])]
    assert ok["kv_bytes_per_token_per_rank"].gt(0).all()
    assert ok["weight_bytes_per_gpu"].gt(0).all()


# ------------------------------------------------------------------------ properties ----
@st.composite
def gqa_records(draw):
    kv = draw(st.sampled_from([1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64]))
    group = draw(st.integers(1, 8))
    return {
        "num_hidden_layers": draw(st.integers(1, 128)), "num_attention_heads": kv * group,
        "num_key_value_heads": kv, "head_dim": draw(st.sampled_from([64, 80, 96, 128, 256])),
        "hidden_size": draw(st.sampled_from([1024, 4096, 8192])), "vocab_size": draw(st.integers(1000, 260_000)),
        "intermediate_size": draw(st.integers(1024, 30_000)), "is_mla": False, "is_moe": False,
    }


@settings(max_examples=300, deadline=None)
@given(r=gqa_records(), tp=st.sampled_from(schema.DEFAULT_TP_SIZES), fw=st.sampled_from(schema.FRAMEWORKS),
       dtype=st.sampled_from(["bf16", "fp8"]))
def test_property_per_rank_kv_times_tp_covers_unreplicated_total(r, tp, fw, dtype):
    """On every layout whose KV heads split or replicate evenly (the layouts the engines accept), the
    per-rank KV cache times TP covers the unreplicated total. Where neither divides the other the engines
    refuse the layout and the pool formula is the engine's own floor (SGLang ``max(1, kv // tp)``,
    model_config.py:1711), so only ``per_rank <= total`` is asserted there."""
    total = memory.kv_cache_bytes_per_token_per_rank(r, fw, 1, kv_dtype=dtype)
    per_rank = memory.kv_cache_bytes_per_token_per_rank(r, fw, tp, kv_dtype=dtype)
    kv = r["num_key_value_heads"]
    if kv % tp == 0 or tp % kv == 0:
        assert per_rank * tp >= total
    assert per_rank <= total
    if r["num_key_value_heads"] % tp == 0:
        assert per_rank * tp == total


@settings(max_examples=200, deadline=None)
@given(r=gqa_records(), tp=st.sampled_from(schema.DEFAULT_TP_SIZES), fw=st.sampled_from(schema.FRAMEWORKS))
def test_property_weights_per_rank_times_tp_covers_total(r, tp, fw):
    total = memory.weight_bytes_per_rank(r, fw, 1)
    per_rank = memory.weight_bytes_per_rank(r, fw, tp)
    kv = r["num_key_value_heads"]
    if kv % tp == 0 or tp % kv == 0:  # layouts the engines accept (elsewhere the engine's own floor applies)
        assert per_rank * tp >= total * 0.999
    assert per_rank <= total


def test_vllm_gemma4_per_layer_embeddings_match_a_measured_build(rec):
    """Gemma-4 per-layer input embeddings (PLE): no catalog checkpoint has them (the 26B / 31B set
    ``hidden_size_per_layer_input`` to 0), so the rule is checked on google/gemma-4-31B-it's config with
    ``hidden_size_per_layer_input=256``, ``vocab_size_per_layer_input=262144`` and 12 layers (the first 12
    ``layer_types``), built by vLLM 0.33.0 at TP 4 (``python -m conformance params CONFIG --tp 4``):
    5,273,450,080 B on rank 0, of which ``embed_tokens_per_layer`` 402,653,184 B (vocab-parallel),
    ``per_layer_input_gate`` / ``per_layer_projection`` 33,030,144 B each (replicated) and
    ``per_layer_model_projection`` 8,257,536 B (column-parallel)."""
    from dashboard.catalog import normalize_config

    base = rec("google/gemma-4-31B-it")
    cfg = {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "tie_word_embeddings": True}
    text = {"model_type": "gemma4_text", "hidden_size": 5376, "intermediate_size": 21504, "num_attention_heads": 32,
            "num_key_value_heads": 16, "num_global_key_value_heads": 4, "head_dim": 256, "global_head_dim": 512,
            "hidden_activation": "gelu_pytorch_tanh", "num_hidden_layers": 12, "vocab_size": 262144,
            "sliding_window": 1024, "max_position_embeddings": 262144, "enable_moe_block": False,
            "attention_k_eq_v": True, "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262144,
            "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 2, "dtype": "bfloat16"}
    vision = {"model_type": "gemma4_vision", "hidden_size": 1152, "intermediate_size": 4304, "num_attention_heads": 16,
              "num_hidden_layers": 27, "patch_size": 16, "position_embedding_size": 10240}
    r = normalize_config({**cfg, "text_config": text, "vision_config": vision}, "x/gemma4-ple", fetched_at="x")
    assert r["status"] == "ok" and (r["hidden_size_per_layer_input"], r["vocab_size_per_layer_input"]) == (256, 262144)
    assert r["params_vision"] == base.params_vision  # the same tower as the 31B
    est = memory.weight_bytes_per_rank(r, "vllm", 4)
    assert est == pytest.approx(5_273_450_080, rel=0.001)


def test_deepseek_v4_block_fp8_shared_expert_is_padded_to_whole_blocks_per_rank():
    """vLLM 0.33.0 DeepseekV4MLP (vllm/models/deepseek_v4/nvidia/model.py:145-151): the block-FP8 shared
    expert is built ``cdiv(I // 128, tp) * 128 * tp`` wide, so it stops shrinking once TP exceeds its
    block count (DeepSeek-V4-Flash: I = 2048 = 16 blocks; Pro: I = 3072 = 24 blocks)."""
    import numpy as np

    from dashboard.catalog import load_catalog

    cat = load_catalog().set_index("model_id", drop=False)
    t = np.array([[1.0, 8.0, 16.0, 32.0, 64.0]])
    flash = memory.shared_mlp_padding(memory.model_columns(cat.loc[["deepseek-ai/DeepSeek-V4-Flash"]]), "vllm", t)
    assert flash[0].tolist() == [1.0, 1.0, 1.0, 2.0, 4.0]
    pro = memory.shared_mlp_padding(memory.model_columns(cat.loc[["deepseek-ai/DeepSeek-V4-Pro"]]), "vllm", t)
    assert pro[0].tolist() == [1.0, 1.0, 4096 / 3072, 4096 / 3072, 8192 / 3072]
    # other frameworks, and the compressed-tensors NVFP4 shared expert (no weight_block_size), are not padded
    assert memory.shared_mlp_padding(memory.model_columns(cat.loc[["deepseek-ai/DeepSeek-V4-Flash"]]), "sglang", t)[0].tolist() == [1.0] * 5
    rh = memory.shared_mlp_padding(memory.model_columns(cat.loc[["RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8"]]), "vllm", t)
    assert rh[0].tolist() == [1.0] * 5


def test_gpt_bigcode_dense_mlp_whole_on_every_vllm_rank() -> None:
    """vLLM 0.33.0 serves GPTBigCode with its Transformers backend, which keeps the (non-gated, un-fused)
    MLP replicated: more TP shrinks attention and the vocabulary only. Other frameworks shard it."""
    from dashboard.catalog import load_catalog

    cat = load_catalog().set_index("model_id", drop=False)
    r = cat.loc["TheBloke/WizardCoder-15B-1.0-GPTQ"]
    assert "gpt_bigcode" in memory.REPLICATED_DENSE_MLP_MODEL_TYPES
    v4, v16 = (memory.weight_bytes_per_rank(r, "vllm", t) for t in (4, 16))
    s4, s16 = (memory.weight_bytes_per_rank(r, "sglang", t) for t in (4, 16))
    # 40 layers x 2 MLP matrices of 6144 x 24576 at 4-bit (+ group-128 scales): ~6 GB stay on each vLLM rank
    mlp = 40 * 2 * 6144 * 24576 * (0.5 + 2.5 / 128)
    assert v16 > mlp > s16
    assert v4 - v16 < s4 - s16


def test_minimax_m3_index_heads_replicate_with_the_kv_heads() -> None:
    """MiniMax-M3's index_q heads (= KV heads, 4) shard like the KV heads: per-rank bytes of the index
    branch stop shrinking above TP 4 (layers/linear.py:1365-1440)."""
    from dashboard.catalog import load_catalog

    r = load_catalog().set_index("model_id", drop=False).loc["nvidia/MiniMax-M3-NVFP4"].copy()
    r["params_total"] = np.nan  # shapes only: no reconciliation with the parameter estimate
    no_idx = r.copy()
    no_idx["num_indexer_layers"] = 0
    d = {t: memory.weight_bytes_per_rank(r, "vllm", t) - memory.weight_bytes_per_rank(no_idx, "vllm", t)
         for t in (1, 2, 4, 8, 16)}
    assert d[1] > d[2] > d[4] > 0
    assert d[8] == pytest.approx(d[4], rel=0.05) and d[16] == pytest.approx(d[4], rel=0.05)
