"""What the rule modules of executed releases share (``dashboard/frameworks/<pkg>/rules_executed.py``):
the version range an executed release stands for, the model registry the harness wrote beside its table,
the release's evidence file, and the one factory for a rule whose raise sites come per release (evidence
``executed`` for the releases whose conformance table reaches it first, else ``source``).

Evidence files: ``data/conformance/<framework>-<release>-evidence.json``, written by
``python -m conformance sites --framework F --version V --write`` (never by hand)::

    {"framework": "sglang", "release": "0.5.21", "written_by": "...",
     "sites": {"<rule id>": {"site": "path/in/package.py:line", "from": "table, 24 cells"}, ...},
     "not_seen_first": ["<rule id>", ...]}

``sites``: the raise site of each rule in that release, where it differs from the site the rule is written
with (the rules carry the newest release's); ``not_seen_first``: rules with a site there that no judged
cell of the release's table reaches first (evidence ``source``). Read once per process (cached).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from pathlib import Path

from dashboard.rules.common import Rule

CONFORMANCE = Path(__file__).resolve().parents[2] / "data" / "conformance"
#: The message of the frameworks' ``divide(a, b)`` / ``ensure_divisibility`` (vLLM, SGLang, Megatron-Core).
DIVIDE = "{a} is not divisible by {b}"
#: A bare ``assert`` (no message), at raise site ``{site}``.
BARE = "AssertionError (no message) at {site}"
#: The FP8 block-quantization checks of a linear layer's partition (vLLM and SGLang ``fp8_utils`` / ``fp8``).
FP8_BLOCK_N = "Weight output_partition_size = {size} is not divisible by weight quantization block_n = {block}."
FP8_BLOCK_K = "Weight input_size_per_partition = {size} is not divisible by weight quantization block_k = {block}."
#: transformers' ``AutoConfig`` on a ``model_type`` it does not know (raised inside vLLM and SGLang too).
UNKNOWN_MODEL_TYPE = (
    "The checkpoint you are trying to load has model type `{model_type}` but Transformers does not recognize "
    "this architecture. This could be because of an issue with the checkpoint, or because your version of "
    "Transformers is out of date.\n\nYou can update Transformers with the command `pip install --upgrade "
    "transformers`. If this does not work, and the checkpoint is very new, then there may not be a release "
    "version that supports this model yet. In this case, you can get the most up-to-date code by installing "
    "Transformers from source with the command `pip install git+https://github.com/huggingface/transformers.git`"
)


def release_range(executed: tuple[str, ...], release: str) -> str:
    """The releases whose behaviour the executed ``release`` stands for: from it up to the next
    release of ``executed`` (releases in between were not run: evidence ``source``)."""
    i = executed.index(release)
    return f">={release}" + (f",<{executed[i + 1]}" if i + 1 < len(executed) else "")


def read_registry(name: str, empty: dict) -> dict:
    """``data/conformance/<name>`` (a release's model registry as the harness read it), or a copy of
    ``empty`` while that file is not committed."""
    p = CONFORMANCE / name
    if not p.is_file():
        return copy.deepcopy(empty)
    return json.loads(p.read_text(encoding="utf-8"))


def evidence_path(framework: str, release: str) -> Path:
    """Where the evidence file of ``framework`` at ``release`` lives (it may not exist yet)."""
    return CONFORMANCE / f"{framework}-{release}-evidence.json"


@functools.lru_cache(maxsize=None)
def evidence(framework: str, release: str) -> dict:
    """The evidence file of ``framework`` at ``release`` as a dict (``sites``: rule id -> {site, from},
    ``not_seen_first``: rule ids); an empty one while no file is committed. Cached: do not modify."""
    p = evidence_path(framework, release)
    if not p.is_file():
        return {"framework": framework, "release": release, "sites": {}, "not_seen_first": []}
    return json.loads(p.read_text(encoding="utf-8"))


def release_sites(framework: str, releases: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """Release -> rule id -> raise site, from the evidence files of ``releases`` (releases without
    sites left out)."""
    out = {rel: {k: v["site"] for k, v in evidence(framework, rel)["sites"].items()} for rel in releases}
    return {rel: sites for rel, sites in out.items() if sites}


def not_seen_first(framework: str, releases: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Release -> the rules no judged cell of its table reaches first (releases with none left out)."""
    out = {rel: frozenset(evidence(framework, rel)["not_seen_first"]) for rel in releases}
    return {rel: ids for rel, ids in out.items() if ids}


def executed_in(executed: tuple[str, ...], sites: dict[str, str], rule_id: str,
                not_seen_first: dict[str, frozenset[str]]) -> tuple[str, ...]:
    """The executed releases with a raise site for the rule whose table reaches it first."""
    return tuple(r for r in executed if r in sites and rule_id not in not_seen_first.get(r, ()))


def executed_rule(fw: str, executed: tuple[str, ...], not_seen_first: dict[str, frozenset[str]], url_of,
                  id: str, kind: str, condition: str, message: str, sites: dict[str, str], predicate, *,
                  exc_type: str = "", archs=(), exclude=(), needs=(), note: str = "", severity: str = "error",
                  ours: bool = False, versions: str = "", src: str = "", effect: str = "",
                  verified_with: str | None = None, ran: tuple[str, ...] | None = None) -> Rule:
    """A :class:`Rule` of ``fw`` with raise sites per release (``sites``: release -> ``path:line``). Its
    source link is ``src``, else ``url_of(release, path, line)`` of the newest release's site; ``ours``
    rules (the planner's own warnings) carry no exception type. ``executed_in`` (and evidence
    ``executed``) are the releases of ``executed`` with a site whose table reaches the rule first
    (:func:`executed_in`), or ``ran`` when given (a release whose whole table the rules were held to)."""
    from packaging.version import Version

    url = src
    if sites and not url:
        rel = sorted(sites, key=Version)[-1]
        path, _, line = sites[rel].rpartition(":")
        url = url_of(rel, path, line)
    if ran is None:
        ran = executed_in(executed, sites, id, not_seen_first)
    return Rule(id=id, framework=fw, kind=kind, versions=versions, condition=condition, message=message,
                source_url=url, predicate=predicate, severity=severity, effect=effect,
                needs=tuple(needs), note=note, architectures=tuple(archs), exclude_architectures=tuple(exclude),
                sites=dict(sites), evidence="executed" if ran else "source",
                executed_in=ran, exc_type=exc_type if not ours else "", ours=ours,
                verified_with=verified_with)


def join_release_sites(r: Rule, sites_by_release: dict[str, dict[str, str]], executed: tuple[str, ...],
                       not_seen_first: dict[str, frozenset[str]], site=lambda s: s) -> Rule:
    """``r`` with the raise sites of the other releases (``sites_by_release``: release -> rule id ->
    site, written through ``site``) for the releases its version range covers and it has no site for yet;
    its ``executed_in`` and evidence follow."""
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(r.versions)
    extra = {rel: site(sites_by_release[rel][r.id]) for rel in sites_by_release
             if r.id in sites_by_release[rel] and rel not in r.sites and spec.contains(rel)}
    if not extra:
        return r
    sites = {**r.sites, **extra}
    ran = executed_in(executed, sites, r.id, not_seen_first)
    return dataclasses.replace(r, sites=sites, executed_in=ran, evidence="executed" if ran else "source")
