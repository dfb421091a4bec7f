"""Capacity: how many KV-cache tokens and sequences fit on a GPU under each framework's budget rule, the reserve
(activation peak, non-torch memory) and the per-GPU breakdown (:func:`capacity`, :func:`layout_capacity`,
:func:`memory_grid`, :func:`memory_breakdown`; formulas and sources in :mod:`dashboard.memory`).

The budget rule of each framework is the framework's own (``Framework.kv_budget``, ``kv_pool_capacity``,
``kv_tokens_per_block``, ``default_mem_fraction``): this module never names a framework.

Pure: numpy / pandas. Bytes per GPU; arrays ``(models, layouts)``.
"""

from __future__ import annotations

import functools

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard import schema, sharding
from dashboard.frameworks import all_frameworks
from dashboard.frameworks import get as framework_of
from dashboard.gpus import gpu_memory
from dashboard.memory.columns import (KV_DTYPE_BYTES, GiB, check_context_len, check_fraction, check_measured,
                                      check_sizes, dtype_bytes, is_set, model_columns, nz)
from dashboard.memory.kv import kv_bytes_matrix, state_bytes_matrix
from dashboard.memory.weights import rope_cache_bytes, weight_bytes_matrix

#: KV-cache block granularity in tokens per framework (each framework's ``kv_tokens_per_block``).
TOKENS_PER_BLOCK: dict[str, int] = {f.name: f.kv_tokens_per_block for f in all_frameworks()}

#: Budget rule per framework, in words (shown by the dashboard; each framework's ``kv_budget_rule``).
BUDGET_RULES: dict[str, str] = {f.name: f.kv_budget_rule for f in all_frameworks()}

#: Default fraction of the budget rule per framework (each framework's ``default_mem_fraction``; SGLang's is
#: computed per GPU, see :func:`sglang_default_mem_fraction_static`).
DEFAULT_FRACTION: dict[str, float | None] = {f.name: f.default_mem_fraction for f in all_frameworks()}



# --------------------------------------------------------------------------------------------
# Reserve: activation peak, non-torch memory, CUDA graphs (one rule per engine, global parameters)
# --------------------------------------------------------------------------------------------
#: Engine releases whose source the rules below were read from (``engine_version=None`` means these).
ENGINE_RELEASES: dict[str, str] = {f.name: f.memory_rules_release for f in all_frameworks() if f.memory_rules_release}

#: vLLM: bytes of sampler working memory per (sequence x vocabulary entry) in the profile run's dummy
#: sampler pass (``gpu_model_runner.py:5866-5925``: logits, their float32 copy, sorted top-k/top-p values
#: and the probabilities over ``max_num_seqs`` rows). Fitted: the logged "torch peak memory increase" of
#: the four sampler-bound vLLM 0.19 runs (Llama-3.1-8B 1.89, Qwen2.5-7B 2.21, phi-4 1.52, gemma-2-9b 3.65
#: GiB at 1024 sequences) lie on ``14 B x seqs x vocab + 0.15 GiB`` within 3 %. A float32 model adds 2 B.
VLLM_SAMPLER_BYTES_PER_LOGIT = 14.0
#: vLLM: live profile-run buffers (hidden states of the dummy batch) under the sampler peak, bytes (the
#: intercept of the same fit).
VLLM_PROFILE_LIVE_BYTES = 0.15 * GiB
#: vLLM MoE forward: activation bytes per batched token per (top-k x hidden) element, in units of the
#: activation dtype (fused-MoE workspaces, permuted copies, router logits; not itemized). Least-squares fit
#: on the three logged MoE runs (Qwen3-30B-A3B 2.68, DeepSeek-V2-Lite 1.93, Mixtral-8x7B TP 2 1.21 GiB).
VLLM_MOE_WORKSPACE_FACTOR = 8.5
#: vLLM non-torch memory increase during profiling, bytes: TP 1 (cuBLAS / allocator workspaces), TP > 1
#: (NCCL and custom all-reduce buffers), pipeline-only (TP 1, PP > 1: the communicators exist before the
#: baseline snapshot). Logged: 0.24-0.27 (granite 0.46) GiB, 2.06-2.13 GiB, 0.07 GiB.
VLLM_NON_TORCH_BYTES = {"tp1": 0.25 * GiB, "tp": 2.1 * GiB, "pp_only": 0.07 * GiB}


