"""Which parts of a checkpoint vLLM 0.33.0 quantizes (catalog ``quant_<part>_fraction`` / ``_format``).

Pinned values are read off each config's ``quantization_config`` by hand (the comment says which list
entries decide), not from the normalizer's output; ``tests/memory/test_memory_conformance.py`` checks the
resulting bytes against vLLM's own allocation. Also: the backtracking-free pattern matcher
(:mod:`dashboard.safe_match`) against :mod:`re` / :mod:`fnmatch`, and hostile lists.
"""

from __future__ import annotations

import fnmatch
import random
import re
import time

import pandas as pd
import pytest

from dashboard import catalog
from dashboard.quant_coverage import FORMATS, PARTS
from dashboard.safe_match import PatternError, compile_glob, compile_regex, glob_match


def _moe_config(layers: int = 4, **q) -> dict:
    """A small MiniMax-M2-style MoE config (vLLM names: model.layers.{i}.self_attn.qkv_proj / o_proj,
    block_sparse_moe.experts with w1 / w3 / w2) with a ModelOpt NVFP4 quantization_config."""
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "group_size": 16},
                                        "input_activations": {"num_bits": 4, "type": "float", "group_size": 16}}},
          "ignore": ["lm_head"]}
    qc.update(q)
    return {"model_type": "minimax_m2", "architectures": ["MiniMaxM2ForCausalLM"], "hidden_size": 1024,
            "num_hidden_layers": layers, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64,
            "intermediate_size": 512, "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
            "tie_word_embeddings": False, "quantization_config": qc}

