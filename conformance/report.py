"""Regenerate the generated parts of ``data/conformance/README.md`` from the committed tables:
per release, the outcome counts and the cells where the rules engine's first error still differs
from what vLLM raised, each with the reason.

    python -m conformance report --version 0.33.0
"""

from __future__ import annotations

import re

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


def _reason(row) -> str:
    for needle, why in REASONS:
        if needle in row.table_location or needle in row.table_message or needle in row.model_id:
            return why
    if row.engine_rule == "":
        return "no rule fires; vLLM refused for a reason the engine does not model"
    return f"the engine's first rule is {row.engine_rule} ({row.engine_location or 'no site'})"


def section(release: str, table: pd.DataFrame, catalog: pd.DataFrame) -> str:
    cmp = compare.compare(table, catalog, "vllm", release)
    s = compare.summary(cmp)
    counts = table["outcome"].value_counts().reindex(list(driver.OUTCOMES), fill_value=0)
    lines = [f"### vLLM {release}", "",
             f"{len(table)} cells, {table['model_id'].nunique()} models: " +
             ", ".join(f"{k} {int(v)}" for k, v in counts.items()) +
             f" (harness_error {counts['harness_error'] / len(table):.1%}).", "",
             f"Rules engine vs vLLM on the {s['cells']} judged cells: verdict {s['verdict_agree']}/{s['cells']}; "
             f"first error (message and raise site) {s['first_error_agree']}/{s['refused']} refused cells "
             f"({s['first_error_agree'] / max(s['refused'], 1):.1%}).", "",
             "Cells whose first error still differs (model, tp, dp, EP, vision DP, reason):", "",
             f"<!-- mismatches {release} -->",
             "| model | tp | dp | EP | vision DP | vLLM raised | engine says | reason |",
             "|---|---|---|---|---|---|---|---|"]
    refused = cmp[~cmp["table_valid"] & cmp["verdict_ok"]]
    miss = refused[~(refused["message_ok"] & refused["location_ok"])]
    for r in miss.sort_values(["model_id", "ep", "dp", "tp"]).itertuples():
        esc = lambda t: str(t).replace("|", "\\|").replace("\n", " ")[:120]  # noqa: E731
        lines.append(f"| `{r.model_id}` | {r.tp} | {r.dp} | {'on' if r.ep else 'off'} | "
                     f"{'on' if r.vision_dp else 'off'} | {esc(r.table_message)}" + ("" if r.table_location in r.table_message else f" at {r.table_location}") + " | "
                     f"{esc(r.engine_message)} | " + _reason(r).replace("|", "\\|") + " |")
    if miss.empty:
        lines.append("| (none) | | | | | | | |")
    lines += ["<!-- /mismatches -->", ""]
    return "\n".join(lines)


def update(release: str) -> str:
    table = driver.load_table("vllm", release)
    text = README.read_text(encoding="utf-8") if README.exists() else ""
    block = f"<!-- release {release} -->\n" + section(release, table, load_catalog()) + f"<!-- /release {release} -->"
    pat = re.compile(rf"<!-- release {re.escape(release)} -->.*?<!-- /release {re.escape(release)} -->", re.S)
    if pat.search(text):
        text = pat.sub(lambda m: block, text)
    else:
        marker = "<!-- generated releases -->"
        if marker not in text:
            text = text.rstrip() + f"\n\n## Results\n\n{marker}\n"
        text = text.replace(marker, marker + "\n" + block + "\n")
    atomic_write_text(README, text)
    return block
