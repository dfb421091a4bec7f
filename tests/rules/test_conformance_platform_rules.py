"""The rules engine keyed by GPU platform (issue 23), held to what vLLM's own code did on each platform stand-in.

* the platform tables (``data/conformance/<platform>/vllm-0.33.0.parquet``): the engine, judging each cell on the
  table's platform, matches every verdict and >= 98 % of the first errors; the rest are listed in the README;
* the attention-backend facts (``data/conformance/attention/``, ``python -m conformance attention``): the port
  (:mod:`dashboard.frameworks.vllm.attention`) reproduces every selector call each catalog model's layers made on
  each platform, and vLLM's whole selection over the grid;
* the verdicts really differ by GPU where the tables do.

No framework is installed here: the committed tables and facts are the evidence.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.conformance_helpers import ROOT, readme_mismatch_rows, remaining_mismatches

from conformance import compare, driver
from dashboard import frameworks, gpus, rules
from dashboard.frameworks.vllm import attention as A
from dashboard.frameworks.vllm import quantization as Q

RELEASE = "0.33.0"
TABLE_PLATFORMS = sorted(p for p in gpus.PLATFORMS
                         if (driver.DATA / p / f"vllm-{RELEASE}.parquet").is_file())
FACT_PLATFORMS = sorted(p for p in gpus.PLATFORMS if A.facts(p) is not None)


def test_tables_and_facts_exist_for_the_platforms_listed() -> None:
    listed = frameworks.get("vllm").executed_platforms.get(RELEASE, ())
    assert set(listed) == set(TABLE_PLATFORMS) and len(listed) >= 3
    assert {"cuda-sm75", "cuda-sm80", "cuda-sm89", "cuda-sm90"} <= set(FACT_PLATFORMS)


@pytest.fixture(scope="module", params=TABLE_PLATFORMS)
def platform(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def comparison(platform, catalog) -> pd.DataFrame:
    table = driver.load_table("vllm", RELEASE, platform)
    assert compare.table_platform(table) == platform
    return compare.compare(table, catalog, "vllm", RELEASE)


def test_verdicts_match_vllm_on_every_cell_of_the_platform(comparison, platform) -> None:
    bad = comparison[~comparison["verdict_ok"]]
    assert len(comparison) > 2500
    assert bad.empty, (platform, bad[["model_id", "tp", "ep", "table_message", "engine_rule"]].head(10).to_string())


def test_first_error_matches_on_98_percent_of_the_platforms_refused_cells(comparison) -> None:
    s = compare.summary(comparison)
    assert s["refused"] > 1000
    assert s["first_error_agree"] >= 0.98 * s["refused"], s


def test_every_remaining_mismatch_of_the_platform_is_listed_in_the_readme(comparison, platform) -> None:
    miss = remaining_mismatches(comparison)
    actual = {(r.model_id, int(r.tp), int(r.dp), bool(r.ep), bool(r.vision_dp)) for r in miss.itertuples()}
    listed = {(c[0].strip("`"), int(c[1]), int(c[2]), c[3] == "on", c[4] == "on")
              for c in readme_mismatch_rows(f"vllm-{RELEASE}-{platform}", f"mismatch list for {platform}", 6)}
    assert actual == listed, f"regenerate with: python -m conformance report --version {RELEASE} --platform {platform}"


def _calls(platform: str) -> list[dict]:
    return json.loads(A.DATA.joinpath(f"vllm-{RELEASE}-{platform}.json").read_text())["models"]


def _key(head_size, dtype, kv, mla, sink, sparse, mm, swa) -> tuple:
    return (int(head_size), str(dtype), str(kv), bool(mla), bool(sink), bool(sparse), bool(mm), bool(swa))


@pytest.mark.parametrize("pid", FACT_PLATFORMS)
def test_the_port_reproduces_every_selector_call_of_every_catalog_model(pid: str, catalog) -> None:
    """Each call a model's layers made at TP 1 on the platform: the port derives the same selector config from the
    catalog record, and selects the same backend or raises the same message (the order of a model's sliding and
    full layers is not in the catalog: the calls are compared as a set)."""
    cat = catalog.set_index("model_id", drop=False)
    problems, compared = [], 0
    for m in _calls(pid):
        rec = cat.loc[m["model_id"]].to_dict()
        calls = A.layer_calls(rec, pid, 1)
        theirs = {_key(c["config"]["head_size"], c["config"]["dtype"], c["config"]["kv_cache_dtype"],
                       c["config"]["use_mla"], c["config"]["has_sink"], c["config"]["use_sparse"],
                       c["config"]["use_mm_prefix"], c["config"]["has_sliding_window"]):
                  c.get("backend") or c.get("message") for c in m["calls"]}
        if calls is None:  # an attention path the port does not derive: the model made no selector call
            if theirs:
                problems.append(f"{m['model_id']}: port knows no attention path, vLLM called {sorted(theirs)[:2]}")
            continue
        mine = {}
        for s, sel in calls:
            mine[_key(s.head_size, s.dtype, s.kv_cache_dtype, s.use_mla, s.has_sink, s.use_sparse, s.use_mm_prefix,
                      s.has_sliding_window)] = sel.backend or sel.message
        # vLLM stops at the first layer that fails: every call it made is one the port derives, same answer
        for k, v in theirs.items():
            compared += 1
            if mine.get(k) != v:
                problems.append(f"{m['model_id']}: {k}: vLLM {str(v)[:120]!r}, port {str(mine.get(k))[:120]!r}")
        if m.get("outcome") == "built" and set(mine) != set(theirs):
            problems.append(f"{m['model_id']}: built with calls {sorted(theirs)}, port derives {sorted(mine)}")
    assert compared > 100
    assert not problems, "\n".join(problems[:15])


@pytest.mark.parametrize("pid", FACT_PLATFORMS)
def test_the_port_reproduces_vllms_whole_selection_over_the_grid(pid: str) -> None:
    """``get_attn_backend_cls`` over the grid of ``conformance/attention.py:selection_grid`` (no model config):
    the port's priority lists, reasons and message give the same backend or the same ValueError."""
    from conformance.attention import selection_grid

    doc = json.loads(A.DATA.joinpath(f"vllm-{RELEASE}-{pid}.json").read_text())
    bad = []
    for g, got in zip(selection_grid(), doc["selection"]):
        h, dt, kv, mla, sink, sparse, mm, swa, nh = g
        sel = A.SelectorConfig(head_size=h, dtype=dt, kv_cache_dtype=kv, use_mla=mla, has_sink=sink,
                               use_sparse=sparse, use_mm_prefix=mm, has_sliding_window=swa, num_heads=nh)
        mine = A.select(sel, pid)
        want = got.get("backend") or got.get("message")
        if not mine.decided or (mine.backend or mine.message) != want:
            bad.append(f"{g}: vLLM {str(want)[:140]!r}, port {str(mine.backend or mine.message)[:140]!r}")
    assert len(doc["selection"]) == len(selection_grid())
    assert not bad, f"{len(bad)} of {len(doc['selection'])}:\n" + "\n".join(bad[:10])


