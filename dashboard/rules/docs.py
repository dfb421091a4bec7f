"""Write the rule page: ``python -m dashboard.rules.docs [path]`` (default ``docs/rules.md``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dashboard.atomic import atomic_write_text
from dashboard.rules.rulepage import rules_markdown

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def write_rules_page(path: str | os.PathLike = DEFAULT_PATH) -> Path:
    """Render :func:`dashboard.rules.rules_markdown` to ``path`` atomically (temp file + os.replace)."""
    return atomic_write_text(path, rules_markdown())


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m dashboard.rules.docs",
                                 description="Write the rule page generated from dashboard.rules.RULES.")
    ap.add_argument("path", nargs="?", default=str(DEFAULT_PATH), help=f"output file (default {DEFAULT_PATH})")
    args = ap.parse_args(argv)
    print(write_rules_page(args.path))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
