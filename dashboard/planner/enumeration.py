"""Layout enumeration: every TP x PP x DP (x EP, attention-DP) layout of N GPUs as each framework
spells it, the labels, and the node-spanning rules."""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd

from dashboard import frameworks as fw_registry
from dashboard.frameworks.sglang import serving as _sglang_serving
from dashboard.frameworks.vllm import serving as _vllm_serving
from dashboard.planner.inputs import CACHE_LOCK
from dashboard.sharding import divisors


def _divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending (:func:`dashboard.sharding.divisors`, O(sqrt n))."""
    return divisors(n)


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


def unique_rows(lays: pd.DataFrame | Mapping[str, np.ndarray], keys: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The distinct rule / memory parameter rows of ``lays`` (a frame, or a mapping of equal-length arrays)
    as columns named as the rules name them
    (``tp, pp, dp, ep, dp_attention, expert_parallel``; a mapping of arrays, which
    :func:`dashboard.rules.layout_grid` takes without building a frame) and, per row of ``lays``, the
    index of its distinct row."""
    n = len(lays[keys[0]])
    names = ["tp", "pp", "dp", "ep", "dp_attention", "expert_parallel"]
    if n == 0:
        return {nm: np.zeros(0, dtype=bool if j >= 4 else np.int64) for j, nm in enumerate(names)}, np.zeros(0, np.int64)
    stacked = np.stack([np.asarray(lays[k], dtype=np.int64) for k in keys], axis=1)
    _, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    # number the distinct rows in order of first appearance
    by_first = np.argsort(first, kind="stable")
    rank = np.empty(len(first), dtype=np.int64)
    rank[by_first] = np.arange(len(first))
    codes = rank[inverse.reshape(-1)]
    rows = stacked[first[by_first]]
    uniq = {nm: rows[:, j].astype(bool if j >= 4 else np.int64) for j, nm in enumerate(names)}
    return uniq, codes


_LAYOUT_CACHE: dict[tuple, pd.DataFrame] = {}


def layouts_cached(n: int, framework: str, moe: bool, attn_dp_with_replicas: bool) -> pd.DataFrame:
    key = (n, framework, moe, attn_dp_with_replicas)
    hit = _LAYOUT_CACHE.get(key)
    if hit is None:
        hit = enumerate_layouts(n, framework, moe=moe,
                                release=None if attn_dp_with_replicas else "0.0.0")
        with CACHE_LOCK:
            if len(_LAYOUT_CACHE) > 4096:
                _LAYOUT_CACHE.clear()
            _LAYOUT_CACHE[key] = hit
    return hit


def layout_label(tp, pp, dp, attn_dp, ep, framework) -> str:
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


def layout_labels(tp, pp, dp, attn_dp, ep) -> list[str]:
    """:func:`layout_label` of every row of the equal-length integer arrays (one loop over plain ints: numpy's
    string ufuncs measured twice as slow on 68,000 rows)."""
    out: list[str] = []
    put = out.append
    for t, p, d, a, e in zip(*(np.asarray(x, dtype=np.int64).tolist() for x in (tp, pp, dp, attn_dp, ep))):
        text = f"TP {t}"
        if p > 1:
            text += f" × PP {p}"
        if d > 1:
            text += f" × DP {d}"
        if a > 1:
            text += f" attn-DP {a}"
        if e > 1:
            text += f" EP {e}"
        put(text)
    return out


#: vLLM's ``--max-num-seqs`` default (:func:`dashboard.frameworks.vllm.serving.default_max_num_seqs`).
vllm_default_max_num_seqs = _vllm_serving.default_max_num_seqs
#: SGLang's running-request cap (:func:`dashboard.frameworks.sglang.serving.default_max_running_requests`).
sglang_default_max_running_requests = _sglang_serving.default_max_running_requests


#: Catalog columns the context-length check reads (:mod:`dashboard.context`).
CONTEXT_COLUMNS = ("max_model_len_vllm", "max_model_len_vllm_source", "context_length_sglang")

#: Frameworks that spread one replica's ranks evenly over the nodes it spans: vLLM ``--nnodes``
#: (``ParallelConfig.local_world_size = world_size // nnodes_within_dp``, vllm/config/parallel.py:838-840,
#: 0.33.0; ranks are TP-innermost) and SGLang ``--nnodes`` (whole pipeline stages per node,
#: ``_calculate_rank_ranges``, python/sglang/srt/entrypoints/engine.py:2061-2076, 0.5.23). TensorRT-LLM's
#: ``mpirun --host a:G,b:G`` fills each node's slots first, so a TP group stays in a node when G % TP == 0.
EVEN_SPREAD_FRAMEWORKS = tuple(f.name for f in fw_registry.all_frameworks() if f.even_node_spread)


def cross_node(tp: np.ndarray, pp: np.ndarray, n: int, gpn: int, fw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


#: How to allow cross-node TP, where the refusal is read: the Python API (the default), the CLI, the dashboard.
CROSS_NODE_HINTS = {"api": "plan(..., cross_node_tp=True)", "cli": "--cross-node-tp",
                    "dashboard": "the Plan tab keeps TP within a node; tp-planner plan --cross-node-tp allows it"}


def cross_node_message(tp: int, pp: int, gpn: int, fw: str, even_spread: bool, hint: str = CROSS_NODE_HINTS["api"]) -> str:
    """The planner's refusal of a layout whose TP group would span nodes (this project's wording); ``hint``
    says how to allow it where the message is shown (:data:`CROSS_NODE_HINTS`)."""
    tail = f"tensor parallelism stays within a node (NVLink) unless cross-node TP is allowed ({hint})."
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
