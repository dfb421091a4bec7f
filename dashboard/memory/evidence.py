"""Evidence: the KV-cache family of a model and which engines' capacity rules were checked against logged runs
(the shipped oracle summary ``data/kv_oracle_summary.csv``, :func:`kv_evidence`).

Pure except :func:`load_kv_oracle_summary` (reads the CSV, cached by path and mtime).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard import schema
from dashboard.frameworks import all_frameworks
from dashboard.frameworks import get as framework_of
from dashboard.memory.columns import check_sizes, is_set, layer_counts, model_columns, nz, text_model_type

# --------------------------------------------------------------------------------------------
# Evidence: which attention families each engine's rule was checked on against logged runs
# --------------------------------------------------------------------------------------------
#: Shipped summary of the oracle checks, one row per logged run the memory model was compared with:
#: ``oracle_id, engine, engine_version, engine_generation, model_id, family, gpu, tp, pp, measured_tokens,
#: predicted_tokens, miss`` (predicted / measured - 1) and ``source_url`` (the public log). Written by
#: ``scripts/kv_oracle_summary.py`` from the oracle table the tests check (``tests/memory/test_kv_oracles.py``);
#: the product reads only this file, never the oracle table.
KV_ORACLE_SUMMARY_CSV = Path(__file__).resolve().parents[2] / "data" / "kv_oracle_summary.csv"

#: Attention / KV-cache families the evidence is kept by (id -> label shown in the dashboard).
KV_FAMILIES: dict[str, str] = {
    "dense": "dense attention (MHA / GQA)",
    "moe": "mixture of experts",
    "mla": "multi-head latent attention (MLA)",
    "sliding-window": "sliding window (all layers, or 1 local : 1 global like Gemma 2)",
    "gemma3": "Gemma 3 / 4 local : global sliding window",
    "sinks": "sliding window with attention sinks (gpt-oss)",
    "chunked": "chunked-local attention (Llama 4)",
    "sliding-uneven": "sliding-window hybrid with an uneven local : global mix",
    "linear": "hybrid linear attention (Mamba / GDN / KDA)",
}

#: Engines whose allocation rule was checked against logged runs (each framework's ``kv_oracle_checked``); the
#: others have no logged run in the oracle table: their tokens are modelled from source.
CHECKED_ENGINES = tuple(f.name for f in all_frameworks() if f.kv_oracle_checked)


def kv_family(record: Any) -> str:
    """The KV-cache family of one catalog record, a key of :data:`KV_FAMILIES`.

    Order: hybrid linear attention (``has_linear_attention`` or linear layers) > Llama 4 (``llama4*``
    text model type: chunked-local layers) > gpt-oss (``gpt_oss``: sliding window with sinks) > Gemma 3 / 4
    (``gemma3*`` / ``gemma4*``) > other sliding-window hybrids with unequal sliding and full layer counts >
    sliding window (every layer sliding, or as many sliding as full layers) > MLA (``is_mla``) > MoE
    (``is_moe`` with experts) > dense.
    """
    c = model_columns(record)
    tmt = str(text_model_type(c)[0])
    mt = str(c["model_type"][0])
    full, swa, lin = (float(x[0]) for x in layer_counts(c))
    if bool(is_set(c["has_linear_attention"])[0]) or lin > 0:
        return "linear"
    if tmt.startswith("llama4") or mt.startswith("llama4"):
        return "chunked"
    if tmt.startswith("gpt_oss") or mt.startswith("gpt_oss"):
        return "sinks"
    if tmt.startswith(("gemma3", "gemma4")) or mt.startswith(("gemma3", "gemma4")):
        return "gemma3"
    if swa > 0 and full > 0 and swa != full:
        return "sliding-uneven"
    if swa > 0:
        return "sliding-window"
    if bool(is_set(c["is_mla"])[0]):
        return "mla"
    if bool(is_set(c["is_moe"])[0]) and nz(c["num_experts"])[0] > 0:
        return "moe"
    return "dense"


@lru_cache(maxsize=4)
def _oracle_summary_cached(path: str, mtime: float) -> pd.DataFrame:
    return pd.read_csv(path)


def load_kv_oracle_summary(path: str | Path | None = None) -> pd.DataFrame:
    """The shipped oracle summary (:data:`KV_ORACLE_SUMMARY_CSV`) as a frame; empty when the file is
    missing or unreadable (the view then says no rule was checked)."""
    p = Path(path) if path is not None else KV_ORACLE_SUMMARY_CSV
    cols = ["oracle_id", "engine", "engine_version", "engine_generation", "model_id", "family", "gpu", "tp", "pp",
            "measured_tokens", "predicted_tokens", "miss", "source_url"]
    try:
        df = _oracle_summary_cached(str(p), p.stat().st_mtime)
    except (OSError, ValueError, pd.errors.ParserError):
        return pd.DataFrame(columns=cols)
    if not set(cols) <= set(df.columns):
        return pd.DataFrame(columns=cols)
    return df


def kv_evidence(record: Any, framework: str, summary: pd.DataFrame | None = None) -> dict[str, Any]:
    """Whether the KV-capacity rule for ``record`` under ``framework`` was checked against logged runs.

    ``summary`` defaults to :func:`load_kv_oracle_summary`. Only current-engine runs count (vLLM V1 and
    SGLang; the rows whose ``engine_generation`` is ``current``): legacy vLLM V0 runs are reported apart.

    Returns a dict: ``family`` (key of :data:`KV_FAMILIES`), ``family_label``, ``framework``,
    ``engine_checked`` (the engine's rule has at least one logged run, any family), ``engine_runs``,
    ``checked`` (at least one run of this family on this engine), ``runs`` (how many), ``oracle_ids``,
    ``sources`` (public log URLs), ``worst_miss`` (largest ``|predicted / measured - 1|`` of those runs, a
    fraction; None when unchecked), ``band_pct`` (the expected error band, whole percent: the worst miss
    rounded up; None when unchecked: "unknown, modelled from source"), ``legacy_runs`` (vLLM V0 runs of this
    family), ``status`` (``"checked"`` or ``"not yet checked against a log"``) and ``text`` (one plain
    sentence for the dashboard; untrusted parts none: it names only engines, families and numbers).
    """
    check_sizes(framework, 1)
    fam = kv_family(record)
    s = load_kv_oracle_summary() if summary is None else summary
    eng = s.loc[s["engine"].astype(str) == framework] if len(s) else s
    current = eng.loc[eng["engine_generation"].astype(str) == "current"] if len(eng) else eng
    mine = current.loc[current["family"].astype(str) == fam] if len(current) else current
    legacy = eng.loc[(eng["engine_generation"].astype(str) != "current") & (eng["family"].astype(str) == fam)] \
        if len(eng) else eng
    misses = pd.to_numeric(mine["miss"], errors="coerce").abs().dropna() if len(mine) else pd.Series(dtype=float)
    checked = framework_of(framework).kv_oracle_checked and len(misses) > 0
    worst = float(misses.max()) if checked else None
    band = max(1, math.ceil(round(worst * 100, 6))) if worst is not None else None
    label = KV_FAMILIES[fam]
    engine_label = schema.FRAMEWORK_LABELS.get(framework, framework)
    n_engine = int(len(current)) if framework_of(framework).kv_oracle_checked else 0
    if checked:
        text = (f"{engine_label}'s rule for {label} was checked against {len(misses)} logged "
                f"run{'s' if len(misses) != 1 else ''}: within {worst:.1%} (expected error ±{band} %).")
    elif n_engine:
        text = (f"{label.capitalize()} on {engine_label}: not yet checked against a log (the rule was checked on "
                f"{n_engine} logged {engine_label} run{'s' if n_engine != 1 else ''} of other families); "
                "expected error unknown, modelled from source.")
    else:
        text = (f"{engine_label}: not yet checked against a log; expected error unknown, modelled from "
                "the engine's source.")
    return {
        "family": fam, "family_label": label, "framework": framework, "engine_checked": n_engine > 0,
        "engine_runs": n_engine, "checked": checked, "runs": int(len(misses)) if checked else 0,
        "oracle_ids": [str(x) for x in mine["oracle_id"]] if checked else [],
        "sources": list(dict.fromkeys(str(x) for x in mine["source_url"])) if checked else [],
        "worst_miss": worst, "band_pct": band, "legacy_runs": int(len(legacy)),
        "status": "checked" if checked else "not yet checked against a log", "text": text,
    }
