"""The shipped catalog and the normalizer on real Hub configs (../shared/hub-configs)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dashboard import catalog, schema
from dashboard.catalog import build_catalog, load_catalog, normalize_config

B = 1e9


@pytest.fixture(scope="module")
def shipped() -> pd.DataFrame:
    return load_catalog()


@pytest.fixture(scope="module")
def configs_dir(shared_dir: Path) -> Path:
    d = shared_dir / "hub-configs"
    assert d.is_dir(), f"{d} missing"
    return d


@pytest.fixture(scope="module")
def fresh(configs_dir: Path) -> pd.DataFrame:
    return build_catalog(configs_dir, sidecars=catalog.default_sidecars_dir())


def row(df: pd.DataFrame, model_id: str) -> pd.Series:
    hit = df[df["model_id"] == model_id]
    assert len(hit) == 1, f"{model_id}: {len(hit)} rows"
    return hit.iloc[0]


# --- shape of the shipped file -------------------------------------------------------------------


def test_shipped_catalog_has_schema_columns_and_dtypes(shipped: pd.DataFrame) -> None:
    assert tuple(shipped.columns) == schema.COLUMN_NAMES
    for name, dtype in schema.COLUMN_DTYPES.items():
        assert str(shipped[name].dtype) == dtype, name
    assert shipped["model_id"].is_unique


def test_shipped_catalog_one_row_per_config_file(shipped: pd.DataFrame, configs_dir: Path) -> None:
    files = sorted(configs_dir.glob("*.json"))
    assert len(files) >= 100
    expected = {catalog.model_id_from_filename(p) for p in files}
    assert set(shipped["model_id"]) == expected
    assert len(shipped) == len(files)


def test_shipped_catalog_is_up_to_date_with_the_normalizer(shipped: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """The committed parquet equals a rebuild (except read times): rebuild with scripts/build_catalog.py."""
    cols = [c for c in schema.COLUMN_NAMES if c != "fetched_at"]
    pd.testing.assert_frame_equal(shipped[cols].reset_index(drop=True), fresh[cols].reset_index(drop=True))


def test_provenance_columns(shipped: pd.DataFrame) -> None:
    assert set(shipped["source"]) == {"snapshot"}
    assert shipped["fetched_at"].notna().all()
    assert shipped["fetched_at"].str.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").all()
    assert shipped["parse_notes"].notna().all()


def test_load_catalog_default_path_is_beside_the_package() -> None:
    p = catalog.default_catalog_path()
    assert p == Path(catalog.__file__).resolve().parents[2] / "data" / "catalog.parquet"
    assert p.is_file()


# --- pinned values -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "heads", "kv", "head_dim"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 32, 8, 128),
        ("meta-llama/Meta-Llama-3.1-8B", 32, 8, 128),
        ("meta-llama/Llama-3.1-70B-Instruct", 64, 8, 128),
        ("meta-llama/Meta-Llama-3.1-70B", 64, 8, 128),
        ("Qwen/Qwen2.5-7B", 28, 4, 128),
        ("deepseek-ai/DeepSeek-V3", 128, 128, 192),
        ("Qwen/Qwen2.5-VL-7B-Instruct", 28, 4, 128),
        ("openai-community/gpt2", 12, 12, 64),
        ("meta-llama/Llama-3.2-1B-Instruct", 32, 8, 64),
        ("tiiuae/Falcon3-7B-Instruct", 12, 4, 256),
    ],
)
def test_pinned_head_counts(shipped: pd.DataFrame, model_id: str, heads: int, kv: int, head_dim: int) -> None:
    r = row(shipped, model_id)
    assert (r.num_attention_heads, r.num_key_value_heads, r.head_dim) == (heads, kv, head_dim)
    assert r.status == "ok"


def test_multimodal_read_from_text_config(shipped: pd.DataFrame, configs_dir: Path) -> None:
    # Qwen2.5-VL-7B keeps its language model at the top level next to vision_config; olmOCR (same
    # architecture, newer export) nests it under text_config: both must give the same text shapes.
    a = row(shipped, "Qwen/Qwen2.5-VL-7B-Instruct")
    b = row(shipped, "allenai/olmOCR-2-7B-1025")
    assert b.text_config_key == "text_config" and b.text_model_type == "qwen2_5_vl_text"
    for col in ("num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size", "num_hidden_layers"):
        assert a[col] == b[col], col
    assert a.has_vision and (a.vision_num_heads, a.vision_hidden_size, a.vision_depth) == (16, 1280, 32)
    # Kimi-K3: text_config with its own model_type, vision tower spelled vt_*
    k3 = row(shipped, "moonshotai/Kimi-K3")
    raw = json.loads((configs_dir / "moonshotai--Kimi-K3.json").read_text())
    assert k3.text_config_key == "text_config" and k3.text_model_type == "kimi_linear"
    assert k3.num_attention_heads == raw["text_config"]["num_attention_heads"] == 96
    assert (k3.vision_num_heads, k3.vision_hidden_size, k3.vision_depth) == (12, 1024, 27)


def test_every_model_has_heads_kv_and_head_dim(shipped: pd.DataFrame) -> None:
    bad = shipped[
        shipped["num_attention_heads"].isna() | shipped["num_key_value_heads"].isna() | shipped["head_dim"].isna()
        | (shipped["status"] != "ok")
    ]
    assert bad.empty, bad[["model_id", "status_reason"]].to_string()
    assert (shipped["num_key_value_heads"] <= shipped["num_attention_heads"]).all()
    assert (shipped["num_full_attention_layers"] + shipped["num_sliding_window_layers"]
            + shipped["num_linear_attention_layers"] + shipped["num_cross_attention_layers"]
            <= shipped["num_hidden_layers"]).all()


# --- families: one model per model_type present ----------------------------------------------------

# Expected values per family, read off the configs and the model cards by hand (not from our output).
FAMILIES: dict[str, tuple[str, dict]] = {
    "exaone4": ("LGAI-EXAONE/EXAONE-4.0-32B", dict(num_sliding_window_layers=48, num_full_attention_layers=16, sliding_window=4096, is_moe=False, is_mla=False)),
    "minimax_m2": ("MiniMaxAI/MiniMax-M2.5", dict(is_moe=True, num_experts=256, num_experts_per_tok=8, is_quantized=True, quant_method="fp8", weight_block_n=128, weight_block_k=128, quant_bits=8)),
    "minimax_m3": ("MiniMaxAI/MiniMax-M3", dict(is_moe=True, num_experts=128, num_dense_layers=3, num_moe_layers=57, num_shared_experts=1, intermediate_size=12288, num_key_value_heads=4)),
    "minimax_m3_vl": ("nvidia/MiniMax-M3-NVFP4", dict(has_vision=True, vision_num_heads=16, text_config_key="text_config", is_quantized=True, quant_method="modelopt", quant_format="nvfp4", quant_bits=4)),
    "llama": ("meta-llama/Llama-3.1-8B-Instruct", dict(attention_kind="gqa", is_moe=False, has_vision=False, is_quantized=False, num_sliding_window_layers=0, vocab_size=128256, tie_word_embeddings=False, max_position_embeddings=131072)),
    "qwen2": ("Qwen/Qwen2.5-7B", dict(num_sliding_window_layers=0, sliding_window=None, num_full_attention_layers=28, is_moe=False)),
    "qwen2_5_vl": ("Qwen/Qwen2.5-VL-7B-Instruct", dict(has_vision=True, vision_num_heads=16, text_config_key="")),
    "qwen3": ("Qwen/Qwen3-32B-FP8", dict(is_quantized=True, quant_method="fp8", weight_block_n=128, weight_block_k=128, head_dim=128, num_attention_heads=64)),
    "qwen3_moe": ("Qwen/Qwen3-235B-A22B", dict(is_moe=True, num_experts=128, num_experts_per_tok=8, moe_intermediate_size=1536, num_moe_layers=94, num_dense_layers=0, num_shared_experts=0)),
    "qwen3_next": ("Qwen/Qwen3-Next-80B-A3B-Instruct", dict(has_linear_attention=True, linear_attention_kind="gdn", num_linear_attention_layers=36, num_full_attention_layers=12, linear_num_key_heads=16, linear_num_value_heads=32, linear_key_head_dim=128, linear_conv_kernel_dim=4, is_moe=True, num_experts=512, num_shared_experts=1)),
    "qwen3_vl": ("Qwen/Qwen3-VL-8B-Instruct", dict(has_vision=True, text_config_key="text_config", text_model_type="qwen3_vl_text", vision_depth=27, is_moe=False)),
    "qwen3_vl_moe": ("Qwen/Qwen3-VL-235B-A22B-Instruct", dict(has_vision=True, is_moe=True, num_experts=128, num_attention_heads=64, num_key_value_heads=4)),
    "qwen3_5": ("Qwen/Qwen3.5-27B", dict(has_linear_attention=True, linear_attention_kind="gdn", num_linear_attention_layers=48, num_full_attention_layers=16, has_vision=True, is_moe=False, num_attention_heads=24, num_key_value_heads=4, head_dim=256)),
    "qwen3_5_moe": ("nvidia/Qwen3.5-397B-A17B-NVFP4", dict(has_linear_attention=True, is_moe=True, num_experts=512, has_vision=True, is_quantized=True, quant_method="modelopt", quant_format="nvfp4", quant_group_size=16, quant_bits=4)),
    "deepseek_v4": ("deepseek-ai/DeepSeek-V4-Flash", dict(attention_kind="mqa", num_key_value_heads=1, head_dim=512, is_mla=False, sliding_window=128, num_sliding_window_layers=2, is_moe=True, num_experts=256, num_experts_per_tok=6, q_lora_rank=1024, quant_method="fp8")),
    "deepseek_ref": ("sgl-project/DeepSeek-V4-Pro-FP8", dict(num_attention_heads=128, num_key_value_heads=1, head_dim=512, is_moe=True, num_experts=384, quant_method="fp8", weight_block_k=128)),
    "mimo": ("XiaomiMiMo/MiMo-7B-Base", dict(is_moe=False, num_sliding_window_layers=0, sliding_window=None)),
    "mimo_v2_flash": ("XiaomiMiMo/MiMo-V2-Flash", dict(num_sliding_window_layers=39, num_full_attention_layers=9, sliding_window=128, head_dim=192, v_head_dim=128, is_moe=True, num_dense_layers=1, num_moe_layers=47)),
    "olmo2": ("allenai/OLMo-2-1124-7B-Instruct", dict(attention_kind="mha", num_key_value_heads=32)),
    "olmo3": ("allenai/Olmo-3.1-32B-Instruct", dict(num_sliding_window_layers=48, num_full_attention_layers=16, sliding_window=4096)),
    "deepseek_v3": ("deepseek-ai/DeepSeek-V3", dict(is_mla=True, attention_kind="mla", q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, head_dim=192, is_moe=True, num_experts=256, num_experts_per_tok=8, num_shared_experts=1, num_dense_layers=3, num_moe_layers=58, moe_intermediate_size=2048, quant_method="fp8", weight_block_n=128)),
    "deepseek_v32": ("deepseek-ai/DeepSeek-V3.2", dict(is_mla=True, is_moe=True, num_dense_layers=3)),
    "gemma2": ("google/gemma-2-9b-it", dict(num_sliding_window_layers=21, num_full_attention_layers=21, sliding_window=4096, head_dim=256, tie_word_embeddings=True)),
    "gemma4": ("google/gemma-4-26B-A4B", dict(num_sliding_window_layers=25, num_full_attention_layers=5, sliding_window=1024, is_moe=True, num_experts=128, num_experts_per_tok=8, has_vision=True, text_config_key="text_config")),
    "granite": ("ibm-granite/granite-3.3-8b-instruct", dict(num_attention_heads=32, num_key_value_heads=8, is_moe=False)),
    "mllama": ("meta-llama/Llama-3.2-90B-Vision-Instruct", dict(num_cross_attention_layers=20, num_full_attention_layers=80, has_vision=True, vision_num_heads=16)),
    "llama4": ("meta-llama/Llama-4-Scout-17B-16E-Instruct", dict(is_moe=True, num_experts=16, num_experts_per_tok=1, num_shared_experts=1, has_vision=True, num_attention_heads=40, num_key_value_heads=8)),
    "phi3": ("microsoft/phi-4", dict(num_attention_heads=40, num_key_value_heads=10, num_sliding_window_layers=0)),
    "mistral": ("mistralai/Mistral-7B-v0.1", dict(num_sliding_window_layers=32, sliding_window=4096)),
    "mixtral": ("mistralai/Mixtral-8x7B-v0.1", dict(is_moe=True, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=14336, num_shared_experts=0)),
    "kimi_k2": ("moonshotai/Kimi-K2-Instruct", dict(is_mla=True, num_attention_heads=64, is_moe=True, num_experts=384, num_dense_layers=1, quant_method="fp8")),
    "kimi_k25": ("moonshotai/Kimi-K2.5", dict(is_mla=True, has_vision=True, is_quantized=True, quant_method="compressed-tensors", quant_bits=4, quant_group_size=32)),
    "kimi_k3": ("moonshotai/Kimi-K3", dict(is_mla=True, has_linear_attention=True, linear_attention_kind="kda", linear_num_value_heads=96, num_linear_attention_layers=69, num_full_attention_layers=24, has_vision=True, quant_format="mxfp4-pack-quantized", num_shared_experts=2)),
    "kimi_linear": ("moonshotai/Kimi-Linear-48B-A3B-Instruct", dict(linear_attention_kind="kda", linear_num_value_heads=32, linear_key_head_dim=128, num_linear_attention_layers=20, num_full_attention_layers=7, is_mla=True, head_dim=192, q_lora_rank=None, num_experts=256)),
    "glm_moe_dsa": ("zai-org/GLM-5", dict(is_mla=True, num_attention_heads=64, is_moe=True, num_experts=256, num_dense_layers=3, is_quantized=False)),
    "nemotron-nas": ("nvidia/Llama-3_3-Nemotron-Super-49B-v1", dict(num_attention_heads=64, num_key_value_heads=8, num_full_attention_layers=49, is_moe=False)),
    "nemotron_h": ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", dict(has_linear_attention=True, linear_attention_kind="mamba2", num_linear_attention_layers=23, num_full_attention_layers=6, mamba_n_groups=8, ssm_state_size=128, linear_num_value_heads=64, linear_value_head_dim=64, is_moe=True, num_moe_layers=23, num_experts=128, num_experts_per_tok=6)),
    "gpt_oss": ("openai/gpt-oss-120b", dict(num_sliding_window_layers=18, num_full_attention_layers=18, sliding_window=128, is_moe=True, num_experts=128, num_experts_per_tok=4, quant_method="mxfp4", quant_bits=4)),
    "gpt2": ("openai-community/gpt2", dict(attention_kind="mha", hidden_size=768, num_hidden_layers=12, vocab_size=50257, max_position_embeddings=1024)),
    "laguna": ("poolside/Laguna-S-2.1-FP8", dict(num_sliding_window_layers=36, num_full_attention_layers=12, sliding_window=512, is_moe=True, num_dense_layers=1, quant_method="compressed-tensors", quant_bits=8, quant_format="float-quantized")),
    "glm4_moe": ("zai-org/GLM-4.5", dict(is_moe=True, num_experts=160, num_dense_layers=3, num_attention_heads=96, num_key_value_heads=8)),
    "glm4v_moe": ("zai-org/GLM-4.5V", dict(has_vision=True, vision_num_heads=12, vision_depth=24, is_moe=True, num_dense_layers=1)),
    "glm4_moe_lite": ("zai-org/GLM-4.7-Flash", dict(is_mla=True, num_attention_heads=20, kv_lora_rank=512, v_head_dim=256, head_dim=256)),
    # third pass of ../shared/hub-configs (rows 131-196 of SOURCES.tsv): values read off each config.json
    # (key in the comment where it is not the canonical name); remote-code families read as JSON only
    "RefinedWeb": ("tiiuae/falcon-40b", dict(num_attention_heads=128, num_key_value_heads=8, head_dim=64, hidden_size=8192, num_hidden_layers=60, vocab_size=65024, attention_kind="gqa", is_moe=False)),  # n_head, n_head_kv, n_layer
    "RefinedWebModel": ("tiiuae/falcon-7b", dict(num_attention_heads=71, num_key_value_heads=1, head_dim=64, hidden_size=4544, num_hidden_layers=32, attention_kind="mqa")),  # n_head 71, multi_query true
    "falcon": ("tiiuae/falcon-180B-chat", dict(num_attention_heads=232, num_key_value_heads=8, head_dim=64, hidden_size=14848, num_hidden_layers=80, vocab_size=65024)),  # num_kv_heads (new_decoder_architecture)
    "baichuan": ("baichuan-inc/Baichuan2-13B-Chat", dict(num_attention_heads=40, num_key_value_heads=40, head_dim=128, hidden_size=5120, num_hidden_layers=40, intermediate_size=13696, vocab_size=125696, max_position_embeddings=4096, attention_kind="mha")),  # model_max_length
    "chatglm": ("THUDM/chatglm2-6b", dict(num_attention_heads=32, num_key_value_heads=2, head_dim=128, hidden_size=4096, num_hidden_layers=28, intermediate_size=13696, vocab_size=65024, max_position_embeddings=32768, attention_kind="gqa", tie_word_embeddings=False)),  # multi_query_group_num, kv_channels, num_layers, ffn_hidden_size, padded_vocab_size, seq_length
    "codegen": ("Salesforce/codegen2-1B", dict(num_attention_heads=16, num_key_value_heads=16, head_dim=128, hidden_size=2048, num_hidden_layers=16, vocab_size=51200, max_position_embeddings=2048)),  # n_head, n_embd, n_layer, n_positions
    "codeshell": ("WisdomShell/CodeShell-7B-Chat-int4", dict(num_attention_heads=32, num_key_value_heads=8, head_dim=128, hidden_size=4096, num_hidden_layers=42, intermediate_size=16384, vocab_size=70144, max_position_embeddings=8192)),  # num_query_groups, n_inner
    "deepseek_v2": ("deepseek-ai/DeepSeek-V2-Lite", dict(is_mla=True, attention_kind="mla", num_attention_heads=16, q_lora_rank=None, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, head_dim=192, is_moe=True, num_experts=64, num_experts_per_tok=6, num_shared_experts=2, moe_intermediate_size=1408, num_dense_layers=1, num_moe_layers=26)),
    "fuyu": ("adept/fuyu-8b", dict(num_attention_heads=64, num_key_value_heads=64, head_dim=64, hidden_size=4096, num_hidden_layers=36, intermediate_size=16384, vocab_size=262144, has_vision=False)),
    "gemma": ("google/gemma-2b-it", dict(num_attention_heads=8, num_key_value_heads=1, head_dim=256, attention_kind="mqa", hidden_size=2048, num_hidden_layers=18, intermediate_size=16384, vocab_size=256000)),
    "gemma3": ("google/medgemma-27b-it", dict(text_config_key="text_config", text_model_type="gemma3_text", num_attention_heads=32, num_key_value_heads=16, head_dim=128, num_hidden_layers=62, num_sliding_window_layers=52, num_full_attention_layers=10, sliding_window=1024, has_vision=True, vision_num_heads=16, vision_hidden_size=1152, vision_depth=27)),
    "gpt_bigcode": ("TheBloke/WizardCoder-15B-1.0-GPTQ", dict(num_attention_heads=48, num_key_value_heads=1, attention_kind="mqa", hidden_size=6144, num_hidden_layers=40, intermediate_size=24576, vocab_size=49153)),  # multi_query true, n_inner
    "gpt_neox": ("togethercomputer/RedPajama-INCITE-7B-Base", dict(num_attention_heads=32, num_key_value_heads=32, head_dim=128, hidden_size=4096, num_hidden_layers=32, intermediate_size=16384, vocab_size=50432)),
    "gptj": ("EleutherAI/gpt-j-6b", dict(num_attention_heads=16, num_key_value_heads=16, head_dim=256, hidden_size=4096, num_hidden_layers=28, vocab_size=50400)),
    "granitemoe": ("ibm-granite/granite-3.1-1b-a400m-instruct", dict(num_attention_heads=16, num_key_value_heads=8, is_moe=True, num_experts=32, num_experts_per_tok=8, moe_intermediate_size=512, num_moe_layers=24, num_dense_layers=0, num_shared_experts=0)),  # num_local_experts; intermediate_size is the expert width
    "hunyuan": ("tencent/Hunyuan-A13B-Instruct", dict(num_attention_heads=32, num_key_value_heads=8, head_dim=128, is_moe=True, num_experts=64, num_experts_per_tok=8, moe_intermediate_size=3072, num_shared_experts=1, num_moe_layers=32, is_mla=False, tie_word_embeddings=True)),  # attention_head_dim; moe_topk, moe_intermediate_size, num_shared_expert are per-layer lists
    "idefics3": ("ibm-granite/granite-docling-258M", dict(text_config_key="text_config", text_model_type="llama", num_attention_heads=9, num_key_value_heads=3, head_dim=64, hidden_size=576, num_hidden_layers=30, has_vision=True, vision_num_heads=12, vision_hidden_size=768, vision_depth=12)),
    "infimm-zephyr": ("Infi-MM/infimm-zephyr", dict(text_config_key="language", text_model_type="mistral", num_attention_heads=32, num_key_value_heads=8, head_dim=128, hidden_size=4096, num_hidden_layers=32, has_vision=True, vision_num_heads=16, vision_hidden_size=1024, vision_depth=24)),  # visual: width 1024 / head_width 64, layers 24
    "internlm": ("internlm/internlm-20b", dict(num_attention_heads=40, num_key_value_heads=40, head_dim=128, hidden_size=5120, num_hidden_layers=60, intermediate_size=13824, vocab_size=103168)),
    "lfm2": ("LiquidAI/LFM2-1.2B", dict(num_attention_heads=32, num_key_value_heads=8, head_dim=64, num_hidden_layers=16, num_full_attention_layers=6, num_sliding_window_layers=0, num_linear_attention_layers=0, has_linear_attention=False, intermediate_size=8192)),  # full_attn_idxs (6 of 16); block_ff_dim 12288 -> 2/3, multiple of 256
    "llava": ("liuhaotian/llava-v1.5-7b", dict(num_attention_heads=32, num_key_value_heads=32, hidden_size=4096, num_hidden_layers=32, intermediate_size=11008, has_vision=False)),  # mm_vision_tower named only
    "minicpmv": ("openbmb/MiniCPM-V-2", dict(num_attention_heads=36, num_key_value_heads=36, head_dim=64, hidden_size=2304, num_hidden_layers=40, intermediate_size=5760, vocab_size=122753, has_vision=False)),  # vision_encoder named only
    "qwen": ("Qwen/Qwen-7B", dict(num_attention_heads=32, num_key_value_heads=32, head_dim=128, hidden_size=4096, num_hidden_layers=32, intermediate_size=11008, vocab_size=151936, attention_kind="mha")),  # kv_channels; intermediate_size 22016 / 2
    "smollm3": ("HuggingFaceTB/SmolLM3-3B", dict(num_attention_heads=16, num_key_value_heads=4, num_hidden_layers=36, num_full_attention_layers=36, num_sliding_window_layers=0, sliding_window=None, intermediate_size=11008, vocab_size=128256)),
    "stablelm_epoch": ("stabilityai/stable-code-3b", dict(num_attention_heads=32, num_key_value_heads=32, head_dim=80, hidden_size=2560, num_hidden_layers=32, intermediate_size=6912, vocab_size=50304)),
}


def test_every_model_type_in_the_folder_has_a_family_check(shipped: pd.DataFrame) -> None:
    present = set(shipped["model_type"].dropna())
    missing = present - set(FAMILIES)
    assert not missing, f"add a FAMILIES entry for {sorted(missing)}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_flags(shipped: pd.DataFrame, family: str) -> None:
    model_id, expected = FAMILIES[family]
    r = row(shipped, model_id)
    assert r.model_type == family
    for col, want in expected.items():
        got = r[col]
        if want is None:
            assert pd.isna(got), f"{model_id}.{col} = {got!r}, want NA"
        else:
            assert not pd.isna(got) and got == want, f"{model_id}.{col} = {got!r}, want {want!r}"


def test_flags_are_never_missing(shipped: pd.DataFrame) -> None:
    for col in ("is_mla", "is_moe", "has_linear_attention", "has_vision", "is_quantized", "tie_word_embeddings"):
        assert shipped[col].notna().all(), col
    # consistency of flags with their detail columns
    assert (shipped.loc[shipped.is_moe, "num_experts"] > 1).all()
    assert shipped.loc[~shipped.is_moe, "num_experts"].isna().all()
    assert (shipped.loc[shipped.is_mla, "kv_lora_rank"] > 0).all()
    assert (shipped.loc[shipped.has_linear_attention, "num_linear_attention_layers"] > 0).all()
    assert (shipped.loc[shipped.has_vision, "vision_num_heads"] > 0).all()
    assert shipped.loc[shipped.is_quantized, "quant_bits"].notna().all()
    sw = shipped.num_sliding_window_layers > 0
    assert shipped.loc[sw, "sliding_window"].notna().all() and shipped.loc[~sw, "sliding_window"].isna().all()


def test_chatglm_v1_and_v2_read_their_own_keys(shipped: pd.DataFrame, configs_dir: Path) -> None:
    # ChatGLM-6B (v1): no multi_query_attention -> MHA; inner_hidden_size, max_sequence_length, no
    # tie_word_embeddings in a config saved by transformers 4.23 -> PretrainedConfig's default (tied)
    raw = json.loads((configs_dir / "THUDM--chatglm-6b.json").read_text())
    v1 = row(shipped, "THUDM/chatglm-6b")
    assert "multi_query_attention" not in raw and "tie_word_embeddings" not in raw
    assert (v1.num_attention_heads, v1.num_key_value_heads, v1.num_hidden_layers) == (raw["num_attention_heads"], raw["num_attention_heads"], raw["num_layers"])
    assert (v1.intermediate_size, v1.vocab_size, v1.max_position_embeddings) == (raw["inner_hidden_size"], raw["vocab_size"], raw["max_sequence_length"])
    assert v1.tie_word_embeddings and "True assumed" in v1.parse_notes and "non-gated GELU MLP" in v1.parse_notes
    # ChatGLM2/3 and derivatives: multi_query_group_num only counts with multi_query_attention
    for mid in ("THUDM/chatglm2-6b", "THUDM/chatglm3-6b", "THUDM/codegeex2-6b", "emotibot-inc/Zhuzhi-6B"):
        raw = json.loads((configs_dir / (mid.replace("/", "--") + ".json")).read_text())
        r = row(shipped, mid)
        assert raw["multi_query_attention"] is True
        assert (r.num_key_value_heads, r.head_dim, r.intermediate_size, r.vocab_size) == (
            raw["multi_query_group_num"], raw["kv_channels"], raw["ffn_hidden_size"], raw["padded_vocab_size"]), mid
    # a config without transformers_version (hand-written reference) keeps the conservative default
    assert not row(shipped, "sgl-project/DeepSeek-V4-Pro-FP8").tie_word_embeddings


def test_qwen_v1_mlp_width_is_half_the_config_value(shipped: pd.DataFrame, configs_dir: Path) -> None:
    for mid in ("Qwen/Qwen-7B", "Qwen/Qwen-72B", "Qwen/Qwen-VL-Chat-Int4", "stvlynn/Qwen-7B-Chat-Cantonese"):
        raw = json.loads((configs_dir / (mid.replace("/", "--") + ".json")).read_text())
        r = row(shipped, mid)
        assert r.intermediate_size * 2 == raw["intermediate_size"], mid
        assert r.head_dim == raw["kv_channels"] and r.num_key_value_heads == raw["num_attention_heads"], mid
        assert "QWenMLP" in r.parse_notes
    vl = row(shipped, "Qwen/Qwen-VL-Chat-Int4")
    assert vl.has_vision and (vl.vision_num_heads, vl.vision_depth, vl.vision_hidden_size) == (16, 48, 1664)  # visual.heads/layers/width
    assert (vl.quant_method, vl.quant_bits, vl.quant_group_size) == ("gptq", 4, 128)
    assert row(shipped, "Qwen/Qwen-72B").params_total == pytest.approx(72e9, rel=0.03)


def test_per_layer_lists_are_read(shipped: pd.DataFrame, configs_dir: Path) -> None:
    raw = json.loads((configs_dir / "tencent--Hunyuan-A13B-Instruct.json").read_text())
    r = row(shipped, "tencent/Hunyuan-A13B-Instruct")
    assert (r.num_experts_per_tok, r.moe_intermediate_size, r.num_shared_experts) == (
        raw["moe_topk"][0], raw["moe_intermediate_size"][0], raw["num_shared_expert"][0])
    assert "given per layer (moe_topk, 32 entries, all 8)" in r.parse_notes
    cfg = dict(raw, moe_topk=[8] * 16 + [4] * 15 + [2])
    rec = normalize_config(cfg, "x/varying", fetched_at="x")
    assert rec["num_experts_per_tok"] == 8 and "varies per layer (moe_topk: [2, 4, 8])" in rec["parse_notes"]
    rec = normalize_config(dict(raw, moe_topk=["a", True]), "x/bad", fetched_at="x")
    assert rec["num_experts_per_tok"] is None and rec["status"] == "ok"


def test_compressed_tensors_block_structure_feeds_the_block_columns(shipped: pd.DataFrame, configs_dir: Path) -> None:
    for mid in ("poolside/Laguna-S-2.1-FP8", "poolside/Laguna-XS.2-FP8", "RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8"):
        raw = json.loads((configs_dir / (mid.replace("/", "--") + ".json")).read_text())
        block = raw["quantization_config"]["config_groups"]["group_0"]["weights"]["block_structure"]
        r = row(shipped, mid)
        assert [r.weight_block_n, r.weight_block_k] == block == [128, 128], mid
        assert r.quant_method == "compressed-tensors"
    # mixed precision: the block-FP8 group covers the attention only, and the row says so
    assert "only for config_groups.'group_0' targets" in row(shipped, "RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8").parse_notes
    # channel-wise FP8 (block_structure null) has no block size
    r = row(shipped, "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic")
    assert r.quant_bits == 8 and pd.isna(r.weight_block_n) and pd.isna(r.weight_block_k)


def test_latent_moe_width_and_non_gated_mlps(shipped: pd.DataFrame, configs_dir: Path) -> None:
    # Nemotron-3 Ultra: experts at moe_latent_size; Kimi-K3: at routed_expert_hidden_size (text_config)
    raw = json.loads((configs_dir / "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json").read_text())
    assert row(shipped, "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16").moe_latent_size == raw["moe_latent_size"] == 2048
    raw = json.loads((configs_dir / "moonshotai--Kimi-K3.json").read_text())
    assert row(shipped, "moonshotai/Kimi-K3").moe_latent_size == raw["text_config"]["routed_expert_hidden_size"] == 3584
    assert pd.isna(row(shipped, "moonshotai/Kimi-Linear-48B-A3B-Instruct").moe_latent_size)
    assert pd.isna(row(shipped, "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").moe_latent_size)
    # mlp_gated: relu2 (Nemotron-H mlp_hidden_act) and GELU MLPs have no gate; SiLU / SITU ones do
    for mid, gated in (("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", False), ("openai-community/gpt2", False),
                       ("moonshotai/Kimi-K3", True), ("moonshotai/Kimi-K2.5", True), ("zai-org/GLM-4.5V", True)):
        assert bool(row(shipped, mid).mlp_gated) is gated, mid
    assert shipped["mlp_gated"].notna().all()


def test_vision_tower_sizes_follow_the_vllm_modules(shipped: pd.DataFrame, configs_dir: Path) -> None:
    # GLM-4.5V (glm4_1v.py Glm4vVisionTransformer): block MLP out_hidden_size wide, merger a gated MLP of
    # intermediate_size at out_hidden_size, Conv2d downsample, (image_size / patch)^2 position rows
    vc = json.loads((configs_dir / "zai-org--GLM-4.5V.json").read_text())["vision_config"]
    h, o, i, d, p, m = (vc["hidden_size"], vc["out_hidden_size"], vc["intermediate_size"], vc["depth"],
                        vc["patch_size"], vc["spatial_merge_size"])
    blocks = d * (4 * h * h + 3 * h * o + 4 * h)
    embed = vc["in_channels"] * vc["temporal_patch_size"] * p * p * h + (vc["image_size"] // p) ** 2 * h + h * o * m * m
    glm = row(shipped, "zai-org/GLM-4.5V")
    assert glm.params_vision == blocks + embed + o * o + 3 * o * i
    assert (glm.params_vision_embed, glm.params_vision_connector) == (embed, o * o + 3 * o * i)
    # MoonViT (Kimi-K2.5 / K3): patches merged by merge_kernel_size, qkv_hidden_size attention (K3)
    for mid in ("moonshotai/Kimi-K2.5", "moonshotai/Kimi-K3"):
        vc = json.loads((configs_dir / (mid.replace("/", "--") + ".json")).read_text())["vision_config"]
        h, i, d, p = vc["vt_hidden_size"], vc["vt_intermediate_size"], vc["vt_num_hidden_layers"], vc["patch_size"]
        q = vc.get("qkv_hidden_size", h)
        mi = h * vc["merge_kernel_size"][0] * vc["merge_kernel_size"][1]
        embed = 3 * p * p * h + vc["init_pos_emb_height"] * vc["init_pos_emb_width"] * h
        expect = d * (4 * h * q + 2 * h * i + 4 * h) + embed + mi * mi + mi * vc["text_hidden_size"]
        assert row(shipped, mid).params_vision == expect, mid
        assert row(shipped, mid).params_vision_connector == mi * mi + mi * vc["text_hidden_size"], mid
        assert row(shipped, mid).params_vision_embed == embed, mid
    text = shipped[~shipped.has_vision.astype(bool)]
    assert (text.params_vision_embed == 0).all() and (text.params_vision_connector == 0).all()


def test_lfm2_short_convolution_blocks_hold_no_kv_cache(shipped: pd.DataFrame, configs_dir: Path) -> None:
    raw = json.loads((configs_dir / "LiquidAI--LFM2-1.2B.json").read_text())
    r = row(shipped, "LiquidAI/LFM2-1.2B")
    assert r.num_full_attention_layers == len(raw["full_attn_idxs"]) == 6
    assert r.num_full_attention_layers + r.num_sliding_window_layers + r.num_linear_attention_layers < r.num_hidden_layers
    assert "10 of 16 layers are gated short-convolution blocks" in r.parse_notes


def test_vision_towers_named_but_not_configured_are_noted(shipped: pd.DataFrame) -> None:
    for mid, key in (("liuhaotian/llava-v1.5-7b", "mm_vision_tower"), ("openbmb/MiniCPM-V-2", "vision_encoder")):
        r = row(shipped, mid)
        assert not r.has_vision and r.params_vision == 0
        assert f"vision encoder named only ({key}=" in r.parse_notes
    assert "cross_attn_every_n_layers" in row(shipped, "Infi-MM/infimm-zephyr").parse_notes


def test_quantized_checkpoint_without_quantization_config_is_inferred_from_name(shipped: pd.DataFrame) -> None:
    r = row(shipped, "nvidia/DeepSeek-V3-0324-NVFP4")
    assert r.is_quantized and r.quant_format == "nvfp4" and r.quant_bits == 4
    assert "repo name" in r.parse_notes


# --- parameter estimates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "total", "active"),
    [
        ("meta-llama/Meta-Llama-3.1-8B", 8.03e9, None),
        ("meta-llama/Llama-3.1-8B-Instruct", 8.03e9, None),
        ("meta-llama/Meta-Llama-3.1-70B", 70.6e9, None),
        ("meta-llama/Llama-3.1-70B-Instruct", 70.6e9, None),
        ("Qwen/Qwen3-235B-A22B", 235e9, 22e9),
        ("deepseek-ai/DeepSeek-V3", 671e9, 37e9),
        ("mistralai/Mixtral-8x7B-v0.1", 46.7e9, 12.9e9),
        # further published figures (model cards), same 3% bound
        ("meta-llama/Meta-Llama-3.1-405B", 405e9, None),
        ("Qwen/Qwen3-30B-A3B", 30.5e9, 3.3e9),
        ("moonshotai/Kimi-K2-Instruct", 1.04e12, 32.6e9),
        ("openai-community/gpt2", 124e6, None),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109e9, None),
        ("google/gemma-2-9b-it", 9.24e9, None),
        ("nvidia/Llama-3_3-Nemotron-Super-49B-v1", 49.9e9, None),
        ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 550e9, 55e9),
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6e9, None),
        ("Qwen/Qwen2.5-VL-7B-Instruct", 8.29e9, None),  # vision tower included
        ("meta-llama/Llama-3.2-90B-Vision-Instruct", 88.6e9, None),
        ("Qwen/Qwen3.5-397B-A17B", 397e9, None),  # active: text-only figure, see test_text_only_published_figures
        ("openai/gpt-oss-120b", 116.8e9, None),
        ("deepseek-ai/DeepSeek-V4-Flash", 284e9, None),  # active: non-embedding figure, see test_non_embedding_active_figures
        ("zai-org/GLM-5", 744e9, None),  # active: non-embedding figure, see test_non_embedding_active_figures
        # third pass (published figures from the model cards)
        ("THUDM/chatglm-6b", 6.2e9, None),  # tied LM head, non-gated GELU MLP
        ("EleutherAI/gpt-j-6b", 6.05e9, None),
        ("tiiuae/falcon-7b", 7e9, None),  # RefinedWebModel: tied, non-gated MLP
        ("tiiuae/falcon-180B-chat", 180e9, None),
        ("LiquidAI/LFM2-1.2B", 1.17e9, None),  # short-convolution blocks counted
        ("tencent/Hunyuan-A13B-Instruct", 80e9, 13e9),
        ("mistralai/Mixtral-8x22B-Instruct-v0.1", 141e9, 39e9),
        ("deepseek-ai/DeepSeek-V2-Lite", 15.7e9, None),
    ],
)
def test_parameter_estimates_within_3_percent(shipped: pd.DataFrame, model_id: str, total: float, active: float | None) -> None:
    r = row(shipped, model_id)
    assert r.params_total == pytest.approx(total, rel=0.03)
    if active is not None:
        assert r.params_active == pytest.approx(active, rel=0.03)
    elif not r.is_moe:
        assert r.params_active == r.params_total


@pytest.mark.parametrize(
    ("model_id", "total", "active"),
    [
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", None, 17e9),  # Meta: "17B active"
        ("google/gemma-4-26B-A4B", 25.2e9, 3.8e9),  # Google: 25.2B total, 3.8B active (dense MLP + experts per layer)
        # Qwen: 17B activated; the count includes the attention output gate (q_proj 2 x heads x head_dim)
        ("Qwen/Qwen3.5-397B-A17B", None, 17e9),
    ],
)
def test_text_only_published_figures(shipped: pd.DataFrame, model_id: str, total: float | None, active: float) -> None:
    # these vendors quote the language model only; params_* include the vision tower
    r = row(shipped, model_id)
    if total is not None:
        assert r.params_total - r.params_vision == pytest.approx(total, rel=0.03)
    assert r.params_active - r.params_vision == pytest.approx(active, rel=0.03)


@pytest.mark.parametrize(
    ("model_id", "active"),
    [
        # Z.ai and DeepSeek (V4) quote active parameters without the embedding and the (untied) LM head:
        # GLM-4.5 "32B active", GLM-5 "40B active" (its DSA indexer, 0.7 B, included)
        ("zai-org/GLM-4.5", 32e9),
        ("zai-org/GLM-5", 40e9),
        # DeepSeek-V4: "13B activated" (Flash) and "49B activated" (Pro) match the same convention; the
        # counts include the KV compressors, the DSA indexer and the hyper-connections of every layer
        ("deepseek-ai/DeepSeek-V4-Flash", 13e9),
        ("deepseek-ai/DeepSeek-V4-Pro", 49e9),
    ],
)
def test_non_embedding_active_figures(shipped: pd.DataFrame, model_id: str, active: float) -> None:
    r = row(shipped, model_id)
    vocab_params = r.vocab_size * r.hidden_size * (1 if r.tie_word_embeddings else 2)
    assert r.params_active - r.params_vision - vocab_params == pytest.approx(active, rel=0.03)


def test_dense_models_have_active_equal_total_and_moe_less(shipped: pd.DataFrame) -> None:
    dense = shipped[~shipped.is_moe]
    assert (dense.params_active == dense.params_total).all()
    moe = shipped[shipped.is_moe]
    assert (moe.params_active < moe.params_total).all()
    assert (shipped.params_vision[shipped.has_vision] > 0).all()
    assert (shipped.params_vision[~shipped.has_vision] == 0).all()


def test_mtp_layers_are_excluded_and_noted(shipped: pd.DataFrame) -> None:
    r = row(shipped, "deepseek-ai/DeepSeek-V3")
    assert "MTP/nextn" in r.parse_notes
    # DeepSeek-V3 checkpoint holds 685B with its MTP module; the published 671B excludes it
    assert r.params_total < 680e9


# --- notes ---------------------------------------------------------------------------------------------------


def test_parse_notes_say_what_was_inferred(shipped: pd.DataFrame) -> None:
    assert "head_dim absent or null" in row(shipped, "meta-llama/Llama-3.1-8B-Instruct").parse_notes
    assert "num_key_value_heads absent" in row(shipped, "openai-community/gpt2").parse_notes
    assert "Infinity" in row(shipped, "nvidia/Nemotron-H-56B-Base-8K").parse_notes
    assert "num_global_key_value_heads=4" in row(shipped, "nvidia/Gemma-4-31B-IT-NVFP4").parse_notes
    assert "MLA: head_dim" in row(shipped, "moonshotai/Kimi-Linear-48B-A3B-Instruct").parse_notes


def test_normalize_accepts_bytes_str_and_dict(configs_dir: Path) -> None:
    p = configs_dir / "meta-llama--Llama-3.1-8B-Instruct.json"
    data = p.read_bytes()
    a = normalize_config(data, "meta-llama/Llama-3.1-8B-Instruct", fetched_at="x")
    b = normalize_config(data.decode(), "meta-llama/Llama-3.1-8B-Instruct", fetched_at="x")
    c = normalize_config(json.loads(data), "meta-llama/Llama-3.1-8B-Instruct", fetched_at="x")
    assert a == b == c
    assert set(a) == set(schema.COLUMN_NAMES)
    d = normalize_config(data, "org/name", source="hub", sha="abc123", fetched_at="2026-11-29T00:00:00Z")
    assert (d["source"], d["sha"], d["fetched_at"], d["org"], d["name"]) == ("hub", "abc123", "2026-11-29T00:00:00Z", "org", "name")


def test_data_readme_is_current_and_lists_every_column() -> None:
    """data/README.md is generated: regenerate with ``python -m dashboard.catalog readme``."""
    text = (catalog.default_catalog_path().parent / "README.md").read_text()
    assert text == catalog.data_readme()
    for name, dtype, _ in schema.COLUMNS:
        assert f"| `{name}` | {dtype} |" in text


# --- shapes that place parameters (memory model): one test per family, values from the config -----


def _raw(configs_dir: Path, mid: str) -> dict:
    return json.loads((configs_dir / (mid.replace("/", "--") + ".json")).read_text())


def test_dsa_indexer_shapes(shipped: pd.DataFrame, configs_dir: Path) -> None:
    for mid in ("deepseek-ai/DeepSeek-V3.2", "zai-org/GLM-5", "zai-org/GLM-5.1-FP8"):
        raw, r = _raw(configs_dir, mid), row(shipped, mid)
        assert (r.index_n_heads, r.index_head_dim) == (raw["index_n_heads"], raw["index_head_dim"]), mid
        assert r.num_indexer_layers == raw["num_hidden_layers"], mid  # no index_topk_freq: every layer
    # GLM-5.2 shares one indexer over index_topk_freq=4 layers after the first index_skip_topk_offset=3:
    # the layers its indexer_types call "full" keep one
    raw, r = _raw(configs_dir, "zai-org/GLM-5.2"), row(shipped, "zai-org/GLM-5.2")
    assert (raw["index_topk_freq"], raw["index_skip_topk_offset"]) == (4, 3)
    assert r.num_indexer_layers == raw["indexer_types"].count("full") == 21
    # the indexer is in params_total: q_lora_rank x heads x dim + hidden x (dim + heads) + k_norm per layer
    raw = _raw(configs_dir, "deepseek-ai/DeepSeek-V3.2")
    idx = raw["num_hidden_layers"] * (raw["q_lora_rank"] * 64 * 128 + raw["hidden_size"] * (128 + 64) + 2 * 128)
    assert row(shipped, "deepseek-ai/DeepSeek-V3.2").params_total - row(shipped, "deepseek-ai/DeepSeek-V3.1").params_total == idx
    assert row(shipped, "deepseek-ai/DeepSeek-V3").num_indexer_layers == 0


def test_deepseek_v4_compressors_indexer_and_hyper_connections(shipped: pd.DataFrame, configs_dir: Path) -> None:
    for mid in ("deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Pro"):
        raw, r = _raw(configs_dir, mid), row(shipped, mid)
        ratios = raw["compress_ratios"][: raw["num_hidden_layers"]]  # the rest are MTP layers
        assert (r.o_lora_rank, r.o_groups, r.hc_mult) == (raw["o_lora_rank"], raw["o_groups"], raw["hc_mult"]), mid
        assert r.num_compressor_layers == sum(x > 1 for x in ratios), mid
        assert r.num_indexer_layers == ratios.count(4), mid  # only the ratio-4 layers index
        assert (r.index_n_heads, r.index_head_dim) == (raw["index_n_heads"], raw["index_head_dim"]), mid
    r = row(shipped, "deepseek-ai/DeepSeek-V4-Flash")
    assert (r.num_compressor_layers, r.num_indexer_layers) == (41, 21)
    assert r.params_total == pytest.approx(284e9, rel=0.01)


def test_learned_positions_and_linear_biases(shipped: pd.DataFrame, configs_dir: Path) -> None:
    raw, r = _raw(configs_dir, "openai-community/gpt2"), row(shipped, "openai-community/gpt2")
    assert r.learned_position_embeddings == raw["n_positions"] == 1024 and r.linear_bias
    h, n, L, V = raw["n_embd"], raw["n_positions"], raw["n_layer"], raw["vocab_size"]
    # wte + wpe + per block (c_attn, c_proj, c_fc, mlp c_proj with biases, two LayerNorm weights) + ln_f
    block = 4 * h * h + 4 * h + 2 * 4 * h * h + 4 * h + h + 2 * h
    assert r.params_total == V * h + n * h + L * block + h  # = 124.4 M; GPT-2 small is "124M"
    assert row(shipped, "TheBloke/WizardCoder-15B-1.0-GPTQ").learned_position_embeddings == 8192  # n_positions
    # rotary models: no table; position_embedding_type "rope" wins over a GPT-BigCode-like layout
    assert row(shipped, "WisdomShell/CodeShell-7B-Chat-int4").learned_position_embeddings == 0
    assert row(shipped, "meta-llama/Llama-3.1-8B-Instruct").learned_position_embeddings == 0
    # biases: Falcon's `bias` flag, Llama's attention_bias + mlp_bias, Qwen2's q/k/v-only bias is not "every layer"
    assert not row(shipped, "tiiuae/falcon-7b-instruct").linear_bias and _raw(configs_dir, "tiiuae/falcon-7b-instruct")["bias"] is False
    assert row(shipped, "togethercomputer/RedPajama-INCITE-7B-Base").linear_bias
    assert not row(shipped, "meta-llama/Llama-3.1-8B-Instruct").linear_bias
    assert not row(shipped, "Qwen/Qwen2.5-7B").linear_bias


def test_gemma4_global_attention_and_unsharded_vision(shipped: pd.DataFrame, configs_dir: Path) -> None:
    raw = _raw(configs_dir, "google/gemma-4-31B-it")
    tc, vc = raw["text_config"], raw["vision_config"]
    r = row(shipped, "google/gemma-4-31B-it")
    assert (r.global_head_dim, r.num_global_key_value_heads) == (tc["global_head_dim"], tc["num_global_key_value_heads"]) == (512, 4)
    assert r.num_full_attention_layers == tc["layer_types"].count("full_attention")
    assert tc["hidden_size_per_layer_input"] == 0  # no per-layer input embeddings in these checkpoints
    # vision: position_embedding_table (2 x position_embedding_size rows), gated MLP, one projection
    vh, vi, d = vc["hidden_size"], vc["intermediate_size"], vc["num_hidden_layers"]
    assert r.vision_position_embeddings == 2 * vc["position_embedding_size"]
    embed = 3 * vc["patch_size"] ** 2 * vh + 2 * vc["position_embedding_size"] * vh
    assert r.params_vision_embed == embed and r.params_vision_connector == vh * tc["hidden_size"]
    assert r.params_vision == d * (4 * vh * vh + 3 * vh * vi + 4 * vh) + embed + vh * tc["hidden_size"]


def test_qwen3_vl_deepstack_mergers_and_position_table(shipped: pd.DataFrame, configs_dir: Path) -> None:
    raw = _raw(configs_dir, "Qwen/Qwen3-VL-8B-Instruct")
    vc = raw["vision_config"]
    r = row(shipped, "Qwen/Qwen3-VL-8B-Instruct")
    assert r.vision_deepstack_layers == len(vc["deepstack_visual_indexes"]) == 3
    assert r.vision_position_embeddings == vc["num_position_embeddings"] == 2304
    vh, m, out = vc["hidden_size"], vc["spatial_merge_size"], vc["out_hidden_size"]
    mi = vh * m * m
    assert r.params_vision_connector == 4 * (mi * mi + mi * out)  # final merger + 3 deepstack mergers
    assert r.params_vision_embed == 3 * vc["temporal_patch_size"] * vc["patch_size"] ** 2 * vh + 2304 * vh
    q35 = row(shipped, "Qwen/Qwen3.5-9B")  # same tower, deepstack_visual_indexes empty
    assert q35.vision_deepstack_layers == 0 and q35.vision_position_embeddings == 2304


def test_attention_output_gate(shipped: pd.DataFrame, configs_dir: Path) -> None:
    tc = _raw(configs_dir, "Qwen/Qwen3.5-9B")["text_config"]
    assert tc["attn_output_gate"] is True and row(shipped, "Qwen/Qwen3.5-9B").attn_output_gate
    # Qwen3-Next has no key: its attention always gates (transformers / vLLM default True)
    assert "attn_output_gate" not in _raw(configs_dir, "Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert row(shipped, "Qwen/Qwen3-Next-80B-A3B-Instruct").attn_output_gate
    assert not row(shipped, "Qwen/Qwen3-8B").attn_output_gate


def test_idefics3_connector(shipped: pd.DataFrame, configs_dir: Path) -> None:
    raw = _raw(configs_dir, "ibm-granite/granite-docling-258M")
    vc, s = raw["vision_config"], raw["scale_factor"]
    r = row(shipped, "ibm-granite/granite-docling-258M")
    assert r.params_vision_connector == vc["hidden_size"] * s * s * raw["text_config"]["hidden_size"]
    assert r.vision_position_embeddings == (vc["image_size"] // vc["patch_size"]) ** 2 == 1024


# --- shapes added for the memory model's last vLLM 0.33.0 misses ---------------------------------------


def test_laguna_per_layer_heads_and_head_gate(shipped: pd.DataFrame, configs_dir: Path) -> None:
    """Laguna's num_attention_heads_per_layer (48 on full-attention layers, 64 / 72 on sliding ones) is
    averaged for the q / o widths; gating true / "per-head" is a hidden -> heads g_proj."""
    for mid in ("poolside/Laguna-XS.2-FP8", "poolside/Laguna-S-2.1-FP8"):
        raw = _raw(configs_dir, mid)
        per = raw["num_attention_heads_per_layer"]
        r = row(shipped, mid)
        assert r.num_attention_heads == raw["num_attention_heads"]
        assert r.num_attention_heads_mean == pytest.approx(sum(per) / len(per))
        assert r.num_attention_heads_mean > r.num_attention_heads
        assert bool(r.attn_head_gate) and not bool(r.attn_output_gate)
    assert row(shipped, "Qwen/Qwen3-8B").num_attention_heads_mean == row(shipped, "Qwen/Qwen3-8B").num_attention_heads
    assert not bool(row(shipped, "Qwen/Qwen3-8B").attn_head_gate)


def test_laguna_per_layer_heads_bad_list_is_ignored_with_a_note() -> None:
    cfg = {"model_type": "laguna", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "gating": "sometimes",
           "num_attention_heads_per_layer": [4, "x"]}
    rec = normalize_config(cfg, "a/b")
    assert rec["status"] == "ok" and rec["num_attention_heads_mean"] == 4.0
    assert "num_attention_heads_per_layer ignored" in rec["parse_notes"]
    assert "gating=" in rec["parse_notes"] and not rec["attn_head_gate"]


def test_minimax_m3_index_branch_and_patch_merger(shipped: pd.DataFrame, configs_dir: Path) -> None:
    """MiniMax-M3's sparse_attention_config (index heads = KV heads, one per non-zero
    sparse_attention_freq layer) and its projector + patch merger connector."""
    raw = _raw(configs_dir, "nvidia/MiniMax-M3-NVFP4")
    sac = raw["text_config"]["sparse_attention_config"]
    r = row(shipped, "nvidia/MiniMax-M3-NVFP4")
    assert r.index_n_heads == sac["sparse_num_index_heads"] == r.num_key_value_heads
    assert r.index_head_dim == sac["sparse_index_dim"]
    assert r.num_indexer_layers == sum(1 for x in sac["sparse_attention_freq"] if x) == 57
    H, mid, vh = r.hidden_size, raw["projector_hidden_size"], r.vision_hidden_size
    sms = raw["img_token_compression_config"]["spatial_merge_size"]
    assert r.params_vision_connector == (vh * mid + mid + mid * H + H) + (H * sms * sms * mid + mid + mid * H + H)


def test_quantize_config_sidecar_is_read_when_config_json_has_none(shipped: pd.DataFrame) -> None:
    """The verbatim AutoGPTQ quantize_config.json in data/sidecars/ (group_size -1) reaches the row;
    -1 stays -1 (per-channel)."""
    r = row(shipped, "TheBloke/Wizard-Vicuna-30B-Uncensored-GPTQ")
    assert r.quant_method == "gptq" and r.quant_bits == 4 and r.quant_group_size == -1
    assert "quantization read from quantize_config.json" in r.parse_notes
    assert "per-channel" in r.parse_notes
    # a config.json's own group_size -1 is kept too
    assert row(shipped, "TheBloke/Genz-70b-GPTQ").quant_group_size == -1


def test_quant_sidecars_bad_input_gives_notes_not_crashes() -> None:
    cfg = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "vocab_size": 100, "intermediate_size": 128}
    rec = normalize_config(cfg, "a/b-GPTQ", sidecars={"quantize_config.json": b"{not json", "evil.json": "{}"})
    assert rec["status"] == "ok"
    assert "quantize_config.json unreadable" in rec["parse_notes"] and "evil.json" in rec["parse_notes"]
    assert rec["quant_method"] == "gptq" and rec["quant_group_size"] is None  # name inference still applies
    rec = normalize_config(cfg, "a/b", sidecars={"quant_config.json": '{"w_bit": 4, "q_group_size": 64}'})
    assert (rec["quant_method"], rec["quant_bits"], rec["quant_group_size"]) == ("awq", 4, 64)
    rec = normalize_config(cfg, "a/b", sidecars={"quantize_config.json": "[1, 2]"})
    assert "not a JSON object" in rec["parse_notes"] and not rec["is_quantized"]
    rec = normalize_config(cfg, "a/b", sidecars={"quantize_config.json": "x" * (2 << 20)})
    assert "larger than" in rec["parse_notes"]
    own = {**cfg, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}
    rec = normalize_config(own, "a/b", sidecars={"quantize_config.json": '{"bits": 8, "group_size": -1}'})
    assert (rec["quant_method"], rec["quant_bits"], rec["quant_group_size"]) == ("awq", 4, 128)
    assert "quantize_config.json ignored" in rec["parse_notes"]


def test_build_catalog_reads_sidecars_from_a_folder(tmp_path: Path, configs_dir: Path) -> None:
    cfgs = tmp_path / "configs"
    cfgs.mkdir()
    src = configs_dir / "TheBloke--Wizard-Vicuna-30B-Uncensored-GPTQ.json"
    (cfgs / src.name).write_bytes(src.read_bytes())
    side = tmp_path / "side" / "TheBloke--Wizard-Vicuna-30B-Uncensored-GPTQ"
    side.mkdir(parents=True)
    (side / "quantize_config.json").write_text('{"bits": 4, "group_size": 32}')
    with_side = build_catalog(cfgs, sidecars=tmp_path / "side")
    without = build_catalog(cfgs)
    assert with_side.iloc[0].quant_group_size == 32
    assert pd.isna(without.iloc[0].quant_group_size)
