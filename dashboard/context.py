"""The longest context each engine accepts for a model, from its ``config.json``, and the engines'
start-up refusal when the requested context is longer.

Ported from the engines' own code (pure logic, no I/O):

* vLLM 0.33.0: ``vllm/transformers_utils/model_arch_config_convertor.py:374-407``
  ``derive_max_model_len_and_key`` (the smallest of :data:`VLLM_KEYS` in the text config;
  ``model_max_length`` overrides), then ``vllm/config/model.py:2545-2690`` ``_get_and_verify_max_len``:
  the RoPE scaling ``factor`` multiplies the derived length except for the rope types in
  :data:`VLLM_ROPE_NO_FACTOR` and for Gemma 3 (``"gemma3" in model_type``); a user ``max_model_len``
  above it raises ``ValueError`` at ``vllm/config/model.py:2680`` (:func:`vllm_refusal`). The
  tokenizer's ``model_max_length`` is consulted there only for pooling runners with absolute position
  embeddings (``ModelConfig.get_and_verify_max_len``, ``model.py:2147-2159``); the planner plans
  generation, so it is not needed (and not available: the catalog reads ``config.json`` only). With no
  key at all vLLM accepts any user ``max_model_len`` unchecked (2048 when none is given): the limit is
  then unknown (``None``).
* SGLang 0.5.23: ``sglang/srt/configs/model_config.py:1290-1316`` ``_derive_context_length`` with
  ``sglang/srt/utils/hf_transformers/common.py:668-694`` ``get_context_length`` (the *first* of
  :data:`SGLANG_KEYS`, times the ``rope_scaling`` factor unless the rope parameters carry
  ``original_max_position_embeddings`` or the rope type is ``llama3``; 2048 when no key is present);
  a longer ``--context-length`` raises ``ValueError`` at ``model_config.py:1314`` (:func:`sglang_refusal`).
* TensorRT-LLM: not modelled (``trtllm-serve --max_seq_len`` is not checked here).

Both engines read the config through transformers (5.x): ``getattr`` follows the config class's
``attribute_map`` (GPT-2's ``max_position_embeddings`` is ``n_positions``), and ``rope_scaling`` is the
standardized ``rope_parameters`` (``transformers.modeling_rope_utils.standardize_rope_params``: a
missing ``rope_type`` is ``type`` or ``"default"``; ``llama3`` / ``yarn`` / ``longrope`` get
``original_max_position_embeddings``). Class defaults of keys a ``config.json`` omits are not known
here (the config class is never instantiated).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dashboard import frameworks
from dashboard.frameworks.sglang.context import (  # noqa: F401  (re-exported)
    SGLANG_RAISE_SITE, SGLANG_RELEASE, sglang_message)
from dashboard.frameworks.vllm.context import (  # noqa: F401  (re-exported)
    VLLM_RAISE_SITE, VLLM_RELEASE, vllm_message)

#: vLLM's keys, in its order (``derive_max_model_len_and_key``); the smallest present value wins.
VLLM_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
             "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
#: vLLM rope types whose ``factor`` does not multiply the derived length (``_get_and_verify_max_len``).
VLLM_ROPE_NO_FACTOR = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")
#: SGLang's keys, in its order (``CONTEXT_LENGTH_KEYS``); the first present value wins.
SGLANG_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
#: SGLang's length when no key is present (``get_context_length``).
SGLANG_DEFAULT_CONTEXT = 2048
#: Lengths beyond this are not a context length (hostile or corrupt configs): the limit is unknown.
_MAX_LEN = 1 << 40

#: Model types whose transformers 5.24.0 config class keeps ``rope_parameters`` nested by layer type
#: (``{"full_attention": {...}, "sliding_attention": {...}}``) even when ``config.json`` has one flat
#: ``rope_scaling``: SGLang's ``rope_scaling.get("factor", 1)`` then finds no factor. Listed by
#: instantiating every default config class of ``CONFIG_MAPPING`` and keeping those whose
#: ``rope_parameters`` is a dict of dicts.
NESTED_ROPE_TYPES = frozenset((
    "beam", "deepseek_v4", "diffusion_gemma_text", "dory", "dots3_note_text", "embedding_gemma2_text",
    "gemma3_text", "gemma3n_text", "gemma4_text", "gemma4_unified_text", "laguna", "lfm3", "mellum",
    "mimo_v2_flash", "modernbert", "modernbert-decoder", "neomme", "olmo3", "step3p5", "t5gemma2_decoder",
    "t5gemma2_text", "ultrabert", "zaya"))


class _Bad(ValueError):
    """A config value the engines could not compare (they would fail on it)."""


def _getattr(text: Mapping, amap: Mapping[str, str], key: str) -> Any:
    """``getattr(config, key, None)`` of a transformers config built from ``text`` (attribute_map aware)."""
    stored = amap.get(key, key)
    return text.get(stored) if isinstance(stored, str) else None


def _length(v: Any, key: str) -> int | float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Bad(f"{key} is not a number ({type(v).__name__})")
    if isinstance(v, float) and not math.isfinite(v):
        raise _Bad(f"{key} is not finite")
    if not 0 < v <= _MAX_LEN:
        raise _Bad(f"{key} = {v} is out of range")
    return v


def _rope_parameters(text: Mapping) -> tuple[list[dict], bool]:
    """(standardized rope parameter dicts, one per layer type when nested; whether ``rope_parameters`` is
    nested). Empty when the config has no RoPE parameters (transformers leaves ``rope_parameters`` None)."""
    rp = text.get("rope_parameters") or text.get("rope_scaling")
    theta = text.get("rope_theta") if text.get("rope_theta") is not None else text.get("rotary_emb_base")
    if not isinstance(rp, Mapping):
        rp = {}
    if not rp and theta is None:
        return [], False
    nested = bool(rp) and all(isinstance(v, Mapping) or v is None for v in rp.values()) \
        and not ({"rope_type", "type", "factor"} & set(rp))
    dicts = [dict(v) for v in rp.values() if isinstance(v, Mapping) and v] if nested else [dict(rp)]
    for d in dicts:
        d.setdefault("rope_type", d.get("type", "default"))
        if d["rope_type"] == "su":
            d["rope_type"] = "longrope"
        elif d["rope_type"] == "mrope":
            d["rope_type"] = "default"
        if d["rope_type"] in ("llama3", "yarn", "longrope"):
            omp = text.get("original_max_position_embeddings", text.get("max_position_embeddings"))
            d.setdefault("original_max_position_embeddings", omp)
    return dicts, nested


def derive_limits(text: Mapping, model_type: str | None, attribute_map: Mapping[str, str] | None = None,
                  notes: list[str] | None = None) -> dict[str, Any]:
    """The longest context (tokens) vLLM and SGLang accept for the text config ``text``.

    Parameters
    ----------
    text : the language model's config (the top level, or ``text_config`` etc. of a multimodal config).
    model_type : the text config's ``model_type`` (Gemma 3 skips vLLM's RoPE factor).
    attribute_map : transformers' ``attribute_map`` of the config class (canonical -> stored key).
    notes : parse notes to append to (values the engines could not compare, missing keys).

    Returns
    -------
    dict: ``max_model_len_vllm`` (tokens, float; None when no key is present
    -- vLLM then accepts any ``--max-model-len`` -- or a value is unreadable), ``max_model_len_key``
    (the key it came from), ``max_model_len_vllm_source`` (the text vLLM's error prints in its
    parenthesis, e.g. ``"max_position_embeddings=1024 or model_max_length=None"``),
    ``context_length_sglang`` (tokens, int; 2048 when no key is present; None when unreadable).
    """
    notes = notes if notes is not None else []
    amap = attribute_map if isinstance(attribute_map, Mapping) else {}
    out: dict[str, Any] = {"max_model_len_vllm": None, "max_model_len_key": None,
                           "max_model_len_vllm_source": None, "context_length_sglang": None}
    if not isinstance(text, Mapping):
        return out
    mt = model_type if isinstance(model_type, str) else ""
    try:
        rope, nested = _rope_parameters(text)
        nested = nested or mt in NESTED_ROPE_TYPES
    except (TypeError, ValueError) as e:
        notes.append(f"rope parameters unreadable ({type(e).__name__}): context limits unknown")
        return out
    # vLLM
    try:
        derived: int | float = math.inf
        key = None
        for k in VLLM_KEYS:
            v = _getattr(text, amap, k)
            if v is not None:
                v = _length(v, k)
                if v < derived:
                    key = k
                derived = min(derived, v)
        mml = _getattr(text, amap, "model_max_length")
        if mml:
            key, derived = "model_max_length", _length(mml, "model_max_length")
        if derived == math.inf:
            notes.append("no context-length key in config.json: vLLM accepts any --max-model-len unchecked")
        else:
            if rope and "gemma3" not in mt:
                factor: Any = 1.0
                for rp in rope:
                    if rp.get("rope_type") not in VLLM_ROPE_NO_FACTOR:
                        factor = rp.get("factor", factor)
                if factor is None:
                    factor = 1.0
                if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) \
                        or factor <= 0:
                    raise _Bad(f"rope factor {str(factor)[:20]!r} is not a positive number")
                derived = derived * factor
            out["max_model_len_vllm"] = float(derived)  # the catalog column is float64; the text keeps vLLM's type
            out["max_model_len_key"] = key
            out["max_model_len_vllm_source"] = f"{key}={derived} or model_max_length={mml}"
    except _Bad as e:
        notes.append(f"vLLM context limit unknown: {e}")
    # SGLang
    try:
        factor_s: Any = 1
        if rope and not nested:
            rp = rope[0]
            factor_s = rp.get("factor", 1)
            if "original_max_position_embeddings" in rp or rp.get("rope_type") == "llama3":
                factor_s = 1
        if isinstance(factor_s, bool) or not isinstance(factor_s, (int, float)) or not math.isfinite(factor_s) \
                or factor_s <= 0:
            raise _Bad(f"rope_scaling factor {str(factor_s)[:20]!r} is not a positive number")
        ctx = SGLANG_DEFAULT_CONTEXT
        for k in SGLANG_KEYS:
            v = _getattr(text, amap, k)
            if v is not None:
                ctx = int(factor_s * _length(v, k))
                break
        out["context_length_sglang"] = ctx
    except _Bad as e:
        notes.append(f"SGLang context limit unknown: {e}")
    return out


#: framework -> (raise site, release, source URL) of the context-length refusal (the frameworks whose
#: :attr:`~dashboard.frameworks.base.Framework.context_raise_site` is known).
RAISE_SITES = {fw.name: fw.context_raise_site for fw in frameworks.all_frameworks() if fw.context_raise_site}


def _framework(name: str):
    try:
        return frameworks.get(name)
    except ValueError:
        return None


def context_message(framework: str, context_len: int, record: Mapping) -> str:
    """The engine's own error text when ``framework`` refuses ``context_len`` tokens for a catalog record
    (a mapping with ``max_model_len_vllm``, ``max_model_len_vllm_source``, ``context_length_sglang``);
    '' when it starts, the limit is unknown, or the framework is not modelled (TensorRT-LLM)."""
    fw = _framework(framework)
    if fw is None or not fw.context_limit_column:
        return ""
    return fw.context_message(context_len, _number(record, fw.context_limit_column), record)


def context_refusal(framework: str, context_len: int, record: Mapping) -> str:
    """:func:`context_message` followed by where it is raised, e.g. ``"... (ValueError at
    vllm/config/model.py:2680, vLLM 0.33.0)"``; '' when the framework starts."""
    msg = context_message(framework, context_len, record)
    if not msg:
        return ""
    site, rel, _ = RAISE_SITES[framework]
    return f"{msg} (ValueError at {site}, {frameworks.get(framework).label} {rel})"
def _number(record: Mapping, key: str) -> float | None:
    """A finite number of ``record[key]`` (None for missing, NA, NaN or not a number)."""
    v = record.get(key) if isinstance(record, Mapping) else None
    if v is None or isinstance(v, (bool, str)):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def limit(framework: str, record: Mapping) -> int | None:
    """The longest context (tokens, whole) ``framework`` accepts for a record; None when unknown."""
    fw = _framework(framework)
    key = fw.context_limit_column if fw is not None else ""
    if not key or not isinstance(record, Mapping):
        return None
    v = _number(record, key)
    return None if v is None else int(math.floor(v))
