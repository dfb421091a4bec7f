"""Memory model per rank: KV-cache bytes per token, linear-attention state per sequence, weight bytes,
and how many KV-cache tokens fit on a GPU under each framework's budget rule.

Pure: numpy/pandas only, no Panel, no I/O except :func:`load_gpus` (reads ``data/gpus.csv``).

A package, one module per concern; every name is importable from here (``memory.capacity``, ...):

* :mod:`~dashboard.memory.columns`: the catalog columns read (``model_columns``), dtype sizes, argument checks;
* :mod:`~dashboard.memory.kv`: attention-TP, KV heads per rank, KV-cache bytes per token, linear-attention state;
* :mod:`~dashboard.memory.params`: parameters by part and bytes per element of each part's format;
* :mod:`~dashboard.memory.weights`: weight bytes per rank (expert layout, shards, pipeline stages);
* :mod:`~dashboard.memory.capacity`: budget, reserve, tokens and sequences that fit, the per-GPU breakdown;
* :mod:`~dashboard.memory.evidence`: KV families and the oracle summary.

The GPU table lives in :mod:`dashboard.gpus` (re-exported here); each framework's own budget rule in
``dashboard/frameworks/<pkg>/`` (vLLM's CUDA graphs and hybrid KV manager, SGLang's ``mem_fraction_static``).

Units are in every name: ``*_bytes`` are bytes (never GiB), ``*_per_token`` is per token of one
sequence, ``*_per_sequence`` per sequence, ``*_per_rank`` on one TP rank (= one GPU), ``params`` are
parameter counts. ``GiB`` = 2**30 bytes.

Every public function has a scalar form (one record: a ``dict``, a ``pandas.Series`` or a one-row
frame of catalog columns, see :mod:`dashboard.schema`) and shares its arithmetic with the vectorized
:func:`memory_grid` (catalog x TP sizes x frameworks, numpy over columns, no per-row Python).

Sources (read upstream, pinned)
-------------------------------
KV cache page per layer, vLLM ``FullAttentionSpec.real_page_size_bytes`` =
``block_size * num_kv_heads * (head_size + head_size_v) * dtype_size`` and ``MLAAttentionSpec`` =
``block_size * 1 * (kv_lora_rank + qk_rope_head_dim) * dtype_size``:
    https://github.com/vllm-project/vllm/blob/001cabc1be16a59a70d720ed61a13b678c060a18/vllm/v1/kv_cache_interface.py
vLLM KV budget, ``Worker.determine_available_memory``: ``requested_memory = total_memory *
gpu_memory_utilization``; ``available_kv = requested_memory - (weights + peak_activation +
non_torch_increase)``:
    https://github.com/vllm-project/vllm/blob/35d5cda123ec28581759b6d34cde8052314fb1e6/vllm/v1/worker/gpu_worker.py
vLLM Mamba / GDN / KDA state shapes, ``MambaStateShapeCalculator`` and dtypes
``MambaStateDtypeCalculator`` (KDA recurrent state is float32):
    https://github.com/vllm-project/vllm/blob/02d710837549a368073552333f66d714477415d2/vllm/model_executor/layers/mamba/mamba_utils.py
SGLang ``profile_max_num_token``: ``cell_size = num_kv_heads(attn_tp) * (head_dim + v_head_dim) *
layers * dtype_size`` (MLA: ``(kv_lora_rank + qk_rope_head_dim) * layers * dtype_size``);
``rest_memory = available_after_weights - total * (1 - mem_fraction_static)``:
    https://github.com/sgl-project/sglang/blob/226149ac457bd1a1b5d450f55c01f72f604320d6/python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
SGLang default ``mem_fraction_static`` (``ServerArgs._handle_gpu_memory_settings``, PR #10975):
``reserved_mib = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp * pp / 8 *
1024`` (floor 10 GiB above 60 GiB cards); ``mem_fraction_static = round((gpu_mib - reserved_mib) /
gpu_mib, 3)``:
    https://github.com/sgl-project/sglang/blob/469c63e54e7d94591617ef9590c6aa26d54dc1bb/python/sglang/srt/server_args.py
TensorRT-LLM (PyTorch backend) ``KvCacheCreator._cal_max_memory``: ``available_kv_mem = (total -
peak_memory) * free_gpu_memory_fraction`` (default 0.9) -- a fraction of what is *free after* weights
and the profiled peak; KV heads per rank ``ceil(kv / tp)`` (1 when attention-DP: ``tp_size = 1``):
    https://github.com/NVIDIA/TensorRT-LLM/blob/0004396720054fd8e205cbf616f21f0b57c6b412/tensorrt_llm/_torch/pyexecutor/_util.py
transformers continuous batching ``PagedAttentionMemoryHandler``: ``(total - max(allocated,
reserved)) * max_memory_percent`` (default 0.9):
    https://github.com/huggingface/transformers/blob/3f17daf89935cfac6c1b70500cf9bd5720f2c14e/src/transformers/generation/continuous_batching/cache.py
Measured vLLM 0.19.0 on one H100 80GB (the oracle the tests check): Llama-3.1-8B-Instruct at
``gpu_memory_utilization=0.95`` -> weights 14.99 GiB, peak activation 1.89 GiB, non-torch 0.25 GiB
(2.07-2.13 GiB at TP 2-4), KV cache 58.11 GiB = 476,016 tokens; activation 0.75-2.29 GiB across
dense models, scaling with vocabulary size:
    llm-d/llm-d-benchmark capacity-planner accuracy report (vLLM v0.19.0, H100), search-index file
    id 53125280591; llm-d/llm-d-benchmark@259334868c50 config_explorer/empirical-vllm-memory-results.md

Modelling choices (documented constants, not measurements of your machine)
----------------------------------------------------------------------------
* GPU memory is ``data/gpus.csv`` ``memory_bytes`` (NVML / ``get_device_properties`` total). On an
  H100 ``cudaMemGetInfo`` reports ~0.46 GiB less (79.19 GiB), so vLLM/SGLang budgets here are ~0.6 %
  high on that card.
* vLLM reserve (one rule, read from vLLM 0.33.0, global parameters fitted on the 0.19 logs of
  ``../shared/oracles/kv-capacity.csv``, see the constants' comments): peak activation
  :func:`_activation_bytes` (:data:`VLLM_SAMPLER_BYTES_PER_LOGIT`, :data:`VLLM_PROFILE_LIVE_BYTES`,
  :data:`VLLM_MOE_WORKSPACE_FACTOR`), non-torch :data:`VLLM_NON_TORCH_BYTES`, CUDA graphs
  :data:`VLLM_CUDAGRAPH_BYTES` (charged to the budget from vLLM 0.21, ``gpu_worker.py:719-734``); KV tokens from
  the hybrid KV manager's groups and pages, :func:`_vllm_kv_groups`. SGLang: ``mem_fraction_static x
  pre_model_load_memory - weights`` (:data:`SGLANG_STARTUP_BYTES`, :data:`SGLANG_LOAD_EXTRA_BYTES`,
  ``mem_cache/kv_cache_configurator.py:2990-3060`` of 0.5.23). ``capacity(..., measured_kv_bytes=...)``
  replaces the estimate with a logged figure. ``tests/memory/test_kv_oracles.py`` checks every oracle row.
* vLLM's loaded weights add the rotary cos/sin cache (:func:`rope_cache_bytes`, ``max_position_embeddings x
  rotary dim x 2 B`` on every rank, ``rotary_embedding/base.py:58-63``): 2.5 GiB for Llama-4-Scout's 10M
  positions, the gap between its parameters and vLLM's "Model loading took" (oracle O28 of kv-capacity-2.csv).
* TensorRT-LLM reuses the vLLM activation and non-torch estimates (not separately calibrated).
* transformers native TP and Megatron-Core have no pre-allocated KV pool: the cache grows until
  out-of-memory, so their budget is everything left after weights, activation and non-torch memory.
"""


