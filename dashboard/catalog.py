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
   ``decoder_num_attention_heads``, T5's ``d_kv``), read from :mod:`dashboard.catalog_aliases`, a
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
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard import context, quant_coverage, schema
from dashboard.atomic import atomic_write, atomic_write_text

__all__ = [
    "ALIASES",
    "TEXT_CONFIG_KEYS",
    "VISION_CONFIG_KEYS",
    "build_catalog",
    "catalog_from_records",
    "default_catalog_path",
    "load_catalog",
    "merge_catalog",
    "model_id_from_filename",
    "normalize_config",
    "write_catalog",
]

#: Keys under which multimodal / composite configs nest their language model, in preference order.
TEXT_CONFIG_KEYS: tuple[str, ...] = (
    "text_config",
    "llm_config",
    "language_config",
    "language_model_config",
    "thinker_config",
    "text_model_config",
    "llm",
    "language_model",
    "decoder_config",
    "decoder",
    "text",
    "lm_config",
    "language",  # InfiMM (Flamingo-style): the whole language model's config under "language"
)

#: Keys of the vision encoder's config.
VISION_CONFIG_KEYS: tuple[str, ...] = (
    "vision_config",
    "vision_tower_config",
    "visual",
    "vit_config",
    "vision_encoder_config",
    "vision_model_config",
    "image_encoder_config",
)

