"""Evidence per config, not per rule: was *this* config, at *this* layout, run through the release's own code?

A verdict is "reproduced by running" only when the exact config (:func:`config_hash` of its normalized
catalog record) and the layout are a judged row of an executed conformance table of that release
(``data/conformance/<framework>-<release>.parquet``; the transformers frameworks share
``transformers-<release>.parquet`` and only its ``evidence == "executed"`` rows count, the others were
inferred from a tiny model). Any other config (an upload, a file, a made-up config, a Hub config fetched
with ``--refresh`` that differs from the catalog's) was not run: the rules were checked against the
release's code on the table's catalog models, and the answer says so with the table's agreement figure.

The hashes of the configs each table ran are **stored**, not computed from the shipped catalog at load
time: ``data/conformance/<table>-configs.json`` (``{model_id: config_hash}``), written by
``python scripts/config_hashes.py --write`` from the verbatim configs the harness read
(``../shared/hub-configs/``) and the sidecars it put beside them (the table's ``sidecars`` column). Stored,
because a catalog row that changes after its table ran (a re-scrape, a new sidecar, a normalizer change)
must stop counting as run, and because some tables ran configs the catalog does not hold (vLLM 0.22.0 ran
the GPTQ / ModelOpt checkpoints without the sidecars later tables had; the harness's own
``data/conformance/sidecars/`` are not in the catalog). ``tests/rules/test_evidence.py`` holds the stored
hashes to a recomputation and lists which shipped catalog rows differ from what was run.

:func:`evidence_text` is the one wording of it: the CLI, its JSON, the dashboard's details and Plan tab and
the exports all call it. Pure (reads the committed files once per process, cached); no Panel.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

CONFORMANCE = Path(__file__).resolve().parents[2] / "data" / "conformance"

#: Catalog columns that do not describe the config the engine reads: identity, provenance, popularity,
#: Hub metadata and our own notes. Every other schema column (shapes, architecture, quantization, the
#: parameter counts derived from them) is part of :func:`config_hash`.
HASH_EXCLUDED: frozenset[str] = frozenset({
    "model_id", "org", "name", "status", "status_reason", "source", "fetched_at", "sha", "last_modified",
    "downloads", "likes", "gated", "safetensors_params", "safetensors_params_by_dtype", "parse_notes",
})

#: The platform the first conformance tables (``data/conformance/*.parquet``) ran as: a simulated H100.
DEFAULT_TABLE_PLATFORM = "cuda-sm90"

#: Table outcomes that are a judgement of the engine (not a harness failure, not a cell never run).
JUDGED_OUTCOMES: frozenset[str] = frozenset({
    "built", "refused_engine", "refused_build",  # vLLM, SGLang, Megatron-Core
    "ran", "failed_cache", "failed_forward", "refused_load",  # transformers
})


def _canon(v: Any) -> Any:
    """A JSON value that is the same for every representation of one value: NA / None / NaN -> None,
    numpy and pandas scalars -> Python, integral floats -> int, bools stay bools."""
    if v is None:
        return None
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    if hasattr(v, "item") and not isinstance(v, (str, bytes)) and getattr(v, "ndim", 0) == 0:
        v = v.item()
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return None
        return int(v) if v.is_integer() and abs(v) < 2 ** 53 else float(repr(v))
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    if hasattr(v, "tolist"):
        return _canon(v.tolist())
    return str(v)


def config_hash(record: Mapping[str, Any] | Any) -> str:
    """Content hash (16 hex digits of SHA-256) of a normalized catalog record (mapping, Series or
    one-row DataFrame): every schema column but :data:`HASH_EXCLUDED`, absent columns counting as NA, so
    a dict from :func:`dashboard.catalog.normalize_config`, a catalog row and a typed one-row frame of the
    same config hash alike."""
    from dashboard import schema

    if hasattr(record, "iloc") and hasattr(record, "columns"):  # a one-row DataFrame
        record = record.iloc[0]
    get = record.get
    doc = {c: _canon(get(c)) for c in schema.COLUMN_NAMES if c not in HASH_EXCLUDED}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def layout_key(framework: str, tp: int, pp: int = 1, dp: int = 1, ep: int = 1, dp_attention: bool = False,
               vision_dp: bool = False, expert_parallel: bool = False) -> tuple[int, int, int, int, bool, bool, bool]:
    """``(tp, pp, dp, EP size, EP on, dp_attention, vision_dp)``: one layout however it is spelled (vLLM's
    ``expert_parallel=True`` and ``ep=1`` is EP size tp x dp; :meth:`Framework.ep_size`). "EP on" keeps
    expert parallelism at an EP size of 1 (TP 1) apart from no expert parallelism."""
    from dashboard import frameworks

    eps = int(frameworks.get(framework).ep_size(int(tp), int(dp), int(ep), bool(expert_parallel)))
    on = bool(expert_parallel) or int(ep) > 1
    return int(tp), int(pp), int(dp), eps, on, bool(dp_attention), bool(vision_dp)


def table_file(framework: str, release: str, platform: str | None = None) -> Path | None:
    """The executed table of ``framework`` at ``release`` (``<framework>-<release>.parquet``, or the
    ``<family>-<release>.parquet`` a framework id ``<family>-...`` shares), None when there is none.
    ``platform``: the table run on that platform (``data/conformance/<platform>/...``) instead of the
    default one (the first tables, in ``data/conformance/`` itself, ran as an H100: ``cuda-sm90``)."""
    base = CONFORMANCE / platform if platform else CONFORMANCE
    if platform and (not re.fullmatch(r"[a-z0-9][a-z0-9\-]*", platform) or not base.is_dir()):
        return None
    p = base / f"{framework}-{release}.parquet"
    if p.is_file():
        return p
    for q in sorted(base.glob(f"*-{release}.parquet")):
        family = q.name[: -len(f"-{release}.parquet")]
        if framework.startswith(family + "-"):
            return q
    return None


def configs_file(table: Path) -> Path:
    """Where the stored config hashes of ``table`` live (``<table stem>-configs.json``)."""
    return table.with_name(table.stem + "-configs.json")


def _group_layouts(framework: str, dp: int, ep: bool, vision_dp: bool, pp: int, tp: int) -> dict[str, Any]:
    """The grid keyword arguments of one table row (the framework's conformance adapter, when it has
    one; else a TP-only table)."""
    adapter = None
    try:
        from dashboard import frameworks

        adapter = frameworks.get(framework).conformance()
    except Exception:  # noqa: BLE001 - no adapter: a TP-only table (transformers)
        adapter = None
    if adapter is None:
        return dict(pp=int(pp), dp=int(dp), ep=1)
    for tps, kw in adapter.layouts(int(dp), bool(ep), bool(vision_dp), int(pp), [int(tp)]):
        if int(tp) in [int(t) for t in tps]:
            return kw
    return dict(pp=int(pp), dp=int(dp), ep=1)


@dataclass(frozen=True)
class Table:
    """An executed conformance table as evidence: its file name, the judged cells by config hash, the
    number of catalog models it judged and the rules engine's agreement with it."""

    framework: str
    release: str
    file: str
    cells: Mapping[str, frozenset]  # config hash -> layout keys judged
    models: int
    agreement: Mapping[str, int] | None  # judged, verdict_agree, refused, first_error_agree
    platform: str = DEFAULT_TABLE_PLATFORM  # the platform the harness ran as (the table's ``platform`` column)

    def ran(self, record_hash: str, key: tuple) -> bool:
        return key in self.cells.get(record_hash, ())

    def has_config(self, record_hash: str) -> bool:
        return record_hash in self.cells


