"""Every row of the KV-capacity oracles (``../shared/oracles/kv-capacity.csv`` and ``kv-capacity-2.csv``, see
their README) is a test; test ids are prefixed ``kv1-`` / ``kv2-`` by file.

Each row is a real run's log: vLLM "GPU KV cache size: N tokens" / "num_gpu_blocks", SGLang
"max_total_num_tokens". The product's :func:`dashboard.memory.capacity` is called with the run's inputs
(GPU memory as the engine saw it, fraction, dtype, TP / PP, max_model_len, engine release) and must land
within 5 % of the measured tokens per GPU; where the log breaks the memory down (weights, torch peak
increase, non-torch increase, CUDA-graph estimate, available KV memory) each part is tested too. Rows
missing an input run with the product's defaults and their test id says ``default-<input>``. Misses the
model does not explain are strict expected failures whose reason gives the measured miss.

Configs: a row's model is a catalog model, a ``config.json`` in ``../shared/hub-configs-2/`` or
``tests/data/oracle_configs/`` under exactly the id the row names, or has no config anywhere we hold: those rows
are listed in :data:`NO_CONFIG` with the reason, and ``test_oracle_row_without_config`` asserts the absence (it
fails the day a config appears, so the row then runs).

The calibration input (``measured_kv_bytes``) is checked against the same logs: given the logged KV
memory the predicted tokens are within 0.5 %.
"""

from __future__ import annotations

import json
import math
import os
import re
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pytest

from dashboard import catalog, memory
from tests.conftest import SHARED

GiB = 2**30
#: Oracle files, by the prefix of their test ids.
ORACLE_FILES = {"kv1": SHARED / "oracles/kv-capacity.csv", "kv2": SHARED / "oracles/kv-capacity-2.csv"}
ORACLES = ORACLE_FILES["kv1"]
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "oracle_configs"
#: Verbatim configs of public models the catalog has no row for yet (see its README).
HUB_CONFIGS_2 = SHARED / "hub-configs-2"
HUB_CONFIGS = SHARED / "hub-configs"
TOLERANCE = 0.05

#: Oracle GPU text -> data/gpus.csv id, used only when the row does not log the memory the engine saw (first
#: match wins; ``A10G`` / ``A100`` before ``A10``).
GPU_IDS = (("H100", "H100-80GB"), ("B200", "B200-180GB"), ("L4 ", "L4-24GB"), ("A10G", "A10G-24GB"),
           ("A100", "A100-80GB"), ("A10 ", "A10-24GB"), ("RTX 4090", "RTX-4090-24GB"), ("RTX 3090", "RTX-3090-24GB"),
           ("RTX 5090", "RTX-5090-32GB"), ("L40 ", "L40-48GB"), ("T4 ", "T4-16GB"))
#: Fallback when data/gpus.csv has no such card yet: L4 nvidia-smi memory.total 23034 MiB (NVIDIA L4
#: datasheet 24 GB; public nvidia-smi transcripts show 23034MiB).
GPU_FALLBACK_BYTES = {"L4-24GB": 23034 * 2**20}

_H100_SEEN = ("the row does not log the memory the engine saw: the product's H100 is NVML's 79.65 GiB "
              "(data/gpus.csv), the engine's total is cudaMemGetInfo's 79.19 GiB (vllm/utils/mem_utils.py:143 "
              "torch.accelerator.get_memory_info; every H100 row that logs it)")
_O60 = ("vLLM 0.15 / 0.16 profiled a 5.64 GiB activation peak for Qwen3-14B where 0.17 / 0.18 profiled 2.23 GiB "
        "(the sweep's run JSONs, same command); the model holds one activation rule read from 0.33 and the "
        "0.16 -> 0.17 change was not found in the engine's code")
_O74 = ("SGLang defaults a DSA model's KV cache to fp8_e4m3 on SM >= 10 (srt/arg_groups/overrides.py:532-535 of "
        "0.5.23) and adds the indexer cache: 61 x (656 + 132) = 48,068 B/token, which the log confirms "
        "(43.67 GiB / 975,424 tokens); the product prices bf16 MLA, 61 x 1,152 = 70,272 B/token, because it has "
        "no per-GPU (SM) rules yet (issue 23's platform tables); the budget is also 10 GiB high (53.67 predicted "
        "vs 43.67 GiB logged) with DP attention, not explained")
