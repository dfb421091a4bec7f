"""``python -m dashboard.catalog build FOLDER | aliases | readme`` (see :func:`dashboard.catalog.cli.main`)."""

from dashboard.catalog.cli import main

raise SystemExit(main())