@functools.lru_cache(maxsize=1024)  # pure; the planner asks it once per layout row
def version_tuple(version: str | None, framework: str) -> tuple[int, ...]:
    """``"0.19.0"`` -> ``(0, 19, 0)``; ``None`` -> the release the rules were read from. ValueError when
    the text has no leading ``major.minor``."""
    release = framework_of(framework).memory_rules_release
    if version is None and release is None:
        return (1 << 30,)  # no version-dependent rule for this framework
    text = release if version is None else str(version).strip()
    parts = []
    for tok in text.lstrip("vV").split("."):
        digits = "".join(ch for ch in tok[:6] if ch.isdigit()) if tok[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits[:6]))
        if not tok.isdigit():
            break
    if len(parts) < 2:
        raise ValueError(f"engine_version must start with major.minor such as '0.19.0', got {str(version)[:40]!r}")
    return tuple(parts)


def vllm_batch_defaults(memory_bytes: int, gpu_name: str = "") -> tuple[int, int]:
    """vLLM's default ``(max_num_batched_tokens, max_num_seqs)`` for the OpenAI server on a GPU.

    ``EngineArgs._get_default_max_num_batched_tokens_and_seqs`` (``engine/arg_utils.py:2972-3006``): >= 160
    GiB: 16384 / 1024; >= 70 GiB and not an A100: 8192 / 1024; otherwise 2048 / 256.
    """
    if memory_bytes >= 160 * GiB:
        return 16384, 1024
    if memory_bytes >= 70 * GiB and "a100" not in str(gpu_name).lower():
        return 8192, 1024
    return 2048, 256


def activation_bytes(c: dict[str, np.ndarray], framework: str, t: np.ndarray, ep: int, memory_bytes: int, *,
                      tokens: float | None = None, seqs: float | None = None, act_bytes: float = 2.0,
                      gpu_name: str = "") -> np.ndarray:
    """Peak activation (vLLM "torch peak memory increase") per GPU, bytes, shape (models, len(tp)).

    ``max(sampler + live, forward)``: sampler = :data:`VLLM_SAMPLER_BYTES_PER_LOGIT` (+2 for a float32
    model) x ``max_num_seqs`` x vocab + :data:`VLLM_PROFILE_LIVE_BYTES`; forward over ``T =
    max_num_batched_tokens`` tokens = ``T x act_bytes x (4 x hidden + 3 x intermediate / tp)`` (dense:
    residual, normed input, q/k/v/o, gate-up and activated MLP) or ``T x act_bytes x (4 x hidden +
    VLLM_MOE_WORKSPACE_FACTOR x top_k x hidden)`` (MoE). Defaults: :func:`vllm_batch_defaults`.
    """
    d_tokens, d_seqs = vllm_batch_defaults(memory_bytes, gpu_name)
    tokens = d_tokens if tokens is None else tokens
    seqs = d_seqs if seqs is None else seqs
    fixed = framework_of(framework).profile_batch
    if fixed is not None:  # e.g. transformers CB: PagedAttentionMemoryHandler._upper_bound_max_batch_tokens
        seqs, tokens = fixed
    V = c["vocab_size"][:, None]
    H = c["hidden_size"][:, None]
    sampler = (VLLM_SAMPLER_BYTES_PER_LOGIT + (2.0 if act_bytes >= 4 else 0.0)) * seqs * V + VLLM_PROFILE_LIVE_BYTES
    I = nz(c["intermediate_size"])[:, None]
    moe = is_set(c["is_moe"])[:, None] & (nz(c["num_experts"])[:, None] > 0)
    moe_term = VLLM_MOE_WORKSPACE_FACTOR * nz(c["num_experts_per_tok"])[:, None] * H
    forward = tokens * act_bytes * (4 * H + np.where(moe, moe_term, 3 * I / t))
    return np.maximum(sampler, forward)


def non_torch_bytes(t: np.ndarray, pp: Any = 1) -> np.ndarray:
    """Non-torch memory per GPU, bytes: :data:`VLLM_NON_TORCH_BYTES` by TP / PP."""
    p = np.asarray(pp, dtype=np.float64)
    return np.where(t > 1, VLLM_NON_TORCH_BYTES["tp"],
                    np.where(p > 1, VLLM_NON_TORCH_BYTES["pp_only"], VLLM_NON_TORCH_BYTES["tp1"]))


