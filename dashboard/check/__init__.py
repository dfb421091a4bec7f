"""``tp-planner check``: one (model, parallel layout) judged as the framework would judge it.

Command line::

    tp-planner check MODEL --framework vllm --tp 8 [--pp 1] [--dp 1] [--ep N | --enable-expert-parallel]
        [--dp-attention] [--kv-cache-dtype fp8] [--quantization fp8] [--version 0.33.0]
        [--gpu H100-80GB] [--max-model-len 32768] [--gpu-memory-utilization 0.9] [--json]
    tp-planner check [MODEL | --config PATH] [--gpu ...] [--version ...] [--json] -- LAUNCH COMMAND ...

MODEL is a Hub repo id (fetched through :mod:`dashboard.hub`: huggingface_hub's cache, ``HF_TOKEN``,
``HF_ENDPOINT``, ``HF_HUB_OFFLINE``), a local model folder (its ``config.json`` and quantization
sidecars) or a ``config.json`` path, or ``-`` for a config on standard input. After ``--`` comes a real
launch command (``vllm serve ...``, ``python -m sglang.launch_server ...``, ``trtllm-serve ...``;
:mod:`dashboard.launch`): its MODEL is used when none is given before ``--``, and its layout unless a
flag before ``--`` overrides it.

Exit status: 0 accepted; 1 refused (a failing rule, or -- with ``--gpu`` -- weights or a KV cache that
cannot hold ``--max-model-len``); 2 bad input (unknown framework, unreadable config, a Hub id that
cannot be fetched, a bad number). ``--json`` prints :data:`SCHEMA_VERSION`-versioned JSON on stdout
(README, "Check a launch command", lists the fields).

This module does no network I/O itself (Hub access is :func:`dashboard.hub.fetch_config`).
"""

from __future__ import annotations

from dashboard.check.common import (  # noqa: F401
    CheckInputError, GiB, MAX_CONFIG_BYTES, SCHEMA_VERSION, printable)
from dashboard.check.source import (  # noqa: F401
    HUB_DEADLINE_S, Source, load_model)
from dashboard.check.request import (  # noqa: F401
    Issue, Request, capacity, gpu_count, hit_issue, kv_dtype, memory_issue, quant_family)
from dashboard.check.suggestions import (  # noqa: F401
    alternatives, fits)
from dashboard.check.judge import (  # noqa: F401
    context_issue, run_check)
from dashboard.check.text import (  # noqa: F401
    render_text)
from dashboard.check.cli import (  # noqa: F401
    check_release, main)

__all__ = ["SCHEMA_VERSION", "CheckInputError", "main", "run_check"]