def test_quantization_minimums_are_the_executed_ones() -> None:
    mins = Q.min_capabilities()
    assert mins["fp8"] == 75 and mins["mxfp4"] == 80 and mins["gpt_oss_mxfp4"] == 80 and mins["modelopt"] == 80
    assert Q.method({"quant_method": "mxfp4", "architectures": "GptOssForCausalLM"}) == "gpt_oss_mxfp4"
    assert Q.method({"quant_method": "compressed-tensors", "quant_format": "mxfp4-pack-quantized",
                     "architectures": "KimiK3ForConditionalGeneration"}) == "mxfp4"
    assert Q.method({"quant_method": "modelopt", "quant_format": "nvfp4"}) == "modelopt_fp4"
    assert Q.refusal({"quant_method": "modelopt", "quant_format": "nvfp4"}, (7, 5)) == ""  # Marlin NVFP4 on Turing
    assert Q.refusal({"quant_method": "mxfp4", "architectures": "GptOssForCausalLM"}, (7, 5)).startswith(
        "The quantization method gpt_oss_mxfp4 is not supported for the current GPU. Minimum capability: 80.")


# -- the verdict follows the GPU ------------------------------------------------------------------------------

def test_one_layout_three_verdicts_by_gpu(catalog) -> None:
    """DeepSeek-V3.2 (sparse MLA) at TP 8: accepted on an H100; no attention backend on an A100 (vLLM's whole
    message, with every backend's reasons); gpt-oss-20b refused on a T4 by its quantization's minimum."""
    cat = catalog.set_index("model_id")
    ds = cat.loc["deepseek-ai/DeepSeek-V3.2"]
    assert rules.check(ds, "vllm", 8, platform="cuda-sm90").valid
    a100 = rules.check(ds, "vllm", 8, platform="cuda-sm80")
    assert not a100.valid and a100.failures[0].rule_id == "vllm.attention_backend.none"
    msg = a100.failures[0].message
    assert msg.startswith("No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, "
                          "dtype=torch.bfloat16, kv_cache_dtype=auto,")
    assert "use_sparse=True" in msg and "FLASHMLA_SPARSE: [" in msg and a100.failures[0].location == A.SELECT_SITE
    assert a100.evidence == "executed" and "cuda-sm80" in a100.evidence_text
    t4 = rules.check(cat.loc["openai/gpt-oss-20b"], "vllm", 1, platform="cuda-sm75")
    assert t4.failures[0].message.startswith("The quantization method gpt_oss_mxfp4 is not supported")
    assert rules.check(cat.loc["openai/gpt-oss-20b"], "vllm", 1, platform="cuda-sm80").valid


