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


def check(framework: str, release: str | None, args: Sequence[str], *, launcher: str | None = None,
          label: str | None = None) -> FlagReport:
    """Parse ``args`` (the arguments after the launcher) with ``framework`` ``release``'s rebuilt parser."""
    have = releases(framework)
    spec = load(framework, release)
    rep = FlagReport(framework, release, "not checked" if spec is None else str(spec.get("evidence", "source")),
                     spec_releases=have)
    if spec is None:
        return rep
    parser = build_parser(spec, launcher)
    try:
        parser.parse_args(_prepare(spec, args))
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
