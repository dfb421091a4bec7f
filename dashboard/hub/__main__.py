"""``python -m dashboard.hub scrape ...`` (see :func:`dashboard.hub.cli.main`)."""

from dashboard.hub.cli import main

raise SystemExit(main())
