"""What a dashboard user can choose, and the limits on it: TP sizes, dtypes, tabs, sort orders, the
releases' URL parameters and the caps on hostile links."""

from __future__ import annotations

from dashboard import frameworks, schema
from dashboard.rules import versions as _versions


#: Environment variable naming a catalog parquet file the dashboard opens instead of the shipped one.
CATALOG_ENV = "TP_PLANNER_CATALOG"

#: TP sizes a user can pick (the grid is precomputed over all of them once per process).
TP_CHOICES: tuple[int, ...] = tuple(sorted({*schema.DEFAULT_TP_SIZES, 5, 7, 10, 24, 48}))

#: Frameworks shown side by side by default.
DEFAULT_FRAMEWORKS: tuple[str, ...] = ("vllm", "sglang")

#: Weight dtypes: ``checkpoint`` means "as the config says" (``weight_dtype=None`` in dashboard.memory).
WEIGHT_DTYPES: tuple[str, ...] = ("checkpoint", "bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4")
KV_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8")

TABS: tuple[str, ...] = ("validity", "layout", "memory", "plan", "catalog")
TAB_LABELS: dict[str, str] = {
    "validity": "Validity",
    "layout": "Per-rank layout",
    "memory": "Memory",
    "plan": "Plan",
    "catalog": "Catalog",
}

#: Frameworks the Plan tab can plan (those with launch commands: :data:`dashboard.planner.PLAN_FRAMEWORKS`,
#: spelled out here so the state does not import the planner).
PLAN_FRAMEWORKS: tuple[str, ...] = tuple(f.name for f in frameworks.all_frameworks() if f.launch_flags)
#: Most concurrent sequences the Plan tab's minimum accepts.
MAX_MIN_SEQUENCES = 1_000_000

#: How the heatmap rows and the catalog table are ordered (:func:`order_catalog`), and each order's label.
SORT_LABELS: dict[str, str] = {
    "family": "Family, then size",
    "name": "Name (A–Z)",
    "size": "Size (total parameters)",
    "org": "Organisation, then name",
}
SORT_CHOICES: tuple[str, ...] = tuple(SORT_LABELS)

#: Tri-state filter values of the catalog view.
TRISTATE: tuple[str, ...] = ("any", "yes", "no")

#: Frameworks whose rules are keyed by release, and the state parameter (and URL key) naming each one's.
VERSION_PARAMS: dict[str, str] = {f.name: f.version_param for f in frameworks.all_frameworks() if f.version_param}
#: Release each framework's rules are evaluated at by default: the newest run through the conformance harness.
DEFAULT_VERSIONS: dict[str, str] = {fw: _versions.newest_executed(fw) or "" for fw in VERSION_PARAMS}
DEFAULT_VLLM_VERSION: str = DEFAULT_VERSIONS["vllm"]
DEFAULT_SGLANG_VERSION: str = DEFAULT_VERSIONS["sglang"]

#: Most Hub ids one link may add (``add=``).
MAX_LINK_ADDS = 5
#: Start of the ids of uploaded configs (:data:`dashboard.addmodel.UPLOAD_ORG`).
UPLOAD_PREFIX = "(upload)/"
#: Largest per-GPU memory a calibration figure may name, GiB (dashboard.memory.OTHER_GIB_RANGE's top).
MAX_GPU_GIB = 4096.0

#: Longest query value accepted (characters); longer values are rejected with a notice.
MAX_QUERY_VALUE = 4000
#: Most ``key=value`` fields of a link's query string that are read (the web server refuses a request line
#: over 64 KiB, Tornado's ``max_header_size``, so a query holds at most ~32,000 fields); a link with more
#: is shown with its defaults and a notice. Unknown keys are summed up in one notice.
MAX_QUERY_FIELDS = 40_000
#: Unknown keys of a link named one by one in its notice (more are summed up in one).
MAX_UNKNOWN_NOTICES = 3
#: Most models one URL may select.
MAX_MODELS = 200
