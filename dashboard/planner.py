"""Deployment planner: every way to split N GPUs for one model, per serving framework, ranked.

:func:`plan` answers "how do I serve this model on N x GPU?": it lists every parallel layout of exactly N
GPUs (TP x PP x DP, with expert parallelism on/off for MoE models and attention-DP for the frameworks
that have it) for vLLM, SGLang and TensorRT-LLM, with the rules engine's verdict (:mod:`dashboard.rules`,
the framework's own first error), the memory model's capacity (:mod:`dashboard.memory`), the number of
concurrent ``context_len``-token sequences (KV-limited, capped by the engine's default scheduler
limit), whether it fits and why not, and the launch command(s) for the layouts the framework accepts.
:func:`plan_catalog` answers the same question for a whole catalog (which models can serve >= K
sequences of L tokens on N x GPU, under each framework, with which best layout). :func:`refusals`
groups the refused layouts by reason.

Pure: numpy/pandas, no Panel. Both functions are vectorized: one :func:`dashboard.rules.layout_grid`
evaluation per call (all layouts x frameworks at once) and one :func:`dashboard.memory.layout_capacity`
call per framework; no per-layout rules or memory calls.

Units: ``*_bytes*`` are bytes, ``*_gib*`` GiB (2**30 bytes); ``*_per_gpu`` on one GPU; ``*_per_replica`` one
engine instance (one TP x PP group, its attention-DP groups included); ``total`` all N GPUs.

Engine defaults the plan assumes (sources pinned)
-------------------------------------------------
* vLLM ``--max-num-seqs`` (per engine, i.e. per DP rank), 0.33.0 ``EngineArgs.get_batch_defaults``
  (``vllm/engine/arg_utils.py:2940-3039``; applied in ``_set_default_max_num_seqs_and_batched_tokens_args``,
  ``:3151-3240``): 1024 on GPUs with >= 160 GiB (``:2973``) or >= 70 GiB that are not A100 / GB10
  (``:2983-2996``), else 256 (``:2997-3006``); then ``min(max_num_seqs, max_num_batched_tokens)``.
  https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/engine/arg_utils.py
* SGLang ``--max-running-requests`` unset, 0.5.23 ``KVCacheConfigurator.resolve_max_num_reqs``
  (``sglang/srt/mem_cache/kv_cache_configurator.py:3119-3133``), per attention-DP worker:
  ``min(clamp(int(tokens / context_len * 512), 2048, 4096), tokens // 2)``.
  https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/mem_cache/kv_cache_configurator.py
* TensorRT-LLM ``trtllm-serve --max_batch_size`` default ``BuildConfig.max_batch_size`` = 2048
  (``tensorrt_llm/commands/serve.py`` @ 00209af149e7774406881a37283dce303571eb11, ``tensorrt_llm/builder.py``
  @ 008b2b8d23af95e4e19fa6f354f9c5f6349b2bfc); taken per attention-DP rank under attention-DP.
* Memory fractions: vLLM ``--gpu-memory-utilization`` 0.9, SGLang's computed ``mem_fraction_static``,
  TensorRT-LLM ``--kv_cache_free_gpu_memory_fraction`` 0.9: :func:`dashboard.memory.capacity`.
* A layout whose KV cache cannot hold one ``context_len`` sequence: vLLM 0.33.0 refuses at start-up
  (``vllm/v1/core/kv_cache_planning.py:50-87``, ``_check_enough_kv_cache_memory``: "No available memory
  for the cache blocks ..." when the budget is <= 0, else "To serve at least one request with the model's
  max seq len (...)"; older releases: "The model's max seq len (...) is larger than the maximum number of
  tokens that can be stored in KV cache (...)"); SGLang 0.5.23 refuses an empty pool ("Not enough memory.
  Please try to increase --mem-fraction-static.", ``model_executor/pool_configurator.py:95-98``) and
  otherwise starts with requests capped below ``context_len`` (message ours); TensorRT-LLM without
  ``--fail_fast_on_attention_window_too_large`` shrinks the attention window (message ours).
* GPU dtypes (from ``data/gpus.csv`` ``compute_capability``): bf16 needs SM 8.0 (vLLM's own message,
  ``vllm/platforms/cuda.py:640-656``), FP8 weights / KV cache SM 8.9, NVFP4 weights Blackwell (SM 10.0);
  on AMD, gfx942 (MI300X) runs bf16 and FP8, not NVFP4. Note: vLLM can run FP8 / NVFP4 checkpoints
  weight-only through Marlin kernels on older GPUs (``Fp8Config.get_min_capability() == 75``,
  ``vllm/model_executor/layers/quantization/fp8.py:146``); the plan follows the native-hardware rule and
  says so in the message (``ours``).
"""

from __future__ import annotations

import functools

import math
import os
import shlex
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard import context, memory, rules, schema, sharding
from dashboard import frameworks as fw_registry
from dashboard.frameworks.sglang import attn_dp_with_replicas as sglang_attn_dp_with_replicas
from dashboard.frameworks.sglang import serving as _sglang_serving
from dashboard.frameworks.tensorrt_llm import TRTLLM_MAX_BATCH_SIZE  # noqa: F401  (re-exported)
from dashboard.frameworks.vllm import serving as _vllm_serving

#: Version of the ``--json`` output of ``tp-planner plan`` and of :func:`plan_to_dict` (bumped on any
#: change of field names or meanings; the README lists the fields).
SCHEMA_VERSION = 1

#: Frameworks the planner covers (the serving frameworks with launch commands).
PLAN_FRAMEWORKS: tuple[str, ...] = tuple(f.name for f in fw_registry.all_frameworks() if f.launch_flags)

#: Placeholder for the head node's address in multi-node launch commands.
HEAD_ADDR = "$HEAD_IP"


#: Minimum compute capability for a dtype to run natively (NVIDIA ``major.minor``).
DTYPE_MIN_CAPABILITY: dict[str, float] = {"bf16": 8.0, "fp8": 8.9, "nvfp4": 10.0}

#: AMD LLVM targets and the dtypes they run natively (gfx942 = MI300X / MI325X, gfx950 = MI355X).
AMD_DTYPES: dict[str, frozenset[str]] = {
    "gfx90a": frozenset({"bf16"}),
    "gfx942": frozenset({"bf16", "fp8"}),
    "gfx950": frozenset({"bf16", "fp8"}),
}

_FW_LABEL = schema.FRAMEWORK_LABELS

#: Columns of :func:`plan`'s result, in order, with their meaning (also the ``--json`` layout fields).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("framework", "framework id (vllm, sglang, tensorrt-llm)"),
    ("release", "the framework release whose rules were applied (None: the current rules)"),
    ("layout", "the layout in words, e.g. 'TP 8 x DP 2' or 'TP 8 attn-DP 8 EP 8'"),
    ("tp", "tensor-parallel size (GPUs in one TP group; SGLang attention-DP and TensorRT-LLM "
           "attention-DP split attention inside it)"),
    ("pp", "pipeline-parallel stages"),
    ("dp", "data-parallel replicas: the framework's own flag (vLLM --data-parallel-size, SGLang "
           "--dp-size); TensorRT-LLM has none, so separate trtllm-serve instances"),
    ("attn_dp", "attention data-parallel groups inside the TP group (SGLang --attn-dp-size, TensorRT-LLM "
                "enable_attention_dp = tp groups); 1 when off"),
    ("ep", "expert-parallel size (vLLM --enable-expert-parallel: tp x dp; SGLang --ep-size / TensorRT-LLM "
           "--ep_size: tp); 1 when off"),
    ("gpus", "GPUs the layout uses (= tp x pp x dp = N)"),
    ("gpus_per_replica", "GPUs of one replica (tp x pp)"),
    ("nodes", "nodes the layout spans (ceil(N / gpus_per_node))"),
    ("valid", "the rules engine's verdict (rules.check at this layout)"),
    ("status", "cell status (valid, valid_replicated, valid_padded, invalid, unknown)"),
    ("failures", "every failing rule as (rule_id, message), in the order the framework reaches them"),
    ("first_error", "the first failing rule's message: the error the user sees ('' when valid)"),
    ("first_error_rule", "its rule id"),
    ("first_error_source", "its pinned upstream source URL"),
    ("first_error_location", "its raise site 'path.py:line' in the release"),
    ("first_error_ours", "True when the message is this project's wording, not the framework's"),
    ("evidence", "'executed' (reproduced by running the release) or 'source' (read from source)"),
    ("weight_bytes_per_gpu", "weights on one GPU, bytes (heaviest pipeline stage)"),
    ("kv_budget_bytes_per_gpu", "KV-cache budget on one GPU under the framework's rule, bytes"),
    ("kv_bytes_per_token_per_gpu", "KV-cache bytes one token costs on one GPU"),
    ("kv_tokens_per_gpu", "KV-cache tokens one GPU holds (rounded to the framework's block)"),
    ("mem_fraction", "the memory fraction the plan assumed (vLLM gpu_memory_utilization, SGLang "
                     "mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction)"),
    ("kv_sequences_per_replica", "context_len sequences the KV cache of one replica holds"),
    ("scheduler_limit_per_replica", "the engine's default cap on running sequences per replica "
                                    "(vLLM --max-num-seqs, SGLang --max-running-requests, TensorRT-LLM "
                                    "--max_batch_size)"),
    ("sequences_per_replica", "min(kv_sequences_per_replica, scheduler_limit_per_replica), 0 when refused"),
    ("sequences_total", "sequences_per_replica x dp: concurrent context_len sequences on all N GPUs"),
    ("limited_by", "'kv' or 'scheduler': which of the two sets sequences_per_replica"),
    ("starts", "the framework would start this layout (rules, node, dtype and memory checks pass)"),
    ("refusal_kind", "'' or why it would not start: context | rule | cross_node_tp | dtype | memory"),
    ("refusal", "the message the user would see ('' when it starts)"),
    ("fits", "starts and holds >= min_sequences (>= 1 when not given) sequences"),
    ("why_not", "'' when it fits, else the refusal or the shortfall"),
    ("rank", "1 = best (most sequences, then fewest GPUs per replica, then fewest pipeline stages) among the "
             "layouts that fit; <NA> otherwise"),
    ("commands", "launch command(s) for layouts that start: one per node / instance ('#' comment first)"),
)


