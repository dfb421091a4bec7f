"""Context-length limits (dashboard.context, ported from vLLM 0.33.0 / SGLang 0.5.23), their catalog
columns, the planner's ``context`` refusal and multi-node TP placement, and ``tp-planner check``."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from dashboard import catalog, context, planner
from dashboard import check as chk
from tests.conftest import SHARED

HUB = SHARED / "hub-configs"


def _raw(mid: str) -> dict:
    return json.loads((HUB / f"{mid.replace('/', '--')}.json").read_text())


def _rec(mid: str) -> dict:
    return catalog.normalize_config(_raw(mid), mid)


def _lim(rec):
    return (rec["max_model_len_vllm"], rec["max_model_len_key"], rec["max_model_len_vllm_source"],
            rec["context_length_sglang"])


# ---------------------------------------------------------------------------------- key families


def test_gpt2_n_positions_through_attribute_map():
    # transformers' GPT2Config maps max_position_embeddings -> n_positions: vLLM meets it first, as an int
    assert _lim(_rec("openai-community/gpt2")) == (
        1024, "max_position_embeddings", "max_position_embeddings=1024 or model_max_length=None", 1024)


def test_phi3_mini_4k():
    # RoPE parameters present (rope_theta): vLLM multiplies by 1.0, so it prints a float
    assert _lim(_rec("microsoft/Phi-3-mini-4k-instruct")) == (
        4096.0, "max_position_embeddings", "max_position_embeddings=4096.0 or model_max_length=None", 4096)


def test_llama31_llama3_rope_has_no_factor():
    r = _rec("meta-llama/Llama-3.1-8B-Instruct")
    assert _raw("meta-llama/Llama-3.1-8B-Instruct")["rope_scaling"]["factor"] == 8.0
    assert _lim(r) == (131072.0, "max_position_embeddings",
                       "max_position_embeddings=131072.0 or model_max_length=None", 131072)


def test_falcon7b_no_key():
    # RefinedWebModel -> vLLM's RWConfig has no length key: vLLM takes any --max-model-len; SGLang 2048
    r = _rec("tiiuae/falcon-7b")
    assert _lim(r) == (None, None, None, 2048)
    assert "vLLM accepts any --max-model-len unchecked" in r["parse_notes"]


def test_gemma3_skips_the_factor_in_both():
    # medgemma: rope_scaling linear factor 8; vLLM skips gemma3, SGLang reads transformers' nested rope params
    raw = _raw("google/medgemma-27b-it")
    assert raw["text_config"]["rope_scaling"]["factor"] == 8.0
    assert _lim(_rec("google/medgemma-27b-it"))[0::3] == (131072, 131072)


def _llama(**kw):
    d = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
         "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336,
         "vocab_size": 32000, "max_position_embeddings": 4096, "rope_theta": 10000.0}
    d.update(kw)
    return d


@pytest.mark.parametrize("rope,vllm,sglang", [
    ({"type": "linear", "factor": 4.0}, 16384.0, 16384),
    ({"rope_type": "dynamic", "factor": 2.0}, 8192.0, 8192),
    # yarn: vLLM does not apply the factor, SGLang sees original_max_position_embeddings (transformers adds it)
    ({"rope_type": "yarn", "factor": 4.0}, 4096.0, 4096),
    ({"rope_type": "longrope", "factor": 4.0, "short_factor": [1], "long_factor": [1]}, 4096.0, 4096),
    ({"type": "su", "short_factor": [1], "long_factor": [1]}, 4096.0, 4096),
    ({"rope_type": "deepseek_yarn", "factor": 40, "original_max_position_embeddings": 4096}, 4096.0, 4096),
])
def test_rope_factor(rope, vllm, sglang):
    r = catalog.normalize_config(_llama(rope_scaling=rope), "t/rope")
    assert (r["max_model_len_vllm"], r["context_length_sglang"]) == (vllm, sglang)
    assert r["max_model_len_vllm_source"] == f"max_position_embeddings={vllm} or model_max_length=None"


def test_int_factor_keeps_vllm_int_arithmetic():
    # no rope_theta, an int factor: 4096 * 4 stays an int in vLLM's f-string
    cfg = _llama(rope_scaling={"type": "linear", "factor": 4})
    del cfg["rope_theta"]
    assert catalog.normalize_config(cfg, "t/int")["max_model_len_vllm_source"] == \
        "max_position_embeddings=16384 or model_max_length=None"


def test_smallest_key_and_model_max_length_override():
    r = catalog.normalize_config(_llama(seq_length=2048), "t/two")
    assert (r["max_model_len_vllm"], r["max_model_len_key"], r["context_length_sglang"]) == (2048.0, "seq_length", 2048)
    # SGLang takes the first of its keys, not the smallest
    r = catalog.normalize_config(_llama(max_position_embeddings=1024, max_seq_len=8192), "t/first")
    assert (r["max_model_len_vllm"], r["context_length_sglang"]) == (1024.0, 8192)
    # Command-R: model_max_length overrides the smaller max_position_embeddings in vLLM
    r = catalog.normalize_config(_llama(max_position_embeddings=8192, model_max_length=131072), "t/cohere")
    assert (r["max_model_len_vllm"], r["max_model_len_key"], r["context_length_sglang"]) == \
        (131072.0, "model_max_length", 131072)
    assert r["max_model_len_vllm_source"] == "model_max_length=131072.0 or model_max_length=131072"


@pytest.mark.parametrize("kw", [
    {"max_position_embeddings": "4096"}, {"max_position_embeddings": -5}, {"max_position_embeddings": True},
    {"max_position_embeddings": float("nan")}, {"max_position_embeddings": 1 << 60},
    {"max_position_embeddings": [4096]}, {"model_max_length": {"a": 1}},
])
def test_hostile_lengths_give_na_and_a_note(kw):
    r = catalog.normalize_config(_llama(**kw), "t/bad")
    assert r["status"] == "ok"
    assert r["max_model_len_vllm"] is None and "context limit unknown" in r["parse_notes"]


@pytest.mark.parametrize("rope", [{"type": "linear", "factor": "x"}, {"type": "linear", "factor": -1},
                                  {"type": "linear", "factor": float("inf")}, ["linear"], "linear", 7])
def test_hostile_rope(rope):
    r = catalog.normalize_config(_llama(rope_scaling=rope), "t/badrope")
    assert r["status"] == "ok"
    if isinstance(rope, dict):
        assert r["max_model_len_vllm"] is None and r["context_length_sglang"] is None
        assert "rope" in r["parse_notes"]


def test_catalog_file_has_the_columns():
    cat = pd.read_parquet(Path(__file__).resolve().parents[2] / "data" / "catalog.parquet")
    row = cat.set_index("model_id").loc["openai-community/gpt2"]
    assert row["max_model_len_vllm"] == 1024 and row["context_length_sglang"] == 1024
    assert row["max_model_len_key"] == "max_position_embeddings"
    assert str(cat["context_length_sglang"].dtype) == "Int64"
    assert math.isnan(cat.set_index("model_id").loc["tiiuae/falcon-7b", "max_model_len_vllm"])


# ---------------------------------------------------------------------------------- messages

VLLM_GPT2 = (
    "User-specified max_model_len (32768) is greater than the derived max_model_len "
    "(max_position_embeddings=1024 or model_max_length=None in model's config.json). To allow overriding this "
    "maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with "
    "extreme caution. If the model uses relative position encoding (RoPE), positions exceeding "
    "derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding "
    "derived_max_model_len will cause a CUDA array out-of-bounds error.")
SGLANG_GPT2 = (
    "Warning: User-specified context_length (32768) is greater than the derived context_length (1024). This "
    "may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from "
    "max_position_embeddings in the model's config. To allow overriding this maximum, set the env var "
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")


def test_messages_are_the_engines():
    r = _rec("openai-community/gpt2")
    assert context.context_message("vllm", 32768, r) == VLLM_GPT2
    assert context.context_message("sglang", 32768, r) == SGLANG_GPT2
    assert context.context_message("tensorrt-llm", 32768, r) == ""
    assert context.context_message("vllm", 1024, r) == "" and context.context_message("sglang", 1024, r) == ""
    assert context.context_refusal("vllm", 32768, r).endswith("(ValueError at vllm/config/model.py:2680, vLLM 0.33.0)")


def test_raise_sites_are_where_the_sources_say():
    for fw, root in (("vllm", Path("/work/src/vllm-0.33.0")), ("sglang", Path("/work/src/sglang-0.5.23"))):
        site = context.RAISE_SITES[fw][0]
        path, line = site.rsplit(":", 1)
        f = root / (path.removeprefix("python/"))
        if not f.exists():
            pytest.skip(f"{f} not unpacked here")
        lines = f.read_text().splitlines()
        assert lines[int(line) - 1].strip() == "raise ValueError("


# ---------------------------------------------------------------------------------- planner


def test_plan_refuses_context_first():
    df = planner.plan(_rec("openai-community/gpt2"), 1, "H100-80GB", context_len=32768)
    for fw, msg in (("vllm", VLLM_GPT2), ("sglang", SGLANG_GPT2)):
        sub = df[df["framework"] == fw]
        assert len(sub) and (sub["refusal_kind"] == "context").all()
        assert sub["refusal"].str.startswith(msg).all()
        assert not sub["starts"].any() and (sub["commands"].map(len) == 0).all()
    assert not (df.loc[df["framework"] == "tensorrt-llm", "refusal_kind"] == "context").any()
    ok = planner.plan(_rec("openai-community/gpt2"), 1, "H100-80GB", context_len=1024)
    assert not (ok["refusal_kind"] == "context").any() and ok["starts"].any()
    r = planner.refusals(df)
    assert set(r.loc[r["refusal_kind"] == "context", "framework"]) == {"vllm", "sglang"}


def test_plan_catalog_why_not_context():
    ids = ["openai-community/gpt2", "microsoft/Phi-3-mini-4k-instruct", "tiiuae/falcon-7b",
           "meta-llama/Llama-3.1-8B-Instruct"]
    cat = catalog.catalog_from_records([_rec(m) for m in ids])
    out = planner.plan_catalog(cat, 1, "H100-80GB", min_sequences=1, context_len=32768).set_index(
        ["model_id", "framework"])
    for m in ids[:2]:
        for fw in ("vllm", "sglang"):
            assert out.loc[(m, fw), "why_not"] == "context" and not out.loc[(m, fw), "serves"]
    assert out.loc[("tiiuae/falcon-7b", "sglang"), "why_not"] == "context"
    assert out.loc[("tiiuae/falcon-7b", "vllm"), "why_not"] != "context"  # vLLM does not check it
    assert out.loc[("meta-llama/Llama-3.1-8B-Instruct", "vllm"), "serves"]
    short = planner.plan_catalog(cat, 1, "H100-80GB", min_sequences=1, context_len=1024)
    assert not (short["why_not"] == "context").any()


# ---------------------------------------------------------------------------------- multi-node TP


def test_tp4_pp3_on_12_gpus_straddles_nodes():
    df = planner.plan(_rec("meta-llama/Llama-3.1-70B-Instruct"), 12, "H100-80GB", context_len=8192)
    sel = df[(df["tp"] == 4) & (df["pp"] == 3) & (df["dp"] == 1)]
    for fw in ("vllm", "sglang"):
        rows = sel[sel["framework"] == fw]
        assert len(rows) and (rows["refusal_kind"] == "cross_node_tp").all()
        assert rows["refusal"].str.contains("12 ranks over 2 nodes = 6 per node: a TP group of 4 would span nodes",
                                            regex=False).all()
    # TensorRT-LLM's mpirun fills node 0's 8 slots first: TP groups 0-3, 4-7, 8-11 stay in a node
    trt = sel[(sel["framework"] == "tensorrt-llm")]
    assert len(trt) and not (trt["refusal_kind"] == "cross_node_tp").any()
    allowed = planner.plan(_rec("meta-llama/Llama-3.1-70B-Instruct"), 12, "H100-80GB", context_len=8192,
                           cross_node_tp=True)
    a = allowed[(allowed["tp"] == 4) & (allowed["pp"] == 3) & (allowed["framework"] == "vllm")]
    assert not (a["refusal_kind"] == "cross_node_tp").any()


def test_tp8_pp2_on_16_gpus_starts():
    df = planner.plan(_rec("meta-llama/Llama-3.1-70B-Instruct"), 16, "H100-80GB", context_len=8192)
    sel = df[(df["tp"] == 8) & (df["pp"] == 2) & (df["attn_dp"] == 1)]
    assert set(sel.loc[sel["starts"], "framework"]) == {"vllm", "sglang", "tensorrt-llm"}


def test_uneven_split_message():
    msg = planner.cross_node_message(2, 5, 8, "vllm", True)
    assert "10 ranks over 2 nodes = 5 per node: a TP group of 2 would span nodes" in msg
    cross, uneven = planner.cross_node([2, 1, 4, 8], [5, 12, 4, 2], 10, 8,
                                        ["vllm", "vllm", "sglang", "tensorrt-llm"])
    assert cross.tolist() == [True, False, False, False] and uneven.tolist() == [True, False, False, False]
    msg = planner.cross_node_message(2, 5, 4, "sglang", True)
    assert "SGLang --nnodes" in msg and "10 ranks do not split evenly over 3 nodes" in msg


def test_plan_catalog_agrees_on_cross_node():
    cat = catalog.catalog_from_records([_rec("meta-llama/Llama-3.1-70B-Instruct")])
    out = planner.plan_catalog(cat, 12, "H100-80GB", min_sequences=1, context_len=8192, frameworks=["vllm"])
    df = planner.plan(_rec("meta-llama/Llama-3.1-70B-Instruct"), 12, "H100-80GB", context_len=8192,
                      frameworks=["vllm"])
    assert int(out["layouts_starting"].iloc[0]) == int(df["starts"].sum())
    assert out["best_layout"].iloc[0] != "TP 4 × PP 3"


# ---------------------------------------------------------------------------------- check


def _check(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = chk.main(list(argv) + ["--json"], stdin=io.BytesIO(b""), stdout=out, stderr=err)
    return rc, json.loads(out.getvalue())


def test_check_refuses_gpt2_at_32k():
    cfg = str(HUB / "openai-community--gpt2.json")
    rc, doc = _check(cfg, "--framework", "vllm", "--tp", "1", "--gpu", "H100-80GB", "--max-model-len", "32768")
    assert rc == 1 and doc["verdict"] == "refused"
    fe = doc["first_error"]
    assert fe["message"] == VLLM_GPT2 and fe["location"] == "vllm/config/model.py:2680" and fe["kind"] == "context"
    alt = doc["alternatives"]
    assert alt[0]["why"] == "model_context" and alt[0]["max_model_len"] == 1024
    assert "--max-model-len 1024" in alt[0]["command"]
    rc, doc = _check(cfg, "--framework", "sglang", "--tp", "1", "--max-model-len", "32768")
    assert rc == 1 and doc["first_error"]["message"] == SGLANG_GPT2
    assert "--context-length 1024" in doc["alternatives"][0]["command"]
    rc, _ = _check(cfg, "--framework", "vllm", "--tp", "1", "--gpu", "H100-80GB", "--max-model-len", "1024")
    assert rc == 0


def test_check_context_and_rules_both_fail():
    cfg = str(HUB / "microsoft--Phi-3-mini-4k-instruct.json")
    rc, doc = _check(cfg, "--framework", "sglang", "--tp", "3", "--max-model-len", "32768")
    assert rc == 1 and doc["first_error"]["kind"] == "context" and len(doc["failures"]) > 1
    assert doc["alternatives"] and all(a.get("max_model_len") == 4096 for a in doc["alternatives"])
    assert all("--context-length 4096" in a["command"] for a in doc["alternatives"])