def test_the_triton_fp8_kv_message_names_the_users_gpu(catalog) -> None:
    rec = catalog.set_index("model_id").loc["nvidia/Gemma-4-31B-IT-NVFP4"]
    v = rules.check(rec, "vllm", 1, platform="cuda-sm80", device_name=gpus.gpu_row("A10-24GB")["name"])
    assert not v.valid and v.failures[0].rule_id == "vllm.attention_backend.triton_fp8_kv"
    assert "Triton attention backend on NVIDIA A10 (compute capability 8.0)" in v.failures[0].message
    assert v.failures[0].message.endswith("Re-run with --kv-cache-dtype bfloat16.")
    assert rules.check(rec, "vllm", 1, platform="cuda-sm89").valid  # L40S: native FP8


def test_a_grid_on_another_gpu_changes_only_the_cells_the_tables_change(catalog) -> None:
    sm90 = rules.grid(catalog, frameworks=["vllm"])
    for pid in TABLE_PLATFORMS:
        other = rules.grid(catalog, frameworks=["vllm"], platform=pid)
        changed = set(other.loc[other["valid"] != sm90["valid"], "model_id"].astype(str))
        new = driver.load_table("vllm", RELEASE, pid)
        base = driver.load_table("vllm", RELEASE)
        from conformance import platforms

        diff = platforms.differences(new, base)
        judged = diff["outcome_new"].isin(compare.JUDGED) & diff["outcome_sm90"].isin(compare.JUDGED)
        flips = set(diff.loc[judged & ((diff["outcome_new"] == "built") != (diff["outcome_sm90"] == "built")),
                             "model_id"])
        assert flips <= changed, (pid, sorted(flips - changed)[:5])  # every model whose verdicts moved moves here
        assert changed <= set(diff["model_id"]), (pid, sorted(changed - set(diff["model_id"]))[:5])


def test_rules_keyed_by_platform_never_fire_elsewhere(catalog) -> None:
    rid = "vllm.kernel.fp8_moe_backend"
    rule = next(r for r in rules.rules_at("vllm", RELEASE) if r.id == rid)
    assert set(rule.platforms) == {"cuda-sm75", "cuda-sm80"}
    g = rules.grid(catalog, frameworks=["vllm"], platform="cuda-sm89")
    assert not (g["rule_id"].astype(str) == rid).any()
    assert (rules.grid(catalog, frameworks=["vllm"], platform="cuda-sm80")["rule_id"].astype(str) == rid).any()


def test_a_rocm_platform_gets_no_cuda_attention_answer(catalog) -> None:
    """No ROCm facts were executed (the stand-in is not faithful: conformance README): the port says nothing there."""
    rec = catalog.set_index("model_id").loc["deepseek-ai/DeepSeek-V3.2"]
    assert A.first_error(rec, "rocm-gfx942", 8).decided is False
    v = rules.check(rec, "vllm", 8, platform="rocm-gfx942")
    assert not any(f.rule_id.startswith("vllm.attention_backend") for f in v.failures)
    assert v.evidence == "source"


def test_readme_documents_the_attention_facts() -> None:
    text = (ROOT / "data" / "conformance" / "README.md").read_text()
    assert "python -m conformance attention" in text


