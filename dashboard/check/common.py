"""What every part of ``tp-planner check`` shares: the document's schema version, the bad-input error and
the printable form of untrusted text."""

from __future__ import annotations

import re
from typing import Any


#: Version of the ``--json`` document (bumped when a field changes meaning or goes away).
SCHEMA_VERSION = 1
#: Largest config (file or standard input) read, like the catalog's sidecar cap.
MAX_CONFIG_BYTES = 1 << 20

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
GiB = 1 << 30


class CheckInputError(Exception):
    """Bad input (exit 2); the message is one printable line."""


def printable(text: Any, limit: int = 2000) -> str:
    """Untrusted text for a terminal or a log line: control characters (ANSI escapes, NUL ...) as ``?``,
    newlines kept only where they are ours."""
    s = _CONTROL.sub("?", str(text)).replace("\n", " ").replace("\r", " ")
    return s if len(s) <= limit else s[: limit - 3] + "..."