def capacity_matrix(c: dict[str, np.ndarray], framework: str, tp: np.ndarray, memory_bytes: int, *, pp: int = 1,
                     ep: int = 1, kv_dtype: str = "bf16", weight_dtype: str | None = None,
                     context_len: np.ndarray | float | None = None, mem_fraction: float | None = None,
                     dp: int = 1, dp_attention: bool = False, expert_parallel: bool = False,
                     vision_dp: bool = False, max_num_batched_tokens: int | None = None,
                     max_num_seqs: int | None = None, measured_kv_bytes: float | None = None,
                     engine_version: str | None = None, gpu_name: str = "") -> dict[str, np.ndarray]:
    tp = np.atleast_1d(np.asarray(tp, dtype=np.int64))
    t = tp.astype(np.float64)[None, :]
    n = len(c["hidden_size"])
    if context_len is None:
        ctx = np.where(np.isnan(c["max_position_embeddings"]), 8192.0, c["max_position_embeddings"])
    else:
        ctx = np.broadcast_to(np.asarray(context_len, dtype=np.float64), (n,)).astype(np.float64)
    kvb = dtype_bytes(kv_dtype, KV_DTYPE_BYTES, "kv_dtype")
    version = version_tuple(engine_version, framework)
    # per-token bytes averaged over a sequence of ctx tokens (sliding windows capped), one ctx per model
    kv_tok = kv_bytes_matrix(c, framework, tp, kv_bytes=kvb, context_len=ctx, dp=dp, dp_attention=dp_attention)
    if np.any(np.asarray(pp) > 1):  # a stage caches only its own layers: the heaviest holds ceil(L / pp) of L
        L = c["num_hidden_layers"][:, None]
        kv_tok = kv_tok * (np.ceil(L / np.asarray(pp, dtype=np.float64)) / L)
    state = state_bytes_matrix(c, tp, state_bytes=kvb if kvb >= 2 else 2.0)
    weights = weight_bytes_matrix(c, framework, tp, pp=pp, ep=ep, weight_dtype=weight_dtype, dp=dp, dp_attention=dp_attention,
                                   expert_parallel=expert_parallel, vision_dp=vision_dp)
    weights = weights + rope_cache_bytes(c, framework)[:, None]  # loaded with the model (vLLM "Model loading took")
    act_bytes = 4.0 if str(weight_dtype).lower() in ("fp32", "float32") else 2.0
    d_tokens, d_seqs = vllm_batch_defaults(memory_bytes, gpu_name)
    T = float(max_num_batched_tokens) if max_num_batched_tokens is not None else float(d_tokens)
    act = activation_bytes(c, framework, t, ep, memory_bytes, tokens=T,
                            seqs=float(max_num_seqs) if max_num_seqs is not None else None, act_bytes=act_bytes,
                            gpu_name=gpu_name)
    nt = np.broadcast_to(non_torch_bytes(t, pp), weights.shape)
    M = float(memory_bytes)
    fw = framework_of(framework)
    frac = mem_fraction if mem_fraction is not None else fw.default_mem_fraction
    b = {"c": c, "t": t, "tp": tp, "pp": pp, "dp": dp, "dp_attention": dp_attention, "memory_bytes": M,
         "memory_bytes_int": memory_bytes, "weights": weights, "activation": act, "non_torch": nt, "fraction": frac,
         "version": version, "engine_version": engine_version}
    rule = fw.kv_budget(b)
    budget, reserve, frac = rule["budget"], rule["reserve"], rule["fraction"]
    graph = rule.get("cuda_graph")
    if graph is None:
        graph = np.zeros(weights.shape)
    budget = np.broadcast_to(budget, weights.shape).astype(np.float64)
    calibrated = np.zeros(weights.shape, dtype=bool)
    if measured_kv_bytes is not None:  # the engine's own "Available KV cache memory" replaces the estimate
        budget = np.full(weights.shape, float(measured_kv_bytes))
        calibrated = np.ones(weights.shape, dtype=bool)
        reserve = np.broadcast_to(np.maximum(M * np.asarray(frac if frac is not None else 1.0, dtype=np.float64)
                                             - weights - budget, 0.0), weights.shape)
    block = fw.kv_tokens_per_block
    with np.errstate(divide="ignore", invalid="ignore"):
        pool = fw.kv_pool_capacity({**b, "budget": budget, "kv_tok": kv_tok, "state": state, "kvb": kvb, "ctx": ctx,
                                    "tokens": T, "block": block})
        if pool is not None:
            tokens, seqs, blocks, groups = pool["tokens"], pool["seqs"], pool["blocks"], pool["groups"]
        else:
            tokens = np.where(kv_tok > 0, np.floor(np.maximum(budget, 0) / (kv_tok * block)) * block, np.nan)
            seq_bytes = kv_tok * ctx[:, None] + state
            seqs = np.floor(np.maximum(budget, 0) / seq_bytes)
            blocks = np.where(kv_tok > 0, tokens / block, np.nan)
            groups = np.ones(weights.shape)
    fits = (budget > 0) & (seqs >= 1) & (weights + np.broadcast_to(reserve, weights.shape) < M)
    return {
        "kv_bytes_per_token_per_rank": kv_tok, "linear_state_bytes_per_sequence_per_rank": state,
        "weight_bytes_per_gpu": weights, "activation_bytes_per_gpu": np.broadcast_to(act, weights.shape),
        "non_torch_bytes_per_gpu": nt, "cuda_graph_bytes_per_gpu": graph,
        "reserve_bytes_per_gpu": np.broadcast_to(reserve, weights.shape),
        "kv_budget_bytes_per_gpu": budget, "tokens_per_gpu": tokens, "concurrent_sequences": seqs,
        "kv_blocks_per_gpu": blocks, "kv_cache_groups": np.broadcast_to(groups, weights.shape),
        "fits": fits & ~np.isnan(budget), "fraction": np.broadcast_to(np.asarray(frac, dtype=np.float64), weights.shape),
        "context_len": np.broadcast_to(ctx[:, None], weights.shape), "calibrated": calibrated,
    }


