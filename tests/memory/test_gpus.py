"""The GPU table (data/gpus.csv) and the "other:<GiB>" GPU given by its memory, across the API, the CLI and
the dashboard state (no browser)."""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest

from dashboard.catalog import load_catalog
from dashboard import check as chk
from dashboard import memory, planner
from dashboard.state import PlannerState

MiB = 1 << 20
LLAMA8 = "meta-llama/Llama-3.1-8B-Instruct"

#: The seven ids the table had before it grew (in URLs, tests and notebooks): memory bytes, capability,
#: GPUs per node. These must not change.
PINNED = {
    "A100-40GB": (42_949_672_960, "8.0", 8),
    "A100-80GB": (85_899_345_920, "8.0", 8),
    "H100-80GB": (85_520_809_984, "9.0", 8),
    "H200-141GB": (150_754_820_096, "9.0", 8),
    "B200-180GB": (192_265_846_784, "10.0", 8),
    "L40S-48GB": (48_305_799_168, "8.9", 4),
    "MI300X-192GB": (205_822_885_888, "gfx942", 8),
}


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return memory.load_gpus()


# ------------------------------------------------------------------------------ the table ----
def test_table_integrity(table):
    assert len(table) >= 25
    assert table["gpu"].is_unique and table["gpu"].str.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.\-]*").all()
    assert not table["gpu"].str.lower().str.startswith("other").any()  # the other:<GiB> spelling stays free
    assert (table["memory_mib"].astype("int64") * MiB == table["memory_bytes"]).all()
    assert (table["memory_gib"] - table["memory_bytes"] / memory.GiB).abs().max() < 0.001
    assert table["source_url"].str.match(r"https://[^\s]+$").all(), "every row cites a public URL"
    assert not table["memory_source"].str.contains("search-index", case=False).any()  # no opaque file ids
    assert set(table["memory_figure"]) <= {"nvidia-smi", "torch", "rocm-smi", "spec-sheet"}
    assert table["platform_source"].str.contains("https://").all()
    assert (table["gpus_per_node"] >= 1).all()
    for _, r in table.iterrows():
        cc = r["compute_capability"]
        if r["vendor"] == "amd":
            assert cc in planner.AMD_DTYPES, (r["gpu"], cc)
        else:
            assert re.fullmatch(r"\d{1,2}\.\d", cc), (r["gpu"], cc)


