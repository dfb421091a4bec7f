"""SGLang serving knowledge the planner and ``tp-planner check`` use: the launch commands it writes, the
running-request default and the start-up memory messages. Pure, no I/O; imported lazily by
:class:`dashboard.frameworks.sglang.SGLang`."""

from __future__ import annotations

import shlex
from typing import Any, Mapping

import numpy as np

from dashboard.frameworks.base import listed_count

from dashboard.frameworks.sglang import attn_dp_with_replicas, dp_attention_flags

#: The head node's address in multi-node commands.
HEAD_ADDR = "$HEAD_IP"


def default_max_running_requests(tokens_per_gpu: np.ndarray, context_len: int) -> np.ndarray:
    """SGLang 0.5.23's running-request cap per attention-DP worker without ``--max-running-requests``:
    ``min(clamp(int(tokens / context_len * 512), 2048, 4096), tokens // 2)``
    (``mem_cache/kv_cache_configurator.py:3119-3133``). ``tokens_per_gpu``: KV-pool tokens, an array."""
    tok = np.nan_to_num(np.asarray(tokens_per_gpu, dtype=np.float64), nan=0.0)
    est = np.clip(np.floor(tok / context_len * 512), 2048, 4096)
    return np.minimum(est, np.floor(tok / 2)).astype(np.int64)


def plan_commands(row: Mapping, model_id: str, *, gpus_per_node: int, context_len: int, kv_flag: str,
                  release: str | None) -> tuple[str, ...]:
    """``python -m sglang.launch_server`` command(s) for one planned layout: one node, or one per node
    (``--nnodes`` / ``--node-rank`` / ``--dist-init-addr``). See :func:`dashboard.planner.launch_commands`."""
    tp, pp, dp, attn_dp, ep = (int(row[k]) for k in ("tp", "pp", "dp", "attn_dp", "ep"))
    n = tp * pp * dp
    nodes = max(1, -(-n // gpus_per_node))
    q = shlex.quote(model_id)
    frac = row.get("mem_fraction")
    base = f"python -m sglang.launch_server --model-path {q} --tp-size {tp}"
    if pp > 1:
        base += f" --pp-size {pp}"
    if attn_dp > 1:
        if attn_dp_with_replicas(release) and dp > 1:
            base += f" --dp-size {dp}"
        base += " " + dp_attention_flags(release, attn_dp)
    elif dp > 1:
        base += f" --dp-size {dp}"
    if ep > 1:
        base += f" --ep-size {ep}"
    base += f" --context-length {context_len} --kv-cache-dtype {kv_flag}"
    if frac is not None and np.isfinite(frac):
        base += f" --mem-fraction-static {float(frac):.3f}"
    if nodes == 1:
        return (f"# one node, {n} GPU{'s' if n != 1 else ''}\n{base}",)
    shown = listed_count(nodes)  # beyond MAX_LISTED_COMMANDS nodes, one template for the rest
    out = [f"# node {k}{' (head)' if k == 0 else ''}\n{base} --nnodes {nodes} --node-rank {k} "
           f"--dist-init-addr {HEAD_ADDR}:5000" for k in range(shown)]
    if shown < nodes:
        out.append(f"# nodes {shown}-{nodes - 1} ({nodes - shown} more), one each with NODE_RANK set to the node's "
                   f"number\n{base} --nnodes {nodes} --node-rank $NODE_RANK --dist-init-addr {HEAD_ADDR}:5000")
    return tuple(out)


def memory_issue(release: str | None, cap: Mapping, mem_fraction: float | None) -> dict | None:
    """``tp-planner check``'s KV-pool refusal in SGLang's words (``pool_configurator.py:96``), or its
    request cap below the context length, as the fields of a :class:`dashboard.check.Issue`; None when
    one sequence of the context length fits. ``cap``: a :func:`dashboard.memory.capacity` result."""
    ctx = int(cap["context_len"])
    tokens = int(cap["tokens_per_gpu"] or 0)
    site = "sglang/srt/model_executor/pool_configurator.py:96"
    url = f"https://github.com/sgl-project/sglang/blob/v{release}/python/{site.split(':')[0]}#L96"
    if tokens <= 0:
        msg = "Not enough memory. Please try to increase --mem-fraction-static."
        if mem_fraction is not None:
            msg += f" Current value: mem_fraction_static={mem_fraction}"
        return dict(rule_id="memory.sglang.no_kv_pool", message=msg, exc_type="RuntimeError", location=site,
                    source_url=url, kind="memory",
                    condition="KV pool tokens <= 0 (numbers from this project's memory model)")
    if tokens >= ctx:
        return None
    return dict(rule_id="memory.sglang.context_length",
                message=f"SGLang starts, but its KV pool holds {tokens} tokens per GPU, fewer than the context "
                        f"length ({ctx}): requests are capped at max_req_len = min(context_len - 1, pool - 1) = "
                        f"{tokens - 1} tokens (sglang/srt/managers/tp_worker.py). Increase --mem-fraction-static, "
                        "use more GPUs or lower --context-length.",
                exc_type="", location="", source_url="", ours=True, kind="memory",
                condition="KV pool tokens per GPU < context length")
