"""Evidence per config, not per rule (issue 22, Build 3): ``dashboard.rules.evidence``.

A verdict says "reproduced by running" only when its very config (``config_hash``) and layout are a judged
row of the release's executed conformance table; any other config reads "rules checked against ...; this
config was not run" with the table's agreement figure. The stored hashes are held to a recomputation from
the verbatim configs the harness ran."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard import rules
from dashboard.catalog import load_catalog, normalize_config
from dashboard.rules import evidence as E

ROOT = Path(__file__).resolve().parents[2]
LLAMA = "meta-llama/Llama-3.1-70B-Instruct"
RUN_TEXT = ("reproduced by running vLLM 0.33.0's own code on this config and layout, as an H100-80GB "
            "(cuda-sm90); conformance table vllm-0.33.0.parquet")
NOT_RUN = "rules checked against vLLM 0.33.0's own code run as an H100-80GB (cuda-sm90) on 182 catalog models; this config was not run"


@pytest.fixture(scope="module")
def cat() -> pd.DataFrame:
    return load_catalog().set_index("model_id", drop=False)


def odd_record(cat) -> dict:
    """A made-up config: Llama-3.1-70B's shapes with 20 query heads and 5 KV heads."""
    rec = {k: (None if not isinstance(v, str) and pd.isna(v) else v) for k, v in cat.loc[LLAMA].items()}
    rec.update(num_attention_heads=20, num_key_value_heads=5, head_dim=128, model_id="acme/odd")
    return rec


def test_config_hash_is_stable_across_representations_and_changes_with_the_shapes(cat):
    row = cat.loc[LLAMA]
    h = E.config_hash(row)
    as_dict = {k: v for k, v in row.items()}
    nan_dict = {k: (math.nan if v is None or (not isinstance(v, str) and pd.isna(v)) else v) for k, v in as_dict.items()}
    floats = {k: (float(v) if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) else v)
              for k, v in as_dict.items()}
    frame = pd.DataFrame([as_dict])
    assert E.config_hash(as_dict) == E.config_hash(nan_dict) == E.config_hash(floats) == E.config_hash(frame) == h
    # identity, provenance and popularity are not the config
    assert E.config_hash({**as_dict, "model_id": "x/y", "sha": "a" * 40, "fetched_at": "2030", "downloads": 9}) == h
    # a changed shape is another config
    assert E.config_hash({**as_dict, "num_key_value_heads": 4}) != h
    assert E.config_hash({**as_dict, "vocab_size": 128257}) != h


def test_the_stored_hashes_are_the_configs_the_tables_ran(shared_dir):
    """``data/conformance/<table>-configs.json`` equals a recomputation from ../shared/hub-configs and the
    sidecars each table names (``python scripts/config_hashes.py`` without --write says the same)."""
    for name in ("vllm-0.33.0", "vllm-0.22.0", "sglang-0.5.23"):
        table = E.CONFORMANCE / f"{name}.parquet"
        stored = json.loads(E.configs_file(table).read_text())["configs"]
        assert stored == E.run_hashes(table, shared_dir / "hub-configs"), name


def test_a_catalog_row_that_differs_from_what_a_table_ran_is_not_executed(cat):
    """vLLM 0.33.0 built WizardCoder-15B-GPTQ with the harness's own quantize_config.json, which the catalog
    row does not have; vLLM 0.22.0 ran Wizard-Vicuna-30B-GPTQ without the verbatim sidecar the catalog reads.
    Every other model of the shipped catalog is the config its tables ran."""
    row_hash = {m: E.config_hash(cat.loc[m]) for m in cat.index}
    differ = {}
    for f in sorted(E.CONFORMANCE.glob("*-configs.json")):
        stored = json.loads(f.read_text())["configs"]
        differ[f.name] = sorted(m for m, h in stored.items() if row_hash.get(m) != h)
    assert differ["vllm-0.33.0-configs.json"] == ["TheBloke/WizardCoder-15B-1.0-GPTQ"]
    assert differ["vllm-0.22.0-configs.json"] == ["TheBloke/Wizard-Vicuna-30B-Uncensored-GPTQ"]
    v = rules.check(cat.loc["TheBloke/WizardCoder-15B-1.0-GPTQ"], "vllm", 1)
    assert v.evidence == "checked" and not v.conformance.executed and "this config was not run" in v.evidence_text
    v22 = rules.check(cat.loc["TheBloke/Wizard-Vicuna-30B-Uncensored-GPTQ"], "vllm", 1, version="0.22.0")
    assert v22.evidence == "checked"
    v33 = rules.check(cat.loc["TheBloke/Wizard-Vicuna-30B-Uncensored-GPTQ"], "vllm", 1)
    assert v33.evidence == "executed"


def test_a_changed_catalog_row_stops_counting_as_run(cat):
    rec = dict(cat.loc[LLAMA])
    assert rules.check(rec, "vllm", 8).evidence == "executed"
    rec["max_position_embeddings"] = 65536  # the row changed after the table ran
    v = rules.check(rec, "vllm", 8)
    assert v.evidence == "checked" and not v.conformance.executed and v.evidence_text.startswith(NOT_RUN)


