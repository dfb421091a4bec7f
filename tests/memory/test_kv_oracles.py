"""Every row of the KV-capacity oracles (``../shared/oracles/kv-capacity.csv``, see its README) is a test.

Each row is a real run's log: vLLM "GPU KV cache size: N tokens" / "num_gpu_blocks", SGLang
"max_total_num_tokens". The product's :func:`dashboard.memory.capacity` is called with the run's inputs
(GPU memory as the engine saw it, fraction, dtype, TP / PP, max_model_len, engine release) and must land
within 5 % of the measured tokens per GPU; where the log breaks the memory down (weights, torch peak
increase, non-torch increase, CUDA-graph estimate, available KV memory) each part is tested too. Rows
missing an input run with the product's defaults and their test id says ``default-<input>``. Misses the
model does not explain are strict expected failures whose reason gives the measured miss.

The calibration input (``measured_kv_bytes``) is checked against the same logs: given the logged KV
memory the predicted tokens are within 0.5 %.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pytest

from dashboard import catalog, memory
from tests.conftest import SHARED

GiB = 2**30
ORACLES = SHARED / "oracles/kv-capacity.csv"
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "oracle_configs"
TOLERANCE = 0.05

#: Oracle GPU text -> data/gpus.csv id, used only when the row does not log the memory the engine saw.
GPU_IDS = {"H100": "H100-80GB", "L4": "L4-24GB"}
#: Fallback when data/gpus.csv has no such card yet: L4 nvidia-smi memory.total 23034 MiB (NVIDIA L4
#: datasheet 24 GB; public nvidia-smi transcripts show 23034MiB).
GPU_FALLBACK_BYTES = {"L4-24GB": 23034 * 2**20}

#: Per-part tolerances (absolute GiB, relative share) and the expected misses of parts, with the reason.
PART_TOL = {"weights": (0.0, 0.02), "activation": (0.1, 0.20), "non_torch": (0.15, 0.0), "cuda_graph": (0.3, 0.0),
            "available_kv": (0.0, 0.05), "blocks": (0.0, 0.05)}
PART_MISSES = {
    ("O24", "activation"): "-0.76 GiB: the log's breakdown is the first pipeline stage's (1.10 GiB, no sampler); "
                           "the model sizes the last stage, which runs the sampler and bounds the KV cache",
    ("O25", "activation"): "-0.81 GiB: first pipeline stage's breakdown (1.05 GiB, no sampler), as O24",
    ("O12", "non_torch"): "-0.21 GiB: granite logged 0.46 GiB non-torch at TP 1 where every other TP-1 run logged "
                          "0.24-0.27; not explained",
    ("O26", "cuda_graph"): "-0.95 GiB: Llama-3.1-8B TP 2 logged a 1.69 GiB graph estimate but captured 0.76 GiB; "
                           "the TP 4 run and Qwen2.5 TP 2 logged 0.57 / 0.61",
    ("O02", "cuda_graph"): "-0.35 GiB: DeepSeek-V2-Lite (MLA + 64 experts) logged 1.39 GiB; the one MoE "
                           "extra (0.35 GiB) fits Qwen3-30B-A3B and Mixtral, not MLA",
}
#: Rows whose token figure the model misses by more than 5 %, with the reason and the measured miss.
TOKEN_MISSES: dict[str, str] = {}


def _rows() -> list[dict]:
    if not ORACLES.exists():
        return []
    return pd.read_csv(ORACLES).to_dict("records")


ROWS = _rows()
pytestmark = pytest.mark.skipif(not ROWS, reason=f"{ORACLES} not present")


def _na(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


@lru_cache(maxsize=None)
def _catalog() -> pd.DataFrame:
    return catalog.load_catalog().set_index("model_id", drop=False)


def _record(model_id: str) -> pd.Series:
    cat = _catalog()
    if model_id in cat.index:
        return cat.loc[model_id]
    path = CONFIGS / (model_id.replace("/", "--") + ".json")
    return pd.Series(catalog.normalize_config(json.loads(path.read_text()), model_id, source="oracle-fixture"))


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
        gid = next((v for k, v in GPU_IDS.items() if k in str(row["gpu"])), "H100-80GB")
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
    kw.update(gpu=gpu, tp=int(row["tp"]), pp=int(row["pp"]), kv_dtype=kv, weight_dtype=weight_dtype, context_len=ctx,
              mem_fraction=frac, engine_version=version)
    return kw, defaults


def _capacity(row: dict, **extra) -> dict:
    kw, _ = _inputs(row)
    gpu, tp = kw.pop("gpu"), kw.pop("tp")
    return memory.capacity(_record(row["model_id"]), row["engine"], gpu, tp, **kw, **extra)


def _id(row: dict) -> str:
    _, defaults = _inputs(row)
    tag = f"{row['oracle_id']}-{row['engine']}-{row['model_id'].split('/')[-1]}-tp{row['tp']}pp{row['pp']}"
    return tag + "".join(f"-default-{d}" for d in defaults)


def _token_params():
    out = []
    for row in ROWS:
        marks = []
        if _na(row["measured_tokens"]):
            marks.append(pytest.mark.skip(reason=f"{row['oracle_id']}: the log prints no token figure (measured_tokens "
                                                 "is empty); its blocks are checked in test_oracle_part"))
        elif row["oracle_id"] in TOKEN_MISSES:
            marks.append(pytest.mark.xfail(strict=True, reason=TOKEN_MISSES[row["oracle_id"]]))
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
    for row in ROWS:
        for part in _measured_parts(row):
            marks = []
            if (row["oracle_id"], part) in PART_MISSES:
                marks.append(pytest.mark.xfail(strict=True, reason=PART_MISSES[(row["oracle_id"], part)]))
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
    for row in ROWS:
        n = str(row["notes"])
        kv = _gib(n, r"Available KV cache memory: ([\d.]+) GiB")
        if kv is None:
            ks = re.search(r"K size: ([\d.]+) GB, V size: ([\d.]+) GB", n)
            kv = float(ks.group(1)) + float(ks.group(2)) if ks else None
        if kv is not None and not _na(row["measured_tokens"]):
            marks = []
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
    comparable = [r for r in ROWS if not _na(r["measured_tokens"])]
    ok = {r["oracle_id"] for r in comparable
          if abs(_capacity(r)["tokens_per_gpu"] / float(r["measured_tokens"]) - 1) <= TOLERANCE}
    assert len(ok) >= 0.9 * len(comparable)
    fam = {"dense": "O18", "moe": "O49", "mla-moe": "O02", "sliding-window": "O05", "sglang": "O72"}
    assert {k: v for k, v in fam.items() if v not in ok} == {}


def test_vllm_multi_group_report_matches_the_gemma2_arithmetic():
    """gemma-2-9b: 21 full + 21 sliding layers -> 2 groups of 21, page 16 x 8 x 512 x 2 B; vLLM 0.19 printed
    floor(21110 / 2) x 16 = 168,880 tokens; 0.33 prints 21110 / (512 + 513) x 8192."""
    row = next(r for r in ROWS if r["oracle_id"] == "O05")
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