# model_id -> {part: (fraction, format)}; parts not named must be NA (absent from the model)
PINNED: dict[str, dict[str, tuple[float, str | None]]] = {
    # ModelOpt NVFP4, ignore: lm_head, model.layers.0* / 1.* / 2.* (the 3 dense layers), every
    # model.layers.N.self_attn*, every model.layers.N.mlp.shared_experts*
    "nvidia/GLM-5.1-NVFP4": dict(attention=(0.0, None), dense_mlp=(0.0, None), shared_experts=(0.0, None),
                                 experts=(1.0, "nvfp4"), lm_head=(0.0, None), router=(0.0, None)),
    # ignore: language_model.lm_head, every language_model.model.layers.N.self_attn*, vision_tower*, mm_projector*
    "nvidia/Kimi-K2.5-NVFP4": dict(attention=(0.0, None), dense_mlp=(1.0, "nvfp4"), shared_experts=(1.0, "nvfp4"),
                                   experts=(1.0, "nvfp4"), lm_head=(0.0, None), router=(0.0, None), vision=(0.0, None)),
    # compressed-tensors int4 group 32 on "Linear"; ignore lm_head, re:.*self_attn.*, re:.*shared_experts.*,
    # re:.*mlp\.(gate|up|gate_up|down)_proj.* (the dense layer); MoonViT never gets a compressed-tensors config
    "moonshotai/Kimi-K2.5": dict(attention=(0.0, None), dense_mlp=(0.0, None), shared_experts=(0.0, None),
                                 experts=(1.0, "int4"), lm_head=(0.0, None), router=(0.0, None), vision=(0.0, None)),
    # ignore: lm_head, model.layers.N.self_attn*, model.layers.N.block_sparse_moe.gate
    "nvidia/MiniMax-M2.5-NVFP4": dict(attention=(0.0, None), experts=(1.0, "nvfp4"), lm_head=(0.0, None),
                                      router=(0.0, None)),
    # fp8 weight_block_size [128, 128]; modules_to_not_convert gate / e_score_correction_bias / lm_head
    "MiniMaxAI/MiniMax-M2.5": dict(attention=(1.0, "fp8-block"), experts=(1.0, "fp8-block"), lm_head=(0.0, None),
                                   router=(0.0, None)),
    # MIXED_PRECISION: self_attn.{q,k,v,o}_proj, mlp.*_proj, shared_experts.*_proj MXFP8; experts.N.w1/w2/w3 NVFP4
    "nvidia/MiniMax-M3-NVFP4": dict(attention=(1.0, "mxfp8"), dense_mlp=(1.0, "mxfp8"), shared_experts=(1.0, "mxfp8"),
                                    experts=(1.0, "nvfp4"), lm_head=(0.0, None), router=(0.0, None), vision=(0.0, None)),
    # ignore: lm_head, every layer's linear_attn* / self_attn* / mlp.shared_expert*, model.visual*
    "nvidia/Qwen3.5-122B-A10B-NVFP4": dict(attention=(0.0, None), linear_attention=(0.0, None),
                                           shared_experts=(0.0, None), experts=(1.0, "nvfp4"), lm_head=(0.0, None),
                                           router=(0.0, None), vision=(0.0, None)),
    # MIXED_PRECISION: linear_attn.in_proj_qkv / in_proj_z / out_proj and self_attn.* FP8, mlp.* and lm_head W4A16_NVFP4
    "nvidia/Qwen3.6-27B-NVFP4": dict(attention=(1.0, "fp8"), linear_attention=(1.0, "fp8"), dense_mlp=(1.0, "nvfp4"),
                                     lm_head=(1.0, "nvfp4"), vision=(0.0, None)),
    # fp8 block [128, 128] + expert_dtype "fp4": routed experts MXFP4
    "deepseek-ai/DeepSeek-V4-Flash": dict(attention=(1.0, "fp8-block"), shared_experts=(1.0, "fp8-block"),
                                          experts=(1.0, "mxfp4"), lm_head=(0.0, None), router=(0.0, None)),
    # same + moe_quant_algo NVFP4 (ignore globs *.attn.*, *.ffn.shared_experts.*, head, mtp.* spare the experts)
    "nvidia/DeepSeek-V4-Flash-NVFP4": dict(attention=(1.0, "fp8-block"), shared_experts=(1.0, "fp8-block"),
                                           experts=(1.0, "nvfp4"), lm_head=(0.0, None), router=(0.0, None)),
    # compressed-tensors: re:.*attn.*(fused_wqa_wkv|wq_b|wo_a|wo_b)$ FP8 block, re:.*ffn.*(gate|up|down)_proj$
    # NVFP4: matches the shared experts' gate_up_proj / down_proj, not the experts' unfused w1 / w3 / w2
    "RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8": dict(attention=(1.0, "fp8-block"), shared_experts=(1.0, "nvfp4"),
                                                 experts=(0.0, None), lm_head=(0.0, None), router=(0.0, None)),
    # "Linear" FP8 channel; ignore: every language_model.model.layers.N.self_attn.{q,k,v,o}_proj and
    # feed_forward.router, language_model.lm_head, the vision model (built without quant_config anyway)
    "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": dict(
        attention=(0.0, None), shared_experts=(1.0, "fp8-channel"), experts=(1.0, "fp8-channel"),
        lm_head=(0.0, None), router=(0.0, None), vision=(0.0, None)),
    # ignore: lm_head, model.layers.0.mlp.{gate,up,down}_proj, re: self_attn q/k/v/o/g_proj, mlp.gate,
    # mlp.shared_expert.{gate,up,down}_proj
    "poolside/Laguna-S-2.1-FP8": dict(attention=(0.0, None), dense_mlp=(0.0, None), shared_experts=(0.0, None),
                                      experts=(1.0, "fp8-block"), lm_head=(0.0, None), router=(0.0, None)),
    # ignore: lm_head, re: self_attn q/k/v/o/g_proj, mlp.gate (MLPs and shared experts stay FP8)
    "poolside/Laguna-XS.2-FP8": dict(attention=(0.0, None), dense_mlp=(1.0, "fp8-block"),
                                     shared_experts=(1.0, "fp8-block"), experts=(1.0, "fp8-block"),
                                     lm_head=(0.0, None), router=(0.0, None)),
    # compressed-tensors MXFP4 on "Linear"; ignore re:.*self_attn.* (MLA and KDA), re:.*shared_experts.*,
    # the dense mlp, lm_head, vision_tower, mm_projector
    "moonshotai/Kimi-K3": dict(attention=(0.0, None), linear_attention=(0.0, None), dense_mlp=(0.0, None),
                               shared_experts=(0.0, None), experts=(1.0, "mxfp4"), lm_head=(0.0, None),
                               router=(0.0, None), vision=(0.0, None)),
    # ignore: every layer's mlp* (the dense MLP beside the experts), router*, self_attn*, the vision tower
    "nvidia/Gemma-4-26B-A4B-NVFP4": dict(attention=(0.0, None), dense_mlp=(0.0, None), experts=(1.0, "nvfp4"),
                                         router=(0.0, None), vision=(0.0, None)),
    "nvidia/Gemma-4-31B-IT-NVFP4": dict(attention=(0.0, None), dense_mlp=(1.0, "nvfp4"), vision=(0.0, None)),
    # mxfp4: routed experts only (vLLM's Mxfp4Config leaves every linear layer unquantized)
    "openai/gpt-oss-120b": dict(attention=(0.0, None), experts=(1.0, "mxfp4"), lm_head=(0.0, None),
                                router=(0.0, None)),
    # not quantized: every column NA
    "meta-llama/Llama-3.1-8B-Instruct": {},
}