def capacity(record: Any, framework: str, gpu: Any, tp: int, *, pp: int = 1, ep: int = 1, kv_dtype: str = "bf16",
             weight_dtype: str | None = None, context_len: int | None = None, mem_fraction: float | None = None,
             dp: int = 1, dp_attention: bool = False, expert_parallel: bool = False,
             vision_dp: bool = False, max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None,
             measured_kv_bytes: float | None = None, engine_version: str | None = None) -> dict[str, Any]:
    """How much KV cache fits on each GPU of a (model, framework, GPU, TP) deployment.

    Parameters
    ----------
    record : one catalog record.
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    gpu : GPU id from :func:`load_gpus` (e.g. ``"H100-80GB"``), ``"other:<GiB>"`` (a card given by its memory
        per GPU, e.g. ``"other:24"``), a row of that table, or total bytes.
    tp, pp, ep : parallel sizes (one GPU per rank).
    kv_dtype, weight_dtype : see :func:`kv_cache_bytes_per_token_per_rank`, :func:`weight_bytes_per_rank`.
    dp, dp_attention, expert_parallel, vision_dp : see :func:`weight_bytes_per_rank`.
    context_len : tokens per sequence (default: the model's ``max_position_embeddings``, else 8192).
    mem_fraction : the framework's budget knob: vLLM ``gpu_memory_utilization`` (default 0.9), SGLang
        ``mem_fraction_static`` (default: :func:`sglang_default_mem_fraction_static`), TensorRT-LLM
        ``free_gpu_memory_fraction`` (0.9), transformers CB ``max_memory_percent`` (0.9).
    max_num_batched_tokens, max_num_seqs : vLLM's scheduler limits the profile run uses (default
        :func:`vllm_batch_defaults` for the GPU); they size the activation reserve.
    measured_kv_bytes : the engine's own KV figure, bytes per GPU (vLLM "Available KV cache memory: 54.12
        GiB" x 2**30; SGLang ``K size + V size``). It replaces the reserve estimate: ``kv_budget_bytes_per_gpu``
        is this figure, ``calibrated`` is True, ``budget_rule`` says so, and ``reserve_bytes_per_gpu`` becomes
        what the figure implies (fraction x memory - weights - KV).
    engine_version : the engine release the deployment runs (``"0.19.0"``); default the release the rules
        were read from (:data:`ENGINE_RELEASES`). vLLM before 0.21 leaves CUDA graphs out of the budget;
        SGLang before 0.5 has the 0.4 default fraction table.

    Returns
    -------
    dict with: ``framework``, ``gpu``, ``tp``, ``pp``, ``ep``, ``context_len`` (tokens),
    ``memory_bytes`` (per GPU), ``fraction``, ``budget_rule`` (text), ``weight_bytes_per_gpu``,
    ``activation_bytes_per_gpu``, ``non_torch_bytes_per_gpu``, ``reserve_bytes_per_gpu`` (what the
    rule holds back besides weights), ``kv_budget_bytes_per_gpu``, ``kv_bytes_per_token_per_rank``,
    ``linear_state_bytes_per_sequence_per_rank``, ``tokens_per_gpu`` (KV-cache tokens, rounded down to
    the framework's block size), ``concurrent_sequences`` (whole sequences of ``context_len``), ``fits``
    (bool: weights load and at least one full-length sequence fits), ``cuda_graph_bytes_per_gpu`` (vLLM),
    ``kv_blocks_per_gpu`` (vLLM ``num_gpu_blocks``; other engines tokens / block), ``kv_cache_groups``
    (vLLM KV-cache groups), ``calibrated`` (bool: ``measured_kv_bytes`` was used).
    For vLLM, ``tokens_per_gpu`` is what vLLM 0.33 prints as "GPU KV cache size": ``max concurrency x
    context_len`` with the concurrency of :func:`vllm_kv_groups` (= blocks x 16 for full attention).

    Raises ``ValueError`` for an unknown framework, GPU or dtype, a ``tp``/``pp``/``ep``/``dp`` that is not
    a whole number in ``1 .. dashboard.sharding.MAX_PARALLEL``, a ``context_len`` that is not a whole
    number >= 1, or a ``mem_fraction`` outside ``(0, 1]``.
    """
    tp, pp, ep, dp = check_sizes(framework, tp, pp=pp, ep=ep, dp=dp)
    if context_len is not None:
        context_len = check_context_len(context_len)
    if mem_fraction is not None:
        mem_fraction = check_fraction(mem_fraction)
    batch = {k: (None if v is None else sharding.parallel_size(v, k, hi=1 << 30))
             for k, v in (("max_num_batched_tokens", max_num_batched_tokens), ("max_num_seqs", max_num_seqs))}
    measured_kv_bytes = check_measured(measured_kv_bytes)
    name, mem = gpu_memory(gpu)
    c = model_columns(record)
    m = capacity_matrix(c, framework, np.array([tp]), mem, pp=pp, ep=ep, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                         context_len=context_len, mem_fraction=mem_fraction, dp=dp, dp_attention=dp_attention,
                         expert_parallel=expert_parallel, vision_dp=vision_dp, measured_kv_bytes=measured_kv_bytes,
                         engine_version=engine_version, gpu_name=name, **batch)
    rule = framework_of(framework).kv_budget_rule
    if measured_kv_bytes is not None:
        rule = f"measured: the KV memory the engine logged ({measured_kv_bytes / GiB:.2f} GiB) replaces the reserve estimate"
    out: dict[str, Any] = {"framework": framework, "gpu": name, "tp": int(tp), "pp": int(pp), "ep": int(ep),
                           "memory_bytes": mem, "budget_rule": rule}
    for k, v in m.items():
        x = v[0, 0]
        if k in ("fits", "calibrated"):
            out[k] = bool(x)
        elif k in ("tokens_per_gpu", "concurrent_sequences", "context_len", "kv_blocks_per_gpu", "kv_cache_groups"):
            out[k] = int(x) if np.isfinite(x) else None
        else:
            out[k] = float(x)
    return out