# ----------------------------------------------------------------------------------------------------
# GPUs
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GPU:
    """One row of ``data/gpus.csv`` the planner needs (see :func:`dashboard.memory.load_gpus`)."""

    gpu: str
    name: str
    vendor: str
    memory_bytes: int
    compute_capability: str
    gpus_per_node: int | None

    def runs(self, dtype: str) -> bool | None:
        """Whether the GPU runs ``dtype`` (bf16 / fp8 / nvfp4) natively; None when the table does not say."""
        cc = (self.compute_capability or "").strip().lower()
        if not cc:
            return None
        if cc.startswith("gfx"):
            return dtype in AMD_DTYPES.get(cc, frozenset())
        try:
            v = float(cc)
        except ValueError:
            return None
        return v >= DTYPE_MIN_CAPABILITY[dtype]


def gpu_info(gpu_type: str | Mapping) -> GPU:
    """The GPU table row of ``gpu_type`` (id, case-insensitive, e.g. ``"H100-80GB"``) as a :class:`GPU`.

    Raises ``ValueError`` naming the known ids for an unknown GPU."""
    if isinstance(gpu_type, str):
        key = (str(memory.GPUS_CSV), gpu_type.strip().lower())
        hit = _GPU_CACHE.get(key)
        if hit is None:
            hit = _gpu_info(gpu_type)
            _GPU_CACHE[key] = hit
        return hit
    return _gpu_info(gpu_type)


_GPU_CACHE: dict[tuple, GPU] = {}


def _gpu_info(gpu_type: str | Mapping) -> GPU:
    if isinstance(gpu_type, Mapping) or isinstance(gpu_type, pd.Series):
        row = dict(gpu_type)
    else:
        row = memory.gpu_row(gpu_type)  # a table id or "other:<GiB>"; ValueError naming both otherwise
    gpn = row.get("gpus_per_node")
    gpn = None if gpn is None or pd.isna(gpn) else int(gpn)
    cc = row.get("compute_capability")
    return GPU(str(row["gpu"]), str(row.get("name", row["gpu"])), str(row.get("vendor", "")),
               int(row["memory_bytes"]), "" if cc is None or pd.isna(cc) else str(cc), gpn)


# ----------------------------------------------------------------------------------------------------
# the record, cached per model (the rules' and the memory model's per-model columns)
# ----------------------------------------------------------------------------------------------------

_CACHE: "OrderedDict[tuple, tuple[pd.DataFrame, dict, dict]]" = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64


def _typed_frame(record: Any) -> pd.DataFrame:
    """One catalog record as a one-row DataFrame with the schema's dtypes (a Series from ``df.loc[id]``
    is object-typed; the rules read typed columns much faster)."""
    if isinstance(record, pd.DataFrame):
        if len(record) != 1:
            raise ValueError(f"plan() takes one model; got a frame of {len(record)} rows (use plan_catalog)")
        df = record.reset_index(drop=True)
    elif isinstance(record, pd.Series):
        df = pd.DataFrame([record.to_dict()])
    elif isinstance(record, Mapping):
        df = pd.DataFrame([dict(record)])
    else:
        raise TypeError(f"record must be a catalog record (mapping / Series / one-row DataFrame) or a model id, "
                        f"got {type(record).__name__}")
    for col, dtype in schema.COLUMN_DTYPES.items():
        if col in df.columns and str(df[col].dtype) != dtype:
            try:
                df[col] = df[col].astype(dtype)
            except (TypeError, ValueError):
                try:
                    df[col] = pd.to_numeric(df[col], errors="coerce").astype(dtype) if dtype in (
                        "Int64", "float64") else df[col]
                except (TypeError, ValueError):
                    pass
    return df


def _record_key(record: Any) -> tuple | None:
    """A hashable snapshot of a record's content (None when it cannot be taken)."""
    try:
        if isinstance(record, pd.DataFrame):
            if len(record) != 1:
                return None
            items = zip(record.columns, record.iloc[0].tolist())
        elif isinstance(record, pd.Series):
            items = record.items()
        elif isinstance(record, Mapping):
            items = record.items()
        else:
            return None
        return tuple((str(c), type(v).__name__, repr(v)) for c, v in items)
    except Exception:  # pragma: no cover - exotic values: no caching
        return None


def _prepared(record: Any) -> tuple[pd.DataFrame, dict, dict]:
    """(typed one-row frame, rules model memo, memory columns), cached by the record's content: planning
    one model at many GPU counts reuses the per-model columns of the rules and the memory model."""
    key = _record_key(record)
    if key is not None:
        with _CACHE_LOCK:
            hit = _CACHE.get(key)
            if hit is not None:
                _CACHE.move_to_end(key)
                return hit
    df = _typed_frame(record)
    entry = (df, {}, memory._cols(df))
    if key is None:
        return entry
    with _CACHE_LOCK:
        _CACHE[key] = entry
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return entry


_CATALOG_CACHE: dict[tuple, pd.DataFrame] = {}


def _default_catalog() -> pd.DataFrame:
    """The shipped catalog (``$TP_PLANNER_CATALOG`` when set), read once per file version (read-only)."""
    import os

    from dashboard.catalog import default_catalog_path, load_catalog

    path = os.environ.get("TP_PLANNER_CATALOG") or str(default_catalog_path())
    try:
        st = os.stat(path)
        key = (path, st.st_mtime_ns, st.st_size)
    except OSError:
        key = (path, None, None)
    with _CACHE_LOCK:
        hit = _CATALOG_CACHE.get(key)
    if hit is None:
        hit = load_catalog(path)
        with _CACHE_LOCK:
            _CATALOG_CACHE.clear()
            _CATALOG_CACHE[key] = hit
    return hit


def _resolve_record(record: Any, catalog: pd.DataFrame | None = None) -> Any:
    if isinstance(record, str):
        cat = _default_catalog() if catalog is None else catalog
        hit = cat[cat["model_id"].astype(str) == record]
        if hit.empty:
            lower = cat[cat["model_id"].astype(str).str.lower() == record.lower()]
            if lower.empty:
                raise ValueError(f"model {record!r} is not in the catalog")
            hit = lower
        return hit.iloc[[0]]
    return record


