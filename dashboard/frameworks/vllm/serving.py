"""vLLM serving knowledge the planner and ``tp-planner check`` use: the launch commands it writes, the
``--max-num-seqs`` default and the start-up memory messages. Pure, no I/O; imported lazily by
:class:`dashboard.frameworks.vllm.VLLM`."""

from __future__ import annotations

import math
import shlex
from typing import Any, Mapping

import numpy as np

from dashboard.frameworks.base import listed_count

GIB = 1 << 30
#: The head node's address in multi-node commands.
HEAD_ADDR = "$HEAD_IP"
#: A vLLM source file at one release.
SRC_URL = "https://github.com/vllm-project/vllm/blob/v{r}/{path}"

_DOCS = "https://docs.vllm.ai/en/latest/configuration/conserving_memory/"


def default_max_num_seqs(gpu: Any) -> int:
    """vLLM 0.33.0's ``--max-num-seqs`` default for the OpenAI server on this GPU (per engine / DP rank):
    1024 on >= 160 GiB cards, 1024 on >= 70 GiB cards that are not A100, else 256
    (``vllm/engine/arg_utils.py:2973-3006``). ``gpu``: has ``memory_bytes`` and ``name``."""
    gib = gpu.memory_bytes / GIB
    if gib >= 160:
        return 1024
    if gib >= 70 and "a100" not in gpu.name.lower():
        return 1024
    return 256


