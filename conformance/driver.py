"""The conformance driver: which cells to run, batches of models as Ray tasks, checkpoints, tables.

Runs in the project's Python. For each batch of models a task (:mod:`conformance.cluster`, on a local Ray or a
cluster) starts the framework venv's interpreter on the worker script (``conformance/<framework>_worker.py``),
sends the models' cells, and streams back one JSON record per cell (:mod:`conformance.executor`). As each model
comes back, the driver -- the one writer -- writes its records atomically to ``<work>/<model-file-stem>.json``;
a model whose file exists is skipped on the next run, so an interrupted run resumes where it stopped and loses
at most the models in flight. ``assemble`` turns the per-model files into
``data/conformance/<framework>-<version>.parquet`` (atomic).
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd

from conformance import cluster, executor
from conformance.worker_common import (  # noqa: F401 - the workers' protocol
    CELL_PREFIX,
    MODEL_DONE,
    MODEL_START,
)
from dashboard import frameworks, gpus
from dashboard.atomic import atomic_write, atomic_write_text
from dashboard.catalog import model_id_from_filename

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data" / "conformance"
#: Framework id -> its worker script (frameworks whose conformance adapter the driver runs).
WORKER = {fw.name: Path(__file__).resolve().parent / fw.conformance().worker
          for fw in frameworks.all_frameworks() if fw.conformance() is not None}

#: TP sizes of the tables (the dashboard's defaults).
TP_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)
#: DP sizes run without EP for MoE models (MoE tensor parallelism spans TP x DP there).
MOE_DP_SIZES = (2, 3)
#: SGLang: attention-DP sizes (``--attn-dp-size``; recorded in the ``dp`` column).
SGLANG_ATTN_DP_SIZES = (1, 2, 4)
#: Megatron-Core: pipeline sizes, and expert-parallel sizes run for MoE models (``dp`` = EP, ``ep`` on) at
#: the pipeline sizes in MEGATRON_EP_PP_SIZES (the pipeline split check does not depend on EP).
MEGATRON_PP_SIZES = (1, 2, 3, 4)
MEGATRON_EP_SIZES = (2, 4, 8)
MEGATRON_EP_PP_SIZES = (1, 2)
#: The platform of the first tables (``data/conformance/<fw>-<version>.parquet``, full depth); every other
#: platform's table is ``data/conformance/<platform>/<fw>-<version>.parquet`` (depth "platform" by default).
DEFAULT_PLATFORM = gpus.DEFAULT_PLATFORM
#: Depths of a run: ``full`` (the cuda-sm90 tables), ``platform`` (the other platforms: TP sizes; EP off/on
#: for MoE models; vision DP; no MoE DP), ``tp`` (TP sizes only).
DEPTHS = ("full", "platform", "tp")
OUTCOMES = ("built", "refused_engine", "refused_build", "harness_error", "not_run")

#: Columns of a conformance table, in order.
COLUMNS = (
    "framework", "version", "model_id", "tp", "pp", "dp", "ep", "vision_dp", "outcome", "reason",
    "exc_type", "message", "file", "line", "function", "param_bytes", "param_count",
    "param_bytes_by_dtype", "kv_cache", "seconds", "platform", "sidecars",
)

#: Files the harness puts beside a model's verbatim config.json, per model (``<org>--<name>/<file>``):
#: quantization sidecars a real checkpoint keeps outside config.json (ModelOpt's hf_quant_config.json,
#: AutoGPTQ's quantize_config.json) that ../shared/hub-configs does not hold. They are ours, written from
#: what the catalog infers (see data/conformance/sidecars/README.md); cells built with them name them in
#: the table's ``sidecars`` column.
SIDECARS = DATA / "sidecars"


#: verbatim sidecars of catalog models (the catalog reads them too, dashboard.catalog.default_sidecars_dir)
VERBATIM_SIDECARS = REPO / "data" / "sidecars"


def sidecars_for(model_id: str) -> dict[str, str]:
    """{file name: path} of the sidecar files put beside ``model_id``'s config.json (empty when none):
    the verbatim ones in ``data/sidecars/`` and the harness's own in ``data/conformance/sidecars/``."""
    out: dict[str, str] = {}
    for root in (VERBATIM_SIDECARS, SIDECARS):
        d = root / model_id.replace("/", "--")
        if d.is_dir():
            out.update({p.name: str(p) for p in sorted(d.iterdir()) if p.is_file() and p.suffix == ".json"})
    return out