#: Canonical field -> aliases, first match wins. Dotted aliases look into a nested dict.
ALIASES: dict[str, tuple[str, ...]] = {
    "num_attention_heads": (
        "num_attention_heads", "n_head", "n_heads", "num_heads", "attention_heads", "n_attention_heads",
        "num_q_heads", "decoder_attention_heads", "encoder_attention_heads",
    ),
    "num_key_value_heads": (
        "num_key_value_heads", "num_kv_heads", "n_head_kv", "n_kv_heads", "num_query_groups",
        "attn_config.kv_n_heads", "kv_n_heads", "n_kv_head", "num_kv", "multi_query_group_num",
        "num_key_value_groups_total",
    ),
    "hidden_size": ("hidden_size", "n_embd", "d_model", "model_dim", "dim", "n_embed", "embed_dim", "emb_dim"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_decoder_layers", "decoder_layers"),
    "intermediate_size": (
        "intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "d_ff", "inner_hidden_size",
        "ffn_config.ffn_hidden_size", "mlp_dim", "hidden_dim",
    ),
    "vocab_size": ("vocab_size", "padded_vocab_size", "n_vocab", "vocabulary_size"),
    "max_position_embeddings": (
        "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx",
        "max_seq_len", "model_max_length", "max_seq_length",
    ),
    "head_dim": ("head_dim", "kv_channels", "attention_head_dim", "d_head", "head_size", "attention_head_size"),
    "num_experts": (
        "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts",
        "ffn_config.moe_num_experts", "n_experts", "expert_num",
    ),
    "num_experts_per_tok": (
        "num_experts_per_tok", "num_experts_per_token", "moe_top_k", "top_k_experts", "moe_k",
        "ffn_config.moe_top_k", "num_selected_experts", "n_activated_experts", "experts_per_token",
        "moe_topk",
    ),
    "moe_intermediate_size": (
        "moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size", "ffn_config.ffn_hidden_size_moe",
    ),
    "num_shared_experts": (
        "n_shared_experts", "num_shared_experts", "shared_expert_num", "moe_num_shared_experts",
        "num_shared_expert",  # Hunyuan (a per-layer list)
    ),
    "shared_expert_intermediate_size": (
        "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size",
    ),
    "torch_dtype": ("torch_dtype", "dtype"),
    "sliding_window": ("sliding_window", "sliding_window_size", "window_size", "attention_window_size"),
}

# Hard bounds: anything outside is rejected as unreadable (keeps Int64 safe and the arithmetic sane).
_MAX_HEADS = 1 << 16
_MAX_SIZE = 1 << 40
_MAX_STR = 200
_MAX_NOTES = 4000

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
_NONGATED_TYPES = frozenset({
    "gpt2", "gpt_neox", "gpt_neo", "gptj", "falcon", "bloom", "opt", "gpt_bigcode", "starcoder2", "phi",
    "mpt", "codegen", "nemotron", "bert", "roberta", "t5", "persimmon", "olmo_hf",
    # remote-code families (read as JSON only): Falcon's pre-transformers RW types and CodeShell
    # (GPT-BigCode-style c_fc / c_proj MLP). stablelm_epoch is *not* here: StableLM-3B-4E1T /
    # stable-code-3b use a SwiGLU gate_proj / up_proj / down_proj MLP.
    "refinedweb", "refinedwebmodel", "codeshell",
})

#: Pre-transformers model types whose config transformers later took over under another name: used
#: only to look up that type's class defaults (``tie_word_embeddings``) in the snapshot.
_LEGACY_TYPES = {"RefinedWeb": "falcon", "RefinedWebModel": "falcon"}
_NONGATED_ACTS = frozenset({"relu2", "gelu_new", "gelu_pytorch_tanh_nongated", "relu", "gelu_fast"})


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _short(v: Any, n: int = 60) -> str:
    try:
        s = repr(v)
    except Exception:  # pragma: no cover - repr of plain JSON values never fails
        s = f"<{type(v).__name__}>"
    return s if len(s) <= n else s[: n - 3] + "..."


def _clean_str(v: Any, field: str, notes: list[str], cap: int = _MAX_STR) -> str | None:
    """A config string, type-checked and length-capped (it is untrusted and may be megabytes)."""
    if v is None:
        return None
    if not isinstance(v, str):
        notes.append(f"{field} is not a string ({type(v).__name__}): ignored")
        return None
    if len(v) > cap:
        notes.append(f"{field} truncated from {len(v)} characters")
        return v[:cap]
    return v


def _as_int(v: Any, field: str, notes: list[str], *, lo: int = 1, hi: int = _MAX_SIZE) -> int | None:
    """Validate one integer field; None (noted) when unusable. ``lo``/``hi`` are inclusive bounds."""
    if v is None:
        return None
    if isinstance(v, bool):
        notes.append(f"{field} is a boolean ({v}), not a count: ignored")
        return None
    if isinstance(v, int):
        i = v
    elif isinstance(v, float):
        if not math.isfinite(v):
            notes.append(f"{field} is not finite ({v}): ignored")
            return None
        if not v.is_integer():
            notes.append(f"{field} is not an integer ({_short(v)}): ignored")
            return None
        i = int(v)
        notes.append(f"{field} given as float {v}: read as {i}")
    elif isinstance(v, str):
        s = v.strip()
        if len(s) > 20 or not re.fullmatch(r"[+-]?\d+", s):
            notes.append(f"{field} is a non-numeric string ({_short(v, 40)}): ignored")
            return None
        i = int(s)
        notes.append(f"{field} given as string {_short(v, 30)}: read as {i}")
    else:
        notes.append(f"{field} has type {type(v).__name__}: ignored")
        return None
    if i < lo:
        notes.append(f"{field} = {i} is below {lo}: ignored")
        return None
    if i > hi:
        notes.append(f"{field} = {_short(i, 30)} is implausibly large (> {hi}): ignored")
        return None
    return i


def _as_bool(v: Any, field: str, notes: list[str]) -> bool | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        notes.append(f"{field} given as integer {v}: read as {bool(v)}")
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        notes.append(f"{field} given as string {v!r}")
        return v.strip().lower() == "true"
    notes.append(f"{field} is not a boolean ({_short(v, 30)}): ignored")
    return None


# ------------------------------------------------------------------------------------------------
# transformers attribute maps (optional, class attributes only)
# ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _config_mapping() -> Any:
    """transformers' ``CONFIG_MAPPING`` (model_type -> its own config class), or None.

    Importing transformers costs seconds (it pulls in torch), so this runs only for model types that
    are missing from the generated snapshot (:mod:`dashboard.catalog_aliases`) and only when a core
    field could not be found otherwise. ``TP_PLANNER_NO_TRANSFORMERS=1`` disables it.
    """
    if os.environ.get("TP_PLANNER_NO_TRANSFORMERS"):
        return None
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # type: ignore
    except Exception:
        return None
    return CONFIG_MAPPING


def _class_info(cls: Any) -> dict[str, Any]:
    """What we use from one transformers config class: class attributes only, never an instance."""
    amap = getattr(cls, "attribute_map", None) or {}
    amap = {str(k): str(v) for k, v in dict(amap).items()
            if isinstance(k, str) and isinstance(v, str) and k in ALIASES and k != v}
    tie = getattr(cls, "tie_word_embeddings", None)
    subs = getattr(cls, "sub_configs", None) or {}
    return {
        "attribute_map": amap,
        "tie_word_embeddings": tie if isinstance(tie, bool) else None,
        "sub_configs": sorted(str(k) for k in dict(subs) if isinstance(k, str)),
    }


@lru_cache(maxsize=1)
def _live_would_differ() -> bool:
    """True when an installed transformers differs from the one the snapshot was generated from.

    Uses package metadata only (no import). When the versions match, a type absent from the snapshot
    is unknown to the installed transformers as well, so importing it would be wasted seconds.
    """
    if os.environ.get("TP_PLANNER_NO_TRANSFORMERS"):
        return False
    try:
        from importlib.metadata import version

        installed = version("transformers")
    except Exception:
        return False
    try:
        from dashboard.catalog_aliases import TRANSFORMERS_VERSION
    except Exception:  # pragma: no cover
        return True
    return installed != TRANSFORMERS_VERSION


@lru_cache(maxsize=512)
def _live_type_info(model_type: str) -> dict[str, Any] | None:
    if not _live_would_differ():
        return None
    mapping = _config_mapping()
    if mapping is None:
        return None
    try:
        if model_type not in mapping:
            return None
        return _class_info(mapping[model_type])
    except Exception:
        return None


def transformers_type_info(model_type: str | None, *, live: bool = True) -> dict[str, Any] | None:
    """``{"attribute_map", "tie_word_embeddings", "sub_configs"}`` of transformers' config class for a type.

    Read from the snapshot generated from transformers (:mod:`dashboard.catalog_aliases`, refreshed by
    ``python -m dashboard.catalog aliases``); for a type the snapshot lacks, from the installed
    transformers when ``live`` (class attributes only: the class is never instantiated, nothing is
    fetched, no remote code). None when unknown, or when the name is not a plain identifier.
    """
    if not model_type or not _SAFE_NAME.match(model_type):
        return None
    info = _snapshot().get(model_type)
    if info is not None:
        return info
    return _live_type_info(model_type) if live else None


@lru_cache(maxsize=1)
def _snapshot() -> dict[str, dict[str, Any]]:
    try:
        from dashboard.catalog_aliases import TRANSFORMERS_CONFIG_INFO
    except Exception:  # pragma: no cover - the module ships with the package
        return {}
    return TRANSFORMERS_CONFIG_INFO


def transformers_snapshot() -> tuple[str, dict[str, dict[str, Any]]]:
    """(transformers version, model_type -> info) from the installed transformers (every registered type).

    Raises ImportError when transformers is not installed. Used to (re)generate
    :mod:`dashboard.catalog_aliases` and by the test that checks the snapshot is current.
    """
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    out: dict[str, dict[str, Any]] = {}
    for mt in list(CONFIG_MAPPING.keys()):
        try:
            cls = CONFIG_MAPPING[mt]
        except Exception:
            continue
        out[mt] = _class_info(cls)
    return transformers.__version__, out


def write_transformers_snapshot(path: str | os.PathLike | None = None) -> Path:
    """Regenerate ``dashboard/catalog_aliases.py`` from the installed transformers."""
    version, info = transformers_snapshot()
    p = Path(path) if path is not None else Path(__file__).with_name("catalog_aliases.py")
    lines = [
        '"""Generated by ``python -m dashboard.catalog aliases`` from transformers ' + version + ': do not edit.',
        "",
        "For every model_type transformers registers: the ``attribute_map`` entries of its config class that",
        "name catalog fields (canonical -> key stored in config.json), the class default of",
        "``tie_word_embeddings``, and the names of its ``sub_configs``. Read from class attributes only.",
        '"""',
        "",
        f"TRANSFORMERS_VERSION = {version!r}",
        "",
        "TRANSFORMERS_CONFIG_INFO = {",
    ]
    for mt in sorted(info):
        i = info[mt]
        lines.append(f"    {mt!r}: {{'attribute_map': {dict(sorted(i['attribute_map'].items()))!r}, "
                     f"'tie_word_embeddings': {i['tie_word_embeddings']!r}, 'sub_configs': {i['sub_configs']!r}}},")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    return atomic_write_text(p, text)


# ------------------------------------------------------------------------------------------------
# lookups
# ------------------------------------------------------------------------------------------------

_MISSING = object()


def _dig(d: Mapping, path: str) -> Any:
    if "." not in path:
        return d.get(path, _MISSING)
    cur: Any = d
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return _MISSING
        cur = cur.get(part, _MISSING)
        if cur is _MISSING:
            return _MISSING
    return cur


class _Reader:
    """Alias-aware lookups over the chosen text config, falling back to the top level."""

    __slots__ = ("text", "top", "notes", "model_types", "_amaps", "nested")

    def __init__(self, text: Mapping, top: Mapping, notes: list[str], model_types: tuple[str, ...]):
        self.text = text
        self.top = top
        self.notes = notes
        self.model_types = model_types
        self._amaps: dict[bool, dict[str, str]] = {}
        self.nested = text is not top

    def amap(self, live: bool) -> dict[str, str]:
        """transformers' attribute_map for the text model_type (then the top one), computed on first need.

        ``live=False``: the generated snapshot only (free). ``live=True`` may import transformers for a
        type the snapshot lacks.
        """
        m = self._amaps.get(live)
        if m is None:
            m = {}
            for mt in self.model_types:
                info = transformers_type_info(mt, live=live)
                if info and info["attribute_map"]:
                    m = info["attribute_map"]
                    break
            self._amaps[live] = m
        return m

    def raw(self, canonical: str, *, fallback_top: bool = True, tf: bool = True) -> tuple[Any, str | None]:
        """(value, key) of the first alias present with a non-null value; (None, None) when none."""
        aliases = ALIASES.get(canonical, (canonical,))
        sources = (self.text, self.top) if (fallback_top and self.nested) else (self.text,)
        for src in sources:
            for a in aliases:
                v = _dig(src, a)
                if v is not _MISSING and v is not None:
                    if src is self.top and self.nested:
                        self.notes.append(f"{canonical} read from the top-level config ({a})")
                    elif a != canonical and a != "dtype":
                        self.notes.append(f"{canonical} read from alias {a}")
                    return v, a
        if tf:
            # the static table missed: transformers' attribute_map for this model_type (snapshot; the
            # installed transformers only for the core fields of types the snapshot lacks)
            extra = self.amap(live=canonical in _TF_FALLBACK_FIELDS).get(canonical)
            if extra and extra not in aliases:
                for src in sources:
                    v = src.get(extra, _MISSING)
                    if v is not _MISSING and v is not None:
                        self.notes.append(f"{canonical} read from {extra} (transformers attribute_map)")
                        return v, extra
        return None, None

    def int(self, canonical: str, *, lo: int = 1, hi: int = _MAX_SIZE, fallback_top: bool = True,
            tf: bool = True) -> int | None:
        v, key = self.raw(canonical, fallback_top=fallback_top, tf=tf)
        if key is None:
            return None
        return _as_int(v, canonical, self.notes, lo=lo, hi=hi)

    def get(self, key: str, default: Any = None) -> Any:
        v = self.text.get(key, _MISSING)
        if v is _MISSING or v is None:
            return default
        return v


def _has_any(d: Mapping, fields: tuple[str, ...]) -> bool:
    for f in fields:
        for a in ALIASES[f]:
            if "." not in a and a in d:
                return True
    return False


_TEXT_MARKERS = ("num_attention_heads", "hidden_size", "num_hidden_layers")

#: Fields for which transformers' attribute_map is consulted when the static table finds nothing.
#: (Only these: a miss on them means the row is unusable, so the one-time import is worth it.)
_TF_FALLBACK_FIELDS = frozenset({"num_attention_heads", "hidden_size", "num_hidden_layers", "vocab_size"})


def _find_text_config(cfg: Mapping, model_type: str | None, depth: int = 0) -> tuple[Mapping, str]:
    """The nested dict holding the language model's shapes, and its dotted key ('' = top level)."""
    if depth > 3:
        return cfg, ""
    for k in TEXT_CONFIG_KEYS:
        sub = cfg.get(k)
        if isinstance(sub, Mapping) and sub:
            if _has_any(sub, _TEXT_MARKERS):
                return sub, k
            inner, ik = _find_text_config(sub, None, depth + 1)
            if ik:
                return inner, f"{k}.{ik}"
    if model_type and depth == 0 and not _has_any(cfg, _TEXT_MARKERS):
        # nothing found: ask transformers which sub-configs this model_type declares (lazy import)
        info = transformers_type_info(model_type)
        for k in (info or {}).get("sub_configs", ()):
            sub = cfg.get(k)
            if "vision" in k or "audio" in k or not isinstance(sub, Mapping) or not sub:
                continue
            if _has_any(sub, _TEXT_MARKERS):
                return sub, k
            inner, ik = _find_text_config(sub, None, depth + 1)
            if ik:
                return inner, f"{k}.{ik}"
    return cfg, ""


# ------------------------------------------------------------------------------------------------
# the normalizer
# ------------------------------------------------------------------------------------------------


def _empty_record(model_id: str, source: str, sha: Any, fetched_at: Any) -> dict[str, Any]:
    rec: dict[str, Any] = dict.fromkeys(schema.COLUMN_NAMES)
    mid = model_id if isinstance(model_id, str) else str(model_id)
    org, _, name = mid.partition("/")
    rec["model_id"] = mid
    rec["org"] = org
    rec["name"] = name
    rec["status"] = "ok"
    rec["status_reason"] = ""
    rec["source"] = source
    rec["fetched_at"] = fetched_at if fetched_at is not None else _now()
    rec["sha"] = sha
    rec["parse_notes"] = ""
    return rec


def normalize_config(raw: object, model_id: str, *, source: str = "snapshot", sha: str | None = None,
                     fetched_at: str | None = None, sidecars: Mapping[str, object] | None = None) -> dict[str, Any]:
    """Normalize one raw ``config.json`` into a catalog record.

    Parameters
    ----------
    raw : dict, or ``str`` / ``bytes`` JSON text. Anything else (or JSON that is not an object) gives a
        row with ``status="invalid_json"``.
    model_id : ``org/name``.
    source, sha, fetched_at : provenance columns (``fetched_at`` defaults to now, ISO-8601 UTC).
    sidecars : optional ``{file name: content}`` of the repository's quantization sidecars
        (:data:`QUANT_SIDECARS`: AutoGPTQ's ``quantize_config.json``, AutoAWQ's ``quant_config.json``;
        content as for ``raw``). Read only when ``config.json`` has no ``quantization_config``: early
        GPTQ / AWQ repositories keep their quantization there. Other names, and unreadable files, are
        ignored with a note.

    Returns
    -------
    dict with exactly the keys of :data:`dashboard.schema.COLUMN_NAMES`. Counts and sizes are ``int`` or
    ``None``; parameter counts are ``float`` (number of parameters) or ``None``.

    Never raises on bad input: unexpected failures give ``status="error"`` with the exception in
    ``status_reason``; every problem met is listed in ``parse_notes``.
    """
    rec = _empty_record(model_id, source, sha, fetched_at)
    notes: list[str] = []
    try:
        cfg = raw
        if isinstance(cfg, (bytes, bytearray)):
            try:
                cfg = bytes(cfg).decode("utf-8")
            except UnicodeDecodeError as e:
                rec["status"], rec["status_reason"] = "invalid_json", f"not UTF-8: {e.reason}"
                cfg = None
        if isinstance(cfg, str):
            if cfg.startswith("\ufeff"):
                cfg = cfg[1:]
                notes.append("UTF-8 byte-order mark stripped")
            consts: list[str] = []
            try:
                cfg = json.loads(cfg, parse_constant=lambda c: consts.append(c) or float(c))
            except (ValueError, RecursionError) as e:
                rec["status"], rec["status_reason"] = "invalid_json", f"unreadable JSON: {_short(str(e), 160)}"
                cfg = None
            if consts:
                notes.append(f"non-standard JSON constants {sorted(set(consts))} read as floats")
        if rec["status"] == "ok":
            if not isinstance(cfg, Mapping):
                rec["status"] = "invalid_json"
                rec["status_reason"] = f"config is not a JSON object (got {type(cfg).__name__})"
            else:
                _fill(rec, cfg, notes, _quant_sidecar(sidecars, notes))
    except RecursionError:
        rec["status"], rec["status_reason"] = "error", "config nested too deeply"
    except Exception as e:  # last line of defence: a bad config must never crash a catalog build
        rec["status"], rec["status_reason"] = "error", f"normalizer failed: {type(e).__name__}: {_short(str(e), 160)}"
    if rec["status"] != "ok" and rec["status_reason"]:
        notes.insert(0, rec["status_reason"])
    text = "; ".join(dict.fromkeys(notes))  # de-duplicate, keep order
    if len(text) > _MAX_NOTES:
        text = text[: _MAX_NOTES - 20] + "; ... (truncated)"
    rec["parse_notes"] = text
    return rec


#: Quantization files a repository may keep beside ``config.json`` -> the quant_method they imply when
#: they do not name one (AutoGPTQ writes ``quantize_config.json``, AutoAWQ ``quant_config.json``; vLLM
#: reads them for ``--quantization gptq`` / ``awq``, ``vllm/model_executor/model_loader/weight_utils.py``
#: ``get_quant_config``). In order of preference.
QUANT_SIDECARS: dict[str, str] = {"quantize_config.json": "gptq", "quant_config.json": "awq"}
_MAX_SIDECAR_BYTES = 1 << 20


def _quant_sidecar(sidecars: Mapping[str, object] | None, notes: list[str]) -> tuple[str, dict] | None:
    """(file name, parsed object with ``quant_method``) of the first readable quantization sidecar."""
    if not sidecars:
        return None
    if not isinstance(sidecars, Mapping):
        notes.append("sidecars is not a mapping: ignored")
        return None
    for name in sidecars:
        if name not in QUANT_SIDECARS:
            notes.append(f"sidecar {_short(name, 40)} is not a quantization file: ignored")
    for name, method in QUANT_SIDECARS.items():
        if name not in sidecars:
            continue
        v = sidecars[name]
        if isinstance(v, (bytes, bytearray, str)):
            if len(v) > _MAX_SIDECAR_BYTES:
                notes.append(f"{name} larger than {_MAX_SIDECAR_BYTES} bytes: ignored")
                continue
            try:
                v = json.loads(bytes(v).decode("utf-8") if isinstance(v, (bytes, bytearray)) else v)
            except (ValueError, UnicodeDecodeError, RecursionError) as e:
                notes.append(f"{name} unreadable ({_short(str(e), 80)}): ignored")
                continue
        if not isinstance(v, Mapping):
            notes.append(f"{name} is not a JSON object: ignored")
            continue
        q = dict(v)
        if not isinstance(q.get("quant_method"), str):
            q["quant_method"] = method
        return name, q
    return None


def _fill(rec: dict[str, Any], cfg: Mapping, notes: list[str], sidecar: tuple[str, dict] | None = None) -> None:
    model_type = _clean_str(cfg.get("model_type"), "model_type", notes)
    if model_type is None:
        notes.append("model_type missing")
    rec["model_type"] = model_type
    text, tkey = _find_text_config(cfg, model_type)
    rec["text_config_key"] = tkey
    tmt = _clean_str(text.get("model_type"), "text model_type", notes) if text is not cfg else model_type
    rec["text_model_type"] = tmt if tmt is not None else model_type

    r = _Reader(text, cfg, notes, (rec["text_model_type"] or "", model_type or ""))

    arch = cfg.get("architectures")
    if arch is None and text is not cfg:
        arch = text.get("architectures")
    if isinstance(arch, list):
        names = [a for a in arch[:8] if isinstance(a, str)]
        if len(names) != len(arch[:8]):
            notes.append("architectures has non-string entries")
        rec["architectures"] = _clean_str(",".join(names), "architectures", notes)
    elif isinstance(arch, str):
        rec["architectures"] = _clean_str(arch, "architectures", notes)
    elif arch is not None:
        notes.append("architectures is not a list")

    dt, _ = r.raw("torch_dtype")
    rec["torch_dtype"] = _clean_str(dt, "torch_dtype", notes, cap=40) if isinstance(dt, str) else None
    if dt is not None and not isinstance(dt, str):
        notes.append("torch_dtype is not a string")

    hidden = r.int("hidden_size")
    layers = r.int("num_hidden_layers", hi=1 << 20, tf=False)
    if layers is None:
        for k in ("layer_types", "layers_block_type", "hybrid_override_pattern", "block_configs"):
            pat = r.get(k)
            if isinstance(pat, (list, str)) and 0 < len(pat) <= (1 << 20):
                layers = len(pat)
                notes.append(f"num_hidden_layers = {layers} from the length of {k}")
                break
    if layers is None:
        layers = r.int("num_hidden_layers", hi=1 << 20)
    rec["hidden_size"] = hidden
    rec["num_hidden_layers"] = layers
    rec["vocab_size"] = r.int("vocab_size")
    rec["max_position_embeddings"] = r.int("max_position_embeddings")
    rec.update(context.derive_limits(text, rec["text_model_type"], r.amap(False), notes))
    tie, tkey2 = r.raw("tie_word_embeddings")
    tied = _as_bool(tie, "tie_word_embeddings", notes) if tkey2 else None
    if tied is None:
        default = None
        for mt0 in (rec["text_model_type"], model_type, _LEGACY_TYPES.get(model_type or "")):
            info = transformers_type_info(mt0, live=False)
            if info and info["tie_word_embeddings"] is not None:
                default = info["tie_word_embeddings"]
                break
        saved_by = cfg.get("transformers_version")
        if default is None and isinstance(saved_by, str) and saved_by:
            # a remote-code config written by save_pretrained: to_diff_dict drops a key whose value equals
            # PretrainedConfig's default, and that default is tie_word_embeddings=True (ChatGLM-6B v1:
            # tied, 6.2B published)
            tied = True
            notes.append(f"tie_word_embeddings absent from a config saved by transformers {_short(saved_by, 20)} "
                         "(model type unknown to transformers): True assumed, PretrainedConfig's default that save_pretrained omits")
        elif default is None:
            tied = False
            notes.append("tie_word_embeddings absent and model type unknown to transformers: False assumed")
        else:
            tied = default
            legacy = f", which took over {model_type}" if mt0 == _LEGACY_TYPES.get(model_type or "") else ""
            notes.append(f"tie_word_embeddings absent: {tied} assumed (transformers' default for {_short(mt0, 40)}{legacy})")
    rec["tie_word_embeddings"] = tied
    if hidden is None:
        notes.append("hidden_size missing")
    if layers is None:
        notes.append("num_hidden_layers missing")

    _attention(rec, r, cfg, notes)
    if text is not cfg:
        for f in ("num_attention_heads", "num_key_value_heads", "hidden_size", "num_hidden_layers"):
            top_v = cfg.get(f)
            if top_v is not None and rec[f] is not None and top_v != rec[f]:
                notes.append(f"top-level {f}={_short(top_v, 20)} contradicts {tkey} {f}={rec[f]}: {tkey} used")
    _layers(rec, r, notes)
    _moe(rec, r, notes)
    _linear(rec, r, notes)
    _extra_shapes(rec, r, notes)
    _vision(rec, cfg, notes)
    _quant(rec, cfg, text, notes, sidecar)
    _params(rec, r, cfg, notes)
    _status(rec, notes)


def _attention(rec: dict, r: _Reader, cfg: Mapping, notes: list[str]) -> None:
    heads = r.int("num_attention_heads", hi=_MAX_HEADS)
    if heads is None:
        notes.append("num_attention_heads missing or unusable")
    rec["num_attention_heads"] = heads

    kv: int | None = None
    v, key = r.raw("num_key_value_heads")
    if key == "multi_query_group_num" and not r.get("multi_query_attention", False):
        v, key = None, None  # ChatGLM: the group count only applies with multi_query_attention
    if key is not None:
        kv = _as_int(v, "num_key_value_heads", notes, hi=_MAX_HEADS)
    if kv is None:
        mq = r.get("multi_query")
        nda = r.get("new_decoder_architecture")
        if mq is True and not nda:
            kv = 1
            notes.append("num_key_value_heads = 1 from multi_query")
    # nemotron-nas (DeciLM): per-block n_heads_in_group
    if kv is None and heads and isinstance(r.get("block_configs"), list):
        groups = []
        for b in r.get("block_configs"):
            att = b.get("attention") if isinstance(b, Mapping) else None
            if isinstance(att, Mapping) and not att.get("no_op") and not att.get("replace_with_linear"):
                g = _as_int(att.get("n_heads_in_group"), "block_configs.n_heads_in_group", notes)
                if g:
                    groups.append(g)
        if groups:
            common = max(set(groups), key=groups.count)
            if heads % common == 0:
                kv = heads // common
                notes.append(f"num_key_value_heads = {kv} from block_configs n_heads_in_group={common}")
            if len(set(groups)) > 1:
                notes.append(f"n_heads_in_group varies per block: {sorted(set(groups))}")
    if kv is None and heads is not None:
        kv = heads
        notes.append("num_key_value_heads absent: set to num_attention_heads")
    rec["num_key_value_heads"] = kv

    # MLA
    kv_lora = r.int("kv_lora_rank", fallback_top=False)
    q_lora = r.int("q_lora_rank", fallback_top=False)
    rope = r.int("qk_rope_head_dim", fallback_top=False)
    nope = r.int("qk_nope_head_dim", fallback_top=False)
    vhd = r.int("v_head_dim", fallback_top=False)
    is_mla = kv_lora is not None
    rec["is_mla"] = is_mla
    rec["q_lora_rank"] = q_lora
    rec["kv_lora_rank"] = kv_lora
    rec["qk_rope_head_dim"] = rope
    rec["qk_nope_head_dim"] = nope

    hd_cfg = r.int("head_dim", hi=1 << 16)
    hidden = rec["hidden_size"]
    head_dim: int | None
    if is_mla and rope is not None and nope is not None:
        head_dim = nope + rope
        if hd_cfg is not None and hd_cfg != head_dim:
            notes.append(f"MLA: head_dim = qk_nope_head_dim + qk_rope_head_dim = {head_dim} (config head_dim {hd_cfg} ignored)")
    elif hd_cfg is not None:
        head_dim = hd_cfg
    elif hidden and heads:
        head_dim = hidden // heads
        notes.append(f"head_dim absent or null: hidden_size // num_attention_heads = {head_dim}")
        if hidden % heads:
            notes.append(f"hidden_size {hidden} not divisible by num_attention_heads {heads}")
        if head_dim == 0:
            head_dim = None
            notes.append("head_dim would be 0: left empty")
    else:
        head_dim = None
        notes.append("head_dim cannot be derived")
    rec["head_dim"] = head_dim
    rec["v_head_dim"] = vhd if vhd is not None else head_dim

    if is_mla:
        rec["attention_kind"] = "mla"
    elif heads is not None and kv is not None:
        rec["attention_kind"] = "mha" if kv == heads else ("mqa" if kv == 1 else "gqa")

    # per-layer heterogeneous head counts (Laguna ``num_attention_heads_per_layer``, one entry per decoder
    # layer, vLLM models/laguna.py:490-501): keep the headline value, note the spread, and average the
    # query heads over the layers for the parameter counts (q / o / gate widths scale with them)
    rec["num_attention_heads_mean"] = float(heads) if heads is not None else None
    per_layer = r.get("num_attention_heads_per_layer")
    if isinstance(per_layer, list) and per_layer:
        ints = [x for x in per_layer if isinstance(x, int) and not isinstance(x, bool) and 0 < x <= _MAX_SIZE]
        vals = sorted(set(ints))
        if len(vals) > 1:
            notes.append(f"attention heads vary per layer: {vals[:6]}")
        n_layers = rec["num_hidden_layers"]
        if len(ints) == len(per_layer) and n_layers and len(ints) == n_layers:
            rec["num_attention_heads_mean"] = sum(ints) / len(ints)
        else:
            notes.append(f"num_attention_heads_per_layer ignored: {len(per_layer)} entries, "
                         f"{len(ints)} valid, {n_layers} layers")
    gkv = r.get("num_global_key_value_heads")
    if gkv is not None and gkv != kv:
        notes.append(f"full-attention layers use num_global_key_value_heads={_short(gkv, 20)}"
                     f" (global_head_dim={_short(r.get('global_head_dim'), 20)}); num_key_value_heads is the sliding layers'")
    swa_h = r.get("swa_num_attention_heads")
    swa_kv = r.get("swa_num_key_value_heads")
    if (swa_h is not None and swa_h != heads) or (swa_kv is not None and swa_kv != kv):
        notes.append(f"sliding-window layers use {swa_h} heads / {swa_kv} KV heads")


#: Model types whose every attention and MLP linear layer carries a bias while the config has no
#: flag saying so (transformers' modeling code hard-codes it): GPT-2 (Conv1D c_attn / c_proj / c_fc),
#: GPT-BigCode, GPT-NeoX, BLOOM, Phi-1/2, OPT (``enable_bias``, default True), CodeShell.
_FULL_BIAS_TYPES = frozenset({"gpt2", "gpt_bigcode", "gpt_neox", "bloom", "phi", "opt", "codeshell"})
#: Model types with a learned absolute position table (``wpe`` / ``embed_positions``) when the config
#: says nothing else; OPT's table has 2 extra rows (``OPTLearnedPositionalEmbedding`` offset).
_LEARNED_POSITION_TYPES = {"gpt2": 0, "gpt_bigcode": 0, "opt": 2, "biogpt": 2}


def _index_layers(r: _Reader, n: int | None, notes: list[str]) -> int | None:
    """Decoder layers that build a DSA indexer, as vLLM 0.33.0 decides per layer.

    ``vllm/models/deepseek_v32/attention.py:166-190`` (DeepseekV32ForCausalLM and GlmMoeDsaForCausalLM,
    ``model_executor/models/registry.py:95-98, 126``): with ``index_topk_pattern`` (one letter per layer) a layer
    whose letter is ``S`` shares the previous indexer's top-k and builds none; otherwise a layer skips
    when ``max(layer - index_skip_topk_offset + 1, 0) % index_topk_freq != 0`` (defaults: offset 2,
    freq 1, i.e. every layer has one). MTP layers always have one but are not decoder layers here.
    """
    if n is None:
        return None
    pat = r.get("index_topk_pattern")
    if isinstance(pat, (list, str)) and pat:
        if len(pat) < n:
            notes.append(f"index_topk_pattern has {len(pat)} entries for {n} layers: the rest counted as indexer layers")
        return sum(1 for i in range(n) if not (i < len(pat) and pat[i] == "S"))
    freq = r.int("index_topk_freq", fallback_top=False, tf=False)
    off = r.int("index_skip_topk_offset", lo=0, fallback_top=False, tf=False)
    freq = freq or 1
    off = 2 if off is None else off
    return sum(1 for i in range(n) if max(i - off + 1, 0) % freq == 0)


def _compress_ratios(r: _Reader, n: int | None, notes: list[str]) -> list[int] | None:
    """DeepSeek-V4 per-layer KV compress ratios of the ``n`` decoder layers (0 / 1 = none), as vLLM 0.33.0
    reads them (``transformers_utils/deepseek_v4_utils.py:6-18``: ``compress_ratios``, else
    ``compress_rates[layer_type]``); ``[]`` when the config has neither, None when unreadable."""
    cr = r.get("compress_ratios")
    if cr is None and isinstance(r.get("compress_rates"), Mapping) and isinstance(r.get("layer_types"), list):
        rates = r.get("compress_rates")
        cr = [rates.get(t, 0) if isinstance(t, str) else 0 for t in r.get("layer_types")]
    if cr is None:
        return []
    if not isinstance(cr, list) or n is None or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in cr):
        notes.append("compress_ratios unreadable: KV compressors not counted")
        return None
    if len(cr) < n:
        notes.append(f"compress_ratios has {len(cr)} entries for {n} layers: the rest counted as uncompressed")
    return list(cr[:n])


