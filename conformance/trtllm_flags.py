"""TensorRT-LLM's ``trtllm-serve`` flags, read from source: ``data/flags/tensorrt-llm-<release>.json``.

    python -m conformance.trtllm_flags --source /tmp/serve.py --commit <40 hex> --release 1.2.1 \\
        --click-python /tmp/click832/bin/python --write

TensorRT-LLM cannot be installed here (every PyPI upload of 1.x is a ``wheel_stub`` sdist that fetches the
real wheel from NVIDIA's own index, and it needs CUDA to import), so its parser cannot be executed. Its
``serve`` command is a click command (``tensorrt_llm/commands/serve.py``: ``@click.command("serve")`` with
``@click.argument("model")`` and one ``@click.option`` per flag, under ``main = DefaultGroup(...)``, whose
``resolve_command`` runs ``serve`` when the first argument is not a subcommand name). This script reads
that file's text (``--source``: a copy of the file, or of its ``serve`` decorators and the ``DefaultGroup``,
fetched by the maintainer; no upstream code is kept in this repository) with :mod:`ast`, never imports it,
and writes the spec in the schema of ``data/flags/README.md`` with ``"evidence": "source"``.

Choices that the source computes at import time from other modules (``click.Choice(severity_map.keys())``)
are not resolved: the spec keeps the expression (``choices_from``) and the product accepts any value there.
Defaults that are expressions (``BuildConfig.model_fields[...]``) are kept as text (``default_expr``).

``--click-python``: a Python with the click release whose messages the spec records (TensorRT-LLM's
requirements.txt lists ``click`` without a version; see ``CLICK_NOTE``). The probes are that click run on a
click command rebuilt from the spec (a group with the source's ``DefaultGroup`` rule and the ``serve``
command's options): click's own error text for each, which the product's click emulation
(:mod:`dashboard.flagspec`) must print word for word. TensorRT-LLM itself is not run.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "data" / "flags"
REPO_URL = "https://github.com/NVIDIA/TensorRT-LLM"
SOURCE_PATH = "tensorrt_llm/commands/serve.py"

#: Why the click release below (TensorRT-LLM pins none).
CLICK_NOTE = ("TensorRT-LLM's requirements.txt lists 'click' with no version, so the installed click decides the "
              "message text; the messages are those of click {click}, the newest click on PyPI on the release's "
              "date ({date}). click 8.4+ words an unknown option differently (\"No such option '--x'.\").")

#: Arguments after ``trtllm-serve`` that fail to parse: the rebuilt command's click error for each.
PROBES = [
    ["MODEL", "--tp_sizee", "8"],
    ["MODEL", "--tp_size", "four"],
    ["MODEL", "--tp_size"],
    ["MODEL", "--kv_cache_free_gpu_memory_fraction", "most"],
    ["MODEL", "--backend", "tensorrt_llm"],
    ["MODEL", "--trust_remote_code=yes"],
    ["MODEL", "--max_seq"],
    ["MODEL", "-tp", "8"],
    ["MODEL", "EXTRA"],
    ["--tp_size", "8"],
    ["serve", "--tp_size", "8"],
    ["serve", "MODEL", "--tensor-parallel-size", "8"],
    ["MODEL", "--tp_size=", "--pp_size", "2"],
]


def _lit(node: ast.AST) -> Any:
    return ast.literal_eval(node)


def _text(src: str, node: ast.AST) -> str:
    return ast.get_source_segment(src, node) or ast.unparse(node)


def _help(src: str, node: ast.AST | None) -> tuple[str, str]:
    """(help text, stability tag) of a ``help=`` value: a string, or ``help_info_with_stability_tag(s, tag)``."""
    if node is None:
        return "", ""
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "help_info_with_stability_tag":
        return str(_lit(node.args[0])), str(_lit(node.args[1]))
    try:
        return str(_lit(node)), ""
    except ValueError:
        return _text(src, node), ""


def _type(src: str, node: ast.AST | None) -> dict[str, Any]:
    """``type`` (int/float/str/path), ``choices`` (a literal list, or None with ``choices_from``)."""
    if node is None:
        return {"type": "str", "choices": None}
    if isinstance(node, ast.Name) and node.id in ("int", "float", "str"):
        return {"type": node.id, "choices": None}
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in ("Choice", "ChoiceWithAlias"):
            out: dict[str, Any] = {"type": "str", "click_type": name}
            try:
                out["choices"] = list(_lit(node.args[0]))
            except ValueError:
                out["choices"] = None
                out["choices_from"] = _text(src, node.args[0])
            if name == "ChoiceWithAlias" and len(node.args) > 1:
                out["aliases"] = dict(_lit(node.args[1]))
            return out
        if name == "Path":
            return {"type": "path", "choices": None, "click_type": _text(src, node)}
    return {"type": _text(src, node), "choices": None}


def _option(src: str, call: ast.Call) -> dict[str, Any]:
    names = [_lit(a) for a in call.args]
    opts = [n for n in names if n.startswith("-")]
    dest_given = [n for n in names if not n.startswith("-")]
    kw = {k.arg: k.value for k in call.keywords}
    is_flag = "is_flag" in kw and bool(_lit(kw["is_flag"]))
    multiple = "multiple" in kw and bool(_lit(kw["multiple"]))
    # click's name: the explicit one, else the first long option's (the longest prefix), dashes -> underscores
    dest = dest_given[0] if dest_given else max(opts, key=lambda o: len(o) - len(o.lstrip("-"))).lstrip("-").replace("-", "_")
    help_, tag = _help(src, kw.get("help"))
    typ = {"type": "bool", "choices": None} if is_flag else _type(src, kw.get("type"))
    entry: dict[str, Any] = {
        "option_strings": opts, "dest": dest,
        "action": "store_true" if is_flag else ("append" if multiple else "store"),
        "nargs": None if is_flag else 1, "takes_value": not is_flag, **typ,
        "deprecated": tag == "deprecated", "stability": tag, "help": help_.splitlines()[0] if help_ else "",
    }
    if "default" in kw:
        try:
            entry["default"] = _lit(kw["default"])
        except ValueError:
            entry["default"] = None
            entry["default_expr"] = _text(src, kw["default"])
    else:
        entry["default"] = False if is_flag else None
    return entry


def read(src: str, command: str = "serve") -> dict[str, Any]:
    """The ``command`` click command of a serve.py text: its options, argument and the group rule.
    Raises ValueError when the file has no such decorated function."""
    tree = ast.parse(src)
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == command), None)
    if fn is None:
        raise ValueError(f"no function {command!r} in the source")
    flags, positionals, cmd_name = [], [], None
    for dec in reversed(fn.decorator_list):  # click applies the bottom decorator first; params keep the top order
        if not isinstance(dec, ast.Call) or not isinstance(dec.func, ast.Attribute):
            continue
        kind = dec.func.attr
        if kind == "option":
            flags.append(_option(src, dec))
        elif kind == "argument":
            name = _lit(dec.args[0])
            positionals.append({"dest": name, "metavar": name.upper(), "nargs": 1, "required": True})
        elif kind == "command":
            cmd_name = _lit(dec.args[0]) if dec.args else command
    flags.reverse()
    positionals.reverse()
    if cmd_name is None:
        raise ValueError(f"{command!r} is not a click command in the source")
    group = any(isinstance(n, ast.ClassDef) and n.name == "DefaultGroup" for n in ast.walk(tree))
    subcommands = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "DefaultGroup":
            for k in n.keywords:
                if k.arg == "commands" and isinstance(k.value, ast.Dict):
                    subcommands = [_lit(x) for x in k.value.keys]
    # click adds --help to every command (and the group)
    flags.append({"option_strings": ["--help"], "dest": "help", "action": "help", "nargs": None,
                  "takes_value": False, "type": "bool", "choices": None, "default": False, "deprecated": False,
                  "stability": "", "help": "Show this message and exit."})
    return {"command": cmd_name, "flags": flags, "positionals": positionals, "default_group": group,
            "subcommands": subcommands}


def spec(src: str, *, release: str, commit: str, release_note: str = "") -> dict[str, Any]:
    got = read(src)
    url = f"{REPO_URL}/blob/{commit}/{SOURCE_PATH}"
    prog = f"trtllm-serve {got['command']}"
    return {
        "framework": "tensorrt-llm",
        "release": release,
        "evidence": "source",
        "date": dt.date.today().isoformat(),
        "how": ("python -m conformance.trtllm_flags --source <serve.py> --commit <sha> --release <release> "
                "--click-python <python with click> --write: the serve command's click decorators read with "
                "ast (conformance/trtllm_flags.py), not executed; probes: click run on a command rebuilt from "
                "this spec"),
        "source_url": url,
        "source_commit": commit,
        "source_read_sha256": hashlib.sha256(src.encode()).hexdigest(),  # of the text given to --source
        "release_note": release_note,
        "prog": prog,
        "parser_class": "click",
        "allow_abbrev": False,
        "prefix_chars": "-",
        "underscore_to_dash": False,
        "launchers": {"trtllm-serve": {"prog": prog, "positional_model": True}},
        "group": {"prog": "trtllm-serve", "default_command": got["command"] if got["default_group"] else None,
                  "subcommands": got["subcommands"], "options": ["--help"]},
        "usage": f"Usage: {prog} [OPTIONS] " + " ".join(p["metavar"] for p in got["positionals"]),
        "group_usage": "Usage: trtllm-serve [OPTIONS] COMMAND [ARGS]...",
        "flags": got["flags"],
        "positionals": got["positionals"],
    }


_PROBE = r'''
import json, sys, click
spec = json.loads(sys.stdin.read())
def opt(f):
    kw = {}
    if f["action"] == "help":
        return None
    if not f["takes_value"]:
        kw.update(is_flag=True, default=False)
    else:
        t = f.get("type")
        if f.get("choices") is not None:
            kw["type"] = click.Choice(f["choices"])
        elif t == "int":
            kw["type"] = int
        elif t == "float":
            kw["type"] = float
        else:
            kw["type"] = str
        if f["action"] == "append":
            kw["multiple"] = True
    return click.Option(f["option_strings"] + [f["dest"]], **kw)
params = [p for p in (opt(f) for f in spec["flags"]) if p is not None]
params = [click.Argument([p["dest"]], type=str) for p in spec["positionals"]] + params
serve = click.Command(spec["group"]["default_command"] or "serve", params=params, callback=lambda **k: None)
class DefaultGroup(click.Group):
    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands:
            return "serve", self.commands["serve"], args
        return super().resolve_command(ctx, args)
main = DefaultGroup(commands={"serve": serve})
out = []
for argv in spec["_probes"]:
    try:
        main.main(argv, prog_name="trtllm-serve", standalone_mode=False)
        out.append({"argv": argv, "exit_status": 0, "stderr": ""})
    except click.UsageError as e:
        import io
        buf = io.StringIO()
        e.show(file=buf)
        out.append({"argv": argv, "exit_status": e.exit_code, "stderr": buf.getvalue()})
import importlib.metadata as m
print(json.dumps({"click": m.version("click"), "probes": out}))
'''


def probes(doc: dict[str, Any], python: str) -> dict[str, Any]:
    """Run click (``python``'s) on the command rebuilt from ``doc``; record each probe's error text."""
    payload = json.dumps({**doc, "_probes": PROBES})
    p = subprocess.run([python, "-c", _PROBE], input=payload, capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    got = json.loads(p.stdout)
    recs = []
    for r in got["probes"]:
        lines = [ln for ln in r["stderr"].splitlines() if ln.strip()]
        recs.append({"argv": r["argv"], "args": r["argv"], "exit_status": r["exit_status"],
                     "stderr": r["stderr"], "stderr_last_line": lines[-1] if lines else ""})
    return {"click": got["click"], "probes": recs}


def write(doc: dict[str, Any]) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{doc['framework']}-{doc['release']}.json"
    fd, tmp = tempfile.mkstemp(dir=OUT, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.trtllm_flags", description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="a copy of tensorrt_llm/commands/serve.py (or its serve part)")
    ap.add_argument("--commit", required=True, help="the commit the copy was read at (40 hex digits)")
    ap.add_argument("--release", required=True, help="the release the spec is filed under")
    ap.add_argument("--release-note", default="", help="how the commit relates to the release")
    ap.add_argument("--click-python", required=True, help="a Python with the click release to record")
    ap.add_argument("--click-date", default="", help="the release date the click release was chosen for")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    doc = spec(Path(a.source).read_text(), release=a.release, commit=a.commit, release_note=a.release_note)
    pr = probes(doc, a.click_python)
    doc["click"] = {"version": pr["click"], "pin": "click (no version; requirements.txt)",
                    "note": CLICK_NOTE.format(click=pr["click"], date=a.click_date or "?")}
    doc["probes"] = pr["probes"]
    if a.write:
        print(write(doc))
    else:
        json.dump(doc, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