def test_catalog_config_and_layout_in_the_table_is_reproduced(cat):
    v = rules.check(cat.loc[LLAMA], "vllm", 6)
    assert v.evidence == "executed" and v.conformance.executed and v.evidence_text == RUN_TEXT
    # the refusal is a row of the table: vLLM raised it at this layout
    t = pd.read_parquet(E.CONFORMANCE / "vllm-0.33.0.parquet")
    row = t[(t.model_id == LLAMA) & (t.tp == 6) & (t.dp == 1) & ~t.ep & ~t.vision_dp]
    assert len(row) == 1 and row.outcome.iloc[0] == "refused_engine"
    # expert parallelism on at the same TP is another row; TP 5 is no row at all
    assert rules.check(cat.loc["Qwen/Qwen3-30B-A3B"], "vllm", 4, expert_parallel=True).evidence == "executed"
    v5 = rules.check(cat.loc[LLAMA], "vllm", 5)
    assert v5.evidence == "checked" and "this layout was not run on this config" in v5.evidence_text
    sg = rules.check(cat.loc[LLAMA], "sglang", 8)
    assert sg.evidence_text == ("reproduced by running SGLang 0.5.23's own code on this config and layout, "
                                "as an H100-80GB (cuda-sm90); conformance table sglang-0.5.23.parquet")
    mc = rules.check(cat.loc[LLAMA], "megatron-core", 8, pp=2)
    assert mc.evidence == "executed" and "megatron-core-0.16.1.parquet" in mc.evidence_text


def test_a_made_up_config_was_not_run_and_says_so_with_the_agreement(cat):
    v = rules.check(odd_record(cat), "vllm", 4)
    assert v.valid is False or v.valid is True
    assert v.evidence == "checked" and not v.conformance.executed and not v.conformance.config_run
    assert v.evidence_text.startswith(NOT_RUN)
    assert "the same verdict on 5,459 of 5,459 cells and the same first error on 98.9 % of refusals" in v.evidence_text
    assert "reproduced" not in v.evidence_text.lower() and "executed" not in v.evidence_text.lower()
    # a release that was never run, and a framework that never was: no claim either
    old = rules.check(odd_record(cat), "vllm", 4, version="0.27.1")
    assert old.evidence == "source" and old.evidence_text == "rules read from vLLM 0.27.1 source; not run"
    trt = rules.check(cat.loc[LLAMA], "tensorrt-llm", 8)
    assert trt.evidence == "source" and "executed" not in trt.evidence_text


def test_every_executed_release_has_its_table_hashes_and_agreement():
    from dashboard import frameworks

    for fw in frameworks.names():
        for rel in frameworks.get(fw).executed_releases:
            t = E.table(fw, rel)
            assert t is not None and t.models > 0 and t.cells, (fw, rel)
            a = t.agreement
            assert a and a["verdict_agree"] <= a["judged"] and a["first_error_agree"] <= a["refused"], (fw, rel)
    assert E.agreement("vllm", "0.22.0") == {"judged": 5150, "verdict_agree": 5150, "refused": 3757,
                                             "first_error_agree": 3731}


