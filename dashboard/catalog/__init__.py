"""The model catalog: raw Hub ``config.json`` dicts -> one normalized record per model -> DataFrame.

Pure and offline: nothing here touches the network or imports Panel. The columns, their dtypes and their
meaning are fixed by :mod:`dashboard.schema`.

Public API (the contract other modules code against)
----------------------------------------------------
``normalize_config(raw, model_id, *, source="snapshot", sha=None, fetched_at=None) -> dict``
    One record with every column of :data:`dashboard.schema.COLUMN_NAMES`. Never raises on bad input:
    unreadable or unusable configs give ``status`` ``invalid_json`` / ``error`` with ``status_reason``,
    and every record keeps ``parse_notes`` (what was missing, inferred, coerced or contradictory).
``catalog_from_records(records) -> DataFrame``
    Schema dtypes, schema column order.
``build_catalog(folder) -> DataFrame``
    Folder of ``<org>--<name>.json`` files (the layout of ``../shared/hub-configs``), one row per file.
``load_catalog(path=None) -> DataFrame``
    Default: the shipped ``data/catalog.parquet`` next to the package.
``write_catalog(df, path)``
    Atomic: temp file in the same folder + ``os.replace``.
``merge_catalog(old, new) -> DataFrame``
    New rows win by ``model_id``; old rows are never dropped.

How a config is read
--------------------
1. The *text config* is chosen: the first nested dict under :data:`TEXT_CONFIG_KEYS` (``text_config``,
   ``llm_config``, ``language_config``, ``thinker_config`` -> its ``text_config``, ...) that carries
   attention or width fields; else the top level. Fields the text config lacks are taken from the top
   level (noted).
2. Each canonical field is looked up through a static alias table (:data:`ALIASES`: ``n_head``,
   ``n_head_kv``, ``num_kv_heads``, ``multi_query``, ``multi_query_group_num``, ``attn_config.kv_n_heads``,
   ``num_query_groups``, ...). Where the static table finds nothing, the ``attribute_map`` of
   transformers' config class for the ``model_type`` is used (e.g. moonshine's
   ``decoder_num_attention_heads``, T5's ``d_kv``), read from :mod:`dashboard.catalog.tf_snapshot`, a
   snapshot generated from transformers' class attributes (``python -m dashboard.catalog aliases``), so
   the hot path never imports transformers. Only for a model type missing from the snapshot, and only
   when a core field (heads, width, depth, vocab) is missing, is an installed transformers of another
   version consulted live. Config classes are never instantiated, ``trust_remote_code`` is never used,
   nothing is fetched. ``TP_PLANNER_NO_TRANSFORMERS=1`` disables the live lookup. The same snapshot
   gives transformers' per-type default of ``tie_word_embeddings`` when a config omits it, and the
   ``sub_configs`` names used to find unusual nesting keys (``vlm_config``).
3. Values are validated: booleans are not counts, integral floats and numeric strings are coerced (noted),
   zero / negative / non-finite / absurd values are rejected (noted), strings are length-capped.
4. Family conventions the keys alone do not tell (each noted in ``parse_notes``): Qwen v1 (``qwen``)
   ``intermediate_size`` spans gate and up, so the MLP width is half of it; ChatGLM-6B v1
   (``inner_hidden_size``) has a non-gated GELU MLP; LFM2's short-convolution blocks hold no KV cache and
   count in no attention column, and its MLP width follows ``Lfm2MLP``'s 2/3 adjustment; per-layer lists
   (Hunyuan ``moe_topk``) give their most common value; compressed-tensors ``block_structure`` fills the
   block-FP8 columns like ``weight_block_size``; a remote-code config written by ``save_pretrained``
   (it has ``transformers_version``) that omits ``tie_word_embeddings`` is tied, PretrainedConfig's
   default, which ``save_pretrained`` leaves out.

Parameter estimate convention
-----------------------------
``params_total`` counts the embedding, the LM head (unless tied), every decoder layer (attention or
linear-attention/SSM mixer, dense MLP or MoE with router and shared experts, norms) and the vision
tower; it **excludes multi-token-prediction (MTP / nextn) layers**, as the published DeepSeek-V3 figure
(671B, not the 685B of the checkpoint) does. ``params_active`` replaces each MoE layer's routed experts
by ``num_experts_per_tok`` of them; it includes the embedding and the vision tower, so a dense model
has ``params_active == params_total``. Vendors differ on what "active" counts: Meta (Llama 4) and
Google (Gemma 4) quote text-only figures (``params_active - params_vision``); some (gpt-oss, GLM,
MiniMax) leave the embedding out of "active", which we keep. Biases are ignored (< 0.1%). Vision towers are estimated from
width, depth and MLP width plus patch embedding and patch merger (approximate, within a few %). Checked against published totals:
Llama-3.1-8B 8.03B, Llama-3.1-70B 70.6B, Qwen3-235B-A22B 235B / 22B, DeepSeek-V3 671B / 37B,
Mixtral-8x7B 46.7B / 12.9B (tests/test_catalog.py).

Modules
-------
:mod:`~dashboard.catalog.aliases` (the alias tables and hard bounds), :mod:`~dashboard.catalog.values`
(validation of one untrusted value), :mod:`~dashboard.catalog.tf_info` (transformers' class attributes, the
generated snapshot), :mod:`~dashboard.catalog.fields` (field extraction: the text config, the alias-aware
:class:`~dashboard.catalog.fields.Reader`), :mod:`~dashboard.catalog.quirks` (per-family conventions, a
registry keyed by ``model_type``), :mod:`~dashboard.catalog.attention`, :mod:`~dashboard.catalog.layers`,
:mod:`~dashboard.catalog.vision`, :mod:`~dashboard.catalog.quant` (and its per-part coverage,
:mod:`~dashboard.catalog.quant_coverage`), :mod:`~dashboard.catalog.params` (parameter counts),
:mod:`~dashboard.catalog.normalize` (one config -> one record), :mod:`~dashboard.catalog.frame` (records ->
DataFrame, schema dtype checks), :mod:`~dashboard.catalog.io` (files: build, load, atomic write, merge),
:mod:`~dashboard.catalog.cli` (``python -m dashboard.catalog``).
"""

from __future__ import annotations

from dashboard.catalog.aliases import ALIASES, TEXT_CONFIG_KEYS, VISION_CONFIG_KEYS
from dashboard.catalog.cli import data_readme, main
from dashboard.catalog.frame import catalog_from_records, conform
from dashboard.catalog.io import (
    build_catalog,
    default_catalog_path,
    default_sidecars_dir,
    load_catalog,
    merge_catalog,
    model_id_from_filename,
    read_config_file,
    read_sidecars,
    write_catalog,
)
from dashboard.catalog.normalize import normalize_config
from dashboard.catalog.quant import QUANT_SIDECARS
from dashboard.catalog.tf_info import transformers_snapshot, transformers_type_info, write_transformers_snapshot

__all__ = [
    "ALIASES",
    "QUANT_SIDECARS",
    "TEXT_CONFIG_KEYS",
    "VISION_CONFIG_KEYS",
    "build_catalog",
    "catalog_from_records",
    "conform",
    "data_readme",
    "default_catalog_path",
    "default_sidecars_dir",
    "load_catalog",
    "main",
    "merge_catalog",
    "model_id_from_filename",
    "normalize_config",
    "read_config_file",
    "read_sidecars",
    "transformers_snapshot",
    "transformers_type_info",
    "write_catalog",
    "write_transformers_snapshot",
]
