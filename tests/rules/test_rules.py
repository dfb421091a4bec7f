"""Rules engine: the issue-2 cases, every framework's rules, grid == check, property tests."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard import schema
from dashboard.rules import RULES, KINDS, check, grid, rules_frame, rules_markdown
from dashboard.rules.docs import DEFAULT_PATH


def rec(h=None, kv=None, **kw):
    r = {"model_id": kw.pop("model_id", "test/model"), "status": "ok"}
    if h is not None:
        r["num_attention_heads"] = h
        r["num_key_value_heads"] = kv if kv is not None else h
    r.update(kw)
    return r


def kinds(v, kind):
    return [f for f in v.failures if f.kind == kind]


# --- transformers CB cache: KV heads vs TP ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kv,tp", [(8, 6), (7, 4)])
def test_transformers_cb_cache_rejects_kv_not_divisible(kv, tp):
    # transformers 5.24 follows the model's TP plan: a Llama (k_proj/v_proj named in the plan) gets the check
    v = check(rec(kv * 2 if kv == 7 else 48, kv, model_type="llama"), "transformers-cb-cache", tp)
    hit = [f for f in v.failures if f.rule_id == "tf_cb.kv_cache"]
    assert hit and hit[0].message == f"Number of key value heads {kv} must be divisible by tensor parallel size {tp}."
    assert not v.valid


def test_transformers_cb_cache_accepts_divisible_and_tp1():
    assert check(rec(32, 8, model_type="llama"), "transformers-cb-cache", 8).valid
    assert check(rec(28, 7, model_type="llama"), "transformers-cb-cache", 1).valid


def test_sglang_24_heads_3_kv():
    m = rec(24, 3)
    v8 = check(m, "sglang", 8)  # no architecture: QKVParallelLinear's divide over the full TP
    assert not v8.valid and [f.rule_id for f in v8.failures] == ["sglang.kv_heads.qkv"]
    assert v8.failures[0].message == "8 is not divisible by 3"
    assert v8.failures[0].location == "sglang/srt/distributed/utils.py:70"
    v3 = check(m, "sglang", 3)
    assert v3.valid and v3.status == "valid" and v3.kv_heads_per_rank == 1 and v3.kv_replicas == 1
    v6 = check(m, "sglang", 6)
    assert v6.valid and v6.status == "valid_replicated" and v6.kv_replicas == 2 and v6.kv_heads_per_rank == 1
    # Llama's attention asserts before it builds QKVParallelLinear: a bare assert, no message
    v8 = check(dict(m, architectures="LlamaForCausalLM"), "sglang", 8)
    assert [f.message for f in v8.failures] == ["AssertionError (no message) at sglang/srt/models/llama.py:193"]
    # 0.5.21 (executed): the same divide, raised at 0.5.21's line; 0.5.22 (not run) reads as 0.5.21 from source
    v21 = check(m, "sglang", 8, version="0.5.21")
    assert [f.location for f in v21.failures] == ["sglang/srt/distributed/utils.py:65"] and v21.executed
    v22 = check(m, "sglang", 8, version="0.5.22")
    assert [f.rule_id for f in v22.failures] == ["sglang.kv_heads.qkv"] and not v22.executed
    assert v22.evidence == "source"
    # before 0.5.21 (read from source): the divide message for every model
    old = check(m, "sglang", 8, version="0.5.20")
    assert [f.rule_id for f in old.failures] == ["sglang.kv_heads"] and not old.executed


def test_sglang_30_heads():
    m = rec(30, 30)
    assert kinds(check(m, "sglang", 8), "attention_heads")
    for tp in (2, 3, 5, 6):
        assert check(m, "sglang", tp).valid, tp


def test_sglang_kda_32_heads():
    m = rec(32, 32, linear_attention_kind="kda", linear_num_value_heads=32, has_linear_attention=True,
            architectures="KimiLinearForCausalLM")
    v6 = check(m, "sglang", 6)
    assert [f.message for f in kinds(v6, "linear_attention_heads")] == [
        "KDA num_heads (32) must be divisible by shard tp_size (6)"
    ]
    assert check(m, "sglang", 4).valid
    # Kimi-Linear shards KDA on the global TP group: attention-DP does not help
    assert kinds(check(m, "sglang", 12, dp=4, dp_attention=True), "linear_attention_heads")


def test_sglang_cross_attention_message():
    # read from source before 0.5.21 only (the text is MOVA's, not an LLM's; audit section 1)
    m = rec(30, 30, num_cross_attention_layers=8)
    v = check(m, "sglang", 4, version="0.5.20")
    assert "num_heads (30) must be divisible by tp_size (4)." in [f.message for f in v.failures]
    assert not kinds(check(m, "sglang", 2, version="0.5.20"), "cross_attention_heads")
    assert not kinds(check(m, "sglang", 4, version="0.5.21"), "cross_attention_heads")
    assert not kinds(check(m, "sglang", 4), "cross_attention_heads")


def test_vllm_40_heads_tp3_exact_message():
    v = check(rec(40, 8), "vllm", 3)
    assert v.failures[0].message == "Total number of attention heads (40) must be divisible by tensor parallel size (3)."
    assert v.failures[0].source_url.startswith("https://github.com/vllm-project/vllm/blob/")


def test_vllm_kv_partition_and_replication():
    assert check(rec(32, 8), "vllm", 4).status == "valid"
    v = check(rec(32, 4), "vllm", 8)
    assert v.status == "valid_replicated" and v.kv_heads_per_rank == 1 and v.kv_replicas == 2
    assert [f.message for f in kinds(check(rec(28, 4), "vllm", 7), "kv_heads")] == ["7 is not divisible by 4"]
    assert [f.message for f in kinds(check(rec(40, 10), "vllm", 4), "kv_heads")] == ["10 is not divisible by 4"]


# --- attention-TP under DP-attention (SGLang, TensorRT-LLM) ---------------------------------------------------------------------------------

def test_sglang_dp_attention_uses_attention_tp():
    # attention-TP is per model file: Qwen3 shards attention over tp / attn_dp, Llama over the full TP
    m = rec(8, 8, architectures="Qwen3ForCausalLM")
    assert kinds(check(m, "sglang", 16), "attention_heads")
    v = check(m, "sglang", 16, dp=2, dp_attention=True)
    assert v.valid and v.attn_tp == 8 and v.q_heads_per_rank == 1
    llama = dict(m, architectures="LlamaForCausalLM")
    assert not check(llama, "sglang", 16, dp=2, dp_attention=True).valid
    bad = check(m, "sglang", 16, dp=3, dp_attention=True)
    assert bad.failures[0].message == "AssertionError (no message) at sglang/srt/arg_groups/parallel_hook.py:326"


def test_trtllm_attention_dp_and_ceil_kv():
    m = rec(40, 8)
    assert not check(m, "tensorrt-llm", 16).valid
    v = check(m, "tensorrt-llm", 16, dp_attention=True)
    assert v.valid and v.attn_tp == 1 and v.q_heads_per_rank == 40
    r = check(rec(32, 4), "tensorrt-llm", 8)
    assert r.valid and r.kv_heads_per_rank == 1 and r.status == "valid_replicated"


# --- TensorRT-LLM messages (read from source; verbatim where upstream has a message) ----------

def _catalog(model_id):
    from dashboard.catalog import load_catalog

    df = load_catalog()
    return df[df["model_id"] == model_id].iloc[0].to_dict()


def _first(v):
    f = v.failures[0]
    return f.rule_id, (f"{f.exc_type}: {f.message}" if f.exc_type else f.message), f.ours


def test_trtllm_mlp_message_is_upstream_text_with_gate_up_width():
    # GatedMLP builds gate_up_proj (2 x intermediate, column-parallel) first: Linear's own assert message
    v = check(_catalog("meta-llama/Llama-2-13b-hf"), "tensorrt-llm", 5)
    assert _first(v) == ("trtllm.mlp_intermediate",
                         "AssertionError: out_features 27648 must be divisible by tp_size 5", False)
    assert v.failures[0].evidence == "source"
    # a non-gated MLP (GPT-2: up_proj of intermediate_size) names intermediate_size itself
    g = check(_catalog("openai-community/gpt2"), "tensorrt-llm", 5)
    assert [f.message for f in kinds(g, "mlp_intermediate")] == ["out_features 3072 must be divisible by tp_size 5"]
    # 2I divisible, I not: the row-parallel down_proj asserts on in_features
    d = check(rec(8, 8, intermediate_size=18, mlp_gated=True), "tensorrt-llm", 4)
    assert [(f.rule_id, f.exc_type, f.message) for f in kinds(d, "mlp_intermediate")] == [
        ("trtllm.mlp_intermediate.down", "AssertionError", "in_features 18 must be divisible by tp_size 4")]


def test_trtllm_mapping_rejects_ep_not_dividing_tp_first():
    mix = _catalog("mistralai/Mixtral-8x7B-v0.1")
    v = check(mix, "tensorrt-llm", 8, ep=3)
    assert _first(v) == ("trtllm.moe_experts.mapping", "ValueError: tp_size must equal to moe_tp_size * moe_ep_size "
                         "* moe_cluster_size, but got 8 != 2 * 3 * 1", False)
    # ep > tp: moe_tp_size = tp // ep = 0
    assert _first(check(mix, "tensorrt-llm", 8, ep=16))[1].endswith("but got 8 != 0 * 16 * 1")
    # ep divides tp: the Mapping is fine (moe_tp = tp / ep); 8 experts over ep 2 split evenly
    assert check(mix, "tensorrt-llm", 8, ep=2).valid
    assert not any(f.rule_id == "trtllm.moe_experts.mapping" for f in check(mix, "tensorrt-llm", 6, ep=3).failures)
    # the Mapping is built for any model, before it: a dense model too
    assert _first(check(_catalog("meta-llama/Llama-2-13b-hf"), "tensorrt-llm", 4, ep=3))[0] == "trtllm.moe_experts.mapping"


def test_trtllm_bare_asserts_are_ours():
    by_id = {r.id: r for r in RULES if r.framework == "tensorrt-llm"}
    ours = {"trtllm.attention_heads", "trtllm.mla", "trtllm.moe_experts", "trtllm.moe_intermediate",
            "trtllm.kv_heads", "trtllm.kv_heads.replicate"}
    verbatim = {"trtllm.moe_experts.mapping", "trtllm.mlp_intermediate", "trtllm.mlp_intermediate.down"}
    assert set(by_id) == ours | verbatim
    for i in ours:
        assert by_id[i].ours and by_id[i].exc_type == "" and "ours" in by_id[i].note, i
    for i in verbatim:
        assert not by_id[i].ours and by_id[i].exc_type in ("AssertionError", "ValueError"), i
    assert all(r.evidence == "source" for r in by_id.values())
    # concrete catalog messages
    assert _first(check(_catalog("meta-llama/Llama-2-13b-hf"), "tensorrt-llm", 3)) == (
        "trtllm.attention_heads", "AssertionError (no message) from assert self.num_heads % (tp_size * cp_size) "
        "== 0: num_heads=40, tp_size=3, cp_size=1", True)
    assert _first(check(_catalog("deepseek-ai/DeepSeek-V3"), "tensorrt-llm", 3))[0] == "trtllm.mla"
    phi = _catalog("microsoft/phi-4")  # 40 heads, 10 KV heads
    assert _first(check(phi, "tensorrt-llm", 8)) == (
        "trtllm.kv_heads", "AssertionError (no message) from assert num_kv_heads % tensor_parallel_size == 0: "
        "num_kv_heads=10, tensor_parallel_size=8", True)
    q = check(_catalog("Qwen/Qwen3-30B-A3B"), "tensorrt-llm", 6)  # 4 KV heads, duplicated only when 4 | tp
    assert [f.message for f in kinds(q, "kv_heads")] == [
        "AssertionError (no message) from assert tensor_parallel_size % num_kv_heads == 0: "
        "tensor_parallel_size=6, num_kv_heads=4"]
    e = check(_catalog("Qwen/Qwen3-30B-A3B"), "tensorrt-llm", 4, ep=4)
    assert e.valid  # 128 experts over 4
    assert [f.message for f in kinds(check(_catalog("mistralai/Mixtral-8x7B-v0.1"), "tensorrt-llm", 16, ep=16),
                                     "moe_experts")] == [
        "AssertionError (no message) from assert self.num_experts % self.ep_size == 0: num_experts=8, ep_size=16"]


def test_transformers_native_tp_fails_at_run_time_with_warning():
    v = check(rec(32, 4, model_type="llama"), "transformers-native-tp", 8)  # 5.24: rules follow the plan
    assert not v.valid and kinds(v, "kv_heads")
    assert any("fails when the model is built/run" in w.message for w in v.warnings)
    assert check(rec(32, 4, model_type="llama"), "transformers-native-tp", 4).valid
    assert kinds(check(rec(6, 6, model_type="llama"), "transformers-native-tp", 4), "attention_heads")


def test_megatron_no_replication_and_even_pipeline():
    # before core_v0.16.0 (read from source): no KV replication
    v = check(rec(32, 4), "megatron-core", 8, version="0.15.0")
    assert [f.message for f in kinds(v, "kv_heads")] == [
        "num_query_groups (4) must be a multiple of tensor_model_parallel_size (8)."
    ]
    # since (executed in 0.16.1): query groups may be a divisor of TP
    assert not kinds(check(rec(32, 4), "megatron-core", 8), "kv_heads")
    assert [f.message for f in kinds(check(rec(32, 3), "megatron-core", 8), "kv_heads")] == [
        "num_query_groups (3) must be a multiple or divisor of tensor_model_parallel_size (8)."
    ]
    m = rec(32, 8, num_hidden_layers=30)
    assert [f.message for f in kinds(check(m, "megatron-core", 4, pp=4), "pipeline_layers")] == [
        "num_layers should be divisible by pipeline_model_parallel_size"
    ]
    vv = check(m, "vllm", 4, pp=4)
    assert vv.valid and any(w.kind == "pipeline_layers" for w in vv.warnings)  # vLLM splits unevenly


def test_mla_latent_replicated_and_heads_checked():
    ds = rec(128, 128, is_mla=True, kv_lora_rank=512, qk_rope_head_dim=64)
    v = check(ds, "vllm", 8)
    assert v.valid and v.kv_heads_per_rank == 1 and v.kv_replicas == 8 and v.status == "valid"
    assert kinds(check(ds, "tensorrt-llm", 3), "mla")
    assert not kinds(check(ds, "tensorrt-llm", 3), "attention_heads")


def test_vision_heads_vllm_rejects_unless_data_parallel_sglang_pads():
    m = rec(96, 8, has_vision=True, vision_num_heads=12)
    v = check(m, "vllm", 8)
    assert [f.message for f in kinds(v, "vision_heads")] == ["12 is not divisible by 8"]
    assert any("data-parallel vision encoder" in s for s in v.suggestions)
    assert check(m, "vllm", 8, vision_dp=True).valid
    s = check(dict(m, architectures="Glm4vMoeForConditionalGeneration"), "sglang", 8)  # GLM-4.xV pads
    assert s.valid and s.status == "valid_padded"
    qwen = check(dict(m, architectures="Qwen3VLForConditionalGeneration"), "sglang", 8)  # others divide
    assert [f.message for f in kinds(qwen, "vision_heads")] == ["12 is not divisible by 8"]


def test_linear_attention_gdn_and_mamba_groups():
    gdn = rec(16, 2, linear_attention_kind="gdn", linear_num_key_heads=16, linear_num_value_heads=32)
    assert check(gdn, "vllm", 2).valid
    assert [f.message for f in kinds(check(gdn, "sglang", 16, ep=1), "linear_attention_heads")] == []
    mamba = rec(32, 2, linear_attention_kind="mamba2", mamba_n_groups=8, linear_num_value_heads=128)
    assert kinds(check(mamba, "vllm", 16), "mamba_groups")
    assert not kinds(check(mamba, "vllm", 8), "mamba_groups")
    one = rec(32, 32, linear_attention_kind="mamba2", mamba_n_groups=1, linear_num_value_heads=128)
    assert not kinds(check(one, "vllm", 16), "mamba_groups")


def test_moe_experts_and_intermediate():
    moe = rec(64, 4, is_moe=True, num_experts=128, moe_intermediate_size=1536)
    v = check(moe, "vllm", 8, ep=3)
    assert v.valid and any(w.kind == "moe_experts" for w in v.warnings)  # vLLM spreads unevenly
    assert kinds(check(moe, "megatron-core", 4, ep=3), "moe_experts")
    odd = rec(32, 8, is_moe=True, num_experts=8, moe_intermediate_size=1000)
    assert kinds(check(odd, "vllm", 16), "moe_intermediate")
    assert not kinds(check(odd, "vllm", 16, ep=16), "moe_intermediate")


def test_sglang_moe_experts_rejects_uneven_ep():
    moe = rec(64, 4, is_moe=True, num_experts=128, moe_intermediate_size=1536)
    # the fused MoE layer's bare assert; model classes with expert-location metadata assert earlier
    assert [f.message for f in kinds(check(moe, "sglang", 3, ep=3), "moe_experts")] == [
        "AssertionError (no message) at sglang/srt/layers/moe/fused_moe_triton/layer.py:414"
    ]
    qwen = check(dict(moe, architectures="Qwen3MoeForCausalLM"), "sglang", 3, ep=3)
    assert qwen.failures[0].message == "AssertionError (no message) at sglang/srt/eplb/expert_location.py:256"
    assert [f.message for f in kinds(check(moe, "sglang", 3, ep=3, version="0.5.20"), "moe_experts")] == [
        "num_experts (128) must be divisible by ep_size (3)."
    ]


def test_dense_mlp_vocab_block_fp8_group_size():
    m = rec(32, 8, intermediate_size=19114, vocab_size=32064)
    # before 0.22 (read from source): the divide() message; since (executed): MergedColumnParallelLinear's
    # bare assert fires first, with no message
    assert [f.message for f in kinds(check(m, "vllm", 8, version="2024-04"), "mlp_intermediate")] == [
        "19114 is not divisible by 8"]
    assert [f.message for f in kinds(check(m, "vllm", 8), "mlp_intermediate")] == [
        "AssertionError (no message) at vllm/model_executor/layers/linear.py:731"]
    gpt2 = dict(m, architectures="GPT2LMHeadModel")  # one ColumnParallelLinear: the divide message
    assert [f.message for f in kinds(check(gpt2, "vllm", 8), "mlp_intermediate")] == ["19114 is not divisible by 8"]
    assert [f.message for f in kinds(check(m, "vllm", 2), "vocab")] == []
    assert check(rec(32, 8, vocab_size=32000), "megatron-core", 3).failures[0].kind == "attention_heads"
    fp8 = rec(32, 8, intermediate_size=12288, quant_method="fp8", weight_block_n=128, weight_block_k=128,
              head_dim=128)
    assert not kinds(check(fp8, "vllm", 8), "block_fp8")
    fp8b = dict(fp8, intermediate_size=18432)
    assert [f.message for f in kinds(check(fp8b, "sglang", 32), "block_fp8")] == [
        "Weight output_partition_size = 576 is not divisible by weight quantization block_n = 128."
    ]
    awq = rec(40, 8, head_dim=128, intermediate_size=13824, quant_method="awq", quant_group_size=128)
    assert kinds(check(awq, "vllm", 2), "group_size") == []  # 13824/2 = 54 x 128; 20 heads x 128
    assert [f.message for f in kinds(check(awq, "vllm", 8), "group_size")] == [  # 13824/8 = 1728 = 13.5 x 128
        "The input size is not aligned with the quantized weight shape. This can be caused by too large tensor "
        "parallel size."
    ]


def test_unknown_when_heads_missing_and_bad_input():
    v = check({"model_id": "x/broken", "status": "invalid_json"}, "vllm", 4)
    assert v.valid and v.status == "unknown" and v.q_heads_per_rank is None
    with pytest.raises(ValueError):
        check(rec(8, 8), "not-a-framework", 2)
    with pytest.raises(ValueError):
        check(rec(8, 8), "vllm", 0)
    with pytest.raises(TypeError):
        check(42, "vllm", 2)  # type: ignore[arg-type]


def test_suggestions_nearest_valid_tp_and_ep():
    v = check(rec(28, 4), "vllm", 8)
    assert "Nearest valid TP sizes: 4 and 28." in v.suggestions or "Nearest valid TP sizes: 4 and 14." in v.suggestions
    moe = rec(64, 4, is_moe=True, num_experts=128, moe_intermediate_size=1536, quant_method="fp8",
              weight_block_n=128, weight_block_k=128)
    v = check(moe, "vllm", 8, version="2025-05")  # before MoE block scales were refined (gcd >= 32)
    assert not v.valid and any("--enable-expert-parallel (EP size 8)" in s for s in v.suggestions)
    v = check(moe, "sglang", 8)
    assert not v.valid and any("expert parallelism (ep=8)" in s for s in v.suggestions)


@pytest.mark.parametrize("version,flags", [
    ("0.5.21", "--enable-dp-attention --dp-size 2"), ("0.4.2", "--enable-dp-attention --dp-size 2"),
    ("0.5.22", "--attn-dp-size 2"), ("0.5.23", "--attn-dp-size 2"), (None, "--attn-dp-size 2"),
])
def test_sglang_dp_attention_suggestion_spells_the_flags_of_the_release(version, flags):
    """--attn-dp-size from 0.5.22 on; --enable-dp-attention --dp-size before (issue #11)."""
    from dashboard.rules import sglang_dp_attention_flags

    assert sglang_dp_attention_flags(version, 2) == flags
    m = rec(12, 12, hidden_size=1536, vocab_size=32000, intermediate_size=11008, num_hidden_layers=4,
            architectures=["LlamaForCausalLM"], model_type="llama")
    v = check(m, "sglang", 8, version=version)
    dp_sugg = [x for x in v.suggestions if "attention-TP" in x]
    if dp_sugg:  # (the executed rules, from 0.5.21, refuse this model at 8 either way)
        assert dp_sugg == [f"Valid at tp=8 with {flags} (attention-TP 4)."]
    else:
        assert version in (None, "0.5.21", "0.5.22", "0.5.23")  # llama.py shards attention on the full TP
    other = "--attn-dp-size" if "enable" in flags else "--enable-dp-attention"
    assert not any(other in x for x in v.suggestions)


def test_version_handling():
    v = check(rec(32, 4, model_type="llama"), "transformers-native-tp", 8, version="2026-08")
    assert any(w.rule_id == "engine.version" for w in v.warnings)
    assert not check(rec(32, 4), "transformers-native-tp", 8, version="5.1.0").valid
    # before transformers had native TP, no native-TP rule applies
    assert check(rec(32, 4), "transformers-native-tp", 8, version="4.40.0").valid


# --- rule data and docs ---------------------------------------------------------------------------------

def test_rule_data_complete():
    # an id names one check; the same check may be described once per range of releases
    keys = [(r.id, r.versions) for r in RULES]
    assert len(keys) == len(set(keys))
    for r in RULES:
        assert r.framework in schema.FRAMEWORKS and r.kind in KINDS
        # pinned: a 40-hex commit, or a release tag (the transformers rules cite the v5.24.0 source that the
        # torchrun matrix ran against, with line anchors that are only right at that tag)
        assert re.match(r"https://github\.com/[^/]+/[^/]+/blob/([0-9a-f]{40}|(core_)?v\d+\.\d+\.\d+)/",
                        r.source_url), r.id
        assert r.condition and r.message
    assert {r.framework for r in RULES} == set(schema.FRAMEWORKS)
    assert set(rules_frame().columns) >= {"id", "framework", "kind", "versions", "condition", "message",
                                          "source_url", "verified_with"}


def test_docs_page_in_sync():
    assert DEFAULT_PATH.read_text(encoding="utf-8") == rules_markdown(), "run: python -m dashboard.rules.docs"
    text = rules_markdown()
    for r in RULES:
        assert f"`{r.id}`" in text and r.source_url in text
    assert "Checked against a real library run" in text


# --- grid -----------------------------------------------------------------------------------------------

GRID_COLS = ["model_id", "framework", "tp", "valid", "status", "rule_id", "message", "n_failures", "messages",
             "q_heads_per_rank", "kv_heads_per_rank", "kv_replicas"]


def test_grid_shape_and_columns():
    cat = pd.DataFrame([rec(32, 8, model_id="a/1"), rec(40, 10, model_id="b/2"), {"model_id": "c/3"}])
    g = grid(cat)
    assert list(g.columns) == GRID_COLS
    assert len(g) == 3 * len(schema.DEFAULT_TP_SIZES) * len(schema.FRAMEWORKS)
    assert not g.duplicated(["model_id", "framework", "tp"]).any()
    assert set(g["status"].astype(str)) <= set(schema.CELL_STATUSES)
    c3 = g[g["model_id"] == "c/3"]
    assert (c3["status"] == "unknown").all() and c3["q_heads_per_rank"].isna().all()


# --- property tests -------------------------------------------------------------------------------------

heads = st.integers(1, 160)
records = st.builds(
    lambda h, kvdiv, inter, vocab, moe, nexp, minter, fp8, bn, vis, lin, mla, layers: {
        "model_id": "p/q",
        "num_attention_heads": h,
        "num_key_value_heads": max(1, h // kvdiv),
        "head_dim": 128,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "num_hidden_layers": layers,
        "is_moe": moe,
        "num_experts": nexp if moe else None,
        "moe_intermediate_size": minter if moe else None,
        "num_dense_layers": 1 if moe else 0,
        "quant_method": "fp8" if fp8 else None,
        "weight_block_n": bn if fp8 else None,
        "weight_block_k": bn if fp8 else None,
        "has_vision": vis is not None,
        "vision_num_heads": vis,
        "linear_attention_kind": lin[0] if lin else None,
        "linear_num_key_heads": lin[1] if lin else None,
        "linear_num_value_heads": lin[2] if lin else None,
        "mamba_n_groups": lin[1] if lin and lin[0] == "mamba2" else None,
        "is_mla": mla,
    },
    heads, st.sampled_from([1, 2, 4, 8, 3, 5]), st.integers(64, 40000), st.integers(1000, 200000),
    st.booleans(), st.integers(2, 300), st.integers(64, 4096), st.booleans(), st.sampled_from([64, 128]),
    st.one_of(st.none(), st.integers(1, 40)),
    st.one_of(st.none(), st.tuples(st.sampled_from(["gdn", "kda", "mamba2"]), st.integers(1, 64),
                                   st.integers(1, 128))),
    st.booleans(), st.integers(1, 128),
)
tps = st.integers(1, 80)
fws = st.sampled_from(schema.FRAMEWORKS)
layouts = st.fixed_dictionaries({"pp": st.integers(1, 4), "dp": st.integers(1, 4), "ep": st.sampled_from([1, 2, 3, 8]),
                                 "dp_attention": st.booleans()})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records, fws, tps, layouts)
def test_property_valid_iff_no_failure_and_messages_filled(r, fw, tp, lay):
    v = check(r, fw, tp, **lay)
    assert v.valid == (len(v.failures) == 0)
    assert (v.status == "invalid") == (not v.valid)
    for hit in v.failures + v.warnings:
        assert "{" not in hit.message and "}" not in hit.message
        assert hit.severity in ("error", "warning")
    assert v.status in schema.CELL_STATUSES


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records, min_size=1, max_size=4), st.lists(tps, min_size=1, max_size=5, unique=True), layouts)
def test_property_grid_equals_check(recs, tp_list, lay):
    cat = pd.DataFrame([dict(r, model_id=f"m/{i}") for i, r in enumerate(recs)])
    g = grid(cat, tp_list, **lay)
    assert len(g) == len(recs) * len(tp_list) * len(schema.FRAMEWORKS)
    for row in g.itertuples(index=False):
        i = int(str(row.model_id).split("/")[1])
        v = check(recs[i] | {"model_id": row.model_id}, str(row.framework), int(row.tp), **lay)
        assert row.valid == v.valid
        assert str(row.status) == v.status
        assert row.n_failures == len(v.failures)
        assert str(row.rule_id) == (v.failures[0].rule_id if v.failures else "")
        assert str(row.message) == (v.failures[0].message if v.failures else "")
        assert str(row.messages) == "\n".join(f.message for f in v.failures)
        q = None if pd.isna(row.q_heads_per_rank) else int(row.q_heads_per_rank)
        assert q == v.q_heads_per_rank
        kvr = None if pd.isna(row.kv_heads_per_rank) else int(row.kv_heads_per_rank)
        assert kvr == v.kv_heads_per_rank
        rep = None if pd.isna(row.kv_replicas) else int(row.kv_replicas)
        assert rep == v.kv_replicas