from __future__ import annotations

from typing import Any

from dashboard.gpus import (GPUS_CSV, OTHER_GIB_RANGE, OTHER_PREFIX, gpu_memory, gpu_row, load_gpus, other_gpu,
                            parse_other_gpu, resolve_gpu_id)
from dashboard.memory.capacity import (BREAKDOWN_PARTS, BUDGET_RULES, DEFAULT_FRACTION, ENGINE_RELEASES,
                                       TOKENS_PER_BLOCK, VLLM_MOE_WORKSPACE_FACTOR, VLLM_NON_TORCH_BYTES,
                                       VLLM_PROFILE_LIVE_BYTES, VLLM_SAMPLER_BYTES_PER_LOGIT, activation_bytes,
                                       capacity, capacity_matrix, layout_capacity, memory_breakdown, memory_grid,
                                       non_torch_bytes, version_tuple, vllm_batch_defaults)
from dashboard.memory.columns import (KV_DTYPE_BYTES, UNQUANTIZED_WEIGHT_DTYPES, WEIGHT_DTYPE_BYTES, GiB, MiB,
                                      bytes_to_gib, cdiv, check_context_len, check_fraction, check_measured,
                                      check_sizes, dtype_bytes, head_dims, is_set, layer_counts, model_columns, nz,
                                      text_model_type)
from dashboard.memory.evidence import (CHECKED_ENGINES, KV_FAMILIES, KV_ORACLE_SUMMARY_CSV, kv_evidence, kv_family,
                                       load_kv_oracle_summary)
from dashboard.memory.kv import (attention_tp, kv_bytes_matrix, kv_cache_bytes_per_token_per_rank, kv_heads_per_rank,
                                 linear_state_bytes_per_sequence_per_rank, state_bytes_matrix)
