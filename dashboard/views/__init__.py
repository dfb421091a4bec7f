"""Thin Panel views over :class:`dashboard.state.PlannerState` (one instance of each per session).

Each view is a :class:`panel.viewable.Viewer` that builds its widgets in ``__init__`` (never at class or
module level), reads the process-wide read-only :class:`dashboard.state.AppData`, and re-renders when
the state parameters it depends on change.
"""

from dashboard.views.catalog import CatalogView
from dashboard.views.controls import Controls
from dashboard.views.details import CellDetails
from dashboard.views.export import ExportPanel
from dashboard.views.layout import LayoutView
from dashboard.views.memory import MemoryView
from dashboard.views.plan import PlanView
from dashboard.views.validity import ValidityView

__all__ = ["CatalogView", "CellDetails", "Controls", "ExportPanel", "LayoutView", "MemoryView", "PlanView", "ValidityView"]