def _extra_shapes(rec: dict, r: _Reader, notes: list[str]) -> None:
    """Shapes that change the parameter count but not the KV cache: learned positions, biases, Gemma-4's
    full-attention head dims, Qwen3-Next's output gate, the DeepSeek sparse-attention indexer."""
    mt = (rec["text_model_type"] or rec["model_type"] or "").lower()
    n = rec["num_hidden_layers"]
    # learned absolute positions
    pos = None
    pet = r.get("position_embedding_type")
    if isinstance(pet, str) and pet.lower() in ("rope", "rotary", "alibi", "none"):
        pos = 0
    elif mt in _LEARNED_POSITION_TYPES or (isinstance(pet, str) and pet.lower() in ("absolute", "learned")):
        rows = r.int("max_position_embeddings")
        if rows is None:
            notes.append("learned position embeddings without a length (n_positions / max_position_embeddings): not counted")
        else:
            pos = rows + _LEARNED_POSITION_TYPES.get(mt, 0)
    else:
        pos = 0
    rec["learned_position_embeddings"] = pos
    # biases on every linear layer
    bias = None
    for key in ("bias", "use_bias", "add_bias_linear"):
        v = r.get(key)
        if v is not None:
            bias = _as_bool(v, key, notes)
            break
    if bias is None and r.get("attention_bias") is not None and r.get("mlp_bias") is not None:
        bias = bool(r.get("attention_bias") is True and r.get("mlp_bias") is True)
    if bias is None and mt == "opt":
        bias = r.get("enable_bias", True) is True
    if bias is None:
        bias = mt in _FULL_BIAS_TYPES
    rec["linear_bias"] = bias
    # Gemma-4 / Gemma-3n per-layer input embeddings (PLE)
    ple = r.int("hidden_size_per_layer_input", lo=0, fallback_top=False, tf=False)
    rec["hidden_size_per_layer_input"] = ple or 0
    if ple:
        pv = r.int("vocab_size_per_layer_input", fallback_top=False, tf=False)
        rec["vocab_size_per_layer_input"] = pv if pv is not None else rec["vocab_size"]
        if pv is None:
            notes.append("vocab_size_per_layer_input absent: vocab_size used")
    else:
        rec["vocab_size_per_layer_input"] = None
    # Gemma-4: the full-attention layers have their own head dim and KV heads
    hd, kv = rec["head_dim"], rec["num_key_value_heads"]
    ghd = r.int("global_head_dim", fallback_top=False, tf=False)
    gkv = r.int("num_global_key_value_heads", fallback_top=False, tf=False)
    rec["global_head_dim"] = ghd if ghd is not None and ghd != hd else None
    rec["num_global_key_value_heads"] = gkv if gkv is not None and gkv != kv else None
    # per-head output gate folded into q_proj (Qwen3-Next: always; Qwen3.5: attn_output_gate)
    gate = r.get("attn_output_gate")
    if gate is None:
        rec["attn_output_gate"] = mt == "qwen3_next"
    else:
        rec["attn_output_gate"] = _as_bool(gate, "attn_output_gate", notes)
    # Laguna's separate output-gate projection g_proj (vLLM models/laguna.py:327-351): ``gating`` true or
    # "per-head" -> hidden -> heads (one gate per head); "per-element" -> hidden -> heads x head_dim,
    # counted like attn_output_gate
    rec["attn_head_gate"] = False
    lg = r.get("gating") if mt == "laguna" else None
    if lg is True or lg == "per-head":
        rec["attn_head_gate"] = True
    elif lg == "per-element":
        rec["attn_output_gate"] = True
    elif lg not in (None, False):
        notes.append(f"gating={_short(lg, 20)} not understood: no output gate counted")
    # DeepSeek-V4: grouped low-rank output, per-layer KV compressors, hyper-connections
    ol = r.int("o_lora_rank", fallback_top=False, tf=False)
    rec["o_lora_rank"] = ol
    rec["o_groups"] = (r.int("o_groups", fallback_top=False, tf=False) or 1) if ol else None
    rec["hc_mult"] = r.int("hc_mult", lo=0, hi=1024, fallback_top=False, tf=False) or 0
    ratios = _compress_ratios(r, n, notes)
    rec["num_compressor_layers"] = sum(1 for x in ratios if x > 1) if ratios is not None else None
    # DeepSeek sparse attention (DSA) indexer
    inh = r.int("index_n_heads", fallback_top=False, tf=False, hi=_MAX_HEADS)
    ihd = r.int("index_head_dim", fallback_top=False, tf=False, hi=1 << 16)
    rec["index_n_heads"], rec["index_head_dim"] = inh, ihd
    sac = r.get("sparse_attention_config")
    if inh is None and isinstance(sac, Mapping) and sac.get("use_sparse_attention") is True:
        # MiniMax-M3 block-sparse attention: the layers with a non-zero sparse_attention_freq entry fuse
        # index_q (sparse_num_index_heads = KV heads, sharded like them) and one replicated index_k head of
        # sparse_index_dim into qkv_proj (vLLM models/minimax_m3/nvidia/model.py:98-106, 433-446;
        # layers/linear.py:1365-1440 MinimaxM3QKVParallelLinearWithIndexer)
        inh = _as_int(sac.get("sparse_num_index_heads"), "sparse_num_index_heads", notes, hi=_MAX_HEADS)
        ihd = _as_int(sac.get("sparse_index_dim"), "sparse_index_dim", notes, hi=1 << 16)
        freq = sac.get("sparse_attention_freq")
        rec["index_n_heads"], rec["index_head_dim"] = inh, ihd
        if inh and ihd and isinstance(freq, list) and len(freq) <= (1 << 20):
            rec["num_indexer_layers"] = sum(1 for x in freq if x not in (0, None, False))
        else:
            rec["num_indexer_layers"] = None
            notes.append("sparse_attention_config without a readable sparse_attention_freq: indexer layers not counted")
    elif inh and ihd and r.get("index_topk") is not None:
        if rec["is_mla"] and rec["q_lora_rank"]:
            rec["num_indexer_layers"] = _index_layers(r, n, notes)
        elif ol and rec["q_lora_rank"] and ratios is not None:
            # DeepSeek-V4: only the compress-ratio-4 layers have an indexer
            # (vllm/models/deepseek_v4/attention.py:302-320)
            rec["num_indexer_layers"] = sum(1 for x in ratios if x == 4)
        else:
            rec["num_indexer_layers"] = None
            notes.append("DSA indexer outside an MLA or DeepSeek-V4 attention: its layers are not counted")
    else:
        rec["num_indexer_layers"] = 0


