"""Dashboard state: what one browser session has chosen, and the process-wide read-only data.

Two halves, neither imports Panel:

* :class:`PlannerState` -- a ``param.Parameterized`` holding every choice a user makes (models,
  frameworks, TP sizes, PP/DP/EP, dtypes, GPU, context length, catalog filters, the open tab and the
  selected cell). One instance per session; the views' widgets are generated from its parameters.
  :meth:`PlannerState.to_query` / :meth:`PlannerState.apply_query` turn it into a URL query string and
  back (model ids containing ``/`` round-trip; malformed or hostile values fall back to defaults and
  come back as human-readable notices, never as exceptions).
* :class:`AppData` -- the catalog and its precomputed validity grid, loaded once per process by
  :func:`load_app_data` and treated as read-only by every session (views filter copies, never mutate).

The catalog path comes from the ``TP_PLANNER_CATALOG`` environment variable when set (a parquet file
written by :func:`dashboard.catalog.write_catalog`), else the shipped ``data/catalog.parquet``.
"""

from __future__ import annotations

from dashboard.state.choices import (  # noqa: F401
    CATALOG_ENV, DEFAULT_FRAMEWORKS, DEFAULT_SGLANG_VERSION, DEFAULT_VERSIONS, DEFAULT_VLLM_VERSION,
    KV_DTYPES, MAX_GPU_GIB, MAX_LINK_ADDS, MAX_MIN_SEQUENCES, MAX_MODELS, MAX_QUERY_FIELDS, MAX_QUERY_VALUE, MAX_UNKNOWN_NOTICES,
    PLAN_FRAMEWORKS, SORT_CHOICES, SORT_LABELS, TABS, TAB_LABELS, TP_CHOICES, TRISTATE,
    UPLOAD_PREFIX, VERSION_PARAMS, WEIGHT_DTYPES)
from dashboard.state.data import (  # noqa: F401
    AppData, ExtendedAppData, app_data_from_catalog, catalog_path, load_app_data, part_key,
    rule_args, state_gpu_args, state_grid_args, state_platform, state_rule_args, state_version, state_versions)
from dashboard.state.session import (  # noqa: F401
    PlannerState, calibration_problem)
from dashboard.state.links import (  # noqa: F401
    SKIP, VERSION_KEYS, added_ids, canonical_choice, catalog_choices, equal, folded,
    framework_release, framework_releases, query_lists, sglang_release, sglang_releases, short,
    vllm_release, vllm_releases)
from dashboard.state.ordering import (  # noqa: F401
    filter_catalog, filter_models, model_order, order_catalog)
