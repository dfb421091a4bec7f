"""The rule registry and the evidence files: rule order built once from the framework objects, each
framework's rules in its own package, executed releases' raise sites read from data, not Python."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from dashboard import frameworks, rules
from dashboard.rules import executed, registry, versions

ROOT = Path(__file__).resolve().parents[2]


def test_rules_by_framework_is_each_framework_objects_rules_in_order():
    assert set(rules.RULES_BY_FRAMEWORK) == set(frameworks.names())
    for fw in frameworks.all_frameworks():
        assert [r.id for r in fw.rules()] == [r.id for r in rules.RULES_BY_FRAMEWORK[fw.name]], fw.name
        assert all(r.framework == fw.name for r in fw.rules())
    assert len(rules.RULES) == sum(len(v) for v in rules.RULES_BY_FRAMEWORK.values())
    assert registry.rules() == rules.RULES  # built once: the same rules, the same order


def test_rule_ids_carry_the_framework_prefix():
    for fw in frameworks.all_frameworks():
        assert all(r.id.startswith(fw.rule_id_prefix + ".") for r in fw.rules()), fw.name


@pytest.mark.parametrize("pkg", ["vllm", "sglang", "tensorrt_llm", "transformers", "megatron_core"])
def test_framework_package_does_not_import_its_rules_at_module_level(pkg):
    tree = ast.parse((ROOT / "dashboard" / "frameworks" / pkg / "__init__.py").read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {getattr(n, "module", None) or "" for n in top} | {a.name for n in top for a in n.names}
    assert not {n for n in names if "rules" in n or n.startswith(("dashboard.memory", "dashboard.catalog"))}


def test_every_executed_release_with_an_adapter_has_its_evidence_file():
    for fw in frameworks.all_frameworks():
        adapter = fw.conformance()
        if adapter is None:
            continue
        for rel in fw.executed_releases:
            p = executed.evidence_path(fw.name, rel)
            assert p.is_file(), f"write it with: python -m conformance sites --framework {fw.name} --version {rel} --write"
            doc = json.loads(p.read_text(encoding="utf-8"))
            assert doc["framework"] == fw.name and doc["release"] == rel
            assert set(doc) == {"framework", "release", "written_by", "sites", "not_seen_first"}
            if not adapter.tracks_not_seen_first:
                assert doc["not_seen_first"] == []


def test_evidence_sites_reach_the_rules_of_that_release():
    doc = executed.evidence("sglang", "0.5.21")
    by_id = {r.id: r for r in rules.rules_at("sglang", "0.5.21")}
    for rid, entry in doc["sites"].items():
        if rid in by_id:
            assert by_id[rid].location == entry["site"], rid


def test_executed_releases_exist_once():
    assert versions.EXECUTED == frameworks.executed()
    from dashboard.frameworks.megatron_core import rules_executed as M
    from dashboard.frameworks.sglang import rules_executed as S
    from dashboard.frameworks.transformers import rules_executed as T
    from dashboard.frameworks.vllm import rules_executed as V

    for mod, name in ((V, "vllm"), (S, "sglang"), (M, "megatron-core"), (T, "transformers-native-tp")):
        assert mod.EXECUTED == frameworks.get(name).executed_releases
