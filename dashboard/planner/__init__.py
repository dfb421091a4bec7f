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

import shlex  # noqa: F401  (callers quote as planner.shlex.quote)

from dashboard.frameworks.tensorrt_llm import TRTLLM_MAX_BATCH_SIZE  # noqa: F401
from dashboard.planner.common import (  # noqa: F401
    COLUMNS, FW_LABEL, HEAD_ADDR, PLAN_FRAMEWORKS, SCHEMA_VERSION)
from dashboard.planner.hardware import (  # noqa: F401
    AMD_DTYPES, DTYPE_MIN_CAPABILITY, GPU, VLLM_NO_FP16_MODEL_TYPES, cc_below, dtype_check_note,
    dtype_refusal, gpu_info, vllm_auto_dtype)
from dashboard.planner.inputs import (  # noqa: F401
    CACHE_LOCK, prepared, resolve_record, weight_kind, weight_kind_cols)
from dashboard.planner.enumeration import (  # noqa: F401
    CONTEXT_COLUMNS, CROSS_NODE_HINTS, EVEN_SPREAD_FRAMEWORKS, cross_node, cross_node_message, enumerate_layouts,
    layout_label, layout_labels, layouts_cached, sglang_default_max_running_requests, unique_rows,
    vllm_default_max_num_seqs)
from dashboard.planner.plan import (  # noqa: F401
    check_args, check_frameworks, check_versions, launch_commands, plan)
from dashboard.planner.formatting import (  # noqa: F401
    RANKING_NOTE, best, format_table, fraction_notes, plan_to_dict, refusals, without_attrs)
from dashboard.planner.ranking import (  # noqa: F401
    NEAR_TIE, best_per_group, best_per_row, near_ties, rank_order)
from dashboard.planner.plan_catalog import (  # noqa: F401
    IDENTITY_COLUMNS, catalog_shapes, plan_catalog)
from dashboard.planner.cli import (  # noqa: F401
    main)

#: Names callers used before the planner became a package (public aliases, not private imports).
_dtype_refusal = dtype_refusal
_resolve_record = resolve_record