@pytest.fixture(scope="module")
def shipped() -> pd.DataFrame:
    return catalog.load_catalog().set_index("model_id", drop=False)


@pytest.mark.parametrize("model_id", sorted(PINNED))
def test_pinned_quant_coverage(shipped: pd.DataFrame, model_id: str) -> None:
    r = shipped.loc[model_id]
    want = PINNED[model_id]
    for part in PARTS:
        frac, fmt = r[f"quant_{part}_fraction"], r[f"quant_{part}_format"]
        if part not in want:
            assert pd.isna(frac) and pd.isna(fmt), f"{model_id} {part}: {frac!r} {fmt!r}, want NA"
            continue
        wf, wfmt = want[part]
        assert frac == pytest.approx(wf), f"{model_id} {part} fraction {frac!r}, want {wf}"
        assert (pd.isna(fmt) if wfmt is None else fmt == wfmt), f"{model_id} {part} format {fmt!r}, want {wfmt!r}"


def test_formats_are_documented(shipped: pd.DataFrame) -> None:
    for part in PARTS:
        used = set(shipped[f"quant_{part}_format"].dropna())
        assert used <= set(FORMATS), (part, used - set(FORMATS))
        f = shipped[f"quant_{part}_fraction"].dropna()
        assert ((f >= 0) & (f <= 1)).all(), part


def test_partial_shares_from_per_layer_lists() -> None:
    # a ModelOpt ignore list naming the attention of 2 of 4 layers and the experts of one
    cfg = _moe_config(ignore=["lm_head", "model.layers.0.self_attn*", "model.layers.3.self_attn*",
                              "model.layers.2.block_sparse_moe.experts*"])
    r = catalog.normalize_config(cfg, "test/partial")
    assert r["quant_attention_fraction"] == 0.5 and r["quant_attention_format"] == "nvfp4"
    assert r["quant_experts_fraction"] == 0.75 and r["quant_experts_format"] == "nvfp4"
    assert r["quant_lm_head_fraction"] == 0.0


# --- hostile input --------------------------------------------------------------------------------
def _base() -> dict:
    return _moe_config()


def _ct_base() -> dict:
    cfg = _moe_config()
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "float-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}}},
        "ignore": ["lm_head"]}
    return cfg


