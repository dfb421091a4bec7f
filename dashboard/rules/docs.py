"""Write the rule page: ``python -m dashboard.rules.docs [path]`` (default ``docs/rules.md``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dashboard.atomic import atomic_write_text
from dashboard.rules import rules_markdown

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def write_rules_page(path: str | os.PathLike = DEFAULT_PATH) -> Path:
    """Render :func:`dashboard.rules.rules_markdown` to ``path`` atomically (temp file + os.replace)."""
    return atomic_write_text(path, rules_markdown())


if __name__ == "__main__":  # pragma: no cover
    print(write_rules_page(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_PATH))