from dashboard.memory.params import (BLOCK_PADDED_SHARED_MLP_MODEL_TYPES, FP32_ROUTER_MODEL_TYPES,
                                     VISION_REPLICATED_CONNECTOR_MODEL_TYPES, VISION_UNSHARDED_MODEL_TYPES,
                                     KEEP_FP32_FRAMEWORKS, MOE_MIN_INTERMEDIATE_PER_PARTITION, MXFP4_MOE_ALIGN,
                                     QUANT_PARTS, REPLICATED_DENSE_MLP_MODEL_TYPES, VISION_ENCODER_DP_MODEL_TYPES,
                                     VISION_HEADS_DP_FALLBACK_MODEL_TYPES, base_weight_bytes, format_bytes,
                                     param_parts, part_quant, quant_weight_bytes, shared_mlp_padding)
from dashboard.memory.weights import (moe_intermediate_matrix, moe_layout, rope_cache_bytes, weight_bytes_matrix,
                                      weight_bytes_per_rank)

#: Names that live in a framework's package (its own memory rules), re-exported on first use: the framework
#: modules import this package, so importing them here at load time would be a cycle.
_FRAMEWORK_NAMES: dict[str, str] = {
    "VLLM_CUDAGRAPH_BYTES": "dashboard.frameworks.vllm.memory",
    "VLLM_CUDAGRAPH_IN_BUDGET_SINCE": "dashboard.frameworks.vllm.memory",
    "cuda_graph_bytes": "dashboard.frameworks.vllm.memory",
    "vllm_kv_groups": "dashboard.frameworks.vllm.memory",
    "SGLANG_STARTUP_BYTES": "dashboard.frameworks.sglang.memory",
    "SGLANG_LOAD_EXTRA_BYTES": "dashboard.frameworks.sglang.memory",
    "SGLANG_04_FRACTIONS": "dashboard.frameworks.sglang.memory",
    "sglang_default_mem_fraction_static": "dashboard.frameworks.sglang.memory",
}

def __getattr__(name: str) -> Any:
    """The names of :data:`_FRAMEWORK_NAMES`, from their framework module (PEP 562)."""
    mod = _FRAMEWORK_NAMES.get(name)
    if mod is None:
        raise AttributeError(f"module 'dashboard.memory' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


__all__ = [
    "GiB", "MiB", "GPUS_CSV", "OTHER_GIB_RANGE", "OTHER_PREFIX", "gpu_memory", "gpu_row", "load_gpus", "other_gpu",
    "parse_other_gpu", "resolve_gpu_id", "BREAKDOWN_PARTS", "BUDGET_RULES", "DEFAULT_FRACTION", "ENGINE_RELEASES",
    "TOKENS_PER_BLOCK", "VLLM_MOE_WORKSPACE_FACTOR", "VLLM_NON_TORCH_BYTES", "VLLM_PROFILE_LIVE_BYTES",
    "VLLM_SAMPLER_BYTES_PER_LOGIT", "activation_bytes", "capacity", "capacity_matrix", "layout_capacity",
    "memory_breakdown", "memory_grid", "non_torch_bytes", "version_tuple", "vllm_batch_defaults", "KV_DTYPE_BYTES",
    "UNQUANTIZED_WEIGHT_DTYPES", "WEIGHT_DTYPE_BYTES", "bytes_to_gib", "cdiv", "check_context_len", "check_fraction",
    "check_measured", "check_sizes", "dtype_bytes", "head_dims", "is_set", "layer_counts", "model_columns", "nz",
    "text_model_type", "CHECKED_ENGINES", "KV_FAMILIES", "KV_ORACLE_SUMMARY_CSV", "kv_evidence", "kv_family",
    "load_kv_oracle_summary", "attention_tp", "kv_bytes_matrix", "kv_cache_bytes_per_token_per_rank",
    "kv_heads_per_rank", "linear_state_bytes_per_sequence_per_rank", "state_bytes_matrix",
    "BLOCK_PADDED_SHARED_MLP_MODEL_TYPES", "FP32_ROUTER_MODEL_TYPES", "KEEP_FP32_FRAMEWORKS",
    "MOE_MIN_INTERMEDIATE_PER_PARTITION", "MXFP4_MOE_ALIGN", "QUANT_PARTS", "REPLICATED_DENSE_MLP_MODEL_TYPES",
    "VISION_ENCODER_DP_MODEL_TYPES", "VISION_HEADS_DP_FALLBACK_MODEL_TYPES", "VISION_REPLICATED_CONNECTOR_MODEL_TYPES",
    "VISION_UNSHARDED_MODEL_TYPES", "base_weight_bytes", "format_bytes",
    "param_parts", "part_quant", "quant_weight_bytes", "shared_mlp_padding", "moe_intermediate_matrix", "moe_layout",
    "rope_cache_bytes", "weight_bytes_matrix", "weight_bytes_per_rank", *_FRAMEWORK_NAMES,
]
