"""Head arithmetic shared by the rules engine, the per-rank layout and the memory model.

Every function accepts scalars or numpy arrays (broadcasting) and returns numpy integer arrays (or
numpy scalars for scalar input), so the grid over the whole catalog stays vectorized. Pure: no I/O.

Sources
-------
* vLLM ``QKVParallelLinear``: when ``tp >= total_num_kv_heads`` each rank holds one KV head and each
  KV head is replicated on ``tp // total_num_kv_heads`` ranks; otherwise each rank holds
  ``total_num_kv_heads // tp`` heads.
  https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/linear.py
* SGLang ``QKVParallelLinear`` (same arithmetic over the attention-TP group, ``attn_tp = tp / dp``
  under DP-attention).
  https://github.com/sgl-project/sglang/blob/v0.5.4/python/sglang/srt/layers/linear.py
* TensorRT-LLM ``Attention``: ``num_key_value_heads = ceil(kv / tp)`` per rank (``(kv + tp - 1) // tp``).
  https://github.com/NVIDIA/TensorRT-LLM/blob/v1.0.0/tensorrt_llm/_torch/modules/attention.py
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

ArrayLike = npt.ArrayLike


def _i(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def q_heads_per_rank(num_heads: ArrayLike, tp: ArrayLike) -> np.ndarray:
    """Query heads each TP rank holds, ``num_heads // tp`` (only meaningful when it divides).

    Parameters
    ----------
    num_heads, tp : int or array of int, ``tp >= 1``.

    Returns
    -------
    numpy int64 (array): heads per rank (count).
    """
    return _i(num_heads) // np.maximum(_i(tp), 1)


def kv_heads_per_rank(num_kv_heads: ArrayLike, tp: ArrayLike, framework: str = "vllm") -> np.ndarray:
    """KV heads each rank stores in its KV cache.

    * ``vllm``, ``sglang``, ``megatron-core``, ``transformers-native-tp``, ``transformers-cb-cache``:
      ``max(1, kv // tp)`` (replicated when ``tp > kv``; for the transformers ones this is the value
      *if* sharding succeeds -- their rules decide whether it does).
    * ``tensorrt-llm``: ``ceil(kv / tp)``.

    Returns numpy int64 (array): KV heads per rank (count, not bytes).
    """
    kv = _i(num_kv_heads)
    t = np.maximum(_i(tp), 1)
    if framework == "tensorrt-llm":
        return -(-kv // t)
    return np.maximum(1, kv // t)


def kv_replicas(num_kv_heads: ArrayLike, tp: ArrayLike) -> np.ndarray:
    """How many ranks hold each KV head: ``tp // kv`` when ``tp > kv`` (replication), else 1."""
    kv = np.maximum(_i(num_kv_heads), 1)
    t = np.maximum(_i(tp), 1)
    return np.where(t > kv, t // kv, 1)


def pad_to_multiple(n: ArrayLike, multiple: ArrayLike) -> np.ndarray:
    """Smallest multiple of ``multiple`` that is ``>= n`` (e.g. SGLang's dummy vision heads, vocab padding)."""
    m = np.maximum(_i(multiple), 1)
    return -(-_i(n) // m) * m


def divides(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Boolean ``b % a == 0`` with ``a >= 1`` (False where ``a < 1``)."""
    a_ = _i(a)
    safe = np.where(a_ >= 1, a_, 1)
    return (a_ >= 1) & (_i(b) % safe == 0)
