"""A platform's table against the cuda-sm90 one: which cells differ, and how (issue 23).

    python -m conformance report --version 0.33.0 --platform cuda-sm80

Pure pandas over two committed tables (``data/conformance/<platform>/<fw>-<version>.parquet`` and the
cuda-sm90 ``data/conformance/<fw>-<version>.parquet``): no framework install. A cell *differs* when both
tables hold it and the outcome, or for two refusals the first error (exception type, message, raise site
``file:line``), is not the same. :func:`update` writes the summary into ``data/conformance/README.md``
between ``<!-- platform <P> <fw> <version> -->`` markers, with the rules engine's agreement on the platform's
table (judged on that platform) and its remaining first-error mismatches (``<!-- mismatches <fw>-<version>-<P>
-->``, held by ``tests/rules/test_conformance_platform_rules.py``).
"""

from __future__ import annotations

import json
import re

import pandas as pd

from conformance import driver
from dashboard.atomic import atomic_write_text

README = driver.DATA / "README.md"
KEY = ["model_id", "tp", "pp", "dp", "ep", "vision_dp"]
REFUSED = ("refused_engine", "refused_build")

#: Kinds of a difference, by the raise site or message of the new first error (first match wins); the
#: words a reader greps for. Sites are vLLM-relative paths (``vllm/...``).
KINDS = (
    ("FP8 KV cache is not supported", "attention backend: FP8 KV cache needs SM 8.9 (Triton backends)"),
    ("No valid attention backend", "attention backend selection (no backend for this GPU)"),
    ("attention backend", "attention backend selection"),
    ("MoE backend", "MoE kernel selection (no MoE backend takes the quantization scheme on this GPU)"),
    ("marlin", "kernel selection: Marlin (weight-only) path"),
    ("Marlin", "kernel selection: Marlin (weight-only) path"),
    ("Bfloat16", "dtype: bfloat16 needs SM 8.0"),
    ("min_capability", "quantization minimum capability"),
    ("minimum capability", "quantization minimum capability"),
    ("compute capability", "dtype / quantization minimum capability"),
    ("fp8_utils", "FP8 block kernel checks"),
    ("fused_moe", "MoE kernel selection"),
    ("quantization", "quantization method"),
)


def _shown(r) -> str:
    if r["outcome"] not in REFUSED:
        return r["outcome"]
    msg = str(r["message"] or "")
    head = msg.splitlines()[0][:160] if msg else f"{r['exc_type']} (no message)"
    return f"{head} at {r['file']}:{int(r['line'])}"


def kind_of(row) -> str:
    """The kind of one difference (:data:`KINDS`), read from the new cell's raise site and message, else
    from the old one's (a refusal that went away); "other" when nothing matches."""
    for side in ("new", "sm90"):
        text = f"{row[f'file_{side}']} {row[f'message_{side}']}"
        for needle, kind in KINDS:
            if needle in text:
                return kind
    return "other"


