"""The catalog columns the platform rules read (issue 23): ``kv_cache_quant`` (the KV-cache quantization a
checkpoint declares, in the order vLLM reads the keys) and ``bidirectional_attention`` (Gemma 4's multimodal
prefix), and NVIDIA's FP8 exports inferred as ModelOpt checkpoints."""

from __future__ import annotations

import pytest

from dashboard.catalog import normalize_config


def _rec(q=None, **text):
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
           "num_hidden_layers": 2, "intermediate_size": 11008, "vocab_size": 32000, **text}
    if q is not None:
        cfg["quantization_config"] = q
    return normalize_config(cfg, "org/m")


@pytest.mark.parametrize("q, want", [
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_scheme": {"type": "float", "num_bits": 8,
                                                                             "dynamic": False}}, "float8"),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"type": "int", "num_bits": 8, "dynamic": True}},
     "int8-dynamic"),
    ({"quant_method": "modelopt", "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}, "fp8"),
    ({"quant_method": "modelopt", "kv_cache_quant_algo": "NVFP4"}, "nvfp4"),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": None}, None),
    ({"quant_method": "fp8"}, None),
])
def test_kv_cache_quant(q, want) -> None:
    assert _rec(q)["kv_cache_quant"] == want


@pytest.mark.parametrize("bad", [{"type": 7, "num_bits": 8}, {"type": "float", "num_bits": True},
                                 {"type": "float", "num_bits": 10**9}, ["fp8"]])
def test_an_unreadable_kv_cache_scheme_is_noted_not_fatal(bad) -> None:
    r = _rec({"quant_method": "compressed-tensors", "kv_cache_scheme": bad})
    assert r["kv_cache_quant"] is None
    assert "unreadable" in r["parse_notes"] or "ignored" in r["parse_notes"]


@pytest.mark.parametrize("v, want", [("vision", "vision"), ("all", "all"), (True, "true"), (False, "false"),
                                     (None, None)])
def test_bidirectional_attention(v, want) -> None:
    r = _rec(**({} if v is None else {"use_bidirectional_attention": v}))
    assert r["bidirectional_attention"] == want


def test_nvidia_fp8_export_is_modelopt_other_orgs_fp8() -> None:
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2,
           "intermediate_size": 11008, "vocab_size": 32000}
    nv = normalize_config(cfg, "nvidia/Llama-3.1-8B-Instruct-FP8")
    other = normalize_config(cfg, "someone/Llama-3.1-8B-Instruct-FP8")
    assert (nv["quant_method"], nv["quant_format"]) == ("modelopt", "fp8")
    assert "ModelOpt export" in nv["parse_notes"]
    assert other["quant_method"] == "fp8"


def test_shipped_catalog_has_the_columns(catalog) -> None:
    c = catalog.set_index("model_id")
    assert c.loc["nvidia/Gemma-4-31B-IT-NVFP4", "kv_cache_quant"] == "float8"
    assert c.loc["google/gemma-4-31B-it", "bidirectional_attention"] == "vision"
    assert c["kv_cache_quant"].notna().sum() >= 10
