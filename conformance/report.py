"""Regenerate the generated parts of ``data/conformance/README.md`` from the committed tables:
per release, the outcome counts and the cells where the rules engine's first error still differs
from what the framework raised, each with the reason.

    python -m conformance report --version 0.33.0
    python -m conformance report --framework sglang --version 0.5.23
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from conformance import compare, driver
from dashboard import frameworks
from dashboard.atomic import atomic_write_text
from dashboard.catalog import load_catalog

README = driver.DATA / "README.md"

#: What one mismatch-table cell shows, by the column ids of the adapter's ``mismatch_columns``.
CELLS = {"tp": lambda r: str(r.tp), "pp": lambda r: str(r.pp), "dp": lambda r: str(r.dp),
         "ep_on": lambda r: "on" if r.ep else "off", "ep_size_from_dp": lambda r: str(r.dp if r.ep else 1),
         "vision_dp_on": lambda r: "on" if r.vision_dp else "off"}


def _adapter(framework: str):
    return frameworks.get(framework).conformance()


def stale_cells(table: pd.DataFrame) -> pd.Series:
    """Cells built from other inputs than the harness passes now: the sidecar files beside config.json
    (``driver.sidecars_for``) differ from the ones the cell records (e.g. a run started before a
    verbatim sidecar was added). They are listed, not judged: re-run those models."""
    now = {m: ",".join(sorted(driver.sidecars_for(m))) for m in table["model_id"].unique()}
    rec = table["sidecars"].map(lambda v: ",".join(sorted(v)) if isinstance(v, (list, tuple, np.ndarray))
                                else str(v or ""))
    return rec != table["model_id"].map(now)


def _worker(framework: str):
    import importlib.util

    path = driver.WORKER[framework]
    spec = importlib.util.spec_from_file_location(f"_{framework}_worker_for_report", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def unjudged(table: pd.DataFrame, framework: str) -> pd.Series:
    """Why a cell is left out of the comparison ("" = judged): ``stale`` (see :func:`stale_cells`), or a
    refusal the current worker classifies as a harness limitation (``harness_reason``: e.g. a file a Hub
    repository has beside config.json), which a run from before that marker recorded as a refusal."""
    out = pd.Series("", index=table.index, dtype=object)
    out[stale_cells(table)] = "run with other sidecar files than the harness passes now"
    if not _adapter(framework).judges_harness_reason:
        return out
    w = _worker(framework)
    refused = table["outcome"].isin(["refused_engine", "refused_build"]) & (out == "")
    for idx in table.index[refused]:
        exc = type(str(table.at[idx, "exc_type"]) or "Exception", (Exception,), {})(str(table.at[idx, "message"]))
        why = w.harness_reason(exc)
        if why:
            out[idx] = why
    return out


def _reason(row, reasons: tuple[tuple[str, str], ...] = ()) -> str:
    for needle, why in reasons:
        if needle in row.table_location or needle in row.table_message or needle in row.model_id:
            return why
    if row.engine_rule == "":
        return "no rule fires; the framework refused for a reason the engine does not model"
    return f"the engine's first rule is {row.engine_rule} ({row.engine_location or 'no site'})"


def section(release: str, table: pd.DataFrame, catalog: pd.DataFrame, framework: str = "vllm", *,
            key: str | None = None, title: str | None = None) -> str:
    """The README block of one table: outcome counts, the rules engine's agreement (judged on the table's own
    platform) and the first-error mismatches that remain, between ``<!-- mismatches <key> -->`` markers
    (``key`` default: the adapter's release key; ``title`` default ``### <label> <release>``)."""
    fw = frameworks.get(framework)
    adapter = fw.conformance()
    label = fw.label
    key = key or adapter.readme_key(framework, release)
    why = unjudged(table, framework)
    stale = why != ""
    cmp = compare.compare(table[~stale], catalog, framework, release)
    s = compare.summary(cmp)
    counts = table["outcome"].value_counts().reindex(list(driver.OUTCOMES), fill_value=0)
    esc = lambda t: str(t).replace("|", "\\|").replace("\n", " ")[:120]  # noqa: E731
    lines = [title or f"### {label} {release}", "",
             f"{len(table)} cells, {table['model_id'].nunique()} models: " +
             ", ".join(f"{k} {int(v)}" for k, v in counts.items()) +
             f" (harness_error {counts['harness_error'] / len(table):.1%}).", ""]
    if stale.any():
        lines += ["Not judged (re-run these models with the current harness):", ""]
        for (mid, reason), grp in table[stale].groupby([table["model_id"], why], sort=True):
            lines.append(f"- `{mid}`: {len(grp)} cells, {reason}")
        lines.append("")
    lines += [f"Rules engine vs {label} on the {s['cells']} judged cells: verdict {s['verdict_agree']}/{s['cells']}; "
              f"first error (message and raise site) {s['first_error_agree']}/{s['refused']} refused cells "
              f"({s['first_error_agree'] / max(s['refused'], 1):.1%}).", ""]
    header = ["model", *(h for h, _ in adapter.mismatch_columns), f"{label} raised", "engine says", "reason"]
    lines += [adapter.mismatch_caption, "",
              f"<!-- mismatches {key} -->",
              "| " + " | ".join(header) + " |",
              "|" + "---|" * len(header)]
    refused = cmp[~cmp["table_valid"] & cmp["verdict_ok"]]
    miss = refused[~(refused["message_ok"] & refused["location_ok"])]
    for r in miss.sort_values(["model_id", "ep", "dp", "pp", "tp"]).itertuples():
        raised = esc(r.table_message) + ("" if r.table_location in r.table_message else f" at {r.table_location}")
        cells = [f"`{r.model_id}`", *(CELLS[c](r) for _, c in adapter.mismatch_columns)]
        lines.append("| " + " | ".join(cells + [raised, esc(r.engine_message),
                                                _reason(r, adapter.reasons).replace("|", "\\|")]) + " |")
    if miss.empty:
        lines.append("| (none) " + "| " * (len(header) - 1) + "|")
    lines += ["<!-- /mismatches -->", ""]
    return "\n".join(lines)


def update(release: str, framework: str = "vllm") -> str:
    table = driver.load_table(framework, release)
    key = _adapter(framework).readme_key(framework, release)
    text = README.read_text(encoding="utf-8") if README.exists() else ""
    block = f"<!-- release {key} -->\n" + section(release, table, load_catalog(), framework) + f"<!-- /release {key} -->"
    pat = re.compile(rf"<!-- release {re.escape(key)} -->.*?<!-- /release {re.escape(key)} -->", re.S)
    if pat.search(text):
        text = pat.sub(lambda m: block, text)
    else:
        marker = "<!-- generated releases -->"
        if marker not in text:
            text = text.rstrip() + f"\n\n## Results\n\n{marker}\n"
        text = text.replace(marker, marker + "\n" + block + "\n")
    atomic_write_text(README, text)
    return block
