"""The one function that makes untrusted text safe to show in a terminal (:func:`safe_text`): every CLI
printer (``tp-planner check``, ``plan``, ``catalog``, ``hub``) passes the strings that came from input
(configs, model ids, file names, flags, a Hub's error messages) through it. Pure, no I/O.

What is replaced by ``?`` (Unicode categories from :func:`unicodedata.category`):

* control characters (``Cc``): C0 (NUL, BEL, BS, ESC ... so no ANSI CSI / OSC sequence can start: the
  ESC that opens one is gone and the rest prints as plain text), DEL and C1 (``\\x9b`` is a one-byte
  CSI, ``\\x9d`` a one-byte OSC on some terminals); newline and tab too unless ``keep_newlines``;
* lone surrogates (``Cs``: ``"\\ud800"`` is valid JSON but cannot be encoded, so printing it raises
  ``UnicodeEncodeError``);
* bidirectional formatting characters, which reorder what the terminal shows (the "Trojan Source"
  characters, CVE-2021-42574): U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069;
* the line and paragraph separators U+2028 / U+2029 (some terminals break lines on them).
"""

from __future__ import annotations

import re
from typing import Any

#: Bidirectional formatting characters (Unicode Bidi_Control): embeddings, overrides, isolates, marks.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029" + BIDI_CONTROLS + "]")
_UNSAFE_KEEP_NL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029" + BIDI_CONTROLS + "]")


def safe_text(text: Any, limit: int | None = None, *, keep_newlines: bool = False) -> str:
    """``str(text)`` with every character that could change what a terminal shows replaced by ``?`` (see
    the module docstring); newlines and tabs become spaces (one line) unless ``keep_newlines``, for text
    whose line breaks are ours (a whole table). ``limit``: at most that many characters, the last three
    ``...`` when cut."""
    s = str(text)
    if keep_newlines:
        s = _UNSAFE_KEEP_NL.sub("?", s)
    else:
        s = _UNSAFE.sub(lambda m: " " if m.group() in "\n\r\t" else "?", s)
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 3, 0)] + "..."
    return s


def is_unsafe_char(ch: str) -> bool:
    """True for a character :func:`safe_text` replaces (newlines and tabs included)."""
    return bool(_UNSAFE.fullmatch(ch))
