"""SGLang's memory rules: its default ``mem_fraction_static`` and its KV-cache budget (``mem_fraction_static x
pre_model_load_memory - weights``). Called by :class:`dashboard.frameworks.sglang.SGLang` (imported lazily:
this module imports the memory model).

Units: bytes per GPU (``MiB`` / ``GiB`` = 2**20 / 2**30); arrays ``(models, layouts)``. Sources:
``ServerArgs._handle_gpu_memory_settings`` (``python/sglang/srt/server_args.py``, PR #10975) and
``model_runner_kv_cache_mixin.py`` / ``mem_cache/kv_cache_configurator.py`` of SGLang 0.5.23 (URLs in
:mod:`dashboard.memory`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dashboard.memory.capacity import version_tuple
from dashboard.memory.columns import GiB, MiB

#: SGLang: memory in use before the weights load (CUDA context; NCCL and custom all-reduce at TP > 1), bytes:
#: ``pre_model_load_memory`` (``distributed/bootstrap.py:193-212``) is the free memory then, not the card
#: total. Fitted on the two SGLang oracles: O73 (H100, TP 1) 63.48 GB free after 15.11 GB of weights ->
#: 78.59 of 79.19 GiB, 0.6 GiB in use; O72 (L4, TP 4) "avail mem=21.63 GB" of 23034 MiB (22.49 GiB), 0.86.
SGLANG_STARTUP_BYTES = {"tp1": 0.6 * GiB, "tp": 0.86 * GiB}
#: SGLang: what its "Load weight end ... mem usage" adds to the parameter bytes (rotary caches, allocator
#: rounding), bytes: logged 15.11 vs 14.96 GiB (Llama-3.1-8B TP 1), 15.54 vs 15.26 GiB (QwQ-32B TP 4).
SGLANG_LOAD_EXTRA_BYTES = 0.2 * GiB


#: SGLang 0.4.x default ``mem_fraction_static`` by TP size (``ServerArgs.__post_init__``: TP >= 16 0.79,
#: >= 8 0.81, >= 4 0.85, >= 2 0.87, else 0.88); releases before 0.5 use it.
SGLANG_04_FRACTIONS = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))


def sglang_default_mem_fraction_static(memory_bytes: int, tp: int = 1, pp: int = 1, *, dp: int = 1,
                                       dp_attention: bool = False, version: str | None = None) -> float:
    """SGLang's default ``mem_fraction_static`` for a GPU of ``memory_bytes`` (fraction of TOTAL memory).

    ``ServerArgs._handle_gpu_memory_settings``: buckets by memory (MiB) give ``chunked_prefill_size`` /
    ``cuda_graph_max_bs`` (< 35 GiB: 2048 / 8, < 60 GiB: 4096 / 32 (160 at tp >= 4), < 160 GiB: 8192
    / 256 (512 at tp >= 4), else 16384 / 512); ``reserved = 512 + max(chunked, 2048) * 1.5 + bs * 2 +
    tp * pp / 8 * 1024`` MiB (+ ``bs * dp * 3`` (+ ``bs * dp * 1.5`` when bs > 300) under
    DP-attention), at least 10 GiB on cards above 60 GiB; result ``round((mem - reserved) / mem, 3)``.
    The multimodal reduction (``adjust_mem_fraction_for_vlm``) is not modelled.

    ``version`` (e.g. ``"0.4.3.post4"``; default the 0.5.23 release read): releases before 0.5 used a table by
    TP size alone, :data:`SGLANG_04_FRACTIONS` (oracle O72: 0.85 printed at TP 4). Which 0.5.x release
    switched to the formula above was not checked (0.5.22 and 0.5.23 have it).
    """
    if version_tuple(version, "sglang") < (0, 5):
        return next(f for lo, f in SGLANG_04_FRACTIONS if tp >= lo)
    mem = memory_bytes / MiB
    gib = 1024
    if mem < 35 * gib:
        chunked, bs = 2048, 8
    elif mem < 60 * gib:
        chunked, bs = 4096, (32 if tp < 4 else 160)
    elif mem < 160 * gib:
        chunked, bs = 8192, (256 if tp < 4 else 512)
    else:
        chunked, bs = 16384, 512
    reserved = 512 + max(chunked, 2048) * 1.5 + bs * 2 + tp * pp / 8 * 1024
    if dp_attention:
        reserved += bs * dp * 3 + (bs * dp * 1.5 if bs > 300 else 0)
    if mem > 60 * gib:
        reserved = max(reserved, 10 * gib)
    return round((mem - reserved) / mem, 3)


def kv_budget(b: dict[str, Any]) -> dict[str, Any]:
    """``profile_max_num_token``'s ``rest_memory``: ``pre_load x fraction - weights - load extras`` with
    ``pre_load = M - startup`` (:data:`SGLANG_STARTUP_BYTES`, :data:`SGLANG_LOAD_EXTRA_BYTES`); the fraction
    defaults to :func:`sglang_default_mem_fraction_static` per layout. Reserve = startup + the unrequested share
    + load extras. Keys of ``b`` as :meth:`dashboard.frameworks.base.Framework.kv_budget`; the returned
    ``fraction`` is an array (1, layouts)."""
    tp, pp, dp, dp_attention, t = b["tp"], b["pp"], b["dp"], b["dp_attention"], b["t"]
    weights, M, frac = b["weights"], b["memory_bytes"], b["fraction"]
    if frac is None:
        lay = np.broadcast_arrays(tp, np.asarray(pp), np.asarray(dp), np.asarray(dp_attention, dtype=bool))
        fr = np.array([[sglang_default_mem_fraction_static(b["memory_bytes_int"], int(x), int(p_), dp=int(d_),
                                                           dp_attention=bool(a_), version=b["engine_version"])
                        for x, p_, d_, a_ in zip(*lay)]])
    else:
        fr = np.full((1, len(tp)), float(frac))
    startup = np.where(t > 1, SGLANG_STARTUP_BYTES["tp"], SGLANG_STARTUP_BYTES["tp1"])
    pre_load = M - startup  # rest = (pre_load - weights) - pre_load x (1 - fraction)
    budget = pre_load * fr - weights - SGLANG_LOAD_EXTRA_BYTES
    reserve = np.broadcast_to(startup + pre_load * (1 - fr) + SGLANG_LOAD_EXTRA_BYTES, weights.shape)
    return {"budget": budget, "reserve": reserve, "fraction": fr}


def breakdown_reserve(cap: Any) -> list[tuple[str, float]]:
    """The reserve of one ``capacity()`` result as one ``non-torch`` part, bytes per GPU: the memory in use
    before the weights load (:data:`SGLANG_STARTUP_BYTES` by TP) plus :data:`SGLANG_LOAD_EXTRA_BYTES`."""
    tp = int(cap.get("tp", 1) or 1)
    return [("non-torch", (SGLANG_STARTUP_BYTES["tp"] if tp > 1 else SGLANG_STARTUP_BYTES["tp1"])
             + SGLANG_LOAD_EXTRA_BYTES)]