@functools.lru_cache(maxsize=None)
def table(framework: str, release: str | None, platform: str | None = None) -> Table | None:
    """The executed table of ``framework`` at ``release`` (None when the release was not run, or its table
    or stored hashes are not committed). ``platform`` None: the release's default table, whatever platform
    it ran as; a platform id: the table run as that platform -- the default table when it ran there, else
    ``data/conformance/<platform>/`` when the framework lists the platform in ``executed_platforms`` (the
    rules are held to that table), else None. Cached per process."""
    if not release:
        return None
    from dashboard import frameworks

    fw = frameworks.get(framework)
    if release not in fw.executed_releases:
        return None
    if platform is not None:
        default = table(framework, release)
        if default is not None and default.platform == platform:
            return default
        if platform not in tuple(fw.executed_platforms.get(release, ())):
            return None
    path = table_file(framework, release, platform)
    if path is None or not configs_file(path).is_file():
        return None
    import pandas as pd

    hashes = json.loads(configs_file(path).read_text(encoding="utf-8")).get("configs", {})
    import pyarrow.parquet as pq

    have = set(pq.read_schema(path).names)
    df = pd.read_parquet(path, columns=[c for c in ("framework", "model_id", "tp", "pp", "dp", "ep", "vision_dp",
                                                    "outcome", "evidence", "platform") if c in have])
    plats = sorted(set(df["platform"].dropna().astype(str))) if "platform" in df.columns else []
    ran_as = ",".join(plats) or "cpu"  # a table without the column (transformers) ran in this Python, on the CPU
    if "framework" in df.columns:
        df = df[df["framework"].astype(str) == framework]
    df = df[df["outcome"].astype(str).isin(JUDGED_OUTCOMES)]
    if "evidence" in df.columns:
        df = df[df["evidence"].astype(str) == "executed"]
    df = df.assign(**{c: default for c, default in (("pp", 1), ("dp", 1), ("ep", False), ("vision_dp", False))
                      if c not in df.columns})
    group_cols = ["tp", "pp", "dp", "ep", "vision_dp"]
    keys: dict[tuple, tuple] = {}
    for g in df[group_cols].drop_duplicates().itertuples(index=False):
        tp, pp, dp, ep, vdp = int(g.tp), int(g.pp), int(g.dp), bool(g.ep), bool(g.vision_dp)
        kw = _group_layouts(framework, dp, ep, vdp, pp, tp)
        keys[(tp, pp, dp, ep, vdp)] = layout_key(
            framework, tp, kw.get("pp", pp), kw.get("dp", dp), kw.get("ep", 1), kw.get("dp_attention", False),
            kw.get("vision_dp", False), kw.get("expert_parallel", False))
    cells: dict[str, set] = {}
    for mid, tp, pp, dp, ep, vdp in zip(df["model_id"].astype(str), df["tp"], df["pp"], df["dp"], df["ep"],
                                        df["vision_dp"]):
        h = hashes.get(mid)
        if h:
            cells.setdefault(h, set()).add(keys[(int(tp), int(pp), int(dp), bool(ep), bool(vdp))])
    name = f"{platform}/{path.name}" if platform and path.parent.name == platform else path.name
    # the recorded agreement figures are the default table's: a platform table's are in its README block
    agree = agreement(framework, release) if not (platform and path.parent.name == platform) else None
    return Table(framework, release, name, {h: frozenset(k) for h, k in cells.items()},
                 int(df["model_id"].nunique()), agree, ran_as)


