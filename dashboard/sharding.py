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

import math
import numbers

import numpy as np
import numpy.typing as npt

ArrayLike = npt.ArrayLike

#: Largest parallel size (TP, PP, DP or EP degree) the API accepts: 2**16, the catalog's bound on head
#: counts (``catalog._MAX_HEADS``). Larger sizes are refused up front: no deployment runs one, and the
#: rules' nearest-valid-size search and the layout allocate per rank.
MAX_PARALLEL = 1 << 16

_WHOLE = __import__("re").compile(r"[0-9]{1,12}")


def whole_number(text: object) -> int | None:
    """A whole number written in ASCII digits only (``"8"``, ``" 16 "``), as the launch commands and the
    command line take it; None for anything else. Python's ``int()`` also reads ``"1_6"`` (16), Arabic-Indic
    ``"٨"`` (8) and full-width digits: none of the frameworks' own parsers would, so neither does this."""
    s = str(text).strip()
    return int(s) if _WHOLE.fullmatch(s) else None


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` (a whole number >= 1), ascending: trial division up to ``isqrt(n)``, so
    O(sqrt n) steps (2**18 for n = 2**36 = 4096**3), never a loop over every number up to ``n``."""
    n = int(n)
    if n < 1:
        raise ValueError(f"divisors of a whole number >= 1, got {n}")
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


def parallel_size(value: object, name: str = "tp", *, hi: int = MAX_PARALLEL) -> int:
    """One parallel size as an ``int`` in ``1 .. hi``.

    Accepts ints, numpy integers, integral floats (``8.0``) and digit strings (``"8"``, e.g. from a
    form or a URL). Raises ``ValueError`` (naming ``name``) for anything else that is a number or a
    string -- ``4.5``, ``nan``, ``inf``, ``"x"``, ``0``, negatives, sizes above ``hi`` -- and ``TypeError``
    for other types (``None``, bools, lists). Never truncates: ``4.5`` is an error, not 4.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f) or not f.is_integer():
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        v = int(f)
    elif isinstance(value, str):
        w = whole_number(value)
        if w is None:
            raise ValueError(f"{name} must be a whole number (ASCII digits), got {value!r}")
        v = w
    else:
        raise TypeError(f"{name} must be a whole number, got {type(value).__name__}")
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {v}")
    if v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {v}")
    return v


def parallel_sizes(values: object, name: str = "TP size", *, hi: int = MAX_PARALLEL) -> np.ndarray:
    """A sequence of parallel sizes (see :func:`parallel_size`) as a 1-D int64 array, order kept."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        arr = values.astype(np.int64, copy=False).ravel()
        bad = arr[(arr < 1) | (arr > hi)]
        if bad.size:
            parallel_size(int(bad[0]), name, hi=hi)  # raises with the message
        return arr
    return np.array([parallel_size(v, name, hi=hi) for v in values], dtype=np.int64)


#: Columns of a parallel layout (see :func:`layout_columns`): sizes, then flags.
LAYOUT_SIZES = ("tp", "pp", "dp", "ep")
LAYOUT_FLAGS = ("dp_attention", "expert_parallel")


def layout_columns(layouts: object) -> dict[str, np.ndarray]:
    """Per-layout arrays of a table of parallel layouts: a DataFrame, or a mapping of equal-length
    sequences (no DataFrame is built for a mapping: the planner calls this per framework per plan).

    Returns ``tp, pp, dp, ep`` (int64, each a whole number in ``1 .. MAX_PARALLEL``; missing column or NA
    entry -> 1) and ``dp_attention, expert_parallel`` (bool; missing / NA -> False), all of one length.

    Raises ValueError without a ``tp`` column, for columns of unequal length or a scalar column, and for
    a size that is not a whole number in range (naming it)."""
    import pandas as pd

    if isinstance(layouts, pd.DataFrame):
        raw = {k: layouts[k].to_numpy() for k in (*LAYOUT_SIZES, *LAYOUT_FLAGS) if k in layouts.columns}
        n = len(layouts)
    elif hasattr(layouts, "keys") and hasattr(layouts, "__getitem__"):
        raw = {k: np.asarray(layouts[k]) for k in (*LAYOUT_SIZES, *LAYOUT_FLAGS) if k in layouts.keys()}
        if any(a.ndim != 1 for a in raw.values()):
            raise ValueError("each layout column must be a sequence (one entry per layout), not a scalar")
        lens = {a.shape[0] for a in raw.values()}
        if len(lens) > 1:
            raise ValueError(f"layout columns have unequal lengths {sorted(lens)}")
        n = lens.pop() if lens else 0
    else:
        return layout_columns(pd.DataFrame(layouts))
    if "tp" not in raw:
        raise ValueError("layouts needs a 'tp' column")
    out: dict[str, np.ndarray] = {}
    for k in LAYOUT_SIZES:
        a = raw.get(k)
        if a is None:
            out[k] = np.ones(n, dtype=np.int64)
            continue
        if a.dtype.kind not in "iu":  # floats with NaN, objects with None: NA is the default
            na = pd.isna(a)
            if na.any():
                a = np.where(na, 1, a)
        out[k] = parallel_sizes(a, f"{k} size")
    for k in LAYOUT_FLAGS:
        a = raw.get(k)
        if a is None:
            out[k] = np.zeros(n, dtype=bool)
        elif a.dtype == bool:
            out[k] = a
        else:
            out[k] = np.where(pd.isna(a), False, a).astype(bool)
    return out


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
    """KV heads each rank stores in its KV cache: ``framework``'s own split
    (:meth:`dashboard.frameworks.base.Framework.kv_heads_per_rank`).

    * ``vllm``, ``sglang``, ``megatron-core``: ``max(1, kv // tp)`` (replicated when ``tp > kv``);
    * ``tensorrt-llm``: ``ceil(kv / tp)``;
    * ``transformers-native-tp``, ``transformers-cb-cache``: ``kv // tp`` when it divides, else every
      head (the plan does not split them).

    Returns numpy int64 (array): KV heads per rank (count, not bytes).
    """
    from dashboard import frameworks  # lazy: dashboard.frameworks.base imports this module

    return frameworks.get(framework).kv_heads_per_rank(num_kv_heads, tp)


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
