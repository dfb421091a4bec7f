"""What every part of ``tp-planner check`` shares: the document's schema version, the bad-input error and
the printable form of untrusted text."""

from __future__ import annotations

from typing import Any


#: Version of the ``--json`` document (bumped when a field changes meaning or goes away).
SCHEMA_VERSION = 1
#: Largest config (file, standard input or the Hub) read: the scraper's too (:data:`dashboard.schema.MAX_CONFIG_BYTES`).
from dashboard.schema import MAX_CONFIG_BYTES  # noqa: E402

GiB = 1 << 30


class CheckInputError(Exception):
    """Bad input (exit 2); the message is one printable line."""


def printable(text: Any, limit: int = 2000) -> str:
    """Untrusted text for a terminal or a log line, one line: :func:`dashboard.terminal.safe_text` (control
    characters, ANSI/OSC escapes, lone surrogates and bidi overrides as ``?``; newlines as spaces)."""
    from dashboard.terminal import safe_text

    return safe_text(text, limit)