def differences(new: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """The cells held by both tables whose outcome or first error differs, one row each: the key columns,
    ``outcome_sm90``/``outcome_new``, ``shown_sm90``/``shown_new`` (first error as the user reads it, with its
    raise site), the raw ``message_*``/``file_*``/``line_*`` and ``kind`` (:func:`kind_of`)."""
    cols = KEY + ["outcome", "exc_type", "message", "file", "line"]
    m = new[cols].merge(base[cols], on=KEY, suffixes=("_new", "_sm90"))
    same_outcome = m["outcome_new"] == m["outcome_sm90"]
    both_refused = m["outcome_new"].isin(REFUSED) & m["outcome_sm90"].isin(REFUSED)
    same_error = ((m["exc_type_new"] == m["exc_type_sm90"]) & (m["message_new"] == m["message_sm90"])
                  & (m["file_new"] == m["file_sm90"]) & (m["line_new"] == m["line_sm90"]))
    diff = m[~same_outcome | (both_refused & ~same_error)].copy()
    for side in ("new", "sm90"):
        part = diff[[f"{c}_{side}" for c in ("outcome", "exc_type", "message", "file", "line")]]
        part.columns = ["outcome", "exc_type", "message", "file", "line"]
        diff[f"shown_{side}"] = [_shown(r) for r in part.to_dict("records")]
    diff["kind"] = [kind_of(r) for r in diff.to_dict("records")]
    return diff.sort_values(KEY).reset_index(drop=True)


def section(framework: str, version: str, platform: str, new: pd.DataFrame, base: pd.DataFrame) -> str:
    """The README block of one platform table: outcome counts, harness_error reasons, the differences from
    cuda-sm90 by kind and by (sm90 first error -> new first error), with the cells of each."""
    counts = new["outcome"].value_counts().reindex(list(driver.OUTCOMES), fill_value=0)
    n = len(new)
    lines = [f"#### {framework} {version} on {platform}", "",
             f"{n} cells, {new['model_id'].nunique()} models: "
             + ", ".join(f"{k} {int(v)}" for k, v in counts.items())
             + f" (harness_error {counts['harness_error'] / max(n, 1):.1%}).", ""]
    he = new[new["outcome"] == "harness_error"]
    if len(he):
        lines += ["harness_error reasons:", ""]
        for (reason, mid), g in he.groupby([he["reason"].str[:160], "model_id"], sort=True):
            lines.append(f"- `{mid}`: {len(g)} cells, {reason}")
        lines.append("")
    diff = differences(new, base)
    common = len(new[KEY].merge(base[KEY], on=KEY))
    both = new[new["outcome"] == "built"].merge(base[base["outcome"] == "built"], on=KEY, suffixes=("_new", "_sm90"))
    bytes_differ = both[both["param_bytes_new"] != both["param_bytes_sm90"]]
    dtype_differ = both[both["param_bytes_by_dtype_new"] != both["param_bytes_by_dtype_sm90"]]
    lines += [f"Against cuda-sm90: {common} cells in both tables, **{len(diff)} differ** (outcome or first error). "
              f"Of the {len(both)} cells built in both, {len(bytes_differ)} differ in rank 0's parameter bytes and "
              f"{len(dtype_differ)} in their bytes per dtype"
              + (f" ({bytes_differ['model_id'].nunique()} models, below)" if len(bytes_differ) else "")
              + "." + (" The differing verdicts and first errors:" if len(diff) else ""), ""]
    if len(diff):
        flip_down = int(((diff["outcome_sm90"] == "built") & diff["outcome_new"].isin(REFUSED)).sum())
        flip_up = int((diff["outcome_sm90"].isin(REFUSED) & (diff["outcome_new"] == "built")).sum())
        same_verdict = int((diff["outcome_sm90"].isin(REFUSED) & diff["outcome_new"].isin(REFUSED)).sum())
        lines += [f"Verdict changes: {flip_down} cells built on cuda-sm90 are refused on {platform}, {flip_up} refused "
                  f"there are built here; {same_verdict} are refused on both with another first error; "
                  f"{len(diff) - flip_down - flip_up - same_verdict} involve harness_error / not_run.", ""]
    if len(diff):
        for kind, g in diff.groupby("kind", sort=True):
            lines.append(f"- {kind}: {len(g)} cells, {g['model_id'].nunique()} models")
        lines += ["", "| model | cells (tp/ep/vision_dp) | cuda-sm90 | " + platform + " |", "|---|---|---|---|"]
        esc = lambda t: str(t).replace("|", "\\|").replace("\n", " ")[:200]  # noqa: E731
        for (mid, a, b), g in diff.groupby(["model_id", "shown_sm90", "shown_new"], sort=True):
            cells = ", ".join(f"{r.tp}/{'ep' if r.ep else '-'}/{'vdp' if r.vision_dp else '-'}"
                              + (f"/dp{r.dp}" if r.dp > 1 else "") for r in g.itertuples())
            lines.append(f"| `{mid}` | {esc(cells)} | {esc(a)} | {esc(b)} |")
        lines.append("")
    if len(bytes_differ):
        lines += ["Built in both, other parameter bytes (rank 0; the smallest TP of each model shown, bytes per dtype "
                  "where they differ):", "", f"| model | cells | cuda-sm90 | {platform} |", "|---|---|---|---|"]
        for mid, g in bytes_differ.groupby("model_id", sort=True):
            r = g.sort_values(["tp", "ep"]).iloc[0]
            a, b = (json.loads(r[f"param_bytes_by_dtype_{s}"] or "{}") for s in ("sm90", "new"))
            ks = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            show = lambda d: f"{int(d_total(d)):,} B (" + ", ".join(f"{k} {d.get(k, 0):,}" for k in ks) + ")"  # noqa: E731
            lines.append(f"| `{mid}` | {len(g)} (TP {int(r['tp'])}{' EP' if r['ep'] else ''}) | {show(a)} | {show(b)} |")
        lines.append("")
    return "\n".join(lines)


def d_total(d: dict) -> int:
    """Sum of a bytes-per-dtype dict."""
    return sum(int(v) for v in d.values())


def update(version: str, platform: str, framework: str = "vllm") -> str:
    """Regenerate ``platform``'s block in ``data/conformance/README.md`` (after the ``<!-- generated
    platforms -->`` marker, created under a "Platforms: generated comparison" heading when missing)."""
    if platform == driver.DEFAULT_PLATFORM:
        raise ValueError(f"{platform} is the reference table; `report` without --platform writes its results")
    new = driver.load_table(framework, version, platform)
    base = driver.load_table(framework, version)
    key = f"{platform} {framework} {version}"
    from conformance import report
    from dashboard import frameworks
    from dashboard.catalog import load_catalog

    rules_part = report.section(version, new, load_catalog(), framework, key=f"{framework}-{version}-{platform}",
                                title=f"##### Rules engine vs {frameworks.get(framework).label} {version} on {platform}")
    block = (f"<!-- platform {key} -->\n" + section(framework, version, platform, new, base) + "\n" + rules_part
             + f"<!-- /platform {key} -->")
    text = README.read_text(encoding="utf-8") if README.exists() else ""
    pat = re.compile(rf"<!-- platform {re.escape(key)} -->.*?<!-- /platform {re.escape(key)} -->", re.S)
    if pat.search(text):
        text = pat.sub(lambda m: block, text)
    else:
        marker = "<!-- generated platforms -->"
        if marker not in text:
            text = text.rstrip() + f"\n\n### Platforms: generated comparison\n\n{marker}\n"
        text = text.replace(marker, marker + "\n" + block + "\n")
    atomic_write_text(README, text)
    return block
