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

import argparse
import json
import math
import os
import re
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dashboard import context, frameworks, schema
from dashboard.launch import (
    MAX_GPUS,
    Launch,
    LaunchError,
    parse_command,
    parse_fraction,
    parse_len,
    parse_size,
    render_command,
)

__all__ = ["SCHEMA_VERSION", "CheckInputError", "main", "run_check"]

#: Version of the ``--json`` document (bumped when a field changes meaning or goes away).
SCHEMA_VERSION = 1
#: Largest config (file or standard input) read, like the catalog's sidecar cap.
MAX_CONFIG_BYTES = 1 << 20

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_GiB = 1 << 30


class CheckInputError(Exception):
    """Bad input (exit 2); the message is one printable line."""


def printable(text: Any, limit: int = 2000) -> str:
    """Untrusted text for a terminal or a log line: control characters (ANSI escapes, NUL ...) as ``?``,
    newlines kept only where they are ours."""
    s = _CONTROL.sub("?", str(text)).replace("\n", " ").replace("\r", " ")
    return s if len(s) <= limit else s[: limit - 3] + "..."


# ------------------------------------------------------------------------------------------------
# arguments
# ------------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage + exits 2 itself)
        raise CheckInputError(printable(message))


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="tp-planner check",
        description="Would the framework start this model at this parallel layout? If not, the first error as "
                    "it prints it, where it comes from, and the nearest layouts that start.",
        epilog="Exit status: 0 accepted, 1 refused, 2 bad input. After -- give a real launch command "
               "(vllm serve ..., python -m sglang.launch_server ..., trtllm-serve ...).",
        allow_abbrev=False,
    )
    ap.add_argument("model", nargs="?", metavar="MODEL",
                    help="Hub repo id, local model folder or config.json path, or - for standard input")
    ap.add_argument("--config", metavar="PATH",
                    help="config.json (or folder, or -) to judge, when MODEL (e.g. the launch command's) is a path "
                         "on another machine")
    ap.add_argument("--framework", help=f"one of {', '.join(schema.FRAMEWORKS)} (default: the launch command's, else vllm)")
    ap.add_argument("--tp", "--tensor-parallel-size", dest="tp", help="tensor-parallel size")
    ap.add_argument("--pp", "--pipeline-parallel-size", dest="pp", help="pipeline-parallel size")
    ap.add_argument("--dp", "--data-parallel-size", dest="dp",
                    help="data-parallel size (SGLang/TensorRT-LLM with --dp-attention: attention-DP groups)")
    ap.add_argument("--ep", dest="ep", nargs="?", const="on",
                    help="expert parallelism: vLLM --enable-expert-parallel (EP size = TP x DP; a size is "
                         "ignored), others the EP size (bare --ep = TP)")
    ap.add_argument("--enable-expert-parallel", dest="ep", action="store_const", const="on",
                    help="same as --ep (vLLM's spelling)")
    ap.add_argument("--dp-attention", action="store_true", default=None,
                    help="SGLang DP-attention / TensorRT-LLM attention-DP")
    ap.add_argument("--vision-dp", action="store_true", default=None,
                    help="data-parallel vision encoder (vLLM --mm-encoder-tp-mode data)")
    ap.add_argument("--kv-cache-dtype", help="KV-cache dtype for the memory check (auto, fp8, fp8_e4m3, bf16 ...)")
    ap.add_argument("--quantization", help="online quantization / the quantization argument (e.g. fp8)")
    ap.add_argument("--version", help="framework release (0.33.0) or date (2025-05); default: newest executed")
    ap.add_argument("--gpu", help="GPU for the memory check (e.g. H100-80GB; see data/gpus.csv), or other:GiB for a card "
                    "given by its memory per GPU (e.g. other:24)")
    ap.add_argument("--max-model-len", "--context-length", dest="max_model_len",
                    help="tokens per sequence for the memory check (default: the model's context length)")
    ap.add_argument("--gpu-memory-utilization", "--mem-fraction-static", dest="mem_fraction",
                    help="the framework's memory fraction (default: the framework's)")
    ap.add_argument("--json", action="store_true", help="print a machine-readable result (schema_version "
                                                        f"{SCHEMA_VERSION})")
    return ap


# ------------------------------------------------------------------------------------------------
# the model's config
# ------------------------------------------------------------------------------------------------


@dataclass
class Source:
    model_id: str
    kind: str  # hub | folder | file | stdin
    where: str = ""
    sha: str | None = None
    sidecars: list[str] = field(default_factory=list)
    offline: bool = False