_BLOCK = re.compile(r"<!-- release (?P<key>[^>]+?) -->(?P<body>.*?)<!-- /release (?P=key) -->", re.S)
_LINE = re.compile(r"on the (?P<judged>\d+) judged cells: verdict (?P<verdict>\d+)/\d+; first error "
                   r"\(message and raise site\) (?P<first>\d+)/(?P<refused>\d+) refused cells")
_FREE = re.compile(r"verdict (?P<verdict>\d+)/(?P<judged>\d+) judged cells; first error \([^)]*\)[^0-9]*"
                   r"(?P<first>\d+)/(?P<refused>\d+) refused cells")


@functools.lru_cache(maxsize=None)
def agreement(framework: str, release: str) -> dict[str, int] | None:
    """The rules engine's agreement with the executed table, as ``python -m conformance report`` wrote it
    in ``data/conformance/README.md`` (the release's generated block; for a framework without one, the
    report paragraph naming the framework package's rules): ``judged`` cells, ``verdict_agree``,
    ``refused`` cells, ``first_error_agree`` (message and raise site). None when not found."""
    p = CONFORMANCE / "README.md"
    if not p.is_file():
        return None
    text = p.read_text(encoding="utf-8")
    from dashboard import frameworks

    fw = frameworks.get(framework)
    try:
        adapter = fw.conformance()
    except Exception:  # noqa: BLE001
        adapter = None
    if adapter is not None:
        key = adapter.readme_key(framework, release)
        for m in _BLOCK.finditer(text):
            if m.group("key").strip() == key:
                line = _LINE.search(m.group("body"))
                if line:
                    return {"judged": int(line["judged"]), "verdict_agree": int(line["verdict"]),
                            "refused": int(line["refused"]), "first_error_agree": int(line["first"])}
        return None
    pkg = type(fw).__module__.split(".")[2] if type(fw).__module__.count(".") >= 2 else ""
    anchor = text.find(f"dashboard/frameworks/{pkg}/rules_executed.py") if pkg else -1
    m = _FREE.search(text, anchor) if anchor >= 0 else None
    if m is None:
        return None
    return {"judged": int(m["judged"]), "verdict_agree": int(m["verdict"]), "refused": int(m["refused"]),
            "first_error_agree": int(m["first"])}