# ----------------------------------------------------------------------------------------------------
# layouts
# ----------------------------------------------------------------------------------------------------


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def enumerate_layouts(n_gpus: int, framework: str, *, moe: bool, release: str | None = None) -> pd.DataFrame:
    """Every layout of exactly ``n_gpus`` GPUs for ``framework`` (no filtering by validity or node size).

    TP x PP x DP = n_gpus for every divisor triple; for MoE models each also with expert parallelism
    (vLLM ``--enable-expert-parallel``, EP = tp x dp; SGLang / TensorRT-LLM EP = tp) where it changes
    something (more than one rank); SGLang adds attention-DP of every divisor ``D > 1`` of tp
    (``--attn-dp-size D``; before 0.5.22 ``--enable-dp-attention --dp-size D``, which uses the DP flag, so
    only with one replica), TensorRT-LLM attention-DP over the whole TP group (``enable_attention_dp``).

    Returns a DataFrame with ``framework, tp, pp, dp, attn_dp, ep, expert_parallel`` (ints / bool) and the
    parameters the rules and the memory model take: ``r_dp`` (their ``dp``), ``r_dp_attention``,
    ``r_ep``, ``r_expert_parallel``.
    """
    rows = []
    fwo = fw_registry.get(framework)
    for tp in _divisors(n_gpus):
        for pp in _divisors(n_gpus // tp):
            dp = n_gpus // (tp * pp)
            ep_opts = [False, True] if moe else [False]
            for ep_on in ep_opts:
                rows += fwo.layout_rows(tp, pp, dp, ep_on, release=release)
    df = pd.DataFrame(rows, columns=["tp", "pp", "dp", "attn_dp", "ep", "expert_parallel", "r_dp",
                                     "r_dp_attention", "r_ep", "r_expert_parallel"])
    df.insert(0, "framework", framework)
    return df


def _unique_rows(lays: pd.DataFrame, keys: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The distinct rule / memory parameter rows of ``lays`` as columns named as the rules name them
    (``tp, pp, dp, ep, dp_attention, expert_parallel``; a mapping of arrays, which
    :func:`dashboard.rules.layout_grid` takes without building a frame) and, per row of ``lays``, the
    index of its distinct row."""
    seen: dict[tuple, int] = {}
    codes = np.empty(len(lays), dtype=np.int64)
    for i, t in enumerate(zip(*(lays[k].tolist() for k in keys))):
        codes[i] = seen.setdefault(t, len(seen))
    names = ["tp", "pp", "dp", "ep", "dp_attention", "expert_parallel"]
    rows = list(seen)
    uniq = {n: np.array([r[j] for r in rows], dtype=bool if j >= 4 else np.int64) for j, n in enumerate(names)}
    return uniq, codes


_LAYOUT_CACHE: dict[tuple, pd.DataFrame] = {}


def _layouts_cached(n: int, framework: str, moe: bool, attn_dp_with_replicas: bool) -> pd.DataFrame:
    key = (n, framework, moe, attn_dp_with_replicas)
    hit = _LAYOUT_CACHE.get(key)
    if hit is None:
        hit = enumerate_layouts(n, framework, moe=moe,
                                release=None if attn_dp_with_replicas else "0.0.0")
        with _CACHE_LOCK:
            if len(_LAYOUT_CACHE) > 4096:
                _LAYOUT_CACHE.clear()
            _LAYOUT_CACHE[key] = hit
    return hit


def _layout_label(tp, pp, dp, attn_dp, ep, framework) -> str:
    parts = [f"TP {tp}"]
    if pp > 1:
        parts.append(f"PP {pp}")
    if dp > 1:
        parts.append(f"DP {dp}")
    text = " × ".join(parts)
    if attn_dp > 1:
        text += f" attn-DP {attn_dp}"
    if ep > 1:
        text += f" EP {ep}"
    return text


# ----------------------------------------------------------------------------------------------------
# engine defaults
# ----------------------------------------------------------------------------------------------------


#: vLLM's ``--max-num-seqs`` default (:func:`dashboard.frameworks.vllm.serving.default_max_num_seqs`).
vllm_default_max_num_seqs = _vllm_serving.default_max_num_seqs
#: SGLang's running-request cap (:func:`dashboard.frameworks.sglang.serving.default_max_running_requests`).
sglang_default_max_running_requests = _sglang_serving.default_max_running_requests


# ----------------------------------------------------------------------------------------------------
# dtypes
# ----------------------------------------------------------------------------------------------------


def _weight_kind(df: pd.DataFrame, weight_dtype: str | None) -> str:
    """bf16 | fp16 | fp32 | fp8 | nvfp4 | other: what the weights need from the GPU."""
    if weight_dtype is not None:
        w = str(weight_dtype).lower()
        return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}.get(w, w)
    rec = df.iloc[0]

    def s(col):
        v = rec.get(col) if col in df.columns else None
        return "" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v).lower()

    method, fmt = s("quant_method"), s("quant_format")
    if "nvfp4" in fmt or "nvfp4" in method or method == "modelopt_fp4":
        return "nvfp4"
    if method == "fp8" or "fp8" in fmt or "float-quantized" in fmt:
        return "fp8"
    td = s("torch_dtype")
    if td in ("bfloat16", "bf16"):
        return "bf16"
    if td in ("float16", "fp16", "half"):
        return "fp16"
    return "other"


def _weight_kind_cols(c: Mapping[str, np.ndarray], weight_dtype: str | None) -> str:
    """:func:`_weight_kind` from the memory model's lower-cased model columns (first model)."""
    if weight_dtype is not None:
        return _weight_kind(pd.DataFrame(), weight_dtype)
    method, fmt, td = (str(c[k][0]) for k in ("quant_method", "quant_format", "torch_dtype"))
    if "nvfp4" in fmt or "nvfp4" in method or method == "modelopt_fp4":
        return "nvfp4"
    if method == "fp8" or "fp8" in fmt or "float-quantized" in fmt:
        return "fp8"
    return {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16"}.get(td, "other")


def dtype_check_note(gpu: GPU) -> str:
    """'' when the GPU table gives ``gpu``'s compute capability; else the note that the dtype check was
    skipped (a card given by its memory, ``"other:<GiB>"``, has no known capability: nothing is refused)."""
    cc = (gpu.compute_capability or "").strip().lower()
    known = cc.startswith("gfx") and cc in AMD_DTYPES
    if not known and not cc.startswith("gfx"):
        try:
            float(cc)
            known = True
        except ValueError:
            known = False
    if known:
        return ""
    return (f"dtype check skipped: the compute capability of {gpu.gpu} is unknown, so bf16 / FP8 / NVFP4 support "
            "was not checked (nothing refused for its dtype).")


#: vLLM 0.33.0 model types that refuse float16 (``_FLOAT16_NOT_SUPPORTED_MODELS``,
#: ``vllm/config/model.py:2398-2403``): on a GPU without bfloat16 ``--dtype auto`` falls back to float32.
VLLM_NO_FP16_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})


def _cc_below(gpu: GPU, major_minor: float) -> bool:
    cc = (gpu.compute_capability or "").strip()
    try:
        return float(cc) < major_minor
    except ValueError:  # AMD (gfx...) or unknown: no CUDA capability to compare
        return False


def vllm_auto_dtype(gpu: GPU, weight_kind: str, model_type: str, explicit: bool) -> tuple[str | None, str]:
    """What vLLM's ``--dtype auto`` (the launch commands' default) runs a bfloat16 checkpoint in on a GPU
    without bfloat16 (compute capability below 8.0): ``(weight dtype, note)``, or ``(None, "")`` when
    nothing changes. vLLM 0.33.0 ``_resolve_auto_dtype`` (``vllm/config/model.py:2423-2462``) takes the
    platform's first supported dtype -- float16 on Pascal to Turing (``platforms/cuda.py:257-266``), float32
    for the model types that refuse float16 -- and logs "Your device ... doesn't support torch.bfloat16.
    Falling back to ... for compatibility." (``model.py:2458``); only an explicit ``--dtype bfloat16``
    (``explicit``: the plan's ``weight_dtype`` was given) raises "Bfloat16 is only supported ..."."""
    if explicit or weight_kind != "bf16" or not _cc_below(gpu, 8.0):
        return None, ""
    to = "fp32" if str(model_type).lower() in VLLM_NO_FP16_MODEL_TYPES else "fp16"
    name = {"fp16": "torch.float16", "fp32": "torch.float32"}[to]
    return to, (f"vLLM runs this bfloat16 checkpoint in {name} on {gpu.name} (compute capability "
                f"{gpu.compute_capability}): with --dtype auto it logs \"Your device ... doesn't support "
                f"torch.bfloat16. Falling back to {name} for compatibility.\" (vllm/config/model.py:2458); "
                "weights and KV cache are sized in that dtype.")


def _dtype_refusal(gpu: GPU, weight_kind: str, kv_dtype: str, framework: str, *, explicit: bool = True) -> str:
    """The refusal for a weight / KV dtype the GPU cannot run natively ('' when it can or the table does
    not say). ``explicit``: the weight dtype was asked for (vLLM ``--dtype``); otherwise vLLM's ``--dtype
    auto`` casts a bfloat16 checkpoint to a dtype the GPU has (:func:`vllm_auto_dtype`) and its KV cache
    (``--kv-cache-dtype auto``) follows, so neither is refused."""
    needs: list[tuple[str, str]] = []
    vllm_auto = framework == "vllm" and not explicit
    if weight_kind in ("bf16", "fp8", "nvfp4") and not (vllm_auto and weight_kind == "bf16"):
        needs.append((weight_kind, "weights"))
    kv = str(kv_dtype).lower()
    kv_kind = "fp8" if kv.startswith("fp8") else ("bf16" if kv in ("bf16", "bfloat16") else "")
    if kv_kind and not (framework == "vllm" and kv_kind == "bf16"):  # vLLM: --kv-cache-dtype auto
        needs.append((kv_kind, "KV cache"))
    cc = gpu.compute_capability or "unknown"
    for dtype, what in needs:
        ok = gpu.runs(dtype)
        if ok is None or ok:
            continue
        if dtype == "bf16" and framework == "vllm" and not cc.startswith("gfx"):
            return ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                    f"Your {gpu.name} GPU has compute capability {cc}. You can use float16 instead by "
                    "explicitly setting the `dtype` flag in CLI, for example: --dtype=half.")
        need = {"bf16": "compute capability 8.0 (Ampere)", "fp8": "compute capability 8.9 (Ada / Hopper)",
                "nvfp4": "compute capability 10.0 (Blackwell)"}[dtype]
        arch = f"LLVM target {cc}" if cc.startswith("gfx") else f"compute capability {cc}"
        return (f"{gpu.name} ({arch}) cannot run {dtype.upper()} {what} natively: {dtype.upper()} needs "
                f"{need} (planner rule from the GPU table, not the framework's message).")
    return ""


# ----------------------------------------------------------------------------------------------------
# launch commands
# ----------------------------------------------------------------------------------------------------


def launch_commands(row: Mapping, model_id: str, *, gpus_per_node: int, context_len: int, kv_dtype: str,
                    release: str | None) -> tuple[str, ...]:
    """Launch command(s) for one accepted layout (a row of :func:`plan`): one per node for multi-node
    vLLM / SGLang (vLLM ``--data-parallel-address`` / ``--headless`` when every replica fits in a node,
    ``--nnodes`` / ``--node-rank`` / ``--master-addr`` when a replica spans nodes; SGLang ``--nnodes`` /
    ``--node-rank`` / ``--dist-init-addr``), one per replica for TensorRT-LLM (it has no DP flag; replicas
    spanning nodes go through ``mpirun ... trtllm-llmapi-launch``). Each command starts with a ``#``
    comment naming where it runs; ``$HEAD_IP`` stands for the head node's address. The KV dtype and the
    memory fraction the plan assumed are spelled out."""
    return fw_registry.get(row["framework"]).plan_commands(
        row, model_id, gpus_per_node=gpus_per_node, context_len=context_len, kv_dtype=kv_dtype, release=release)


