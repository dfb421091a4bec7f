"""Bounded, backtracking-free matching of untrusted name patterns (regexes and shell globs).

Quantization configs list module names to skip or to target as ``re:`` regexes (compressed-tensors,
matched by vLLM with ``regex.match``) and as shell wildcards (ModelOpt, matched with ``fnmatch``).
A config is untrusted input: a pattern such as ``(a+)+$`` makes a backtracking engine run for
exponential time. This module never hands a config pattern to :mod:`re`. It parses a documented
subset of the regex syntax into a Thompson NFA and simulates it over the candidate name, so one match
costs ``O(len(pattern) * len(name))`` whatever the pattern.

Supported regex syntax: literals, ``.``, escapes ``\\d \\D \\w \\W \\s \\S`` and escaped
punctuation, character classes ``[...]`` (ranges, negation, class escapes), groups ``(...)``,
``(?:...)`` and ``(?P<name>...)``, alternation ``|``, quantifiers ``* + ? {n} {n,} {,m} {n,m}``
(a trailing lazy ``?`` is accepted: it changes which match is found, not whether one exists), and
the anchors ``^`` / ``\\A`` (start) and ``$`` / ``\\Z`` (end). Anything else (back-references,
look-arounds, word boundaries, inline flags, possessive quantifiers) raises :class:`PatternError`,
and so do patterns longer than :data:`MAX_PATTERN_LEN` or compiling to more than
:data:`MAX_STATES` NFA states. Callers turn the error into a catalog note.

Pure: standard library only, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Longest pattern accepted (characters).
MAX_PATTERN_LEN = 512
#: Largest NFA accepted (states), bounds ``{n,m}`` expansion.
MAX_STATES = 4096
#: Largest repeat count in ``{n,m}``.
MAX_REPEAT = 64


class PatternError(ValueError):
    """The pattern uses syntax outside the supported subset, or is too large."""


# ----------------------------------------------------------------------------------------------
# Character sets: a tuple of (lo, hi) code-point ranges plus a negation flag
# ----------------------------------------------------------------------------------------------
_DIGIT = ((48, 57),)
_WORD = ((48, 57), (65, 90), (95, 95), (97, 122))
_SPACE = ((9, 13), (32, 32))


@dataclass(frozen=True)
class _CharSet:
    ranges: tuple[tuple[int, int], ...]
    negate: bool = False
    any_but_newline: bool = False

    def __contains__(self, ch: str) -> bool:
        if self.any_but_newline:
            return ch != "\n"
        o = ord(ch)
        hit = any(lo <= o <= hi for lo, hi in self.ranges)
        return hit != self.negate


_DOT = _CharSet((), any_but_newline=True)
_ANY = _CharSet((), negate=True)  # matches everything (glob ``*`` / ``?``)


def _lit(ch: str) -> _CharSet:
    return _CharSet(((ord(ch), ord(ch)),))


# ----------------------------------------------------------------------------------------------
# AST
# ----------------------------------------------------------------------------------------------
@dataclass
class _Node:
    kind: str  # "set", "cat", "alt", "rep", "bol", "eol", "empty"
    cs: _CharSet | None = None
    kids: list[_Node] = field(default_factory=list)
    lo: int = 0
    hi: int | None = None  # None = unbounded


class _Parser:
    def __init__(self, pat: str):
        self.p = pat
        self.i = 0

    def error(self, msg: str) -> PatternError:
        return PatternError(f"{msg} at position {self.i}")

    def peek(self) -> str | None:
        return self.p[self.i] if self.i < len(self.p) else None

    def take(self) -> str:
        ch = self.p[self.i]
        self.i += 1
        return ch

    def parse(self) -> _Node:
        node = self.alt()
        if self.i != len(self.p):
            raise self.error("unbalanced ')'")
        return node

    def alt(self) -> _Node:
        branches = [self.cat()]
        while self.peek() == "|":
            self.take()
            branches.append(self.cat())
        return branches[0] if len(branches) == 1 else _Node("alt", kids=branches)

    def cat(self) -> _Node:
        items: list[_Node] = []
        while self.peek() is not None and self.peek() not in "|)":
            items.append(self.repeat())
        if not items:
            return _Node("empty")
        return items[0] if len(items) == 1 else _Node("cat", kids=items)

    def repeat(self) -> _Node:
        atom = self.atom()
        while True:
            ch = self.peek()
            if ch in ("*", "+", "?"):
                self.take()
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
            elif ch == "{" and self._brace_ahead():
                lo, hi = self.braces()
            else:
                return atom
            if atom.kind in ("bol", "eol"):
                raise self.error("quantified anchor")
            nxt = self.peek()
            if nxt == "?":
                self.take()  # lazy: same match/no-match answer
            elif nxt == "+":
                raise self.error("possessive quantifier")
            atom = _Node("rep", kids=[atom], lo=lo, hi=hi)

    def _brace_ahead(self) -> bool:
        j = self.p.find("}", self.i)
        if j < 0:
            return False
        body = self.p[self.i + 1:j]
        parts = body.split(",")
        return 1 <= len(parts) <= 2 and all(x.isdigit() or x == "" for x in parts) and body not in ("", ",")

    def braces(self) -> tuple[int, int | None]:
        j = self.p.find("}", self.i)
        body = self.p[self.i + 1:j]
        self.i = j + 1
        if "," in body:
            a, b = body.split(",")
            lo = int(a) if a else 0
            hi = int(b) if b else None
        else:
            lo = hi = int(body)
        if lo > MAX_REPEAT or (hi is not None and (hi > MAX_REPEAT or hi < lo)):
            raise self.error(f"repeat count outside 0..{MAX_REPEAT}")
        return lo, hi

    def atom(self) -> _Node:
        ch = self.take()
        if ch == "(":
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.p.startswith("?P<", self.i):
                j = self.p.find(">", self.i)
                if j < 0 or not self.p[self.i + 3:j].isidentifier():
                    raise self.error("bad group name")
                self.i = j + 1
            elif self.peek() == "?":
                raise self.error("unsupported group construct")
            node = self.alt()
            if self.peek() != ")":
                raise self.error("missing ')'")
            self.take()
            return node
        if ch == ")":
            raise self.error("unbalanced ')'")
        if ch == "[":
            return _Node("set", cs=self.char_class())
        if ch == ".":
            return _Node("set", cs=_DOT)
        if ch == "^":
            return _Node("bol")
        if ch == "$":
            return _Node("eol")
        if ch == "\\":
            return self.escape(in_class=False)
        if ch in "*+?":
            raise self.error("nothing to repeat")
        if ch == "{" and self._brace_ahead():
            raise self.error("nothing to repeat")
        return _Node("set", cs=_lit(ch))

    def escape(self, *, in_class: bool) -> _Node:
        if self.peek() is None:
            raise self.error("trailing backslash")
        e = self.take()
        table = {"d": (_DIGIT, False), "D": (_DIGIT, True), "w": (_WORD, False), "W": (_WORD, True),
                 "s": (_SPACE, False), "S": (_SPACE, True)}
        if e in table:
            r, neg = table[e]
            return _Node("set", cs=_CharSet(r, neg))
        if not in_class and e == "A":
            return _Node("bol")
        if not in_class and e == "Z":
            return _Node("eol")
        simple = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
        if e in simple:
            return _Node("set", cs=_lit(simple[e]))
        if e.isalnum():
            raise self.error(f"unsupported escape \\{e}")
        return _Node("set", cs=_lit(e))

    def char_class(self) -> _CharSet:
        negate = False
        if self.peek() == "^":
            self.take()
            negate = True
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            ch = self.peek()
            if ch is None:
                raise self.error("unterminated character class")
            if ch == "]" and not first:
                self.take()
                break
            first = False
            self.take()
            if ch == "\\":
                node = self.escape(in_class=True)
                cs = node.cs
                assert cs is not None
                if cs.negate:
                    raise self.error("negated class escape inside [...]")
                if len(cs.ranges) != 1 or cs.ranges[0][0] != cs.ranges[0][1]:
                    ranges.extend(cs.ranges)
                    continue
                lo = cs.ranges[0][0]
            elif ch == "[" and self.peek() == ":":
                raise self.error("POSIX classes are not supported")
            else:
                lo = ord(ch)
            if self.peek() == "-" and self.i + 1 < len(self.p) and self.p[self.i + 1] != "]":
                self.take()
                hi_ch = self.take()
                if hi_ch == "\\":
                    node = self.escape(in_class=True)
                    cs = node.cs
                    assert cs is not None
                    if len(cs.ranges) != 1 or cs.ranges[0][0] != cs.ranges[0][1] or cs.negate:
                        raise self.error("bad range end")
                    hi = cs.ranges[0][0]
                else:
                    hi = ord(hi_ch)
                if hi < lo:
                    raise self.error("bad character range")
                ranges.append((lo, hi))
            else:
                ranges.append((lo, lo))
        return _CharSet(tuple(ranges), negate)


# ----------------------------------------------------------------------------------------------
# Thompson NFA
# ----------------------------------------------------------------------------------------------
# state kinds: 0 = char set (cs, out), 1 = split (out, out2), 2 = match, 3 = end-of-string assertion
# (out), 4 = start-of-string assertion (out)
class _Builder:
    def __init__(self) -> None:
        self.kind: list[int] = []
        self.cs: list[_CharSet | None] = []
        self.out: list[int] = []
        self.out2: list[int] = []

    def new(self, kind: int, cs: _CharSet | None = None) -> int:
        if len(self.kind) >= MAX_STATES:
            raise PatternError(f"pattern compiles to more than {MAX_STATES} states")
        self.kind.append(kind)
        self.cs.append(cs)
        self.out.append(-1)
        self.out2.append(-1)
        return len(self.kind) - 1

    # A fragment is (start, list of dangling (state, which-out) slots)
    def frag(self, n: _Node) -> tuple[int, list[tuple[int, int]]]:
        if n.kind == "set":
            s = self.new(0, n.cs)
            return s, [(s, 0)]
        if n.kind in ("eol", "bol"):
            s = self.new(3 if n.kind == "eol" else 4)
            return s, [(s, 0)]
        if n.kind == "empty":
            s = self.new(1)  # split with both outs dangling to the same place
            return s, [(s, 0), (s, 1)]
        if n.kind == "cat":
            start, dangling = self.frag(n.kids[0])
            for k in n.kids[1:]:
                s2, d2 = self.frag(k)
                self.patch(dangling, s2)
                dangling = d2
            return start, dangling
        if n.kind == "alt":
            start, dangling = self.frag(n.kids[0])
            for k in n.kids[1:]:
                s2, d2 = self.frag(k)
                sp = self.new(1)
                self.out[sp], self.out2[sp] = start, s2
                start, dangling = sp, dangling + d2
            return start, dangling
        if n.kind == "rep":
            return self.rep(n.kids[0], n.lo, n.hi)
        raise PatternError(f"internal: unknown node {n.kind}")

    def rep(self, sub: _Node, lo: int, hi: int | None) -> tuple[int, list[tuple[int, int]]]:
        pieces: list[tuple[int, list[tuple[int, int]]]] = []
        for _ in range(lo):
            pieces.append(self.frag(sub))
        if hi is None:
            s, d = self.frag(sub)
            sp = self.new(1)
            self.out[sp] = s
            self.patch(d, sp)
            pieces.append((sp, [(sp, 1)]))
        else:
            for _ in range(hi - lo):
                s, d = self.frag(sub)
                sp = self.new(1)
                self.out[sp] = s
                pieces.append((sp, d + [(sp, 1)]))
        if not pieces:
            s = self.new(1)
            return s, [(s, 0), (s, 1)]
        start, dangling = pieces[0]
        for s2, d2 in pieces[1:]:
            self.patch(dangling, s2)
            dangling = d2
        return start, dangling

    def patch(self, slots: list[tuple[int, int]], target: int) -> None:
        for st, which in slots:
            if which == 0:
                self.out[st] = target
            else:
                self.out2[st] = target


#: Cached DFA states per pattern before the cache is dropped (keeps memory bounded; matching stays
#: linear in the NFA size either way).
MAX_DFA_STATES = 2048


class SafePattern:
    """A compiled pattern; :meth:`match` answers like ``re.match`` (anchored at the start only) or,
    for globs and ``full=True``, like ``re.fullmatch`` / ``fnmatch.fnmatchcase``.

    Matching simulates the NFA with a lazily built, size-capped DFA cache (sets of NFA states), so
    repeated matches over similar names cost a dict lookup per character."""

    __slots__ = ("source", "_kind", "_cs", "_out", "_out2", "_full", "_start", "_ids", "_sets", "_trans", "_acc",
                 "_acc_end")

    def __init__(self, source: str, node: _Node, full: bool):
        if len(source) > MAX_PATTERN_LEN:
            raise PatternError(f"pattern longer than {MAX_PATTERN_LEN} characters")
        b = _Builder()
        start, dangling = b.frag(node)
        m = b.new(2)
        b.patch(dangling, m)
        self.source = source
        self._kind, self._cs, self._out, self._out2 = b.kind, b.cs, b.out, b.out2
        self._full = full
        self._start = start
        self._reset()

    def _reset(self) -> None:
        # DFA states: integer ids over closed sets of NFA states
        self._ids: dict[frozenset[int], int] = {}
        self._sets: list[frozenset[int]] = []
        self._trans: list[dict[str, int]] = []
        self._acc: list[bool] = []
        self._acc_end: list[bool | None] = []
        self._state(self._closure([self._start], at_start=True))

    def _state(self, closed: frozenset[int]) -> int:
        i = self._ids.get(closed)
        if i is None:
            i = self._ids[closed] = len(self._sets)
            self._sets.append(closed)
            self._trans.append({})
            self._acc.append(any(self._kind[s] == 2 for s in closed))
            self._acc_end.append(None)
        return i

    def _closure(self, states: list[int] | frozenset[int], *, at_start: bool = False, at_end: bool = False) -> frozenset[int]:
        """States reachable without consuming a character; ``^`` is followed only at the start and
        ``$`` only at the end of the name."""
        seen: set[int] = set()
        stack = list(states)
        while stack:
            s = stack.pop()
            if s < 0 or s in seen:
                continue
            seen.add(s)
            k = self._kind[s]
            if k == 1:
                stack.append(self._out[s])
                stack.append(self._out2[s])
            elif (k == 3 and at_end) or (k == 4 and at_start):
                stack.append(self._out[s])
        return frozenset(seen)

    def _accepts_at_end(self, cur: int, at_start: bool) -> bool:
        if at_start:  # empty name: ``^`` may still be crossed
            fin = self._closure(self._sets[cur], at_start=True, at_end=True)
            return any(self._kind[s] == 2 for s in fin)
        a = self._acc_end[cur]
        if a is None:
            fin = self._closure(self._sets[cur], at_end=True)
            a = self._acc_end[cur] = any(self._kind[s] == 2 for s in fin)
        return a

    def match(self, text: str) -> bool:
        if len(self._sets) > MAX_DFA_STATES:
            self._reset()
        trans, acc, full = self._trans, self._acc, self._full
        cur = 0
        for ch in text:
            if not full and acc[cur]:
                return True
            nxt = trans[cur].get(ch)
            if nxt is None:
                step = [self._out[s] for s in self._sets[cur] if self._kind[s] == 0 and ch in self._cs[s]]  # type: ignore[operator]
                closed = self._closure(step)
                nxt = trans[cur][ch] = self._state(closed) if closed else -1
            if nxt < 0:
                return False
            cur = nxt
        return self._accepts_at_end(cur, at_start=not text)


def compile_regex(pattern: str) -> SafePattern:
    """Compile a regex of the supported subset; ``match`` then behaves like ``re.match``."""
    if not isinstance(pattern, str):
        raise PatternError("pattern is not a string")
    if len(pattern) > MAX_PATTERN_LEN:
        raise PatternError(f"pattern longer than {MAX_PATTERN_LEN} characters")
    return SafePattern(pattern, _Parser(pattern).parse(), full=False)


def compile_glob(pattern: str) -> SafePattern:
    """Compile a shell wildcard (``*``, ``?``, ``[seq]``, ``[!seq]``) like ``fnmatch.fnmatchcase``."""
    if not isinstance(pattern, str):
        raise PatternError("pattern is not a string")
    if len(pattern) > MAX_PATTERN_LEN:
        raise PatternError(f"pattern longer than {MAX_PATTERN_LEN} characters")
    items: list[_Node] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not (items and items[-1].kind == "rep"):
                items.append(_Node("rep", kids=[_Node("set", cs=_ANY)], lo=0, hi=None))
        elif c == "?":
            items.append(_Node("set", cs=_ANY))
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                items.append(_Node("set", cs=_lit("[")))
                continue
            body = pattern[i:j]
            i = j + 1
            neg = body.startswith("!")
            if neg:
                body = body[1:]
            ranges: list[tuple[int, int]] = []
            k = 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    lo, hi = ord(body[k]), ord(body[k + 2])
                    if lo <= hi:
                        ranges.append((lo, hi))
                    k += 3
                else:
                    ranges.append((ord(body[k]), ord(body[k])))
                    k += 1
            items.append(_Node("set", cs=_CharSet(tuple(ranges), neg)))
        else:
            items.append(_Node("set", cs=_lit(c)))
    node = _Node("empty") if not items else (items[0] if len(items) == 1 else _Node("cat", kids=items))
    return SafePattern(pattern, node, full=True)


def glob_match(name: str, pattern: str) -> bool:
    """``fnmatch.fnmatchcase(name, pattern)`` without :mod:`re`: a ``*``-only pattern is matched by
    ordered substring search (linear); ``?`` / ``[...]`` patterns go through :func:`compile_glob`."""
    if "?" not in pattern and "[" not in pattern:
        if "*" not in pattern:
            return name == pattern
        parts = pattern.split("*")
        head, tail, mids = parts[0], parts[-1], parts[1:-1]
        if not name.startswith(head) or len(name) < len(head) + len(tail):
            return False
        pos, end = len(head), len(name) - len(tail)
        for m in mids:
            if not m:
                continue
            j = name.find(m, pos, end)
            if j < 0:
                return False
            pos = j + len(m)
        return name.endswith(tail) and pos <= end
    return compile_glob(pattern).match(name)
