"""Run inside a framework's venv (stdlib + the framework only): build the serve command's argument parser
exactly as the framework's own entry point builds it, and print its spec as JSON on stdout.

    python conformance/flags_worker.py spec vllm|sglang|transformers
    python conformance/flags_worker.py probe vllm|sglang|transformers ARG ...   # the real CLI, its stderr

``spec`` captures the parser the entry point itself constructs: the entry point's ``parse_args`` is
replaced by a function that records the parser and stops, so every ``add_argument`` the release makes
(vLLM's ``EngineArgs.add_cli_args`` from dataclass fields, SGLang's ``ServerArgs.add_cli_args``) has run.
``probe`` runs the real entry point on arguments that fail to parse, so the error line is the engine's
own (nothing starts: argparse exits before any server code runs).
"""

from __future__ import annotations

import argparse
import json
import sys


class _Captured(Exception):
    pass


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    val = getattr(v, "value", None)  # enum members
    if isinstance(val, (str, int, float)):
        return val
    return repr(v)


def _type_name(t) -> str | None:
    if t is None:
        return None
    name = getattr(t, "__name__", None) or type(t).__name__
    mod = getattr(t, "__module__", "") or ""
    return name if mod == "builtins" else f"{mod}.{name}"


def _kind(a: argparse.Action) -> str:
    for cls, kind in ((argparse.BooleanOptionalAction, "boolean_optional"), (argparse._StoreTrueAction, "store_true"),
                      (argparse._StoreFalseAction, "store_false"), (argparse._StoreConstAction, "store_const"),
                      (argparse._AppendConstAction, "append_const"), (argparse._AppendAction, "append"),
                      (argparse._CountAction, "count"), (argparse._HelpAction, "help"),
                      (argparse._VersionAction, "version"), (argparse._ExtendAction, "extend"),
                      (argparse._StoreAction, "store"), (argparse._SubParsersAction, "parsers")):
        if isinstance(a, cls):
            return kind
    return "custom"


def _action(a: argparse.Action) -> dict:
    help_text = a.help if isinstance(a.help, str) else ""
    first = help_text.strip().splitlines()[0] if help_text.strip() else ""
    deprecated = bool(getattr(a, "deprecated", False)) or "deprecated" in help_text.lower()
    return {
        "option_strings": list(a.option_strings),
        "dest": a.dest,
        "action": _kind(a),
        "action_class": f"{type(a).__module__}.{type(a).__name__}",
        "nargs": a.nargs if a.nargs is None or isinstance(a.nargs, (int, str)) else str(a.nargs),
        "takes_value": a.nargs != 0,
        "type": _type_name(a.type),
        "choices": None if a.choices is None else [_jsonable(c) for c in a.choices],
        "default": _jsonable(a.default) if a.default is not argparse.SUPPRESS else "==SUPPRESS==",
        "const": _jsonable(a.const),
        "required": bool(a.required),
        "metavar": _jsonable(a.metavar),
        "deprecated": deprecated,
        "help": first[:300],
    }


def spec_of(parser: argparse.ArgumentParser) -> dict:
    flags, positionals = [], []
    for a in parser._actions:
        (flags if a.option_strings else positionals).append(_action(a))
    return {"prog": parser.prog, "allow_abbrev": parser.allow_abbrev, "prefix_chars": parser.prefix_chars,
            "parser_class": f"{type(parser).__module__}.{type(parser).__name__}",
            "flags": flags, "positionals": positionals}


def _capture(cls, argv: list[str], run) -> argparse.ArgumentParser:
    """The parser ``run()`` builds and hands to ``cls.parse_args`` (or parse_known_args)."""
    box = {}

    def grab(self, *a, **k):
        box["parser"] = self
        raise _Captured

    saved = (cls.parse_args, cls.parse_known_args)
    cls.parse_args = grab
    old_argv = sys.argv
    sys.argv = argv
    try:
        run()
    except _Captured:
        pass
    finally:
        cls.parse_args, cls.parse_known_args = saved
        sys.argv = old_argv
    return box["parser"]


def _vllm_cpu_platform() -> None:
    """vLLM's CPU platform before anything imports ``current_platform`` (no GPU here; the parser's
    defaults build an EngineArgs, which asks the platform its device type)."""
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    platforms._current_platform = CpuPlatform()


def vllm_spec() -> dict:
    _vllm_cpu_platform()
    from vllm.entrypoints.cli import main as cli_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = _capture(FlexibleArgumentParser, ["vllm", "serve", "MODEL"], cli_main.main)
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    serve = sub.choices["serve"]
    out = spec_of(serve)
    out["top_prog"] = top.prog
    out["launchers"] = {"vllm serve": {"prog": serve.prog, "positional_model": True}}
    out["underscore_to_dash"] = True
    out["platform"] = "cpu (vLLM's CpuPlatform: platform-dependent defaults are the CPU's)"
    return out


def sglang_spec() -> dict:
    import sglang.srt.server_args as sa

    # the parser prepare_server_args builds (python -m sglang.launch_server and sglang serve both call it)
    parser = _capture(argparse.ArgumentParser, ["sglang", "serve"],
                      lambda: sa.prepare_server_args(["--model-path", "MODEL"]))
    out = spec_of(parser)
    out["launchers"] = {"python -m sglang.launch_server": {"prog": parser.prog, "positional_model": False},
                        "sglang serve": {"prog": parser.prog, "positional_model": False}}
    out["underscore_to_dash"] = False
    return out


def _probe_vllm(args: list[str]) -> None:
    _vllm_cpu_platform()
    from vllm.entrypoints.cli import main as cli_main

    sys.argv = ["vllm", *args]
    cli_main.main()


def _probe_sglang(args: list[str]) -> None:
    import runpy

    sys.argv = ["launch_server.py", *args]
    runpy.run_module("sglang.launch_server", run_name="__main__")


#: framework -> (spec builder, probe runner)
ENTRY = {"vllm": (lambda: vllm_spec(), _probe_vllm), "sglang": (lambda: sglang_spec(), _probe_sglang)}


def main() -> None:
    what, fw, *rest = sys.argv[1:]
    build, run_probe = ENTRY[fw]
    if what == "probe":
        run_probe(rest)
        return
    spec = build()
    json.dump(spec, sys.stdout, indent=1, sort_keys=False)


if __name__ == "__main__":
    main()
