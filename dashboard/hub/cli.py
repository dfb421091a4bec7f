"""Scrape ``config.json`` files and metadata from the Hugging Face Hub into the catalog.

The command line, ``python -m dashboard.hub scrape ...`` (:func:`main`): arguments to :func:`scrape`
keywords, log records scrubbed of the token, one summary line, exit 2 on bad input.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from dashboard.catalog import default_catalog_path
from dashboard.hub.scrub import known_secrets, Scrubber, ScrubFilter
from dashboard.hub.scrape import scrape, ScrapeError, SORTS


# ------------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------------


def _build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m dashboard.hub",
        description="Scrape config.json files and metadata from the Hugging Face Hub into the catalog.",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scrape", help="fetch repos' config.json + metadata and merge them into the catalog",
                       description=(__doc__ or "").split("\n\n")[0])
    s.add_argument("repo_ids", nargs="*", metavar="REPO_ID", help="Hub repo ids (org/name)")
    s.add_argument("--repos-file", help="text file of repo ids, one per line (# comments)")
    s.add_argument("--author", help="Hub query: models of this user/organisation")
    s.add_argument("--search", help="Hub query: substring of the repo id")
    s.add_argument("--pipeline-tag", help="Hub query: e.g. text-generation, image-text-to-text")
    s.add_argument("--sort", choices=sorted(SORTS), help="Hub query order (descending)")
    s.add_argument("--limit", type=int, help="Hub query: at most N models")
    s.add_argument("--workers", type=int, default=8, help="concurrent repos (default 8)")
    s.add_argument("--refresh", action="store_true", help="download configs even when the sha is unchanged")
    s.add_argument("--catalog", help=f"catalog parquet to merge into (default {default_catalog_path()})")
    s.add_argument("--timeout", type=float, default=10.0, help="seconds per metadata request / HEAD (default 10)")
    s.add_argument("--max-retries", type=int, default=5, help="retries on 429/5xx/timeouts (default 5)")
    s.add_argument("--backoff-base", type=float, default=1.0, help="first backoff sleep in seconds (default 1)")
    s.add_argument("--checkpoint-every", type=float, default=10.0, help="seconds between catalog rewrites")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("-v", "--verbose", action="store_true", help="log retries and details")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    from dashboard.terminal import safe_text

    """Entry point of ``python -m dashboard.hub``. Exit status: 0 done (whatever the per-repo statuses),
    2 the run could not start (bad arguments, listing failed, catalog unreadable or locked), 130 interrupted."""
    from dashboard.environment import check_environment

    args = _build_parser().parse_args(argv)
    if not check_environment("python -m dashboard.hub"):
        return 2
    scrub = Scrubber(known_secrets(None))
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ScrubFilter(scrub))
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO if args.verbose else logging.WARNING)
    if not args.verbose:  # huggingface_hub warns on every retried request: our summary says it once
        logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    try:
        _, summary = scrape(
            args.repo_ids, repos_file=args.repos_file, author=args.author, search=args.search,
            pipeline_tag=args.pipeline_tag, sort=args.sort, limit=args.limit, workers=args.workers,
            refresh=args.refresh, catalog_path=args.catalog, timeout=args.timeout, max_retries=args.max_retries,
            backoff_base=args.backoff_base, checkpoint_every=args.checkpoint_every, progress=not args.no_progress,
        )
    except ScrapeError as exc:
        print(safe_text(scrub(f"error: {exc}")), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished repos are saved; run the same command again to finish the rest",
              file=sys.stderr)
        return 130
    print(safe_text(scrub(str(summary)), keep_newlines=True))
    return 0