#: Per-part tolerances (absolute GiB, relative share) and the expected misses of parts, with the reason.
PART_TOL = {"weights": (0.0, 0.02), "activation": (0.1, 0.20), "non_torch": (0.15, 0.0), "cuda_graph": (0.3, 0.0),
            "available_kv": (0.0, 0.05), "blocks": (0.0, 0.05)}
PART_MISSES = {
    ("kv1-O24", "activation"): "-0.76 GiB: the log's breakdown is the first pipeline stage's (1.10 GiB, no sampler); "
                           "the model sizes the last stage, which runs the sampler and bounds the KV cache",
    ("kv1-O25", "activation"): "-0.81 GiB: first pipeline stage's breakdown (1.05 GiB, no sampler), as O24",
    ("kv1-O12", "non_torch"): "-0.21 GiB: granite logged 0.46 GiB non-torch at TP 1 where every other TP-1 run logged "
                          "0.24-0.27; not explained",
    ("kv1-O26", "cuda_graph"): "-0.95 GiB: Llama-3.1-8B TP 2 logged a 1.69 GiB graph estimate but captured 0.76 GiB; "
                           "the TP 4 run and Qwen2.5 TP 2 logged 0.57 / 0.61",
    ("kv2-O37", "weights"): ("-0.50 GiB (6.51 vs 7.01): vLLM pads gpt-oss's mxfp4 expert dims to the chosen MoE "
                             "backend's tile (fused_moe/oracle/mxfp4.py:837-905 of 0.33.0); the backend is chosen per "
                             "GPU (select_mxfp4_moe_backend), which the product does not model yet (issue 23)"),
    ("kv2-O39", "cuda_graph"): ("-0.46 GiB (1.17 vs 1.63): Qwen2.5-72B TP 2's logged graph estimate; not charged "
                                "to the budget before vLLM 0.21, so it does not move the tokens"),
    ("kv2-O39", "available_kv"): "+0.19 GiB = +6.2% (3.23 vs 3.04): see the O39 token miss",
    ("kv2-O39", "blocks"): "+6.2% (1,322 vs 1,245): see the O39 token miss",
    ("kv2-O60", "activation"): f"-3.46 GiB (2.18 vs 5.64): {_O60}",
    ("kv2-O61", "activation"): f"-3.46 GiB (2.18 vs 5.64): {_O60}",
    ("kv2-O60", "available_kv"): f"+3.35 GiB (45.29 vs 41.94): {_O60}",
    ("kv2-O61", "available_kv"): f"+3.35 GiB (45.29 vs 41.94): {_O60}",
    ("kv2-O60", "blocks"): f"+8.0% (18,552 vs 17,178): {_O60}",
    ("kv2-O61", "blocks"): f"+8.0% (18,552 vs 17,178): {_O60}",
    ("kv2-O79", "available_kv"): f"+0.39 GiB (7.82 vs 7.43): {_H100_SEEN}",
    ("kv2-O79", "blocks"): f"+5.2% (2,669 vs 2,537): {_H100_SEEN}",
    ("kv1-O02", "cuda_graph"): "-0.35 GiB: DeepSeek-V2-Lite (MLA + 64 experts) logged 1.39 GiB; the one MoE "
                           "extra (0.35 GiB) fits Qwen3-30B-A3B and Mixtral, not MLA",
}
#: Rows whose token figure the model misses by more than 5 %, with the reason and the measured miss.
TOKEN_MISSES: dict[str, str] = {
    "kv2-O39": ("+6.2% (21,152 vs 19,920): Qwen2.5-72B TP 2 leaves only 3.04 GiB for KV; each part is within its "
                "tolerance (weights -0.08, activation -0.11 GiB) but together they are 0.19 GiB = 6.2 % of that budget"),
    "kv2-O60": f"+8.0% (296,832 vs 274,848): {_O60}",
    "kv2-O61": f"+8.0% (296,832 vs 274,848): {_O60}",
    "kv2-O65": ("+9.1% (400,778 vs 367,404; K + V 16.46 GiB logged, 17.96 predicted): " + _H100_SEEN
                + " -- 0.93 x 0.46 = 0.43 GiB of the 1.50 GiB (at 79.22 GiB the miss is +6.7 %); the rest (SGLang "
                "release unknown, July 2025) not explained"),
    "kv2-O74": f"-15.9% (820,037 vs 975,424): {_O74}",
    "kv2-O75": ("-43.9% (820,037 vs 1,462,784): the pre-PR-#11309 SGLang sized the pool without the DSA indexer "
                "cache (54.52 GiB / 1,462,784 = 40,016 B/token = 61 x 656, fp8 MLA only), a bug that release fixed; "
                "and as O74: " + _O74),
    "kv2-O76": ("+71.1% (18,336 vs 10,718 tokens): a TensorRT engine (v0.5, C++ runtime / Triton backend) "
                "pre-allocates the engine's activation and I/O buffers sized by the build (max_batch_size 25, "
                "max_output_len 4096) before kv_cache_free_gpu_mem_fraction takes 0.95 of what is free; the product "
                "models the PyTorch backend's KvCacheCreator._cal_max_memory (profiled peak), not engine builds"),
    "kv2-O79": ("+5.2% (42,704 vs 40,592; KV 7.82 vs 7.43 GiB): " + _H100_SEEN + " -- 0.9 x 0.46 = 0.41 GiB, the "
                "whole 0.39 GiB miss on a 7.43 GiB budget; sized against data/gpus.csv's mem_get_info_gib (79.22) "
                "the row lands within 0.2 % (O80, the same pool at max_model_len 4096, passes at -4.9 % only because the "
                "default batch limits over-state its activation: it would go to about -10 %)"),
}