def memory_grid(catalog: pd.DataFrame, tp_sizes: Sequence[int] = schema.DEFAULT_TP_SIZES,
                frameworks: Sequence[str] = schema.FRAMEWORKS, *, gpu: Any = "H100-80GB", pp: int = 1, ep: int = 1,
                kv_dtype: str = "bf16", weight_dtype: str | None = None, context_len: int | None = None,
                mem_fraction: float | None = None) -> pd.DataFrame:
    """Vectorized memory model over a catalog x TP sizes x frameworks (numpy over columns).

    Returns a tidy frame, one row per (model_id, framework, tp), with the float columns of
    :func:`capacity` (bytes per GPU / per token / per sequence, tokens, sequences, ``fits``). Rows of
    models without shapes carry NaN (and ``fits`` False). ``mem_fraction`` applies to every framework
    when given; otherwise each framework's default.
    """
    for fw in frameworks:
        check_sizes(fw, 1, pp=pp, ep=ep)
    tp = sharding.parallel_sizes(list(tp_sizes), "TP size")  # never truncated: 4.5 is an error
    if context_len is not None and np.ndim(context_len) == 0:
        context_len = check_context_len(context_len)
    if mem_fraction is not None:
        mem_fraction = check_fraction(mem_fraction)
    _, mem = gpu_memory(gpu)
    c = model_columns(catalog)
    ids = c["model_id"] if "model_id" in catalog.columns else np.arange(len(catalog)).astype(str)
    ids = catalog["model_id"].to_numpy() if "model_id" in catalog.columns else ids
    frames = []
    for fw in frameworks:
        m = capacity_matrix(c, fw, tp, mem, pp=pp, ep=ep, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                             context_len=context_len, mem_fraction=mem_fraction)
        data = {"model_id": np.repeat(ids, len(tp)), "framework": fw, "tp": np.tile(tp, len(ids))}
        for k, v in m.items():
            data[k] = np.ascontiguousarray(np.broadcast_to(v, (len(ids), len(tp)))).ravel()
        frames.append(pd.DataFrame(data))
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(out):
        out["framework"] = out["framework"].astype("string")
        out["model_id"] = out["model_id"].astype("string")
    return out


