"""Launch flags as the engine's own argument parser reads them, rebuilt from the release's flag spec.

The specs (``data/flags/<framework>-<release>.json``) are written by ``python -m conformance flags``
from the parser each executed release's own entry point builds (``"evidence": "executed"``). Pure (reads
those files, no network, no Panel):

* :func:`build_parser` rebuilds an :class:`argparse.ArgumentParser` from a spec: the same prog,
  ``allow_abbrev``, option strings, ``nargs``, choices, value types (``int``/``float``) and flags without a
  value, so argparse's own code decides (abbreviations, ``--flag=value``, a missing value, a bad choice);
* :func:`check` runs it over a launch command's arguments and returns a :class:`FlagReport`: the
  engine's own error line when it refuses (plus "did you mean" over the spec's spellings, and the
  releases that had a flag this one lacks), else the accepted flags;
* a spec with ``"parser_class": "click"`` (TensorRT-LLM's ``trtllm-serve``, read from source) is parsed by
  :func:`click_parse`, a port of click's option parser and parameter processing (click 8.3: ``parser.py``
  ``_OptionParser``, ``core.py`` ``Command.parse_args``, ``types.py`` number and choice conversion,
  ``exceptions.py`` messages) giving click's own ``Error: ...`` line; the spec's probes (click run on a
  command rebuilt from the spec) are the test;
* :func:`takes_value` tells the launch-command reader which flags take no value (``--trust-remote-code``),
  so the token after them is not read as their value.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

__all__ = ["FLAGS_DIR", "FlagReport", "EngineParseError", "load", "releases", "build_parser", "check",
           "resolve", "normalise"]

#: Where the specs live.
FLAGS_DIR = Path(__file__).resolve().parents[1] / "data" / "flags"
_SPEC_NAME = re.compile(r"^(?P<fw>[a-z][a-z0-9\-]*)-(?P<rel>[0-9][A-Za-z0-9.+\-]*)\.json$")


class EngineParseError(Exception):
    """The rebuilt parser refused the arguments; ``str()`` is the engine's own error line."""


@functools.lru_cache(maxsize=None)
def _read(path: str, mtime: float) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def load(framework: str, release: str | None) -> dict[str, Any] | None:
    """The spec of ``framework`` at ``release``, or None when none was written for that release."""
    if not release:
        return None
    p = FLAGS_DIR / f"{framework}-{release}.json"
    if not p.is_file():
        return None
    return _read(str(p), p.stat().st_mtime)


def releases(framework: str) -> list[str]:
    """Releases of ``framework`` that have a spec, oldest first."""
    from packaging.version import InvalidVersion, Version

    out = []
    for p in FLAGS_DIR.glob(f"{framework}-*.json") if FLAGS_DIR.is_dir() else []:
        m = _SPEC_NAME.match(p.name)
        if m and m["fw"] == framework:
            out.append(m["rel"])

    def key(r: str):
        try:
            return (0, Version(r))
        except InvalidVersion:
            return (1, r)

    return sorted(out, key=key)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # the line argparse prints after the usage, as an exception
        raise EngineParseError(f"{self.prog}: error: {message}")

    def exit(self, status: int = 0, message: str | None = None):  # -h / --version: not a refusal
        raise EngineParseError("")


_TYPES = {"int": int, "float": float}


