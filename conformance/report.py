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
from dashboard.atomic import atomic_write_text
from dashboard.catalog import load_catalog

README = driver.DATA / "README.md"

#: Why a known kind of cell still differs (matched on the table's raise site / message).
REASONS = (
    ("chatglm.py", "model-level error of this checkpoint, not a TP rule"),
    ("laguna.py", "Laguna's own attention assert (laguna.py) fires before the MoE: no rule models it yet"),
    ("Laguna", "Laguna's shared expert gate_proj is a plain ColumnParallelLinear: its block_n check "
               "(compressed-tensors FP8) comes before the experts; no rule models it yet"),
    ("GLM-4.5V", "GLM-4.xV vision MLP (MergedColumnParallelLinear over the vision intermediate size) fails "
                 "before the embedding; no vision-MLP rule for GLM-4.xV yet"),
    ("GLM-5", "a block-FP8 projection of the DSA indexer (448 per rank) fails before the MLP; the catalog "
              "has no indexer columns"),
)


#: SGLang: why a known kind of cell still differs.
SGLANG_REASONS: tuple[tuple[str, str], ...] = (
    ("THUDM/chatglm-6b", "SGLang's ChatGLMConfig ignores vocab_size and reads padded_vocab_size (default 65024), "
                         "which chatglm-6b's config lacks; the catalog keeps vocab_size (130528), padded to "
                         "130560, which 3, 6 and 12 divide, so the engine's first rule is the attention assert"),
)

LABEL = {"vllm": "vLLM", "sglang": "SGLang", "megatron-core": "Megatron-Core"}


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
    if framework == "vllm":
        return out
    w = _worker(framework)
    refused = table["outcome"].isin(["refused_engine", "refused_build"]) & (out == "")
    for idx in table.index[refused]:
        exc = type(str(table.at[idx, "exc_type"]) or "Exception", (Exception,), {})(str(table.at[idx, "message"]))
        why = w.harness_reason(exc)
        if why:
            out[idx] = why
    return out


def _reason(row, reasons=REASONS) -> str:
    for needle, why in reasons:
        if needle in row.table_location or needle in row.table_message or needle in row.model_id:
            return why
    if row.engine_rule == "":
        return "no rule fires; the framework refused for a reason the engine does not model"
    return f"the engine's first rule is {row.engine_rule} ({row.engine_location or 'no site'})"


def section(release: str, table: pd.DataFrame, catalog: pd.DataFrame, framework: str = "vllm") -> str:
    label = LABEL.get(framework, framework)
    key = release if framework == "vllm" else f"{framework}-{release}"
    why = unjudged(table, framework)
    stale = why != ""
    cmp = compare.compare(table[~stale], catalog, framework, release)
    s = compare.summary(cmp)
    counts = table["outcome"].value_counts().reindex(list(driver.OUTCOMES), fill_value=0)
    esc = lambda t: str(t).replace("|", "\\|").replace("\n", " ")[:120]  # noqa: E731
    lines = [f"### {label} {release}", "",
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
    if framework == "vllm":
        lines += ["Cells whose first error still differs (model, tp, dp, EP, vision DP, reason):", "",
                  f"<!-- mismatches {key} -->",
                  "| model | tp | dp | EP | vision DP | vLLM raised | engine says | reason |",
                  "|---|---|---|---|---|---|---|---|"]
    elif framework == "megatron-core":
        lines += ["Cells whose first error still differs (model, tp, pp, EP size, reason):", "",
                  f"<!-- mismatches {key} -->",
                  f"| model | tp | pp | EP | {label} raised | engine says | reason |",
                  "|---|---|---|---|---|---|---|"]
    else:
        lines += ["Cells whose first error still differs (model, tp, attention-DP, EP, reason):", "",
                  f"<!-- mismatches {key} -->",
                  f"| model | tp | attention-DP | EP | {label} raised | engine says | reason |",
                  "|---|---|---|---|---|---|---|"]
    refused = cmp[~cmp["table_valid"] & cmp["verdict_ok"]]
    miss = refused[~(refused["message_ok"] & refused["location_ok"])]
    reasons = REASONS if framework == "vllm" else SGLANG_REASONS
    for r in miss.sort_values(["model_id", "ep", "dp", "pp", "tp"]).itertuples():
        raised = esc(r.table_message) + ("" if r.table_location in r.table_message else f" at {r.table_location}")
        if framework == "megatron-core":
            cells = [f"`{r.model_id}`", str(r.tp), str(r.pp), str(r.dp if r.ep else 1)]
        else:
            cells = [f"`{r.model_id}`", str(r.tp), str(r.dp), "on" if r.ep else "off"]
        if framework == "vllm":
            cells.append("on" if r.vision_dp else "off")
        lines.append("| " + " | ".join(cells + [raised, esc(r.engine_message),
                                                _reason(r, reasons).replace("|", "\\|")]) + " |")
    if miss.empty:
        lines.append("| (none) " + "| " * (7 if framework == "vllm" else 6) + "|")
    lines += ["<!-- /mismatches -->", ""]
    return "\n".join(lines)


def update(release: str, framework: str = "vllm") -> str:
    table = driver.load_table(framework, release)
    key = release if framework == "vllm" else f"{framework}-{release}"
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