def layout_capacity(catalog: Any, framework: str, gpu: Any, layouts: Any, *, kv_dtype: str = "bf16",
                    weight_dtype: str | None = None, context_len: int | None = None,
                    mem_fraction: float | None = None, vision_dp: bool = False,
                    cols: dict[str, np.ndarray] | None = None, measured_kv_bytes: float | None = None,
                    engine_version: str | None = None) -> dict[str, np.ndarray]:
    """:func:`capacity` for many models under many parallel layouts at once (numpy, no per-cell Python).

    Parameters
    ----------
    catalog : catalog records (DataFrame, or one record as a dict / Series).
    framework : one of :data:`dashboard.schema.FRAMEWORKS`.
    gpu : GPU id, ``"other:<GiB>"``, a row of :func:`load_gpus`, or total bytes per GPU.
    layouts : DataFrame or mapping of equal-length columns ``tp`` (required), ``pp``, ``dp``, ``ep``
        (default 1), ``dp_attention``, ``expert_parallel`` (default False); meanings as in :func:`capacity`.
    kv_dtype, weight_dtype, context_len, mem_fraction, vision_dp : as in :func:`capacity`, for every cell.
    cols : the model columns already extracted by ``model_columns(catalog)`` (reuse across calls); None: extracted.
    measured_kv_bytes, engine_version : as in :func:`capacity` (a measured figure applies to every cell).

    Returns
    -------
    dict of arrays of shape ``(models, layouts)``, the keys of :func:`capacity`'s numeric fields:
    ``weight_bytes_per_gpu``, ``activation_bytes_per_gpu``, ``non_torch_bytes_per_gpu``,
    ``reserve_bytes_per_gpu``, ``kv_budget_bytes_per_gpu`` (bytes per GPU), ``kv_bytes_per_token_per_rank``
    (bytes), ``linear_state_bytes_per_sequence_per_rank`` (bytes), ``tokens_per_gpu`` (KV-cache tokens a
    GPU holds, rounded down to the framework's block), ``concurrent_sequences`` (whole ``context_len``
    sequences per attention group: one TP/PP replica, or one attention-DP group), ``fits`` (bool),
    ``fraction``, ``context_len``. Cell ``[i, j]`` equals :func:`capacity` of model ``i`` at layout ``j``.

    Raises ``ValueError`` as :func:`capacity` does (unknown framework / GPU / dtype, a size that is not
    a whole number in ``1 .. MAX_PARALLEL``, a bad ``context_len`` or ``mem_fraction``).
    """
    sizes = flags = sharding.layout_columns(layouts)
    check_sizes(framework, 1)
    if context_len is not None:
        context_len = check_context_len(context_len)
    if mem_fraction is not None:
        mem_fraction = check_fraction(mem_fraction)
    measured_kv_bytes = check_measured(measured_kv_bytes)
    name, mem = gpu_memory(gpu)
    c = model_columns(catalog) if cols is None else cols
    if len(sizes["tp"]) == 0:
        return {}
    return capacity_matrix(c, framework, sizes["tp"], mem, pp=sizes["pp"], ep=sizes["ep"], kv_dtype=kv_dtype,
                            weight_dtype=weight_dtype, context_len=context_len, mem_fraction=mem_fraction,
                            dp=sizes["dp"], dp_attention=flags["dp_attention"],
                            expert_parallel=flags["expert_parallel"], vision_dp=vision_dp,
                            measured_kv_bytes=measured_kv_bytes, engine_version=engine_version, gpu_name=name)


