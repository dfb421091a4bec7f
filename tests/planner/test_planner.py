"""The deployment planner (dashboard.planner) and ``tp-planner plan``: layouts, verdicts, capacity,
ranking, refusals, launch commands, the vectorized helpers it stands on, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard import memory, planner, rules
from dashboard.catalog import load_catalog
from tests.planner.plan_rows import check_plan_row

ROOT = Path(__file__).resolve().parents[2]
LLAMA = "meta-llama/Llama-3.1-70B-Instruct"
DSV3 = "deepseek-ai/DeepSeek-V3"


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.fixture(scope="module")
def rec(cat):
    return cat[cat["model_id"] == LLAMA].iloc[[0]]


@pytest.fixture(scope="module")
def llama16(rec):
    """Llama-3.1-70B on 16 x H100-80GB (2 nodes x 8), 32k context, vLLM and SGLang."""
    return planner.plan(rec, 16, "H100-80GB", context_len=32768, frameworks=("vllm", "sglang"))


@pytest.fixture(scope="module")
def dsv3(cat):
    return planner.plan(cat[cat["model_id"] == DSV3].iloc[[0]], 8, "H200-141GB", context_len=32768)


def _row(df, fw, **kw):
    m = df["framework"] == fw
    for k, v in {"pp": 1, "dp": 1, "attn_dp": 1, "ep": 1, **kw}.items():
        m &= df[k] == v
    hit = df[m]
    assert len(hit) == 1, (fw, kw, len(hit))
    return hit.iloc[0]


# ---------------------------------------------------------------------------------------- layouts ----
def test_every_layout_of_16_gpus_for_vllm_and_sglang(llama16):
    triples = {(t, p, 16 // (t * p)) for t in (1, 2, 4, 8, 16) for p in (1, 2, 4, 8, 16) if 16 % (t * p) == 0}
    for fw in ("vllm", "sglang"):
        got = llama16[(llama16["framework"] == fw) & (llama16["attn_dp"] == 1)]
        assert set(zip(got["tp"], got["pp"], got["dp"])) == triples
    assert (llama16["tp"] * llama16["pp"] * llama16["dp"] == 16).all()
    assert (llama16["ep"] == 1).all()  # a dense model gets no EP variants
    sg = llama16[(llama16["framework"] == "sglang") & (llama16["attn_dp"] > 1)]
    assert len(sg) and (sg["tp"] % sg["attn_dp"] == 0).all()  # attention-DP divides TP
    assert set(llama16["framework"]) == {"vllm", "sglang"}
    assert llama16.attrs["gpus_per_node"] == 8  # from the GPU table
    assert list(llama16.columns) == [c for c, _ in planner.COLUMNS]


def test_tp8_dp2_accepted_with_its_capacity(llama16, rec):
    r = _row(llama16, "vllm", tp=8, dp=2)
    assert r["valid"] and r["starts"] and r["fits"] and r["first_error"] == ""
    cap = memory.capacity(rec, "vllm", "H100-80GB", 8, dp=2, context_len=32768)
    assert r["weight_bytes_per_gpu"] == pytest.approx(cap["weight_bytes_per_gpu"])
    assert r["kv_budget_bytes_per_gpu"] == pytest.approx(cap["kv_budget_bytes_per_gpu"])
    assert r["kv_tokens_per_gpu"] == cap["tokens_per_gpu"]
    assert r["kv_sequences_per_replica"] == cap["concurrent_sequences"] == 40
    assert r["scheduler_limit_per_replica"] == 1024  # vLLM 0.33.0 on an H100
    assert r["sequences_per_replica"] == 40 and r["sequences_total"] == 80 and r["limited_by"] == "kv"
    assert 16.3 < r["weight_bytes_per_gpu"] / memory.GiB < 16.6  # 70.6 B params in bf16 over TP 8
    assert r["rank"] >= 1


def test_tp16_refused_without_cross_node_tp_and_replicated_when_allowed(llama16, rec):
    r = _row(llama16, "vllm", tp=16)
    assert r["valid"] and not r["starts"] and not r["fits"]
    assert r["refusal_kind"] == "cross_node_tp" and "TP 16 spans nodes of 8 GPUs" in r["refusal"]
    assert pd.isna(r["rank"]) and r["commands"] == ()
    allowed = planner.plan(rec, 16, "H100-80GB", context_len=32768, frameworks=("vllm",), cross_node_tp=True)
    a = _row(allowed, "vllm", tp=16)
    assert a["starts"] and a["status"] == "valid_replicated"  # 8 KV heads over 16 ranks
    assert a["sequences_total"] > 0 and len(a["commands"]) == 2  # one command per node


def test_refused_layouts_each_name_their_reason(llama16):
    bad = llama16[~llama16["starts"]]
    assert len(bad)
    assert (bad["refusal"].str.len() > 20).all() and (bad["refusal_kind"] != "").all()
    assert (bad["why_not"] == bad["refusal"]).all()
    # a layout the memory model cannot hold: vLLM's own start-up message with the numbers
    r = _row(llama16, "vllm", tp=2, dp=8)
    assert r["refusal_kind"] == "memory"
    assert r["refusal"].startswith("To serve at least one request with the model's max seq len (32768), (5.0 GiB KV "
                                   "cache is needed, which is larger than the available KV cache memory")
    one = _row(llama16, "vllm", tp=1, dp=16)
    assert one["refusal_kind"] == "memory" and "Weights need 131.45 GiB per GPU" in one["refusal"]  # 131.42 of parameters + the 32 MiB rope cache
    ref = planner.refusals(llama16)
    assert any(s.startswith("TP 16 refused by vLLM: TP 16 spans nodes of 8 GPUs") for s in ref["summary"])
    assert ref["count"].sum() == len(bad)


def test_rule_refusals_carry_the_rule(rec):
    # TP 3 does not divide 64 query heads: the rules engine's own first error, rule id and source
    p = planner.plan(rec, 3, "H100-80GB", context_len=8192, frameworks=("vllm", "sglang", "tensorrt-llm"))
    for fw in ("vllm", "sglang", "tensorrt-llm"):
        r = _row(p, fw, tp=3)
        v = rules.check(rec.iloc[0], fw, 3)
        assert not r["valid"] and r["refusal_kind"] == "rule"
        assert r["first_error"] == v.failures[0].message == r["refusal"]
        assert r["first_error_rule"] == v.failures[0].rule_id
        assert r["first_error_source"] == v.failures[0].source_url
        assert [m for _, m in r["failures"]] == [f.message for f in v.failures]
        assert r["evidence"] == v.evidence
    assert _row(p, "vllm", tp=1, pp=3)["valid"] is not None


def test_verdicts_match_rules_check_on_every_layout(dsv3, cat):
    rec = cat[cat["model_id"] == DSV3].iloc[0]
    for r in dsv3.to_dict("records"):
        v = check_plan_row(rec, r)
        assert (r["valid"], r["status"]) == (v.valid, v.status), r["layout"]


def test_deepseek_v3_on_8_h200_has_ep_and_attention_dp_layouts(dsv3):
    assert dsv3.attrs["moe"]
    for fw in ("vllm", "sglang", "tensorrt-llm"):
        sub = dsv3[dsv3["framework"] == fw]
        assert (sub["ep"] > 1).any(), fw
        assert sub["valid"].notna().all() and sub["status"].isin(
            ["valid", "valid_replicated", "valid_padded", "invalid", "unknown"]).all()
    assert ((dsv3["framework"] == "sglang") & (dsv3["attn_dp"] == 8) & (dsv3["ep"] == 8)).any()
    assert ((dsv3["framework"] == "tensorrt-llm") & (dsv3["attn_dp"] == 8)).any()
    v = _row(dsv3, "vllm", tp=8, ep=8)
    assert v["starts"] and "--enable-expert-parallel" in v["commands"][0]
    s = _row(dsv3, "sglang", tp=8, attn_dp=8, ep=8)
    assert s["starts"] and s["kv_sequences_per_replica"] > 0


def test_ranking_near_ties_then_total_sequences_then_fewest_gpus_per_replica(llama16):
    fit = llama16[llama16["fits"]]
    assert list(fit["rank"]) == list(range(1, len(fit) + 1))
    top = fit["sequences_total"].max()
    band = fit["sequences_total"] >= 0.9 * top
    n = int(band.sum())
    assert band.iloc[:n].all() and not band.iloc[n:].any()  # the near-ties first
    keys = list(zip(fit["pp"][:n], -fit["dp"][:n], -fit["sequences_total"][:n], fit["gpus_per_replica"][:n]))
    assert keys == sorted(keys)
    keys = list(zip(-fit["sequences_total"][n:], fit["gpus_per_replica"][n:]))
    assert keys == sorted(keys)
    assert not llama16.iloc[len(fit):]["fits"].any()
    b = planner.best(llama16)
    assert set(b["framework"]) == {"vllm", "sglang"} and (b["rank"] >= 1).all()


def test_min_sequences_and_scheduler_cap(rec):
    p = planner.plan(rec, 8, "H100-80GB", context_len=1024, frameworks=("vllm",), min_sequences=5000)
    r = _row(p, "vllm", tp=8)
    assert r["starts"] and not r["fits"]
    assert r["limited_by"] == "scheduler" and r["sequences_per_replica"] == 1024  # --max-num-seqs default
    assert r["why_not"] == f"holds {r['sequences_total']} sequences of 1024 tokens, fewer than the 5000 asked"
    a100 = planner.plan(rec, 8, "A100-80GB", context_len=1024, frameworks=("vllm",))
    assert _row(a100, "vllm", tp=8)["scheduler_limit_per_replica"] == 256  # A100: the small tier


def test_sglang_default_running_requests():
    # min(clamp(int(tokens / ctx * 512), 2048, 4096), tokens // 2)
    got = planner.sglang_default_max_running_requests(np.array([100, 10_000, 1_000_000, 10_000_000]), 32768)
    assert got.tolist() == [50, 2048, 4096, 4096]


def test_dtype_refusals_from_the_compute_capability(rec):
    gpu = planner.gpu_info("A100-80GB")
    assert gpu.compute_capability == "8.0" and gpu.gpus_per_node == 8
    p = planner.plan(rec, 8, "A100-80GB", context_len=8192, kv_dtype="fp8", frameworks=("vllm",))
    r = _row(p, "vllm", tp=8)
    assert r["refusal_kind"] == "dtype" and "FP8 KV cache" in r["refusal"] and "8.9" in r["refusal"]
    nv = planner.plan(rec, 8, "H100-80GB", context_len=8192, weight_dtype="nvfp4", frameworks=("sglang",))
    assert _row(nv, "sglang", tp=8)["refusal_kind"] == "dtype"
    assert planner.plan(rec, 8, "B200-180GB", context_len=8192, weight_dtype="nvfp4",
                        frameworks=("sglang",))["refusal_kind"].ne("dtype").all()
    v100 = planner.GPU("V100", "Tesla V100-SXM2-32GB", "nvidia", 32 << 30, "7.0", 8)
    msg = planner._dtype_refusal(v100, "bf16", "bf16", "vllm")
    assert msg.startswith("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                          "Your Tesla V100-SXM2-32GB GPU has compute capability 7.0.")
    mi = planner.gpu_info("MI300X-192GB")
    assert mi.runs("fp8") and mi.runs("bf16") and not mi.runs("nvfp4")


def test_gpu_table_has_capability_and_node_size():
    g = memory.load_gpus()
    assert g["compute_capability"].notna().all() and (g["gpus_per_node"] >= 1).all()
    assert g["platform_source"].str.contains("https://").all()
    by = g.set_index("gpu")
    assert by.loc["H100-80GB", "compute_capability"] == "9.0" and by.loc["L40S-48GB", "gpus_per_node"] == 4


# --------------------------------------------------------------------------------- launch commands ----
def test_launch_commands_for_the_three_frameworks(rec, dsv3):
    p = planner.plan(rec, 8, "H100-80GB", context_len=32768)
    assert _row(p, "vllm", tp=8)["commands"] == (
        "# one node, 8 GPUs\nvllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8 "
        "--pipeline-parallel-size 1 --data-parallel-size 1 --max-model-len 32768 --kv-cache-dtype auto "
        "--gpu-memory-utilization 0.9",)
    s = _row(p, "sglang", tp=8)
    assert s["commands"] == (
        "# one node, 8 GPUs\npython -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct "
        f"--tp-size 8 --context-length 32768 --kv-cache-dtype auto --mem-fraction-static {s['mem_fraction']:.3f}",)
    assert _row(p, "tensorrt-llm", tp=8)["commands"] == (
        "# one node, 8 GPUs\nCUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 trtllm-serve meta-llama/Llama-3.1-70B-Instruct "
        "--backend pytorch --tp_size 8 --pp_size 1 --max_seq_len 32768 --kv_cache_free_gpu_memory_fraction 0.9 "
        "--port 8000",)
    sg = _row(dsv3, "sglang", tp=8, attn_dp=8, ep=8)["commands"][0]
    assert "--tp-size 8 --attn-dp-size 8 --ep-size 8" in sg  # 0.5.23 spelling
    tr = _row(dsv3, "tensorrt-llm", tp=8, attn_dp=8, ep=8)["commands"][0]
    assert "printf 'enable_attention_dp: true\\n' > trtllm-extra.yaml" in tr and "--ep_size 8" in tr


def test_multi_node_commands(llama16):
    v = _row(llama16, "vllm", tp=8, dp=2)["commands"]
    assert len(v) == 2
    assert v[0].endswith("--data-parallel-size-local 1 --data-parallel-address $HEAD_IP --data-parallel-rpc-port 13345")
    assert v[1].endswith("--headless --data-parallel-start-rank 1")
    s = _row(llama16, "sglang", tp=8, dp=2)["commands"]
    assert [c.split("--nnodes")[1] for c in s] == [" 2 --node-rank 0 --dist-init-addr $HEAD_IP:5000",
                                                   " 2 --node-rank 1 --dist-init-addr $HEAD_IP:5000"]
    pp = _row(llama16, "vllm", tp=8, pp=2)["commands"]
    assert "--nnodes 2 --node-rank 1 --master-addr $HEAD_IP --headless" in pp[1]


def test_sglang_flag_spelling_follows_the_release(cat):
    rec = cat[cat["model_id"] == DSV3].iloc[[0]]
    old = planner.plan(rec, 8, "H200-141GB", context_len=8192, frameworks=("sglang",),
                       versions={"sglang": "0.5.21"})
    assert old.attrs["releases"] == {"sglang": "0.5.21"}
    c = _row(old, "sglang", tp=8, attn_dp=8)["commands"][0]
    assert "--enable-dp-attention --dp-size 8" in c and "--attn-dp-size" not in c
    assert not ((old["attn_dp"] > 1) & (old["dp"] > 1)).any()  # the DP flag is taken


# ------------------------------------------------------------------------------------ bad input ----
@pytest.mark.parametrize("kw, exc, text", [
    (dict(gpus=0), ValueError, "gpus must be >= 1"),
    (dict(gpus=4.5), ValueError, "gpus must be a whole number"),
    (dict(gpu_type="H900"), ValueError, "unknown GPU 'H900'"),
    (dict(frameworks=("megatron-core",)), ValueError, "unplanned framework"),
    (dict(frameworks=()), ValueError, "no frameworks"),
    (dict(context_len=0), ValueError, "context_len must be >= 1"),
    (dict(kv_dtype="fp3"), ValueError, "unknown kv_dtype"),
    (dict(weight_dtype="q2"), ValueError, "unknown weight_dtype"),
    (dict(min_sequences=-1), ValueError, "min_sequences must be >= 1"),
    (dict(gpus_per_node=0), ValueError, "gpus_per_node must be >= 1"),
    (dict(versions={"foo": "1"}), ValueError, "unknown framework"),
    (dict(versions="0.1"), TypeError, "versions must map"),
    (dict(record="nobody/nothing"), ValueError, "not in the catalog"),
    (dict(record=42), TypeError, "record must be"),
])
def test_bad_input_is_a_clear_error(rec, kw, exc, text):
    args = dict(record=rec, gpus=8, gpu_type="H100-80GB", context_len=8192)
    args.update(kw)
    with pytest.raises(exc, match=text):
        planner.plan(args.pop("record"), args.pop("gpus"), args.pop("gpu_type"), **args)


def test_a_record_without_shapes_is_planned_not_crashed():
    p = planner.plan({"model_id": "x/empty", "model_type": "llama"}, 4, "H100-80GB", context_len=4096)
    assert len(p) and not p["fits"].any()
    assert (p["why_not"].str.len() > 0).all()


def test_series_and_id_give_the_same_plan(rec, llama16):
    by_series = planner.plan(rec.iloc[0], 16, "H100-80GB", context_len=32768, frameworks=("vllm", "sglang"))
    by_id = planner.plan(LLAMA, 16, "H100-80GB", context_len=32768, frameworks=("vllm", "sglang"))
    cols = ["framework", "layout", "valid", "sequences_total", "refusal", "rank"]
    pd.testing.assert_frame_equal(by_series[cols], llama16[cols])
    pd.testing.assert_frame_equal(by_id[cols], llama16[cols])


# ------------------------------------------------------------------------ vectorized helpers ----
def test_layout_grid_equals_grid_per_layout(cat):
    sub = cat.head(40)
    lay = pd.DataFrame([dict(tp=8, pp=2, dp=1), dict(tp=4, pp=1, dp=2, expert_parallel=True),
                        dict(tp=8, dp=4, dp_attention=True), dict(tp=6, ep=2), dict(tp=2, pp=3, dp=2)])
    g = rules.layout_grid(sub, lay, ("vllm", "sglang", "tensorrt-llm"))
    quick = rules.layout_grid(sub, lay, ("vllm", "sglang", "tensorrt-llm"), messages=False)
    for c in ("valid", "status", "rule_id", "n_failures"):
        assert quick[c].astype(object).tolist() == g[c].astype(object).tolist(), c
    assert (quick["message"].astype(str) == "").all()
    for i, r in lay.fillna({"pp": 1, "dp": 1, "ep": 1, "dp_attention": False, "expert_parallel": False}).iterrows():
        for fw in ("vllm", "sglang", "tensorrt-llm"):
            ref = rules.grid(sub, [int(r.tp)], [fw], pp=int(r.pp), dp=int(r.dp), ep=int(r.ep),
                             dp_attention=bool(r.dp_attention), expert_parallel=bool(r.expert_parallel))
            got = g[(g["framework"] == fw) & (g["layout"] == i)].reset_index(drop=True)
            for c in ("valid", "status", "rule_id", "message", "messages"):
                assert got[c].astype(object).tolist() == ref[c].astype(object).tolist(), (fw, i, c)


def test_layout_capacity_equals_capacity(rec):
    lay = {"tp": [8, 4, 2], "pp": [1, 2, 1], "dp": [2, 1, 4], "dp_attention": [False, False, True]}
    for fw in ("vllm", "sglang", "tensorrt-llm"):
        m = memory.layout_capacity(rec, fw, "H100-80GB", lay, context_len=16384)
        for j in range(3):
            c = memory.capacity(rec, fw, "H100-80GB", lay["tp"][j], pp=lay["pp"][j], dp=lay["dp"][j],
                                dp_attention=lay["dp_attention"][j], context_len=16384)
            assert m["weight_bytes_per_gpu"][0, j] == pytest.approx(c["weight_bytes_per_gpu"])
            assert m["concurrent_sequences"][0, j] == c["concurrent_sequences"]
            assert m["fraction"][0, j] == pytest.approx(c["fraction"])


# ----------------------------------------------------------------------------------- catalog ----
def test_plan_catalog_agrees_with_plan(cat):
    sub = cat[cat["model_id"].isin([LLAMA, DSV3, "meta-llama/Llama-3.1-8B-Instruct"])]
    pc = planner.plan_catalog(sub, 8, "H100-80GB", min_sequences=16, context_len=32768)
    assert len(pc) == 3 * len(sub)
    for mid in sub["model_id"]:
        p = planner.plan(mid, 8, "H100-80GB", context_len=32768, min_sequences=16)
        for fw in planner.PLAN_FRAMEWORKS:
            row = pc[(pc["model_id"] == mid) & (pc["framework"] == fw)].iloc[0]
            pf = p[(p["framework"] == fw) & p["starts"]]
            assert row["layouts_starting"] == len(pf), (mid, fw)
            if len(pf):
                b = planner.best(p)
                b = b[b["framework"] == fw]
                if len(b):  # the same interim ranking as plan()'s best
                    assert row["best_layout"] == b["layout"].iloc[0], (mid, fw)
                    assert row["sequences_total"] == b["sequences_total"].iloc[0], (mid, fw)
                else:
                    assert row["sequences_total"] == pf["sequences_total"].max(), (mid, fw)
                assert row["serves"] == bool(p[p["framework"] == fw]["fits"].any())


def test_plan_catalog_plans_each_shape_once_and_gives_every_model_its_row(cat):
    """Fine-tunes share their base's shape: plan_catalog plans a shape once and gives every model its row;
    a model that differs in one shape column is planned on its own."""
    base = cat[cat["model_id"].isin([LLAMA, DSV3])]
    twin = base.assign(model_id=base["model_id"] + "-finetune", org="someone", name="x")
    odd = base[base["model_id"] == LLAMA].assign(model_id="odd/llama-kv3",
                                                  num_key_value_heads=pd.array([3], dtype="Int64"))
    both = pd.concat([base, twin, odd], ignore_index=True)
    shape, reps = planner.catalog_shapes(both)
    assert len(reps) == 3 and len(set(shape.tolist())) == 3
    assert shape[0] == shape[2] and shape[1] == shape[3] and shape[0] != shape[1]
    kw = dict(min_sequences=16, context_len=32768)
    pc = planner.plan_catalog(both, 8, "H100-80GB", **kw).set_index(["model_id", "framework"])
    ref = planner.plan_catalog(base, 8, "H100-80GB", **kw).set_index(["model_id", "framework"])
    alone = planner.plan_catalog(odd, 8, "H100-80GB", **kw).set_index(["model_id", "framework"])
    for mid in base["model_id"]:
        for fw in planner.PLAN_FRAMEWORKS:
            assert pc.loc[(mid, fw)].tolist() == ref.loc[(mid, fw)].tolist()
            assert pc.loc[(mid + "-finetune", fw)].tolist() == ref.loc[(mid, fw)].tolist()
    for fw in planner.PLAN_FRAMEWORKS:
        assert pc.loc[("odd/llama-kv3", fw)].tolist() == alone.loc[("odd/llama-kv3", fw)].tolist()
    # 3 KV heads do not split over TP 2, 4 or 8 in vLLM: fewer layouts start than for the real model
    assert pc.loc[("odd/llama-kv3", "vllm"), "layouts_starting"] < pc.loc[(LLAMA, "vllm"), "layouts_starting"]


def test_rules_over_a_catalog_equal_rules_one_model_at_a_time(cat):
    """Over a catalog a rule scoped to a few architectures runs over their cells only (Ctx.subset); for one
    model it runs whole. Both give every cell the same verdict and messages."""
    tps = [1, 2, 3, 4, 6, 8, 16]
    fws = ("vllm", "sglang", "tensorrt-llm")
    g = rules.grid(cat, tps, fws)
    cols = ["valid", "status", "rule_id", "message", "messages", "q_heads_per_rank", "kv_heads_per_rank"]
    for i in range(0, len(cat), 3):
        one = cat.iloc[[i]]
        mid = str(one["model_id"].iloc[0])
        ref = rules.grid(one, tps, fws)
        got = g[g["model_id"] == mid].reset_index(drop=True)
        for c in cols:
            assert got[c].astype(object).tolist() == ref[c].astype(object).tolist(), (mid, c)


# ----------------------------------------------------------------------------------- JSON / CLI ----
def test_plan_to_dict_is_json_with_a_schema_version(llama16):
    d = json.loads(json.dumps(planner.plan_to_dict(llama16)))
    assert d["schema_version"] == planner.SCHEMA_VERSION == 1
    assert d["gpus"] == 16 and d["gpu"] == "H100-80GB" and d["releases"]["vllm"] == "0.33.0"
    assert set(d["layouts"][0]) == {c for c, _ in planner.COLUMNS} | {"launch"}
    b = planner.best(llama16)
    assert d["best"]["vllm"] == b.loc[b["framework"] == "vllm", "layout"].iloc[0]
    assert any(r["summary"].startswith("TP 16 refused by vLLM") for r in d["refusals"])


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), HF_HUB_OFFLINE="1")
    env.pop("TP_PLANNER_CATALOG", None)
    return subprocess.run([sys.executable, "-m", "dashboard.cli", "plan", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_table_and_json():
    r = _cli(LLAMA, "--gpus", "16", "--gpu", "H100-80GB", "--gpus-per-node", "8", "--context-len", "32768",
             "--framework", "vllm", "--framework", "sglang", "--limit", "0")
    assert r.returncode == 0, r.stderr
    assert "TP 8 × DP 2" in r.stdout and "TP 16 refused by vLLM" in r.stdout and "vllm serve" in r.stdout
    j = _cli(LLAMA, "--gpus", "16", "--gpu", "H100-80GB", "--framework", "vllm", "--json")
    assert j.returncode == 0, j.stderr
    d = json.loads(j.stdout)
    assert d["schema_version"] == 1 and {x["framework"] for x in d["layouts"]} == {"vllm"}
    assert "Ranked by KV capacity" in r.stdout and "Latency and throughput are not modelled" in r.stdout
    # nothing fits: the plan is printed and the exit status is 1 (a launch script can stop on it)
    none = _cli(LLAMA, "--gpus", "8", "--gpu", "H100-80GB", "--min-sequences", "100000", "--framework", "vllm")
    assert none.returncode == 1, none.stderr
    assert "fewer than the 100000 asked" in none.stdout or "refused" in none.stdout


@pytest.mark.parametrize("args, text", [
    (("nobody/x", "--gpus", "8", "--gpu", "H100-80GB"), "not in the catalog"),
    ((LLAMA, "--gpus", "0", "--gpu", "H100-80GB"), "gpus must be >= 1"),
    ((LLAMA, "--gpus", "8", "--gpu", "TPU"), "unknown GPU"),
    ((LLAMA, "--gpus", "8", "--gpu", "H100-80GB", "--version", "vllm"), "FRAMEWORK=RELEASE"),
])
def test_cli_bad_input_exits_2(args, text):
    r = _cli(*args)
    assert r.returncode == 2 and text in r.stderr and "Traceback" not in r.stderr


def test_a_plan_where_every_layout_starts_has_no_refusals(cat):
    """A small model on 2 GPUs: every layout starts, so refusals() is an empty table with its columns (it
    raised KeyError: 'framework' -- the newcomer trial), and the CLI prints the plan with exit 0."""
    df = planner.plan(cat.set_index("model_id").loc["meta-llama/Llama-3.1-8B-Instruct"], 2, "H100-80GB",
                      context_len=32768, frameworks=("vllm", "sglang"))
    assert df["starts"].all()
    r = planner.refusals(df)
    assert r.empty and list(r.columns) == ["framework", "refusal_kind", "reason", "layouts", "count", "summary"]
    from dashboard.cli import main

    assert main(["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpus", "2", "--gpu", "H100-80GB",
                 "--framework", "vllm", "--json"]) == 0


def test_plan_cli_reads_a_config_file_and_refuses_bad_input(tmp_path, capsys):
    """MODEL may be a config.json (as for ``tp-planner check``); a bad --version or --limit is exit 2 with
    one line (newcomer trial)."""
    from dashboard.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                               "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
                               "intermediate_size": 14336, "vocab_size": 128256}))
    assert main(["plan", str(cfg), "--gpus", "2", "--gpu", "H100-80GB", "--framework", "vllm", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema_version"] == planner.SCHEMA_VERSION and out["layouts"]
    for bad in (["--version", "vllm=garbage"], ["--version", "nope=1.0"], ["--limit", "-1"]):
        assert main(["plan", str(cfg), "--gpus", "2", "--gpu", "H100-80GB", *bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("tp-planner plan: error: ")