def _rows() -> list[dict]:
    """Every oracle row of every file, with ``_file`` (the id prefix) and ``_key`` (``kv1-O24``)."""
    out = []
    for prefix, path in ORACLE_FILES.items():
        if path.exists():
            for row in pd.read_csv(path).to_dict("records"):
                out.append({**row, "_file": prefix, "_key": f"{prefix}-{row['oracle_id']}"})
    return out


ROWS = _rows()
_PRESENT = all(p.exists() for p in ORACLE_FILES.values())
#: Outside CI a missing ../shared skips this module; in CI it runs and test_oracle_files_are_present fails.
pytestmark = pytest.mark.skipif(not _PRESENT and not os.environ.get("CI"),
                                reason=f"{', '.join(str(p) for p in ORACLE_FILES.values())} not present")


def test_oracle_files_are_present(shared_dir):
    missing = [str(p) for p in ORACLE_FILES.values() if not p.exists()]
    assert not missing, f"oracle files missing: {missing}"


def _na(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


@lru_cache(maxsize=None)
def _catalog() -> pd.DataFrame:
    return catalog.load_catalog().set_index("model_id", drop=False)


def _config_path(model_id: str) -> Path | None:
    """The ``config.json`` we hold under exactly ``model_id`` outside the catalog (``../shared/hub-configs-2/``,
    then ``tests/data/oracle_configs/``), or None."""
    name = str(model_id).replace("/", "--", 1) + ".json"
    return next((d / name for d in (HUB_CONFIGS_2, CONFIGS) if (d / name).is_file()), None)


def _record(model_id: str) -> pd.Series:
    cat = _catalog()
    if model_id in cat.index:
        return cat.loc[model_id]
    path = _config_path(model_id)
    if path is None:
        raise LookupError(f"{model_id!r}: no config in the catalog, {HUB_CONFIGS_2} or {CONFIGS}")
    return pd.Series(catalog.normalize_config(json.loads(path.read_text()), model_id, source="oracle-fixture"))


def _has_config(model_id: str) -> bool:
    return model_id in _catalog().index or _config_path(model_id) is not None


def _near_configs(model_id: str) -> list[str]:
    """Ids we hold that differ from ``model_id`` only in case (any org / name spelling), for the no-config test."""
    held = set(_catalog().index) | {f.stem.replace("--", "/", 1) for d in (HUB_CONFIGS, HUB_CONFIGS_2, CONFIGS)
                                    if d.is_dir() for f in d.glob("*.json")}
    return sorted(h for h in held if h.lower() == str(model_id).lower() and h != model_id)


def _gib(notes: str, pattern: str) -> float | None:
    m = re.search(pattern, notes)
    return float(m.group(1)) if m else None


def _inputs(row: dict) -> tuple[dict, list[str]]:
    """capacity() keyword arguments for an oracle row, and the inputs that fell back to defaults."""
    defaults: list[str] = []
    wq = str(row["weight_quant"])
    dt = re.search(r"dtype=(\w+)", wq)
    dtype = dt.group(1) if dt else "bfloat16"
    kv = "fp8" if row["kv_dtype"] == "fp8" else {"float32": "fp32", "float16": "fp16"}.get(dtype, "bf16")
    weight_dtype = "fp8" if wq.startswith("fp8") else ("fp32" if dtype == "float32" else None)
    if not _na(row["gpu_mem_gib"]):
        gpu = int(row["gpu_mem_gib"] * GiB)
    else:
        defaults.append("gpu")
        gid = next((v for k, v in GPU_IDS if k in str(row["gpu"]) + " "), "H100-80GB")
        table = memory.load_gpus()
        gpu = gid if gid in set(table["gpu"]) else GPU_FALLBACK_BYTES[gid]
    ctx = None
    if _na(row["max_model_len"]):
        defaults.append("context")
        ctx = 8192
    else:
        ctx = int(row["max_model_len"])
    frac = None if _na(row["mem_fraction"]) else float(row["mem_fraction"])
    if frac is None:
        defaults.append("fraction")
    version = str(row["engine_version"])
    kw: dict = {}
    if "V0" in version:  # V0 profiles the whole max_model_len at once (no chunked prefill), 256 sequences
        version = "0.6"
        kw.update(max_num_batched_tokens=ctx, max_num_seqs=256)
    else:
        m = re.search(r"\d+\.\d+(\.\d+)?", version)
        version = m.group(0) if m else None
        if version is None:
            defaults.append("version")
    bt = re.search(r"max_num_batched_tokens (\d+)", str(row["notes"]))
    ns = re.search(r"max_num_seqs (\d+)", str(row["notes"]))
    if bt:
        kw["max_num_batched_tokens"] = int(bt.group(1))
    if ns:
        kw["max_num_seqs"] = int(ns.group(1))
    if int(row["dp"]) > 1:  # SGLang --dp N --enable-dp-attention: N attention-DP ranks inside the TP group
        kw.update(dp=int(row["dp"]), dp_attention="--enable-dp-attention" in str(row["notes"]))
    kw.update(gpu=gpu, tp=int(row["tp"]), pp=int(row["pp"]), kv_dtype=kv, weight_dtype=weight_dtype, context_len=ctx,
              mem_fraction=frac, engine_version=version)
    return kw, defaults


def _capacity(row: dict, **extra) -> dict:
    kw, _ = _inputs(row)
    gpu, tp = kw.pop("gpu"), kw.pop("tp")
    return memory.capacity(_record(row["model_id"]), row["engine"], gpu, tp, **kw, **extra)


def _id(row: dict) -> str:
    _, defaults = _inputs(row)
    tag = f"{row['_key']}-{row['engine']}-{row['model_id'].split('/')[-1]}-tp{row['tp']}pp{row['pp']}"
    return tag + "".join(f"-default-{d}" for d in defaults)


#: Rows whose model has no config anywhere we hold (catalog, ../shared/hub-configs/ in any case,
#: ../shared/hub-configs-2/, tests/data/oracle_configs/): they cannot run. test_oracle_row_without_config asserts
#: the absence, so it fails the day a config appears (then delete the entry: the row runs).
_NO_COPY = "no public config.json copy we hold"
NO_CONFIG: dict[str, str] = {
    **{f"kv2-{o}": f"{_NO_COPY}: {m} is in neither the catalog, ../shared/hub-configs/ (any case) nor "
                   "../shared/hub-configs-2/"
       for o, m in (("O01", "codellama/CodeLlama-7b-hf"), ("O03", "google/gemma-2-27b-it"),
                    ("O04", "google/gemma-2-2b-it"), ("O06", "google/gemma-3-12b-it"),
                    ("O07", "google/gemma-3-27b-it"), ("O08", "google/gemma-3-4b-it"), ("O09", "google/gemma-7b"),
                    ("O10", "ibm-granite/granite-3.1-2b-instruct"), ("O11", "ibm-granite/granite-3.1-8b-instruct"),
                    ("O13", "ibm-granite/granite-vision-3.3-2b"),
                    ("O31", "mistralai/Mistral-Small-3.1-24B-Instruct-2503"), ("O33", "moonshotai/Kimi-Dev-72B"),
                    ("O34", "moonshotai/Kimi-Dev-72B"), ("O35", "moonshotai/Kimi-VL-A3B-Instruct"),
                    ("O36", "moonshotai/Kimi-VL-A3B-Instruct"), ("O38", "Qwen/Qwen1.5-MoE-A2.7B"),
                    ("O51", "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic"),
                    ("O52", "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic"),
                    ("O54", "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"),
                    ("O55", "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8"),
                    ("O56", "RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8"),
                    ("O57", "RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8"),
                    ("O58", "RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic"),
                    ("O59", "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8"),
                    ("O68", "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B (only the 7B distill is held)"),
                    ("O69", "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct (DeepSeek-V2-Lite is a different repo)"),
                    ("O70", "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4 (only the unquantized Qwen2.5-72B-Instruct is held)"),
                    ("O71", "deepseek-ai/deepseek-coder-6.7b-instruct"),
                    ("O81", "mistralai/Mistral-Small-3.2-24B-Instruct-2506"),
                    ("O84", "Qwen/Qwen2.5-Coder-0.5B-Instruct (only Qwen2.5-Coder-7B-Instruct is held)"),
                    ("O86", "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8 (the org is RedHatAI's former "
                            "name; no copy under either)"))},
    "kv2-O53": f"{_NO_COPY}: the row names redhatai/Llama-3.3-70B-Instruct-quantized.w8a8 (lower-case org); no copy "
               "under redhatai/ or RedHatAI/",
    "kv2-O77": "model not identified: 'mistral-7b (exact Hub variant not stated; Mistral-7B family)' names no Hub "
               "repo; ../shared/hub-configs-2/ holds mistralai/Mistral-7B-Instruct-v0.1 and the catalog "
               "Mistral-7B-v0.1 / -Instruct-v0.2 / v0.3, but the row does not say which one ran",
    "kv2-O82": "model not identified: a local NVFP4 modelopt checkpoint ('qwen3.6-35b-a3b-nvfp4; exact Hub repo not "
               "named'); nvidia/Qwen3.6-35B-A3B-NVFP4 is held, but the row does not say it is that repo",
    "kv2-O83": "model not identified: the same local NVFP4 checkpoint as O82 (exact Hub repo not named)",
    "kv2-O85": "model not identified: 'Llama-3.1-8B FP8 checkpoint (exact Hub repo not named in excerpt)'; no FP8 "
               "Llama-3.1-8B repo is named, so no config can be matched",
}

RUNNABLE = [r for r in ROWS if r["_key"] not in NO_CONFIG]


def _no_config_params():
    return [pytest.param(r, NO_CONFIG[r["_key"]], id=_id(r)) for r in ROWS if r["_key"] in NO_CONFIG]


@pytest.mark.parametrize("row,reason", _no_config_params())
def test_oracle_row_without_config(row, reason):
    """The row cannot run: its model (exactly as named, or in another case) has no config we hold. Fails the
    day one appears, so the entry in NO_CONFIG is then removed and the row runs."""
    mid = row["model_id"]
    assert not _has_config(mid), f"{row['_key']}: {mid} now has a config: remove it from NO_CONFIG ({reason})"
    near = _near_configs(mid)
    assert not near, f"{row['_key']}: {mid} is held as {near} (another case): decide which repo ran ({reason})"


def test_every_row_runs_or_is_listed_without_config():
    """No row is silently dropped: a row runs (its model's config is held) or NO_CONFIG lists it with a reason."""
    unlisted = [r["_key"] for r in RUNNABLE if not _has_config(r["model_id"])]
    assert unlisted == [], f"rows with no config and no NO_CONFIG reason: {unlisted}"
    stale = sorted(set(NO_CONFIG) - {r["_key"] for r in ROWS})
    assert stale == [], f"NO_CONFIG names rows that are not in the oracle files: {stale}"
    assert len([r for r in ROWS if r["_file"] == "kv2"]) == 52 and len([r for r in ROWS if r["_file"] == "kv1"]) == 34


def _token_params():
    out = []
    for row in RUNNABLE:
        marks = []
        if _na(row["measured_tokens"]):
            marks.append(pytest.mark.skip(reason=f"{row['oracle_id']}: the log prints no token figure (measured_tokens "
                                                 "is empty); its blocks are checked in test_oracle_part"))
        elif row["_key"] in TOKEN_MISSES:
            marks.append(pytest.mark.xfail(strict=True, reason=TOKEN_MISSES[row["_key"]]))
        out.append(pytest.param(row, id=_id(row), marks=marks))
    return out


@pytest.mark.parametrize("row", _token_params())
def test_oracle_tokens_within_5_percent(row):
    cap = _capacity(row)
    measured = float(row["measured_tokens"])
    miss = cap["tokens_per_gpu"] / measured - 1
    assert abs(miss) <= TOLERANCE, (f"{row['oracle_id']} {row['model_id']}: predicted {cap['tokens_per_gpu']:,} "
                                    f"vs measured {measured:,.0f} tokens ({miss:+.1%})")


def _measured_parts(row: dict) -> dict[str, float]:
    """The memory parts the row's log prints (GiB; blocks as a count)."""
    n = str(row["notes"])
    parts: dict[str, float | None] = {
        "weights": None if _na(row["weights_gib_logged"]) else float(row["weights_gib_logged"]),
        "activation": _gib(n, r"torch peak memory increase: ([\d.]+)GiB"),
        "non_torch": _gib(n, r"non-torch forward increase memory: ([\d.]+)GiB"),
        "cuda_graph": _gib(n, r"Estimated CUDA graph memory: ([\d.]+) GiB"),
        "available_kv": _gib(n, r"Available KV cache memory: ([\d.]+) GiB"),
        "blocks": None if _na(row["measured_blocks"]) or row["engine"] != "vllm" else float(row["measured_blocks"]),
    }
    if "kv_cache_memory_gib=" in n:  # the version sweep's parsed run JSON (the same log figures)
        parts["activation"] = _gib(n, r"activation_memory_gib=([\d.]+)")
        parts["non_torch"] = _gib(n, r"non_torch_forward_memory_gib=([\d.]+)")
        parts["available_kv"] = _gib(n, r"kv_cache_memory_gib=([\d.]+)")
    v0 = re.search(r"peak_torch_memory=([\d.]+)GiB", n)
    if v0 and parts["weights"] is not None:  # V0 prints the peak including the weights
        parts["activation"] = float(v0.group(1)) - parts["weights"]
        parts["non_torch"] = _gib(n, r"non_torch_memory=([\d.]+)GiB")
        parts["available_kv"] = _gib(n, r"kv_cache_size=([\d.]+)GiB")
    return {k: v for k, v in parts.items() if v is not None}


def _predicted_part(cap: dict, part: str, engine: str) -> float:
    if part == "weights":  # SGLang's "mem usage" at load adds rotary caches / allocator rounding
        return (cap["weight_bytes_per_gpu"] + (memory.SGLANG_LOAD_EXTRA_BYTES if engine == "sglang" else 0)) / GiB
    if part == "blocks":
        return float(cap["kv_blocks_per_gpu"])
    key = {"activation": "activation_bytes_per_gpu", "non_torch": "non_torch_bytes_per_gpu",
           "cuda_graph": "cuda_graph_bytes_per_gpu", "available_kv": "kv_budget_bytes_per_gpu"}[part]
    return cap[key] / GiB


def _part_params():
    out = []
    for row in RUNNABLE:
        for part in _measured_parts(row):
            marks = []
            if (row["_key"], part) in PART_MISSES:
                marks.append(pytest.mark.xfail(strict=True, reason=PART_MISSES[(row["_key"], part)]))
            out.append(pytest.param(row, part, id=f"{_id(row)}-{part}", marks=marks))
    return out


@pytest.mark.parametrize("row,part", _part_params())
def test_oracle_part(row, part):
    cap = _capacity(row)
    measured = _measured_parts(row)[part]
    predicted = _predicted_part(cap, part, row["engine"])
    abs_tol, rel_tol = PART_TOL[part]
    assert abs(predicted - measured) <= max(abs_tol, rel_tol * measured), (
        f"{row['oracle_id']} {part}: predicted {predicted:.3f} vs logged {measured:.3f} "
        f"(tolerance {abs_tol} GiB / {rel_tol:.0%})")


def _calibration_rows():
    out = []
    for row in RUNNABLE:
        n = str(row["notes"])
        kv = _gib(n, r"Available KV cache memory: ([\d.]+) GiB") or _gib(n, r"kv_cache_memory_gib=([\d.]+)")
        if kv is None:
            ks = re.search(r"K size: ([\d.]+) GB, V size: ([\d.]+) GB", n)
            kv = float(ks.group(1)) + float(ks.group(2)) if ks else None
        if kv is not None and not _na(row["measured_tokens"]):
            marks = []
            if row["_key"] == "kv2-O64":
                marks.append(pytest.mark.xfail(strict=True, reason=(
                    "+1.14%: the logged 8.11 GiB is 11,308 blocks of 16 x 48,128 B; the engine printed 178,880 "
                    "tokens = 11,180 blocks (8.02 GiB); release unknown (July 2025, LMCache connector on): not "
                    "explained")))
            if int(row["pp"]) > 1:  # the printed figure is one stage's; the blocks are the minimum over stages
                marks.append(pytest.mark.xfail(strict=True, reason=(
                    f"{row['oracle_id']}: PP {row['pp']}: the log's 'Available KV cache memory' is the printing "
                    "(first) stage's; num_gpu_blocks is the minimum over stages (the last, with the sampler), "
                    "so the logged figure over-states the binding stage by ~1.4 %")))
            out.append(pytest.param(row, kv, id=_id(row), marks=marks))
    return out


@pytest.mark.parametrize("row,kv_gib", _calibration_rows())
def test_calibration_input_matches_the_log_within_half_a_percent(row, kv_gib):
    cap = _capacity(row, measured_kv_bytes=kv_gib * GiB)
    assert cap["calibrated"] is True
    assert cap["kv_budget_bytes_per_gpu"] == kv_gib * GiB
    assert cap["budget_rule"].startswith("measured")
    miss = cap["tokens_per_gpu"] / float(row["measured_tokens"]) - 1
    assert abs(miss) <= 0.005, f"{row['oracle_id']}: {miss:+.2%} with the logged {kv_gib} GiB"


def test_at_least_90_percent_of_comparable_rows_pass_and_each_family_passes():
    comparable = [r for r in ROWS if r["_file"] == "kv1" and not _na(r["measured_tokens"])]
    ok = {r["oracle_id"] for r in comparable
          if abs(_capacity(r)["tokens_per_gpu"] / float(r["measured_tokens"]) - 1) <= TOLERANCE}
    assert len(ok) >= 0.9 * len(comparable)
    fam = {"dense": "O18", "moe": "O49", "mla-moe": "O02", "sliding-window": "O05", "sglang": "O72"}
    assert {k: v for k, v in fam.items() if v not in ok} == {}


def test_vllm_multi_group_report_matches_the_gemma2_arithmetic():
    """gemma-2-9b: 21 full + 21 sliding layers -> 2 groups of 21, page 16 x 8 x 512 x 2 B; vLLM 0.19 printed
    floor(21110 / 2) x 16 = 168,880 tokens; 0.33 prints 21110 / (512 + 513) x 8192."""
    row = next(r for r in ROWS if r["_key"] == "kv1-O05")
    cap = _capacity(row, measured_kv_bytes=54.12 * GiB)
    assert cap["kv_cache_groups"] == 2
    assert cap["kv_blocks_per_gpu"] == math.floor(54.12 * GiB / (21 * 16 * 8 * 512 * 2))
    assert cap["kv_blocks_per_gpu"] // 2 * 16 == pytest.approx(168_880, rel=1e-3)
    assert cap["concurrent_sequences"] == math.floor(cap["kv_blocks_per_gpu"] / (512 + 513))


def test_measured_kv_bytes_is_validated():
    row = ROWS[0]
    for bad in (0, -1, float("nan"), "x"):
        with pytest.raises(ValueError, match="measured_kv_bytes"):
            _capacity(row, measured_kv_bytes=bad)