# ----------------------------------------------------------------------------------------------------
# plan
# ----------------------------------------------------------------------------------------------------


def _check_frameworks(frameworks: Iterable[str]) -> list[str]:
    if isinstance(frameworks, str):
        frameworks = [frameworks]
    fws = list(dict.fromkeys(frameworks))
    if not fws:
        raise ValueError("no frameworks given")
    bad = [f for f in fws if f not in PLAN_FRAMEWORKS]
    if bad:
        raise ValueError(f"unknown or unplanned framework(s) {bad}; expected some of {', '.join(PLAN_FRAMEWORKS)}")
    return fws


def _check_versions(versions: Mapping[str, str | None] | None, fws: list[str]) -> dict[str, str | None]:
    if versions is None:
        return {}
    if not isinstance(versions, Mapping):
        raise TypeError(f"versions must map framework -> release, got {type(versions).__name__}")
    bad = [k for k in versions if k not in PLAN_FRAMEWORKS]
    if bad:
        raise ValueError(f"versions names unknown framework(s) {bad}; expected some of {', '.join(PLAN_FRAMEWORKS)}")
    return {k: (None if v is None or str(v).strip() == "" else str(v)) for k, v in versions.items() if k in fws}


def _check_args(gpus, gpu_type, gpus_per_node, context_len, kv_dtype, weight_dtype, min_sequences):
    n = sharding.parallel_size(gpus, "gpus")
    gpu = gpu_info(gpu_type)
    if gpus_per_node is None:
        gpn = gpu.gpus_per_node or 8
    else:
        gpn = sharding.parallel_size(gpus_per_node, "gpus_per_node")
    ctx = memory._check_context_len(context_len)
    memory._dtype_bytes(kv_dtype, memory.KV_DTYPE_BYTES, "kv_dtype")
    if weight_dtype is not None:
        memory._dtype_bytes(weight_dtype, memory.WEIGHT_DTYPE_BYTES, "weight_dtype")
    k = None if min_sequences is None else sharding.parallel_size(min_sequences, "min_sequences", hi=1 << 40)
    return n, gpu, gpn, ctx, k