@dataclass(frozen=True)
class Evidence:
    """What backs one verdict. ``executed``: this config and layout are a judged row of ``table``;
    ``checked``: the release was run (on ``models`` catalog models) but not this config and layout;
    neither: the rules were read from source. ``text`` is :func:`evidence_text`."""

    framework: str
    release: str | None
    executed: bool
    checked: bool
    table: str = ""
    models: int = 0
    config_run: bool = False  # the config is in the table (at some layout)
    agreement: Mapping[str, int] | None = None
    #: the platform the question is about (the GPU's, :func:`dashboard.gpus.platform_of`); None: not given
    platform: str | None = None
    #: the platform the release's table ran as ("" when no table backs the answer)
    table_platform: str = ""
    #: the platforms the release was run as, when none of them is :attr:`platform` (the answer is then
    #: ``source`` for this GPU although the release was run elsewhere)
    ran_elsewhere: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """``executed`` | ``checked`` | ``source``."""
        return "executed" if self.executed else ("checked" if self.checked else "source")

    @property
    def text(self) -> str:
        return evidence_text(self)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``tp-planner check --json``'s ``conformance``)."""
        return {"kind": self.kind, "executed": self.executed, "table": self.table or None,
                "models": self.models or None, "config_run": self.config_run,
                "agreement": dict(self.agreement) if self.agreement else None, "platform": self.platform,
                "table_platform": self.table_platform or None, "ran_elsewhere": list(self.ran_elsewhere),
                "text": self.text}


def evidence_for(record: Any, framework: str, release: str | None, tp: int, *, pp: int = 1, dp: int = 1,
                 ep: int = 1, dp_attention: bool = False, vision_dp: bool = False, expert_parallel: bool = False,
                 record_hash: str | None = None, first_error_executed: bool = True,
                 platform: str | None = None) -> Evidence:
    """The :class:`Evidence` of ``record`` at this layout under ``framework`` ``release``.
    ``first_error_executed``: the verdict's first failing rule (if any) has executed evidence in the
    release (a cell whose first error the rules take from source is not called reproduced).
    ``platform``: the platform of the user's GPU (:func:`dashboard.gpus.platform_of`; None when no GPU is
    given or its family is unknown). A release run as other platforms only is ``source`` for this one:
    kernels, quantization methods and attention backends are chosen per GPU, so a table run as an H100
    says nothing executed about a T4."""
    t = table(framework, release, platform)
    if t is None:
        other = table(framework, release) if platform is not None else None
        if other is not None:
            from dashboard import frameworks

            listed = tuple(p for p in frameworks.get(framework).executed_platforms.get(release, ())
                           if table(framework, release, p) is not None)
            return Evidence(framework, release, False, False, platform=platform,
                            ran_elsewhere=tuple(dict.fromkeys((*other.platform.split(","), *listed))))
        return Evidence(framework, release, False, False, platform=platform)
    h = record_hash or config_hash(record)
    has = t.has_config(h)
    # a config the table never ran has no executed layout: no key to build (the planner asks per layout row)
    ran = has and first_error_executed and t.ran(h, layout_key(framework, tp, pp, dp, ep, dp_attention, vision_dp,
                                                                expert_parallel))
    return Evidence(framework, release, ran, True, t.file, t.models, has, t.agreement,
                    platform=platform, table_platform=t.platform)


def platform_words(pid: str) -> str:
    """How an answer names the platform a table ran as: ``"as an H100-80GB (cuda-sm90)"``, ``"on the CPU"``
    for the CPU-only harnesses (transformers, Megatron-Core on meta tensors)."""
    if not pid or pid.startswith("cpu"):
        return "on the CPU"
    from dashboard import gpus

    p = gpus.PLATFORMS.get(pid)
    if p is None:
        return f"as {pid}"
    rep = p.stand_in
    art = "an" if rep[:1] in "AEFHILMNORSX8" else "a"
    return f"as {art} {rep} ({pid})"


