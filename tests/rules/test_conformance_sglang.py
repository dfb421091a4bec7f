"""The SGLang conformance worker's pure parts: the cell plan and the launcher command line of a cell.

SGLang is not installed here; the worker module imports nothing of it at module level, so its pure
helpers load under the project's Python.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from conformance import driver

ROOT = Path(__file__).resolve().parents[2]


def _worker():
    spec = importlib.util.spec_from_file_location("sglang_worker", ROOT / "conformance" / "sglang_worker.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_sglang_is_a_worker() -> None:
    assert driver.WORKER["sglang"].name == "sglang_worker.py" and driver.WORKER["sglang"].exists()


def test_sglang_plan_is_tp_by_ep_by_attention_dp() -> None:
    dense = {"model_type": "llama", "num_attention_heads": 32}
    moe = {"model_type": "qwen3_moe", "num_experts": 128}
    vlm = {"model_type": "qwen2_5_vl", "vision_config": {"depth": 32}}
    for raw in (dense, moe, vlm):
        cells = driver.plan_cells(raw, "full", "sglang")
        assert len(cells) == len(driver.TP_SIZES) * 2 * len(driver.SGLANG_ATTN_DP_SIZES) == 60
        assert len({c.key() for c in cells}) == 60
        assert {c.tp for c in cells} == set(driver.TP_SIZES)
        assert {c.dp for c in cells} == {1, 2, 4}
        assert {c.ep for c in cells} == {False, True}
        assert all(c.pp == 1 and not c.vision_dp for c in cells)
    # table order: EP, then attention-DP, then TP
    cells = driver.plan_cells(moe, "full", "sglang")
    assert [c.key() for c in cells] == sorted((c.key() for c in cells), key=lambda k: (k[3], k[2], k[0]))
    assert [c.tp for c in driver.plan_cells(moe, "tp", "sglang")] == list(driver.TP_SIZES)


def test_vllm_plan_unchanged() -> None:
    moe = {"num_experts": 8}
    cells = driver.plan_cells(moe)
    assert cells == driver.plan_cells(moe, "full", "vllm")
    assert len(cells) == 2 * len(driver.TP_SIZES) + len(driver.MOE_DP_SIZES) * len(driver.TP_SIZES)


def test_command_line_of_a_cell() -> None:
    w = _worker()
    argv = w.command_line("/m", {"tp": 8, "pp": 1, "dp": 2, "ep": 1})
    assert argv[:4] == ["--model-path", "/m", "--tp", "8"]
    assert argv[argv.index("--attn-dp-size") + 1] == "2"
    assert argv[argv.index("--ep-size") + 1] == "8"  # EP on: the EP size is the TP size
    assert "--enable-dp-attention" not in argv and "--dp-size" not in argv  # the deprecated spelling
    assert argv[argv.index("--load-format") + 1] == "dummy" and "--skip-tokenizer-init" in argv
    plain = w.command_line("/m", {"tp": 4, "pp": 1, "dp": 1, "ep": 0})
    assert "--attn-dp-size" not in plain and "--ep-size" not in plain and "--pp-size" not in plain
    # releases before 0.5.22 have no --attn-dp-size: the same cell as --enable-dp-attention --dp-size
    old = w.command_line("/m", {"tp": 8, "pp": 1, "dp": 2, "ep": 0}, attn_dp_flag=False)
    assert "--attn-dp-size" not in old and "--enable-dp-attention" in old
    assert old[old.index("--dp-size") + 1] == "2"


def test_harness_and_remote_code_classification() -> None:
    w = _worker()
    assert w.harness_reason(RuntimeError("harness: stub process group 'tp' has no 'x'"))
    assert w.harness_reason(RuntimeError("Found no NVIDIA driver on your system."))
    assert w.harness_reason(AssertionError("")) == ""
    assert w.harness_reason(ValueError("KDA num_heads (32) must be divisible by shard tp_size (12)")) == ""
    assert w.is_remote_code_error(ValueError("... Please pass the argument `trust_remote_code=True` ..."))
    assert not w.is_remote_code_error(AssertionError("16 is not divisible by 32"))


def test_importing_the_worker_leaves_the_environment_alone() -> None:
    """The worker sets HF_HUB_OFFLINE and friends in its own process only: importing it (as these tests do)
    must not turn the rest of the test session offline."""
    import os

    before = dict(os.environ)
    _worker()
    assert dict(os.environ) == before


def _sglang_table(release: str):
    import pandas as pd
    import pytest

    p = ROOT / "data" / "conformance" / f"sglang-{release}.parquet"
    if not p.exists():
        pytest.skip(f"{p.name} is not committed (python -m conformance run --framework sglang)")
    return pd.read_parquet(p)


def test_sglang_0_5_23_table_covers_the_catalog_with_few_harness_errors() -> None:
    """Every catalog model has its 60 cells; harness errors stay at or under 5 % (issue 11); remote-code
    models are not_run, never built."""
    from dashboard.catalog import load_catalog

    t = _sglang_table("0.5.23")
    cat = load_catalog()
    assert set(t["model_id"]) == set(cat["model_id"])
    assert (t.groupby("model_id").size() == 60).all()
    assert set(t["version"]) == {"0.5.23"} and set(t["framework"]) == {"sglang"}
    assert (t["outcome"] == "harness_error").mean() <= 0.05
    refused = t[t["outcome"].str.startswith("refused")]
    assert refused["file"].str.startswith("sglang/").all()  # the innermost frame inside SGLang
    # spot cells of the SGLang audit (data/conformance/README.md): where the executed code raises
    cell = lambda m, tp, dp=1, ep=False: t[(t.model_id == m) & (t.tp == tp) & (t.dp == dp) & (t.ep == ep)].iloc[0]  # noqa: E731
    r = cell("Qwen/Qwen2.5-7B-Instruct", 8, 2)
    assert (r.outcome, r.exc_type, r.message, r.file) == ("refused_build", "AssertionError", "", "sglang/srt/models/qwen2.py")
    r = cell("moonshotai/Kimi-Linear-48B-A3B-Instruct", 12)
    assert r.message == "KDA num_heads (32) must be divisible by shard tp_size (12)"
    assert cell("Qwen/Qwen3-VL-32B-Instruct", 32).message == "16 is not divisible by 32"
    assert cell("meta-llama/Llama-3.1-8B-Instruct", 8).outcome == "built"
