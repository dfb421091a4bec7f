"""Unit tests of each framework's sharding methods (:class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard import frameworks
from dashboard.frameworks import Layout

VLLM, SGL, TRT, MEG = (frameworks.get(n) for n in ("vllm", "sglang", "tensorrt-llm", "megatron-core"))
TFN, TFC = frameworks.get("transformers-native-tp"), frameworks.get("transformers-cb-cache")


def test_attention_tp_defaults_to_tp_and_is_vectorized():
    tp = np.array([1, 2, 8, 16])
    for fw in frameworks.all_frameworks():
        assert np.array_equal(fw.attention_tp(tp), tp)
    assert np.array_equal(VLLM.attention_tp(tp, 2, True), tp)  # DP-attention is not a vLLM concept


def test_sglang_attention_tp_is_per_model_file_and_release():
    tp, dp, on = np.array([8, 8, 8]), np.array([2, 2, 1]), np.array([True, True, False])
    arch = np.array(["LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3ForCausalLM"], dtype=object)
    assert SGL.attention_tp(tp, dp, on, arch=arch).tolist() == [8, 4, 8]  # llama.py:181 full TP
    assert SGL.attention_tp(tp, dp, on, arch=arch, release="0.5.4").tolist() == [4, 4, 8]  # from source
    assert SGL.attention_tp(tp, dp, on).tolist() == [4, 4, 8]  # no model file: the attention-TP group
    assert SGL.kv_pool_tp(tp, dp, on).tolist() == [4, 4, 8]  # pool_configurator.py:356


def test_sglang_kv_pool_vs_shard_llama_70b():
    # 8 KV heads, TP 8, attention-DP 2: shard 1 head per rank (llama.py:194), pool sized for 2
    t = SGL.attention_tp(8, 2, True, arch=np.array(["LlamaForCausalLM"], dtype=object))
    assert int(SGL.kv_heads_per_rank(8, t)[0]) == 1
    assert int(SGL.kv_pool_heads_per_rank(8, 8, 2, True)) == 2
    assert SGL.kv_cache_heads_per_rank(10.0, 4.0) == 2.0  # model_config.py:1711 floors
    assert VLLM.kv_cache_heads_per_rank(10.0, 4.0) == 3.0  # refused layout: what an even split needs


def test_trt_attention_dp_and_ceil():
    assert TRT.attention_tp(np.array([4, 4]), 4, np.array([True, False])).tolist() == [1, 4]
    assert TRT.kv_heads_per_rank(np.array([6, 8]), 4).tolist() == [2, 2]  # ceil(6 / 4)
    assert VLLM.kv_heads_per_rank(np.array([6, 2]), 4).tolist() == [1, 1]  # max(1, kv // tp)


def test_kv_replication_and_status():
    assert VLLM.kv_replicas(np.array([4, 8, 16]), 8).tolist() == [2, 1, 1]
    assert VLLM.kv_replicated(np.array([4, 8]), 8).tolist() == [True, False]
    assert not MEG.kv_replicated(np.array([4]), 8).any()  # Megatron replicates, but reports plain valid
    assert MEG.replicates_kv and not TFN.replicates_kv


def test_transformers_uneven_heads_are_not_split():
    assert TFN.q_heads_per_rank(np.array([32, 32]), np.array([4, 3])).tolist() == [8, 32]
    assert TFC.kv_heads_per_rank(np.array([4, 4]), np.array([4, 8])).tolist() == [1, 4]
    assert TFC.kv_replicas(np.array([4, 4]), np.array([4, 8])).tolist() == [1, 8]
    assert TFN.kv_cache_heads_per_rank(np.array([4.0, np.nan]), 8.0)[0] == 4.0


def test_mla_latent_or_per_head():
    mla = np.array([True])
    assert VLLM.kv_heads_per_rank(1, 8, heads=128, is_mla=mla).tolist() == [1]
    assert VLLM.kv_replicas(1, 8, heads=128, is_mla=mla).tolist() == [8]
    assert MEG.kv_heads_per_rank(1, 8, heads=128, is_mla=mla).tolist() == [16]
    assert MEG.kv_replicas(1, 8, heads=128, is_mla=mla).tolist() == [1]


def test_vision_split():
    assert [x.tolist() for x in SGL.vision_heads_per_rank(16, 6)] == [3, 0]  # padded to 18: rank 0 real
    assert [x.tolist() for x in VLLM.vision_heads_per_rank(16, 8)] == [2, 0]
    assert [x.tolist() for x in TRT.vision_heads_per_rank(16, 32)] == [16, 0]  # unsharded tower
    assert [x.tolist() for x in VLLM.vision_heads_per_rank(16, 8, vision_dp=True)] == [16, 0]
    arch = np.array(["KimiK3ForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration"], dtype=object)
    assert VLLM.vision_unsharded_when_uneven(arch).tolist() == [True, False]
    assert TRT.vision_unsharded_when_uneven(arch).tolist() == [True, True]


def test_linear_split():
    per, rep = VLLM.linear_heads_split(np.array([8, 16, 32]), 16)
    assert per.tolist() == [1, 1, 2] and rep.tolist() == [2, 1, 1]


def test_moe_tp_and_ep_size():
    tp = np.array([8, 8])
    assert VLLM.moe_tp(tp, 1, np.array([True, False])).tolist() == [1, 8]
    assert SGL.moe_tp(tp, np.array([4, 1])).tolist() == [2, 8]
    assert TRT.moe_tp(tp, np.array([8, 1])).tolist() == [1, 8]
    assert VLLM.ep_size(tp, 2, 1, np.array([True, False])).tolist() == [16, 1]
    assert SGL.ep_size(tp, 2, np.array([8, 1])).tolist() == [8, 1]


@pytest.mark.parametrize("name", frameworks.names())
def test_sizes_of_a_layout(name):
    fw = frameworks.get(name)
    s = fw.sizes(Layout(tp=8, dp=2, ep=4, dp_attention=True), arch="LlamaForCausalLM")
    assert set(s) == {"attn_tp", "kv_pool_tp", "moe_tp", "ep_size"}
    assert all(isinstance(v, int) and v >= 1 for v in s.values())


def test_sglang_sizes_of_a_layout():
    s = SGL.sizes(Layout(tp=8, dp=2, ep=4, dp_attention=True), arch="LlamaForCausalLM")
    assert (s["attn_tp"], s["kv_pool_tp"], s["moe_tp"], s["ep_size"]) == (8, 4, 2, 4)
