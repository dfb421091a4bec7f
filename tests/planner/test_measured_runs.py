"""Every row of the measured serving runs (``../shared/perf/measured-runs.csv``, see its README) is a test of what
the product does claim about that run.

Throughput and latency are not modelled (README, "How layouts are ranked (interim: capacity only)"), so no
figure is predicted. What is tested: a measured run proves the engine started with that layout, so the
product's rules for that framework and release (:func:`dashboard.rules.check`) must accept it. Rows the
rules refuse although the run happened are bugs: strict expected failures in :data:`REFUSED` with the
reason. Rows whose model has no config we hold (the catalog, exactly as named) cannot be judged: they are
listed in :data:`NO_CONFIG`, and ``test_run_without_config`` asserts the absence, so it fails the day a
config appears.

For sources that measure several layouts of one model on the same GPUs with one engine,
``test_capacity_ranking_vs_measured_throughput_is_reported`` writes (does not assert) how the product's
capacity ranking (:func:`dashboard.planner.plan`, "most KV capacity") orders them against the measured output
throughput, to ``tests/artifacts/measured_runs_ranking.txt``.
"""

from __future__ import annotations

import math
import os
import re
from functools import lru_cache

import pandas as pd
import pytest

from dashboard import catalog
from dashboard.rules import check
from tests.conftest import SHARED

RUNS = SHARED / "perf" / "measured-runs.csv"

#: Engine names as the file writes them -> the product's framework ids.
ENGINES = {"vLLM": "vllm", "SGLang": "sglang", "TensorRT-LLM": "tensorrt-llm"}

#: Run GPU text -> data/gpus.csv id (first match wins), for the ranking report only.
GPU_IDS = (("H200", "H200-141GB"), ("H100", "H100-80GB"), ("A100 SXM 80GB", "A100-80GB"), ("A100", "A100-80GB"))

ROWS: list[dict] = pd.read_csv(RUNS).to_dict("records") if RUNS.exists() else []
pytestmark = pytest.mark.skipif(not RUNS.exists() and not os.environ.get("CI"), reason=f"{RUNS} not present")


def test_runs_file_is_present(shared_dir) -> None:
    assert RUNS.exists(), f"{RUNS} is missing"