def test_check_offers_only_layouts_that_start_on_the_users_gpu(shared_dir) -> None:
    """The issue's example on a T4: Qwen3-30B-A3B-FP8 at TP 8 is refused by the FP8 MoE kernel rule, and every
    layout check offers instead starts on a T4 (TP 4 EP off refuses there too: the table's own cells)."""
    import subprocess
    import sys

    cfg = shared_dir / "hub-configs" / "Qwen--Qwen3-30B-A3B-FP8.json"
    r = subprocess.run([sys.executable, "-m", "dashboard.cli", "check", str(cfg), "--framework", "vllm", "--tp", "8",
                        "--gpu", "T4-16GB", "--json"], capture_output=True, text=True, timeout=300)
    doc = json.loads(r.stdout)
    assert doc["first_error"]["rule_id"] == "vllm.kernel.fp8_moe_backend"
    assert doc["evidence"] == "executed" and doc["conformance"]["table_platform"] == "cuda-sm75"
    table = driver.load_table("vllm", RELEASE, "cuda-sm75")
    cells = table[table["model_id"] == "Qwen/Qwen3-30B-A3B-FP8"]
    for alt in doc["alternatives"]:
        if alt["pp"] == 1 and alt["dp"] == 1:  # a cell the T4 table holds
            hit = cells[(cells["tp"] == alt["tp"]) & (cells["ep"] == bool(alt["expert_parallel"]))
                        & (cells["dp"] == 1)]
            assert (hit["outcome"] == "built").all(), alt
    assert not any(a["tp"] == 4 and not a["expert_parallel"] and a["pp"] == 1 for a in doc["alternatives"])


def test_plan_and_check_agree_on_fp8_weights_below_native_fp8(catalog) -> None:
    """vLLM serves FP8 and NVFP4 checkpoints below native support through Marlin (Fp8Config / ModelOpt FP4 minimum
    capability 75, executed): the planner's hardware table refuses no vLLM layout for it, so plan and check agree."""
    from dashboard import planner

    rec = catalog.set_index("model_id", drop=False).loc["Qwen/Qwen3-30B-A3B-FP8"]
    p = planner.plan(rec, 2, "A100-80GB", context_len=8192)
    v = p[(p["framework"] == "vllm") & (p["tp"] == 2) & (p["pp"] == 1) & (p["dp"] == 1)]
    assert v["valid"].all() and (v["refusal_kind"] != "dtype").all() and v["starts"].any()
    assert rules.check(rec, "vllm", 2, platform="cuda-sm80").valid
    sg = p[p["framework"] == "sglang"]
    assert (sg["refusal_kind"] == "dtype").all()  # SGLang's hardware refusal is unchanged (its own rules)


def test_a_card_given_by_its_memory_is_never_executed_evidence(catalog) -> None:
    rec = catalog.set_index("model_id").loc["openai/gpt-oss-20b"]
    v = rules.check(rec, "vllm", 1, platform=gpus.evidence_platform("other:24"))
    assert v.valid and v.evidence == "source" and v.conformance.platform == "unknown"
    assert "family is unknown" in v.evidence_text and "judged as that platform" in v.evidence_text
    assert gpus.evidence_platform("other:24") == "unknown" and gpus.evidence_platform("A10-24GB") == "cuda-sm80"


def test_an_explicit_kv_cache_dtype_lifts_the_checkpoints_fp8_kv(catalog) -> None:
    """vLLM's advice after the Triton FP8-KV refusal is "--kv-cache-dtype bfloat16": with it the A100 takes the
    layer (a given --kv-cache-dtype wins over the checkpoint's scheme; vllm/engine/arg_utils.py:2297 resolves
    only "auto"); the verdict is then not "reproduced" (the tables ran auto); bfloat16 on a T4 hits Triton's bf16
    check (triton_attn.py:525)."""
    rec = catalog.set_index("model_id").loc["nvidia/Gemma-4-31B-IT-NVFP4"]
    auto = rules.check(rec, "vllm", 1, platform="cuda-sm80")
    assert auto.failures[0].rule_id == "vllm.attention_backend.triton_fp8_kv" and auto.evidence == "executed"
    bf16 = rules.check(rec, "vllm", 1, platform="cuda-sm80", kv_cache_dtype="bfloat16")
    assert bf16.valid and bf16.evidence != "executed"
    t4 = rules.check(rec, "vllm", 1, platform="cuda-sm75", kv_cache_dtype="bfloat16")
    assert t4.failures[0].message.startswith("bfloat16 KV cache is not supported on Tesla T4 (compute capability 7.5)")
    assert rules.check(rec, "vllm", 1, platform="cuda-sm75", kv_cache_dtype="float16").valid
