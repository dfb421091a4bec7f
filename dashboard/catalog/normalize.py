"""One raw ``config.json`` -> one catalog record (:func:`normalize_config`): decode, parse, pick the text
config, run the field fillers (attention, layers, MoE, linear, vision, quantization, parameters) and
the status checks. Never raises on bad input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dashboard import context
from dashboard import schema
from dashboard.catalog.aliases import MAX_NOTES
from dashboard.catalog.values import as_bool, clean_str, short_repr, utc_now
from dashboard.catalog.tf_info import transformers_type_info
from dashboard.catalog.fields import find_text_config, Reader
from dashboard.catalog.quirks import LEGACY_TYPES
from dashboard.catalog.attention import fill_attention, fill_extra_shapes
from dashboard.catalog.layers import fill_layers, fill_linear, fill_moe
from dashboard.catalog.vision import fill_vision
from dashboard.catalog.quant import fill_quant, quant_sidecar
from dashboard.catalog.params import fill_params


# ------------------------------------------------------------------------------------------------
# the normalizer
# ------------------------------------------------------------------------------------------------


def empty_record(model_id: str, source: str, sha: Any, fetched_at: Any) -> dict[str, Any]:
    """A record with every column of :data:`dashboard.schema.COLUMN_NAMES` (None), the provenance columns set,
    ``status`` ``ok``; ``fetched_at`` defaults to now (ISO-8601 UTC)."""
    rec: dict[str, Any] = dict.fromkeys(schema.COLUMN_NAMES)
    mid = model_id if isinstance(model_id, str) else str(model_id)
    org, _, name = mid.partition("/")
    rec["model_id"] = mid
    rec["org"] = org
    rec["name"] = name
    rec["status"] = "ok"
    rec["status_reason"] = ""
    rec["source"] = source
    rec["fetched_at"] = fetched_at if fetched_at is not None else utc_now()
    rec["sha"] = sha
    rec["parse_notes"] = ""
    return rec


def unencodable_path(obj: object, limit: int = 1_000_000) -> str | None:
    """Where a parsed JSON value holds a string (key or value) that UTF-8 cannot encode -- a lone surrogate,
    which ``json.loads`` accepts from ``"\\ud800"`` -- as a path (``model_type``, ``text_config.name``,
    ``architectures[0]``; at most 80 characters), or None. Iterative (no recursion limit), at most ``limit``
    values visited."""
    stack: list[tuple[object, str]] = [(obj, "")]
    seen = 0
    containers: set[int] = set()  # a caller's object may hold itself (not JSON): visit each container once
    while stack and seen < limit:
        v, path = stack.pop()
        seen += 1
        path = path[:80]  # (only 80 characters are reported: a deep config must not grow the paths)
        if isinstance(v, (Mapping, list)):
            if id(v) in containers:
                continue
            containers.add(id(v))
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return (path or "the config")[:80]
        elif isinstance(v, Mapping):
            for k, x in v.items():
                key = k if isinstance(k, str) else str(k)
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return ((path + "." if path else "") + "a key")[:80]
                stack.append((x, f"{path}.{key}" if path else key))
        elif isinstance(v, list):
            stack.extend((x, f"{path}[{i}]") for i, x in enumerate(v))
    return None


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
    rec = empty_record(model_id, source, sha, fetched_at)
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
                rec["status"], rec["status_reason"] = "invalid_json", f"unreadable JSON: {short_repr(str(e), 160)}"
                cfg = None
            if consts:
                notes.append(f"non-standard JSON constants {sorted(set(consts))} read as floats")
        if rec["status"] == "ok" and (where := unencodable_path(cfg)) is not None:
            rec["status"] = "invalid_json"
            rec["status_reason"] = (f"{where} is not valid Unicode (a lone surrogate such as \\ud800): "
                                    "the config is quarantined")
        if rec["status"] == "ok":
            if not isinstance(cfg, Mapping):
                rec["status"] = "invalid_json"
                rec["status_reason"] = f"config is not a JSON object (got {type(cfg).__name__})"
            else:
                fill_record(rec, cfg, notes, quant_sidecar(sidecars, notes))
    except RecursionError:
        rec["status"], rec["status_reason"] = "error", "config nested too deeply"
    except Exception as e:  # last line of defence: a bad config must never crash a catalog build
        rec["status"], rec["status_reason"] = "error", f"normalizer failed: {type(e).__name__}: {short_repr(str(e), 160)}"
    if rec["status"] != "ok" and rec["status_reason"]:
        notes.insert(0, rec["status_reason"])
    text = "; ".join(dict.fromkeys(notes))  # de-duplicate, keep order
    if len(text) > MAX_NOTES:
        text = text[: MAX_NOTES - 20] + "; ... (truncated)"
    rec["parse_notes"] = text
    return rec


def fill_record(rec: dict[str, Any], cfg: Mapping, notes: list[str], sidecar: tuple[str, dict] | None = None) -> None:
    """Every shape column of ``rec`` from the parsed config ``cfg`` (a mapping): text config, core fields,
    limits, tying, then the fillers of attention, layers, MoE, linear attention, vision, quantization and
    parameters, then :func:`fill_status`. ``sidecar``: (file name, parsed object) of a quantization sidecar."""
    model_type = clean_str(cfg.get("model_type"), "model_type", notes)
    if model_type is None:
        notes.append("model_type missing")
    rec["model_type"] = model_type
    text, tkey = find_text_config(cfg, model_type)
    rec["text_config_key"] = tkey
    tmt = clean_str(text.get("model_type"), "text model_type", notes) if text is not cfg else model_type
    rec["text_model_type"] = tmt if tmt is not None else model_type

    r = Reader(text, cfg, notes, (rec["text_model_type"] or "", model_type or ""))

    arch = cfg.get("architectures")
    if arch is None and text is not cfg:
        arch = text.get("architectures")
    if isinstance(arch, list):
        names = [a for a in arch[:8] if isinstance(a, str)]
        if len(names) != len(arch[:8]):
            notes.append("architectures has non-string entries")
        rec["architectures"] = clean_str(",".join(names), "architectures", notes)
    elif isinstance(arch, str):
        rec["architectures"] = clean_str(arch, "architectures", notes)
    elif arch is not None:
        notes.append("architectures is not a list")

    dt, _ = r.raw("torch_dtype")
    rec["torch_dtype"] = clean_str(dt, "torch_dtype", notes, cap=40) if isinstance(dt, str) else None
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
    tied = as_bool(tie, "tie_word_embeddings", notes) if tkey2 else None
    if tied is None:
        default = None
        for mt0 in (rec["text_model_type"], model_type, LEGACY_TYPES.get(model_type or "")):
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
            notes.append(f"tie_word_embeddings absent from a config saved by transformers {short_repr(saved_by, 20)} "
                         "(model type unknown to transformers): True assumed, PretrainedConfig's default that save_pretrained omits")
        elif default is None:
            tied = False
            notes.append("tie_word_embeddings absent and model type unknown to transformers: False assumed")
        else:
            tied = default
            legacy = f", which took over {model_type}" if mt0 == LEGACY_TYPES.get(model_type or "") else ""
            notes.append(f"tie_word_embeddings absent: {tied} assumed (transformers' default for {short_repr(mt0, 40)}{legacy})")
    rec["tie_word_embeddings"] = tied
    if hidden is None:
        notes.append("hidden_size missing")
    if layers is None:
        notes.append("num_hidden_layers missing")

    fill_attention(rec, r, cfg, notes)
    if text is not cfg:
        for f in ("num_attention_heads", "num_key_value_heads", "hidden_size", "num_hidden_layers"):
            top_v = cfg.get(f)
            if top_v is not None and rec[f] is not None and top_v != rec[f]:
                notes.append(f"top-level {f}={short_repr(top_v, 20)} contradicts {tkey} {f}={rec[f]}: {tkey} used")
    fill_layers(rec, r, notes)
    fill_moe(rec, r, notes)
    fill_linear(rec, r, notes)
    fill_extra_shapes(rec, r, notes)
    fill_vision(rec, cfg, notes)
    fill_quant(rec, cfg, text, notes, sidecar)
    fill_params(rec, r, cfg, notes)
    fill_status(rec, notes)


def fill_status(rec: dict, notes: list[str]) -> None:
    """``status`` / ``status_reason`` of a filled record: ``error``, with every reason joined by ``; ``, when
    ``num_attention_heads`` or ``head_dim`` is unusable (not required for a pure SSM), the KV heads exceed
    or do not divide the query heads (MLA exempt), or ``hidden_size`` / ``num_hidden_layers`` is
    unusable; else unchanged."""
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
