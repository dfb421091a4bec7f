"""Secrets out of everything written or logged: the Hub token (and any ``hf_...`` / ``api_org_...``
lookalike, ``Bearer`` values, URL query strings) is replaced, control characters are dropped.
:class:`Scrubber` does it for one string, :class:`ScrubFilter` for every log record.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from typing import Any

import huggingface_hub


URL_QUERY = re.compile(r"(https?://[^\s?]+)\?[^\s]*")


# ------------------------------------------------------------------------------------------------
# secrets: the token never reaches a file or a log
# ------------------------------------------------------------------------------------------------

_TOKENISH = re.compile(r"\b(hf_|api_org_)[A-Za-z0-9]{8,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",;]+")


class Scrubber:
    """Replaces known secrets, ``hf_...`` token shapes and ``Bearer ...`` values by ``***``."""

    def __init__(self, secrets: Iterable[str | None]):
        self.secrets = sorted({s for s in secrets if isinstance(s, str) and len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: Any) -> Any:
        if not isinstance(text, str) or not text:
            return text
        for s in self.secrets:
            text = text.replace(s, "***")
        text = _BEARER.sub(r"\1***", text)
        return _TOKENISH.sub(r"\1***", text)

    def record(self, rec: dict[str, Any]) -> dict[str, Any]:
        return {k: self(v) for k, v in rec.items()}




def printable_text(text: str) -> str:
    """Server-sent text for a terminal: :func:`dashboard.terminal.safe_text` keeping newlines (control
    characters, ANSI/OSC escapes, lone surrogates and bidi overrides shown as ``?``)."""
    from dashboard.terminal import safe_text

    return safe_text(text, keep_newlines=True)


class ScrubFilter(logging.Filter):
    """Logging filter: formats the message, then scrubs it (installed on the CLI's handler)."""

    def __init__(self, scrub: Scrubber):
        super().__init__()
        self.scrub = scrub

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string must not kill logging
            msg = str(record.msg)
        record.msg, record.args = printable_text(self.scrub(msg)), None
        if record.exc_info:
            record.exc_text = self.scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def known_secrets(token: str | bool | None) -> list[str]:
    """The secrets to scrub: ``token`` when it is a string, the token huggingface_hub would send (a stored
    login or ``HF_TOKEN``), and the ``HF_TOKEN`` / ``HUGGING_FACE_HUB_TOKEN`` values (``""`` where unset)."""
    out: list[str] = []
    if isinstance(token, str):
        out.append(token)
    try:
        t = huggingface_hub.get_token()
    except Exception:  # noqa: BLE001 - e.g. a failing OIDC exchange: the env value is still scrubbed
        t = None
    out += [t or "", os.environ.get("HF_TOKEN", ""), os.environ.get("HUGGING_FACE_HUB_TOKEN", "")]
    return out