def evidence_text(ev: Evidence) -> str:
    """The one wording of a verdict's evidence (CLI, JSON, dashboard, Plan tab, exports)::

        reproduced by running vLLM 0.33.0's own code on this config and layout, as an H100-80GB (cuda-sm90); conformance table vllm-0.33.0.parquet
        rules checked against vLLM 0.33.0's own code run as an H100-80GB (cuda-sm90) on 186 catalog models; this config was not run (...)
        rules read from vLLM 0.33.0 source for this GPU (cuda-sm75); not executed on it: vLLM 0.33.0 was run as an H100-80GB (cuda-sm90) only, ...
        rules read from TensorRT-LLM source; not run
    """
    from dashboard import schema

    label = schema.FRAMEWORK_LABELS.get(ev.framework, ev.framework)
    rel = f"{label} {ev.release}" if ev.release else label
    where = ", ".join(platform_words(p) for p in ev.table_platform.split(",")) if ev.table_platform else ""
    if ev.executed:
        return (f"reproduced by running {rel}'s own code on this config and layout" + (f", {where}" if where else "")
                + f"; conformance table {ev.table}")
    if ev.checked:
        what = "this layout was not run on this config" if ev.config_run else "this config was not run"
        out = f"rules checked against {rel}'s own code" + (f" run {where}" if where else "") + \
            f" on {ev.models} catalog models; {what}"
        a = ev.agreement
        if a:
            pct = 100.0 * a["first_error_agree"] / a["refused"] if a["refused"] else 100.0
            out += (f" (on that table the rules give the same verdict on {a['verdict_agree']:,} of {a['judged']:,} "
                    f"cells and the same first error on {pct:.1f} % of refusals)")
        return out
    if ev.ran_elsewhere and ev.platform == "unknown":  # dashboard.gpus.UNKNOWN_PLATFORM: an other:<GiB> card
        return (f"rules checked against {rel}'s own code run {platform_words(ev.ran_elsewhere[0])}; this GPU's family "
                "is unknown (a card given by its memory), so it is judged as that platform and nothing was executed "
                "on it: kernels and checks differ by GPU")
    if ev.ran_elsewhere:
        words = [platform_words(p) for p in ev.ran_elsewhere]
        ran = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
        return (f"rules read from {rel} source for this GPU ({ev.platform}); not executed on it: {rel} was run "
                f"{ran} only, and kernels and checks differ by GPU")
    return f"rules read from {rel} source; not run"


def run_hashes(table_path: Path, configs_dir: str | Path) -> dict[str, str]:
    """``{model_id: config_hash}`` of the configs the harness ran for ``table_path``: each model's verbatim
    ``<configs_dir>/<org>--<name>.json`` normalized with the sidecars the table's ``sidecars`` column names
    (from ``data/sidecars/``, else ``data/conformance/sidecars/``, as ``conformance/driver.py`` copies them;
    none for a table without the column). Models without a config file are left out. What
    ``scripts/config_hashes.py --write`` stores."""
    import pandas as pd

    from dashboard.catalog import normalize_config

    df = pd.read_parquet(table_path)
    side: dict[str, set[str]] = {}
    if "sidecars" in df.columns:
        for mid, names in zip(df["model_id"].astype(str), df["sidecars"].fillna("").astype(str)):
            side.setdefault(mid, set()).update(n.strip() for n in names.split(",") if n.strip())
    dirs = (CONFORMANCE.parent / "sidecars", CONFORMANCE / "sidecars")
    out: dict[str, str] = {}
    for mid in sorted(set(df["model_id"].astype(str))):
        f = Path(configs_dir) / (mid.replace("/", "--") + ".json")
        if not f.is_file():
            continue
        sidecars: dict[str, bytes] = {}
        for name in sorted(side.get(mid, ())):
            for d in dirs:
                sp = d / mid.replace("/", "--") / name
                if sp.is_file():
                    sidecars[name] = sp.read_bytes()
                    break
        rec = normalize_config(f.read_bytes(), mid, source="snapshot", sidecars=sidecars or None)
        out[mid] = config_hash(rec)
    return out


__all__ = ["HASH_EXCLUDED", "JUDGED_OUTCOMES", "Evidence", "Table", "agreement", "config_hash", "configs_file",
           "evidence_for", "evidence_text", "layout_key", "run_hashes", "table", "table_file"]
