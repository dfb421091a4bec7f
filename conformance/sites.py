"""Evidence of an executed release: the rules' raise sites there and the rules its table never reaches
first (``python -m conformance sites --framework F --version V [--src-new W --src-old W] [--write]``).

For each rule with a site in the newest executed release: the raise site the release's table shows
where the engine's first rule is that rule and the messages agree (sites in bare-assert messages
ignored), else the same source line found in the release's file (unique match). ``--src-new``/``--src-old``
are unpacked wheels (``pip download --no-deps vllm==X`` and unzip); without them the sites already in the
evidence file are kept. ``not_seen_first``: the rules with a site in the release that no judged cell of its
table reaches first (evidence ``source``). With ``--write`` the result goes to
``data/conformance/<framework>-<release>-evidence.json`` (atomically; :mod:`dashboard.rules.executed`
reads it), else it is printed. With ``work=True`` the release's checkpoint folder is read instead of its
assembled table (a run still going).
"""

from __future__ import annotations

import collections
import importlib
import json
import re
from pathlib import Path

from conformance import compare, driver, report
from dashboard import frameworks, rules
from dashboard.atomic import atomic_write_text
from dashboard.catalog import load_catalog
from dashboard.rules import executed as X


def _table(framework: str, release: str, work: bool):
    return driver.load_work(framework, release) if work else driver.load_table(framework, release)


def derive(release: str, src_new: Path, src_old: Path, framework: str = "vllm",
           work: bool = False) -> dict[str, tuple[str, str]]:
    """Rule id -> (raise site in ``release``, where it was found: ``"table, N cells"`` / ``"source line"``)."""
    adapter = frameworks.get(framework).conformance()
    M = importlib.import_module(adapter.executed_rules)
    table = _table(framework, release, work)
    cmp = compare.compare(table, load_catalog(), framework, release)
    ok = cmp[cmp["verdict_ok"] & ~cmp["table_valid"]]
    seen: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in ok.itertuples():
        strip = lambda m: re.sub(r" at \S+$", "", m)  # noqa: E731
        if strip(r.engine_message) == strip(r.table_message):
            seen[r.engine_rule][r.table_location] += 1
    newest = M.EXECUTED[-1]
    out: dict[str, tuple[str, str]] = {}
    for rule in M.rules():
        site = rule.sites.get(newest)
        if site and adapter.site_prefix and not site.startswith(adapter.site_prefix.split("/")[0] + "/"):
            site = adapter.site_prefix + site
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


def not_seen_first(release: str, framework: str, sites: dict[str, tuple[str, str]], work: bool = False) -> list[str]:
    """The error rules with a raise site in ``release`` (written with the rule, or in ``sites``) that no
    judged cell of the release's table reaches first, sorted ([] for a framework whose adapter does not
    track them)."""
    if not frameworks.get(framework).conformance().tracks_not_seen_first:
        return []
    table = _table(framework, release, work)
    if "sidecars" in table.columns:  # tables that record their sidecar files: stale cells are not judged
        table = table[report.unjudged(table, framework) == ""]
    cmp = compare.compare(table, load_catalog(), framework, release)
    first = set(cmp.loc[~cmp["table_valid"], "engine_rule"])
    old = X.evidence(framework, release)["sites"]
    with_site = {r.id for r in rules.rules_at(framework, release) if r.severity == "error"
                 and ((release in r.sites and r.id not in old) or r.id in sites)}
    return sorted(with_site - first)


def evidence(release: str, framework: str, src_new: Path | None = None, src_old: Path | None = None,
             work: bool = False) -> dict:
    """The evidence file's content for ``framework`` at ``release`` (see the module docstring)."""
    if src_new is not None and src_old is not None:
        sites = derive(release, src_new, src_old, framework, work)
    else:
        sites = {k: (v["site"], v.get("from", "")) for k, v in X.evidence(framework, release)["sites"].items()}
    return {"framework": framework, "release": release,
            "written_by": f"python -m conformance sites --framework {framework} --version {release} --write",
            "sites": {k: {"site": v, "from": why} for k, (v, why) in sorted(sites.items())},
            "not_seen_first": not_seen_first(release, framework, sites, work)}


def render(doc: dict) -> str:
    """The evidence file's text (JSON, one space indent, newline at the end)."""
    return json.dumps(doc, indent=1) + "\n"


def write(doc: dict) -> Path:
    """Write ``doc`` to ``data/conformance/<framework>-<release>-evidence.json`` atomically."""
    return atomic_write_text(X.evidence_path(doc["framework"], doc["release"]), render(doc))
