"""Hostile and broken configs through the normalizer: no exception escapes, each gives a row with reasons.

The corpus is ``tests/hostile/*.json`` (raw file bytes, many deliberately not valid JSON) with the
expected status and a note fragment per file in ``tests/hostile/expected.json``; a few inputs too big
to keep in the repo (multi-MB strings, 100k-deep nesting) are generated here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard import schema
from dashboard.catalog import build_catalog, catalog_from_records, normalize_config

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
EXPECTED: dict[str, dict] = json.loads((HOSTILE / "expected.json").read_text())


def check_row(rec: dict) -> None:
    assert set(rec) == set(schema.COLUMN_NAMES)
    assert rec["status"] in schema.STATUSES
    assert isinstance(rec["parse_notes"], str)
    if rec["status"] != "ok":
        assert rec["status_reason"], "a non-ok row must say why"
        assert rec["status_reason"] in rec["parse_notes"]
    for name, dtype in schema.COLUMN_DTYPES.items():
        v = rec[name]
        if v is None:
            continue
        if dtype == "Int64":
            assert isinstance(v, int) and not isinstance(v, bool) and -(2**63) < v < 2**63, (name, v)
        elif dtype == "float64":
            assert isinstance(v, float) and math.isfinite(v), (name, v)
        elif dtype == "boolean":
            assert isinstance(v, bool), (name, v)
        else:
            assert isinstance(v, str) and len(v) <= 5000, (name, len(v))
    # one row converts to the schema without error
    catalog_from_records([rec])


def test_corpus_is_big_enough() -> None:
    files = sorted(HOSTILE.glob("*.json"))
    files = [f for f in files if f.name != "expected.json"]
    assert len(files) >= 40
    assert {f.name for f in files} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_file(name: str) -> None:
    want = EXPECTED[name]
    rec = normalize_config((HOSTILE / name).read_bytes(), f"hostile/{name}")
    check_row(rec)
    assert rec["status"] == want["status"], rec["parse_notes"]
    if want["note"]:
        assert want["note"] in rec["parse_notes"], rec["parse_notes"]
    if rec["status"] == "ok":
        assert rec["num_attention_heads"] is not None and rec["num_key_value_heads"] is not None
        assert rec["head_dim"] is not None or "head_dim" in rec["parse_notes"]


def test_hostile_folder_builds_a_catalog(tmp_path: Path) -> None:
    for name in EXPECTED:
        (tmp_path / f"hostile--{name}").write_bytes((HOSTILE / name).read_bytes())
    df = build_catalog(tmp_path)
    assert len(df) == len(EXPECTED)
    assert set(df["status"]) <= set(schema.STATUSES)
    assert (df.loc[df.status != "ok", "status_reason"].str.len() > 0).all()


BASE = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336}


def test_multi_megabyte_strings_are_capped() -> None:
    big = "A" * (8 << 20)
    cfg = dict(BASE, model_type=big, architectures=[big, big], torch_dtype=big,
               quantization_config={"quant_method": big, "format": big})
    rec = normalize_config(cfg, "org/huge-strings")
    check_row(rec)
    assert rec["status"] == "ok"
    assert len(rec["model_type"]) <= 200 and len(rec["architectures"]) <= 200
    assert "truncated" in rec["parse_notes"]
    rec2 = normalize_config(json.dumps(cfg), "org/huge-strings")
    check_row(rec2)


def test_deep_nesting_as_json_text_and_as_dict() -> None:
    deep_text = '{"text_config": ' * 100_000 + "{}" + "}" * 100_000
    rec = normalize_config(deep_text, "org/deep-text")
    check_row(rec)
    assert rec["status"] == "invalid_json"
    d: dict = {}
    cur = d
    for _ in range(50_000):
        cur["text_config"] = {}
        cur = cur["text_config"]
    rec2 = normalize_config(d, "org/deep-dict")
    check_row(rec2)
    assert rec2["status"] == "error"


def test_self_referencing_dict() -> None:
    d = dict(BASE)
    d["text_config"] = d  # not JSON, but a caller may hand us any object
    rec = normalize_config(d, "org/cycle")
    check_row(rec)


def test_huge_lists() -> None:
    cfg = dict(BASE, layer_types=["sliding_attention"] * 1_000_000, num_hidden_layers=1_000_000,
               cross_attention_layers=list(range(100_000)))
    rec = normalize_config(cfg, "org/huge-lists")
    check_row(rec)
    assert rec["num_sliding_window_layers"] is not None


@pytest.mark.parametrize("raw", [None, 42, 3.5, True, [1, 2], ("a",), object(), b"\xff\xfe\x00garbage", bytearray(b"{}"), "null"])
def test_non_object_inputs(raw: object) -> None:
    rec = normalize_config(raw, "org/not-an-object")
    check_row(rec)
    assert rec["status"] in ("invalid_json", "error")


def test_weird_model_ids() -> None:
    for mid in ("", "no-slash", "a/b/c", "<script>/x", 12345):
        rec = normalize_config(dict(BASE), mid)  # type: ignore[arg-type]
        check_row(rec)


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
)
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4), max_leaves=12)
FIELDS = ["num_attention_heads", "num_key_value_heads", "hidden_size", "num_hidden_layers", "head_dim",
          "intermediate_size", "vocab_size", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
          "layer_types", "sliding_window", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
          "linear_attn_config", "linear_num_value_heads", "quantization_config", "vision_config", "text_config",
          "tie_word_embeddings", "model_type", "architectures", "block_configs", "hybrid_override_pattern",
          "layers_block_type", "mlp_only_layers", "first_k_dense_replace", "moe_layer_freq", "n_head", "multi_query"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=12), st.booleans())
def test_fuzzed_fields_never_raise(overrides: dict, start_from_base: bool) -> None:
    cfg = dict(BASE) if start_from_base else {}
    cfg.update(overrides)
    check_row(normalize_config(cfg, "fuzz/model"))


def test_the_surrogate_scan_visits_a_self_holding_dict_once() -> None:
    """``unencodable_path`` walked a dict that holds itself a million times, each path longer than the last
    (the CI run was killed at 23 GB): each container is visited once and paths stay short."""
    import tracemalloc

    from dashboard.catalog.normalize import unencodable_path

    d = dict(BASE)
    d["text_config"] = d
    tracemalloc.start()
    assert unencodable_path(d) is None
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 5_000_000, peak  # bytes
    d["text_config"] = {"self": d, "name": ["ok", "\ud800"]}
    assert unencodable_path(d) == "text_config.name[1]"