def _read_capped(path: Path, what: str) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise CheckInputError(f"cannot read {what}: {printable(e.strerror or e)}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise CheckInputError(f"{what} is larger than {MAX_CONFIG_BYTES} bytes")
    return data


def _read_stdin(stdin: Any) -> bytes:
    buf = getattr(stdin, "buffer", stdin)
    data = buf.read(MAX_CONFIG_BYTES + 1)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if len(data) > MAX_CONFIG_BYTES:
        raise CheckInputError(f"standard input is larger than {MAX_CONFIG_BYTES} bytes")
    if not data.strip():
        raise CheckInputError("standard input is empty: expected a config.json")
    return data


def _looks_like_path(s: str) -> bool:
    return s.startswith(("/", "./", "../", "~", ".\\")) or s in (".", "..") or s.endswith(".json") or "\\" in s


def _load_local(arg: str, model_id: str | None) -> tuple[bytes, dict[str, bytes], Source]:
    from dashboard.catalog import QUANT_SIDECARS

    p = Path(os.path.expanduser(arg))
    if p.is_dir():
        cfg = p / "config.json"
        if not cfg.is_file():
            raise CheckInputError(f"{printable(arg)} is a folder without a config.json")
        folder, kind = p, "folder"
    elif p.is_file():
        cfg, folder, kind = p, p.parent, "file"
    else:
        raise CheckInputError(f"no such file or folder: {printable(arg, 200)}")
    data = _read_capped(cfg, printable(str(cfg), 200))
    sidecars: dict[str, bytes] = {}
    for name in QUANT_SIDECARS:
        sp = folder / name
        if sp.is_file() and sp.stat().st_size <= MAX_CONFIG_BYTES:
            try:
                sidecars[name] = sp.read_bytes()
            except OSError:
                pass
    mid = model_id or (p.name if kind == "folder" else (p.parent.name if p.name == "config.json" else p.stem))
    return data, sidecars, Source(mid or "local", kind, str(p), sidecars=sorted(sidecars))


#: Longest a Hub fetch may take, seconds (``TP_PLANNER_HUB_DEADLINE_S`` overrides): huggingface_hub retries
#: each request with its own timeouts, so a Hub that accepts connections but never answers could otherwise
#: keep the command waiting for minutes.
HUB_DEADLINE_S = 60.0


def _fetch_with_deadline(repo_id: str):
    """:func:`dashboard.hub.fetch_config` bounded by :data:`HUB_DEADLINE_S` (a worker thread; on expiry the
    command gives up with one line and the thread is left to die with the process). huggingface_hub's
    per-retry warnings are silenced: the outcome is reported once, by the caller."""
    import logging
    import threading

    from dashboard import hub

    try:
        deadline = float(os.environ.get("TP_PLANNER_HUB_DEADLINE_S") or HUB_DEADLINE_S)
    except ValueError:
        deadline = HUB_DEADLINE_S
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["ok"] = hub.fetch_config(repo_id, max_bytes=MAX_CONFIG_BYTES)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["err"] = exc

    t = threading.Thread(target=run, name="hub-fetch", daemon=True)
    t.start()
    t.join(max(deadline, 0.1))
    if t.is_alive():
        endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
        raise hub.FetchError("unreachable", f"{repo_id}: the Hub ({printable(endpoint, 100)}) did not answer within "
                                            f"{deadline:g} s; try again later, or give a local config.json")
    if "err" in box:
        raise box["err"]
    return box["ok"]


def load_model(arg: str, *, stdin: Any = None, model_id: str | None = None) -> tuple[dict[str, Any], Source]:
    """The normalized catalog record of MODEL (Hub id, folder, file or ``-``) and where it came from.
    Raises :class:`CheckInputError` for anything that cannot be judged."""
    from dashboard.catalog import normalize_config

    if arg == "-":
        data, sidecars = _read_stdin(stdin if stdin is not None else sys.stdin), {}
        src = Source(model_id or "stdin", "stdin", "<stdin>")
    elif _looks_like_path(arg) or Path(os.path.expanduser(arg)).exists():
        data, sidecars, src = _load_local(arg, model_id)
    else:
        from dashboard import hub

        try:
            got = _fetch_with_deadline(arg.strip())
        except hub.FetchError as e:
            if e.status == "bad_id":
                raise CheckInputError(f"{printable(arg, 120)} is neither a local path nor a Hub repo id "
                                      f"({printable(e.reason, 200)})") from None
            raise CheckInputError(printable(e.reason, 400)) from None
        data, sidecars = got.config, got.sidecars
        src = Source(arg.strip(), "hub", "Hub", got.sha, sorted(sidecars), got.offline)
    rec = normalize_config(data, src.model_id, source="check", sha=src.sha, sidecars=sidecars or None)
    if rec.get("status") != "ok":
        reason = printable(rec.get("status_reason") or rec.get("status"), 300)
        what = (f"Hub repo {printable(src.model_id, 200)}" if src.kind == "hub"
                else f"{src.kind} {printable(src.where or src.model_id, 200)}")
        raise CheckInputError(f"unreadable config ({what}): {reason}")
    return rec, src


# ------------------------------------------------------------------------------------------------
# the check
# ------------------------------------------------------------------------------------------------


@dataclass
class Request:
    framework: str
    tp: int
    pp: int = 1
    dp: int = 1
    ep: int = 1
    expert_parallel: bool = False
    dp_attention: bool = False
    vision_dp: bool = False
    version: str | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    gpu: str | None = None
    max_model_len: int | None = None
    mem_fraction: float | None = None
    launch: Launch | None = None

    def layout(self) -> dict[str, Any]:
        return dict(tp=self.tp, pp=self.pp, dp=self.dp, ep=self.ep, dp_attention=self.dp_attention,
                    expert_parallel=self.expert_parallel, vision_dp=self.vision_dp)


def gpu_count(framework: str, lay: dict[str, Any]) -> int:
    """GPUs a layout occupies: TP x PP x DP, where attention-DP groups live inside the TP group (SGLang
    DP-attention, TensorRT-LLM attention-DP) and so add none."""
    return frameworks.get(framework).gpu_count(lay)


_KV_DTYPES = {"auto": None, "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}


def _kv_dtype(name: str | None, rec: dict[str, Any]) -> str:
    from dashboard.memory import KV_DTYPE_BYTES

    if name is None or name.lower() == "auto":
        td = str(rec.get("torch_dtype") or "bfloat16").lower()
        name = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(td, "bf16")
        return name
    n = _KV_DTYPES.get(name.lower(), name.lower())
    if n not in KV_DTYPE_BYTES:
        raise CheckInputError(f"unknown KV-cache dtype {printable(name, 40)!r}; known: auto, "
                              + ", ".join(sorted(KV_DTYPE_BYTES)))
    return n


def _quant_family(q: str) -> str:
    q = q.lower().replace("-", "_")
    q = q.removeprefix("auto_")
    for suf in ("_marlin_24", "_marlin", "_bitblas"):
        q = q.removesuffix(suf)
    return {"compressed_tensors": "compressed_tensors", "modelopt_fp4": "modelopt", "modelopt_mxfp8": "modelopt",
            "gpt_oss_mxfp4": "mxfp4"}.get(q, q)


@dataclass
class Issue:
    """One reason the framework would not start (a failing rule, or the memory check)."""

    rule_id: str
    message: str
    exc_type: str = ""
    location: str = ""
    source_url: str = ""
    evidence: str = "source"
    ours: bool = False
    kind: str = ""
    condition: str = ""


def _hit_issue(h: Any) -> Issue:
    return Issue(h.rule_id, h.message, h.exc_type, h.location, h.source_url, h.evidence, h.ours, h.kind, h.condition)


def memory_issue(req: Request, release: str | None, cap: dict[str, Any]) -> Issue | None:
    """The start-up failure the framework reports when the layout loads (rules pass) but memory does not
    hold weights plus one ``max_model_len`` sequence, in the framework's words where it has some."""
    fw = req.framework
    ctx = int(cap["context_len"])
    tokens = int(cap["tokens_per_gpu"] or 0)
    gib = lambda b: f"{round(b / _GiB, 2)}"  # noqa: E731 - vLLM's format_gib
    if float(cap["weight_bytes_per_gpu"]) > float(cap["memory_bytes"]):
        return Issue("memory.weights", f"torch.OutOfMemoryError: CUDA out of memory (the weights need "
                     f"{gib(cap['weight_bytes_per_gpu'])} GiB per GPU; {cap['gpu']} has "
                     f"{gib(cap['memory_bytes'])} GiB)", "torch.OutOfMemoryError", ours=True, kind="memory",
                     condition="weight bytes per GPU > GPU memory (the checkpoint does not load)")
    own = frameworks.get(fw).memory_issue(req, release, cap)
    if own is not NotImplemented:
        return None if own is None else Issue(**own)
    if tokens <= 0 or tokens < ctx:
        return Issue(f"memory.{fw}.max_model_len",
                     f"The KV cache holds {max(tokens, 0)} tokens per GPU, fewer than one sequence of {ctx} tokens "
                     f"({schema.FRAMEWORK_LABELS.get(fw, fw)}; budget rule: {cap['budget_rule']}).", ours=True,
                     kind="memory", condition="KV-cache tokens per GPU < max_model_len")
    return None


def _capacity(rec: dict[str, Any], req: Request, lay: dict[str, Any], kv: str) -> dict[str, Any]:
    from dashboard import memory

    return memory.capacity(rec, req.framework, req.gpu, int(lay["tp"]), pp=int(lay["pp"]), ep=int(lay["ep"]),
                           kv_dtype=kv, context_len=req.max_model_len, mem_fraction=req.mem_fraction,
                           dp=int(lay["dp"]), dp_attention=bool(lay["dp_attention"]),
                           expert_parallel=bool(lay["expert_parallel"]), vision_dp=bool(lay["vision_dp"]))


# -- nearest valid layouts ----------------------------------------------------------------------


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _ok_tps(rec, req: Request, sizes: list[int], lay: dict[str, Any]) -> list[int]:
    from dashboard import rules

    if not sizes:
        return []
    kw = {k: lay[k] for k in ("pp", "dp", "ep", "dp_attention", "vision_dp", "expert_parallel")}
    try:
        ok = rules._ok_sizes(rec, req.framework, req.version, np.array(sorted(set(sizes)), dtype=np.int64), **kw)
    except (ValueError, TypeError):
        return []
    return [int(x) for x in ok]


def _fits(rec, req: Request, lay: dict[str, Any], kv: str) -> bool:
    if not req.gpu:
        return True
    try:
        cap = _capacity(rec, req, lay, kv)
    except (ValueError, TypeError):
        return False
    return bool(cap["fits"]) and int(cap["tokens_per_gpu"] or 0) >= int(cap["context_len"]) and \
        float(cap["weight_bytes_per_gpu"]) <= float(cap["memory_bytes"])


def _variants(rec, req: Request, base: dict[str, Any]) -> list[dict[str, Any]]:
    """Expert-parallel / attention-DP settings to try besides the given one (MoE: EP on and off)."""
    from dashboard import rules

    moe = rules._is_moe_record(rec)
    mode = frameworks.get(req.framework).expert_parallel_mode
    if not moe and (base["expert_parallel"] or base["ep"] > 1):
        return [dict(base, expert_parallel=False, ep=1)]  # no experts: expert parallelism is refused
    out = [dict(base)]
    if moe:
        if mode == "flag":
            out.append(dict(base, expert_parallel=not base["expert_parallel"], ep=1))
        elif mode == "size":
            out.append(dict(base, ep=1 if base["ep"] > 1 else -1))  # -1: EP = TP, filled per TP
    return out


def alternatives(rec, req: Request, kv: str, *, limit_same: int = 3) -> list[dict[str, Any]]:
    """Nearest valid layouts: the same GPU count first (other TP/PP/DP/EP splits), then the nearest smaller
    and larger TP with the rest as given. Each must pass the rules and, with a GPU, hold the context."""
    fw = req.framework
    given = req.layout()
    n = gpu_count(fw, given)
    found: list[tuple[tuple, dict[str, Any], str]] = []
    seen: set[tuple] = set()

    def key(lay):
        return tuple(lay[k] for k in ("tp", "pp", "dp", "ep", "dp_attention", "expert_parallel", "vision_dp"))

    def add(lay, why, score):
        k = key(lay)
        if k in seen or k == key(given):
            return
        if not _fits(rec, req, lay, kv):
            return
        seen.add(k)
        found.append((score, lay, why))

    # same GPU count
    fwo = frameworks.get(fw)
    attn_dp_in_tp = given["dp_attention"] and fwo.attention_dp_in_tp
    for pp in _divisors(n):
        rest = n // pp
        if attn_dp_in_tp:
            combos = [(rest, d) for d in ([rest] if fwo.attention_dp_whole_tp else _divisors(rest))]  # (tp, attn-dp)
        else:
            combos = [(t, rest // t) for t in _divisors(rest)]
        by_dp: dict[int, list[int]] = {}
        for t, d in combos:
            by_dp.setdefault(d, []).append(t)
        for d, tps in by_dp.items():
            for var in _variants(rec, req, dict(given, pp=pp, dp=d)):
                groups: dict[int, list[int]] = {}
                for t in tps:
                    groups.setdefault(t if var["ep"] == -1 else 0, []).append(t)
                for g, ts in groups.items():
                    lay_b = dict(var)
                    if var["ep"] == -1:
                        lay_b["ep"] = g
                    for t in _ok_tps(rec, req, ts, lay_b):
                        lay = dict(lay_b, tp=t)
                        if fwo.ep_divides_tp and lay["ep"] > 1 and t % lay["ep"]:
                            continue
                        changed = sum(lay[k] != given[k] for k in ("tp", "pp", "dp", "ep", "expert_parallel"))
                        score = (0, changed, abs(math.log2(t) - math.log2(given["tp"])), lay["pp"], -t)
                        add(lay, "same_gpus", score)
    same = sorted(found, key=lambda x: x[0])[:limit_same]
    # nearest smaller / larger TP, the rest as given
    upper = min(max(64, 2 * given["tp"]), MAX_GPUS)
    base = _variants(rec, req, given)[0]
    tps = _ok_tps(rec, req, list(range(1, upper + 1)), base)
    near: list[tuple[tuple, dict[str, Any], str]] = []
    for t in sorted((x for x in tps if x < given["tp"]), reverse=True):
        lay = dict(base, tp=t)
        if key(lay) not in seen and _fits(rec, req, lay, kv):
            near.append(((1,), lay, "smaller_tp"))
            break
    for t in sorted(x for x in tps if x > given["tp"]):
        lay = dict(base, tp=t)
        if key(lay) not in seen and _fits(rec, req, lay, kv):
            near.append(((2,), lay, "larger_tp"))
            break
    out = []
    for _, lay, why in same + near:
        out.append(dict(why=why, gpus=gpu_count(fw, lay), **lay))
    return out


def context_issue(rec: dict[str, Any], req: Request) -> Issue | None:
    """The engine's refusal of ``--max-model-len`` / ``--context-length`` above the length it derives from
    the config (:mod:`dashboard.context`: vLLM 0.33.0, SGLang 0.5.23; other frameworks not modelled);
    None when no length is given or it is accepted."""
    if not req.max_model_len or not frameworks.get(req.framework).context_raise_site:
        return None
    msg = context.context_message(req.framework, int(req.max_model_len), rec)
    if not msg:
        return None
    site, rel, url = context.RAISE_SITES[req.framework]
    flag = frameworks.get(req.framework).context_flag
    return Issue(f"context.{req.framework}.max_model_len", msg, "ValueError", site, url, "source", False, "context",
                 f"{flag} {int(req.max_model_len)} > the longest context the engine derives from config.json "
                 f"({context.limit(req.framework, rec)} tokens; {context.__name__} port of {rel})")


def _command_for(req: Request, model: str, lay: dict[str, Any], max_model_len: int | None = None) -> str:
    if req.launch is not None:
        extra = {"max_model_len": max_model_len} if max_model_len else {}
        return req.launch.command_with(version=req.version, **lay, **extra)
    return render_command(req.framework, model, lay, version=req.version, max_model_len=max_model_len)


def run_check(rec: dict[str, Any], src: Source, req: Request) -> dict[str, Any]:
    """The result document (the ``--json`` output, :data:`SCHEMA_VERSION`)."""
    from dashboard import rules

    try:
        fwo = frameworks.get(req.framework)
    except ValueError:
        raise CheckInputError(f"unknown framework {printable(req.framework, 40)!r}; expected one of "
                              + ", ".join(schema.FRAMEWORKS)) from None
    notes: list[str] = []
    if req.launch is not None:
        notes += [printable(n, 300) for n in req.launch.notes]
    rec = dict(rec)
    if req.quantization:
        have = rec.get("quant_method")
        if have and _quant_family(str(have)) != _quant_family(req.quantization):
            if fwo.refuses_quantization_mismatch:
                pass  # a failing rule below
            else:
                notes.append(f"--quantization {req.quantization} differs from the config's {have}; the "
                             "config's is modelled")
        elif not have:
            rec["quant_method"] = req.quantization.lower()
            rec["is_quantized"] = True
            notes.append(f"--quantization {req.quantization}: online quantization of an unquantized checkpoint "
                         "(weights modelled as " + req.quantization.lower() + ")")
    try:
        v = rules.check(rec, req.framework, req.tp, version=req.version, pp=req.pp, dp=req.dp, ep=req.ep,
                        dp_attention=req.dp_attention, vision_dp=req.vision_dp, expert_parallel=req.expert_parallel)
    except ValueError as e:
        raise CheckInputError(printable(e, 300)) from None
    issues = [_hit_issue(h) for h in v.failures]
    if req.quantization and fwo.refuses_quantization_mismatch and rec.get("quant_method") and \
            _quant_family(str(rec["quant_method"])) != _quant_family(req.quantization):
        issues.insert(0, Issue(**fwo.quantization_mismatch_issue(rec["quant_method"], req.quantization, v.release)))
    ctx_issue = context_issue(rec, req)
    if ctx_issue is not None:
        issues.insert(0, ctx_issue)  # ModelConfig raises it before any parallel-layout check
    kv = _kv_dtype(req.kv_cache_dtype, rec)
    mem = None
    if req.gpu:
        try:
            cap = _capacity(rec, req, req.layout(), kv)
        except ValueError as e:
            raise CheckInputError(printable(e, 300)) from None
        mi = memory_issue(req, v.release, cap) if not issues else None
        if mi is None and issues:
            mi = None
        mem = {
            "gpu": cap["gpu"], "gpu_memory_bytes": int(cap["memory_bytes"]), "kv_cache_dtype": kv,
            "mem_fraction": cap.get("fraction"), "budget_rule": cap["budget_rule"],
            "max_model_len": int(cap["context_len"]),
            "weight_bytes_per_gpu": int(cap["weight_bytes_per_gpu"]),
            "kv_budget_bytes_per_gpu": int(cap["kv_budget_bytes_per_gpu"]),
            "kv_bytes_per_token_per_gpu": int(cap["kv_bytes_per_token_per_rank"]),
            "kv_tokens_per_gpu": int(cap["tokens_per_gpu"] or 0),
            "sequences_at_max_model_len": int(cap["concurrent_sequences"] or 0),
            "holds_max_model_len": bool(cap["fits"]) and int(cap["tokens_per_gpu"] or 0) >= int(cap["context_len"]),
        }
        if mi is not None:
            issues.append(mi)
            mem["holds_max_model_len"] = False
    accepted = not issues
    lay = req.layout()
    alts: list[dict[str, Any]] = []
    if not accepted:
        # a context refusal: every layout meets it, so the nearest layouts are planned at the model's length
        lim = context.limit(req.framework, rec) if ctx_issue is not None else None
        areq = replace(req, max_model_len=lim) if lim else req
        if lim and len(issues) == 1:
            if _fits(rec, areq, lay, kv):
                alts.append(dict(why="model_context", gpus=gpu_count(req.framework, lay), **lay, max_model_len=lim,
                                 command=printable(_command_for(req, src.model_id, lay, lim), 4000)))
        elif ctx_issue is None or lim:
            for a in alternatives(rec, areq, kv):
                a["command"] = printable(_command_for(req, src.model_id, {k: a[k] for k in lay}, lim), 4000)
                if lim:
                    a["max_model_len"] = lim
                alts.append(a)
        if mem is not None and not v.failures and mem["kv_tokens_per_gpu"] > 0 and \
                mem["kv_tokens_per_gpu"] < mem["max_model_len"]:
            block = fwo.kv_block_tokens
            fit_len = mem["kv_tokens_per_gpu"] // block * block
            if fit_len > 0:
                alts.append(dict(why="shorter_context", gpus=gpu_count(req.framework, lay), **lay,
                                 max_model_len=fit_len,
                                 command=printable(_command_for(req, src.model_id, lay, fit_len), 4000)))
    warnings = [printable(w.message, 600) for w in v.warnings]
    unmodeled = sorted(set(req.launch.unmodeled)) if req.launch is not None else []
    if unmodeled:
        warnings.append("not modelled (ignored): " + " ".join(printable(u, 60) for u in unmodeled))
    warnings += fwo.check_warnings(req.launch, v.release, req.dp)
    issue_dicts = [{k: printable(val, 3000) if isinstance(val, str) else val for k, val in asdict(i).items()}
                   for i in issues]
    return {
        "schema_version": SCHEMA_VERSION,
        "verdict": "accepted" if accepted else "refused",
        "exit_status": 0 if accepted else 1,
        "model": {"id": printable(src.model_id, 300), "source": src.kind, "path": printable(src.where, 500),
                  "sha": src.sha, "sidecars": src.sidecars, "offline": src.offline},
        "framework": req.framework,
        "framework_label": schema.FRAMEWORK_LABELS[req.framework],
        "version_requested": req.version,
        "release": v.release,
        "executed": bool(v.executed),
        "evidence": v.evidence,
        "layout": dict(lay, gpus=gpu_count(req.framework, lay),
                       # the expert-parallel size the framework uses: vLLM's --enable-expert-parallel is TP x DP
                       ep=fwo.ep_group(lay)),
        "status": v.status if accepted or v.failures else "invalid",
        "attn_tp": v.attn_tp,
        "q_heads_per_gpu": v.q_heads_per_rank,
        "kv_heads_per_gpu": v.kv_heads_per_rank,
        "first_error": issue_dicts[0] if issue_dicts else None,
        "failures": issue_dicts,
        "memory": mem,
        "alternatives": alts,
        "suggestions": [printable(s, 600) for s in v.suggestions],
        "warnings": warnings,
        "notes": notes + ([printable(v.notice, 300)] if v.notice else []),
        "error": None,
    }


# ------------------------------------------------------------------------------------------------
# text output
# ------------------------------------------------------------------------------------------------


def _gib(b: float) -> str:
    return f"{b / _GiB:.1f} GiB"


def render_text(doc: dict[str, Any]) -> str:
    lay = doc["layout"]
    fwl = doc["framework_label"]
    rel = f" {doc['release']}" if doc["release"] else ""
    parts = [f"tp={lay['tp']}", f"pp={lay['pp']}", f"dp={lay['dp']}"]
    if lay["ep"] > 1:
        parts.append(f"ep={lay['ep']}")
    if lay["expert_parallel"]:
        parts.append("expert-parallel")
    if lay["dp_attention"]:
        parts.append("dp-attention")
    if lay["vision_dp"]:
        parts.append("vision-dp")
    head = "ACCEPTED" if doc["verdict"] == "accepted" else "REFUSED"
    m = doc["model"]
    where = m["source"] + (f" @ {m['sha'][:12]}" if m.get("sha") else "") + (" (offline cache)" if m.get("offline") else "")
    lines = [f"{head}: {m['id']} on {fwl}{rel}, {' '.join(parts)} ({lay['gpus']} GPU{'s' if lay['gpus'] != 1 else ''})",
             f"  config: {where}" + (f"; quantization read from {', '.join(m['sidecars'])}" if m["sidecars"] else "")]
    ev = (f"rules checked against {fwl}{rel}'s own code run over the catalog (conformance table)"
          if doc["evidence"] == "executed" else f"rules read from {fwl}{rel} source (not executed)")
    lines.append(f"  evidence: {ev}")
    fails = doc["failures"]
    if fails:
        lines.append("")
        lines.append(f"{fwl} stops at the first error" + (f" ({len(fails)} failing checks):" if len(fails) > 1 else ":"))
        for i, f in enumerate(fails, 1):
            msg = f["message"]
            if f["exc_type"] and not msg.startswith(f["exc_type"]) and not f["ours"]:
                msg = f"{f['exc_type']}: {msg}"
            lines.append(f"  {i}. {msg}" + ("  [our wording]" if f["ours"] else ""))
            at = f["location"] and f["location"] not in msg and f"at {f['location']}"
            src = " ".join(x for x in (at, f["source_url"]) if x)
            if src:
                lines.append(f"     {src}")
            if f["ours"] or "no message" in f["message"] or f["kind"] == "memory":
                if f["condition"]:
                    lines.append(f"     why: {f['condition']}")
    mem = doc["memory"]
    if mem:
        lines.append("")
        lines.append(f"Memory on {mem['gpu']} (KV cache {mem['kv_cache_dtype']}, max-model-len {mem['max_model_len']}):")
        lines.append(f"  weights {_gib(mem['weight_bytes_per_gpu'])}/GPU, KV budget {_gib(max(mem['kv_budget_bytes_per_gpu'], 0))}/GPU, "
                     f"{mem['kv_bytes_per_token_per_gpu']:,} B/token/GPU")
        lines.append(f"  KV tokens per GPU: {mem['kv_tokens_per_gpu']:,}; sequences of {mem['max_model_len']:,} tokens: "
                     f"{mem['sequences_at_max_model_len']:,}")
    if doc["alternatives"]:
        lines.append("")
        lines.append("Nearest valid layouts:" if mem else
                     "Nearest valid layouts (rules only: memory not checked; add --gpu to keep only layouts that fit):")
        label = {"same_gpus": "same {g} GPUs", "smaller_tp": "smaller TP ({g} GPUs)",
                 "larger_tp": "larger TP ({g} GPUs)", "shorter_context": "shorter context",
                 "model_context": "the model's context"}
        for a in doc["alternatives"]:
            lines.append(f"  {label[a['why']].format(g=a['gpus'])}: {a['command']}")
    elif doc["verdict"] == "refused":
        lines.append("")
        lines.append("No valid layout found nearby.")
    if doc["suggestions"] and doc["verdict"] == "refused":
        lines.append("")
        lines.append("The rules engine suggests:")
        lines += [f"  - {s}" for s in doc["suggestions"]]
    if doc["warnings"] or doc["notes"]:
        lines.append("")
        for w in doc["warnings"]:
            lines.append(f"warning: {w}")
        for n in doc["notes"]:
            lines.append(f"note: {n}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------


def _request(args: argparse.Namespace, launch: Launch | None) -> Request:
    fw = args.framework or (launch.framework if launch else "vllm")
    fw = fw.strip().lower()
    aliases = {"trtllm": "tensorrt-llm", "tensorrt_llm": "tensorrt-llm", "trt-llm": "tensorrt-llm",
               "megatron": "megatron-core", "transformers": "transformers-native-tp"}
    fw = aliases.get(fw, fw)
    if fw not in schema.FRAMEWORKS:
        raise CheckInputError(f"unknown framework {printable(args.framework, 40)!r}; expected one of "
                              + ", ".join(schema.FRAMEWORKS))
    if launch is not None and args.framework and frameworks.get(fw) is not frameworks.get(launch.framework):
        raise CheckInputError(f"--framework {fw} but the launch command is {launch.framework}'s")
    lay = launch.layout() if launch is not None else dict(tp=1, pp=1, dp=1, ep=1, dp_attention=False,
                                                          expert_parallel=False, vision_dp=False)
    if launch is None and args.tp is None:
        raise CheckInputError("give --tp N (and --framework), or a launch command after --")
    for k in ("tp", "pp", "dp"):
        val = getattr(args, k)
        if val is not None:
            lay[k] = parse_size(val, f"--{k}")
    frameworks.get(fw).check_request_layout(lay, ep=args.ep, dp_attention=bool(args.dp_attention))
    if args.vision_dp:
        lay["vision_dp"] = True
    kv = args.kv_cache_dtype or (launch.kv_cache_dtype if launch else None)
    quant = args.quantization or (launch.quantization if launch else None)
    if quant is not None and not re.fullmatch(r"[A-Za-z0-9_.\-]{1,40}", quant):
        raise CheckInputError(f"--quantization: not a quantization name: {printable(quant, 40)!r}")
    mml = parse_len(args.max_model_len) if args.max_model_len is not None else (launch.max_model_len if launch else None)
    frac = parse_fraction(args.mem_fraction, "--gpu-memory-utilization") if args.mem_fraction is not None else (
        launch.mem_fraction if launch else None)
    version = args.version
    if version is not None and not re.fullmatch(r"[A-Za-z0-9_.\-+]{1,40}", version):
        raise CheckInputError(f"--version: not a release or date: {printable(version, 40)!r}")
    gpu = args.gpu
    if gpu is not None:
        from dashboard.memory import resolve_gpu_id

        try:
            gpu = resolve_gpu_id(gpu)  # a table id (any case) or other:<GiB>
        except ValueError as e:
            raise CheckInputError(printable(e, 900)) from None
    if version is not None:
        from dashboard import rules

        try:
            res = rules.resolve_version(fw, version)
        except ValueError as e:
            raise CheckInputError(printable(e, 300)) from None
        check_release(fw, version, res)
    return Request(framework=fw, version=version, kv_cache_dtype=kv, quantization=quant, gpu=gpu, max_model_len=mml,
                   mem_fraction=frac, launch=launch, **lay)


def check_release(fw: str, version: str, res) -> None:
    """A ``--version`` the command line cannot honour is bad input (exit 2), not a silent fallback as in the
    dashboard: text that is neither a release number nor a date, a date before the framework's first
    release, a release number the framework never published (its release list, when one ships)."""
    from dashboard.rules import versions as V

    label = schema.FRAMEWORK_LABELS.get(fw, fw)
    if "is not a release number or a date" in (res.notice or ""):
        if V._DATE.match(str(version).strip()):
            why = (f"{label} had no release by {version}" if V.has_dates(fw)
                   else f"{label} has no release dates here; give a release number")
        else:
            why = "expected a release number (e.g. 0.33.0) or a date (YYYY-MM)"
        raise CheckInputError(f"--version {printable(version, 40)!r}: {why}")
    known = V.listed(fw)
    if known and res.release and not V._DATE.match(str(version).strip()):
        from packaging.version import Version

        if all(Version(res.release) != Version(k) for k in known if V._parse(k) is not None):
            newest = max((k for k in known if V._parse(k) is not None), key=Version)
            raise CheckInputError(f"--version {printable(version, 40)!r}: {label} has no release {res.release} "
                                  f"(newest known: {newest})")


def _split_argv(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def main(argv: Sequence[str] | None = None, *, stdin: Any = None, stdout: Any = None, stderr: Any = None) -> int:
    """``tp-planner check``. Returns the exit status (0 accepted, 1 refused, 2 bad input)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    mine, cmd = _split_argv(args_list)
    as_json = "--json" in mine
    if any(a in ("-h", "--help") for a in mine):
        _parser().print_help(out)
        return 0
    try:
        args = _parser().parse_args(mine)
        launch = None
        if cmd is not None:
            if not cmd:
                raise CheckInputError("nothing after --: expected a launch command (vllm serve MODEL ...)")
            try:
                launch = parse_command(cmd)
            except LaunchError as e:
                raise CheckInputError(printable(e, 400)) from None
        req = _request(args, launch)
        source_arg = args.config or args.model or (launch.model if launch else None)
        if not source_arg:
            raise CheckInputError("no model: give MODEL (Hub id, folder, config.json or -), or a launch command "
                                  "with its MODEL")
        model_id = None
        if args.config and (args.model or (launch and launch.model)):
            model_id = args.model or launch.model
        elif args.model == "-" and launch is not None and launch.model:
            model_id = launch.model
        rec, src = load_model(source_arg, stdin=stdin, model_id=model_id)
        if src.kind == "hub" and launch is not None and launch.model is None:
            launch.model = src.model_id
        doc = run_check(rec, src, req)
    except (CheckInputError, LaunchError) as e:
        msg = printable(e, 600) or "bad input"
        print(f"tp-planner check: error: {msg}", file=err)
        if as_json:
            print(json.dumps({"schema_version": SCHEMA_VERSION, "verdict": "error", "exit_status": 2, "error": msg}),
                  file=out)
        return 2
    except KeyboardInterrupt:
        print("tp-planner check: interrupted", file=err)
        return 130
    except Exception as e:  # noqa: BLE001 - one line, never a traceback (TP_PLANNER_DEBUG=1 re-raises)
        if os.environ.get("TP_PLANNER_DEBUG"):
            raise
        print(f"tp-planner check: error: internal error: {type(e).__name__}: {printable(e, 300)}", file=err)
        return 2
    if as_json:
        print(json.dumps(doc, indent=2, default=str), file=out)
    else:
        print(render_text(doc), file=out)
    return int(doc["exit_status"])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