# --------------------------------------------------------------------------------------------
# Per-GPU breakdown of one capacity() result
# --------------------------------------------------------------------------------------------
#: Parts of :func:`memory_breakdown`, in stacking order.
BREAKDOWN_PARTS = ("weights", "activation peak", "CUDA graphs", "non-torch", "reserve implied by your log",
                   "KV cache", "free")


def memory_breakdown(cap: Mapping[str, Any]) -> dict[str, Any]:
    """One GPU's memory, split into parts that sum to the card's memory, from a :func:`capacity` result.

    Parts (bytes per GPU, :data:`BREAKDOWN_PARTS`; a part the engine's rule does not charge is absent):

    * ``weights``: ``weight_bytes_per_gpu``.
    * ``activation peak``: vLLM, TensorRT-LLM, transformers, Megatron (``activation_bytes_per_gpu``).
    * ``CUDA graphs``: vLLM (``cuda_graph_bytes_per_gpu``).
    * ``non-torch``: vLLM, TensorRT-LLM, transformers native TP, Megatron (NCCL / cuBLAS workspaces);
      SGLang: the memory in use before the weights load plus the load extras
      (:data:`SGLANG_STARTUP_BYTES`, :data:`SGLANG_LOAD_EXTRA_BYTES`).
    * ``reserve implied by your log`` (calibrated only, replacing the three above): ``fraction x memory -
      weights - measured KV``, what the logged figure leaves for activations, graphs and non-torch memory.
    * ``KV cache``: ``kv_budget_bytes_per_gpu`` (0 when negative).
    * ``free``: the rest of the card, i.e. the share not given to the engine's pool (vLLM ``1 -
      gpu_memory_utilization``, SGLang ``1 - mem_fraction_static``: activations and graphs at run time).

    Returns ``{"parts": DataFrame(part, bytes, gib), "memory_bytes", "over_bytes" (how far the charged parts
    exceed the card, 0 when they fit), "calibrated"}``; the parts sum to ``memory_bytes`` whenever
    ``over_bytes`` is 0.
    """
    fw = str(cap["framework"])
    M = float(cap["memory_bytes"])

    def f(key: str) -> float:
        x = cap.get(key)
        return float(x) if x is not None and math.isfinite(float(x)) else 0.0

    W = f("weight_bytes_per_gpu")
    kv = max(f("kv_budget_bytes_per_gpu"), 0.0)
    calibrated = bool(cap.get("calibrated", False))
    parts: list[tuple[str, float]] = [("weights", W)]
    if calibrated:
        parts.append(("reserve implied by your log", max(f("reserve_bytes_per_gpu"), 0.0)))
    else:
        parts.extend(framework_of(fw).breakdown_reserve(cap, f))
    parts.append(("KV cache", kv))
    used = sum(b for _, b in parts)
    parts.append(("free", max(M - used, 0.0)))
    frame = pd.DataFrame(parts, columns=["part", "bytes"])
    frame["gib"] = frame["bytes"] / GiB
    return {"parts": frame, "memory_bytes": M, "over_bytes": max(used - M, 0.0), "calibrated": calibrated}