def test_unknown_status_names_the_missing_fields():
    """A record without head counts is not silently "valid": status unknown and a warning naming the gaps."""
    v = check({"model_id": "x/partial", "hidden_size": 4096}, "vllm", 4)
    assert v.status == "unknown" and not v.failures
    (w,) = [w for w in v.warnings if w.rule_id == "engine.missing_fields"]
    assert "num_attention_heads" in w.message and "num_key_value_heads" in w.message
    full = check({"model_id": "x/full", "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                  "hidden_size": 4096}, "vllm", 4)
    assert not [w for w in full.warnings if w.rule_id == "engine.missing_fields"]


def test_sglang_attention_tp_kv_message_sits_on_interns2_mobius_only() -> None:
    """SGLang 0.5.23 raises "attention TP must be divisible by num_key_value_heads" in one model file,
    interns2_mobius.py:556 (no catalog model has it: evidence source); Llama-style files assert instead."""
    from dashboard import rules

    base = {"model_id": "x/y", "num_attention_heads": 48, "num_key_value_heads": 4, "head_dim": 128,
            "hidden_size": 6144, "num_hidden_layers": 4, "vocab_size": 1024, "intermediate_size": 2048,
            "status": "ok"}
    mob = dict(base, model_type="interns2_mobius", architectures="InternS2MobiusForConditionalGeneration")
    g = rules.grid(pd.DataFrame([mob]), tp_sizes=[6], frameworks=["sglang"], version="0.5.23").iloc[0]
    assert not g["valid"] and g["message"] == "attention TP must be divisible by num_key_value_heads"
    rule = next(r for r in rules.rules_at("sglang", "0.5.23") if r.id == g["rule_id"])
    assert rule.evidence == "source" and rule.sites["0.5.23"].endswith("models/interns2_mobius.py:556")
    llama = dict(base, model_type="llama", architectures="LlamaForCausalLM")
    g = rules.grid(pd.DataFrame([llama]), tp_sizes=[6], frameworks=["sglang"], version="0.5.23").iloc[0]
    assert not g["valid"] and g["message"] != "attention TP must be divisible by num_key_value_heads"


def test_record_memo_never_answers_for_a_changed_record():
    """to_ctx shares one record's per-model memo across layouts (the verdict and its suggestions); the
    memo is keyed by the record's contents, so the same dict or one-row frame changed in place is judged
    afresh, never from the memo of what it held before."""
    r = dict(rec(40, 8))
    assert check(r, "vllm", 4).status == "valid"
    r["num_key_value_heads"] = 10
    assert [f.message for f in kinds(check(r, "vllm", 4), "kv_heads")] == ["10 is not divisible by 4"]
    frame = pd.DataFrame([rec(40, 10)])
    assert check(frame.iloc[0], "vllm", 4).status == "invalid"
    frame.loc[0, "num_key_value_heads"] = 8
    assert check(frame.iloc[0], "vllm", 4).status == "valid"
    frame.loc[0, "num_key_value_heads"] = 10
    assert check(frame.iloc[0], "vllm", 4).status == "invalid"
