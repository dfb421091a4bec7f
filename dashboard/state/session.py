"""One browser session's choices (:class:`PlannerState`) and their URL query string."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

import param

from dashboard import frameworks, schema
from dashboard.state.choices import (
    DEFAULT_FRAMEWORKS, DEFAULT_SGLANG_VERSION, DEFAULT_VLLM_VERSION, KV_DTYPES, MAX_GPU_GIB,
    MAX_MIN_SEQUENCES, MAX_MODELS, MAX_QUERY_VALUE, MAX_UNKNOWN_NOTICES, PLAN_FRAMEWORKS, SORT_CHOICES, TABS, TP_CHOICES,
    TRISTATE, UPLOAD_PREFIX, WEIGHT_DTYPES)
from dashboard.state.links import (
    SKIP, VERSION_KEYS, added_ids, canonical_choice, equal, framework_release, query_lists, short)


def calibration_problem(gib: Any, gpu: str) -> str:
    """Why ``gib`` (a measured KV-cache memory per GPU, GiB) cannot calibrate the memory model on ``gpu``
    (a GPU id, ``other:<GiB>``, or empty for the default card), or ``""`` when it can: it must be a finite
    number > 0 and at most the card's memory (``data/gpus.csv`` ``memory_bytes``). An unknown GPU is not
    this value's problem: only the positive, finite check applies then."""
    try:
        v = float(gib)
    except (TypeError, ValueError):
        return "expected a number of GiB"
    if not (v == v and v not in (float("inf"), float("-inf"))):
        return "expected a finite number of GiB"
    if v <= 0:
        return "the measured KV-cache memory must be more than 0 GiB"
    try:
        from dashboard import memory

        name = gpu or "H100-80GB"
        row = memory.gpu_row(name)
        cap = float(row["memory_bytes"]) / float(1 << 30)
    except Exception:  # noqa: BLE001 -- no GPU table / unknown id: nothing to compare with
        return ""
    if v > cap:
        return (f"{v:g} GiB of KV cache is more than the {cap:.1f} GiB of memory of one {short(str(name), 40)}; "
                "enter the per-GPU figure from the engine's log")
    return ""