def plan_commands(row: Mapping, model_id: str, *, gpus_per_node: int, context_len: int, kv_flag: str) -> tuple[str, ...]:
    """``vllm serve`` command(s) for one planned layout: one node, or one per node (``--data-parallel-address``
    / ``--headless`` when every replica fits in a node, ``--nnodes`` / ``--node-rank`` / ``--master-addr``
    when a replica spans nodes). See :func:`dashboard.planner.launch_commands`."""
    tp, pp, dp = (int(row[k]) for k in ("tp", "pp", "dp"))
    n = tp * pp * dp
    replica = tp * pp
    nodes = max(1, -(-n // gpus_per_node))
    q = shlex.quote(model_id)
    frac = row.get("mem_fraction")
    base = (f"vllm serve {q} --tensor-parallel-size {tp} --pipeline-parallel-size {pp} "
            f"--data-parallel-size {dp}")
    if bool(row["expert_parallel"]):
        base += " --enable-expert-parallel"
    base += f" --max-model-len {context_len} --kv-cache-dtype {kv_flag}"
    if frac is not None and np.isfinite(frac):
        base += f" --gpu-memory-utilization {float(frac):g}"
    if nodes == 1:
        return (f"# one node, {n} GPU{'s' if n != 1 else ''}\n{base}",)
    shown = listed_count(nodes)  # beyond MAX_LISTED_COMMANDS nodes, one template for the rest
    if replica <= gpus_per_node and gpus_per_node % replica == 0 and dp > 1:
        local = gpus_per_node // replica
        out = []
        for k in range(shown):
            here = min(local, dp - k * local)
            extra = (f" --data-parallel-size-local {here} --data-parallel-address {HEAD_ADDR} "
                     f"--data-parallel-rpc-port 13345")
            if k == 0:
                out.append(f"# node 0 (head, API server): DP ranks 0-{here - 1}\n{base}{extra}")
            else:
                out.append(f"# node {k}: DP ranks {k * local}-{k * local + here - 1}\n"
                           f"{base}{extra} --headless --data-parallel-start-rank {k * local}")
        if shown < nodes:
            last = dp - (nodes - 1) * local
            out.append(f"# nodes {shown}-{nodes - 1} ({nodes - shown} more), one each with NODE_RANK set to the node's "
                       f"number; the last node runs {last} DP rank{'s' if last != 1 else ''}\n"
                       f"{base} --data-parallel-size-local {local} --data-parallel-address {HEAD_ADDR} "
                       f"--data-parallel-rpc-port 13345 --headless --data-parallel-start-rank $((NODE_RANK * {local}))")
        return tuple(out)
    out = []
    for k in range(shown):
        extra = f" --nnodes {nodes} --node-rank {k} --master-addr {HEAD_ADDR}"
        out.append(f"# node {k}{' (head, API server)' if k == 0 else ''}\n{base}{extra}"
                   + ("" if k == 0 else " --headless"))
    if shown < nodes:
        out.append(f"# nodes {shown}-{nodes - 1} ({nodes - shown} more), one each with NODE_RANK set to the node's "
                   f"number\n{base} --nnodes {nodes} --node-rank $NODE_RANK --master-addr {HEAD_ADDR} --headless")
    return tuple(out)


def memory_refusal(*, budget: float, ctx: int, kv_tok: float, tokens: float, seq_group: float) -> str:
    """The planner's start-up refusal in vLLM's words: no KV blocks (``budget <= 0``), or less than one
    ``ctx``-token sequence (``seq_group < 1``; V1 ``_check_enough_kv_cache_memory``); '' otherwise."""
    if budget <= 0:
        return ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                "initializing the engine (this flag also controls CPU memory reservation on the CPU backend, "
                "despite its name). See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ "
                "for more details.")
    if seq_group < 1:
        needed = kv_tok * ctx
        est = int(tokens) if np.isfinite(tokens) else 0
        est_msg = (f"Based on the available memory, the estimated maximum model length is {est}. "
                   if est > 0 else "")
        return (f"To serve at least one request with the model's max seq len ({ctx}), "
                f"({round(needed / GIB, 2)} GiB KV cache is needed, which is larger than the available KV "
                f"cache memory ({round(budget / GIB, 2)} GiB). {est_msg}Try increasing "
                "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing "
                "`max_model_len` when initializing the engine. See "
                "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
    return ""


def kv_check_site(release: str | None) -> tuple[str, str]:
    """(raise site, engine) of vLLM's KV-cache start-up check in ``release``: V1's
    ``_check_enough_kv_cache_memory`` (read in 0.22.0, 0.27.1 and 0.33.0; the line where it was read),
    V0's ``raise_if_cache_size_invalid`` in ``vllm/worker/worker.py`` before 0.8.0 (V1 the default)."""
    from packaging.version import InvalidVersion, Version

    known = {"0.33.0": "vllm/v1/core/kv_cache_planning.py:77", "0.27.1": "vllm/v1/core/kv_cache_utils.py:778",
             "0.22.0": "vllm/v1/core/kv_cache_utils.py:718"}
    if release in known:
        return known[release], "v1"
    try:
        v = Version(release or "0.33.0")
    except InvalidVersion:
        v = Version("0.33.0")
    if v < Version("0.8.0"):
        return "vllm/worker/worker.py", "v0"
    return ("vllm/v1/core/kv_cache_planning.py" if v > Version("0.33.0") else "vllm/v1/core/kv_cache_utils.py"), "v1"


def memory_issue(release: str | None, cap: Mapping) -> dict | None:
    """``tp-planner check``'s KV-cache refusal in vLLM's words, as the fields of a
    :class:`dashboard.check.Issue` (None when one ``max_model_len`` sequence fits). ``cap``: a
    :func:`dashboard.memory.capacity` result."""
    ctx = int(cap["context_len"])
    tokens = int(cap["tokens_per_gpu"] or 0)
    budget = float(cap["kv_budget_bytes_per_gpu"])
    per_tok = float(cap["kv_bytes_per_token_per_rank"])
    gib = lambda b: f"{round(b / GIB, 2)}"  # noqa: E731 - vLLM's format_gib
    site, eng = kv_check_site(release)
    url = SRC_URL.format(r=release, path=site.split(":")[0]) + (f"#L{site.split(':')[1]}" if ":" in site else "")
    if budget <= 0 or tokens <= 0:
        msg = ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
               "initializing the engine")
        msg += (" (this flag also controls CPU memory reservation on the CPU backend, despite its name). See "
                f"{_DOCS} for more details." if eng == "v1" else ".")
        return dict(rule_id="memory.vllm.no_kv_blocks", message=msg, exc_type="ValueError", location=site,
                    source_url=url, kind="memory",
                    condition="KV-cache budget (gpu_memory_utilization x total - weights - activation - "
                              "non-torch) <= 0; numbers from this project's memory model")
    if tokens >= ctx:
        return None
    if eng == "v0":
        msg = (f"The model's max seq len ({ctx}) is larger than the maximum number of tokens that can be "
               f"stored in KV cache ({tokens}). Try increasing `gpu_memory_utilization` or decreasing "
               "`max_model_len` when initializing the engine.")
    else:
        block = 16
        needed = math.ceil(ctx / block) * block * per_tok + float(cap.get("linear_state_bytes_per_sequence_per_rank") or 0)
        est = f"Based on the available memory, the estimated maximum model length is {tokens}. " if tokens > 0 else ""
        msg = (f"To serve at least one request with the model's max seq len ({ctx}), ({gib(needed)} GiB KV "
               f"cache is needed, which is larger than the available KV cache memory ({gib(budget)} GiB). "
               f"{est}Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU "
               f"backend) or decreasing `max_model_len` when initializing the engine. See {_DOCS} for more details.")
    return dict(rule_id="memory.vllm.max_model_len", message=msg, exc_type="ValueError", location=site,
                source_url=url, kind="memory",
                condition="KV-cache tokens per GPU < max_model_len at start-up (the message is vLLM's"
                          + (" as in 0.22.0-0.33.0" if eng == "v1" else "") + "; its numbers come from this "
                          "project's memory model)")


def quantization_mismatch_issue(have: str, asked: str, release: str | None) -> dict:
    """``ModelConfig._verify_quantization``'s refusal of a ``--quantization`` that differs from the
    checkpoint's ``quant_method``, as the fields of a :class:`dashboard.check.Issue`."""
    site = "vllm/config/model.py" + (":1457" if release == "0.33.0" else "")
    return dict(
        rule_id="vllm.quantization_mismatch",
        message=f"Quantization method specified in the model config ({have}) does not match the "
                f"quantization method specified in the `quantization` argument ({asked}).",
        exc_type="ValueError", location=site,
        source_url=SRC_URL.format(r=release or "0.33.0", path="vllm/config/model.py") + (
            "#L1457" if release == "0.33.0" else ""),
        evidence="source", ours=False, kind="quantization",
        condition="ModelConfig._verify_quantization: the checkpoint's quant_method and --quantization differ (vLLM "
                  "also accepts its own overrides such as gptq -> gptq_marlin)")
