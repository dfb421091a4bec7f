"""``tp-planner check``: the thin command (argument parsing, the request, then :func:`run_check`)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Sequence

from dashboard import frameworks, schema
from dashboard.launch import Launch, LaunchError, parse_command, parse_fraction, parse_len, parse_size
from dashboard.check.common import CheckInputError, SCHEMA_VERSION, printable
from dashboard.check.judge import run_check
from dashboard.check.request import Request
from dashboard.check.source import load_model
from dashboard.check.text import render_text
from dashboard.terminal import safe_text


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
    ap.add_argument("--refresh", action="store_true",
                    help="fetch the Hub's current config.json even when the shipped catalog has the model (by "
                         "default a catalog model is answered from the catalog, with no network)")
    ap.add_argument("--json", action="store_true", help="print a machine-readable result (schema_version "
                                                        f"{SCHEMA_VERSION})")
    return ap


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
        if V.DATE_PATTERN.match(str(version).strip()):
            why = (f"{label} had no release by {version}" if V.has_dates(fw)
                   else f"{label} has no release dates here; give a release number")
        else:
            why = "expected a release number (e.g. 0.33.0) or a date (YYYY-MM)"
        raise CheckInputError(f"--version {printable(version, 40)!r}: {why}")
    known = V.listed(fw)
    if known and res.release and not V.DATE_PATTERN.match(str(version).strip()):
        from packaging.version import Version

        if all(Version(res.release) != Version(k) for k in known if V.parse_release(k) is not None):
            newest = max((k for k in known if V.parse_release(k) is not None), key=Version)
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
    from dashboard.environment import environment_errors

    bad_env = environment_errors()
    if bad_env:  # one line per variable, before any other work
        for line in bad_env:
            print(f"tp-planner check: error: {line}", file=err)
        if as_json:
            print(json.dumps({"schema_version": SCHEMA_VERSION, "verdict": "error", "exit_status": 2,
                              "error": "; ".join(bad_env)}), file=out)
        return 2
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
        rec, src = load_model(source_arg, stdin=stdin, model_id=model_id, refresh=args.refresh)
        if src.kind in ("hub", "catalog") and launch is not None and launch.model is None:
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
        print(safe_text(render_text(doc), keep_newlines=True), file=out)  # the line breaks are ours
    return int(doc["exit_status"])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