@pytest.mark.parametrize("ignore,note", [
    (["re:(a+)+$", "re:(.*a){20}$", "re:" + "(x|x)*" * 30 + "y"], None),   # exponential for a backtracking engine
    (["re:(?=model).*"], "not evaluated"),                                  # look-ahead: unsupported, noted
    ("not a list", "not a list"),
    ([1, None, {"x": 1}, "lm_head"], "not strings"),
    (["x" * 10_000], "not strings or longer"),
])
@pytest.mark.parametrize("make", [_base, _ct_base], ids=["modelopt", "compressed-tensors"])
def test_hostile_ignore_lists_never_crash_or_hang(make, ignore, note) -> None:
    cfg = make()
    cfg["quantization_config"]["ignore"] = ignore
    t = time.perf_counter()
    r = catalog.normalize_config(cfg, "hostile/ignore")
    assert time.perf_counter() - t < 5.0
    assert r["status"] == "ok"
    if note == "not evaluated" and make is _base:
        note = None  # ModelOpt lists are wildcards: "re:..." is a plain name there
    if note:
        assert note in r["parse_notes"], r["parse_notes"]
    if isinstance(ignore, list):
        assert r["quant_experts_fraction"] == 1.0


def test_regex_ignore_entries_are_matched_on_vllm_names() -> None:
    cfg = _ct_base()
    cfg["quantization_config"]["ignore"] = ["lm_head", r"re:.*\.self_attn\.(q|k|v)_proj$", r"re:.*layers\.[02]\.self_attn\.o_proj$"]
    r = catalog.normalize_config(cfg, "test/regex")
    # qkv_proj ignored when every shard is (compressed_tensors/utils.py should_ignore_layer); o_proj in 2 of 4 layers
    assert r["quant_attention_fraction"] == pytest.approx((0 + 2) / 8) and r["quant_attention_format"] == "fp8-block"


def test_huge_lists_are_capped() -> None:
    cfg = _moe_config(ignore=[f"model.layers.{i}.nothing" for i in range(150_000)])
    t = time.perf_counter()
    r = catalog.normalize_config(cfg, "hostile/huge")
    assert time.perf_counter() - t < 20.0
    assert "only the first 100000" in r["parse_notes"]
    assert r["quant_experts_fraction"] == 1.0


@pytest.mark.parametrize("q,note", [
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": ["x"]}, "quantized_layers"),
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {"a": 1, 2: {}}}, "quantized_layers"),
    ({"quant_method": "modelopt", "quant_algo": 7}, "quant_algo missing"),
    ({"quant_method": "modelopt", "quant_algo": "W2_MAGIC", "ignore": ["lm_head"]}, "not modelled"),
    ({"quant_method": "compressed-tensors", "config_groups": [1, 2]}, "without config_groups"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": "Linear", "weights": {}}}}, "not a list"),
    ({"quant_method": "fp8", "modules_to_not_convert": {"a": 1}}, "not a list"),
])
def test_malformed_quantization_configs_give_na_and_a_note(q, note) -> None:
    cfg = _base()
    cfg["quantization_config"] = q
    r = catalog.normalize_config(cfg, "hostile/q")
    assert r["status"] == "ok"
    assert note in r["parse_notes"], r["parse_notes"]
    assert all(r[f"quant_{p}_fraction"] is None for p in PARTS)


def test_unknown_architecture_with_lists_is_not_guessed() -> None:
    cfg = _base()
    cfg["model_type"] = "brand_new_arch"
    cfg["quantization_config"]["ignore"] = ["lm_head", "model.layers.0.self_attn*"]
    r = catalog.normalize_config(cfg, "test/unknown")
    assert all(r[f"quant_{p}_fraction"] is None for p in PARTS)
    assert "not modelled" in r["parse_notes"]