def _string_literals(path: Path) -> list[str]:
    """Every string constant of a module except docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


def test_no_other_module_words_the_evidence_itself():
    """One wording: only dashboard/rules/evidence.py says "reproduced by running" or "rules checked against"
    (or the old "own code run over the catalog") in a string the user reads."""
    words = ("reproduced by running", "rules checked against", "own code run over")
    offenders = []
    for p in sorted((ROOT / "dashboard").rglob("*.py")):
        if p == ROOT / "dashboard" / "rules" / "evidence.py":
            continue
        for s in _string_literals(p):
            if any(w in s.lower() for w in words):
                offenders.append((str(p.relative_to(ROOT)), s[:80]))
    assert offenders == []


# --------------------------------------------------------------------------------------------------------
# issue 23: the evidence is the GPU's platform's
# --------------------------------------------------------------------------------------------------------


def test_a_gpu_whose_platform_was_never_run_reads_from_source(cat):
    """Tables run as an H100, a T4, an A100 and an L40S say nothing executed about a B200 or an MI300X: the
    verdict for those GPUs is ``source``, and the wording names the GPU's platform and those the release ran as;
    a GPU of a platform that was run (an A10 is an A100's cuda-sm80) gets that platform's table."""
    from dashboard import gpus

    row = cat.loc[LLAMA]
    from dashboard import frameworks

    listed = frameworks.get("vllm").executed_platforms["0.33.0"]
    ran = ("cuda-sm90", *listed)
    words = [E.platform_words(p) for p in ran]
    for gpu in ("MI300X-192GB", "MI355X-288GB"):
        plat = gpus.platform_of(gpu)
        v = rules.check(row, "vllm", 8, platform=plat)
        assert v.evidence == "source", gpu
        assert v.conformance.ran_elsewhere == ran
        assert v.evidence_text == (f"rules read from vLLM 0.33.0 source for this GPU ({plat}); not executed on it: "
                                   f"vLLM 0.33.0 was run {', '.join(words[:-1])} and {words[-1]} only, and kernels "
                                   "and checks differ by GPU")
    assert "as an H100-80GB (cuda-sm90), as a T4-16GB (cuda-sm75)" in v.evidence_text
    for gpu in ("T4-16GB", "A10-24GB", "L40S-48GB", "B200-180GB"):
        plat = gpus.platform_of(gpu)
        v = rules.check(row, "vllm", 8, platform=plat)
        assert v.evidence == "executed" and v.conformance.table == f"{plat}/vllm-0.33.0.parquet", gpu
        assert f"({plat}); conformance table {plat}/vllm-0.33.0.parquet" in v.evidence_text
    for plat in (None, "cuda-sm90"):  # no GPU given, or a Hopper card: the table's own platform
        v = rules.check(row, "vllm", 8, platform=plat)
        assert v.evidence == "executed" and v.evidence_text == RUN_TEXT
        assert v.conformance.table_platform == "cuda-sm90"
    # the CPU-only harnesses say so
    assert "on the CPU" in rules.check(row, "megatron-core", 8, pp=2).evidence_text


def test_check_and_plan_take_the_evidence_from_the_gpu(shared_dir):
    """The issue's example, Qwen3-30B-A3B-FP8 at TP 8: run as a T4 now (its platform table), never as an MI300X."""
    import subprocess
    import sys

    cfg = shared_dir / "hub-configs" / "Qwen--Qwen3-30B-A3B-FP8.json"

    def check(gpu):
        r = subprocess.run([sys.executable, "-m", "dashboard.cli", "check", str(cfg), "--framework", "vllm",
                            "--tp", "8", "--gpu", gpu, "--json"], capture_output=True, text=True, timeout=300)
        return json.loads(r.stdout)

    mi, t4, h100 = check("MI300X-192GB"), check("T4-16GB"), check("H100-80GB")
    assert mi["evidence"] == "source" and mi["executed"] is False
    assert mi["conformance"]["platform"] == "rocm-gfx942" and "cuda-sm90" in mi["conformance"]["ran_elsewhere"]
    assert "not executed on it" in mi["evidence_text"]
    assert "executed" not in [f["evidence"] for f in mi["failures"]]
    assert t4["conformance"]["table_platform"] == "cuda-sm75" and t4["conformance"]["table"].startswith("cuda-sm75/")
    assert h100["evidence"] == "executed" and h100["conformance"]["table_platform"] == "cuda-sm90"
    from dashboard import planner

    rec = load_catalog().set_index("model_id", drop=False).loc[LLAMA]
    b = planner.plan(rec, 8, "MI300X-192GB", context_len=8192)
    assert set(b.loc[b["framework"] == "vllm", "evidence"]) == {"source"}
    assert "executed" in set(planner.plan(rec, 8, "H100-80GB", context_len=8192)["evidence"])
    assert "executed" in set(planner.plan(rec, 8, "A100-80GB", context_len=8192)["evidence"])


def test_a_platform_table_counts_once_the_framework_lists_it(tmp_path, monkeypatch, cat):
    """``data/conformance/<platform>/<fw>-<release>.parquet`` backs a verdict for that platform only when the
    framework lists the platform in ``executed_platforms`` (its rules are held to that table)."""
    import shutil

    from dashboard import frameworks

    conf = tmp_path / "conformance"
    shutil.copytree(E.CONFORMANCE, conf, ignore=shutil.ignore_patterns(".work"))
    if not (conf / "cuda-sm80" / "vllm-0.33.0.parquet").exists():  # the shipped table where there is one
        (conf / "cuda-sm80").mkdir(exist_ok=True)
        df = pd.read_parquet(conf / "vllm-0.33.0.parquet").assign(platform="cuda-sm80")
        df.to_parquet(conf / "cuda-sm80" / "vllm-0.33.0.parquet")
    if not (conf / "cuda-sm80" / "vllm-0.33.0-configs.json").exists():
        shutil.copy(conf / "vllm-0.33.0-configs.json", conf / "cuda-sm80" / "vllm-0.33.0-configs.json")
    monkeypatch.setattr(E, "CONFORMANCE", conf)
    E.table.cache_clear()
    try:
        row = cat.loc[LLAMA]
        monkeypatch.setattr(type(frameworks.get("vllm")), "executed_platforms", {})
        assert rules.check(row, "vllm", 8, platform="cuda-sm80").evidence == "source"  # not listed
        E.table.cache_clear()
        monkeypatch.setattr(type(frameworks.get("vllm")), "executed_platforms", {"0.33.0": ("cuda-sm80",)})
        v = rules.check(row, "vllm", 8, platform="cuda-sm80")
        assert v.evidence == "executed" and v.conformance.table == "cuda-sm80/vllm-0.33.0.parquet"
        assert "as an A100-80GB (cuda-sm80)" in v.evidence_text
        assert rules.check(row, "vllm", 8, platform="cuda-sm75").evidence == "source"
        assert E.table_file("vllm", "0.33.0", "../etc") is None  # a platform id is a name, never a path
    finally:
        E.table.cache_clear()
