"""Field extraction: the text config a composite config nests (:func:`find_text_config`), and the
alias-aware :class:`Reader` over it (static :data:`~dashboard.catalog.aliases.ALIASES` first, then
transformers' ``attribute_map``; the top level as fallback, noted). Also :func:`per_layer_int` for
fields some configs give per layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.catalog.aliases import ALIASES, MAX_SIZE, TEXT_CONFIG_KEYS
from dashboard.catalog.values import as_int
from dashboard.catalog.tf_info import transformers_type_info


# ------------------------------------------------------------------------------------------------
# lookups
# ------------------------------------------------------------------------------------------------

MISSING = object()


def dig(d: Mapping, path: str) -> Any:
    """``d[path]`` where ``path`` may be dotted (``attn_config.kv_n_heads``); :data:`MISSING` when any step is absent."""
    if "." not in path:
        return d.get(path, MISSING)
    cur: Any = d
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return MISSING
        cur = cur.get(part, MISSING)
        if cur is MISSING:
            return MISSING
    return cur


class Reader:
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
                v = dig(src, a)
                if v is not MISSING and v is not None:
                    if src is self.top and self.nested:
                        self.notes.append(f"{canonical} read from the top-level config ({a})")
                    elif a != canonical and a != "dtype":
                        self.notes.append(f"{canonical} read from alias {a}")
                    return v, a
        if tf:
            # the static table missed: transformers' attribute_map for this model_type (snapshot; the
            # installed transformers only for the core fields of types the snapshot lacks)
            extra = self.amap(live=canonical in TF_FALLBACK_FIELDS).get(canonical)
            if extra and extra not in aliases:
                for src in sources:
                    v = src.get(extra, MISSING)
                    if v is not MISSING and v is not None:
                        self.notes.append(f"{canonical} read from {extra} (transformers attribute_map)")
                        return v, extra
        return None, None

    def int(self, canonical: str, *, lo: int = 1, hi: int = MAX_SIZE, fallback_top: bool = True,
            tf: bool = True) -> int | None:
        v, key = self.raw(canonical, fallback_top=fallback_top, tf=tf)
        if key is None:
            return None
        return as_int(v, canonical, self.notes, lo=lo, hi=hi)

    def get(self, key: str, default: Any = None) -> Any:
        v = self.text.get(key, MISSING)
        if v is MISSING or v is None:
            return default
        return v


def has_any(d: Mapping, fields: tuple[str, ...]) -> bool:
    """True when ``d`` has a top-level key that is an alias of one of ``fields`` (dotted aliases skipped)."""
    for f in fields:
        for a in ALIASES[f]:
            if "." not in a and a in d:
                return True
    return False


TEXT_MARKERS = ("num_attention_heads", "hidden_size", "num_hidden_layers")

#: Fields for which transformers' attribute_map is consulted when the static table finds nothing.
#: (Only these: a miss on them means the row is unusable, so the one-time import is worth it.)
TF_FALLBACK_FIELDS = frozenset({"num_attention_heads", "hidden_size", "num_hidden_layers", "vocab_size"})


def find_text_config(cfg: Mapping, model_type: str | None, depth: int = 0) -> tuple[Mapping, str]:
    """The nested dict holding the language model's shapes, and its dotted key ('' = top level)."""
    if depth > 3:
        return cfg, ""
    for k in TEXT_CONFIG_KEYS:
        sub = cfg.get(k)
        if isinstance(sub, Mapping) and sub:
            if has_any(sub, TEXT_MARKERS):
                return sub, k
            inner, ik = find_text_config(sub, None, depth + 1)
            if ik:
                return inner, f"{k}.{ik}"
    if model_type and depth == 0 and not has_any(cfg, TEXT_MARKERS):
        # nothing found: ask transformers which sub-configs this model_type declares (lazy import)
        info = transformers_type_info(model_type)
        for k in (info or {}).get("sub_configs", ()):
            sub = cfg.get(k)
            if "vision" in k or "audio" in k or not isinstance(sub, Mapping) or not sub:
                continue
            if has_any(sub, TEXT_MARKERS):
                return sub, k
            inner, ik = find_text_config(sub, None, depth + 1)
            if ik:
                return inner, f"{k}.{ik}"
    return cfg, ""


def per_layer_int(r: Reader, canonical: str, notes: list[str], *, lo: int = 1) -> int | None:
    """An integer field that some configs give per layer (Hunyuan ``moe_topk``, ``moe_intermediate_size``,
    ``num_shared_expert``): a list yields its most common value (ties: the smallest), noted."""
    v, key = r.raw(canonical, fallback_top=False)
    if key is None:
        return None
    if not isinstance(v, list):
        return as_int(v, canonical, notes, lo=lo)
    bad: list[str] = []  # one summary note, not one per entry (the list is untrusted and may be long)
    vals = [as_int(x, f"{canonical}[{i}]", bad, lo=lo) for i, x in enumerate(v[:1 << 16])]
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