def _layers(rec: dict, r: _Reader, notes: list[str]) -> None:
    """Counts of full / sliding / linear / cross-attention layers and the window."""
    n = rec["num_hidden_layers"]
    mt = (rec["text_model_type"] or rec["model_type"] or "").lower()
    window = r.int("sliding_window", hi=1 << 40, fallback_top=False)
    use_sw = r.get("use_sliding_window")
    full = sliding = linear = 0
    cross = 0
    conv = 0  # LFM2 gated short-convolution blocks: no heads, no KV cache, not linear attention
    decided = False

    cal = r.get("cross_attention_layers")
    if isinstance(cal, list):
        cross = len(cal)

    lt = r.get("layer_types")
    lbt = r.get("layers_block_type")
    hop = r.get("hybrid_override_pattern")
    lac = r.get("linear_attn_config")
    if isinstance(lt, list) and lt:
        for t in lt:
            s = str(t).lower() if isinstance(t, str) else ""
            if s in ("conv", "short_conv", "shortconv"):
                conv += 1
            elif "linear" in s or "mamba" in s or "ssm" in s or "kda" in s or "gdn" in s or "delta" in s:
                linear += 1
            elif "sliding" in s or "local" in s or "chunk" in s or "swa" in s:
                sliding += 1
            elif s:
                full += 1
            else:
                notes.append("layer_types has a non-string entry")
                full += 1
        decided = True
        if n is not None and len(lt) != n:
            notes.append(f"layer_types has {len(lt)} entries for {n} layers")
    elif isinstance(lbt, list) and lbt:
        for t in lbt:
            s = str(t).lower()
            if s in ("mamba", "m", "ssm", "linear_attention"):
                linear += 1
            elif s in ("attention", "*", "full_attention"):
                full += 1
        decided = True
    elif isinstance(hop, str) and hop:
        hop = hop[:100000]
        linear = hop.count("M")
        full = hop.count("*")
        decided = True
        if n is not None and len(hop) != n:
            notes.append(f"hybrid_override_pattern has {len(hop)} entries for {n} layers")
    elif isinstance(lac, Mapping) and (lac.get("kda_layers") is not None or lac.get("full_attn_layers") is not None):
        kda = lac.get("kda_layers")
        fal = lac.get("full_attn_layers")
        linear = len(kda) if isinstance(kda, list) else 0
        full = len(fal) if isinstance(fal, list) else ((n or 0) - linear)
        decided = True
    elif n is not None and isinstance(r.get("full_attn_idxs"), list):
        # LFM2: attention only at these indices; every other block is a gated short convolution
        idx = {i for i in r.get("full_attn_idxs") if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n}
        full = len(idx)
        conv = n - full
        decided = True
    elif isinstance(r.get("hybrid_layer_pattern"), list):
        pat = r.get("hybrid_layer_pattern")
        sliding = sum(1 for x in pat if x == 1)
        full = len(pat) - sliding
        decided = True
        notes.append("hybrid_layer_pattern: 1 = sliding-window layer, 0 = full attention")
    elif isinstance(r.get("compress_ratios"), list) and n:
        cr = r.get("compress_ratios")[:n]
        sliding = sum(1 for x in cr if x == 0)
        full = len(cr) - sliding
        decided = True
        notes.append("compress_ratios: ratio 0 = sliding-window-only layer; compressed (ratio > 0) layers counted as full")
    elif n is not None and isinstance(r.get("full_attention_interval"), int) and r.get("full_attention_interval") > 0:
        k = r.get("full_attention_interval")
        full = sum(1 for i in range(n) if (i + 1) % k == 0)
        linear = n - full
        decided = True
        notes.append(f"layer kinds from full_attention_interval={k}")
    elif n is not None and window is not None and use_sw is not False:
        pat = r.get("sliding_window_pattern")
        if isinstance(pat, int) and not isinstance(pat, bool) and pat > 0:
            full = sum(1 for i in range(n) if (i + 1) % pat == 0)
            sliding = n - full
            notes.append(f"layer kinds from sliding_window_pattern={pat}")
        elif isinstance(pat, str) and pat:
            p = pat[:1000]
            seq = [p[i % len(p)] for i in range(n)]
            full = sum(1 for c in seq if c.upper() == "G")
            sliding = n - full
            notes.append(f"layer kinds from sliding_window_pattern={_short(pat, 20)}")
        elif mt.startswith("gemma2") or mt.startswith("cohere2"):
            sliding = sum(1 for i in range(n) if (i + 1) % 2)
            full = n - sliding
            notes.append("gemma2: sliding and full layers alternate")
        elif use_sw is True and isinstance(r.get("max_window_layers"), int):
            mwl = max(0, min(n, r.get("max_window_layers")))
            sliding = n - mwl
            full = mwl
            notes.append(f"use_sliding_window: layers >= max_window_layers={mwl} slide")
        else:
            sliding = n
            notes.append("sliding_window set without a layer pattern: all layers assumed sliding-window")
        decided = True
    if window is not None and use_sw is False:
        notes.append(f"sliding_window={window} ignored (use_sliding_window is false)")
        window = None
    bc = r.get("block_configs")
    if not decided and n is not None and isinstance(bc, list) and bc:
        # DeciLM / Nemotron-NAS: some blocks have no attention at all (no_op / replaced by a linear layer)
        full = sum(1 for b in bc if isinstance(b, Mapping) and isinstance(b.get("attention"), Mapping)
                   and not b["attention"].get("no_op") and not b["attention"].get("replace_with_linear"))
        decided = True
        if full != n:
            notes.append(f"block_configs: {n - full} of {n} blocks have no attention")
    if not decided and n is not None:
        chunk = r.int("attention_chunk_size", fallback_top=False)
        if chunk and mt.startswith("llama4"):
            # Llama 4: RoPE layers use chunked local attention, NoPE layers are global; no_rope_layers
            # (1 = RoPE) defaults to every 4th layer being NoPE (transformers Llama4TextConfig)
            nrl = r.get("no_rope_layers")
            if isinstance(nrl, list) and len(nrl) == n:
                sliding = sum(1 for x in nrl if x == 1)
                full = n - sliding
            else:
                full = sum(1 for i in range(n) if (i + 1) % 4 == 0)
                sliding = n - full
            window = chunk
            notes.append(f"llama4 chunked attention (chunk {chunk}) counted as sliding-window layers")
        else:
            full = n
        decided = True
    if cross and n is not None and full >= cross:
        full -= cross
        notes.append(f"{cross} cross-attention layers included in num_hidden_layers")
    if n is None and not decided:
        return
    if conv:
        notes.append(f"{conv} of {n} layers are gated short-convolution blocks (conv_L_cache="
                     f"{_short(r.get('conv_L_cache'), 10)}): no attention heads, no KV cache; counted in no attention column")
    if sliding and window is None:
        notes.append("sliding-window layers but no sliding_window size")
    rec["num_full_attention_layers"] = full
    rec["num_sliding_window_layers"] = sliding
    rec["num_linear_attention_layers"] = linear
    rec["num_cross_attention_layers"] = cross
    rec["sliding_window"] = window if sliding else None
    if window is not None and not sliding and use_sw is not False:
        notes.append(f"sliding_window={window} given but no sliding-window layers")


def _per_layer_int(r: _Reader, canonical: str, notes: list[str], *, lo: int = 1) -> int | None:
    """An integer field that some configs give per layer (Hunyuan ``moe_topk``, ``moe_intermediate_size``,
    ``num_shared_expert``): a list yields its most common value (ties: the smallest), noted."""
    v, key = r.raw(canonical, fallback_top=False)
    if key is None:
        return None
    if not isinstance(v, list):
        return _as_int(v, canonical, notes, lo=lo)
    bad: list[str] = []  # one summary note, not one per entry (the list is untrusted and may be long)
    vals = [_as_int(x, f"{canonical}[{i}]", bad, lo=lo) for i, x in enumerate(v[:1 << 16])]
    vals = [x for x in vals if x is not None]
    if bad:
        notes.append(f"{canonical} ({key}): {len(bad)} unusable per-layer entries ignored (first: {bad[0]})")
    if not vals:
        notes.append(f"{canonical} ({key}) is a list without usable entries: ignored")
        return None
    distinct = sorted(set(vals))
    common = max(distinct, key=vals.count)
    if len(distinct) == 1:
        notes.append(f"{canonical} given per layer ({key}, {len(v)} entries, all {common})")
    else:
        notes.append(f"{canonical} varies per layer ({key}: {distinct[:6]}): most common value {common} used")
    return common