def plan(record: Any, gpus: int, gpu_type: str, *, gpus_per_node: int | None = None,
         frameworks: Sequence[str] = PLAN_FRAMEWORKS, versions: Mapping[str, str | None] | None = None,
         context_len: int, kv_dtype: str = "bf16", weight_dtype: str | None = None,
         min_sequences: int | None = None, cross_node_tp: bool = False,
         commands: bool = True) -> pd.DataFrame:
    """Every way to serve one model on ``gpus`` x ``gpu_type``, per framework, ranked.

    Parameters
    ----------
    record : one catalog record (mapping, Series, one-row DataFrame) or a model id in the shipped catalog.
    gpus : N, the total GPU count (whole number >= 1); every layout uses exactly N GPUs.
    gpu_type : GPU id of ``data/gpus.csv`` (e.g. ``"H100-80GB"``), or ``"other:<GiB>"`` for a card given by its
        memory per GPU (e.g. ``"other:24"``: unknown compute capability, so no dtype is refused and
        ``attrs["dtype_check"]`` says the check was skipped; 8 GPUs per node unless ``gpus_per_node``).
    gpus_per_node : GPUs per node; default the GPU table's ``gpus_per_node`` (8 on HGX boards, 72 in an
        NVL72 rack, 4 for PCIe servers where the table says so).
    frameworks : some of :data:`PLAN_FRAMEWORKS`.
    versions : framework -> release (or a date, see :func:`dashboard.rules.check`); a framework not named
        uses the newest executed release (vLLM, SGLang) or the current rules (TensorRT-LLM).
    context_len : tokens per sequence (prompt + output), also the engines' max model length in the commands.
    kv_dtype : KV-cache dtype (``bf16``, ``fp16``, ``fp8`` ...; :data:`dashboard.memory.KV_DTYPE_BYTES`).
    weight_dtype : weight format override (:data:`dashboard.memory.WEIGHT_DTYPE_BYTES`); None: the
        checkpoint's own (its quantization config / ``torch_dtype``).
    min_sequences : concurrent sequences a layout must hold to ``fit`` (default 1).
    cross_node_tp : allow a TP group to span nodes (default: TP stays within a node; such layouts are
        refused with ``refusal_kind == "cross_node_tp"``).
    commands : build the launch commands (``commands`` column; empty tuples when False).

    Returns
    -------
    DataFrame, one row per (framework, layout), columns :data:`COLUMNS` (bytes per GPU, tokens per GPU,
    sequences per replica / total). Sorted: layouts that fit first by ``rank`` (most ``sequences_total``,
    then fewest ``gpus_per_replica``), then the rest by framework and size. ``df.attrs`` carries the
    inputs (``model_id``, ``gpus``, ``gpu``, ``gpus_per_node``, ``context_len``, ``kv_dtype``,
    ``weight_dtype``, ``min_sequences``, ``cross_node_tp``, ``releases``).

    Raises
    ------
    ValueError for an unknown GPU, framework, dtype or model id, a size / count that is not a whole
    number >= 1 (``gpus``, ``gpus_per_node``, ``context_len``, ``min_sequences``), or a frame of several
    rows; TypeError for a record of another type.
    """
    fws = _check_frameworks(frameworks)
    vers = _check_versions(versions, fws)
    n, gpu, gpn, ctx, k = _check_args(gpus, gpu_type, gpus_per_node, context_len, kv_dtype, weight_dtype,
                                      min_sequences)
    df, model_memo, cols = _prepared(_resolve_record(record))
    model_id = cols["model_id"][0] if "model_id" in df.columns else ""
    model_id = str(df["model_id"].iloc[0]) if model_id else ""
    moe = bool(memory._flag(cols["is_moe"])[0] or memory._nz(cols["num_experts"])[0] > 0)
    resolved = {fw: rules.resolve_version(fw, vers.get(fw)) for fw in fws}
    releases = {fw: r.release for fw, r in resolved.items()}
    lays = pd.concat([_layouts_cached(n, fw, moe, sglang_attn_dp_with_replicas(releases[fw]))
                      for fw in fws], ignore_index=True)
    L = {c: lays[c].to_numpy() for c in lays.columns}
    fw_arr = L["framework"].astype(object)
    n_rows = len(fw_arr)

    # rules: one evaluation over the distinct rule parameters, every framework at once
    keys = ["tp", "pp", "r_dp", "r_ep", "r_dp_attention", "r_expert_parallel"]
    uniq, u = _unique_rows(lays, keys)
    rg = rules.layout_grid(df, uniq, fws, versions=vers, detail=True, model_memo=model_memo)
    fw_pos = {fw: i for i, fw in enumerate(fws)}
    idx = np.array([fw_pos[f] for f in fw_arr], dtype=np.int64) * len(uniq["tp"]) + u
    valid = rg["valid"].to_numpy(dtype=bool)[idx]
    status = rg["status"].astype(object).to_numpy()[idx]
    failures = rg["failures"].to_numpy()[idx]
    first = rg["message"].astype(object).to_numpy()[idx]
    first_rule = rg["rule_id"].astype(object).to_numpy()[idx]
    meta = {}
    for fw in fws:
        for r in rules.rules_for(fw, vers.get(fw)):
            meta.setdefault((fw, r.id), r)
    src, loc, ours, evid = [], [], [], []
    for fw, rid, ok in zip(fw_arr, first_rule, valid):
        r = meta.get((fw, rid)) if rid else None
        src.append(r.source_url if r else "")
        loc.append(r.location if r else "")
        ours.append(bool(r.ours) if r else False)
        evid.append("executed" if resolved[fw].executed and (ok or (r is not None and r.evidence == "executed"))
                    else "source")

    # memory: one vectorized call per framework over its layouts
    mc = {key: np.full(n_rows, np.nan) for key in ("weight_bytes_per_gpu", "kv_budget_bytes_per_gpu",
                                                 "kv_bytes_per_token_per_rank", "tokens_per_gpu", "fraction",
                                                 "concurrent_sequences", "reserve_bytes_per_gpu")}
    wk = _weight_kind_cols(cols, weight_dtype)
    text_type = str(memory._text_model_type(cols)[0])
    auto_dtype, auto_note = vllm_auto_dtype(gpu, wk, text_type, weight_dtype is not None)
    for fw in fws:
        m = fw_arr == fw
        sel = {"tp": L["tp"][m], "pp": L["pp"][m], "dp": L["r_dp"][m], "ep": L["r_ep"][m],
               "dp_attention": L["r_dp_attention"][m], "expert_parallel": L["r_expert_parallel"][m]}
        w_fw, kv_fw = weight_dtype, kv_dtype
        if fw_registry.get(fw).auto_dtype_fallback and auto_dtype:  # --dtype auto's fallback; the KV cache (auto) follows the weights
            w_fw = auto_dtype
            kv_fw = auto_dtype if str(kv_dtype).lower() in ("bf16", "bfloat16") else kv_dtype
        cap = memory.layout_capacity(df, fw, gpu.memory_bytes, sel, kv_dtype=kv_fw, weight_dtype=w_fw,
                                     context_len=ctx, cols=cols)
        for key in mc:
            mc[key][m] = np.asarray(cap[key])[0]
    weights, budget = mc["weight_bytes_per_gpu"], mc["kv_budget_bytes_per_gpu"]
    tokens, frac = mc["tokens_per_gpu"], mc["fraction"]

    # sequences: per attention group, per replica (its attention-DP groups), capped by the scheduler
    tp, pp, dp = L["tp"].astype(np.int64), L["pp"].astype(np.int64), L["dp"].astype(np.int64)
    groups = L["attn_dp"].astype(np.int64)
    seq_group = np.nan_to_num(mc["concurrent_sequences"], nan=0.0)
    kv_rep = (np.maximum(seq_group, 0) * groups).astype(np.int64)
    tok0 = np.nan_to_num(tokens, nan=0.0)
    cap_rep = np.zeros(len(fw_arr), dtype=np.int64)
    for fw in fws:
        m = fw_arr == fw
        cap_rep[m] = np.broadcast_to(fw_registry.get(fw).scheduler_cap(gpu, tok0[m], ctx, groups[m]), (int(m.sum()),))

    # why a layout would not start, in the order the user meets it
    M = float(gpu.memory_bytes)
    dtype_msg = {fw: _dtype_refusal(gpu, wk, kv_dtype, fw, explicit=weight_dtype is not None) for fw in fws}
    cross, uneven = _cross_node(tp, pp, n, gpn, fw_arr)
    rec0 = {c: df[c].iloc[0] for c in CONTEXT_COLUMNS if c in df.columns}
    ctx_msg = {fw: context.context_refusal(fw, ctx, rec0) for fw in fws}
    kind, refusal = [], []
    for i in range(n_rows):
        fw = fw_arr[i]
        if ctx_msg[fw]:
            kind.append("context")
            refusal.append(ctx_msg[fw])
        elif not valid[i]:
            kind.append("rule")
            refusal.append(first[i])
        elif cross[i] and not cross_node_tp:
            kind.append("cross_node_tp")
            refusal.append(_cross_node_message(int(tp[i]), int(pp[i]), gpn, fw, bool(uneven[i])))
        elif dtype_msg[fw]:
            kind.append("dtype")
            refusal.append(dtype_msg[fw])
        else:
            mmsg = _memory_refusal(fw, weights[i], budget[i], mc["reserve_bytes_per_gpu"][i], M, seq_group[i], ctx,
                                   mc["kv_bytes_per_token_per_rank"][i], tok0[i], frac[i])
            kind.append("memory" if mmsg else "")
            refusal.append(mmsg)
    kind_arr = np.array(kind, dtype=object)
    starts = kind_arr == ""
    per_rep = np.where(starts, np.minimum(kv_rep, cap_rep), 0).astype(np.int64)
    total = per_rep * dp
    need = 1 if k is None else k
    fits = starts & (total >= need)
    why = [("" if f else (r if not st else f"holds {t} sequences of {ctx} tokens, fewer than the {need} asked"))
           for f, st, r, t in zip(fits, starts, refusal, total.tolist())]
    labels = [_layout_label(*v) for v in zip(tp.tolist(), pp.tolist(), dp.tolist(), groups.tolist(),
                                              L["ep"].tolist(), fw_arr)]
    tok_na = ~np.isfinite(tokens)
    data = {
        "framework": fw_arr, "release": np.array([releases[f] for f in fw_arr], dtype=object), "layout": labels,
        "tp": tp, "pp": pp, "dp": dp, "attn_dp": groups, "ep": L["ep"].astype(np.int64),
        "gpus": np.full(n_rows, n, dtype=np.int64), "gpus_per_replica": tp * pp,
        "nodes": np.full(n_rows, -(-n // gpn), dtype=np.int64),
        "valid": valid, "status": status, "failures": failures, "first_error": first,
        "first_error_rule": first_rule, "first_error_source": src, "first_error_location": loc,
        "first_error_ours": np.array(ours, dtype=bool), "evidence": evid,
        "weight_bytes_per_gpu": weights, "kv_budget_bytes_per_gpu": budget,
        "kv_bytes_per_token_per_gpu": mc["kv_bytes_per_token_per_rank"],
        "kv_tokens_per_gpu": pd.arrays.IntegerArray(np.where(tok_na, 0, np.maximum(tok0, 0)).astype(np.int64), tok_na),
        "mem_fraction": frac, "kv_sequences_per_replica": kv_rep, "scheduler_limit_per_replica": cap_rep,
        "sequences_per_replica": per_rep, "sequences_total": total,
        "limited_by": np.where(~starts, "", np.where(cap_rep < kv_rep, "scheduler", "kv")).astype(object),
        "starts": starts, "refusal_kind": kind_arr, "refusal": np.array(refusal, dtype=object), "fits": fits,
        "why_not": np.array(why, dtype=object),
    }
    # ranking: layouts that fit first, most sequences, then fewest GPUs per replica, then (a tie on both)
    # fewer pipeline stages: the same capacity with less pipeline depth (latency, bubbles) comes first
    order = np.lexsort((pp, tp * pp, -total, ~fits))
    nf = int(fits.sum())
    rank = pd.arrays.IntegerArray(np.concatenate([np.arange(1, nf + 1), np.zeros(n_rows - nf, dtype=np.int64)]),
                                  np.concatenate([np.zeros(nf, dtype=bool), np.ones(n_rows - nf, dtype=bool)]))
    ordered = {c: (v[order] if isinstance(v, (np.ndarray, pd.api.extensions.ExtensionArray))
                   else [v[j] for j in order]) for c, v in data.items()}
    ordered["rank"] = rank
    if commands:
        epf = L["expert_parallel"][order]
        ordered["commands"] = [
            launch_commands({"framework": ordered["framework"][j], "tp": ordered["tp"][j], "pp": ordered["pp"][j],
                             "dp": ordered["dp"][j], "attn_dp": ordered["attn_dp"][j], "ep": ordered["ep"][j],
                             "expert_parallel": bool(epf[j]), "mem_fraction": ordered["mem_fraction"][j]},
                            model_id or "MODEL", gpus_per_node=gpn, context_len=ctx, kv_dtype=kv_dtype,
                            release=ordered["release"][j]) if ordered["starts"][j] else ()
            for j in range(n_rows)]
    else:
        ordered["commands"] = [()] * n_rows
    out = pd.DataFrame({c: ordered[c] for c, _ in COLUMNS})
    out.attrs.update(model_id=model_id, gpus=n, gpu=gpu.gpu, gpus_per_node=gpn, context_len=ctx,
                     kv_dtype=str(kv_dtype), weight_dtype=weight_dtype, min_sequences=need,
                     cross_node_tp=bool(cross_node_tp), releases=releases, moe=moe,
                     gpu_memory_bytes=int(gpu.memory_bytes),
                     dtype_check=" ".join(x for x in (dtype_check_note(gpu), auto_note if any(fw_registry.get(f).auto_dtype_fallback for f in fws) else "") if x))
    return out


#: Catalog columns the context-length check reads (:mod:`dashboard.context`).
CONTEXT_COLUMNS = ("max_model_len_vllm", "max_model_len_vllm_source", "context_length_sglang")

#: Frameworks that spread one replica's ranks evenly over the nodes it spans: vLLM ``--nnodes``
#: (``ParallelConfig.local_world_size = world_size // nnodes_within_dp``, vllm/config/parallel.py:838-840,
#: 0.33.0; ranks are TP-innermost) and SGLang ``--nnodes`` (whole pipeline stages per node,
#: ``_calculate_rank_ranges``, python/sglang/srt/entrypoints/engine.py:2061-2076, 0.5.23). TensorRT-LLM's
#: ``mpirun --host a:G,b:G`` fills each node's slots first, so a TP group stays in a node when G % TP == 0.
EVEN_SPREAD_FRAMEWORKS = tuple(f.name for f in fw_registry.all_frameworks() if f.even_node_spread)


def _cross_node(tp: np.ndarray, pp: np.ndarray, n: int, gpn: int, fw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a TP group spans nodes, and that is because the replica's ranks are spread evenly) per layout.

    A TP group spans nodes when TP > gpus_per_node, or when the layout spans nodes and TP does not divide
    gpus_per_node. A replica of ``tp * pp`` ranks larger than a node is launched with ``--nnodes`` over
    ``ceil(tp * pp / gpus_per_node)`` nodes; vLLM and SGLang (:data:`EVEN_SPREAD_FRAMEWORKS`) put the same
    number of ranks on each, so its TP groups stay within a node only when the ranks split evenly and the
    ranks per node are a multiple of TP."""
    tp = np.asarray(tp, dtype=np.int64)
    pp = np.asarray(pp, dtype=np.int64)
    base = (tp > gpn) | ((n > gpn) & (gpn % tp != 0))
    rep = tp * pp
    nodes = -(-rep // gpn)
    spread = np.isin(np.asarray(fw, dtype=object), EVEN_SPREAD_FRAMEWORKS) & (rep > gpn) & (tp <= gpn)
    uneven = spread & ((rep % nodes != 0) | ((rep // np.maximum(nodes, 1)) % tp != 0))
    return base | uneven, uneven & ~base


def _cross_node_message(tp: int, pp: int, gpn: int, fw: str, even_spread: bool) -> str:
    """The planner's refusal of a layout whose TP group would span nodes (this project's wording)."""
    tail = ("tensor parallelism stays within a node (NVLink) unless cross-node TP is allowed "
            "(cross_node_tp=True, --cross-node-tp).")
    if not even_spread:
        return f"TP {tp} spans nodes of {gpn} GPUs: {tail}"
    rep = tp * pp
    nodes = -(-rep // gpn)
    who = fw_registry.REGISTRY[fw].even_node_spread or fw if fw in fw_registry.REGISTRY else fw
    if rep % nodes:
        split = f"{rep} ranks do not split evenly over {nodes} nodes"
    else:
        split = f"{rep} ranks over {nodes} nodes = {rep // nodes} per node"
    return (f"TP {tp} x PP {pp} on nodes of {gpn} GPUs: {who} spreads a replica's ranks evenly over its nodes, "
            f"and {split}: a TP group of {tp} would span nodes; {tail}")


def _memory_refusal(fw: str, weights: float, budget: float, reserve: float, M: float, seq_group: float, ctx: int,
                    kv_tok: float, tokens: float, frac: float) -> str:
    """The start-up refusal for a layout whose weights or KV cache do not fit ('' when it starts)."""
    gib = memory.GiB
    if not np.isfinite(weights) or not np.isfinite(budget):
        return "Not planned: the record lacks the shapes the memory model needs (weights / KV bytes unknown)."
    if weights + reserve >= M:
        return (f"Weights need {weights / gib:.2f} GiB per GPU plus {reserve / gib:.2f} GiB the framework "
                f"holds back, more than the GPU's {M / gib:.2f} GiB: loading runs out of memory "
                "(torch.OutOfMemoryError: CUDA out of memory) (planner estimate).")
    if budget <= 0 or seq_group < 1:
        return fw_registry.get(fw).memory_refusal(weights=weights, budget=budget, ctx=ctx, kv_tok=kv_tok,
                                                 tokens=tokens, frac=frac, seq_group=seq_group)
    return ""


RANKING_NOTE = ("Ranked by concurrent sequences (KV-cache capacity), then fewest GPUs per replica, then fewest "
                "pipeline stages. Latency and throughput are not modelled: a deep pipeline or a small TP group "
                "holds more sequences but serves each one more slowly.")


def without_attrs(plan_df: pd.DataFrame) -> pd.DataFrame:
    """A shallow copy of ``plan_df`` without ``attrs``. pandas deep-copies ``attrs`` into every frame or
    Series derived from a frame (each ``df[col]``, ``df.loc[...]``), which dominates the cost of small
    selections on a plan; read ``plan_df.attrs`` first, then work on this."""
    out = plan_df.copy(deep=False)
    out.attrs = {}
    return out


def refusals(plan_df: pd.DataFrame) -> pd.DataFrame:
    """The refused layouts of a :func:`plan` result grouped by (framework, reason).

    Returns a DataFrame with ``framework``, ``refusal_kind``, ``reason`` (the message), ``layouts`` (tuple of
    layout labels), ``count`` and ``summary`` -- one sentence such as ``"TP 16 refused by vLLM: <message>"``
    (``"TP 3, TP 6 × DP 2 refused by SGLang: ..."`` when several layouts share the reason) -- ordered by
    framework, then by the smallest layout."""
    empty = pd.DataFrame(columns=["framework", "refusal_kind", "reason", "layouts", "count", "summary"])
    if plan_df.empty:
        return empty
    plan_df = without_attrs(plan_df)
    bad = plan_df.loc[~plan_df["starts"].to_numpy(dtype=bool)]
    if bad.empty:  # every layout starts (a small model): nothing to group
        return empty
    # plain Python over the refused rows (a few hundred at most): a pandas groupby costs more here
    groups: dict[tuple, list[tuple]] = {}  # (framework, kind, reason) -> rows, in order of first appearance
    cols = ("framework", "refusal_kind", "refusal", "tp", "pp", "dp", "attn_dp", "ep", "layout")
    for fw, kind, reason, *sizes, label in zip(*(bad[c].tolist() for c in cols)):
        groups.setdefault((fw, kind, reason), []).append((*(int(x) for x in sizes), label))
    order = {fw: i for i, fw in enumerate(PLAN_FRAMEWORKS)}
    rows = []
    for (fw, kind, reason), items in groups.items():
        items.sort(key=lambda r: r[:5])
        labels = tuple(r[5] for r in items)
        shown = ", ".join(labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "")
        rows.append(((order.get(fw, len(order)), items[0][0]),
                     {"framework": fw, "refusal_kind": kind, "reason": reason, "layouts": labels,
                      "count": len(labels), "summary": f"{shown} refused by {_FW_LABEL.get(fw, fw)}: {reason}"}))
    rows.sort(key=lambda r: r[0])  # by framework, then the smallest TP (stable: ties keep first appearance)
    return pd.DataFrame([r for _, r in rows], columns=list(empty.columns))


def best(plan_df: pd.DataFrame) -> pd.DataFrame:
    """The best fitting layout per framework of a :func:`plan` result (one row each; frameworks with no
    fitting layout are absent)."""
    ok = plan_df[plan_df["fits"]]
    return ok.groupby("framework", sort=False, observed=True).head(1).reset_index(drop=True)


def plan_to_dict(plan_df: pd.DataFrame) -> dict[str, Any]:
    """A :func:`plan` result as plain JSON-able data (the ``--json`` output of ``tp-planner plan``).

    Keys: ``schema_version`` (:data:`SCHEMA_VERSION`), ``model_id``, ``gpus``, ``gpu``, ``gpus_per_node``,
    ``context_len``, ``kv_dtype``, ``weight_dtype``, ``min_sequences``, ``cross_node_tp``, ``releases``
    (framework -> release), ``dtype_check`` ('' or the note that the GPU's compute capability is unknown
    and no dtype was checked), ``best`` (framework -> the rank-1 layout label of that framework or null),
    ``layouts`` (one object per row with the fields of :data:`COLUMNS`; ``failures`` as a list of
    ``{"rule_id", "message"}``, ``commands`` as a list of strings), ``refusals`` (:func:`refusals` rows:
    ``framework, refusal_kind, reason, layouts, count, summary``)."""
    a = plan_df.attrs
    layouts = []
    for r in plan_df.to_dict("records"):
        item = {}
        for c, _ in COLUMNS:
            v = r[c]
            if c == "failures":
                v = [{"rule_id": rid, "message": msg} for rid, msg in (v or ())]
            elif c == "commands":
                v = list(v or ())
            item[c] = _plain(v)
        layouts.append(item)
    b = best(plan_df)
    ref = refusals(plan_df)
    return {
        "schema_version": SCHEMA_VERSION,
        "model_id": a.get("model_id"), "gpus": a.get("gpus"), "gpu": a.get("gpu"),
        "gpus_per_node": a.get("gpus_per_node"), "context_len": a.get("context_len"),
        "kv_dtype": a.get("kv_dtype"), "weight_dtype": a.get("weight_dtype"),
        "min_sequences": a.get("min_sequences"), "cross_node_tp": a.get("cross_node_tp"),
        "releases": dict(a.get("releases", {})), "dtype_check": a.get("dtype_check", ""),
        "best": {fw: (b.loc[b["framework"] == fw, "layout"].iloc[0] if (b["framework"] == fw).any() else None)
                 for fw in dict(a.get("releases", {}))},
        "layouts": layouts,
        "refusals": [{k_: _plain(list(v) if k_ == "layouts" else v) for k_, v in r.items()}
                     for r in ref.to_dict("records")],
    }


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


# ----------------------------------------------------------------------------------------------------
# whole catalog
# ----------------------------------------------------------------------------------------------------


#: Catalog columns that name or describe a repository, not the model's shapes: neither the rules nor the
#: memory model read them, so models that differ only here plan the same.
IDENTITY_COLUMNS = ("model_id", "org", "name", "source", "fetched_at", "sha", "last_modified", "downloads",
                    "likes", "gated", "status_reason")


def _shapes(catalog: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """(per model, the index of its shape; one representative row per distinct shape). Shapes are told
    apart by a 64-bit hash of every non-identity column (pandas ``hash_pandas_object``; NA hashes as NA)."""
    cols = [c for c in catalog.columns if c not in IDENTITY_COLUMNS]
    if not cols or len(catalog) < 2:
        return np.arange(len(catalog), dtype=np.int64), catalog
    try:
        h = pd.util.hash_pandas_object(catalog[cols], index=False).to_numpy()
    except TypeError:  # unhashable cells (lists, dicts) in a hand-made frame: no deduplication
        return np.arange(len(catalog), dtype=np.int64), catalog
    codes, uniq = pd.factorize(h)
    if len(uniq) == len(catalog):
        return np.arange(len(catalog), dtype=np.int64), catalog
    first = np.full(len(uniq), -1, dtype=np.int64)
    order = np.arange(len(codes))[::-1]
    first[codes[order]] = order  # first occurrence of each shape
    return codes.astype(np.int64), catalog.iloc[first].reset_index(drop=True)


def plan_catalog(catalog: pd.DataFrame, gpus: int, gpu_type: str, *, min_sequences: int, context_len: int,
                 gpus_per_node: int | None = None, frameworks: Sequence[str] = PLAN_FRAMEWORKS,
                 versions: Mapping[str, str | None] | None = None, kv_dtype: str = "bf16",
                 weight_dtype: str | None = None, cross_node_tp: bool = False) -> pd.DataFrame:
    """Which models can serve >= ``min_sequences`` sequences of ``context_len`` tokens on ``gpus`` x
    ``gpu_type``, under each framework, and with which best layout -- over a whole catalog.

    Vectorized: the layouts of N GPUs are enumerated once (EP variants for every model; they are refused
    for models without experts), then one :func:`dashboard.rules.layout_grid` over catalog x layouts x
    frameworks and one :func:`dashboard.memory.layout_capacity` per framework; the best layout per
    (model, framework) is a groupby. The start-up checks are :func:`plan`'s (context length, rules, cross-node TP, GPU
    dtypes, memory); messages are not built (call :func:`plan` on a model for them).

    Returns
    -------
    DataFrame, one row per (model_id, framework): ``model_id, framework, serves`` (bool: some layout
    starts and holds >= min_sequences), ``best_layout`` (label, '' when none starts), ``tp, pp, dp,
    attn_dp, ep`` of it, ``sequences_total`` (of the best layout, 0 when none starts),
    ``gpus_per_replica``, ``layouts_starting`` (how many layouts start), ``why_not`` ('' when it serves,
    else the most common refusal kind or "fewer than K sequences").

    Raises ValueError / TypeError as :func:`plan` does; ValueError for a catalog without ``model_id``.
    """
    fws = _check_frameworks(frameworks)
    vers = _check_versions(versions, fws)
    n, gpu, gpn, ctx, k = _check_args(gpus, gpu_type, gpus_per_node, context_len, kv_dtype, weight_dtype,
                                      min_sequences)
    if not isinstance(catalog, pd.DataFrame) or "model_id" not in catalog.columns:
        raise ValueError("plan_catalog needs a catalog DataFrame with a model_id column")
    full = catalog.reset_index(drop=True)
    ids = full["model_id"].astype(str).to_numpy()
    # models of the same shape (a base model and its fine-tunes: every column but the identity ones) get
    # the same verdicts and capacities: plan each distinct shape once, then give every model its shape's row
    shape, cat = _shapes(full)
    nm = len(cat)
    releases = {fw: rules.resolve_version(fw, vers.get(fw)).release for fw in fws}
    lays = pd.concat([enumerate_layouts(n, fw, moe=True, release=releases[fw]) for fw in fws], ignore_index=True)
    keys = ["tp", "pp", "r_dp", "r_ep", "r_dp_attention", "r_expert_parallel"]
    uniq, u = _unique_rows(lays, keys)
    lays["u"] = u
    nu = len(uniq["tp"])
    ren = {"r_dp": "dp", "r_ep": "ep", "r_dp_attention": "dp_attention", "r_expert_parallel": "expert_parallel"}
    rg = rules.layout_grid(cat, uniq, fws, versions=vers, messages=False)
    valid = rg["valid"].to_numpy(dtype=bool).reshape(len(fws), nm, nu)  # framework-major, model, layout
    cols = memory._cols(cat)
    moe = memory._flag(cols["is_moe"]) | (memory._nz(cols["num_experts"]) > 0)
    wk_all = _weight_kinds(cat, weight_dtype)
    M = float(gpu.memory_bytes)
    frames = []
    for fi, fw in enumerate(fws):
        lf = lays[lays["framework"] == fw].reset_index(drop=True)
        nl = len(lf)
        sel = lf[["tp", "pp", "r_dp", "r_ep", "r_dp_attention", "r_expert_parallel"]].rename(columns=ren)
        cap = memory.layout_capacity(cat, fw, gpu.memory_bytes, sel, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                                     context_len=ctx, cols=cols)
        if fw_registry.get(fw).auto_dtype_fallback and weight_dtype is None and _cc_below(gpu, 8.0):
            # --dtype auto on a GPU without bfloat16 (vllm_auto_dtype): bf16 checkpoints run in float16 (the
            # same bytes) or, for the model types that refuse float16, in float32: size those in float32
            f32 = (wk_all["kinds"][wk_all["codes"]] == "bf16") & np.isin(memory._text_model_type(cols),
                                                                        list(VLLM_NO_FP16_MODEL_TYPES))
            if f32.any():
                kv32 = "fp32" if str(kv_dtype).lower() in ("bf16", "bfloat16") else kv_dtype
                cap32 = memory.layout_capacity(cat[f32], fw, gpu.memory_bytes, sel, kv_dtype=kv32,
                                               weight_dtype="fp32", context_len=ctx)
                cap = dict(cap)
                for key, val in cap32.items():
                    if np.ndim(val) == 2 and key in cap:
                        cap[key] = cap[key].astype(np.result_type(cap[key], val))  # a copy: cap is not shared
                        cap[key][f32] = val
        v = valid[fi][:, lf["u"].to_numpy()]  # (models, layouts)
        tp = lf["tp"].to_numpy()
        node_ok = (np.ones(nl, dtype=bool) if cross_node_tp
                   else ~_cross_node(tp, lf["pp"].to_numpy(), n, gpn, np.full(nl, fw, dtype=object))[0])
        ctx_ok = _context_ok(cat, fw, ctx)
        dtype_ok = np.array([not _dtype_refusal(gpu, w, kv_dtype, fw, explicit=weight_dtype is not None)
                             for w in wk_all["kinds"]])[wk_all["codes"]]
        w = cap["weight_bytes_per_gpu"]
        seqg = np.nan_to_num(cap["concurrent_sequences"], nan=0.0)
        mem_ok = (np.isfinite(w) & (w + cap["reserve_bytes_per_gpu"] < M) & (cap["kv_budget_bytes_per_gpu"] > 0)
                  & (seqg >= 1))
        # EP variants are planned for MoE models only (as plan() does): a dense model's rows are masked
        ep_layout = (lf["ep"].to_numpy() > 1)[None, :]
        v = v & ~(ep_layout & ~moe[:, None])
        starts = v & node_ok[None, :] & dtype_ok[:, None] & mem_ok & ctx_ok[:, None]
        groups = lf["attn_dp"].to_numpy()[None, :]
        kv_rep = np.maximum(seqg, 0) * groups
        tok = np.nan_to_num(cap["tokens_per_gpu"], nan=0.0)
        cap_rep = fw_registry.get(fw).scheduler_cap(gpu, tok, ctx, groups)
        total = np.where(starts, np.minimum(kv_rep, cap_rep) * lf["dp"].to_numpy()[None, :], -1.0)
        # best: most sequences, then fewest GPUs per replica, then fewer pipeline stages (as plan() ranks)
        score = (total * 4096.0 * 4096.0 - (lf["tp"] * lf["pp"]).to_numpy()[None, :] * 4096.0
                 - lf["pp"].to_numpy()[None, :])
        bi = np.argmax(score, axis=1)
        rows = np.arange(nm)
        bt = total[rows, bi]
        any_start = starts.any(axis=1)
        serves = any_start & (bt >= k)
        why = np.where(serves, "", np.where(
            any_start, f"fewer than {k} sequences of {ctx} tokens",
            np.where(~ctx_ok, "context", np.where(~v.any(axis=1), "rule", np.where(~(v & node_ok[None, :]).any(axis=1), "cross_node_tp",
                     np.where(~dtype_ok, "dtype", "memory"))))))
        b = lf.iloc[bi].reset_index(drop=True)
        label = np.array([_layout_label(*x, fw) for x in zip(b["tp"], b["pp"], b["dp"], b["attn_dp"], b["ep"])],
                         dtype=object)
        # per distinct shape above; per model below
        bi, bt, any_start, serves, why = bi[shape], bt[shape], any_start[shape], serves[shape], why[shape]
        label, n_start = label[shape], starts.sum(axis=1).astype(np.int64)[shape]
        b = lf.iloc[bi].reset_index(drop=True)
        frames.append(pd.DataFrame({
            "model_id": ids, "framework": fw, "serves": serves,
            "best_layout": np.where(any_start, label, ""),
            "tp": np.where(any_start, b["tp"], 0), "pp": np.where(any_start, b["pp"], 0),
            "dp": np.where(any_start, b["dp"], 0), "attn_dp": np.where(any_start, b["attn_dp"], 0),
            "ep": np.where(any_start, b["ep"], 0),
            "sequences_total": np.where(any_start, bt, 0).astype(np.int64),
            "gpus_per_replica": np.where(any_start, b["tp"] * b["pp"], 0),
            "layouts_starting": n_start,
            "why_not": why,
        }))
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update(gpus=n, gpu=gpu.gpu, gpus_per_node=gpn, context_len=ctx, min_sequences=k,
                     dtype_check=dtype_check_note(gpu),
                     kv_dtype=str(kv_dtype), weight_dtype=weight_dtype, releases=releases)
    return out


def _context_ok(cat: pd.DataFrame, fw: str, ctx: int) -> np.ndarray:
    """Per model, whether ``fw`` accepts ``ctx`` tokens (:func:`dashboard.context.context_refusal`'s test
    over the catalog columns; True when the limit is unknown or the framework is not modelled)."""
    col = fw_registry.get(fw).context_limit_column
    if not col or col not in cat.columns:
        return np.ones(len(cat), dtype=bool)
    lim = pd.to_numeric(cat[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)
    return ~(np.isfinite(lim) & (ctx > lim))


def _weight_kinds(cat: pd.DataFrame, weight_dtype: str | None) -> dict[str, np.ndarray]:
    """Per model, the weight kind of :func:`_weight_kind`, factorized (``kinds`` unique, ``codes`` per row)."""
    if weight_dtype is not None:
        kind = _weight_kind(cat.iloc[[0]] if len(cat) else pd.DataFrame([{}]), weight_dtype)
        return {"kinds": np.array([kind], dtype=object), "codes": np.zeros(len(cat), dtype=np.int64)}

    def low(col):
        if col not in cat.columns:
            return pd.Series([""] * len(cat))
        return cat[col].astype("string").fillna("").str.lower()

    method, fmt, td = low("quant_method"), low("quant_format"), low("torch_dtype")
    nv = fmt.str.contains("nvfp4", regex=False) | method.str.contains("nvfp4", regex=False) | (method == "modelopt_fp4")
    f8 = (method == "fp8") | fmt.str.contains("fp8", regex=False) | fmt.str.contains("float-quantized", regex=False)
    kinds = np.select([nv.to_numpy(bool), f8.to_numpy(bool), td.isin(["bfloat16", "bf16"]).to_numpy(bool),
                       td.isin(["float16", "fp16", "half"]).to_numpy(bool)], ["nvfp4", "fp8", "bf16", "fp16"],
                      default="other")
    codes, uniq = pd.factorize(kinds)
    return {"kinds": np.asarray(uniq, dtype=object), "codes": codes}


# ----------------------------------------------------------------------------------------------------
# command line: ``tp-planner plan``
# ----------------------------------------------------------------------------------------------------


def format_table(plan_df: pd.DataFrame, *, limit: int | None = None, width: int = 60) -> str:
    """A plain-text table of a :func:`plan` result (one line per layout), the refusals grouped by reason
    and the launch commands of each framework's best layout."""
    a = plan_df.attrs
    gib = memory.GiB
    head = (f"{a.get('model_id', '')} on {a.get('gpus')} x {a.get('gpu')} ({a.get('gpus_per_node')} per node), "
            f"{a.get('context_len'):,}-token sequences, KV {a.get('kv_dtype')}, at least {a.get('min_sequences')} "
            f"sequence(s); releases: " + ", ".join(f"{_FW_LABEL.get(f, f)} {r or 'current'}"
                                                      for f, r in a.get("releases", {}).items()))
    cols = ["rank", "framework", "layout", "verdict", "weights GiB/GPU", "KV GiB/GPU", "KV tokens/GPU",
            "seq/replica", "seq total", "limit", "why not"]
    rows = []
    body = plan_df if limit is None else plan_df.head(limit)
    for r in body.to_dict("records"):
        verdict = "fits" if r["fits"] else ("starts" if r["starts"] else f"refused ({r['refusal_kind']})")
        why = str(r["why_not"]).replace("\n", " ")
        rows.append([
            "" if r["rank"] is pd.NA or pd.isna(r["rank"]) else str(int(r["rank"])),
            _FW_LABEL.get(r["framework"], r["framework"]), r["layout"], verdict,
            "" if not np.isfinite(r["weight_bytes_per_gpu"]) else f"{r['weight_bytes_per_gpu'] / gib:.1f}",
            "" if not np.isfinite(r["kv_budget_bytes_per_gpu"]) else f"{max(r['kv_budget_bytes_per_gpu'], 0) / gib:.1f}",
            "" if pd.isna(r["kv_tokens_per_gpu"]) else f"{int(r['kv_tokens_per_gpu']):,}",
            str(r["sequences_per_replica"]), str(r["sequences_total"]), r["limited_by"],
            why if len(why) <= width else why[: width - 1] + "…"])
    widths = [max(len(c), *(len(x[i]) for x in rows)) if rows else len(c) for i, c in enumerate(cols)]
    head += "\n" + RANKING_NOTE
    if a.get("dtype_check"):
        head += "\nNote: " + str(a["dtype_check"])
    lines = [head, "", "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    if limit is not None and len(plan_df) > limit:
        lines.append(f"... {len(plan_df) - limit} more layouts (--limit 0 shows all)")
    ref = refusals(plan_df)
    if len(ref):
        lines += ["", "Refused:"] + [f"  - {s}" for s in ref["summary"]]
    b = best(plan_df)
    for r in b.to_dict("records"):
        lines += ["", f"Launch, best {_FW_LABEL.get(r['framework'], r['framework'])} layout ({r['layout']}, "
                      f"{r['sequences_total']} sequences):"]
        for cmd in r["commands"]:
            lines += ["  " + ln for ln in cmd.splitlines()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``tp-planner plan MODEL --gpus N --gpu GPU [...]``: print :func:`plan` as a table or JSON.
    Exit status 0 when some layout fits (starts and holds ``--min-sequences``), 1 when none does (the plan
    is still printed: every refusal and shortfall), 2 for bad usage / input (message on stderr)."""
    import argparse
    import json
    import sys

    ap = argparse.ArgumentParser(prog="tp-planner plan",
                                 description="Every way to split N GPUs for one model under vLLM, SGLang and "
                                             "TensorRT-LLM: verdict, capacity, ranking, launch commands.")
    ap.add_argument("model", help="a catalog model id (e.g. meta-llama/Llama-3.1-70B-Instruct), else a config.json, "
                    "a model folder, - (stdin) or a Hub id, read as tp-planner check reads them")
    ap.add_argument("--gpus", required=True, help="total GPU count N")
    ap.add_argument("--gpu", required=True, help="GPU id of data/gpus.csv (e.g. H100-80GB), or other:GiB for a card given by its "
                    "memory per GPU (e.g. other:24)")
    ap.add_argument("--gpus-per-node", default=None, help="GPUs per node (default: the GPU table's)")
    ap.add_argument("--context-len", default="32768", help="tokens per sequence (default 32768)")
    ap.add_argument("--framework", action="append", choices=PLAN_FRAMEWORKS,
                    help="framework to plan (repeatable; default: all three)")
    ap.add_argument("--version", action="append", default=[], metavar="FRAMEWORK=RELEASE",
                    help="release (or date) of a framework, e.g. vllm=0.22.0 (repeatable)")
    ap.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype (bf16, fp16, fp8; default bf16)")
    ap.add_argument("--weight-dtype", default=None, help="weight format override (default: the checkpoint's)")
    ap.add_argument("--min-sequences", default=None, help="concurrent sequences a layout must hold (default 1)")
    ap.add_argument("--cross-node-tp", action="store_true", help="allow TP groups that span nodes")
    ap.add_argument("--catalog", default=None, help="catalog parquet (default: the shipped one)")
    ap.add_argument("--limit", type=int, default=40, help="table rows to print (0 = all; default 40)")
    ap.add_argument("--json", action="store_true", help="print JSON (schema_version %d)" % SCHEMA_VERSION)
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        versions = {}
        for item in args.version:
            fw, sep, rel = item.partition("=")
            if not sep:
                raise ValueError(f"--version takes FRAMEWORK=RELEASE, got {item!r}")
            versions[fw.strip()] = rel.strip()
        catalog = None
        if args.catalog:
            from dashboard.catalog import load_catalog

            catalog = load_catalog(args.catalog)
        try:
            record = _resolve_record(args.model, catalog)
        except ValueError:
            # not in the catalog: a config.json, a model folder, '-' (stdin) or a Hub id, read as
            # ``tp-planner check`` reads it
            from dashboard.check import CheckInputError, load_model

            try:
                rec, _src = load_model(args.model)
            except CheckInputError as e:
                raise ValueError(f"{args.model!r} is not in the catalog, and as a file, folder or Hub id: {e}") \
                    from None
            record = pd.DataFrame([rec])
        if args.limit < 0:
            raise ValueError(f"--limit must be 0 (all) or more, got {args.limit}")
        if versions:
            from dashboard import rules as _rules
            from dashboard.check import check_release

            for fw, rel in versions.items():
                if fw not in PLAN_FRAMEWORKS:
                    raise ValueError(f"--version {fw}={rel}: unknown framework {fw!r}; expected one of "
                                     f"{', '.join(PLAN_FRAMEWORKS)}")
                check_release(fw, rel, _rules.resolve_version(fw, rel))
        df = plan(record, args.gpus, args.gpu, gpus_per_node=args.gpus_per_node,
                  frameworks=tuple(args.framework or PLAN_FRAMEWORKS), versions=versions or None,
                  context_len=args.context_len, kv_dtype=args.kv_dtype, weight_dtype=args.weight_dtype,
                  min_sequences=args.min_sequences, cross_node_tp=args.cross_node_tp)
    except Exception as exc:  # bad input: one line, exit 2 (TP_PLANNER_DEBUG=1 shows the traceback)
        from dashboard.check import CheckInputError

        if not isinstance(exc, (ValueError, TypeError, FileNotFoundError, CheckInputError)) or \
                os.environ.get("TP_PLANNER_DEBUG"):
            raise
        print(f"tp-planner plan: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(plan_to_dict(df), indent=1, ensure_ascii=False))
    else:
        print(format_table(df, limit=None if args.limit == 0 else args.limit))
    return 0 if bool(df["fits"].any()) else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