def test_spec_sheet_rows_are_decimal_gb_and_driver_rows_say_where():
    g = memory.load_gpus()
    spec = g[g["memory_figure"] == "spec-sheet"]
    # spec-sheet rows: the vendor's decimal GB rounded down to whole MiB, a lower bound
    for _, r in spec.iterrows():
        gb = float(re.search(r"spec sheet (\d+(?:\.\d+)?) GB", r["memory_source"]).group(1))
        assert r["memory_mib"] == int(gb * 10**9 // MiB), r["gpu"]
    driver = g[g["memory_figure"] != "spec-sheet"]
    assert len(driver) >= 15
    for _, r in driver[driver["memory_figure"] == "nvidia-smi"].iterrows():
        assert f"{int(r['memory_mib'])}MiB" in r["memory_source"], r["gpu"]
    # cudaMemGetInfo where a public log shows it (vLLM's total_gpu_memory on an H100)
    assert g.set_index("gpu").loc["H100-80GB", "mem_get_info_gib"] == pytest.approx(79.22)


def test_the_old_ids_keep_their_memory_capability_and_node_size(table):
    by = table.set_index("gpu")
    for gid, (b, cc, gpn) in PINNED.items():
        assert int(by.loc[gid, "memory_bytes"]) == b and by.loc[gid, "compute_capability"] == cc, gid
        assert int(by.loc[gid, "gpus_per_node"]) == gpn, gid
        assert memory.resolve_gpu_id(gid.lower()) == gid and memory.gpu_memory(gid) == (gid, b)


def test_the_issues_cards_are_all_listed(table):
    names = " ".join(table["gpu"])
    for card in ["A10-", "A10G-", "L4-", "L40-", "L40S-", "T4-", "A100-40GB", "A100-80GB", "H100-80GB",
                 "H100-PCIe", "H100-NVL-94GB", "H200-", "H20-96GB", "H20-141GB", "H800-", "A800-", "GH200-96GB",
                 "GH200-144GB", "B200-", "B300-", "GB200-", "GB300-", "RTX-3090", "RTX-4090", "RTX-5090",
                 "RTX-A6000", "RTX-6000-Ada", "RTX-PRO-6000", "MI250X", "MI300X", "MI325X", "MI355X"]:
        assert card in names, card
    by = table.set_index("gpu")
    assert by.loc["T4-16GB", "compute_capability"] == "7.5" and by.loc["B300-288GB", "compute_capability"] == "10.3"
    assert by.loc["RTX-5090-32GB", "compute_capability"] == "12.0" and by.loc["MI355X-288GB", "compute_capability"] == "gfx950"
    assert int(by.loc["GB200-192GB", "gpus_per_node"]) == 72 and int(by.loc["GB300-288GB", "gpus_per_node"]) == 72


# ------------------------------------------------------------------------- other:<GiB> ----
@pytest.mark.parametrize("given, canonical, mib", [
    ("other:24", "other:24", 24 * 1024), ("Other: 24.0", "other:24", 24 * 1024), ("OTHER:80", "other:80", 80 * 1024),
    ("other:23.5", "other:23.5", 24064), ("other:1", "other:1", 1024)])
def test_other_spelling_gives_memory_in_gib(given, canonical, mib):
    row = memory.gpu_row(given)
    assert row["gpu"] == canonical and row["memory_bytes"] == mib * MiB and row["memory_figure"] == "user"
    assert row["compute_capability"] == "" and row["gpus_per_node"] is None
    assert memory.resolve_gpu_id(given) == canonical and memory.other_gpu(mib / 1024) == canonical


@pytest.mark.parametrize("bad", ["other:", "other:abc", "other:0", "other:-8", "other:nan", "other:inf",
                                 "other:5000", "other:24GiB"])
def test_bad_other_spellings_say_what_is_expected(bad):
    with pytest.raises(ValueError, match=r"after 'other:' give the memory per GPU in GiB, a number from 1 to 4096"):
        memory.gpu_row(bad)


def test_unknown_gpu_names_the_other_spelling():
    with pytest.raises(ValueError, match=r"unknown GPU 'Z100'; known: A100-40GB.*or other:<GiB>"):
        memory.gpu_row("Z100")


def test_capacity_and_layout_capacity_take_other():
    rec = planner._resolve_record(LLAMA8)
    a = memory.capacity(rec, "vllm", "other:24", 1, context_len=8192)
    b = memory.capacity(rec, "vllm", 24 * memory.GiB, 1, context_len=8192)
    assert a["tokens_per_gpu"] == b["tokens_per_gpu"] > 0
    bigger = memory.capacity(rec, "vllm", "other:48", 1, context_len=8192)
    assert bigger["tokens_per_gpu"] > a["tokens_per_gpu"]
    with pytest.raises(ValueError, match="after 'other:'"):
        memory.capacity(rec, "vllm", "other:x", 1, context_len=8192)


def test_planner_on_other_skips_the_dtype_check_and_says_so():
    p = planner.plan(LLAMA8, 2, "other:24", context_len=8192, commands=False)
    assert p.attrs["gpu"] == "other:24" and p.attrs["gpus_per_node"] == 8
    assert p.attrs["dtype_check"].startswith("dtype check skipped: the compute capability of other:24 is unknown")
    assert not (p["refusal_kind"] == "dtype").any() and p["fits"].any()
    assert planner.plan_to_dict(p)["dtype_check"] == p.attrs["dtype_check"]
    assert "Note: dtype check skipped" in planner.format_table(p)
    # fp8 KV on an unknown card is not refused either; on a known Ampere card it is
    assert not (planner.plan(LLAMA8, 1, "other:24", context_len=8192, kv_dtype="fp8",
                             commands=False)["refusal_kind"] == "dtype").any()
    known = planner.plan(LLAMA8, 1, "A10G-24GB", context_len=8192, kv_dtype="fp8", commands=False)
    assert known.attrs["dtype_check"] == "" and (known["refusal_kind"] == "dtype").all()


def test_t4_runs_a_bf16_checkpoint_in_fp16_under_vllms_dtype_auto_and_refuses_an_explicit_bf16():
    # --dtype auto (the launch commands' default): vLLM falls back to float16 and starts
    p = planner.plan(LLAMA8, 4, "T4-16GB", context_len=4096, frameworks=("vllm",), commands=False)
    assert p.attrs["gpus_per_node"] == 4
    assert not (p["refusal_kind"] == "dtype").any() and p["starts"].any()
    assert "Falling back to torch.float16 for compatibility" in p.attrs["dtype_check"]
    assert "Tesla T4" in p.attrs["dtype_check"]
    fp16 = planner.plan(LLAMA8, 4, "T4-16GB", context_len=4096, weight_dtype="fp16", kv_dtype="fp16",
                        frameworks=("vllm",), commands=False)
    assert fp16["weight_bytes_per_gpu"].tolist() == p["weight_bytes_per_gpu"].tolist()
    # an explicit bf16 (--dtype bfloat16) is refused with vLLM's own message
    b = planner.plan(LLAMA8, 4, "T4-16GB", context_len=4096, weight_dtype="bf16", frameworks=("vllm",),
                     commands=False)
    msg = b.loc[b["refusal_kind"] == "dtype", "refusal"].iloc[0]
    assert msg.startswith("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                          "Your Tesla T4 GPU has compute capability 7.5.")
    # SGLang takes the checkpoint's bf16 as is: still refused on a T4 (a planner rule, marked as ours)
    sg = planner.plan(LLAMA8, 4, "T4-16GB", context_len=4096, frameworks=("sglang",), commands=False)
    assert (sg["refusal_kind"] == "dtype").any() and "planner rule" in sg.loc[sg["refusal_kind"] == "dtype",
                                                                              "refusal"].iloc[0]


def test_vllm_runs_float16_refusing_models_in_float32_on_a_t4():
    cat = load_catalog()
    gem = cat[(cat["model_type"].astype(str) == "gemma2") & (cat["torch_dtype"].astype(str) == "bfloat16")]
    assert len(gem), "the catalog has a bf16 Gemma-2"
    rec = gem.iloc[[0]]
    p = planner.plan(rec, 4, "T4-16GB", context_len=4096, frameworks=("vllm",), commands=False)
    assert "Falling back to torch.float32" in p.attrs["dtype_check"]
    f32 = planner.plan(rec, 4, "T4-16GB", context_len=4096, weight_dtype="fp32", kv_dtype="fp32",
                       frameworks=("vllm",), commands=False)
    assert p["weight_bytes_per_gpu"].tolist() == f32["weight_bytes_per_gpu"].tolist()
    pc = planner.plan_catalog(rec, 4, "T4-16GB", min_sequences=1, context_len=4096, frameworks=("vllm",))
    best = p[p["starts"]]["sequences_total"].max() if p["starts"].any() else 0
    assert int(pc["sequences_total"].iloc[0]) == int(best)


def test_l4_node_size_comes_from_the_table():
    by = memory.load_gpus().set_index("gpu")
    gpn = int(by.loc["L4-24GB", "gpus_per_node"])
    assert gpn in (4, 8)
    p = planner.plan(LLAMA8, 16, "L4-24GB", context_len=8192, frameworks=("vllm",), commands=False)
    assert p.attrs["gpus_per_node"] == gpn
    tp16 = p[p["layout"].str.startswith("TP 16")]
    assert len(tp16) and (tp16["refusal_kind"] == "cross_node_tp").all()


def test_blackwell_and_amd_dtypes():
    assert planner.gpu_info("B300-288GB").runs("nvfp4") and planner.gpu_info("RTX-PRO-6000-96GB").runs("nvfp4")
    assert not planner.gpu_info("H20-141GB").runs("nvfp4") and planner.gpu_info("H20-141GB").runs("fp8")
    mi250 = planner.gpu_info("MI250X-64GB")
    assert mi250.runs("bf16") and not mi250.runs("fp8")
    assert planner.gpu_info("MI355X-288GB").runs("fp8")


# ----------------------------------------------------------------------------------- CLI ----
def _run(mod, argv):
    out, err = io.StringIO(), io.StringIO()
    if mod is chk:
        rc = chk.main(argv, stdin=io.BytesIO(b""), stdout=out, stderr=err)
        return rc, out.getvalue(), err.getvalue()
    import contextlib

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = planner.main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_cli_plan_takes_other_and_refuses_bad_spellings():
    rc, out, err = _run(planner, [LLAMA8, "--gpus", "2", "--gpu", "Other:24", "--context-len", "8192", "--json"])
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["gpu"] == "other:24" and doc["dtype_check"].startswith("dtype check skipped")
    rc, out, err = _run(planner, [LLAMA8, "--gpus", "2", "--gpu", "other:lots", "--context-len", "8192"])
    assert rc == 2 and out == ""
    assert err.strip() == ("tp-planner plan: error: GPU 'other:lots': after 'other:' give the memory per GPU in "
                           "GiB, a number from 1 to 4096 (e.g. other:24 for a 24 GiB card)")


def test_cli_check_takes_other_and_refuses_bad_spellings(tmp_path):
    from tests.test_check import LLAMA_70B_CONFIG

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(LLAMA_70B_CONFIG))
    rc, out, err = _run(chk, [str(cfg), "--tp", "8", "--gpu", "other:80", "--max-model-len", "8192", "--json"])
    doc = json.loads(out)
    assert doc["memory"]["gpu"] == "other:80" and doc["memory"]["gpu_memory_bytes"] == 80 * memory.GiB
    h100 = json.loads(_run(chk, [str(cfg), "--tp", "8", "--gpu", "h100-80gb", "--max-model-len", "8192",
                                 "--json"])[1])
    assert h100["memory"]["gpu"] == "H100-80GB"
    assert doc["memory"]["kv_tokens_per_gpu"] > h100["memory"]["kv_tokens_per_gpu"]  # 80 GiB > 79.65 GiB
    rc, out, err = _run(chk, [str(cfg), "--tp", "8", "--gpu", "other:0"])
    assert rc == 2 and "after 'other:' give the memory per GPU in GiB" in err
    rc, out, err = _run(chk, [str(cfg), "--tp", "8", "--gpu", "Z100"])
    assert rc == 2 and "unknown GPU 'Z100'" in err and "other:<GiB>" in err


# ------------------------------------------------------------------------ dashboard state ----
def test_link_takes_other_and_refuses_bad_spellings():
    known = {"gpu": list(memory.load_gpus()["gpu"])}
    s = PlannerState()
    assert s.apply_query("?gpu=Other:24.50", known_values=known) == [] and s.gpu == "other:24.5"
    assert s.query_string() == "?gpu=other:24.5"
    s = PlannerState()
    notes = s.apply_query("?gpu=other:huge", known_values=known)
    assert s.gpu == "" and len(notes) == 1 and "after 'other:' give the memory per GPU in GiB" in notes[0]
    s = PlannerState()
    assert s.apply_query("?gpu=t4-16gb", known_values=known) == [] and s.gpu == "T4-16GB"


def test_gpu_picker_round_trip():
    pytest.importorskip("panel")
    from dashboard.views.controls import OTHER_GPU_LABEL, gpu_names, gpu_picker, resolve_gpu

    gpus = gpu_names()
    assert resolve_gpu("other:24.0", gpus) == "other:24" and resolve_gpu("other:x", gpus) == "H100-80GB"
    s = PlannerState()
    sel, gib = gpu_picker(s, width=150, css_class="t")
    assert sel.options[-1] == OTHER_GPU_LABEL and sel.options[:-1] == gpus and not gib.visible
    sel.value = OTHER_GPU_LABEL
    assert s.gpu == "other:24" and gib.visible
    gib.value = 40
    assert s.gpu == "other:40"
    gib.value = 99999  # out of range: the state keeps the last good value, and so does the box
    assert s.gpu == "other:40" and gib.value == 40
    gib.value = -5
    assert s.gpu == "other:40" and gib.value == 40
    sel.value = "L4-24GB"
    assert s.gpu == "L4-24GB" and not gib.visible
    s.gpu = "other:12"  # a link sets it: the widgets follow
    assert sel.value == OTHER_GPU_LABEL and gib.value == 12 and gib.visible


def test_every_card_names_its_platform_from_its_capability():
    """data/gpus.csv's platform column is the family of the card's capability: one id per CUDA
    capability family (8.6 runs Ampere's kernels: cuda-sm80; 10.3 Blackwell's: cuda-sm100) and the AMD
    target itself; every platform's stand-in card belongs to it; a card given by its memory has none."""
    from dashboard.gpus import PLATFORMS, load_gpus, platform_of

    family = {"7.5": "cuda-sm75", "8.0": "cuda-sm80", "8.6": "cuda-sm80", "8.9": "cuda-sm89", "9.0": "cuda-sm90",
              "10.0": "cuda-sm100", "10.3": "cuda-sm100", "12.0": "cuda-sm120"}
    df = load_gpus()
    for _, row in df.iterrows():
        cc = row["compute_capability"]
        want = f"rocm-{cc}" if cc.startswith("gfx") else family[cc]
        assert row["platform"] == want, (row["gpu"], row["platform"], want)
        assert platform_of(row["gpu"]) == want
    assert set(df["platform"]) == set(PLATFORMS)
    for p in PLATFORMS.values():
        assert platform_of(p.stand_in) == p.id
        assert p.is_rocm == p.id.startswith("rocm-")
    assert platform_of("other:24") is None
