"""Weight bytes per part from the catalog's quantization coverage (``quant_<part>_fraction`` / ``_format``).

Each part's bytes are its quantized share at its format's bytes per element (scales included, as vLLM
0.33.0 allocates them) plus the rest in 16-bit; a record without coverage columns keeps the
checkpoint-wide rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import memory
from dashboard.catalog import load_catalog
from dashboard.quant_coverage import PARTS


@pytest.fixture(scope="module")
def cat() -> pd.DataFrame:
    return load_catalog().set_index("model_id", drop=False)


def _without_coverage(r: pd.Series) -> pd.Series:
    r = r.copy()
    for p in PARTS:
        r[f"quant_{p}_fraction"] = np.nan
        r[f"quant_{p}_format"] = None
    return r


@pytest.mark.parametrize("model_id", ["Qwen/Qwen3-32B-FP8", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-120b",
                                      "Qwen/Qwen3-30B-A3B-FP8"])
def test_uniform_checkpoints_agree_with_the_checkpoint_wide_rule(cat: pd.DataFrame, model_id: str) -> None:
    # every linear part quantized alike (gpt-oss: the experts only): the coverage columns change nothing
    r = cat.loc[model_id]
    for tp in (1, 4, 16):
        a = memory.weight_bytes_per_rank(r, "vllm", tp)
        b = memory.weight_bytes_per_rank(_without_coverage(r), "vllm", tp)
        assert a == pytest.approx(b, rel=1e-12), (model_id, tp)


def test_part_share_moves_its_bytes_between_formats(cat: pd.DataFrame) -> None:
    r = cat.loc["nvidia/MiniMax-M2.5-NVFP4"].copy()
    assert r.quant_attention_fraction == 0.0 and r.quant_experts_format == "nvfp4"
    c = memory.model_columns(r)
    parts = memory.param_parts(c)
    attn = float(parts["attn_sharded"][0] + parts["kv_proj"][0])  # TP 1: no KV replication
    base = memory.weight_bytes_per_rank(r, "vllm", 1)
    r["quant_attention_fraction"], r["quant_attention_format"] = 0.5, "fp8"
    half = memory.weight_bytes_per_rank(r, "vllm", 1)
    assert base - half == pytest.approx(attn * 0.5 * (2.0 - 1.0), rel=1e-9)
    r["quant_attention_fraction"], r["quant_attention_format"] = 1.0, "nvfp4"
    full = memory.weight_bytes_per_rank(r, "vllm", 1)
    assert base - full == pytest.approx(attn * (2.0 - (0.5 + 1 / 16)), rel=1e-9)


def test_format_bytes() -> None:
    c = {"quant_group_size": np.array([32.0]), "weight_block_n": np.array([128.0]), "weight_block_k": np.array([128.0]),
         "hidden_size": np.array([4096.0])}
    base = np.array([2.0])
    got = {f: float(memory.format_bytes(np.array([f], dtype=object), c, base)[0])
           for f in ("nvfp4", "mxfp4", "mxfp8", "fp8", "fp8-channel", "fp8-block", "int4", "int8")}
    assert got == pytest.approx({"nvfp4": 0.5625, "mxfp4": 0.53125, "mxfp8": 1.03125, "fp8": 1.0,
                                 "fp8-channel": 1 + 4 / 4096, "fp8-block": 1 + 4 / 16384, "int4": 0.5 + 2 / 32,
                                 "int8": 1 + 2 / 32})
    assert np.isnan(memory.format_bytes(np.array(["bogus"], dtype=object), c, base)[0])


def test_lm_head_and_unquantized_experts(cat: pd.DataFrame) -> None:
    # Qwen3.6-27B: the LM head is W4A16 NVFP4 (quantized_layers names lm_head); RedHat's DeepSeek-V4
    # keeps the routed experts bf16 (no target reaches their unfused names)
    q = cat.loc["nvidia/Qwen3.6-27B-NVFP4"]
    r = q.copy()
    r["quant_lm_head_fraction"] = 0.0
    vp = -(-int(q.vocab_size) // 64) * 64
    assert memory.weight_bytes_per_rank(r, "vllm", 1) - memory.weight_bytes_per_rank(q, "vllm", 1) == pytest.approx(
        vp * q.hidden_size * (2.0 - 0.5625), rel=1e-6)
    d = cat.loc["RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8"]
    assert d.quant_experts_fraction == 0.0
    e = d.copy()
    e["quant_experts_fraction"], e["quant_experts_format"] = 1.0, "nvfp4"
    assert memory.weight_bytes_per_rank(e, "vllm", 1) < 0.4 * memory.weight_bytes_per_rank(d, "vllm", 1)


def test_explicit_weight_dtype_overrides_coverage(cat: pd.DataFrame) -> None:
    r = cat.loc["nvidia/GLM-5.1-NVFP4"]
    a = memory.weight_bytes_per_rank(r, "vllm", 8, weight_dtype="fp8")
    b = memory.weight_bytes_per_rank(_without_coverage(r), "vllm", 8, weight_dtype="fp8")
    assert a == pytest.approx(b, rel=1e-12)
