"""Raise sites of the rules in another executed release (``python -m conformance sites [--framework F] --version V``).

For each rule with a site in the newest executed release: the raise site the release's table shows
where the engine's first rule is that rule and the messages agree (sites in bare-assert messages
ignored), else the same source line found in the release's file (unique match). Prints a Python dict
for :data:`dashboard.rules.vllm_executed.SITES` (or ``sglang_executed.SITES``). ``--src-new``/``--src-old``
are unpacked wheels (``pip download --no-deps vllm==X`` and unzip). With ``work=True`` the release's
checkpoint folder is read instead of its assembled table (a run still going).
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

from conformance import compare, driver
from dashboard.catalog import load_catalog
from dashboard.rules import sglang_executed, vllm_executed

MODULES = {"vllm": vllm_executed, "sglang": sglang_executed}


def derive(release: str, src_new: Path, src_old: Path, framework: str = "vllm",
           work: bool = False) -> dict[str, tuple[str, str]]:
    X = MODULES[framework]
    table = driver.load_work(framework, release) if work else driver.load_table(framework, release)
    cmp = compare.compare(table, load_catalog(), framework, release)
    ok = cmp[cmp["verdict_ok"] & ~cmp["table_valid"]]
    seen: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in ok.itertuples():
        strip = lambda m: re.sub(r" at \S+$", "", m)  # noqa: E731
        if strip(r.engine_message) == strip(r.table_message):
            seen[r.engine_rule][r.table_location] += 1
    newest = X.EXECUTED[-1]
    out: dict[str, tuple[str, str]] = {}
    for rule in X.RULES:
        site = rule.sites.get(newest)
        if site and framework == "sglang" and not site.startswith("sglang/"):
            site = "sglang/srt/" + site
        if not site or rule.id in out:
            continue
        if rule.id in seen:
            loc, n = seen[rule.id].most_common(1)[0]
            out[rule.id] = (loc, f"table, {n} cells")
            continue
        path, _, line = site.rpartition(":")
        new_lines = (src_new / path).read_text().splitlines()
        old_file = src_old / path
        if not old_file.exists():
            continue
        text = new_lines[int(line) - 1].strip()
        hits = [i + 1 for i, x in enumerate(old_file.read_text().splitlines()) if x.strip() == text]
        if len(hits) == 1:
            out[rule.id] = (f"{path}:{hits[0]}", "source line")
    return out


def render(release: str, mapping: dict[str, tuple[str, str]]) -> str:
    lines = [f'    "{release}": {{']
    for k, (v, why) in sorted(mapping.items()):
        lines.append(f'        "{k}": "{v}",  # {why}')
    lines.append("    },")
    return "\n".join(lines)