def build_parser(spec: dict[str, Any], launcher: str | None = None) -> argparse.ArgumentParser:
    """An argparse parser that accepts and refuses what the release's parser does (for the launcher's
    prog and positionals; ``launcher`` is a key of ``spec["launchers"]``, default the first)."""
    lau = _launcher(spec, launcher)
    p = _Parser(prog=lau.get("prog") or spec["prog"], allow_abbrev=bool(spec.get("allow_abbrev", True)),
                prefix_chars=spec.get("prefix_chars", "-"), add_help=False)
    for f in spec["flags"]:
        opts = [o for o in f["option_strings"]]
        if not opts:
            continue
        kw: dict[str, Any] = {"dest": f["dest"]}
        if f["action"] in ("help", "version"):
            kw.update(action="store_const", const=True)  # the engine prints and exits: no refusal
        elif not f["takes_value"]:
            kw.update(action="count" if f["action"] == "count" else "store_const", const=True)
        else:
            nargs = f["nargs"]
            if nargs == "A...":
                nargs = argparse.REMAINDER
            if nargs is not None:
                kw["nargs"] = nargs
            if f["action"] in ("append", "extend"):
                kw["action"] = "append"
            typ = _TYPES.get(f.get("type") or "")
            if f.get("choices") is not None:
                if typ is not None and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in f["choices"]):
                    kw["choices"] = list(f["choices"])
                else:
                    typ = None
                    kw["choices"] = [c if isinstance(c, str) else str(c) for c in f["choices"]]
            if typ is not None:
                kw["type"] = typ
            if f.get("required"):
                kw["required"] = True
        p.add_argument(*opts, **kw)
    for pos in spec.get("positionals", []):
        if pos.get("action") == "parsers":
            continue
        if pos["dest"] == "model_tag" and not lau.get("positional_model", True):
            continue
        p.add_argument(pos["dest"], nargs=pos.get("nargs"))
    return p


def _launcher(spec: dict[str, Any], launcher: str | None) -> dict[str, Any]:
    lau = spec.get("launchers") or {}
    if launcher and launcher in lau:
        return lau[launcher]
    return next(iter(lau.values()), {})


def spellings(spec: dict[str, Any]) -> list[str]:
    return [o for f in spec["flags"] for o in f["option_strings"]]


def normalise(spec: dict[str, Any] | None, token: str) -> str:
    """A token as the engine's parser sees it before argparse: vLLM's ``FlexibleArgumentParser`` writes
    ``--max_model_len`` as ``--max-model-len`` (the part before ``=``), and reads
    ``--compilation-config.mode=3`` as a JSON key of ``--compilation-config``."""
    if not spec or not spec.get("underscore_to_dash") or not token.startswith("--"):
        return token
    name, eq, val = token.partition("=")
    name = "--" + name[2:].replace("_", "-")
    return name + eq + val


def _dot_base(spec: dict[str, Any], token: str) -> str | None:
    """``--compilation-config.mode`` -> ``--compilation-config`` when that flag exists (vLLM)."""
    if not spec or not spec.get("underscore_to_dash") or not token.startswith("--"):
        return None
    name = token.partition("=")[0]
    if "." not in name:
        return None
    base = name.split(".", 1)[0]
    return base if base in set(spellings(spec)) else None


