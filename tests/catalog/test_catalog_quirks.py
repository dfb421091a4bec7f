"""The per-family quirk registry (:mod:`dashboard.catalog.quirks`): lookup rules, and the registry's own
consistency (an exact entry that a prefix entry also matches carries the prefix's settings)."""

from __future__ import annotations

import dataclasses

import pytest

from dashboard.catalog import normalize_config
from dashboard.catalog.quirks import FAMILIES, NO_QUIRKS, Quirks, quirks_of


def test_exact_entry_wins_then_prefix_then_nothing() -> None:
    assert quirks_of("opt").learned_position_offset == 2 and quirks_of("opt").bias_key == "enable_bias"
    assert quirks_of("lfm2_moe").short_conv_blocks and quirks_of("lfm2_moe").mlp_width is not None
    assert quirks_of("gpt2_custom").gated_mlp is False and quirks_of("gpt2_custom").linear_bias is False
    assert quirks_of("llama") is NO_QUIRKS and quirks_of(None) is NO_QUIRKS and quirks_of("") is NO_QUIRKS
    assert quirks_of("Mamba2") is NO_QUIRKS, "compared as given: callers lower-case the text model type"


@pytest.mark.parametrize("key", [k for k in FAMILIES if not k.endswith("*")])
def test_exact_entry_carries_the_settings_of_a_prefix_it_matches(key: str) -> None:
    exact = FAMILIES[key]
    for pk, pq in FAMILIES.items():
        if pk.endswith("*") and key.startswith(pk[:-1]):
            for f in dataclasses.fields(Quirks):
                default = getattr(NO_QUIRKS, f.name)
                if getattr(pq, f.name) != default:
                    assert getattr(exact, f.name) == getattr(pq, f.name), (key, pk, f.name)


def test_prefixes_do_not_overlap() -> None:
    prefixes = [k[:-1] for k in FAMILIES if k.endswith("*")]
    for a in prefixes:
        for b in prefixes:
            assert a == b or not a.startswith(b), (a, b)


def test_registry_drives_the_normalizer() -> None:
    base = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16, "vocab_size": 1000,
            "intermediate_size": 4096}
    qwen = normalize_config({**base, "model_type": "qwen"}, "a/qwen")
    assert qwen["intermediate_size"] == 2048 and "qwen (v1)" in qwen["parse_notes"]
    opt = normalize_config({**base, "model_type": "opt", "max_position_embeddings": 2048}, "a/opt")
    assert opt["learned_position_embeddings"] == 2050 and opt["linear_bias"] is True and opt["mlp_gated"] is False
    nobias = normalize_config({**base, "model_type": "opt", "enable_bias": False}, "a/opt2")
    assert nobias["linear_bias"] is False
    gemma2 = normalize_config({**base, "model_type": "gemma2", "sliding_window": 4096}, "a/g2")
    assert (gemma2["num_sliding_window_layers"], gemma2["num_full_attention_layers"]) == (2, 2)
    assert normalize_config({**base, "model_type": "qwen3_next"}, "a/q3n")["attn_output_gate"] is True
    assert normalize_config({**base, "model_type": "llama"}, "a/l")["attn_output_gate"] is False
