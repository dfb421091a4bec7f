"""``tp-planner``: one command-line entry for the project's tools.

Subcommands (each forwards its arguments to the module's own CLI, so ``--help`` works on every level)::

    tp-planner catalog build ../shared/hub-configs [-o data/catalog.parquet] [--merge]
    tp-planner catalog readme | aliases
    tp-planner hub scrape [REPO ...] [--author ...] [--limit N] [--workers 16] ...
    tp-planner check MODEL --framework vllm --tp 8 [--gpu H100-80GB] [--json]   # one cell, exit 0/1/2
    tp-planner check [MODEL] [--gpu ...] -- vllm serve MODEL -tp 8 ...         # judge a launch command
    tp-planner plan MODEL --gpus 16 --gpu H100-80GB [--gpus-per-node 8] [--context-len 32768]
                    [--framework vllm ...] [--min-sequences K] [--cross-node-tp] [--json]
    tp-planner serve [panel serve options]      # = panel serve <package dir>, the dashboard

Exit status is the subcommand's (0 success, 2 bad usage).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

USAGE = __doc__.split("Exit status")[0]


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand. Output that cannot be written (a closed pipe such as ``| head``, a full disk) ends
    the command quietly (a pipe) or with one line on stderr and status 2, never with a traceback."""
    import os

    try:
        rc = _dispatch(argv)
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        # the reader went away (``| head``): stop writing, keep Python's exit flush from raising again
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except OSError as e:
        if e.filename is not None:  # a file the subcommand was asked to read or write: its own error
            raise
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        print(f"tp-planner: cannot write the output: {e.strerror or e}", file=sys.stderr)
        return 2


def _dispatch(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: tp-planner {catalog,check,hub,plan,serve} ...\n\n" + USAGE)
        return 0 if args else 2
    cmd, rest = args[0], args[1:]
    if cmd in ("hub", "serve", "catalog"):  # check and plan check it themselves (also as JSON)
        from dashboard.environment import check_environment

        if not check_environment(f"tp-planner {cmd}"):  # before huggingface_hub reads it at import
            return 2
    if cmd == "catalog":
        from dashboard.catalog import main as catalog_main

        return catalog_main(rest)
    if cmd == "check":
        from dashboard.check import main as check_main

        return check_main(rest)
    if cmd == "hub":
        from dashboard.hub import main as hub_main

        return hub_main(rest)
    if cmd == "plan":
        from dashboard.planner import main as plan_main

        return plan_main(rest)
    if cmd == "serve":
        app_dir = Path(__file__).resolve().parent
        return subprocess.call([sys.executable, "-m", "panel", "serve", str(app_dir), *rest])
    print(f"tp-planner: unknown command {cmd!r}; try tp-planner --help", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
