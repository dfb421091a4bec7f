"""``python -m conformance attention --venv V [--platform P ...]``: vLLM's attention-backend selection, executed
on each platform stand-in (issue 23), into ``data/conformance/attention/vllm-<version>-<platform>.json``.

What is executed is ``conformance/vllm_attention_worker.py`` (its docstring: the backends' own ``supports_*``
answers, every catalog model's selector calls at TP 1, and vLLM's whole selection over a small grid). The rules
engine's port (``dashboard/frameworks/vllm/attention.py``) reads the facts and is held to the rest by
``tests/rules/test_vllm_attention.py``. Writes are atomic; one process per platform (the stand-in is installed
before vLLM is imported).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import tempfile
from pathlib import Path

from conformance import driver, executor
import pandas as pd

from dashboard.atomic import atomic_write, atomic_write_text

OUT = driver.DATA / "attention"
SCRIPT = Path(__file__).with_name("vllm_attention_worker.py")
MARK = "@@ATTENTION "
#: Head sizes the backends' pairwise (``supports_combination``) answers are recorded for: every attention head
#: size of the catalog (head_dim, Gemma's global_head_dim, MLA's kv_lora_rank + qk_rope_head_dim = 576) and the
#: sizes the backends list (FlashAttention's multiples of 8 up to 256, FlashInfer's 64/128/256/512, MLA 320).
HEAD_SIZES = [32, 40, 48, 64, 72, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512, 576]
DTYPES = ["float16", "bfloat16", "float32"]
KV_CACHE_DTYPES = ["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "fp8_ds_mla", "nvfp4_ds_mla"]
#: The backends vLLM's CUDA priority lists name (``vllm/platforms/cuda.py:84-180``, 0.33.0): their pairwise
#: answers are recorded (the other backends' single answers are recorded too, not their pairs).
CUDA_BACKENDS = ["FLASHINFER_MLA", "TOKENSPEED_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA",
                 "FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE", "FLASH_ATTN_MLA_SPARSE_FA4",
                 "FLASHINFER_MLA_SPARSE_SM120", "FLASH_ATTN_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM90",
                 "TRITON_FLASHINFER", "FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT",
                 "TRITON_FLASH_ATTN"]


def selection_grid() -> list[list]:
    """Selector configs vLLM's whole selection is run over (no model: the checks that read the model config
    are skipped there): ``[head_size, dtype, kv_cache_dtype, use_mla, has_sink, use_sparse, use_mm_prefix,
    has_sliding_window, num_heads]``."""
    out = []
    for h, dt, kv in itertools.product((64, 128, 256, 512, 576), ("float16", "bfloat16"), ("auto", "fp8_e4m3")):
        for mla, sink, sparse, swa in itertools.product((False, True), repeat=4):
            for nh in (16, 64):
                out.append([h, dt, kv, mla, sink, sparse, False, swa, nh])
    return out


COMBINATION_COLUMNS = ["backend", "head_size", "dtype", "kv_cache_dtype", "use_mla", "has_sink", "use_sparse",
                       "use_mm_prefix", "reason"]


def path_for(version: str, platform: str) -> Path:
    """The facts, model calls and selections of one platform (JSON)."""
    return OUT / f"vllm-{version}-{platform}.json"


def combinations_path(version: str, platform: str) -> Path:
    """Every non-``None`` ``supports_combination`` answer of :data:`CUDA_BACKENDS` (parquet,
    :data:`COMBINATION_COLUMNS`)."""
    return OUT / f"vllm-{version}-{platform}-combinations.parquet"


def run(venv: str, platforms: list[str], *, configs: Path | None, log=print) -> list[Path]:
    """Run the worker once per platform of ``platforms`` over the ``<org>--<name>.json`` files of ``configs``
    (None: no per-model calls); returns the files written."""
    python = driver.python_of(venv)
    configs = sorted(Path(configs).glob("*.json")) if configs else []
    written = []
    for p in platforms:
        job = {"platform": p, "device": driver.device_descriptor(p), "grid": selection_grid(),
               "combination": {"head_sizes": HEAD_SIZES, "dtypes": DTYPES, "kv_cache_dtypes": KV_CACHE_DTYPES,
                               "backends": CUDA_BACKENDS},
               "models": [{"config_path": str(f), "model_id": driver.model_id_from_filename(f),
                           "sidecars": driver.sidecars_for(driver.model_id_from_filename(f))} for f in configs]}
        proc = subprocess.run([python, str(SCRIPT)], input=json.dumps(job) + "\n", capture_output=True, text=True,
                              env=executor.worker_env(python), cwd=tempfile.gettempdir(), timeout=7200)
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)), None)
        if line is None:
            raise RuntimeError(f"{p}: the attention worker printed no result (exit {proc.returncode}):\n"
                               + proc.stderr[-3000:])
        res = json.loads(line[len(MARK):])
        res["combination_grid"] = job["combination"]
        res["source"] = (f"python -m conformance attention --venv {Path(venv).name} --platform {p} "
                         f"(conformance/vllm_attention_worker.py, vLLM {res['version']})")
        out = path_for(res["version"], p)
        out.parent.mkdir(parents=True, exist_ok=True)
        rows = [[name, *r] for name, b in res["backends"].items() for r in b.pop("combination", [])]
        combos = pd.DataFrame(rows, columns=COMBINATION_COLUMNS).astype(
            {"backend": "category", "dtype": "category", "kv_cache_dtype": "category", "reason": "category"})
        atomic_write(combinations_path(res["version"], p), lambda f: combos.to_parquet(f, index=False))
        atomic_write_text(out, json.dumps(res, indent=0, sort_keys=True))
        log(f"{p}: {len(res['backends'])} backends, {len(res['models'])} models, "
            f"{len(res['selection'])} selections -> {out}")
        written.append(out)
    return written
