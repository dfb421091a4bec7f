#!/usr/bin/env python
"""Rebuild the shipped catalog from a folder of ``<org>--<name>.json`` Hub configs.

Usage (from the repo root)::

    python scripts/build_catalog.py ../shared/hub-configs            # writes data/catalog.parquet
    python scripts/build_catalog.py ../shared/hub-configs -o out.parquet --merge

``--merge`` keeps rows of the existing output that the folder does not have (e.g. rows scraped from the
Hub by ``dashboard.hub``); without it the output is exactly one row per file in the folder. The write is
atomic (temp file + rename). Same as ``python -m dashboard.catalog build FOLDER``.
"""

from __future__ import annotations

import sys

from dashboard.catalog import main

if __name__ == "__main__":
    raise SystemExit(main(["build", *sys.argv[1:]]))