# --- the matcher ------------------------------------------------------------------------------------
def _rand_regex(rnd: random.Random, d: int = 0) -> str:
    r = rnd.random()
    if d > 3 or r < 0.3:
        return rnd.choice(["a", "b", "\\.", ".", "[ab]", "[^a]", "c", "^", "$", "\\d", "[0-9]"])
    if r < 0.5:
        return _rand_regex(rnd, d + 1) + _rand_regex(rnd, d + 1)
    if r < 0.6:
        return "(" + _rand_regex(rnd, d + 1) + "|" + _rand_regex(rnd, d + 1) + ")"
    if r < 0.8:
        return "(?:" + _rand_regex(rnd, d + 1) + ")" + rnd.choice(["*", "+", "?", "{1,2}", "{2}", "*?", "{,2}"])
    return _rand_regex(rnd, d + 1) + rnd.choice(["$", ""])


def test_safe_regex_agrees_with_re_match() -> None:
    rnd = random.Random(20260512)
    checked = 0
    for _ in range(3000):
        p = _rand_regex(rnd)
        try:
            sp = compile_regex(p)  # quantified anchors such as (?:^)* are refused
        except PatternError:
            continue
        for _ in range(8):
            name = "".join(rnd.choice("ab.c1") for _ in range(rnd.randint(0, 9)))
            assert sp.match(name) == bool(re.match(p, name)), (p, name)
            checked += 1
    assert checked > 20000


def test_safe_glob_agrees_with_fnmatchcase() -> None:
    rnd = random.Random(7)
    for _ in range(3000):
        p = "".join(rnd.choice(["a", "b", "*", "?", "[ab]", "[!a]", ".", "[a-c]"]) for _ in range(rnd.randint(0, 6)))
        g = compile_glob(p)
        for _ in range(8):
            name = "".join(rnd.choice("ab.c") for _ in range(rnd.randint(0, 9)))
            want = fnmatch.fnmatchcase(name, p)
            assert g.match(name) == want == glob_match(name, p), (p, name)


def test_real_patterns() -> None:
    assert compile_regex(r".*\.self_attn\.q_proj$").match("model.layers.3.self_attn.q_proj")
    assert not compile_regex(r".*mlp\.(gate|up|gate_up|down)_proj.*").match("model.layers.3.mlp.experts.0.gate_proj")
    assert compile_regex(r".*ffn.*(gate|up|down)_proj$").match("model.layers.0.ffn.shared_experts.gate_up_proj")
    assert not compile_regex(r".*ffn.*(gate|up|down)_proj$").match("model.layers.0.ffn.experts.0.w1")
    assert glob_match("model.layers.10.mlp", "model.layers.1*") and not glob_match("model.layers.10.mlp", "model.layers.1.*")


def test_pathological_patterns_are_linear() -> None:
    t = time.perf_counter()
    assert not compile_regex("(a+)+$").match("a" * 20000 + "b")
    assert not compile_regex("(a|aa)*c").match("a" * 20000)
    assert not compile_glob("*a*a*a*a*a*a*a*b").match("a" * 5000)
    assert not glob_match("a" * 5000, "*a*a*a*a*a*a*a*b")
    assert time.perf_counter() - t < 5.0


@pytest.mark.parametrize("pattern", ["(?=x)", r"\1", "a++", r"\b", "(?i)x", "[[:alpha:]]", "a{1000}", "x" * 600, "(", "a)", "[a",
                                     "*a", "a{2,1}"])
def test_unsupported_or_oversized_patterns_raise(pattern: str) -> None:
    with pytest.raises(PatternError):
        compile_regex(pattern)


def test_matching_work_is_bounded() -> None:
    # 4096 layers x 2000 wildcards would be ~1e8 pattern tests: refused up front, with a note
    cfg = _moe_config(layers=4096, ignore=[f"model.layers.{i}.self_attn*" for i in range(0, 4096, 2)])
    t = time.perf_counter()
    r = catalog.normalize_config(cfg, "hostile/work")
    assert time.perf_counter() - t < 5.0
    assert "lists too large to match" in r["parse_notes"]
    assert all(r[f"quant_{p}_fraction"] is None for p in PARTS)
