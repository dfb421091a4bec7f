"""``python -m dashboard.planner``: the same as ``tp-planner plan``."""

from dashboard.planner.cli import main

raise SystemExit(main())
