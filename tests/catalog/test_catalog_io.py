"""Catalog files (atomic write, merge, load) and the normalizer's alias / nesting rules on small configs."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import catalog, schema
from dashboard.catalog import (
    catalog_from_records,
    load_catalog,
    merge_catalog,
    normalize_config,
    write_catalog,
)

BASE = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336}


def rec(model_id: str, **over) -> dict:
    cfg = dict(BASE)
    cfg.update(over)
    return normalize_config(cfg, model_id, fetched_at="2026-11-29T00:00:00Z")


def small_catalog(ids: list[str], **over) -> pd.DataFrame:
    return catalog_from_records([rec(i, **over) for i in ids])


# --- atomic writes -------------------------------------------------------------------------------


def test_write_then_load_roundtrip(tmp_path: Path) -> None:
    df = small_catalog(["a/x", "b/y"])
    p = write_catalog(df, tmp_path / "sub" / "cat.parquet")
    back = load_catalog(p)
    pd.testing.assert_frame_equal(back, df)
    assert tuple(back.columns) == schema.COLUMN_NAMES


def test_write_failure_mid_write_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "cat.parquet"
    write_catalog(small_catalog(["a/old"]), p)
    before = p.read_bytes()

    def half_write(self, fh, *a, **k):  # writes garbage, then dies like a full disk or a kill would
        fh.write(b"PAR1 partial garbage")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", half_write)
    with pytest.raises(OSError):
        write_catalog(small_catalog(["a/new", "b/new"]), p)
    assert p.read_bytes() == before
    assert list(load_catalog(p)["model_id"]) == ["a/old"]
    assert [f.name for f in tmp_path.iterdir()] == ["cat.parquet"], "temp file left behind"


def test_write_failure_in_replace_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "cat.parquet"
    write_catalog(small_catalog(["a/old"]), p)
    before = p.read_bytes()

    def boom(src, dst):
        raise KeyboardInterrupt  # killed between the temp file and the rename

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        write_catalog(small_catalog(["a/new"]), p)
    assert p.read_bytes() == before
    assert [f.name for f in tmp_path.iterdir()] == ["cat.parquet"]


def test_write_conforms_extra_and_missing_columns(tmp_path: Path) -> None:
    df = small_catalog(["a/x"]).drop(columns=["likes"]).assign(extra_col=1)
    back = load_catalog(write_catalog(df, tmp_path / "c.parquet"))
    assert tuple(back.columns) == schema.COLUMN_NAMES
    assert back["likes"].isna().all()


# --- merge -------------------------------------------------------------------------------------------


def test_merge_new_wins_old_kept() -> None:
    old = small_catalog(["a/1", "a/2", "a/3"])
    new = catalog_from_records([rec("a/2", num_attention_heads=16), rec("b/9")])
    m = merge_catalog(old, new)
    assert list(m["model_id"]) == ["a/1", "a/2", "a/3", "b/9"]
    assert m.set_index("model_id").loc["a/2", "num_attention_heads"] == 16
    assert tuple(m.columns) == schema.COLUMN_NAMES
    for name, dtype in schema.COLUMN_DTYPES.items():
        assert str(m[name].dtype) == dtype


def test_merge_with_empty_or_none() -> None:
    old = small_catalog(["a/1"])
    assert list(merge_catalog(old, None)["model_id"]) == ["a/1"]
    assert list(merge_catalog(None, old)["model_id"]) == ["a/1"]
    assert list(merge_catalog(old, old.iloc[0:0])["model_id"]) == ["a/1"]
    assert len(merge_catalog(None, None)) == 0


def test_merge_keeps_old_ok_row_when_new_fetch_failed_is_still_a_row() -> None:
    # merge is by model_id only: a new error row replaces the old one but nothing disappears
    old = small_catalog(["a/1"])
    new = catalog_from_records([normalize_config("{broken", "a/1")])
    m = merge_catalog(old, new)
    assert len(m) == 1 and m.iloc[0]["status"] == "invalid_json"


ids = st.lists(st.sampled_from([f"o{i}/m{j}" for i in range(4) for j in range(5)]), max_size=12)


@settings(max_examples=60, deadline=None)
@given(ids, ids)
def test_merge_never_drops_rows(old_ids: list[str], new_ids: list[str]) -> None:
    old = catalog_from_records([rec(i, num_attention_heads=32) for i in old_ids])
    new = catalog_from_records([rec(i, num_attention_heads=16) for i in new_ids])
    m = merge_catalog(old, new)
    assert set(m["model_id"]) == set(old_ids) | set(new_ids)
    assert m["model_id"].is_unique
    heads = m.set_index("model_id")["num_attention_heads"]
    for i in set(new_ids):
        assert heads[i] == 16
    for i in set(old_ids) - set(new_ids):
        assert heads[i] == 32


def test_catalog_from_records_empty_and_partial() -> None:
    empty = catalog_from_records([])
    assert tuple(empty.columns) == schema.COLUMN_NAMES and len(empty) == 0
    part = catalog_from_records([{"model_id": "a/b", "num_attention_heads": 8, "unknown": 1}])
    assert part.loc[0, "num_attention_heads"] == 8 and pd.isna(part.loc[0, "head_dim"])


def test_build_catalog_rejects_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        catalog.build_catalog(tmp_path / "nope")


def test_build_catalog_unreadable_file_gives_a_row(tmp_path: Path) -> None:
    (tmp_path / "org--ok.json").write_text('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}')
    bad = tmp_path / "org--dir.json"
    bad.mkdir()  # a directory named like a config: reading it fails
    df = catalog.build_catalog(tmp_path)
    assert list(df["model_id"]) == ["org/dir", "org/ok"]
    assert df.set_index("model_id").loc["org/dir", "status"] == "error"


def test_model_id_from_filename() -> None:
    assert catalog.model_id_from_filename("meta-llama--Llama-3.1-8B.json") == "meta-llama/Llama-3.1-8B"
    assert catalog.model_id_from_filename("/x/y/org--name--with--dashes.json") == "org/name--with--dashes"


def test_cli_build_and_merge(tmp_path: Path) -> None:
    src = tmp_path / "configs"
    src.mkdir()
    (src / "a--one.json").write_text('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}')
    out = tmp_path / "cat.parquet"
    write_catalog(small_catalog(["z/scraped"]), out)
    assert catalog.main(["build", str(src), "-o", str(out), "--merge"]) == 0
    assert list(load_catalog(out)["model_id"]) == ["a/one", "z/scraped"]
    assert catalog.main(["build", str(src), "-o", str(out)]) == 0
    assert list(load_catalog(out)["model_id"]) == ["a/one"]


# --- aliases and nesting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cfg", "heads", "kv"),
    [
        ({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12}, 12, 12),
        ({"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32, "n_head": 71, "multi_query": True}, 71, 1),
        ({"model_type": "falcon", "hidden_size": 8192, "num_hidden_layers": 60, "num_attention_heads": 128, "num_kv_heads": 8, "new_decoder_architecture": True, "multi_query": True}, 128, 8),
        ({"model_type": "RefinedWeb", "hidden_size": 8192, "n_layer": 60, "n_head": 128, "n_head_kv": 8}, 128, 8),
        ({"model_type": "gpt_bigcode", "n_embd": 6144, "n_layer": 40, "n_head": 48, "multi_query": True}, 48, 1),
        ({"model_type": "chatglm", "hidden_size": 4096, "num_layers": 28, "num_attention_heads": 32, "multi_query_attention": True, "multi_query_group_num": 2, "kv_channels": 128}, 32, 2),
        ({"model_type": "chatglm", "hidden_size": 4096, "num_layers": 28, "num_attention_heads": 32, "multi_query_attention": False, "multi_query_group_num": 2}, 32, 32),
        ({"model_type": "mpt", "d_model": 4096, "n_layers": 32, "n_heads": 32, "attn_config": {"kv_n_heads": 8}}, 32, 8),
        ({"model_type": "dbrx", "d_model": 6144, "n_layers": 40, "n_heads": 48, "attn_config": {"kv_n_heads": 8}, "ffn_config": {"moe_num_experts": 16, "moe_top_k": 4, "ffn_hidden_size": 10752}}, 48, 8),
        ({"model_type": "nemotron", "hidden_size": 6144, "num_layers": 32, "num_attention_heads": 48, "num_query_groups": 8}, 48, 8),
        ({"model_type": "mistral_native", "dim": 4096, "n_layers": 32, "n_heads": 32, "n_kv_heads": 8, "hidden_dim": 14336, "head_dim": 128}, 32, 8),
    ],
)
def test_aliases(cfg: dict, heads: int, kv: int) -> None:
    r = normalize_config(cfg, "alias/test")
    assert r["status"] == "ok", r["parse_notes"]
    assert (r["num_attention_heads"], r["num_key_value_heads"]) == (heads, kv)
    assert r["head_dim"] is not None and r["hidden_size"] is not None


def test_dbrx_moe_from_ffn_config() -> None:
    r = normalize_config({"model_type": "dbrx", "d_model": 6144, "n_layers": 40, "n_heads": 48, "vocab_size": 100352,
                          "attn_config": {"kv_n_heads": 8}, "ffn_config": {"moe_num_experts": 16, "moe_top_k": 4, "ffn_hidden_size": 10752}}, "databricks/dbrx")
    assert r["is_moe"] and r["num_experts"] == 16 and r["num_experts_per_tok"] == 4 and r["moe_intermediate_size"] == 10752
    assert r["params_total"] == pytest.approx(132e9, rel=0.03)  # DBRX: 132B total
    assert r["params_active"] == pytest.approx(36e9, rel=0.03)  # 36B active


@pytest.mark.parametrize("key", ["text_config", "llm_config", "language_config", "language_model_config", "text_model_config"])
def test_nested_text_config_keys(key: str) -> None:
    inner = dict(BASE, model_type="llama_text")
    r = normalize_config({"model_type": "some_vlm", key: inner, "vision_config": {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24}}, "nest/test")
    assert r["text_config_key"] == key and r["text_model_type"] == "llama_text"
    assert (r["num_attention_heads"], r["num_key_value_heads"]) == (32, 8)
    assert r["has_vision"] and r["vision_num_heads"] == 16


def test_thinker_config_nests_text_config() -> None:
    r = normalize_config({"model_type": "qwen2_5_omni", "thinker_config": {"model_type": "qwen2_5_omni_thinker", "text_config": dict(BASE, num_attention_heads=28, num_key_value_heads=4, hidden_size=3584),
                                                                           "vision_config": {"depth": 32}}}, "Qwen/Qwen2.5-Omni-7B")
    assert r["text_config_key"] == "thinker_config.text_config"
    assert (r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"]) == (28, 4, 128)


def test_text_config_wins_over_top_level_and_top_fills_gaps() -> None:
    r = normalize_config({"model_type": "x_vl", "num_attention_heads": 99, "vocab_size": 1000, "tie_word_embeddings": True,
                          "text_config": {k: v for k, v in BASE.items() if k != "vocab_size"}}, "nest/gaps")
    assert r["num_attention_heads"] == 32
    assert r["vocab_size"] == 1000 and r["tie_word_embeddings"] is True
    assert "vocab_size read from the top-level config" in r["parse_notes"]


@pytest.mark.parametrize("hd", [None, "absent"])
def test_head_dim_null_or_absent(hd: object) -> None:
    cfg = dict(BASE)
    if hd is None:
        cfg["head_dim"] = None
    r = normalize_config(cfg, "hd/test")
    assert r["head_dim"] == 128 and "head_dim absent or null" in r["parse_notes"]


def test_explicit_head_dim_beats_division() -> None:
    r = normalize_config(dict(BASE, hidden_size=5120, num_attention_heads=32, head_dim=128), "hd/explicit")
    assert r["head_dim"] == 128  # 5120 // 32 would be 160 (Mistral-Nemo style)


@pytest.mark.parametrize(
    ("over", "full", "sliding", "linear", "window"),
    [
        ({"layer_types": ["sliding_attention"] * 5 + ["full_attention"]}, 1, 5, 0, 4096),
        ({"sliding_window_pattern": 6, "model_type": "gemma3_text"}, 1, 5, 0, 4096),
        ({"model_type": "gemma2"}, 3, 3, 0, 4096),
        ({"use_sliding_window": True, "max_window_layers": 4}, 4, 2, 0, 4096),
        ({"use_sliding_window": False}, 6, 0, 0, None),
        ({"layer_types": ["linear_attention"] * 3 + ["full_attention"]} , 1, 0, 3, None),
    ],
)
def test_layer_kinds(over: dict, full: int, sliding: int, linear: int, window: int | None) -> None:
    cfg = dict(BASE, num_hidden_layers=6 if "layer_types" not in over else len(over["layer_types"]), sliding_window=4096)
    cfg.update(over)
    r = normalize_config(cfg, "layers/test")
    assert (r["num_full_attention_layers"], r["num_sliding_window_layers"], r["num_linear_attention_layers"]) == (full, sliding, linear)
    assert r["sliding_window"] == window


@pytest.mark.parametrize(
    ("over", "moe_layers", "dense_layers"),
    [
        ({"first_k_dense_replace": 3}, 29, 3),
        ({"mlp_only_layers": [0, 5, 7]}, 29, 3),
        ({"decoder_sparse_step": 2}, 16, 16),
        ({"moe_layer_freq": 2}, 16, 16),
        ({"moe_layer_freq": [0, 1] * 16}, 16, 16),
        ({"interleave_moe_layer_step": 4}, 8, 24),
    ],
)
def test_moe_layer_placement(over: dict, moe_layers: int, dense_layers: int) -> None:
    r = normalize_config(dict(BASE, num_experts=64, num_experts_per_tok=4, moe_intermediate_size=1024, **over), "moe/test")
    assert (r["num_moe_layers"], r["num_dense_layers"]) == (moe_layers, dense_layers)


@pytest.mark.parametrize(
    ("q", "want"),
    [
        ({"quant_method": "fp8", "weight_block_size": [128, 128], "fmt": "e4m3"}, dict(quant_bits=8, weight_block_n=128, weight_block_k=128)),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"}, dict(quant_bits=4, quant_group_size=128)),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1}, dict(quant_bits=8, quant_group_size=-1)),
        ({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {"weights": {"num_bits": 4, "group_size": 32, "type": "int"}}}}, dict(quant_bits=4, quant_group_size=32, quant_format="pack-quantized")),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}, dict(quant_bits=4, quant_group_size=16, quant_format="nvfp4")),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, dict(quant_bits=8, quant_format="fp8")),
        ({"quant_method": "mxfp4"}, dict(quant_bits=4, quant_format="mxfp4")),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, dict(quant_bits=4, quant_format="nf4")),
    ],
)
def test_quantization_configs(q: dict, want: dict) -> None:
    r = normalize_config(dict(BASE, quantization_config=q), "quant/test")
    assert r["is_quantized"] and r["quant_method"] == q["quant_method"]
    for k, v in want.items():
        assert r[k] == v, (k, r[k])


def test_mla_fields() -> None:
    r = normalize_config(dict(BASE, num_key_value_heads=32, kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64,
                              qk_nope_head_dim=128, v_head_dim=128, head_dim=64), "mla/test")
    assert r["is_mla"] and r["attention_kind"] == "mla"
    assert (r["head_dim"], r["v_head_dim"], r["kv_lora_rank"], r["q_lora_rank"]) == (192, 128, 512, 1536)


def test_gdn_kda_mamba_fields() -> None:
    gdn = normalize_config(dict(BASE, num_hidden_layers=8, full_attention_interval=4, linear_num_key_heads=16, linear_num_value_heads=32,
                                linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4), "gdn/test")
    assert gdn["linear_attention_kind"] == "gdn" and (gdn["num_linear_attention_layers"], gdn["num_full_attention_layers"]) == (6, 2)
    kda = normalize_config(dict(BASE, num_hidden_layers=4, linear_attn_config={"kda_layers": [1, 2, 3], "full_attn_layers": [4], "num_heads": 32, "head_dim": 128, "short_conv_kernel_size": 4}), "kda/test")
    assert kda["linear_attention_kind"] == "kda" and kda["linear_num_value_heads"] == 32 and kda["num_linear_attention_layers"] == 3
    mamba = normalize_config(dict(BASE, model_type="nemotron_h", num_hidden_layers=6, hybrid_override_pattern="M-M*-E", mamba_num_heads=128,
                                  mamba_head_dim=64, n_groups=8, ssm_state_size=128, conv_kernel=4, n_routed_experts=8, num_experts_per_tok=2,
                                  moe_intermediate_size=512), "mamba/test")
    assert mamba["linear_attention_kind"] == "mamba2" and mamba["mamba_n_groups"] == 8 and mamba["ssm_state_size"] == 128
    assert (mamba["num_linear_attention_layers"], mamba["num_full_attention_layers"], mamba["num_moe_layers"], mamba["num_dense_layers"]) == (2, 1, 1, 2)


def test_load_catalog_reads_shipped_file_via_package_path(tmp_path: Path) -> None:
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)  # must not depend on the working directory
        df = load_catalog()
    finally:
        os.chdir(cwd)
    assert len(df) > 0 and tuple(df.columns) == schema.COLUMN_NAMES


def test_tp_planner_cli_dispatch(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from dashboard import cli

    src = tmp_path / "configs"
    src.mkdir()
    (src / "a--one.json").write_text('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}')
    out = tmp_path / "c.parquet"
    assert cli.main(["catalog", "build", str(src), "-o", str(out)]) == 0
    assert list(load_catalog(out)["model_id"]) == ["a/one"]
    assert cli.main(["--help"]) == 0 and "tp-planner catalog build" in capsys.readouterr().out
    assert cli.main([]) == 2
    assert cli.main(["nope"]) == 2
    with pytest.raises(SystemExit) as e:
        cli.main(["hub", "--help"])
    assert e.value.code == 0


def test_contradicting_top_level_is_noted() -> None:
    r = normalize_config({"model_type": "x_vl", "num_attention_heads": 64, "text_config": dict(BASE)}, "nest/contra")
    assert r["num_attention_heads"] == 32
    assert "top-level num_attention_heads=64 contradicts text_config" in r["parse_notes"]