def _na(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


@lru_cache(maxsize=None)
def _catalog() -> pd.DataFrame:
    return catalog.load_catalog().set_index("model_id", drop=False)


_NO_COPY = "no config.json of this exact repo in the catalog (../shared/hub-configs/) or ../shared/hub-configs-2/"
#: Runs whose model has no config we hold: model id -> reason. They cannot be judged.
NO_CONFIG: dict[str, str] = {
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": f"{_NO_COPY} (the BF16 -2507 and the older Qwen3-235B-A22B-FP8 are held)",
    "deepseek-ai/DeepSeek-R1-0528": f"{_NO_COPY} (DeepSeek-R1 is held, not the 0528 repo)",
    "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8": _NO_COPY,
    "neuralmagic/Meta-Llama-3.1-8B-FP8": _NO_COPY,
    "zai-org/GLM-4.5-Air": f"{_NO_COPY} (GLM-4.5 is held, not -Air)",
    "zai-org/GLM-4.5-Air-FP8": _NO_COPY,
    "zai-org/GLM-4.6": _NO_COPY,
    "zai-org/GLM-4.6-FP8": _NO_COPY,
}

#: Runs the rules refuse although the run happened (bugs): perf_id -> reason. Strict expected failures.
REFUSED: dict[str, str] = {}


def layout_of(row: dict) -> dict:
    """``check()`` keyword arguments for a run: tp, pp, dp, ep, dp_attention, version (the file's release).

    SGLang ``--enable-dp-attention`` without ``--dp-size`` (dp empty) is attention-DP 1; an ``ep`` column > 1 is
    expert parallelism (vLLM ``--enable-expert-parallel``, SGLang ``--ep-size``, TensorRT-LLM ``--ep_size``)."""
    dp = 1 if _na(row["dp"]) else int(row["dp"])
    ep = 1 if _na(row["ep"]) else int(row["ep"])
    m = re.search(r"\d+\.\d+(\.\d+)?(\.?(post|rc)\d+)?", str(row["engine_version"]))
    return {"tp": int(row["tp"]), "pp": int(row["pp"]), "dp": dp, "ep": ep,
            "dp_attention": str(row["dp_attention"]).startswith("yes"), "version": m.group(0) if m else None}


def _id(row: dict) -> str:
    lay = layout_of(row)
    tag = f"tp{lay['tp']}pp{lay['pp']}dp{lay['dp']}ep{lay['ep']}" + ("-attndp" if lay["dp_attention"] else "")
    return f"{row['perf_id']}-{ENGINES[row['engine']]}-{row['model_id'].split('/')[-1]}-{tag}"


def _judged_params():
    out = []
    for row in ROWS:
        if row["model_id"] in NO_CONFIG:
            continue
        marks = [pytest.mark.xfail(strict=True, reason=REFUSED[row["perf_id"]])] if row["perf_id"] in REFUSED else []
        out.append(pytest.param(row, id=_id(row), marks=marks))
    return out


@pytest.mark.parametrize("row", _judged_params())
def test_measured_layout_is_accepted_by_the_rules(row) -> None:
    """The run happened, so the rules of that framework and release accept its layout."""
    lay = layout_of(row)
    rec = _catalog().loc[row["model_id"]]
    v = check(rec, ENGINES[row["engine"]], lay["tp"], version=lay["version"], pp=lay["pp"], dp=lay["dp"],
              ep=lay["ep"], dp_attention=lay["dp_attention"])
    assert v.valid, (f"{row['perf_id']}: {row['engine']} {row['engine_version']} ran {row['model_id']} at "
                     f"{_id(row)} ({row['source_url']}) but the rules (release {v.release}) refuse it: "
                     f"{[f.message for f in v.failures]}")


@pytest.mark.parametrize("row", [pytest.param(r, id=_id(r)) for r in ROWS if r["model_id"] in NO_CONFIG])
def test_run_without_config(row) -> None:
    """The run cannot be judged: its model has no config we hold. Fails the day one appears."""
    mid = row["model_id"]
    assert mid not in _catalog().index, f"{mid} is now in the catalog: remove it from NO_CONFIG"
    assert not (SHARED / "hub-configs-2" / (mid.replace("/", "--") + ".json")).exists(), (
        f"{mid} is now in ../shared/hub-configs-2: remove it from NO_CONFIG ({NO_CONFIG[mid]})")


def test_every_run_is_judged_or_listed() -> None:
    assert len(ROWS) == 58
    unlisted = sorted({r["model_id"] for r in ROWS if r["model_id"] not in NO_CONFIG
                       and r["model_id"] not in _catalog().index})
    assert unlisted == [], f"runs whose model has no config and no NO_CONFIG reason: {unlisted}"
    assert set(REFUSED) <= {r["perf_id"] for r in ROWS}
    assert set(NO_CONFIG) <= {r["model_id"] for r in ROWS}


# --------------------------------------------------------------------------------------------
# Report (not asserted): the product's capacity ranking vs the measured throughput per source
# --------------------------------------------------------------------------------------------
def _source(url: str) -> str:
    return str(url).split("#")[0]


def _gpu_id(text: str) -> str | None:
    return next((v for k, v in GPU_IDS if k in str(text)), None)


def _groups() -> list[list[dict]]:
    """Runs of one source, engine, model and GPU type with at least two distinct layouts (judged rows only)."""
    by: dict[tuple, list[dict]] = {}
    for r in ROWS:
        if r["model_id"] in NO_CONFIG or _na(r["output_tok_s"]):
            continue
        by.setdefault((_source(r["source_url"]), r["engine"], r["model_id"], _gpu_id(r["gpu"])), []).append(r)
    return [g for g in by.values() if len({_id(r) for r in g}) >= 2]


def _plan_row(plan: pd.DataFrame, row: dict) -> pd.Series | None:
    lay = layout_of(row)
    fw = ENGINES[row["engine"]]
    sel = plan[(plan["framework"] == fw) & (plan["tp"] == lay["tp"]) & (plan["pp"] == lay["pp"])]
    if fw == "sglang" and lay["dp_attention"]:
        attn = lay["dp"] if lay["dp"] > 1 else 1
        sel = sel[(sel["attn_dp"] == attn) & (sel["dp"] == 1)]
    else:
        sel = sel[(sel["dp"] == lay["dp"]) & (sel["attn_dp"] == 1)]
    sel = sel[(sel["ep"] > 1) == (lay["ep"] > 1)]
    return sel.iloc[0] if len(sel) else None


CONTEXT = 8192  #: tokens per sequence the report's plans count (the runs use ShareGPT prompts, far shorter)


@lru_cache(maxsize=None)
def _plan(model_id: str, gpus: int, gpu: str, framework: str) -> pd.DataFrame:
    from dashboard import planner

    return planner.plan(_catalog().loc[model_id], gpus, gpu, frameworks=(framework,), context_len=CONTEXT,
                        commands=False)


def test_capacity_ranking_vs_measured_throughput_is_reported(artifacts_dir) -> None:
    """Report only (nothing about the order is asserted): per multi-layout source, the product's capacity order
    next to the measured order, counted in pairs of layouts; and every judged run the planner says would not
    start (memory, dtype, platform) although it ran."""
    lines = ["# Capacity ranking (product, interim: most KV capacity) vs measured output throughput",
             f"# one block per source x engine x model x GPU with >= 2 layouts; plans at {CONTEXT} tokens; pairs",
             "# compare sequences_total (the plan's capacity) with output tok/s; different GPU counts are",
             "# different plans, compared on total sequences", ""]
    pairs = {"same": 0, "opposite": 0, "tie": 0}
    for group in _groups():
        first = group[0]
        gpu, fw = _gpu_id(first["gpu"]), ENGINES[first["engine"]]
        lines.append(f"## {first['engine']} {first['model_id']} on {gpu} ({_source(first['source_url'])})")
        scored = []
        for r in group:
            p = _plan_row(_plan(r["model_id"], int(r["gpu_count"]), gpu, fw), r)
            scored.append((r, None if p is None else int(p["sequences_total"]), None if p is None else p["rank"]))
        scored.sort(key=lambda s: -float(s[0]["output_tok_s"]))
        for r, seqs, rank in scored:
            said = ("not planned" if seqs is None else
                    f"{seqs} sequences (rank {rank} in the {int(r['gpu_count'])}-GPU plan)")
            lines.append(f"  {_id(r):58s} measured {float(r['output_tok_s']):9.1f} tok/s   product {said}")
        for i, (a, sa, _) in enumerate(scored):
            for b, sb, _ in scored[i + 1:]:
                if sa is None or sb is None:
                    continue
                key = "tie" if sa == sb else "same" if sa > sb else "opposite"
                pairs[key] += 1
                if key != "same":
                    lines.append(f"  {key}: {a['perf_id']} measured faster than {b['perf_id']}, capacity {sa} vs {sb}")
        lines.append("")
    lines.append(f"pairs of layouts: {pairs['same']} ordered as measured, {pairs['opposite']} opposite, "
                 f"{pairs['tie']} tied in capacity")
    lines += ["", "# Judged runs the planner says would not start although they ran (rules, memory, dtype, platform)"]
    refused = 0
    for r in ROWS:
        gpu = _gpu_id(r["gpu"])
        if r["model_id"] in NO_CONFIG or gpu is None:
            continue
        p = _plan_row(_plan(r["model_id"], int(r["gpu_count"]), gpu, ENGINES[r["engine"]]), r)
        if p is None or not bool(p["starts"]):
            refused += 1
            lines.append(f"  {_id(r)} on {gpu}: " + ("layout not in the plan" if p is None else
                                                      f"{p['refusal_kind']}: {str(p['refusal'])[:200]}"))
    lines.append(f"  {refused} run(s)")
    (artifacts_dir / "measured_runs_ranking.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    assert sum(pairs.values()) > 0