class PlannerState(param.Parameterized):
    """Everything one session has chosen. Every parameter is in the URL (see :meth:`to_query`)."""

    # --- which models ---------------------------------------------------------------------------
    search = param.String(
        default="",
        doc="Model-name filter: case-insensitive substrings separated by spaces or commas; a model "
        "matches when its id contains any of them. Empty: every model.",
    )
    models = param.List(
        default=[],
        item_type=str,
        doc="Models picked explicitly (catalog table selection or the model picker). When non-empty the "
        "heatmaps show exactly these (still narrowed by the name filter).",
    )
    sort = param.Selector(
        default="family", objects=list(SORT_CHOICES),
        doc="Order of the heatmap rows and the catalog table (see order_catalog): family (the text model's "
        "model_type) then total parameters; name (the repo name after the organisation, case-insensitive); "
        "size (total parameters, smallest first); or org (organisation, then name).",
    )
    add = param.List(
        default=[],
        item_type=str,
        doc="Hub model ids (org/name) added to this session's catalog with \"Add a model\"; a link carrying "
        "them makes the page fetch them again (anonymously; see dashboard.addmodel). Uploaded configs are "
        "never here: they cannot travel in a link.",
    )
    # --- what to check --------------------------------------------------------------------------
    frameworks = param.ListSelector(
        default=list(DEFAULT_FRAMEWORKS),
        objects=list(schema.FRAMEWORKS),
        doc="Frameworks whose heatmaps are shown side by side (ids of dashboard.schema.FRAMEWORKS).",
    )
    vllm_version = param.String(
        default=DEFAULT_VLLM_VERSION,
        doc="vLLM release whose rules the vLLM cells follow (a release of data/releases/vllm.csv). The "
        "default is the newest release run through the conformance harness; in a link, a date such as "
        "2025-05 means the release current then.",
    )
    sglang_version = param.String(
        default=DEFAULT_SGLANG_VERSION,
        doc="SGLang release whose rules the SGLang cells follow (a release of data/releases/sglang.txt). The "
        "default is the newest release run through the conformance harness. SGLang has no release-date "
        "table here, so a link must name an exact release (no dates).",
    )
    disagreement = param.Boolean(
        default=False,
        doc="Show one heatmap of where the selected frameworks disagree instead of one per framework.",
    )
    tp_sizes = param.ListSelector(
        default=list(schema.DEFAULT_TP_SIZES),
        objects=list(TP_CHOICES),
        doc="Tensor-parallel sizes on the heatmaps' x axis.",
    )
    pp = param.Integer(default=1, bounds=(1, 128), doc="Pipeline-parallel size (stages).")
    dp = param.Integer(default=1, bounds=(1, 128), doc="Data-parallel size (replicas; attention-DP under DP-attention).")
    ep = param.Integer(default=1, bounds=(1, 1024), doc="Expert-parallel size (MoE).")
    dp_attention = param.Boolean(
        default=False, doc="SGLang DP-attention: attention runs with attn_tp = tp / dp instead of tp."
    )
    # --- memory ---------------------------------------------------------------------------------
    weight_dtype = param.Selector(
        default="checkpoint", objects=list(WEIGHT_DTYPES), doc="Weight dtype; `checkpoint` uses the config's."
    )
    kv_dtype = param.Selector(default="bf16", objects=list(KV_DTYPES), doc="KV-cache dtype.")
    gpu = param.String(default="", doc="GPU type (gpu column of data/gpus.csv), or other:<GiB> for a card given by "
                       "its memory per GPU (e.g. other:24); empty: the default GPU.")
    gpu_count = param.Integer(default=8, bounds=(1, 4096), doc="GPUs in the deployment (TP x PP x DP usually).")
    context_len = param.Integer(
        default=32768, bounds=(1, 10_000_000), doc="Context length (tokens per sequence) for concurrency."
    )
    kv_measured_gib = param.Number(
        default=None, allow_None=True, bounds=(0.0, MAX_GPU_GIB), inclusive_bounds=(False, True),
        doc="Memory view calibration: the KV-cache memory per GPU your engine logged, GiB (vLLM 'Available KV "
        "cache memory: 54.12 GiB'; SGLang K size + V size). Empty: not given, the model's reserve estimate is "
        "used. Must be > 0 and at most the chosen GPU's memory (a link with more is refused with a notice).")
    # --- plan ---------------------------------------------------------------------------------------
    gpus_per_node = param.Integer(
        default=0, bounds=(0, 1024),
        doc="Plan: GPUs per node (0: the GPU table's value for the chosen GPU, e.g. 8 on an HGX board). "
        "The cluster is gpu_count GPUs, i.e. ceil(gpu_count / gpus_per_node) nodes.")
    min_sequences = param.Integer(
        default=1, bounds=(1, MAX_MIN_SEQUENCES),
        doc="Plan: concurrent context_len-token sequences a layout must hold to count as fitting.")
    plan_frameworks = param.ListSelector(
        default=list(PLAN_FRAMEWORKS), objects=list(PLAN_FRAMEWORKS),
        doc="Plan: frameworks whose layouts are planned (ids of PLAN_FRAMEWORKS).")
    # --- selection (the tapped cell) ------------------------------------------------------------
    model = param.String(default="", doc="Selected model id (tapped cell / table row); empty: none yet.")
    framework = param.Selector(
        default="vllm", objects=list(schema.FRAMEWORKS), doc="Framework of the selected cell."
    )
    tp = param.Integer(default=8, bounds=(1, 4096), doc="TP size of the selected cell.")
    # --- catalog filters ------------------------------------------------------------------------
    org = param.String(default="", doc="Catalog filter: organisation (exact, case-insensitive); empty: any.")
    model_type = param.String(default="", doc="Catalog filter: model_type (exact, case-insensitive); empty: any.")
    min_params_b = param.Number(default=0.0, bounds=(0, None), doc="Catalog filter: minimum total parameters, billions.")
    max_params_b = param.Number(default=0.0, bounds=(0, None), doc="Catalog filter: maximum total parameters, billions; 0: no maximum.")
    heads = param.Integer(default=0, bounds=(0, None), doc="Catalog filter: num_attention_heads equals this; 0: any.")
    kv_heads = param.Integer(default=0, bounds=(0, None), doc="Catalog filter: num_key_value_heads equals this; 0: any.")
    moe = param.Selector(default="any", objects=list(TRISTATE), doc="Catalog filter: mixture of experts.")
    mla = param.Selector(default="any", objects=list(TRISTATE), doc="Catalog filter: multi-head latent attention.")
    linear = param.Selector(default="any", objects=list(TRISTATE), doc="Catalog filter: linear attention / SSM layers.")
    vision = param.Selector(default="any", objects=list(TRISTATE), doc="Catalog filter: vision encoder.")
    quant = param.String(default="", doc="Catalog filter: quant_method (exact; `none` for unquantized); empty: any.")
    # --- page -----------------------------------------------------------------------------------
    tab = param.Selector(default="validity", objects=list(TABS), doc="Open view.")

    # URL keys are the parameter names; ``models``, ``frameworks`` and ``tp_sizes`` are comma lists
    # (Hub repo ids cannot contain commas).

    # ---- URL ----------------------------------------------------------------------------------
    def to_query(self) -> dict[str, str]:
        """Non-default parameters as ``{key: value}`` strings for a URL query (defaults omitted)."""
        out: dict[str, str] = {}
        for name in self.param:
            if name == "name":
                continue
            p = self.param[name]
            v = getattr(self, name)
            if equal(v, p.default):
                continue
            if name in ("models", "frameworks", "tp_sizes", "plan_frameworks", "add"):
                out[name] = ",".join(str(x) for x in v)
            elif isinstance(v, bool):
                out[name] = "1" if v else "0"
            elif isinstance(v, float):
                out[name] = f"{v:g}"
            else:
                out[name] = str(v)
        return out

    def query_string(self) -> str:
        """``?a=b&...`` for :attr:`pn.state.location.search` (empty string when all defaults).

        ``/`` is left unescaped (legal in a query) so model ids stay readable in shared links.
        """
        q = self.to_query()
        return ("?" + urllib.parse.urlencode(q, safe="/,:")) if q else ""

    def apply_query(self, query: str | Mapping[str, Any], *, known_models: frozenset[str] | None = None,
                    known_values: Mapping[str, Any] | None = None) -> list[str]:
        """Set parameters from a URL query; return notices for every value that was refused.

        Parameters
        ----------
        query : str or mapping
            The raw ``search`` string (``?a=b``) or a mapping key -> str / list of str / bytes.
        known_models : frozenset of str, optional
            Catalog model ids; unknown ids in ``models`` / ``model`` are dropped with a notice.
        known_values : mapping of str to iterable of str, optional
            Accepted values of free-text settings, e.g. ``{"org": [...], "model_type": [...], "quant":
            [...], "gpu": [...]}`` (see :func:`catalog_choices`). A value of one of these keys is matched
            case-insensitively, ignoring surrounding spaces, and replaced by the listed spelling (``qwen``
            -> ``Qwen``); a value not listed is refused with a notice. An empty value is always accepted
            (the setting's default).

        Returns
        -------
        list of str
            Plain-text notices (untrusted fragments included verbatim: escape before rendering). A
            refused value leaves that parameter at its default. Never raises.
        """
        notices: list[str] = []
        try:
            lists = query_lists(query)
        except Exception as exc:  # noqa: BLE001 -- any garbage in the URL is a notice, not a crash
            return [f"Could not read the link's query string ({type(exc).__name__}); showing defaults."]
        pairs = {k: v[-1] for k, v in lists.items()}
        if known_models is not None and "add" in pairs and len(pairs["add"]) <= MAX_QUERY_VALUE:
            # models the link adds (fetched once the page is up) may be selected by the same link
            known_models = frozenset(known_models) | frozenset(added_ids(pairs["add"]))
        updates: dict[str, Any] = {}
        unknown: list[str] = []
        for key, raw in pairs.items():
            if key not in self.param or key == "name" or key.startswith("_"):
                if not key.strip():
                    notices.append(f"Ignored {short('=' + raw)!r} in the link: a value with no setting name before "
                                   "the '='.")
                else:
                    unknown.append(key)
                    if len(unknown) <= MAX_UNKNOWN_NOTICES:
                        notices.append(f"Ignored {short(key)!r} in the link: this page has no setting by that name.")
                continue
            if len(lists[key]) > 1:
                shown = ", ".join(repr(short(v, 40)) for v in lists[key][:5]) + (", ..." if len(lists[key]) > 5 else "")
                notices.append(f"The link sets {key!r} {len(lists[key])} times ({shown}): only the last one, "
                               f"{key}={short(raw)!r}, is used.")
            if len(raw) > MAX_QUERY_VALUE:
                notices.append(f"Ignored link parameter {key!r}: value longer than {MAX_QUERY_VALUE} characters.")
                continue
            try:
                value = self._parse(key, raw, known_models, notices)
                if key == "gpu" and isinstance(value, str) and value.strip().lower().startswith("other:"):
                    from dashboard.memory import resolve_gpu_id

                    value = resolve_gpu_id(value)  # a card given by its memory: other:<GiB>
                elif known_values is not None and key in known_values and isinstance(value, str):
                    value = canonical_choice(key, value, known_values[key])
            except (ValueError, TypeError, OverflowError) as exc:
                notices.append(f"Ignored link parameter {key}={short(raw)!r}: {exc}")
                continue
            if value is SKIP:
                continue
            # Validate against the parameter's own checks (bounds, objects) without touching self.
            try:
                self.param[key]._validate(value)
            except Exception as exc:  # noqa: BLE001
                # "Integer parameter 'PlannerState.tp' must be at least 1, not 0." -> "must be at least 1, not 0."
                why = re.sub(r"^\w+ parameter '[^']*' ", "", str(exc))
                notices.append(f"Ignored link parameter {key}={short(raw)!r}: {short(why, 160)}")
                continue
            updates[key] = value
        if len(unknown) > MAX_UNKNOWN_NOTICES:  # the rest in one notice (a hostile link may carry thousands)
            rest = unknown[MAX_UNKNOWN_NOTICES:]
            named = ", ".join(repr(short(k, 40)) for k in rest[:MAX_UNKNOWN_NOTICES])
            more = "1 more setting" if len(rest) == 1 else f"{len(rest):,} more settings"
            notices.append(f"Ignored {more} the page does not have ({len(unknown):,} in all): {named}"
                           f"{', …' if len(rest) > MAX_UNKNOWN_NOTICES else '.'}")
        if updates.get("kv_measured_gib") is not None:
            why = calibration_problem(updates["kv_measured_gib"], updates.get("gpu", self.gpu))
            if why:
                notices.append(f"Ignored link parameter kv_measured_gib={short(pairs['kv_measured_gib'])!r}: {why}")
                del updates["kv_measured_gib"]
        try:
            self.param.update(**updates)
        except Exception as exc:  # noqa: BLE001 -- defensive: a combination param rejects
            notices.append(f"Could not apply the link's settings ({short(str(exc), 160)}); showing defaults.")
        return notices

    def _parse(self, key: str, raw: str, known: frozenset[str] | None, notices: list[str]) -> Any:
        p = self.param[key]
        if key == "models":
            ids = [s.strip() for s in raw.split(",") if s.strip()]
            if len(ids) > MAX_MODELS:
                raise ValueError(f"more than {MAX_MODELS} models")
            if known is not None:
                unknown = [m for m in ids if m not in known]
                for m in unknown[:5]:
                    notices.append(f"Model {short(m)!r} from the link is not in the catalog; dropped.")
                if len(unknown) > 5:
                    notices.append(f"... and {len(unknown) - 5} more unknown models dropped.")
                ids = [m for m in ids if m in known]
            return list(dict.fromkeys(ids))
        if key == "add":
            ids = added_ids(raw, notices)
            return ids
        if key == "model":
            if raw and known is not None and raw not in known:
                if raw.startswith(UPLOAD_PREFIX):
                    notices.append(f"Model {short(raw)!r} was an uploaded config.json, which cannot travel in a "
                                   "link: upload it again on this page; none selected.")
                    return SKIP
                notices.append(f"Model {short(raw)!r} from the link is not in the catalog; none selected.")
                return SKIP
            return raw
        if key in VERSION_KEYS:
            return framework_release(VERSION_KEYS[key], raw, notices)
        if key == "frameworks":
            vals = [s.strip() for s in raw.split(",") if s.strip()]
            bad = [v for v in vals if v not in schema.FRAMEWORKS]
            if bad:
                raise ValueError(f"unknown framework(s) {', '.join(short(b, 40) for b in bad)}")
            return list(dict.fromkeys(vals))
        if key == "plan_frameworks":
            vals = [s.strip() for s in raw.split(",") if s.strip()]
            bad = [v for v in vals if v not in PLAN_FRAMEWORKS]
            if bad:
                raise ValueError(f"unknown or unplanned framework(s) {', '.join(short(b, 40) for b in bad)} "
                                 f"(the plan covers {', '.join(PLAN_FRAMEWORKS)})")
            return [f for f in PLAN_FRAMEWORKS if f in vals]
        if key == "tp_sizes":
            vals = [int(s) for s in raw.split(",") if s.strip()]
            bad = [v for v in vals if v not in TP_CHOICES]
            if bad:
                raise ValueError(f"TP sizes must be among {', '.join(map(str, TP_CHOICES))}")
            return sorted(set(vals))
        if isinstance(p, param.Boolean):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected 1 or 0")
        if isinstance(p, param.Integer):
            if re.fullmatch(r"[+-]?\d+", raw.strip()) and not re.fullmatch(r"[+-]?\d{1,9}", raw.strip()):
                lo, hi = (p.bounds or (None, None))
                rng = f"{lo}..{hi}" if lo is not None and hi is not None else "a smaller number"
                raise ValueError(f"out of range (expected {rng})")
            if not re.fullmatch(r"[+-]?\d{1,9}", raw.strip()):
                raise ValueError("expected a whole number")
            return int(raw)
        if key == "kv_measured_gib" and not raw.strip():
            return None  # an empty box: not given
        if isinstance(p, param.Number):
            v = float(raw)
            if v != v or v in (float("inf"), float("-inf")):
                raise ValueError("expected a finite number")
            return v
        if isinstance(p, param.Selector):
            if raw not in p.objects:
                raise ValueError(f"expected one of {', '.join(map(str, p.objects))}")
            return raw
        if isinstance(p, param.String):
            if any(ord(c) < 32 and c not in "\t" for c in raw):
                raise ValueError("control characters")
            return raw
        raise ValueError("not settable from a link")

    # ---- derived ------------------------------------------------------------------------------
    def search_terms(self) -> list[str]:
        """Lower-cased non-empty terms of :attr:`search`."""
        return [t for t in re.split(r"[\s,]+", self.search.lower()) if t]
