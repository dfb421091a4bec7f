"""The normalizer against transformers' own config classes (transformers is a test dependency only).

* Every real config in ../shared/hub-configs whose model_type transformers knows is loaded into
  transformers' *own* config class from the plain dict (``AutoConfig.for_model``: no Hub access, no
  remote code, ``trust_remote_code`` never set) and its text config's shapes must equal our row.
* The generated snapshot ``dashboard/catalog/tf_snapshot.py`` must equal what the installed transformers
  says (regenerate with ``python -m dashboard.catalog aliases``).
* The alias path through transformers' ``attribute_map`` works from the snapshot without importing
  transformers, and live for a type the snapshot lacks.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from dashboard import catalog
from dashboard.catalog import tf_info
from dashboard.catalog import load_catalog, normalize_config

transformers = pytest.importorskip("transformers")

FIELDS = ("num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size", "num_hidden_layers",
          "vocab_size", "intermediate_size", "max_position_embeddings", "tie_word_embeddings")

#: Deliberate differences, by (model_type, field): our column means something more specific.
EXEMPT = {
    # schema: intermediate_size of an MoE model is its dense layers' width; transformers' is the expert width
    ("llama4", "intermediate_size"),
    ("minimax_m3_vl", "intermediate_size"),
    # schema: the MLP's real width; LFM2 keeps the pre-adjustment value that Lfm2MLP shrinks by 2/3
    ("lfm2", "intermediate_size"),
    # the original LLaVA format (liuhaotian) keeps its language model at the top level, while
    # LlavaConfig reads only text_config: transformers' value is LlamaConfig's default (2048)
    ("llava", "max_position_embeddings"),
    # Falcon configs declare no context length: transformers fills its class default (2048), the
    # catalog keeps NA ("the config does not say")
    ("falcon", "max_position_embeddings"),
}


@pytest.fixture(scope="module")
def configs_dir(shared_dir: Path) -> Path:
    return shared_dir / "hub-configs"


def test_real_configs_agree_with_transformers_config_classes(configs_dir: Path) -> None:
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cat = load_catalog().set_index("model_id")
    checked, problems = 0, []
    logging.disable(logging.WARNING)
    try:
        for f in sorted(configs_dir.glob("*.json")):
            raw = json.loads(f.read_text(), parse_constant=float)
            mt = raw.get("model_type")
            if mt not in CONFIG_MAPPING:
                continue
            mid = catalog.model_id_from_filename(f)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg = AutoConfig.for_model(**raw)
            text = cfg.get_text_config(decoder=True)
            r = cat.loc[mid]
            checked += 1
            for k in FIELDS:
                if (mt, k) in EXEMPT:
                    continue
                if k == "head_dim" and r["is_mla"]:
                    continue  # schema: MLA head_dim = qk_nope + qk_rope (transformers maps head_dim to the rope part)
                if k == "tie_word_embeddings" and r["text_config_key"]:
                    continue  # the top-level flag governs composite models; the nested class default does not
                try:
                    v = getattr(text, k, None)
                except Exception:  # per-layer heterogeneous attributes (gemma4) refuse a global read
                    continue
                if v is None:
                    continue
                if pd.isna(r[k]) or r[k] != v:
                    problems.append(f"{mid}.{k}: ours={r[k]!r} transformers={v!r}")
    finally:
        logging.disable(logging.NOTSET)
    assert checked >= 100
    assert not problems, "\n".join(problems)


def test_snapshot_is_current_with_installed_transformers() -> None:
    from dashboard.catalog.tf_snapshot import TRANSFORMERS_CONFIG_INFO, TRANSFORMERS_VERSION

    version, live = catalog.transformers_snapshot()
    assert version == TRANSFORMERS_VERSION, "regenerate: python -m dashboard.catalog aliases"
    assert live == TRANSFORMERS_CONFIG_INFO


def test_snapshot_covers_every_model_type_of_the_folder(configs_dir: Path) -> None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from dashboard.catalog.tf_snapshot import TRANSFORMERS_CONFIG_INFO

    for f in configs_dir.glob("*.json"):
        mt = json.loads(f.read_text(), parse_constant=float).get("model_type")
        assert (mt in CONFIG_MAPPING) == (mt in TRANSFORMERS_CONFIG_INFO), mt
        if mt in TRANSFORMERS_CONFIG_INFO:
            assert TRANSFORMERS_CONFIG_INFO[mt]["tie_word_embeddings"] == getattr(CONFIG_MAPPING[mt], "tie_word_embeddings", None)


def test_attribute_map_alias_from_snapshot_without_importing_transformers() -> None:
    # moonshine stores its heads as decoder_num_attention_heads: only transformers' attribute_map knows
    code = (
        "import sys, json\n"
        "from dashboard.catalog import normalize_config\n"
        "r = normalize_config({'model_type': 'moonshine', 'hidden_size': 288, 'decoder_num_hidden_layers': 6,"
        " 'decoder_num_attention_heads': 8, 'decoder_num_key_value_heads': 8, 'vocab_size': 32768}, 'UsefulSensors/moonshine-tiny')\n"
        "print(json.dumps([r['num_attention_heads'], r['num_key_value_heads'], r['num_hidden_layers'], r['status'],"
        " 'transformers' in sys.modules, r['parse_notes']]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    heads, kv, layers, status, imported, notes = json.loads(out)
    assert (heads, kv, layers, status) == (8, 8, 6, "ok")
    assert not imported
    assert "transformers attribute_map" in notes


def test_live_transformers_fallback_for_type_missing_from_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tf_info, "snapshot_info", lambda: {})
    tf_info.live_type_info.cache_clear()
    tf_info.live_would_differ.cache_clear()
    monkeypatch.setattr(tf_info, "live_would_differ", lambda: True)
    try:
        r = normalize_config({"model_type": "moonshine", "hidden_size": 288, "decoder_num_hidden_layers": 6,
                              "decoder_num_attention_heads": 8, "vocab_size": 32768}, "UsefulSensors/moonshine-tiny")
    finally:
        tf_info.live_type_info.cache_clear()
    assert r["num_attention_heads"] == 8 and r["num_hidden_layers"] == 6
    assert "transformers attribute_map" in r["parse_notes"]


def test_no_transformers_env_disables_live_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_PLANNER_NO_TRANSFORMERS", "1")
    tf_info.live_would_differ.cache_clear()
    tf_info.config_mapping.cache_clear()
    try:
        assert tf_info.live_would_differ() is False
        assert tf_info.config_mapping() is None
    finally:
        tf_info.live_would_differ.cache_clear()
        tf_info.config_mapping.cache_clear()


def test_sub_configs_from_transformers_find_an_unusual_text_key() -> None:
    # ColQwen2 nests a whole Qwen2-VL config under vlm_config, a key our static list does not have:
    # the model type's declared sub_configs (from transformers) lead to it
    text = {"model_type": "qwen2_vl_text", "hidden_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 12,
            "num_key_value_heads": 2, "vocab_size": 151936}
    r = normalize_config({"model_type": "colqwen2", "vlm_config": {"model_type": "qwen2_vl", "text_config": text,
                          "vision_config": {"depth": 32, "embed_dim": 1280, "num_heads": 16}}}, "vidore/colqwen2-v1.0-hf")
    assert r["text_config_key"] == "vlm_config.text_config"
    assert (r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"]) == (12, 2, 128)
    assert "vlm_config" not in catalog.TEXT_CONFIG_KEYS
