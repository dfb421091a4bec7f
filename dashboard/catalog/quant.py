"""Quantization columns of one config: method, bits, block-FP8 shape, KV-cache dtype, the per-part
coverage (:mod:`dashboard.catalog.quant_coverage`), and the AutoGPTQ / AutoAWQ sidecar files
(:data:`QUANT_SIDECARS`) read when ``config.json`` has no ``quantization_config``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from dashboard.catalog.quant_coverage import coverage
from dashboard.catalog.values import as_int, clean_str, short_repr


#: Quantization files a repository may keep beside ``config.json`` -> the quant_method they imply when
#: they do not name one (AutoGPTQ writes ``quantize_config.json``, AutoAWQ ``quant_config.json``; vLLM
#: reads them for ``--quantization gptq`` / ``awq``, ``vllm/model_executor/model_loader/weight_utils.py``
#: ``get_quant_config``). In order of preference.
QUANT_SIDECARS: dict[str, str] = {"quantize_config.json": "gptq", "quant_config.json": "awq"}
MAX_SIDECAR_BYTES = 1 << 20


def quant_sidecar(sidecars: Mapping[str, object] | None, notes: list[str]) -> tuple[str, dict] | None:
    """(file name, parsed object with ``quant_method``) of the first readable quantization sidecar."""
    if not sidecars:
        return None
    if not isinstance(sidecars, Mapping):
        notes.append("sidecars is not a mapping: ignored")
        return None
    for name in sidecars:
        if name not in QUANT_SIDECARS:
            notes.append(f"sidecar {short_repr(name, 40)} is not a quantization file: ignored")
    for name, method in QUANT_SIDECARS.items():
        if name not in sidecars:
            continue
        v = sidecars[name]
        if isinstance(v, (bytes, bytearray, str)):
            if len(v) > MAX_SIDECAR_BYTES:
                notes.append(f"{name} larger than {MAX_SIDECAR_BYTES} bytes: ignored")
                continue
            try:
                v = json.loads(bytes(v).decode("utf-8") if isinstance(v, (bytes, bytearray)) else v)
            except (ValueError, UnicodeDecodeError, RecursionError) as e:
                notes.append(f"{name} unreadable ({short_repr(str(e), 80)}): ignored")
                continue
        if not isinstance(v, Mapping):
            notes.append(f"{name} is not a JSON object: ignored")
            continue
        q = dict(v)
        if not isinstance(q.get("quant_method"), str):
            q["quant_method"] = method
        return name, q
    return None


_NAME_QUANT = (("nvfp4", "modelopt", "nvfp4", 4), ("mxfp4", "mxfp4", "mxfp4", 4), ("fp8", "fp8", "", 8),
               ("awq", "awq", "", 4), ("gptq", "gptq", "", 4), ("int4", "", "", 4), ("w4a16", "", "", 4))


def kv_cache_quant(q: Mapping, notes: list[str]) -> str | None:
    """The KV-cache quantization a ``quantization_config`` declares (schema ``kv_cache_quant``): the first of
    ``quantization.kv_cache_scheme``, ``kv_cache_scheme``, ``quantization.kv_cache_quant_algo``,
    ``kv_cache_quant_algo`` that is set -- the order vLLM 0.33.0 reads them in
    (``vllm/utils/torch_utils.py:443-495 get_kv_cache_quant_algo_string``). A scheme object is written
    ``<type><num_bits>`` (``float8``), ``-dynamic`` appended when its ``dynamic`` is true; a string is
    lower-cased. None when none is set; noted when unreadable."""
    inner = q.get("quantization") if isinstance(q.get("quantization"), Mapping) else {}
    v = inner.get("kv_cache_scheme") or q.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo") \
        or q.get("kv_cache_quant_algo")
    if not v:
        return None
    if isinstance(v, Mapping):
        typ, bits = v.get("type"), v.get("num_bits")
        if not isinstance(typ, str) or isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 64:
            notes.append(f"kv_cache_scheme unreadable ({short_repr(dict(list(v.items())[:4]), 60)})")
            return None
        typ = clean_str(typ, "kv_cache_scheme.type", notes, cap=20)
        return f"{typ}{bits}{'-dynamic' if v.get('dynamic') is True else ''}"
    if isinstance(v, str):
        return clean_str(v.strip().lower(), "kv_cache_quant_algo", notes, cap=40) or None
    notes.append(f"KV-cache quantization unreadable ({type(v).__name__}): ignored")
    return None


def fill_quant(rec: dict, cfg: Mapping, text: Mapping, notes: list[str], sidecar: tuple[str, dict] | None = None) -> None:
    """Quantization columns of one config into ``rec``: method, weight bits, block-FP8 block shape, KV-cache
    dtype, and the per-part coverage (:func:`dashboard.catalog.quant_coverage.coverage`). ``sidecar`` is
    used when ``cfg`` has no ``quantization_config``. Noted."""
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
                if token == "fp8" and str(rec.get("org") or "").lower() == "nvidia":
                    # NVIDIA's FP8 exports are ModelOpt checkpoints (hf_quant_config.json, quant_algo FP8),
                    # as their NVFP4 ones are: what vLLM reads when config.json has no quantization_config
                    # (vllm/transformers_utils/config.py:955-962)
                    method, fmt = "modelopt", "fp8"
                rec["quant_method"] = method or None
                rec["quant_format"] = fmt or None
                rec["quant_bits"] = bits
                notes.append(f"no quantization_config in config.json; '{token}' in the repo name: quantized checkpoint inferred"
                             + (" (an NVIDIA ModelOpt export)" if method == "modelopt" else ""))
                break
        return
    rec["is_quantized"] = True
    rec["kv_cache_quant"] = kv_cache_quant(q, notes)
    method = clean_str(q.get("quant_method"), "quant_method", notes, cap=60)
    qa = q.get("quant_algo")
    qa = qa.strip() if isinstance(qa, str) else None
    fmt = q.get("format") if isinstance(q.get("format"), str) else None
    bits = None
    group = None
    wbs = q.get("weight_block_size")
    if isinstance(wbs, list) and len(wbs) == 2:
        rec["weight_block_n"] = as_int(wbs[0], "weight_block_size[0]", notes)
        rec["weight_block_k"] = as_int(wbs[1], "weight_block_size[1]", notes)
    elif wbs is not None:
        notes.append(f"weight_block_size unreadable ({short_repr(wbs, 40)})")
    m = (method or "").lower()
    if m in ("awq", "gptq", "autoround", "auto-round", "bitblas", "exl2", "hqq", "quark", "eetq", "aqlm"):
        bits = as_int(q.get("bits", q.get("w_bit")), "quant bits", notes, hi=64)
        group = as_int(q.get("group_size", q.get("q_group_size")), "quant group_size", notes, lo=-1, hi=1 << 20)
        if group == -1:
            notes.append("group_size -1: per-channel quantization (one scale per output column)")
    elif m == "bitsandbytes":
        bits = 4 if q.get("load_in_4bit") else (8 if q.get("load_in_8bit") else None)
        fmt = fmt or clean_str(q.get("bnb_4bit_quant_type"), "bnb_4bit_quant_type", notes, cap=40)
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
                b = as_int(w.get("num_bits"), f"config_groups.{short_repr(gname, 20)}.num_bits", notes, hi=64)
                gs = w.get("group_size")
                gs = as_int(gs, "config_groups group_size", notes, hi=1 << 20) if gs is not None else None
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
                    gn = short_repr(gname, 20)
                    if not (isinstance(bs, list) and len(bs) == 2):
                        notes.append(f"config_groups.{gn}.weights.block_structure unreadable ({short_repr(bs, 40)})")
                    elif rec["weight_block_n"] is None and rec["weight_block_k"] is None:
                        rec["weight_block_n"] = as_int(bs[0], f"config_groups.{gn}.block_structure[0]", notes)
                        rec["weight_block_k"] = as_int(bs[1], f"config_groups.{gn}.block_structure[1]", notes)
                        tg = g.get("targets")
                        if isinstance(tg, list) and tg != ["Linear"]:
                            notes.append(f"block-quantized weights {short_repr(bs, 20)} ({b}-bit) only for config_groups.{gn} "
                                         f"targets {short_repr(tg, 80)}")
                    elif [rec["weight_block_n"], rec["weight_block_k"]] != bs:
                        notes.append(f"config_groups.{gn} block_structure {short_repr(bs, 20)} differs from "
                                     f"[{rec['weight_block_n']}, {rec['weight_block_k']}] (kept)")
        if len(groups) > 1:
            notes.append(f"quantization_config has {len(groups)} config_groups (mixed precision)")
    if group is None and q.get("group_size") is not None and q.get("group_size") != -1:
        group = as_int(q.get("group_size"), "quant group_size", notes, hi=1 << 20)
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
    rec["quant_format"] = clean_str(fmt, "quant format", notes, cap=60) if fmt else None
    rec["quant_bits"] = bits
    rec["quant_group_size"] = group
    if method is None:
        notes.append("quantization_config has no quant_method")
    # which parts vLLM really quantizes, and how (lists matched against vLLM's module names)
    cov, cov_notes = coverage(q, text, cfg, rec)
    rec.update(cov)
    notes.extend(cov_notes)