@dataclass(frozen=True)
class Cell:
    tp: int
    pp: int = 1
    dp: int = 1
    ep: bool = False
    vision_dp: bool = False

    def as_dict(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": int(self.ep), "vision_dp": int(self.vision_dp)}

    def key(self) -> tuple:
        return (self.tp, self.pp, self.dp, int(self.ep), int(self.vision_dp))


def config_files(configs_dir: Path) -> list[Path]:
    # absolute: the worker runs in /tmp
    return sorted(p for p in Path(configs_dir).resolve().glob("*.json") if p.is_file())


def _raw(path: Path) -> dict:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


def _is_moe(raw: dict) -> bool:
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    for d in (raw, text):
        for k in ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"):
            v = d.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v > 1:
                return True
    return False


def _has_vision(raw: dict) -> bool:
    return isinstance(raw.get("vision_config"), dict)


def plan_cells(raw: dict, depth: str = "full", framework: str = "vllm") -> list[Cell]:
    """The cells run for one model. vLLM: every TP size with EP off and on; DP 2 and 3 without EP for
    MoE models; vision-DP (``mm_encoder_tp_mode="data"``) for models with a vision tower. ``depth="platform"``
    (every platform but cuda-sm90): TP sizes; EP on too for MoE models; vision-DP; no DP. SGLang:
    every TP size x EP off/on (``--ep-size`` = TP) x attention-DP 1/2/4 (``--attn-dp-size``, in the
    ``dp`` field), for every model (see :func:`plan_cells_sglang`)."""
    plan = frameworks.get(framework).conformance().cell_plan
    if plan == "attention_dp":
        return plan_cells_sglang(depth, raw)
    if plan == "pipeline_ep":
        return plan_cells_megatron(raw, depth)
    if depth not in DEPTHS:
        raise ValueError(f"unknown depth {depth!r}; one of {', '.join(DEPTHS)}")
    cells = [Cell(tp) for tp in TP_SIZES]
    if depth == "tp":
        return cells
    if depth == "platform":  # issue 23: TP x EP off/on for MoE, vision DP; no MoE DP, no EP on dense models
        if _is_moe(raw):
            cells += [Cell(tp, ep=True) for tp in TP_SIZES]
        if _has_vision(raw):
            cells += [Cell(tp, vision_dp=True) for tp in TP_SIZES if tp > 1]
        return cells
    cells += [Cell(tp, ep=True) for tp in TP_SIZES]
    if _is_moe(raw):
        cells += [Cell(tp, dp=dp) for dp in MOE_DP_SIZES for tp in TP_SIZES]
    if _has_vision(raw):
        cells += [Cell(tp, vision_dp=True) for tp in TP_SIZES if tp > 1]
    return cells


def plan_cells_sglang(depth: str = "full", raw: dict | None = None) -> list[Cell]:
    """SGLang's cells: TP x EP off/on x attention-DP 1/2/4, in table order (EP, DP, TP). ``dp`` is the
    attention-DP size (``--attn-dp-size``; data-parallel replicas, ``--dp-size``, are not run), ``ep``
    means ``--ep-size`` equal to the TP size. ``depth="tp"``: the TP sizes alone. ``depth="platform"``
    (issue 23, every platform but cuda-sm90; needs the model's ``raw`` config): TP sizes; EP on too for MoE
    models; vision DP (``--mm-enable-dp-encoder``, TP > 1) for models with a vision tower; attention-DP 1
    only."""
    if depth not in DEPTHS:
        raise ValueError(f"unknown depth {depth!r}; one of {', '.join(DEPTHS)}")
    if depth == "tp":
        return [Cell(tp) for tp in TP_SIZES]
    if depth == "platform":
        if raw is None:
            raise ValueError("depth 'platform' plans from the model's config: pass raw")
        cells = [Cell(tp) for tp in TP_SIZES]
        if _is_moe(raw):
            cells += [Cell(tp, ep=True) for tp in TP_SIZES]
        if _has_vision(raw):
            cells += [Cell(tp, vision_dp=True) for tp in TP_SIZES if tp > 1]
        return cells
    return [Cell(tp, dp=dp, ep=ep) for ep in (False, True) for dp in SGLANG_ATTN_DP_SIZES for tp in TP_SIZES]


def plan_cells_megatron(raw: dict, depth: str = "full") -> list[Cell]:
    """Megatron-Core's cells: TP x PP 1/2/3/4 without expert parallelism; for MoE models also EP 2/4/8 at
    PP 1/2 (``ep`` on, ``dp`` = the EP size: Megatron takes the EP ranks from the DP ranks and expert-TP
    defaults to the TP size, so DP = EP is the smallest world that holds the layout). ``depth="tp"``: PP 1
    only."""
    pps = (1,) if depth == "tp" else MEGATRON_PP_SIZES
    cells = [Cell(tp, pp=pp) for pp in pps for tp in TP_SIZES]
    if depth != "tp" and _is_moe(raw):
        cells += [Cell(tp, pp=pp, dp=e, ep=True) for e in MEGATRON_EP_SIZES for pp in MEGATRON_EP_PP_SIZES
                  for tp in TP_SIZES]
    return cells


def default_depth(platform: str) -> str:
    """The depth a run takes by default on ``platform``: ``full`` on cuda-sm90, ``platform`` elsewhere."""
    return "full" if platform == DEFAULT_PLATFORM else "platform"


def _platform_dir(root: Path, platform: str) -> Path:
    if platform == DEFAULT_PLATFORM:
        return root
    gpus.platform(platform)  # ValueError naming the known ids
    return root / platform


def work_dir(framework: str, version: str, platform: str = DEFAULT_PLATFORM) -> Path:
    """The per-model checkpoint folder of a run: ``data/conformance/.work/<fw>-<version>/`` on cuda-sm90,
    ``data/conformance/.work/<platform>/<fw>-<version>/`` on any other platform."""
    return _platform_dir(DATA / ".work", platform) / f"{framework}-{version}"


def device_descriptor(platform: str) -> dict | None:
    """What the worker's platform stand-in answers for ``platform`` (a :data:`dashboard.gpus.PLATFORMS` id):
    ``platform``, ``vendor`` (nvidia / amd), ``gpu`` (the representative card's data/gpus.csv id),
    ``name`` (as the driver names it), ``capability`` ([major, minor]: CUDA compute capability; ROCm's
    torch reports gfx942 as 9.4, gfx950 as 9.5), ``total_memory`` (bytes, data/gpus.csv ``memory_bytes``) and
    ``arch`` (ROCm ``gcnArchName``, e.g. ``gfx942``; "" on CUDA), ``compute_units`` (SMs / CUs of that card,
    ``multi_processor_count``; :class:`dashboard.gpus.Platform`). ``None`` for ``"cpu"`` (vLLM's CPU
    platform, no device). Raises ``ValueError`` for an unknown platform."""
    if platform == "cpu":
        return None
    p = gpus.platform(platform)
    row = gpus.gpu_row(p.stand_in)
    return {"platform": p.id, "vendor": p.vendor, "gpu": str(row["gpu"]), "name": str(row["name"]),
            "capability": [int(p.capability[0]), int(p.capability[1])], "total_memory": int(row["memory_bytes"]),
            "arch": p.arch, "compute_units": int(p.compute_units)}


def _stem(model_id: str) -> str:
    return model_id.replace("/", "--")


def _env(python: str) -> dict:
    """The worker process's environment (:func:`conformance.executor.worker_env`)."""
    return executor.worker_env(python)


def _missing(cells: list[Cell], recs: list[dict], reason: str) -> list[dict]:
    return executor.missing([c.as_dict() for c in cells], recs, reason)


def job_for(framework: str, jobs: list[tuple[Path, list[Cell]]], *, platform: str, extra: dict | None = None) -> dict:
    """The worker job of a batch of models (the first line a worker reads: ``conformance/worker_common.py``)."""
    return {"platform": platform, "device": device_descriptor(platform),
            "models": [{"config_path": str(f), "model_id": model_id_from_filename(f),
                        "cells": [c.as_dict() for c in cells],
                        "sidecars": sidecars_for(model_id_from_filename(f))} for f, cells in jobs],
            **(extra or {})}


def run_batch(python: str, framework: str, jobs: list[tuple[Path, list[Cell]]], *, platform: str,
              model_timeout: float, on_model, extra: dict | None = None) -> None:
    """Run several models in one worker process, in this process (vLLM's import costs ~15 s; a model's cells
    ~0.1 s each). ``on_model(model_id, records)`` is called as each model completes. A worker that dies or
    stalls on a model is killed; that model's unfinished cells become ``harness_error`` and the remaining
    models go to a new worker (:func:`conformance.executor.iter_job`)."""
    executor.run_job(python, WORKER[framework], job_for(framework, jobs, platform=platform, extra=extra),
                     model_timeout=model_timeout, on_model=on_model)


def run(python: str, framework: str, version: str, configs_dir: Path, *, models: Iterable[str] | None = None,
        depth: str = "full", platform: str = "cuda-sm90", model_timeout: float = 900.0, limit: int | None = None,
        workers: int | None = None, batch: int = 12, ray: str | None = None, log=print) -> Path:
    """Run every model not yet checkpointed, ``batch`` models per worker process, as Ray tasks
    (:mod:`conformance.cluster`: ``ray`` None or ``"auto"``: a local Ray with ``workers`` CPUs, default the
    machine's; ``"HOST:PORT"``: that cluster). With ``workers == 1`` and no ``ray``, the batches run one after the
    other in this process instead (no Ray start-up, 20-45 s on this shared 2-core machine). Each model's records are written here, atomically,
    to ``<work>/<model>.json`` as they arrive; returns the work folder. Raises SystemExit when Ray tasks failed as a
    whole (their models stay un-checkpointed for the next run)."""
    wd = work_dir(framework, version, platform)
    wd.mkdir(parents=True, exist_ok=True)
    files = config_files(configs_dir)
    wanted = set(models) if models else None
    todo = []
    for f in files:
        mid = model_id_from_filename(f)
        if wanted is not None and mid not in wanted:
            continue
        if (wd / f"{_stem(mid)}.json").exists():
            continue
        todo.append(f)
    if limit is not None:
        todo = todo[:limit]
    log(f"{framework} {version} on {platform} (depth {depth}): {len(todo)} models to run ({len(files)} configs); work folder {wd}")
    done = [0]
    t_start = time.monotonic()

    def on_model(mid: str, recs: list[dict]) -> None:  # the one writer of the checkpoints
        for r in recs:
            r["model_id"] = mid
            r["framework"] = framework
            if r.get("version") not in (None, version):
                raise SystemExit(f"the venv runs {framework} {r['version']}, not {version}")
            r["version"] = version
            if r.get("platform") not in (None, platform):
                raise SystemExit(f"the worker ran {r['platform']}, not {platform}")
            r["platform"] = platform
        recs.sort(key=lambda r: (int(r["ep"]), r["dp"], int(r.get("vision_dp", 0)), r["pp"], r["tp"]))
        atomic_write_text(wd / f"{_stem(mid)}.json", json.dumps({"model_id": mid, "records": recs}, default=str))
        counts = pd.Series([r["outcome"] for r in recs]).value_counts().to_dict()
        done[0] += 1
        log(f"[{done[0]}/{len(todo)} {time.monotonic() - t_start:.0f}s] {mid}: {len(recs)} cells {counts}")

    jobs = [job_for(framework, [(f, plan_cells(_raw(f), depth, framework)) for f in todo[i:i + batch]],
                    platform=platform) for i in range(0, len(todo), batch)]
    if ray is None and workers == 1:
        for job in jobs:
            executor.run_job(python, WORKER[framework], job, model_timeout=model_timeout, on_model=on_model)
        return wd
    failed = cluster.run_jobs(python, WORKER[framework], jobs, model_timeout=model_timeout, on_model=on_model,
                              address=ray, workers=workers, log=log)
    if failed:
        raise SystemExit(f"{len(failed)} Ray tasks failed; their models have no checkpoint, run again to resume "
                         f"(first: {failed[0]})")
    return wd


def run_model(python: str, framework: str, config_path: Path, cells: list[Cell], *, platform: str,
              timeout: float) -> list[dict]:
    """One model's cells in a fresh worker (used by :func:`verify`; ``no_cache``: the Megatron-Core worker
    builds every cell again instead of reusing records of identical configs)."""
    out: list[dict] = []
    run_batch(python, framework, [(config_path, cells)], platform=platform, model_timeout=timeout,
              on_model=lambda mid, recs: out.extend(recs), extra={"no_cache": True})
    return out


def inspect_params(python: str, framework: str, config_path: Path, cell: Cell, *,
                   sidecars: Iterable[Path] = (), timeout: float = 900, platform: str = DEFAULT_PLATFORM) -> dict:
    """Build one cell and return its record with ``params``: rank 0's parameters as ``[name, shape,
    dtype, bytes]`` (the diagnostic behind ``python -m conformance params``; not written to a table).
    ``sidecars`` are files copied beside ``config.json`` (e.g. a checkpoint's ``hf_quant_config.json``)."""
    model = {"config_path": str(config_path), "model_id": model_id_from_filename(config_path),
             "cells": [dict(cell.as_dict(), params_detail=True)],
             "sidecars": {**sidecars_for(model_id_from_filename(config_path)),
                          **{Path(s).name: str(Path(s).resolve()) for s in sidecars}}}
    job = {"platform": platform, "device": device_descriptor(platform), "models": [model]}
    proc = subprocess.run([python, str(WORKER[framework])], input=json.dumps(job) + "\n", text=True,
                          capture_output=True, env=_env(python), cwd="/tmp", timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith(CELL_PREFIX):
            return json.loads(line[len(CELL_PREFIX):])
    raise RuntimeError(f"the worker returned no cell (exit {proc.returncode}): {proc.stderr[-2000:]}")


def group_params(params: list[list], depth: int = 99) -> pd.DataFrame:
    """Sum ``[name, shape, dtype, bytes]`` rows over layers: ``layers.<i>.`` becomes ``layers.*.``
    and names are cut to ``depth`` dotted parts; one row per (group, dtype), largest first."""
    rows = []
    for name, shape, dtype, nbytes in params:
        g = re.sub(r"\.(\d+)\.", ".*.", name)
        g = re.sub(r"\.(\d+)\.", ".*.", g)
        rows.append((".".join(g.split(".")[:depth]), dtype, int(nbytes), 1))
    df = pd.DataFrame(rows, columns=["group", "dtype", "bytes", "tensors"])
    df = df.groupby(["group", "dtype"], as_index=False).sum().sort_values("bytes", ascending=False)
    return df.reset_index(drop=True)


def dump_registry(python: str, framework: str, version: str, platform: str = DEFAULT_PLATFORM) -> Path:
    """Write ``data/conformance/[<platform>/]<framework>-<version>-architectures.json``: the architectures the
    release's model registry knows (in its own order), the ones it dropped and the ones moved out of
    tree -- the data of the "architecture registry" rules (read under ``platform``'s stand-in)."""
    out = table_path(framework, version, platform).with_name(f"{framework}-{version}-architectures.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp.json")
    job = {"platform": platform, "device": device_descriptor(platform), "models": [], "registry_out": str(tmp)}
    subprocess.run([python, str(WORKER[framework])], input=json.dumps(job) + "\n", text=True, capture_output=True,
                   env=_env(python), cwd="/tmp", check=True, timeout=600)
    if not tmp.exists():  # the stand-in could not be installed: every cell will say why (harness_error)
        print(f"warning: {framework} {version} on {platform}: the worker wrote no registry (platform stand-in "
              f"failed); {out.name} not written")
        return out
    data = json.loads(tmp.read_text())
    tmp.unlink()
    if data.get("version") != version:
        raise SystemExit(f"the venv runs {framework} {data.get('version')}, not {version}")
    atomic_write_text(out, json.dumps(data, indent=1) + "\n")
    return out


def load_work(framework: str, version: str, platform: str = DEFAULT_PLATFORM) -> pd.DataFrame:
    wd = work_dir(framework, version, platform)
    rows = []
    for p in sorted(wd.glob("*.json")):
        rows.extend(json.loads(p.read_text())["records"])
    return records_frame(rows, framework, version)


def rows_frame(rows: list[dict], columns: Iterable[str], framework: str, version: str) -> pd.DataFrame:
    """``rows`` as a frame holding every column of ``columns`` (None where no row has it), with the
    ``framework`` and ``version`` columns set (column order: the rows', then the added ones)."""
    df = pd.DataFrame(rows)
    for c in columns:
        if c not in df.columns:
            df[c] = None
    df["framework"] = framework
    df["version"] = version
    return df


def records_frame(rows: list[dict], framework: str, version: str) -> pd.DataFrame:
    df = rows_frame(rows, COLUMNS, framework, version)
    df["param_bytes_by_dtype"] = df["param_bytes_by_dtype"].map(
        lambda v: json.dumps(v, sort_keys=True) if isinstance(v, dict) else (v if isinstance(v, str) else ""))
    df["sidecars"] = df["sidecars"].map(
        lambda v: ",".join(v) if isinstance(v, list) else (v if isinstance(v, str) else ""))
    df["kv_cache"] = df["kv_cache"].map(
        lambda v: json.dumps(v) if isinstance(v, list) else (v if isinstance(v, str) else ""))
    df = df[list(COLUMNS)].copy()
    for c in ("tp", "pp", "dp", "ep", "vision_dp", "line"):
        df[c] = pd.to_numeric(df[c], errors="coerce").fillna(0).astype("int64")
    df["ep"] = df["ep"].astype(bool)
    df["vision_dp"] = df["vision_dp"].astype(bool)
    for c in ("param_bytes", "param_count"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
    df["seconds"] = pd.to_numeric(df["seconds"], errors="coerce")
    for c in ("framework", "version", "model_id", "outcome", "reason", "exc_type", "message", "file", "function",
              "param_bytes_by_dtype", "kv_cache", "platform"):
        df[c] = df[c].fillna("").astype(str)
    return df.sort_values(["model_id", "ep", "dp", "vision_dp", "tp"]).reset_index(drop=True)


def table_path(framework: str, version: str, platform: str = DEFAULT_PLATFORM) -> Path:
    """``data/conformance/<fw>-<version>.parquet`` on cuda-sm90, ``data/conformance/<platform>/<fw>-<version>.parquet``
    on any other platform."""
    return _platform_dir(DATA, platform) / f"{framework}-{version}.parquet"


def assemble(framework: str, version: str, platform: str = DEFAULT_PLATFORM) -> Path:
    df = load_work(framework, version, platform)
    if df.empty:
        raise SystemExit(f"no checkpoints in {work_dir(framework, version, platform)}: run first")
    wrong = sorted(set(df["platform"]) - {platform})
    if wrong:
        raise SystemExit(f"{work_dir(framework, version, platform)} holds rows of {', '.join(wrong)}, not {platform}")
    path = table_path(framework, version, platform)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda fh: df.to_parquet(fh, index=False))
    return path


def load_table(framework: str, version: str, platform: str = DEFAULT_PLATFORM) -> pd.DataFrame:
    return pd.read_parquet(table_path(framework, version, platform))


def verify(python: str, framework: str, version: str, configs_dir: Path, *, sample: int = 40, seed: int = 0,
           platform: str = "cuda-sm90", log=print) -> pd.DataFrame:
    """Re-run a fixed random sample of the committed table's cells and diff outcome, exception type,
    message and raise site. Returns one row per sampled cell with ``same`` True/False."""
    table = load_table(framework, version, platform)
    ran = table[table["outcome"] != "not_run"]
    pick = ran.sample(n=min(sample, len(ran)), random_state=seed)
    files = {model_id_from_filename(f): f for f in config_files(configs_dir)}
    out = []
    for mid, grp in pick.groupby("model_id", sort=True):
        cells = [Cell(int(r.tp), int(r.pp), int(r.dp), bool(r.ep), bool(r.vision_dp)) for r in grp.itertuples()]
        if mid not in files:
            for r in grp.itertuples():
                out.append({"model_id": mid, "tp": r.tp, "dp": r.dp, "ep": r.ep, "vision_dp": r.vision_dp,
                            "table": r.outcome, "rerun": "missing config", "same": False, "diff": "config missing"})
            continue
        recs = {(x["tp"], x["pp"], x["dp"], bool(x["ep"]), bool(x.get("vision_dp", 0))): x
                for x in run_model(python, framework, files[mid], cells, platform=platform, timeout=1800)}
        for r in grp.itertuples():
            x = recs.get((r.tp, r.pp, r.dp, bool(r.ep), bool(r.vision_dp)), {})
            diffs = []
            for col in ("outcome", "exc_type", "message", "file", "line", "param_bytes"):
                a = getattr(r, col)
                b = x.get(col)
                if col == "message":  # the config folder is a fresh temp dir in every run
                    a, b = (re.sub(r"/tmp/conf-\w+", "<config dir>", str(v or "")) for v in (a, b))
                if col in ("line",):
                    b = int(b or 0)
                if col == "param_bytes":
                    a = None if pd.isna(a) else int(a)
                    b = None if b is None else int(b)
                if (a or None) != (b or None):
                    diffs.append(f"{col}: {a!r} -> {b!r}")
            out.append({"model_id": mid, "tp": r.tp, "dp": r.dp, "ep": bool(r.ep), "vision_dp": bool(r.vision_dp),
                        "table": r.outcome, "rerun": x.get("outcome"), "same": not diffs, "diff": "; ".join(diffs)})
        log(f"verified {mid}: {len(grp)} cells")
    return pd.DataFrame(out)


def sample_models(configs_dir: Path, n: int, seed: int) -> list[str]:
    ids = [model_id_from_filename(f) for f in config_files(configs_dir)]
    return random.Random(seed).sample(ids, min(n, len(ids)))


def python_of(venv: str | os.PathLike) -> str:
    p = Path(venv) / "bin" / "python"
    if not p.exists():
        raise SystemExit(f"no interpreter at {p}: create the venv first (data/conformance/README.md)")
    return str(p)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: python -m conformance --help")
