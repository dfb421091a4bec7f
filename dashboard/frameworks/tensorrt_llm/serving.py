"""TensorRT-LLM's launch commands as the planner writes them (``trtllm-serve``, ``mpirun`` for replicas
spanning nodes). Pure, no I/O; imported lazily by :class:`dashboard.frameworks.tensorrt_llm.TensorRTLLM`."""

from __future__ import annotations

import shlex
from typing import Mapping

import numpy as np

from dashboard.frameworks.base import listed_count

#: Most nodes an ``mpirun --host`` list names; a replica over more nodes gets ``--hostfile`` instead.
MAX_LISTED_HOSTS = 64


def plan_commands(row: Mapping, model_id: str, *, gpus_per_node: int, context_len: int, kv_flag: str) -> tuple[str, ...]:
    """One command per replica (``trtllm-serve`` has no DP flag): ``CUDA_VISIBLE_DEVICES=... trtllm-serve``
    when a replica fits in a node (``mpirun`` fills each node first), else ``mpirun ... trtllm-llmapi-launch``
    from its first node; attention-DP and the KV dtype go in an extra YAML. See
    :func:`dashboard.planner.launch_commands`."""
    tp, pp, dp, attn_dp, ep = (int(row[k]) for k in ("tp", "pp", "dp", "attn_dp", "ep"))
    n = tp * pp * dp
    replica = tp * pp
    nodes = max(1, -(-n // gpus_per_node))
    q = shlex.quote(model_id)
    frac = row.get("mem_fraction")
    yaml = []
    if attn_dp > 1:
        yaml.append("enable_attention_dp: true")
    if kv_flag != "auto":
        yaml += ["kv_cache_config:", f"  dtype: {kv_flag}"]
    cmd = f"trtllm-serve {q} --backend pytorch --tp_size {tp} --pp_size {pp}"
    if ep > 1:
        cmd += f" --ep_size {ep}"
    cmd += f" --max_seq_len {context_len}"
    if frac is not None and np.isfinite(frac):
        cmd += f" --kv_cache_free_gpu_memory_fraction {float(frac):g}"
    prefix = ""
    if yaml:
        body = "\\n".join(yaml)
        prefix = f"printf '{body}\\n' > trtllm-extra.yaml && "
        cmd += " --config trtllm-extra.yaml"
    from dashboard.launch import gpu_sets

    out = []
    shown = listed_count(dp)  # beyond MAX_LISTED_COMMANDS replicas, one template for the rest
    if replica <= gpus_per_node:
        per_node = max(1, gpus_per_node // replica)
        for r, (node, devices) in enumerate(gpu_sets(shown, replica, gpus_per_node)):
            slot = r % per_node
            devs = ",".join(map(str, devices))
            where = f"# node {node}, replica {r}" if dp > 1 or nodes > 1 else f"# one node, {n} GPU{'s' if n != 1 else ''}"
            out.append(f"{where}\n{prefix}CUDA_VISIBLE_DEVICES={devs} {cmd} --port {8000 + slot}")
        if shown < dp:
            out.append(f"# replicas {shown}-{dp - 1} ({dp - shown} more), one each: replica R runs on node R / "
                       f"{per_node}, slot R % {per_node}, GPUs slot*{replica} .. slot*{replica}+{replica - 1}\n"
                       f"{prefix}CUDA_VISIBLE_DEVICES=$GPUS {cmd} --port $((8000 + SLOT))")
        return tuple(out)
    span = -(-replica // gpus_per_node)
    for r in range(shown):
        if span <= MAX_LISTED_HOSTS:
            hosts = "--host " + ",".join(f"$NODE{r * span + i}:{gpus_per_node}" for i in range(span))
            where = ""
        else:  # a host list of thousands of nodes: mpirun reads it from a file instead
            hosts = f"--hostfile replica-{r}-hosts"
            where = (f"; replica-{r}-hosts lists $NODE{r * span} .. $NODE{r * span + span - 1}, one per line with "
                     f"slots={gpus_per_node}")
        out.append(f"# replica {r} over {span} nodes (from its first node){where}\n{prefix}mpirun -np {replica} "
                   f"{hosts} trtllm-llmapi-launch {cmd}")
    if shown < dp:
        out.append(f"# replicas {shown}-{dp - 1} ({dp - shown} more), one each: replica R over nodes R*{span} .. "
                   f"R*{span}+{span - 1}, HOSTS their $NODE<i>:{gpus_per_node} list (or --hostfile)\n{prefix}mpirun "
                   f"-np {replica} --host $HOSTS trtllm-llmapi-launch {cmd}")
    return tuple(out)