def _lfm2_ff_dim(r: _Reader, notes: list[str]) -> int | None:
    """LFM2 MLP width (transformers ``Lfm2MLP``): ``intermediate_size`` (older configs: ``block_ff_dim``),
    and when ``block_auto_adjust_ff_dim``: ``int(2 * size / 3)``; then, when ``block_ffn_dim_multiplier``
    is set, times it and rounded up to a multiple of ``block_multiple_of``."""
    key = "intermediate_size" if r.get("intermediate_size") is not None else "block_ff_dim"
    base = _as_int(r.get(key), key, notes)
    if base is None or r.get("block_auto_adjust_ff_dim") is not True:
        return base
    size = int(2 * base / 3)
    how = "2/3"
    mult = r.get("block_ffn_dim_multiplier")
    if isinstance(mult, (int, float)) and not isinstance(mult, bool) and math.isfinite(mult) and 0 < mult < 100:
        mo = _as_int(r.get("block_multiple_of"), "block_multiple_of", notes) or 1
        size = int(mult * size)
        size = mo * ((size + mo - 1) // mo)
        how += f", x block_ffn_dim_multiplier {mult}, multiple of {mo}"
    notes.append(f"intermediate_size = {size} from {key}={base} (Lfm2MLP block_auto_adjust_ff_dim: {how})")
    return size


def _moe(rec: dict, r: _Reader, notes: list[str]) -> None:
    n = rec["num_hidden_layers"]
    experts = r.int("num_experts", fallback_top=False)
    if experts is not None and experts <= 1:
        experts = None
    topk = _per_layer_int(r, "num_experts_per_tok", notes)
    moe_i = _per_layer_int(r, "moe_intermediate_size", notes)
    mt = (rec["text_model_type"] or "").lower()
    if experts is not None and moe_i is None:
        inter = r.int("intermediate_size", fallback_top=False)
        if inter is not None:
            moe_i = inter
            notes.append("moe_intermediate_size absent: experts use intermediate_size")
    is_moe = experts is not None
    if r.get("enable_moe_block") is False:
        is_moe = False
    rec["is_moe"] = is_moe
    if mt.startswith("lfm2"):
        rec["intermediate_size"] = _lfm2_ff_dim(r, notes)
    else:
        rec["intermediate_size"] = r.int("intermediate_size", fallback_top=False)
    if mt == "qwen" and rec["intermediate_size"]:
        # Qwen (v1, remote code QWenMLP): w1 and w2 are each intermediate_size // 2 wide, c_proj maps
        # intermediate_size // 2 back; the config value counts gate and up together
        half = rec["intermediate_size"] // 2
        notes.append(f"qwen (v1): config intermediate_size {rec['intermediate_size']} spans w1 and w2 together "
                     f"(QWenMLP): the gated MLP width is {half}")
        rec["intermediate_size"] = half
    if not is_moe:
        if rec["intermediate_size"] is None and rec["hidden_size"] and not isinstance(r.get("block_configs"), list):
            rec["intermediate_size"] = 4 * rec["hidden_size"]
            notes.append(f"intermediate_size absent: 4 x hidden_size = {rec['intermediate_size']} assumed")
        rec["num_experts"] = None
        rec["num_shared_experts"] = 0
        hop, lbt = r.get("hybrid_override_pattern"), r.get("layers_block_type")
        if isinstance(lbt, list) and lbt:
            rec["num_dense_layers"] = sum(1 for t in lbt if str(t).lower() in ("mlp", "-", "dense"))
        elif isinstance(hop, str) and hop:
            rec["num_dense_layers"] = hop.count("-")
        else:
            rec["num_dense_layers"] = n
        rec["num_moe_layers"] = 0
        return
    rec["num_experts"] = experts
    if topk is None:
        notes.append("num_experts_per_tok missing")
    elif topk > experts:
        notes.append(f"num_experts_per_tok {topk} > num_experts {experts}: contradictory")
    rec["num_experts_per_tok"] = topk
    rec["moe_intermediate_size"] = moe_i
    shared = _per_layer_int(r, "num_shared_experts", notes, lo=0)
    sh_i = r.int("shared_expert_intermediate_size", lo=0, fallback_top=False) or None
    if shared is None and mt.startswith("llama4"):
        shared, sh_i = 1, r.int("intermediate_size", fallback_top=False)
        notes.append("llama4: one shared expert of intermediate_size")
    if shared is None:
        shared = 1 if sh_i else 0
    if shared and sh_i is None and moe_i is not None:
        sh_i = shared * moe_i
        notes.append(f"shared expert width = n_shared_experts x moe_intermediate_size = {sh_i}")
    rec["num_shared_experts"] = shared
    rec["shared_expert_intermediate_size"] = sh_i if shared else None
    # latent MoE (Nemotron-H moe_latent_size, Kimi-K3 routed_expert_hidden_size): the experts run at
    # this width between a down and an up projection of hidden_size
    for key in ("moe_latent_size", "routed_expert_hidden_size"):
        latent = r.int(key, fallback_top=False)
        if latent is not None:
            rec["moe_latent_size"] = latent
            break

    # dense-layer width: some MoE configs keep it apart (MiniMax-M3 dense_intermediate_size,
    # Llama 4 intermediate_size_mlp) while intermediate_size is the expert width
    for key in ("dense_intermediate_size", "intermediate_size_mlp"):
        dense_i = r.int(key, fallback_top=False)
        if dense_i is not None:
            rec["intermediate_size"] = dense_i
            notes.append(f"intermediate_size of dense layers from {key}")
            break
    dense = 0
    if n is not None:
        fkd = r.get("first_k_dense_replace")
        mlf = r.get("moe_layer_freq")
        mol = r.get("mlp_only_layers")
        dss = r.get("decoder_sparse_step")
        ils = r.get("interleave_moe_layer_step")
        mlt = r.get("mlp_layer_types")
        lbt = r.get("layers_block_type")
        hop = r.get("hybrid_override_pattern")
        if isinstance(lbt, list) and lbt:
            moe_layers = sum(1 for t in lbt if str(t).lower() in ("moe", "e"))
            dense = sum(1 for t in lbt if str(t).lower() in ("mlp", "-", "dense"))
            rec["num_moe_layers"], rec["num_dense_layers"] = moe_layers, dense
            return
        if isinstance(hop, str) and hop:
            rec["num_moe_layers"], rec["num_dense_layers"] = hop.count("E"), hop.count("-")
            return
        if isinstance(mlt, list) and mlt:
            dense = sum(1 for t in mlt if str(t).lower() in ("dense", "mlp"))
            rec["num_dense_layers"], rec["num_moe_layers"] = dense, len(mlt) - dense
            return
        ml = r.get("moe_layers")
        if isinstance(ml, list):  # llama4: explicit MoE layer indices
            moe_layers = len({i for i in ml if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n})
            rec["num_dense_layers"], rec["num_moe_layers"] = n - moe_layers, moe_layers
            return
        if isinstance(mlf, list) and mlf:
            moe_layers = sum(1 for x in mlf[:n] if x)
            rec["num_dense_layers"], rec["num_moe_layers"] = n - moe_layers, moe_layers
            return
        is_moe_layer = [True] * n
        if isinstance(fkd, int) and not isinstance(fkd, bool) and fkd > 0:
            for i in range(min(fkd, n)):
                is_moe_layer[i] = False
        if isinstance(mlf, int) and not isinstance(mlf, bool) and mlf > 1:
            for i in range(n):
                if i % mlf != 0:
                    is_moe_layer[i] = False
        if isinstance(dss, int) and not isinstance(dss, bool) and dss > 1:
            for i in range(n):
                if (i + 1) % dss != 0:
                    is_moe_layer[i] = False
        if isinstance(ils, int) and not isinstance(ils, bool) and ils > 1:
            for i in range(n):
                if (i + 1) % ils != 0:
                    is_moe_layer[i] = False
        if isinstance(mol, list):
            for i in mol:
                if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n:
                    is_moe_layer[i] = False
        moe_layers = sum(is_moe_layer)
        rec["num_moe_layers"] = moe_layers
        rec["num_dense_layers"] = n - moe_layers


def _linear(rec: dict, r: _Reader, notes: list[str]) -> None:
    kind = ""
    lac = r.get("linear_attn_config")
    if r.get("linear_num_value_heads") is not None or r.get("linear_num_key_heads") is not None:
        kind = "gdn"
        rec["linear_num_key_heads"] = r.int("linear_num_key_heads", hi=_MAX_HEADS, fallback_top=False)
        rec["linear_num_value_heads"] = r.int("linear_num_value_heads", hi=_MAX_HEADS, fallback_top=False)
        rec["linear_key_head_dim"] = r.int("linear_key_head_dim", fallback_top=False)
        rec["linear_value_head_dim"] = r.int("linear_value_head_dim", fallback_top=False)
        rec["linear_conv_kernel_dim"] = r.int("linear_conv_kernel_dim", fallback_top=False)
    elif isinstance(lac, Mapping):
        kind = "kda"
        h = _as_int(lac.get("num_heads"), "linear_attn_config.num_heads", notes, hi=_MAX_HEADS)
        d = _as_int(lac.get("head_dim"), "linear_attn_config.head_dim", notes)
        rec["linear_num_key_heads"] = h
        rec["linear_num_value_heads"] = h
        rec["linear_key_head_dim"] = d
        rec["linear_value_head_dim"] = d
        rec["linear_conv_kernel_dim"] = _as_int(lac.get("short_conv_kernel_size"), "linear_attn_config.short_conv_kernel_size", notes)
    elif r.get("mamba_num_heads") is not None or r.get("ssm_state_size") is not None or (rec["model_type"] or "").startswith(("mamba", "nemotron_h", "falcon_h", "jamba", "zamba", "granitemoehybrid")):
        if r.get("ssm_state_size") is not None or r.get("mamba_num_heads") is not None or r.get("state_size") is not None:
            kind = "mamba2"
            hidden = rec["hidden_size"]
            nh = r.int("mamba_num_heads", hi=1 << 20, fallback_top=False)
            hd = r.int("mamba_head_dim", fallback_top=False)
            if nh is None and hidden:
                expand = r.int("expand", fallback_top=False) or r.int("mamba_expand", fallback_top=False) or 2
                hd = hd or 64
                nh = expand * hidden // hd
                notes.append(f"mamba heads inferred as expand*hidden/head_dim = {nh}")
            rec["linear_num_value_heads"] = nh
            rec["linear_value_head_dim"] = hd
            rec["mamba_n_groups"] = r.int("n_groups", fallback_top=False) or r.int("mamba_n_groups", fallback_top=False)
            rec["ssm_state_size"] = r.int("ssm_state_size", fallback_top=False) or r.int("state_size", fallback_top=False)
            rec["linear_conv_kernel_dim"] = r.int("conv_kernel", fallback_top=False) or r.int("mamba_d_conv", fallback_top=False)
    has = bool(kind) and (rec["num_linear_attention_layers"] or 0) > 0
    if kind and not has:
        if rec["num_linear_attention_layers"] in (0, None) and rec["num_hidden_layers"]:
            notes.append(f"{kind} fields present but no linear-attention layers in the layer pattern")
    rec["has_linear_attention"] = has
    rec["linear_attention_kind"] = kind if has else ""


def _vision(rec: dict, cfg: Mapping, notes: list[str]) -> None:
    vc = None
    for k in VISION_CONFIG_KEYS:
        v = cfg.get(k)
        if isinstance(v, Mapping) and v:
            vc = v
            break
    xn = cfg.get("cross_attn_every_n_layers")
    if isinstance(xn, int) and not isinstance(xn, bool) and xn > 0:
        notes.append(f"Flamingo-style gated cross-attention every {xn} decoder layers (cross_attn_every_n_layers): "
                     "its heads and widths are not in config.json; not counted in num_cross_attention_layers or params")
    if vc is None:
        rec["has_vision"] = False
        rec["params_vision"] = rec["params_vision_embed"] = rec["params_vision_connector"] = 0.0
        rec["vision_position_embeddings"] = rec["vision_deepstack_layers"] = 0
        for k in ("mm_vision_tower", "vision_tower", "vision_encoder", "vit_path"):
            name = cfg.get(k)
            if isinstance(name, str) and name:
                notes.append(f"vision encoder named only ({k}={_short(name, 60)}): its shape is not in config.json; "
                             "has_vision false, params_vision 0")
                break
        return
    rec["has_vision"] = True
    # open_clip / EVA-CLIP style towers (InfiMM, Qwen-VL "visual"): width / layers / heads or head_width,
    # where embed_dim is the output projection, not the tower width
    open_clip = "width" in vc and "layers" in vc and "hidden_size" not in vc

    def first(keys: tuple[str, ...], field: str, hi: int = _MAX_SIZE) -> int | None:
        for k in keys:
            if vc.get(k) is not None:
                return _as_int(vc.get(k), f"vision {field}", notes, hi=hi)
        return None

    rec["vision_num_heads"] = first(("num_attention_heads", "num_heads", "vt_num_attention_heads", "attention_heads", "n_heads", "heads"), "heads", _MAX_HEADS)
    if open_clip:
        vh = first(("width",), "width")
    else:
        vh = first(("hidden_size", "embed_dim", "vt_hidden_size", "width", "d_model", "dim"), "hidden_size")
    if rec["vision_num_heads"] is None and vh:
        hw = first(("head_width", "head_dim"), "head_width")
        if hw and vh % hw == 0:
            rec["vision_num_heads"] = vh // hw
            notes.append(f"vision heads = width {vh} / head_width {hw} = {vh // hw}")
    depth = first(("depth", "num_hidden_layers", "vt_num_hidden_layers", "num_layers", "layers", "n_layers"), "depth", 1 << 20)
    glob = first(("num_global_layers",), "num_global_layers", 1 << 20)
    if depth is not None and glob:
        depth += glob
        notes.append(f"vision depth includes {glob} global layers")
    rec["vision_hidden_size"] = vh
    rec["vision_depth"] = depth
    vi = first(("intermediate_size", "vt_intermediate_size", "mlp_dim", "ffn_dim"), "intermediate_size")
    if vi is None and vh is not None and isinstance(vc.get("mlp_ratio"), (int, float)) and not isinstance(vc.get("mlp_ratio"), bool):
        ratio = vc.get("mlp_ratio")
        if math.isfinite(ratio) and 0 < ratio < 100:
            vi = int(vh * ratio)
            notes.append(f"vision intermediate_size = hidden_size x mlp_ratio {ratio}")
    rec["vision_intermediate_size"] = vi
    if rec["vision_num_heads"] is None:
        notes.append("vision_config has no head count")
    # vision tower estimate: blocks (qkv + o + 2-matrix MLP, 3 when gated) + patch embedding + learned
    # positions + merger / projector
    vmt = vc.get("model_type") if isinstance(vc.get("model_type"), str) else ""
    top_mt = (rec["model_type"] or "").lower()
    # learned position table rows
    pos_rows = 0
    npe = _as_int(vc.get("num_position_embeddings"), "vision num_position_embeddings", notes) if vc.get("num_position_embeddings") is not None else None
    pes = _as_int(vc.get("position_embedding_size"), "vision position_embedding_size", notes) if vc.get("position_embedding_size") is not None else None
    vpet = vc.get("position_embedding_type")
    if npe:
        pos_rows = npe  # Qwen3-VL / Qwen3.5 pos_embed (vllm models/qwen3_vl.py:617)
    elif pes:
        pos_rows = 2 * pes  # Gemma-4 position_embedding_table: one row set per image axis
    elif not (isinstance(vpet, str) and vpet.lower() in ("rope", "rotary", "none")) and not open_clip \
            and ("siglip" in vmt or "idefics" in vmt or "glm4v" in vmt or "clip" in vmt or "llama4" in vmt):
        # SigLIP / Idefics / GLM-4V / CLIP: one row per patch of the training resolution (+1 class token for CLIP)
        img = _as_int(vc.get("image_size"), "vision image_size", [], hi=1 << 20)
        ps = _as_int(vc.get("patch_size"), "vision patch_size", [], hi=4096)
        if img and ps:
            pos_rows = (img // ps) ** 2 + (1 if ("clip" in vmt or "llama4" in vmt) else 0)
    rec["vision_position_embeddings"] = pos_rows
    ds = vc.get("deepstack_visual_indexes")
    rec["vision_deepstack_layers"] = len(ds) if isinstance(ds, list) and len(ds) <= 1024 else 0
    if vh and depth:
        gated = ((isinstance(vc.get("hidden_act"), str) and vc.get("hidden_act") in ("silu", "swiglu"))
                 or vc.get("naiveswiglu") is True or vmt.startswith("gemma4"))  # Gemma4VisionMLP: gate/up/down
        patch = _as_int(vc.get("patch_size"), "vision patch_size", [], hi=4096) or 14
        chans = _as_int(vc.get("in_channels") or vc.get("num_channels"), "vision channels", [], hi=64) or 3
        tps = _as_int(vc.get("temporal_patch_size"), "vision temporal_patch_size", [], hi=64) or 1
        embed = chans * tps * patch * patch * vh + pos_rows * vh
        merge = _as_int(vc.get("spatial_merge_size"), "vision spatial_merge_size", [], hi=64) or 1
        mks = vc.get("merge_kernel_size")
        mk = [_as_int(x, "vision merge_kernel_size", [], hi=64) for x in mks] if isinstance(mks, list) and len(mks) == 2 else []
        out = _as_int(vc.get("out_hidden_size") or vc.get("projection_dim") or vc.get("vision_output_dim")
                      or vc.get("text_hidden_size") or vc.get("out_dim") or vc.get("output_dim")
                      or (vc.get("embed_dim") if open_clip else None), "vision out dim", []) or rec["hidden_size"] or vh
        # attention width: MoonViT (Kimi-K3) projects q/k/v to qkv_hidden_size (kimi_k25_vit.py wqkv / wo)
        qkv = _as_int(vc.get("qkv_hidden_size"), "vision qkv_hidden_size", notes) or vh
        attn = 4 * vh * qkv
        mlp = (3 if gated else 2) * vh * (vi or 4 * vh)
        scale = _as_int(cfg.get("scale_factor"), "scale_factor", notes, hi=64) if cfg.get("scale_factor") is not None else None
        if top_mt in ("glm4v", "glm4v_moe"):
            # GLM-4.xV (vLLM models/glm4_1v.py:606-692): the blocks' gated MLP is out_hidden_size wide; the
            # merger (Glm4vPatchMerger) is proj (out x out) + a gated MLP of intermediate_size at out_hidden_size;
            # a Conv2d downsample (hidden x out x merge^2) and a learned position embedding of
            # (image_size / patch_size)^2 rows replace the generic merger
            mlp = 3 * vh * out
            if not pos_rows:
                img = _as_int(vc.get("image_size"), "vision image_size", notes, hi=1 << 16) or 0
                pos_rows = (img // patch) ** 2
                rec["vision_position_embeddings"] = pos_rows
                embed += pos_rows * vh
            embed += vh * out * merge * merge
            merger = out * out + 3 * out * (vi or 4 * out)
        elif scale and top_mt.startswith("idefics"):
            # Idefics3 connector: pixel shuffle by scale_factor, then one linear (vllm models/idefics3.py:356-364)
            merger = vh * scale * scale * out
        elif top_mt == "minimax_m3_vl":
            # MiniMax-M3 (vLLM models/minimax_m3/common/vision_tower.py:530-660): projector vision width ->
            # projector_hidden_size -> text width, then the patch merger (text width x spatial_merge^2 ->
            # projector_hidden_size -> text width, img_token_compression_config); both with biases by default
            th = rec["hidden_size"] or out
            mid = _as_int(cfg.get("projector_hidden_size"), "projector_hidden_size", notes) or th
            comp = cfg.get("img_token_compression_config") or vc.get("img_token_compression_config")
            sms = 2
            if isinstance(comp, Mapping) and comp.get("spatial_merge_size") is not None:
                sms = _as_int(comp.get("spatial_merge_size"), "img_token_compression_config.spatial_merge_size",
                              notes, hi=64) or 2
            merger = (vh * mid + mid + mid * th + th) + (th * sms * sms * mid + mid + mid * th + th)
        elif top_mt.startswith(("gemma3", "gemma4")) and merge == 1:
            # Gemma-3 / Gemma-4: one projection vision width -> text width (gemma4_mm.py:1010)
            merger = vh * out
        else:
            if merge == 1 and len(mk) == 2 and all(mk):
                # MoonViT (Kimi-VL / K2.5 / K3): patches merged by merge_kernel_size (kh x kw) before the projector
                mi = vh * mk[0] * mk[1]
            else:
                mi = vh * merge * merge
            # Qwen3-VL: the final merger plus one per deepstack_visual_indexes entry (models/qwen3_vl.py)
            merger = (1 + rec["vision_deepstack_layers"]) * (mi * mi + mi * out)
            ph, pw = vc.get("init_pos_emb_height"), vc.get("init_pos_emb_width")
            if (not pos_rows and isinstance(ph, int) and isinstance(pw, int) and not isinstance(ph, bool)
                    and not isinstance(pw, bool) and 0 < ph * pw <= (1 << 24)):
                # MoonViT learned 2-D position embedding (init_pos_emb_height x width)
                rec["vision_position_embeddings"] = pos_rows = ph * pw
                embed += ph * pw * vh
        block = attn + mlp + 4 * vh
        rec["params_vision"] = float(depth * block + embed + merger)
        rec["params_vision_embed"] = float(embed)
        rec["params_vision_connector"] = float(merger)
    else:
        rec["params_vision"] = 0.0
        rec["params_vision_embed"] = rec["params_vision_connector"] = 0.0
        notes.append("vision tower size unknown: params_vision = 0")


_NAME_QUANT = (("nvfp4", "modelopt", "nvfp4", 4), ("mxfp4", "mxfp4", "mxfp4", 4), ("fp8", "fp8", "", 8),
               ("awq", "awq", "", 4), ("gptq", "gptq", "", 4), ("int4", "", "", 4), ("w4a16", "", "", 4))


def _quant(rec: dict, cfg: Mapping, text: Mapping, notes: list[str], sidecar: tuple[str, dict] | None = None) -> None:
    q = cfg.get("quantization_config")
    if not isinstance(q, Mapping) and text is not cfg:
        q = text.get("quantization_config")
        if isinstance(q, Mapping):
            notes.append("quantization_config read from the text config")
    if q is not None and not isinstance(q, Mapping):
        notes.append("quantization_config is not an object: ignored")
        q = None
    if not q and sidecar is not None:
        q = sidecar[1]
        notes.append(f"no quantization_config in config.json: quantization read from {sidecar[0]}")
    elif q and sidecar is not None:
        notes.append(f"{sidecar[0]} ignored: config.json has a quantization_config")
    if not q:
        rec["is_quantized"] = False
        name = (rec["name"] or "").lower()
        for token, method, fmt, bits in _NAME_QUANT:
            if re.search(rf"(^|[-_.]){token}($|[-_.])", name):
                rec["is_quantized"] = True
                rec["quant_method"] = method or None
                rec["quant_format"] = fmt or None
                rec["quant_bits"] = bits
                notes.append(f"no quantization_config in config.json; '{token}' in the repo name: quantized checkpoint inferred")
                break
        return
    rec["is_quantized"] = True
    method = _clean_str(q.get("quant_method"), "quant_method", notes, cap=60)
    qa = q.get("quant_algo")
    qa = qa.strip() if isinstance(qa, str) else None
    fmt = q.get("format") if isinstance(q.get("format"), str) else None
    bits = None
    group = None
    wbs = q.get("weight_block_size")
    if isinstance(wbs, list) and len(wbs) == 2:
        rec["weight_block_n"] = _as_int(wbs[0], "weight_block_size[0]", notes)
        rec["weight_block_k"] = _as_int(wbs[1], "weight_block_size[1]", notes)
    elif wbs is not None:
        notes.append(f"weight_block_size unreadable ({_short(wbs, 40)})")
    m = (method or "").lower()
    if m in ("awq", "gptq", "autoround", "auto-round", "bitblas", "exl2", "hqq", "quark", "eetq", "aqlm"):
        bits = _as_int(q.get("bits", q.get("w_bit")), "quant bits", notes, hi=64)
        group = _as_int(q.get("group_size", q.get("q_group_size")), "quant group_size", notes, lo=-1, hi=1 << 20)
        if group == -1:
            notes.append("group_size -1: per-channel quantization (one scale per output column)")
    elif m == "bitsandbytes":
        bits = 4 if q.get("load_in_4bit") else (8 if q.get("load_in_8bit") else None)
        fmt = fmt or _clean_str(q.get("bnb_4bit_quant_type"), "bnb_4bit_quant_type", notes, cap=40)
    elif m in ("fp8", "fbgemm_fp8", "fp8_e4m3", "w8a8_fp8"):
        bits = 8
        fmt = fmt or (q.get("fmt") if isinstance(q.get("fmt"), str) else None)
    elif m == "mxfp4":
        bits = 4
        fmt = fmt or "mxfp4"
    # compressed-tensors style groups (also used by modelopt exports and some fp8 hybrids)
    groups = q.get("config_groups")
    if isinstance(groups, Mapping):
        for gname, g in list(groups.items())[:16]:
            w = g.get("weights") if isinstance(g, Mapping) else None
            if isinstance(w, Mapping):
                b = _as_int(w.get("num_bits"), f"config_groups.{_short(gname, 20)}.num_bits", notes, hi=64)
                gs = w.get("group_size")
                gs = _as_int(gs, "config_groups group_size", notes, hi=1 << 20) if gs is not None else None
                if b is not None and (bits is None or b < bits):
                    bits = b
                    group = gs if gs is not None else group
                elif group is None and gs is not None:
                    group = gs
                gfmt = g.get("format") if isinstance(g, Mapping) else None
                if isinstance(gfmt, str) and not fmt:
                    fmt = gfmt
                bs = w.get("block_structure")
                if bs is not None:
                    # compressed-tensors block quantization (strategy "block"): [block_n, block_k], the
                    # same layout as weight_block_size
                    gn = _short(gname, 20)
                    if not (isinstance(bs, list) and len(bs) == 2):
                        notes.append(f"config_groups.{gn}.weights.block_structure unreadable ({_short(bs, 40)})")
                    elif rec["weight_block_n"] is None and rec["weight_block_k"] is None:
                        rec["weight_block_n"] = _as_int(bs[0], f"config_groups.{gn}.block_structure[0]", notes)
                        rec["weight_block_k"] = _as_int(bs[1], f"config_groups.{gn}.block_structure[1]", notes)
                        tg = g.get("targets")
                        if isinstance(tg, list) and tg != ["Linear"]:
                            notes.append(f"block-quantized weights {_short(bs, 20)} ({b}-bit) only for config_groups.{gn} "
                                         f"targets {_short(tg, 80)}")
                    elif [rec["weight_block_n"], rec["weight_block_k"]] != bs:
                        notes.append(f"config_groups.{gn} block_structure {_short(bs, 20)} differs from "
                                     f"[{rec['weight_block_n']}, {rec['weight_block_k']}] (kept)")
        if len(groups) > 1:
            notes.append(f"quantization_config has {len(groups)} config_groups (mixed precision)")
    if group is None and q.get("group_size") is not None and q.get("group_size") != -1:
        group = _as_int(q.get("group_size"), "quant group_size", notes, hi=1 << 20)
    if qa:
        qal = qa.lower()
        moe_algo = q.get("moe_quant_algo")
        if qal == "mixed_precision":
            algos = set()
            ql = q.get("quantized_layers")
            if isinstance(ql, Mapping):
                for i, v in enumerate(ql.values()):
                    if i > 50000:
                        break
                    if isinstance(v, Mapping) and isinstance(v.get("quant_algo"), str):
                        algos.add(v["quant_algo"].lower())
            if isinstance(moe_algo, str):
                algos.add(moe_algo.lower())
            if any("nvfp4" in a for a in algos):
                fmt = "nvfp4"
                bits = 4
                group = group or 16
            elif algos:
                fmt = sorted(algos)[0]
            notes.append(f"mixed-precision modelopt checkpoint ({', '.join(sorted(algos)) or 'per-layer'})")
        else:
            fmt = qal
            if "fp4" in qal:
                bits = 4
                group = group or 16
            elif "fp8" in qal:
                bits = bits or 8
            elif "int4" in qal or "w4" in qal:
                bits = 4
    rec["quant_method"] = method
    rec["quant_format"] = _clean_str(fmt, "quant format", notes, cap=60) if fmt else None
    rec["quant_bits"] = bits
    rec["quant_group_size"] = group
    if method is None:
        notes.append("quantization_config has no quant_method")
    # which parts vLLM really quantizes, and how (lists matched against vLLM's module names)
    cov, cov_notes = quant_coverage.coverage(q, text, cfg, rec)
    rec.update(cov)
    notes.extend(cov_notes)


def _mlp_params(hidden: int, inter: int, gated: bool) -> int:
    return (3 if gated else 2) * hidden * inter


def _params(rec: dict, r: _Reader, cfg: Mapping, notes: list[str]) -> None:
    """Parameter estimate from the shapes (see the module docstring for the convention)."""
    h = rec["hidden_size"]
    n = rec["num_hidden_layers"]
    heads = rec["num_attention_heads"]
    kv = rec["num_key_value_heads"]
    hd = rec["head_dim"]
    vocab = rec["vocab_size"]
    mt = (rec["text_model_type"] or rec["model_type"] or "").lower()
    act = r.get("hidden_act") or r.get("activation_function") or r.get("mlp_hidden_act") or r.get("hidden_activation")
    gated = not (mt in _NONGATED_TYPES or (isinstance(act, str) and act in _NONGATED_ACTS))
    if mt.startswith("gpt2") or mt == "gpt_bigcode":
        gated = False
    if mt == "chatglm" and r.get("inner_hidden_size") is not None and r.get("ffn_hidden_size") is None:
        # ChatGLM-6B (v1): dense_h_to_4h -> GELU -> dense_4h_to_h (its "GLU" class has no gate);
        # ChatGLM2/3 (ffn_hidden_size) use SwiGLU with dense_h_to_4h of 2 x ffn_hidden_size
        gated = False
        notes.append("chatglm v1 (inner_hidden_size): non-gated GELU MLP")
    rec["mlp_gated"] = gated
    if not (h and n and vocab):
        return

    # --- attention mixer (per softmax-attention layer)
    attn = 0
    if rec["is_mla"] and heads:
        qk = (rec["qk_nope_head_dim"] or 0) + (rec["qk_rope_head_dim"] or 0)
        vd = rec["v_head_dim"] or 0
        ql = rec["q_lora_rank"]
        kvl = rec["kv_lora_rank"] or 0
        rope = rec["qk_rope_head_dim"] or 0
        q = (h * ql + ql + ql * heads * qk) if ql else h * heads * qk
        attn = q + h * (kvl + rope) + kvl + kvl * heads * ((rec["qk_nope_head_dim"] or 0) + vd) + heads * vd * h
        if r.get("mla_use_output_gate") is True:
            # Kimi-K3 MLA output gate: hidden -> heads x v_head_dim, fused with q_a / kv_a
            # (vLLM models/kimi_k3/nvidia/mla.py:220-250 fused_qkv_a_g_proj)
            attn += h * heads * vd
    elif heads and kv and hd:
        heads = rec["num_attention_heads_mean"] or heads  # q / o / gates: heads averaged over the layers
        vd = rec["v_head_dim"] or hd
        ql = r.int("q_lora_rank", fallback_top=False)
        q = (h * ql + ql * heads * hd) if ql else h * heads * hd
        ol = r.int("o_lora_rank", fallback_top=False)
        o = heads * vd * h
        if ol:
            og = r.int("o_groups", fallback_top=False) or 1
            # DeepSeek-V4 grouped low-rank output: og groups of (heads*vd/og -> ol), then og*ol -> hidden
            o = heads * vd * ol + og * ol * h
        # DeepSeek-V4 (o_lora_rank): one projection wkv serves as K and V (fused_wqa_wkv,
        # vllm/models/deepseek_v4/attention.py:252-258)
        attn = q + h * kv * hd + (0 if ol else h * kv * vd) + o
        if rec["attn_output_gate"]:
            attn += h * heads * hd  # q_proj emits heads x head_dim gate values too
        if rec["attn_head_gate"]:
            attn += h * heads  # g_proj: one gate per head
    attn_full = attn
    ghd, gkv = rec["global_head_dim"], rec["num_global_key_value_heads"]
    if (ghd or gkv) and heads and kv and hd and not rec["is_mla"]:
        # Gemma-4 full-attention layers: q/o of heads x global_head_dim, k and v of the global KV heads
        # (vLLM allocates v even for attention_k_eq_v, whose checkpoint ships k only: gemma4.py:90-118)
        g, gk = ghd or hd, gkv or kv
        attn_full = 2 * h * heads * g + 2 * h * gk * g
    if rec["linear_bias"] and heads and kv and hd:
        attn += heads * hd + 2 * kv * hd + h
        attn_full += heads * hd + 2 * kv * hd + h
    norms = 2 * h

    # --- linear mixers
    lin = 0
    kind = rec["linear_attention_kind"]
    if kind == "gdn":
        nk, nv = rec["linear_num_key_heads"] or 0, rec["linear_num_value_heads"] or 0
        dk, dv = rec["linear_key_head_dim"] or 0, rec["linear_value_head_dim"] or 0
        kc = rec["linear_conv_kernel_dim"] or 4
        conv_dim = 2 * nk * dk + nv * dv
        lin = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + conv_dim * kc + nv * dv * h + 2 * nv + dv
    elif kind == "kda":
        nh, d = rec["linear_num_value_heads"] or 0, rec["linear_value_head_dim"] or 0
        kc = rec["linear_conv_kernel_dim"] or 4
        proj = nh * d
        lin = 3 * h * proj + 3 * proj * kc + 2 * (h * d + d * proj) + h * nh + proj * h + 2 * nh
        lac = r.get("linear_attn_config")
        if isinstance(lac, Mapping) and lac.get("use_full_rank_gate") is True:
            # Kimi-K3 KDA: the output gate is one hidden -> heads x head_dim projection instead of the
            # low-rank g_a / g_b pair (vLLM models/kimi_k3/nvidia/kda.py:625-660, in_proj_qkvgfab)
            lin += h * proj - (h * d + d * proj)
    elif kind == "mamba2":
        nh, d = rec["linear_num_value_heads"] or 0, rec["linear_value_head_dim"] or 0
        g, s = rec["mamba_n_groups"] or 1, rec["ssm_state_size"] or 0
        kc = rec["linear_conv_kernel_dim"] or 4
        inner = nh * d
        lin = h * (2 * inner + 2 * g * s + nh) + (inner + 2 * g * s) * kc + inner * h + 3 * nh + inner

    # --- MLPs
    inter = rec["intermediate_size"]
    dense_mlp = _mlp_params(h, inter, gated) if inter else 0
    moe_total = moe_active = 0
    if rec["is_moe"]:
        e, k = rec["num_experts"] or 0, rec["num_experts_per_tok"] or 0
        mi = rec["moe_intermediate_size"] or 0
        latent = rec["moe_latent_size"]
        eh = latent or h
        one = _mlp_params(eh, mi, gated)
        proj = 2 * h * latent if latent else 0
        shared = _mlp_params(h, rec["shared_expert_intermediate_size"], gated) if rec["shared_expert_intermediate_size"] else 0
        router = h * e
        moe_total = e * one + shared + router + proj
        moe_active = k * one + shared + router + proj
        if r.get("enable_moe_block") is True:
            # Gemma 4: every MoE layer keeps its dense MLP next to the experts (Gemma4TextDecoderLayer)
            moe_total += dense_mlp
            moe_active += dense_mlp

    # --- per-layer kinds
    n_attn = (rec["num_full_attention_layers"] or 0) + (rec["num_sliding_window_layers"] or 0)
    n_lin = rec["num_linear_attention_layers"] or 0
    n_cross = rec["num_cross_attention_layers"] or 0
    n_moe = rec["num_moe_layers"] or 0 if rec["is_moe"] else 0
    n_dense = rec["num_dense_layers"] if rec["num_dense_layers"] is not None else n
    if not rec["is_moe"]:
        n_dense = n
    n_full = rec["num_full_attention_layers"] or 0
    mixers = (n_attn - n_full) * attn + n_full * attn_full + n_lin * lin + n_cross * attn
    if rec["num_indexer_layers"] and not rec["is_mla"] and not rec["q_lora_rank"] and rec["index_n_heads"]:
        # MiniMax-M3: index_q (heads x dim) and index_k (one head) in qkv_proj, plus their q / k norms
        inh, ihd = rec["index_n_heads"], rec["index_head_dim"]
        mixers += rec["num_indexer_layers"] * (h * inh * ihd + h * ihd + 2 * ihd)
    if rec["num_indexer_layers"] and rec["q_lora_rank"] and rec["is_mla"]:
        # DSA indexer (vllm/models/deepseek_v32/attention.py:71-87): wq_b q_lora_rank -> heads x dim, fused
        # wk + weights_proj hidden -> dim + heads, k_norm LayerNorm (weight and bias)
        inh, ihd = rec["index_n_heads"], rec["index_head_dim"]
        mixers += rec["num_indexer_layers"] * (rec["q_lora_rank"] * inh * ihd + h * (ihd + inh) + 2 * ihd)
    if rec["o_lora_rank"] and hd:
        # DeepSeek-V4 KV compressors (vllm/models/deepseek_v4/compressor.py:239-280): fused wkv + wgate,
        # hidden -> 2 x coff x head_dim (coff 2 on the overlapping ratio-4 layers), a norm; ape not counted
        n_c, n_i = rec["num_compressor_layers"] or 0, rec["num_indexer_layers"] or 0
        mixers += n_c * (2 * h * hd + hd) + n_i * 2 * h * hd
        if n_i and rec["index_n_heads"] and rec["index_head_dim"] and rec["q_lora_rank"]:
            # V4 indexer (attention.py:989-1045): wq_b, weights_proj (hidden -> heads), its own compressor
            inh, ihd = rec["index_n_heads"], rec["index_head_dim"]
            mixers += n_i * (rec["q_lora_rank"] * inh * ihd + h * inh + 4 * h * ihd + ihd)
    hc = rec["hc_mult"]
    if hc:
        # DeepSeek-V4 hyper-connections (vllm/models/deepseek_v4/nvidia/model.py:617-665, 883-903):
        # per layer hc_attn_* and hc_ffn_* = 2 x ((2 + m) m x m hidden + (2 + m) m + 3), head m x m hidden + m + 1
        mix = (2 + hc) * hc
        mixers += n * 2 * (mix * hc * h + mix + 3) + hc * hc * h + hc + 1
    if mt.startswith("lfm2"):
        # LFM2 short-convolution blocks (Lfm2ShortConv): in_proj h -> 3*conv_dim, depthwise conv of
        # conv_L_cache taps, out_proj conv_dim -> h
        n_conv = n - n_attn - n_lin - n_cross
        cd = r.int("conv_dim", fallback_top=False) or h
        taps = r.int("conv_L_cache", fallback_top=False) or 3
        mixers += max(n_conv, 0) * (3 * h * cd + cd * taps + cd * h)
    hybrid_blocks = mt.startswith("nemotron_h") or isinstance(r.get("hybrid_override_pattern"), str) or isinstance(r.get("layers_block_type"), list)
    if hybrid_blocks:
        # Nemotron-H: each block is one of mamba / attention / mlp / moe, one norm each
        mlp_blocks = rec["num_dense_layers"] or 0
        total = mixers + mlp_blocks * dense_mlp + n_moe * moe_total + n * h
        active = mixers + mlp_blocks * dense_mlp + n_moe * moe_active + n * h
    elif isinstance(r.get("block_configs"), list):
        total = active = _decilm_blocks(r.get("block_configs"), h, heads or 0, hd or 0, notes) + n * norms
    else:
        total = mixers + n_dense * dense_mlp + n_moe * moe_total + n * norms
        active = mixers + n_dense * dense_mlp + n_moe * moe_active + n * norms
    if rec["linear_bias"] and inter:
        # up (and gate) and down biases of the dense MLPs
        b = (2 if gated else 1) * inter + h
        total += n_dense * b
        active += n_dense * b
    embed = vocab * h + (rec["learned_position_embeddings"] or 0) * h
    ple, ple_v = rec["hidden_size_per_layer_input"], rec["vocab_size_per_layer_input"]
    if ple and ple_v:
        # Gemma-4 PLE (vllm models/gemma4.py:1019-1052, 674-703): embed_tokens_per_layer (pv x n*ple),
        # per_layer_model_projection (h -> n*ple), its norm, and per layer a gate (h -> ple), a
        # projection (ple -> h) and a norm
        per_layer = 2 * h * ple + h
        total += n * per_layer
        active += n * per_layer
        embed += ple_v * n * ple + h * n * ple + ple
    head = 0 if rec["tie_word_embeddings"] else vocab * h
    pv = rec["params_vision"] or 0.0
    rec["params_total"] = float(total + embed + head + h) + pv
    rec["params_active"] = float(active + embed + head + h) + pv
    nextn = r.int("num_nextn_predict_layers", lo=0, fallback_top=False) or r.int("mtp_num_hidden_layers", lo=0, fallback_top=False)
    if nextn:
        notes.append(f"{nextn} MTP/nextn layer(s) not counted in params_total")


def _decilm_blocks(blocks: list, h: int, heads: int, hd: int, notes: list[str]) -> int:
    """DeciLM / Nemotron-NAS blocks: per-block attention (``n_heads_in_group``) and FFN (``ffn_mult``).

    FFN width follows DeciLM's ``_ffn_mult_to_intermediate_size``: ``int(2 * ffn_mult * hidden / 3)``
    rounded up to a multiple of 256.
    """
    total = 0
    for b in blocks:
        att = b.get("attention") if isinstance(b, Mapping) else None
        if isinstance(att, Mapping) and not att.get("no_op"):
            if att.get("replace_with_linear"):
                total += h * h
            else:
                g = att.get("n_heads_in_group")
                kvb = heads // g if isinstance(g, int) and not isinstance(g, bool) and g > 0 else heads
                total += 2 * h * heads * hd + 2 * h * kvb * hd
        ffn = b.get("ffn") if isinstance(b, Mapping) else None
        if not isinstance(ffn, Mapping) or ffn.get("no_op"):
            continue
        if ffn.get("replace_with_linear"):
            total += h * h
            continue
        mult = ffn.get("ffn_mult")
        if isinstance(mult, (int, float)) and not isinstance(mult, bool) and math.isfinite(mult) and 0 < mult < 1000:
            inter = int(2 * mult * h / 3)
            inter = -(-inter // 256) * 256
            total += 3 * h * inter
    notes.append("per-block FFN widths from block_configs (ffn_mult)")
    return total


def _status(rec: dict, notes: list[str]) -> None:
    heads, kv, hd = rec["num_attention_heads"], rec["num_key_value_heads"], rec["head_dim"]
    problems = []
    attn_layers = (rec["num_full_attention_layers"] or 0) + (rec["num_sliding_window_layers"] or 0)
    pure_ssm = rec["has_linear_attention"] and attn_layers == 0
    if heads is None and not pure_ssm:
        problems.append("no usable num_attention_heads")
    if heads is not None and kv is not None and not rec["is_mla"]:
        if kv > heads:
            problems.append(f"num_key_value_heads ({kv}) > num_attention_heads ({heads})")
        elif heads % kv:
            problems.append(f"num_attention_heads ({heads}) not a multiple of num_key_value_heads ({kv})")
    if hd is None and not pure_ssm:
        problems.append("no usable head_dim")
    if rec["hidden_size"] is None:
        problems.append("no usable hidden_size")
    if rec["num_hidden_layers"] is None:
        problems.append("no usable num_hidden_layers")
    if problems:
        rec["status"] = "error"
        rec["status_reason"] = "; ".join(problems)


# ------------------------------------------------------------------------------------------------
# records <-> DataFrame, files
# ------------------------------------------------------------------------------------------------


def _na(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _whole(v: Any) -> int:
    if isinstance(v, float) and not v.is_integer():
        raise ValueError(f"{v!r} is not a whole number")
    return int(v)


def _coerce_named(values: list, dtype: str, name: str) -> pd.api.extensions.ExtensionArray | Any:
    """:func:`_coerce_column` whose errors name the column (a foreign or hand-edited catalog file used to
    fail with a bare ``invalid literal for int()``)."""
    try:
        return _coerce_column(values, dtype)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"catalog column {name!r} ({dtype}): {type(exc).__name__}: {exc}") from exc


def _coerce_column(values: list, dtype: str) -> pd.api.extensions.ExtensionArray | Any:
    if dtype == "Int64":
        return pd.array([None if _na(v) else _whole(v) for v in values], dtype="Int64")
    if dtype == "boolean":
        return pd.array([None if v is None or v is pd.NA else bool(v) for v in values], dtype="boolean")
    if dtype == "float64":
        return pd.array([math.nan if v is None or v is pd.NA else float(v) for v in values], dtype="float64")
    return pd.array([None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else str(v) for v in values], dtype="string")


def catalog_from_records(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """DataFrame with the schema's columns (order of ``schema.COLUMN_NAMES``) and dtypes.

    Missing keys become NA; extra keys are dropped.
    """
    recs = list(records)
    data = {}
    for name in schema.COLUMN_NAMES:
        data[name] = _coerce_named([rc.get(name) for rc in recs], schema.COLUMN_DTYPES[name], name)
    return pd.DataFrame(data, columns=list(schema.COLUMN_NAMES))


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """Cast a DataFrame to the schema (adds missing columns as NA, drops extras, fixes order)."""
    out = {}
    n = len(df)
    for name in schema.COLUMN_NAMES:
        dt = schema.COLUMN_DTYPES[name]
        if name in df.columns:
            col = df[name]
            if str(col.dtype) == dt:
                out[name] = col.reset_index(drop=True)
            else:
                out[name] = pd.Series(_coerce_named(col.tolist(), dt, name))
        else:
            out[name] = pd.Series(_coerce_column([None] * n, dt))
    return pd.DataFrame(out, columns=list(schema.COLUMN_NAMES))


def model_id_from_filename(path: str | os.PathLike) -> str:
    """``<org>--<name>.json`` -> ``org/name`` (only the first ``--`` separates org from name)."""
    stem = Path(path).name
    if stem.endswith(".json"):
        stem = stem[:-5]
    org, sep, name = stem.partition("--")
    return f"{org}/{name}" if sep else stem


def read_sidecars(folder: str | os.PathLike | None, model_id: str) -> dict[str, bytes]:
    """``{file name: bytes}`` of the :data:`QUANT_SIDECARS` in ``folder/<org>--<name>/`` (empty when the
    folder or the files are absent; a file larger than 1 MiB or unreadable is skipped)."""
    if folder is None:
        return {}
    d = Path(folder) / model_id.replace("/", "--")
    out: dict[str, bytes] = {}
    for name in QUANT_SIDECARS:
        p = d / name
        try:
            if p.is_file() and p.stat().st_size <= _MAX_SIDECAR_BYTES:
                out[name] = p.read_bytes()
        except OSError:
            continue
    return out


def default_sidecars_dir() -> Path:
    """``data/sidecars/``: verbatim quantization sidecars of catalog models (see its README)."""
    return default_catalog_path().with_name("sidecars")


def read_config_file(path: str | os.PathLike, *, source: str = "snapshot", sha: str | None = None,
                     fetched_at: str | None = None, sidecars: str | os.PathLike | None = None) -> dict[str, Any]:
    """Read and normalize one ``<org>--<name>.json`` file; unreadable files give a row with the reason.
    ``sidecars``: a folder holding ``<org>--<name>/quantize_config.json`` etc. (:func:`read_sidecars`)."""
    mid = model_id_from_filename(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        rec = normalize_config({}, mid, source=source, sha=sha, fetched_at=fetched_at)
        rec["status"], rec["status_reason"] = "error", f"unreadable file: {e.strerror or e}"
        rec["parse_notes"] = rec["status_reason"]
        return rec
    return normalize_config(data, mid, source=source, sha=sha, fetched_at=fetched_at,
                            sidecars=read_sidecars(sidecars, mid))


def build_catalog(folder: str | os.PathLike, *, fetched_at: str | None = None,
                  shas: Mapping[str, str] | None = None, sidecars: str | os.PathLike | None = None) -> pd.DataFrame:
    """Catalog of every ``*.json`` file in ``folder`` (named ``<org>--<name>.json``), one row per file.

    ``source`` is ``snapshot``; ``fetched_at`` defaults to each file's modification time (UTC);
    ``shas`` optionally maps model_id -> Hub commit sha; ``sidecars`` is a folder of per-model
    quantization sidecars (``<org>--<name>/quantize_config.json``, :func:`read_sidecars`; the shipped
    catalog uses :func:`default_sidecars_dir`). Rows are sorted by model_id.
    Raises ``FileNotFoundError`` / ``NotADirectoryError`` when ``folder`` is not a directory.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a directory")
    recs = []
    for p in sorted(folder.glob("*.json")):
        ts = fetched_at
        if ts is None:
            try:
                ts = datetime.fromtimestamp(p.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            except OSError:
                ts = None
        mid = model_id_from_filename(p)
        recs.append(read_config_file(p, fetched_at=ts, sha=(shas or {}).get(mid), sidecars=sidecars))
    df = catalog_from_records(recs)
    return df.sort_values("model_id", kind="stable").reset_index(drop=True)


def default_catalog_path() -> Path:
    """The shipped catalog, ``data/catalog.parquet`` beside the package (works with ``pip install -e .``)."""
    return Path(__file__).resolve().parent.parent / "data" / "catalog.parquet"


def load_catalog(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Read a catalog parquet file (default: the shipped one) and conform it to the schema.

    Raises ``FileNotFoundError`` when ``path`` is not a file, ``ValueError`` naming the column when a
    column cannot be cast to the schema's dtype, and pyarrow's error for a file that is not parquet.
    """
    p = Path(path) if path is not None else default_catalog_path()
    if not p.is_file():  # pyarrow reads a directory as a dataset and reports a bare path otherwise
        raise FileNotFoundError(f"no catalog file at {p}")
    df = pd.read_parquet(p)
    return conform(df)


def write_catalog(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``df`` (conformed to the schema) to parquet atomically: temp file beside it + ``os.replace``.

    A failure at any point leaves an existing file at ``path`` untouched. Returns the path.
    """
    out = conform(df)
    return atomic_write(path, lambda fh: out.to_parquet(fh, index=False))


def merge_catalog(old: pd.DataFrame | None, new: pd.DataFrame | None) -> pd.DataFrame:
    """Union of two catalogs by ``model_id``: rows of ``new`` replace rows of ``old`` with the same id.

    Rows of ``old`` absent from ``new`` are kept; duplicates inside ``new`` keep the last. Sorted by
    model_id, schema dtypes.
    """
    frames = [conform(d) for d in (old, new) if d is not None and len(d)]
    if not frames:
        return catalog_from_records([])
    both = pd.concat(frames, ignore_index=True)
    both = both.drop_duplicates("model_id", keep="last")
    return both.sort_values("model_id", kind="stable").reset_index(drop=True)


def data_readme(df: pd.DataFrame | None = None) -> str:
    """Text of ``data/README.md``: the shipped files, the snapshot date, refresh commands, and every
    catalog column with its dtype and meaning (from :mod:`dashboard.schema`)."""
    df = load_catalog() if df is None else df
    snap = df[df["source"] == "snapshot"]
    dates = sorted({str(x)[:10] for x in snap["fetched_at"].dropna()})
    date = dates[-1] if dates else "unknown"
    counts = ", ".join(f"{k} {v}" for k, v in sorted(df["status"].value_counts().items()))
    lines = [
        "# data/",
        "",
        "<!-- generated by `python -m dashboard.catalog readme`: edit dashboard/catalog.py or dashboard/schema.py, then regenerate -->",
        "",
        "- `catalog.parquet`: the shipped catalog the dashboard opens on. One row per model, built by",
        "  `dashboard.catalog` from verbatim Hub `config.json` files (`../shared/hub-configs/`, see its",
        "  `SOURCES.tsv`); raw configs are not in the repo. Quantization sidecars some GPTQ / AWQ repositories",
        "  keep beside `config.json` (`quantize_config.json`, `quant_config.json`) are read from `sidecars/`",
        "  (verbatim, each with its source in `sidecars/README.md`) when `config.json` has none.",
        f"  Snapshot: {len(snap)} models read on {date} (`fetched_at`); {len(df)} rows in all ({counts}).",
        "- `gpus.csv`: GPU specs for the memory model (see `dashboard/memory.py`).",
        "",
        "## Refresh",
        "",
        "From the repo root:",
        "",
        "```bash",
        "# rebuild from the snapshot folder (exactly one row per file; atomic write; sidecars from data/sidecars)",
        "python scripts/build_catalog.py ../shared/hub-configs",
        "# same, as a module",
        "python -m dashboard.catalog build ../shared/hub-configs -o data/catalog.parquet",
        "# add or refresh models from the Hub (rows from earlier runs are kept; needs network / HF_TOKEN for gated repos)",
        "python -m dashboard.hub scrape --help",
        "# regenerate this file after a rebuild or a schema change",
        "python -m dashboard.catalog readme",
        "# regenerate dashboard/catalog_aliases.py after upgrading transformers",
        "python -m dashboard.catalog aliases",
        "```",
        "",
        "## Conventions",
        "",
        "- Counts and sizes are pandas `Int64` (nullable); `<NA>` means the config does not say and nothing",
        "  sound could be inferred; the reason is in `parse_notes`. Sizes are elements, not bytes.",
        "- Parameter counts are plain counts (`float64`), estimated from the shapes: embedding, LM head unless",
        "  tied, all decoder layers and the vision tower; multi-token-prediction (MTP / nextn) layers are",
        "  excluded, as in published totals. Biases are counted for models whose every linear layer has one",
        "  (`linear_bias`) and for some vision connectors; other biases are left out (well under 0.1 %).",
        "- Only rows with `status == \"ok\"` carry shapes the rules can rely on; other rows keep their reason",
        "  in `status_reason` and `parse_notes`.",
        "- Strings come from untrusted configs: escape before rendering.",
        "",
        "## GPUs (`gpus.csv`)",
        "",
        "One row per GPU (32 cards, read on 2026-12-01 from the public pages each row cites): `gpu` (the id",
        "`dashboard.memory.capacity`, `planner.plan` and `--gpu` take), `name` (as the driver names it), `vendor`,",
        "`memory_bytes` (total device memory, the figure the engines size against), `memory_mib`, `memory_gib`,",
        "`memory_figure` (`nvidia-smi`: `memory.total` MiB x 2^20 = NVML total, which is",
        "`torch.cuda.get_device_properties().total_memory` on most cards -- the B200's totalGlobalMem is ~0.7 GiB",
        "lower; `rocm-smi`: VRAM Total for AMD; `spec-sheet`: no public driver transcript was found, so the",
        "vendor's decimal GB rounded down to whole MiB -- a lower bound, 2-7 % below what drivers report on cards",
        "where both are known, e.g. H100 80 GB: 76293 MiB spec vs 81559 MiB driver), `source_url` (the public",
        "page showing the figure: a GitHub issue with an nvidia-smi transcript, or the vendor's spec page),",
        "`memory_source` (the figure in words), `mem_get_info_gib` (cudaMemGetInfo total where a public log",
        "shows it), `compute_capability` (NVIDIA CUDA compute capability `major.minor`, e.g. `9.0`; the LLVM",
        "`gfx` target for AMD; the planner refuses bf16 below 8.0, FP8 below 8.9 and NVFP4 before Blackwell from",
        "it), `gpus_per_node` (GPUs in one node of the usual platform: 8 on an HGX board, 72 in an NVL72 rack,",
        "4 or 8 in a PCIe server, 1 per GH200 superchip), `form_factor` (that platform) and `platform_source`",
        "(public pages for both). A card not in the table is given by its memory per GPU: `other:<GiB>` (e.g.",
        "`other:24`) wherever a GPU id is taken (API, `tp-planner plan/check --gpu`, the dashboard's GPU select",
        "\"Other (GiB)…\" and the `gpu=` link parameter); its compute capability is unknown, so no dtype is",
        "refused and the plan says the dtype check was skipped. The budget rules live in `dashboard/memory.py`:",
        "vLLM `gpu_memory_utilization` and SGLang `mem_fraction_static` are fractions of this total; TensorRT-LLM",
        "`free_gpu_memory_fraction` is a fraction of what is free after the weights. To add a GPU, append a row",
        "with a driver figure (or a flagged spec-sheet figure), compute capability, GPUs per node and their",
        "public URLs; `tests/test_gpus.py` checks the table (unique ids, a URL per row, `memory_mib x 2^20 =",
        "memory_bytes`, a capability the planner parses, the flag) and pins the memory of the original ids.",
        "",
        "## Columns",
        "",
        "| column | dtype | meaning |",
        "|---|---|---|",
    ]
    for name, dtype, doc in schema.COLUMNS:
        cell = doc.replace("|", "\\|")
        lines.append(f"| `{name}` | {dtype} | {cell} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m dashboard.catalog build FOLDER [-o data/catalog.parquet] [--merge] [--sidecars DIR]``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m dashboard.catalog", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the catalog from a folder of <org>--<name>.json configs")
    b.add_argument("folder")
    b.add_argument("-o", "--output", default=str(default_catalog_path()))
    b.add_argument("--merge", action="store_true", help="keep rows of the existing output absent from the folder")
    b.add_argument("--sidecars", default=str(default_sidecars_dir()),
                   help="folder of <org>--<name>/quantize_config.json sidecars (default: data/sidecars)")
    sub.add_parser("aliases", help="regenerate dashboard/catalog_aliases.py from the installed transformers")
    rd = sub.add_parser("readme", help="regenerate data/README.md from the schema and the shipped catalog")
    rd.add_argument("-o", "--output", default=str(default_catalog_path().with_name("README.md")))
    args = ap.parse_args(argv)

    def fail(msg: str) -> int:  # bad input: one line on stderr, exit 2, nothing written
        print(f"error: {msg}", file=sys.stderr)
        return 2

    if args.cmd == "aliases":
        print(f"wrote {write_transformers_snapshot()}")
        return 0
    out = Path(args.output)
    if out.is_dir():
        return fail(f"cannot write {out}: it is a directory (give a file path with -o)")
    if args.cmd == "readme":
        try:
            atomic_write_text(out, data_readme())
        except OSError as exc:
            return fail(f"cannot write {out}: {exc}")
        print(f"wrote {args.output}")
        return 0
    try:
        df = build_catalog(args.folder, sidecars=args.sidecars)
    except OSError as exc:
        return fail(str(exc))
    if not len(df):  # a wrong path must not replace a catalog with an empty one
        return fail(f"no <org>--<name>.json config files in {args.folder}; nothing written")
    if args.merge and out.exists():
        try:
            old = load_catalog(out)
        except Exception as exc:  # noqa: BLE001 - never overwrite a catalog we cannot read
            return fail(f"the catalog {out} exists but cannot be read ({type(exc).__name__}: {exc}); "
                        "nothing written: move it away or drop --merge")
        df = merge_catalog(old, df)
    try:
        write_catalog(df, out)
    except OSError as exc:
        return fail(f"cannot write {out}: {exc}")
    counts = df["status"].value_counts().to_dict()
    print(f"wrote {len(df)} rows to {args.output}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