def resolve(spec: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The spec entry a flag name (as normalised, without ``=value``) selects: an exact spelling, else a
    unique prefix of a long spelling where the parser allows abbreviations (argparse's rule)."""
    by = {o: f for f in spec["flags"] for o in f["option_strings"]}
    if name in by:
        return by[name]
    base = _dot_base(spec, name)
    if base:
        return by[base]
    if spec.get("allow_abbrev", True) and name.startswith("--") and len(name) > 2:
        hits = {id(f): f for o, f in by.items() if o.startswith(name) and o.startswith("--")}
        if len(hits) == 1:
            return next(iter(hits.values()))
    return None


@dataclass
class FlagReport:
    """What the release's parser makes of a launch command's arguments."""

    framework: str
    release: str | None
    #: "executed" (the spec came from the release's own parser), "source", or "not checked" (no spec)
    evidence: str
    #: the engine's own error line ('' when it parses)
    error: str = ""
    #: "did you mean" spellings for the offending flag
    suggestions: list[str] = field(default_factory=list)
    #: e.g. "--foo was accepted by vLLM 0.22.0 (not by 0.33.0)"
    history: list[str] = field(default_factory=list)
    #: flags (as written) the parser accepted
    accepted: list[str] = field(default_factory=list)
    #: releases of this framework that have a spec
    spec_releases: list[str] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return bool(self.error)


def _prepare(spec: dict[str, Any], args: Sequence[str]) -> list[str]:
    out = []
    for t in args:
        t = normalise(spec, t)
        base = _dot_base(spec, t)
        if base:  # --compilation-config.mode=3 -> --compilation-config {"mode": ...} (any value parses)
            _, eq, _v = t.partition("=")
            t = base + ("={}" if eq else "")
        out.append(t)
    return out


def _click_repr(v: str) -> str:
    return repr(v)


def _click_hint(f: dict[str, Any]) -> str:
    return " / ".join(f"'{o}'" for o in f["option_strings"])


def _click_convert(f: dict[str, Any], value: str) -> str | None:
    """click's message for a value the parameter's type refuses (None when it converts)."""
    typ = f.get("type")
    if f.get("choices") is not None:
        value = (f.get("aliases") or {}).get(value, value)  # TensorRT-LLM's ChoiceWithAlias
        ch = [str(c) for c in f["choices"]]
        if value in ch:
            return None
        s = ", ".join(map(repr, ch))
        return f"{_click_repr(value)} is not {s}." if len(ch) == 1 else f"{_click_repr(value)} is not one of {s}."
    if typ in ("int", "float"):
        try:
            int(value) if typ == "int" else float(value)
            return None
        except ValueError:
            return f"{_click_repr(value)} is not a valid {'integer' if typ == 'int' else 'float'}."
    return None


def click_parse(spec: dict[str, Any], args: Sequence[str], *, subcommand_written: bool = False) -> None:
    """Parse ``args`` (after ``trtllm-serve`` [``serve``]) as click does for the spec's command; raises
    :class:`EngineParseError` whose text is click's ``Error: ...`` line (``--help`` is not a refusal).

    The group (``DefaultGroup``: the default command runs when the first argument is not a subcommand)
    parses options before the subcommand name with only ``--help``: ``trtllm-serve --tp_size 8 MODEL`` is
    refused by the group. Then, as click's ``_OptionParser``: ``--`` ends options; a token starting with
    ``-`` (longer than 1) is an option: ``--name=value`` splits at ``=``; a long name matches exactly (no
    abbreviations) or is "No such option" with ``difflib.get_close_matches`` over the long options; a
    single-dash token falls back to short options character by character; a value-taking option takes the
    next token whatever it is; a flag given ``=value`` is refused. Then each parameter, in the order given
    (the argument last), is converted (integer, float, choice); then a missing MODEL, then extra arguments."""
    group = spec.get("group") or {}
    if not subcommand_written and group:
        toks = list(args)
        if toks and toks[0].startswith("-") and len(toks[0]) > 1 and toks[0] != "--":
            name = toks[0].split("=", 1)[0]
            if name in group.get("options", ["--help"]):
                raise EngineParseError("")
            if name[:2] == "--":
                near = difflib.get_close_matches(name, group.get("options", ["--help"]))
                raise EngineParseError("Error: " + _no_such(name, near))
            raise EngineParseError("Error: " + _no_such("-" + name[1:2], []))
    longs = {o: f for f in spec["flags"] for o in f["option_strings"] if o.startswith("--")}
    shorts = {o: f for f in spec["flags"] for o in f["option_strings"] if not o.startswith("--")}
    values: dict[str, list[str]] = {}
    order: list[str] = []
    largs: list[str] = []
    rargs = list(args)
    helped = False
    while rargs:
        arg = rargs.pop(0)
        if arg == "--":
            break
        if arg[:1] == "-" and len(arg) > 1:
            opt, eq, explicit = arg.partition("=")
            f = longs.get(opt)
            if f is None:
                if arg[:2] != "--":  # short options, character by character
                    for ch in arg[1:]:
                        sf = shorts.get("-" + ch)
                        if sf is None:
                            raise EngineParseError("Error: " + _no_such("-" + ch, []))
                    continue
                raise EngineParseError("Error: " + _no_such(opt, difflib.get_close_matches(opt, list(longs))))
            if f["action"] == "help":
                helped = True
                continue
            if f["takes_value"]:
                if eq:
                    rargs.insert(0, explicit)
                if not rargs:
                    raise EngineParseError(f"Error: Option {opt!r} requires an argument.")
                values.setdefault(f["dest"], []).append(rargs.pop(0))
            elif eq:
                raise EngineParseError(f"Error: Option {opt!r} does not take a value.")
            else:
                values.setdefault(f["dest"], []).append("")
            if f["dest"] not in order:
                order.append(f["dest"])
            continue
        largs.append(arg)
    largs += rargs
    if helped:
        raise EngineParseError("")  # --help prints and exits 0 (eager)
    by_dest = {f["dest"]: f for f in spec["flags"]}
    for dest in order:  # invocation order; the last value of a single-value option is the one kept
        f = by_dest[dest]
        vals = values[dest] if f["action"] == "append" else values[dest][-1:]
        for v in vals:
            if f["takes_value"]:
                msg = _click_convert(f, v)
                if msg:
                    raise EngineParseError(f"Error: Invalid value for {_click_hint(f)}: {msg}")
    pos = [p for p in spec.get("positionals", [])]
    for p in pos:
        if largs:
            largs.pop(0)
        elif p.get("required", True):
            raise EngineParseError(f"Error: Missing argument '{p.get('metavar') or p['dest'].upper()}'.")
    if largs:
        word = "argument" if len(largs) == 1 else "arguments"
        raise EngineParseError(f"Error: Got unexpected extra {word} ({' '.join(largs)})")


def _no_such(name: str, possibilities: list[str]) -> str:
    """click 8.3 ``NoSuchOption.format_message``."""
    msg = f"No such option: {name}"
    if not possibilities:
        return msg
    s = ", ".join(sorted(possibilities))
    return f"{msg} Did you mean {s}?" if len(possibilities) == 1 else f"{msg} (Possible options: {s})"


def check(framework: str, release: str | None, args: Sequence[str], *, launcher: str | None = None,
          label: str | None = None, subcommand_written: bool = False) -> FlagReport:
    """Parse ``args`` (the arguments after the launcher) with ``framework`` ``release``'s rebuilt parser
    (``subcommand_written``: ``trtllm-serve serve ...`` rather than ``trtllm-serve MODEL ...``, click specs)."""
    have = releases(framework)
    spec = load(framework, release)
    rep = FlagReport(framework, release, "not checked" if spec is None else str(spec.get("evidence", "source")),
                     spec_releases=have)
    if spec is None:
        return rep
    try:
        if spec.get("parser_class") == "click":
            click_parse(spec, args, subcommand_written=subcommand_written)
        else:
            build_parser(spec, launcher).parse_args(_prepare(spec, args))
    except EngineParseError as e:
        rep.error = str(e)
        top = spec.get("unrecognized_prog")  # a subcommand's extras are reported by the top parser
        if top and ": error: unrecognized arguments:" in rep.error:
            rep.error = top + rep.error[rep.error.index(": error: "):]
    known = set(spellings(spec))
    for tok in args:
        if not tok.startswith("-") or re.fullmatch(r"-[0-9.]+", tok) or tok in ("-", "--"):
            continue
        name = normalise(spec, tok).partition("=")[0]
        f = resolve(spec, name)
        if f is not None:
            if not rep.error:
                rep.accepted.append(tok.partition("=")[0])
            continue
        if not rep.error:
            continue
        near = difflib.get_close_matches(name, sorted(known), n=2, cutoff=0.7)
        rep.suggestions += [n for n in near if n not in rep.suggestions]
        lab = label or framework
        for other in have:
            if other == release:
                continue
            ospec = load(framework, other)
            if ospec is not None and resolve(ospec, name) is not None:
                rep.history.append(f"{name}: accepted by {lab} {other}, not by {release}")
    return rep


def takes_value(spec: dict[str, Any] | None, name: str) -> bool | None:
    """Whether the flag ``name`` (normalised) takes a value in ``spec``; None when the spec does not know
    it (or there is no spec)."""
    if not spec:
        return None
    f = resolve(spec, name)
    return None if f is None else bool(f["takes_value"])
