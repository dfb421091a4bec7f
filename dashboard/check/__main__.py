"""``python -m dashboard.check``: the same as ``tp-planner check``."""

from dashboard.check.cli import main

raise SystemExit(main())
