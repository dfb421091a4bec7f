"""Which parts of a quantized checkpoint vLLM 0.33.0 really quantizes, and in which format.

A checkpoint's ``quantization_config`` rarely covers every linear layer: ModelOpt exports list the
modules they leave in 16-bit (``ignore`` / ``exclude_modules``, shell wildcards) or name a format per
module (``quant_algo: MIXED_PRECISION`` + ``quantized_layers``); compressed-tensors configs target
modules by class (``"Linear"``), name or ``re:`` regex (``config_groups.*.targets``) and skip others
(``ignore``); ``fp8`` configs skip ``modules_to_not_convert``; DeepSeek-V4 keeps its routed experts in
FP4 (``expert_dtype``) beside block-FP8 attention. vLLM decides per module by matching those lists
against ITS OWN module names (after renaming the config's names with the model's
``hf_to_vllm_mapper``), so this module generates, per decoder layer and per part, the vLLM names of the
part's main linear modules (:data:`ARCH_NAMES`, cited from each vLLM model file) and replays vLLM's
matching rules on them:

* ModelOpt (``layers/quantization/modelopt.py:191-226`` ``is_layer_excluded``: exact match with fused
  shards and the ``experts`` rule of ``utils/quant_utils.py:619-693`` ``is_layer_skipped``, then
  substring, then ``fnmatch``; ``:266-286`` rewrites ``name*`` to ``name`` + ``name.*``;
  ``:228-264`` ``get_quant_method`` also keeps ``vision_tower`` / ``vision_model`` in 16-bit;
  MIXED_PRECISION ``:1748-1842`` ``_resolve_quant_algo``; NVFP4 W4A4 without input activations in
  every group becomes W4A16, ``:785-806``);
* compressed-tensors (``compressed_tensors/compressed_tensors.py:159-219`` ``get_quant_method``,
  ``:998-1031`` ``get_scheme_dict``, ``compressed_tensors/utils.py`` ``should_ignore_layer`` /
  ``find_matched_target``; routed experts are matched through their unfused checkpoint names
  ``{prefix}.0.{gate,up,down}`` (``compressed_tensors_moe/compressed_tensors_moe.py:28-58``), and a
  ``"Linear"`` target reaches them only through the ``RoutedExperts`` alias of ``:221-233``);
* ``fp8`` (``fp8.py:177-207``: ``ignored_layers`` / ``modules_to_not_convert``, exact match; the LM
  head is never quantized) and its DeepSeek-V4 subclass (``models/deepseek_v41/quant_config.py``:
  routed experts MXFP4 when ``expert_dtype == "fp4"``, NVFP4 when ``moe_quant_algo == "NVFP4"`` unless
  the ModelOpt ``ignore`` globs name ``layers.{i}.ffn.experts``; block-FP8 when ``expert_dtype ==
  "fp8"``);
* ``mxfp4`` (``mxfp4.py:91-113``: routed experts only).

Untrusted input: lists are capped (:data:`MAX_LIST` entries of at most :data:`MAX_NAME` characters),
patterns go through :mod:`dashboard.safe_match` (no :mod:`re` on config text, linear-time matching),
layers are capped (:data:`MAX_LAYERS`) and the whole matching job is priced up front
(:data:`MAX_WORK`); anything unreadable or too large yields NA columns and a note, never an exception.

Pure: no I/O.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dashboard.safe_match import PatternError, compile_regex, glob_match
from dashboard.catalog.quant_arch import ARCH_NAMES, ArchNames, generic_arch_names, layer_plan, MAX_LAYERS, MAX_LIST, MAX_NAME, MAX_WORK, MLA_NAMES, MLA_NO_QLORA_NAMES, PARTS


# ----------------------------------------------------------------------------------------------
# Pattern lists
# ----------------------------------------------------------------------------------------------
class _Bad(Exception):
    """The config cannot be evaluated (reason in args[0])."""


def _str_list(v: Any, what: str, notes: list[str]) -> list[str]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise _Bad(f"{what} is not a list")
    out = [x for x in v[:MAX_LIST] if isinstance(x, str) and len(x) <= MAX_NAME]
    if len(out) != min(len(v), MAX_LIST):
        notes.append(f"{what}: {min(len(v), MAX_LIST) - len(out)} entries not strings or longer than {MAX_NAME} characters ignored")
    if len(v) > MAX_LIST:
        notes.append(f"{what}: only the first {MAX_LIST} of {len(v)} entries read")
    return out


def _rename(name: str, rules: tuple[tuple[str, str, str], ...] | None) -> str:
    """``WeightsMapper._map_name_with_shard`` for the renaming rules kept by ``get_rename_mapper``
    (``models/utils.py:89-145, 180-199``): substrings, then prefixes, then suffixes."""
    if not rules:
        return name
    for kind, old, new in rules:
        if kind == "substr" and old in name:
            name = name.replace(old, new, 1)
    for kind, old, new in rules:
        if kind == "prefix" and name.startswith(old):
            name = name.replace(old, new, 1)
    for kind, old, new in rules:
        if kind == "suffix" and name.endswith(old):
            name = new.join(name.rsplit(old, 1))
    return name


class _Regexes:
    """``re:`` patterns compiled once with :mod:`dashboard.safe_match`; unsupported ones are noted and
    never match."""

    def __init__(self, notes: list[str]):
        self.cache: dict[str, Any] = {}
        self.notes = notes

    def match(self, pattern: str, name: str) -> bool:
        p = self.cache.get(pattern)
        if p is None:
            try:
                p = compile_regex(pattern)
            except PatternError as e:
                self.notes.append(f"quantization pattern 're:{pattern[:60]}' not evaluated ({e})")
                p = False
            self.cache[pattern] = p
        return bool(p) and p.match(name)


def _eq_or_re(name: str, target: str, rx: _Regexes) -> bool:
    """vLLM ``is_equal_or_regex_match`` without ``check_contains`` (``utils/config_utils.py:432-452``)."""
    if target.startswith("re:"):
        return rx.match(target[3:], name)
    return target == name


# ----------------------------------------------------------------------------------------------
# Formats
# ----------------------------------------------------------------------------------------------
_MODELOPT_FORMATS = {"NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8-channel",
                     "FP8_PB_WO": "fp8-block", "FP8_BLOCK_SCALES": "fp8-block", "MXFP8": "mxfp8"}


def _ct_format(w: Mapping, fmt: str | None) -> str | None:
    """compressed-tensors weight arguments -> format token (``_get_scheme_from_parts``)."""
    bits, typ = w.get("num_bits"), str(w.get("type") or "int").lower()
    strategy, gs = str(w.get("strategy") or "").lower(), w.get("group_size")
    fmt = (fmt or "").lower()
    if typ == "float" and bits == 4:
        if gs == 32 or "mxfp4" in fmt or "uint8" in str(w.get("scale_dtype") or ""):
            return "mxfp4"
        return "nvfp4"
    if typ == "float" and bits == 8:
        if strategy == "block" or w.get("block_structure") is not None:
            return "fp8-block"
        if strategy == "channel":
            return "fp8-channel"
        if strategy == "group" and gs == 32:
            return "mxfp8"
        return "fp8"
    if typ == "int" and bits in (4, 8):
        return f"int{bits}"
    return None


# ----------------------------------------------------------------------------------------------
# One quantization method's decision for one module
# ----------------------------------------------------------------------------------------------
@dataclass
class _Module:
    name: str          # full vLLM prefix
    kind: str          # "linear", "experts", "lm_head", "router", "vision"


def _class_name(m: _Module) -> str:
    if m.kind == "experts":
        return "RoutedExperts"
    if m.kind == "lm_head":
        return "ParallelLMHead"
    if m.kind == "router":
        return "ReplicatedLinear"
    last = m.name.rsplit(".", 1)[-1]
    if last.endswith("qkv_proj") or last in ("qkv",):
        return "QKVParallelLinear"
    if last.startswith(("gate_up", "fused", "in_proj")):
        return "MergedColumnParallelLinear"
    if last in ("o_proj", "down_proj", "out_proj", "wo_b", "proj", "fc2", "linear_fc2", "wo"):
        return "RowParallelLinear"
    return "ColumnParallelLinear"


class _Method:
    """Base: ``decide(module) -> format token or None (16-bit)``."""

    def __init__(self, arch: ArchNames, notes: list[str]):
        self.arch = arch
        self.notes = notes
        self.rx = _Regexes(notes)

    def decide(self, m: _Module) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def cost_per_name(self) -> int:
        """Upper bound of the pattern tests one module name costs (see :data:`MAX_WORK`)."""
        return 1

    def skipped_exact(self, prefix: str, ignored: list[str] | set[str]) -> bool:
        """``is_layer_skipped(match_mode="exact")`` (``utils/quant_utils.py:619-693``)."""
        packed = self.arch.packed
        proj = prefix.rsplit(".", 1)[-1]
        if proj in packed and prefix in ignored:
            return True
        if proj in packed:
            shards = [prefix.replace(proj, s) in ignored for s in packed[proj]]
            if any(shards) and not all(shards):
                self.notes.append(f"{prefix}: only some shards of a fused layer listed (vLLM refuses this)")
            return all(shards)
        if "experts" in prefix:
            return any(prefix in x for x in ignored if "experts" in x)
        return prefix in ignored


class _ModelOpt(_Method):
    def __init__(self, q: Mapping, arch: ArchNames, notes: list[str]):
        super().__init__(arch, notes)
        src = q.get("quantization") if isinstance(q.get("quantization"), Mapping) else q
        algo = src.get("quant_algo")
        if not isinstance(algo, str) or not algo:
            raise _Bad("ModelOpt quant_algo missing")
        self.algo = algo.upper()
        key = "exclude_modules" if src is not q else ("ignore" if "ignore" in q else "exclude_modules")
        excl = _str_list(src.get(key), key, notes)
        if arch.rename is not None:  # apply_vllm_mapper (modelopt.py:266-286)
            split: list[str] = []
            for e in excl:
                if len(e) >= 2 and e[-1] == "*" and e[-2] != ".":
                    split += [e[:-1], e[:-1] + ".*"]
                else:
                    split.append(e)
            excl = [_rename(e, arch.rename) for e in split]
        self.excl = excl
        self.excl_set = set(excl)
        self.excl_plain = [e for e in excl if not any(ch in e for ch in "*?[")]
        self.excl_glob = [e for e in excl if any(ch in e for ch in "*?[")]
        self.mixed = self.algo == "MIXED_PRECISION"
        self.layers: dict[str, str] = {}
        self.sorted_keys: list[str] = []
        if self.mixed:
            ql = src.get("quantized_layers")
            if not isinstance(ql, Mapping) or not ql:
                raise _Bad("MIXED_PRECISION without a quantized_layers mapping")
            for i, (k, v) in enumerate(ql.items()):
                if i >= MAX_LIST:
                    notes.append(f"quantized_layers: only the first {MAX_LIST} entries read")
                    break
                a = v.get("quant_algo") if isinstance(v, Mapping) else None
                if isinstance(k, str) and len(k) <= MAX_NAME and isinstance(a, str):
                    name = _rename(k, arch.rename) if arch.rename is not None else k
                    self.layers[name] = a.upper()
            if not self.layers:
                raise _Bad("quantized_layers has no usable entry")
            self.sorted_keys = sorted(self.layers)
            self.single = None
        else:
            if self.algo not in _MODELOPT_FORMATS:
                raise _Bad(f"ModelOpt quant_algo {self.algo} not modelled")
            self.single = _MODELOPT_FORMATS[self.algo]

    def cost_per_name(self) -> int:
        return 1 + len(self.excl_plain) + 4 * len(self.excl_glob)

    def excluded(self, prefix: str) -> bool:
        """``ModelOptQuantConfigBase.is_layer_excluded`` (``modelopt.py:191-226``)."""
        if not self.excl:
            return False
        if self.skipped_exact(prefix, self.excl_set):
            return True
        stripped = prefix[len("language_model."):] if prefix.startswith("language_model.") else None
        for e in self.excl_plain:
            if e != prefix and (e in prefix or (stripped is not None and e in stripped)):
                return True
        for e in self.excl_glob:
            if e != prefix and (e in prefix or (stripped is not None and e in stripped)):
                return True
            if glob_match(prefix, e):
                return True
        return False

    @staticmethod
    def _candidates(prefix: str) -> list[str]:
        c = [prefix]
        if prefix.endswith(".lm_head"):
            c.append("lm_head")
        if prefix.startswith("language_model.model."):
            c.append("model.language_model." + prefix[len("language_model.model."):])
        elif prefix.startswith("model.language_model."):
            c.append("language_model.model." + prefix[len("model.language_model."):])
        return list(dict.fromkeys(c))

    def _under(self, prefix: str) -> str | None:
        """Algo of a ``quantized_layers`` key starting with ``prefix + "."`` (vLLM takes the first in
        dict order; here the first in sorted order, the same whenever the keys under one module agree)."""
        dot = prefix + "."
        j = bisect.bisect_left(self.sorted_keys, dot)
        if j < len(self.sorted_keys) and self.sorted_keys[j].startswith(dot):
            return self.layers[self.sorted_keys[j]]
        return None

    def resolve(self, prefix: str) -> str | None:
        """``ModelOptMixedPrecisionConfig._resolve_quant_algo`` (``modelopt.py:1748-1825``)."""
        for c in self._candidates(prefix):
            if c in self.layers:
                return self.layers[c]
        proj = prefix.rsplit(".", 1)[-1]
        if proj in self.arch.packed:
            base = prefix.rsplit(".", 1)[0]
            algos = {self.layers[f"{b}.{s}"] for b in self._candidates(base) for s in self.arch.packed[proj]
                     if f"{b}.{s}" in self.layers}
            if len(algos) == 1:
                return algos.pop()
            if algos:
                self.notes.append(f"{prefix}: mixed quant_algo within a fused layer (vLLM refuses this)")
                return min(algos)
        for c in self._candidates(prefix):
            a = self._under(c)
            if a is not None:
                return a
        if prefix.endswith(".experts"):
            a = self._under(prefix.rsplit(".experts", 1)[0])
            if a is not None:
                return a
        shards = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}.get(proj)
        if shards:
            for c in self._candidates(prefix):
                parent = c.rsplit(".", 1)[0]
                algos = {self.layers[f"{parent}.{s}"] for s in shards if f"{parent}.{s}" in self.layers}
                if algos:
                    return min(algos)
        return None

    def decide(self, m: _Module) -> str | None:
        if m.kind == "router" and self.arch.router is None:
            return None
        if self.excluded(m.name):
            return None
        if self.mixed:
            algo = self.resolve(m.name)
            return _MODELOPT_FORMATS.get(algo or "")
        if any(k in m.name for k in ("vision_tower", "vision_model", "vit_large_projector")):
            return None  # modelopt.py:247-254
        return self.single


class _CompressedTensors(_Method):
    def __init__(self, q: Mapping, arch: ArchNames, notes: list[str]):
        super().__init__(arch, notes)
        groups = q.get("config_groups")
        if not isinstance(groups, Mapping):
            raise _Bad("compressed-tensors config without config_groups")
        gfmt = q.get("format") if isinstance(q.get("format"), str) else None
        self.targets: dict[str, str | None] = {}
        for gi, (gname, g) in enumerate(groups.items()):
            if gi >= 64:
                notes.append("config_groups: only the first 64 groups read")
                break
            if not isinstance(g, Mapping):
                continue
            tg = _str_list(g.get("targets"), f"config_groups.{str(gname)[:20]}.targets", notes)
            if len(tg) == 1 and tg[0].endswith("Attention"):
                continue  # compressed_tensors.py:239-249
            w = g.get("weights")
            f = _ct_format(w, g.get("format") if isinstance(g.get("format"), str) else gfmt) if isinstance(w, Mapping) else None
            for t in tg:
                self.targets[t] = f
        ignore = _str_list(q.get("ignore"), "ignore", notes)
        if arch.rename is not None:  # apply_vllm_mapper: only dotted non-regex names (compressed_tensors.py:129-157)
            rules = arch.rename

            def ren(t: str) -> str:
                return _rename(t, rules) if ("." in t and not t.startswith("re:")) else t

            ignore = [ren(t) for t in ignore]
            self.targets = {ren(t): f for t, f in self.targets.items()}
        self.ignore = ignore
        self.ignore_set = set(ignore)
        self.ignore_re = [t for t in ignore if t.startswith("re:")]

    def cost_per_name(self) -> int:
        regexes = len(self.ignore_re) + sum(1 for t in self.targets if t.startswith("re:"))
        return 4 * (1 + len(self.targets) + 40 * regexes)  # x4: fused shards and expert projections

    def _ignored(self, name: str) -> bool:
        """``should_ignore_layer`` / ``find_matching_patterns`` (``utils/config_utils.py:384-420``)."""
        if name in self.ignore_set or any(self.rx.match(t[3:], name) for t in self.ignore_re):
            return True
        proj = name.rsplit(".", 1)[-1]
        if proj not in self.arch.packed:
            return False
        shards = [name.replace(proj, s) for s in self.arch.packed[proj]]
        hits = [s in self.ignore_set or any(self.rx.match(t[3:], s) for t in self.ignore_re) for s in shards]
        if any(hits) and not all(hits):
            self.notes.append(f"{name}: only some shards of a fused layer ignored (vLLM refuses this)")
        return all(hits)

    def _target(self, name: str, cls: str) -> tuple[bool, str | None]:
        """``find_matched_target``: name (exact / regex), fused shards, then class name (contains)."""
        for t, f in self.targets.items():
            if _eq_or_re(name, t, self.rx):
                return True, f
        proj = next((k for k in self.arch.packed if name.endswith(k)), None)
        if proj is not None:
            firsts = []
            for s in self.arch.packed[proj]:
                u = name.replace(proj, s)
                hit = next((t for t in self.targets if _eq_or_re(u, t, self.rx)), None)
                firsts.append(hit)
            if all(x is not None for x in firsts):
                return True, self.targets[firsts[0]]  # type: ignore[index]
        for t, f in self.targets.items():
            if t.startswith("re:"):
                if self.rx.match(t[3:], cls):
                    return True, f
            elif t.lower() in cls.lower():
                return True, f
        return False, None

    def scheme(self, name: str, cls: str) -> tuple[bool, str | None]:
        if self._ignored(name):
            return False, None
        return self._target(name, cls)

    def decide(self, m: _Module) -> str | None:
        if m.kind == "router" and self.arch.router is None:
            return None
        if m.kind == "experts":
            if "Linear" in self.targets and "RoutedExperts" not in self.targets:
                self.targets["RoutedExperts"] = self.targets["Linear"]
            results = [self.scheme(f"{m.name}.0.{p}", "RoutedExperts") for p in self.arch.expert_proj]
            if len({r for r in results}) > 1:
                self.notes.append(f"{m.name}: expert projections with different schemes (vLLM refuses this)")
            hit, fmt = results[-1]
            return fmt if hit else None
        hit, fmt = self.scheme(m.name, _class_name(m))
        return fmt if hit else None


class _Fp8(_Method):
    def __init__(self, q: Mapping, arch: ArchNames, notes: list[str], *, expert_dtype: Any = None, model_type: str = ""):
        super().__init__(arch, notes)
        ign = q.get("ignored_layers") or q.get("modules_to_not_convert")
        key = "ignored_layers" if q.get("ignored_layers") else "modules_to_not_convert"
        ign = _str_list(ign, key, notes)
        if arch.rename is not None:
            ign = [_rename(x, arch.rename) for x in ign]
        self.ignored = set(ign)
        wbs = q.get("weight_block_size")
        self.fmt = "fp8-block" if isinstance(wbs, list) and len(wbs) == 2 else "fp8"
        self.store_mxfp4 = q.get("store_dtype") == "mxfp4"
        self.dsv4 = model_type == "deepseek_v4"
        self.expert_dtype = expert_dtype if isinstance(expert_dtype, str) else "fp4"
        if self.dsv4 and self.expert_dtype not in ("fp4", "fp8"):
            raise _Bad(f"DeepSeek-V4 expert_dtype {str(expert_dtype)[:20]!r} (vLLM refuses it)")
        algo = q.get("moe_quant_algo")
        self.moe_nvfp4 = isinstance(algo, str) and algo.upper() == "NVFP4"
        mo = q.get("ignore")
        self.modelopt_ignore = [p for p in mo[:MAX_LIST] if isinstance(p, str) and len(p) <= MAX_NAME] if isinstance(mo, list) else []
        self.num_layers = 0

    def cost_per_name(self) -> int:
        return 1 + 4 * len(self.modelopt_ignore)

    def decide(self, m: _Module) -> str | None:
        if m.kind in ("lm_head", "vision") or (m.kind == "router" and self.arch.router is None):
            return None
        if self.skipped_exact(m.name, self.ignored):
            return None
        if m.kind != "experts":
            return self.fmt
        if self.dsv4 and self.expert_dtype == "fp4":
            # models/deepseek_v41/quant_config.py: _is_nvfp4_expert_layer, then Mxfp4MoEMethod
            if self.moe_nvfp4:
                idx = m.name.split(".layers.", 1)[-1].split(".", 1)[0]
                if not self.modelopt_ignore or not idx.isdigit():
                    return "nvfp4"
                short = f"layers.{idx}.ffn.experts"
                if not any(glob_match(short, p) for p in self.modelopt_ignore):
                    return "nvfp4"
            return "mxfp4"
        if self.store_mxfp4:
            return "mxfp4"
        return self.fmt


class _Mxfp4(_Method):
    def decide(self, m: _Module) -> str | None:
        return "mxfp4" if m.kind == "experts" else None  # mxfp4.py:91-113


# ----------------------------------------------------------------------------------------------
# Public entry point
# ----------------------------------------------------------------------------------------------
def _method(q: Mapping, arch: ArchNames, notes: list[str], model_type: str, expert_dtype: Any) -> _Method | None:
    qm = q.get("quant_method")
    qm = qm.lower() if isinstance(qm, str) else ""
    if qm.startswith("modelopt"):
        return _ModelOpt(q, arch, notes)
    if qm == "compressed-tensors":
        return _CompressedTensors(q, arch, notes)
    if qm in ("fp8", "deepseek_v4_fp8"):
        return _Fp8(q, arch, notes, expert_dtype=expert_dtype, model_type=model_type)
    if qm == "mxfp4":
        return _Mxfp4(arch, notes)
    return None


def _has_lists(q: Mapping) -> bool:
    if any(q.get(k) for k in ("ignore", "exclude_modules", "ignored_layers", "modules_to_not_convert", "quantized_layers")):
        return True
    if isinstance(q.get("quantization"), Mapping):
        return _has_lists(q["quantization"])
    groups = q.get("config_groups")
    if isinstance(groups, Mapping):
        for g in groups.values():
            if isinstance(g, Mapping) and g.get("targets") not in (["Linear"], None):
                return True
    return False


def coverage(q: Mapping, text: Mapping, top: Mapping, rec: Mapping) -> tuple[dict[str, Any], list[str]]:
    """Quantized share and format of each part in :data:`PARTS`, as vLLM 0.33.0 builds the model.

    ``q`` is the ``quantization_config``, ``text`` / ``top`` the text and top-level configs, ``rec``
    the catalog record so far (``model_type``, ``num_hidden_layers``, ``is_moe``,
    ``num_shared_experts``, ``num_linear_attention_layers``, ``has_vision``, ``q_lora_rank``,
    ``tie_word_embeddings``). Returns (``{"quant_<part>_fraction": float | None, "quant_<part>_format":
    str | None}``, notes). A fraction is the share of the decoder layers that have the part whose part
    vLLM quantizes (the mean over the part's main modules); the format is the most common format among
    them (other formats in the same part are noted). Parts the model does not have get NA; the whole
    result is NA (with a note) when the method or the architecture's names are not modelled."""
    notes: list[str] = []
    out: dict[str, Any] = {f"quant_{p}_{k}": None for p in PARTS for k in ("fraction", "format")}
    mt = str(rec.get("model_type") or "").lower()
    tmt = str(rec.get("text_model_type") or "").lower()
    arch = ARCH_NAMES.get(mt) or ARCH_NAMES.get(tmt)
    lists = _has_lists(q)
    if arch is None:
        if lists:
            notes.append(f"quantized modules not derived: vLLM module names of model type {mt[:40]!r} are not modelled "
                         "(dashboard.quant_coverage.ARCH_NAMES)")
            return out, notes
        arch = generic_arch_names(mt)
    if arch.attention == MLA_NAMES and rec.get("q_lora_rank") is None:
        arch = replace(arch, attention=MLA_NO_QLORA_NAMES)
    n = rec.get("num_hidden_layers")
    if not isinstance(n, int) or n <= 0:
        return out, notes
    if n > MAX_LAYERS:
        notes.append(f"quantized modules not derived: more than {MAX_LAYERS} layers")
        return out, notes
    try:
        method = _method(q, arch, notes, mt, top.get("expert_dtype", text.get("expert_dtype")))
        if method is None:
            return out, notes
        is_moe = bool(rec.get("is_moe"))
        attn, dense, moe, plan_notes = layer_plan(text, n, is_moe, int(rec.get("num_linear_attention_layers") or 0))
        notes += plan_notes
        shared = is_moe and (rec.get("num_shared_experts") or 0) > 0
        per_layer = max(len(arch.attention), len(arch.linear_attention)) + len(arch.dense_mlp) + 2 + len(arch.shared_experts)
        work = n * per_layer * method.cost_per_name()
        if work > MAX_WORK:
            raise _Bad(f"lists too large to match ({work:.2g} pattern tests > {MAX_WORK:.0e})")
        per_part: dict[str, list[str | None]] = {p: [] for p in PARTS}
        for i in range(n):
            root = arch.layer.format(i=i)
            mods: list[tuple[str, _Module]] = []
            if attn[i] == "attention":
                mods += [("attention", _Module(f"{root}.{x}", "linear")) for x in arch.attention]
            elif attn[i] == "linear_attention":
                mods += [("linear_attention", _Module(f"{root}.{x}", "linear")) for x in arch.linear_attention]
            if dense[i]:
                mods += [("dense_mlp", _Module(f"{root}.{x}", "linear")) for x in arch.dense_mlp]
            if moe[i]:
                mods.append(("experts", _Module(f"{root}.{arch.experts}", "experts")))
                mods.append(("router", _Module(f"{root}.{arch.router or 'mlp.gate'}", "router")))
                if shared:
                    mods += [("shared_experts", _Module(f"{root}.{x}", "linear")) for x in arch.shared_experts]
            for part, m in mods:
                per_part[part].append(method.decide(m))
        if not rec.get("tie_word_embeddings"):
            per_part["lm_head"].append(method.decide(_Module(arch.lm_head, "lm_head")))
        if rec.get("has_vision") and arch.vision:
            qm = str(q.get("quant_method") or "").lower()
            skip = "*" in arch.vision_skip or qm in arch.vision_skip
            per_part["vision"] += [None if skip else method.decide(_Module(v, "vision")) for v in arch.vision]
    except _Bad as e:
        notes.append(f"quantized modules not derived: {e.args[0]}")
        return {k: None for k in out}, notes
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:  # malformed nested values
        notes.append(f"quantized modules not derived: {type(e).__name__} reading quantization_config")
        return {k: None for k in out}, notes
    for p, fmts in per_part.items():
        if not fmts:
            continue
        q_fmts = [f for f in fmts if f is not None]
        out[f"quant_{p}_fraction"] = len(q_fmts) / len(fmts)
        if q_fmts:
            counts: dict[str, int] = {}
            for f in q_fmts:
                counts[f] = counts.get(f, 0) + 1
            best = max(counts, key=lambda k: (counts[k], k))
            out[f"quant_{p}_format"] = best
            if len(counts) > 1:
                notes.append(f"{p}: several quantized formats ({', '.join(sorted(counts))}); {best} kept")
    return out, notes
