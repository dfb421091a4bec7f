"""Every row of the real failure cases (``../shared/cases/tp-failure-cases.csv``, H01-H26, and
``tp-failure-cases-2.csv``, Y01-Y42; see their README) is a test named after its case_id: the engine's verdict
for the row's rule kind, and the framework's message verbatim where the case gives one.

The files are read from ``../shared`` directly (no copy): outside CI a missing ``../shared`` skips the module,
in CI ``test_case_files_are_present`` fails.

Records: the shipped catalog's full record when ``in_shared_hub_configs`` is yes; else the full config of the
same architecture where the row's note names one (:data:`SAME_ARCHITECTURE`, a ``../shared/hub-configs/``
file with the case's stated numbers and quantization laid over it); else a record built from the case's
``shape_json``.

The product's platform rules (``dashboard.rules.check(..., platform=)``) are those vLLM 0.33.0 executed on each
CUDA platform stand-in (attention backends, the FP8 MoE kernel, quantization minimums; issue 23). Rows whose
outcome the report ties to a GPU check outside them (Marlin's tile check, AITER on ROCm, NVFP4 below
Blackwell), to an older release, or to pipeline support per architecture, are strict expected failures in
:data:`MISSES` with the precise reason, as is every other row the current product gets wrong.
No rule is changed to fit a row.
"""

from __future__ import annotations

import json
import os
import re

import pandas as pd
import pytest

from dashboard.rules import check
from tests.conftest import SHARED

CASE_FILES = (SHARED / "cases" / "tp-failure-cases.csv", SHARED / "cases" / "tp-failure-cases-2.csv")
HUB_CONFIGS = SHARED / "hub-configs"


def _read_cases() -> pd.DataFrame:
    frames = [pd.read_csv(p, dtype=str, keep_default_na=False) for p in CASE_FILES if p.exists()]
    cols = ["case_id", "framework", "framework_version", "model_id", "in_shared_hub_configs", "shape_json", "tp",
            "pp", "dp", "ep", "options_json", "rule_kind", "expected", "message", "reported_at"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


CASES = _read_cases()
_PRESENT = all(p.exists() for p in CASE_FILES)
pytestmark = pytest.mark.skipif(not _PRESENT and not os.environ.get("CI"),
                                reason=f"{', '.join(str(p) for p in CASE_FILES)} not present")


def test_case_files_are_present(shared_dir) -> None:
    missing = [str(p) for p in CASE_FILES if not p.exists()]
    assert not missing, f"case files missing: {missing}"


def _catalog():
    try:
        from dashboard.catalog import load_catalog
    except ImportError:
        return None
    try:
        return load_catalog()
    except (FileNotFoundError, OSError):
        return None


CATALOG = _catalog()


def shape_record(model_id: str, shape: dict) -> dict:
    """A catalog-like record from the few config numbers a case states (a raw config subset)."""
    text = shape.get("text_config", shape.get("llm_config", shape))  # InternVL nests the LLM under llm_config
    rec: dict = {"model_id": model_id, "status": "ok"}
    for k in ("num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size", "intermediate_size",
              "moe_intermediate_size", "num_hidden_layers"):
        if k in text:
            rec[k] = text[k]
    if "n_inner" in text:
        rec["intermediate_size"] = text["n_inner"]
    if "num_attention_heads" in rec and "num_key_value_heads" not in rec:
        rec["num_key_value_heads"] = rec["num_attention_heads"]
    for k in ("n_routed_experts", "num_experts", "num_local_experts"):
        if k in text:
            rec["num_experts"] = text[k]
    if "num_experts" in rec or "moe_intermediate_size" in rec:
        rec["is_moe"] = True
        if "intermediate_size" in rec:  # DeepSeek-style: first_k_dense_replace dense layers
            rec["num_dense_layers"] = 1
    q = shape.get("quantization_config") or text.get("quantization_config")
    if q:
        rec["is_quantized"] = True
        rec["quant_method"] = q.get("quant_method")
        if q.get("weight_block_size"):
            rec["weight_block_n"], rec["weight_block_k"] = q["weight_block_size"][:2]
    vis = shape.get("vision_config")
    if vis and "num_heads" in vis:
        rec["has_vision"] = True
        rec["vision_num_heads"] = vis["num_heads"]
    lac = text.get("linear_attn_config")
    if lac and "num_heads" in lac:
        rec["has_linear_attention"] = True
        rec["linear_attention_kind"] = "kda"
        rec["linear_num_value_heads"] = lac["num_heads"]
        rec["linear_num_key_heads"] = lac["num_heads"]
    if "n_groups" in text:
        rec["has_linear_attention"] = True
        rec["linear_attention_kind"] = "mamba2"
        rec["mamba_n_groups"] = text["n_groups"]
    return rec


def _hub_id(model_id: str) -> str:
    return model_id.split(" (")[0].strip()


#: Rows whose report gives only part of the config and whose note names the full config of the same
#: architecture (README: "use the full config of the same architecture where the note names one"): case_id ->
#: the ``../shared/hub-configs/`` model. The case's ``shape_json`` (numbers and quantization) is laid over it.
SAME_ARCHITECTURE = {
    "Y12": "Qwen/Qwen3-30B-A3B",  # "shape from the base Qwen/Qwen3-30B-A3B config in shared hub-configs"
    "Y13": "Qwen/Qwen3-30B-A3B",
    "Y14": "Qwen/Qwen3-30B-A3B",
    "Y16": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",  # "from the BF16 sibling config in shared hub-configs"
    "Y21": "Qwen/Qwen3.6-35B-A3B",  # "shape from the BF16 Qwen/Qwen3.6-35B-A3B config in shared hub-configs"
    "Y36": "meta-llama/Llama-2-7b-hf",  # "11008 from the Llama-2-7b-hf config in shared hub-configs"
}


def _overlay(base: dict, top: dict) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = _overlay(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def record_for(case: pd.Series) -> dict:
    shape = json.loads(case["shape_json"])
    mid = _hub_id(case["model_id"])
    if case["in_shared_hub_configs"] == "yes" and CATALOG is not None:
        rows = CATALOG[CATALOG["model_id"] == mid]
        assert len(rows) == 1, f"{mid} should be in the shipped catalog exactly once"
        return rows.iloc[0].to_dict()
    sibling = SAME_ARCHITECTURE.get(case.get("case_id", case.name))
    if sibling is not None:
        from dashboard.catalog import normalize_config

        raw = json.loads((HUB_CONFIGS / (sibling.replace("/", "--") + ".json")).read_text())
        q = shape.get("quantization_config")
        if q is not None and "quant_method" not in q:  # the case states the scheme in options_json
            opt = json.loads(case["options_json"] or "{}").get("quantization", "")
            method = "modelopt" if "nvfp4" in opt.lower() else opt.split()[0] if opt else None
            shape = _overlay(shape, {"quantization_config": {"quant_method": method}})
            if method == "modelopt":
                shape["quantization_config"]["quant_algo"] = "NVFP4"
        if "quantization_config" not in shape and "quantization" in json.loads(case["options_json"] or "{}"):
            opt = json.loads(case["options_json"])["quantization"].split()[0]
            shape = {**shape, "quantization_config": {"quant_method": opt}}
        return normalize_config(_overlay(raw, shape), mid, source="case-same-architecture")
    rec = shape_record(mid, shape)
    opt = json.loads(case["options_json"] or "{}").get("quantization")
    if opt and not rec.get("quant_method"):  # the scheme the report names ("awq (auto-upgraded to awq_marlin)")
        rec["is_quantized"], rec["quant_method"] = True, opt.split()[0]
    q = shape.get("quantization_config") or {}
    if q.get("group_size") is not None:
        rec["quant_group_size"] = int(q["group_size"])
    return rec


#: ``framework_version`` "seed": issue 2's seed table, written from the framework's source before any of
#: its releases was run through the conformance harness. Those rows hold the source-read rules of that
#: time (evidence "source"): SGLang's before 0.5.21, the oldest executed release (from 0.5.21 Kimi-K3's KDA
#: check is a bare assert in kimi_k3.py, not H23's message; data/conformance/README.md, SGLang).
SEED_RELEASE = {"sglang": "0.5.20"}

_RELEASE = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)*(?:\.?post\d+)?)")
_DATE = re.compile(r"(?<!\d)(20\d\d-\d\d)(?:-\d\d)?(?!\d)")  # the month: the resolver's date grain


def case_version(case: pd.Series) -> str | None:
    """The release or date the row's ``framework_version`` text names, for ``check(version=...)``: a release
    number when it gives one ("0.4.1+cu118" -> "0.4.1", ">=0.4.6.post2" -> "0.4.6.post2"), else its date
    ("main 2026-07 (PR reproduction)" -> "2026-07"), else the text as is (the product says what it used)."""
    text = case["framework_version"]
    if text == "seed":
        return SEED_RELEASE.get(case["framework"], text)
    m = _RELEASE.search(text)
    if m:
        return m.group(1)
    m = _DATE.search(text)
    if m:
        return m.group(1)
    return text or None


#: The case files' rule-kind vocabulary -> the product's kinds (:data:`dashboard.rules.KINDS`) that check it.
#: Kinds the product has map to themselves.
CASE_KINDS = {
    "marlin_tile": {"group_size", "mlp_intermediate", "moe_intermediate"},
    "awq_group": {"group_size"}, "gptq_group": {"group_size"}, "nvfp4_group": {"group_size"},
    "mla_heads": {"attention_heads", "mla"},
    "dp_attention": {"attention_heads"},
    "pp_support": {"pipeline_layers", "architecture"}, "pp_split": {"pipeline_layers"},
    "tp_support": {"architecture", "attention_heads"},
    "ep_layout": {"moe_experts"},
}

_PLATFORM = ("platform-specific: a GPU check outside the platform rules executed so far (vLLM 0.33.0 on the CUDA "
             "stand-ins: attention backends, FP8 MoE kernel, quantization minimums)")
#: Rows the current product gets wrong: case_id -> (kind of miss, why). Strict expected failures.
_MARLIN = ("platform-specific: vLLM's Marlin min_thread_k check (input_size_per_partition % 128, "
           "marlin_utils.py) runs on sm80+ GPUs where awq / gptq / w8a16 checkpoints are upgraded to the Marlin "
           "kernel; no platform table reaches it (the catalog's AWQ/GPTQ checkpoints pass it on the A100 and T4 "
           "tables) and the product has no Marlin rule")
_AITER = ("platform-specific: AITER MLA on ROCm decodes only 16 or 128 heads per rank; the ROCm stand-in is not "
          "faithful with vLLM's CUDA wheel (data/conformance/README.md), so no ROCm attention rule exists")
MISSES: dict[str, tuple[str, str]] = {
    "Y05": ("platform", f"{_MARLIN}; 10944 % 128 = 64 fails even at TP 1 (awq auto-upgraded to awq_marlin); the "
                        "product finds no failure"),
    "Y06": ("platform", f"{_MARLIN}; gptq_marlin at TP 2: 29568 / 2 = 14784, 14784 % 128 = 64; the product finds "
                        "no failure"),
    "Y07": ("platform", f"{_MARLIN}; compressed-tensors w8a16 on 4x A100: 7392 % 128 = 96; the product finds no "
                        "failure"),
    "Y08": ("platform", f"{_MARLIN}; on the A800 vLLM 0.7.2 selected awq_marlin, whose check fires first; the "
                        "product answers with the non-Marlin AWQ path's message ('The input size is not aligned "
                        "with the quantized weight shape...'), right verdict, wrong check"),
    "Y12": ("rule not modelled", "vLLM's moe_wna16 Triton kernel check ('size_k must divisible by BLOCK_SIZE_K', "
                                  "AWQ MoE at 768 / 4 = 192 per rank, main 2025-05) has no product rule (the "
                                  "product's WNA16 MoE rule covers compressed-tensors pack-quantized from 0.33.0 and "
                                  "needs a group size, which the case does not state); no failure found"),
    "Y16": ("trust_remote_code off + platform", "the product judges with trust_remote_code off (project policy): "
                                                 "the config's nemotron_h has an auto_map and no vLLM config class "
                                                 "before 0.33, so at vLLM 0.26.0 (the release of 2026-07) it answers "
                                                 "vllm.config.unknown_model_type; the reported run got past loading "
                                                 "(presumably --trust-remote-code; the case does not give the command) "
                                                 "and failed in the NVFP4 Marlin fallback on H100 (232 % 16 = 8), a "
                                                 "platform-specific check below Blackwell not modelled until issue "
                                                 "23's platform tables"),
    "Y17": ("platform", f"{_AITER}; 128 / 4 = 32 heads per rank on MI300X / MI325X (ROCM_AITER_MLA); no failure found"),
    "Y24": ("unreleased build", "the report ran SGLang nightly a9cf5e68e (2026-07-15), whose GPU vocabulary padding is "
                                "to 64 only (the TP-aware padding gated to CPU): 129280 % 24 = 16; the product judges "
                                "the release of that date, whose VocabParallelEmbedding pads to 64 x tp on every "
                                "platform (0.5.23 vocab_parallel_embedding.py:273-274), so no vocab failure (it does "
                                "refuse TP 24 for the attention width, Y25)"),
    "Y31": ("platform", f"{_AITER}; SGLang v0.4.9.post2 on MI355 with the aiter backend: 64 / 8 = 8 heads per rank; "
                        "no failure found"),
    "Y32": ("pipeline support per architecture", "pipeline parallel support per architecture is not modelled: SGLang "
                                                 "main 2025-06 had no PP weight loading for Qwen3-MoE ('PPMissingLayer' "
                                                 "object has no attribute 'mlp'); the product checks only the layer "
                                                 "split (48 / 2 divides), so no failure"),
    "Y36": ("rule not modelled", "TensorRT-LLM 0.6.1 int4 GPTQ per-group: 11008 / 4 = 2752 = 21.5 groups of 128 "
                                  "('Current weight shape is invalid for mapping.tp_size=4'); the product has no "
                                  "TensorRT-LLM quantization group rule; no failure found"),
    "Y37": ("tensor parallel support per architecture", "TensorRT-LLM 0.5.0 had no model-parallel support for "
                                                        "chatglm2 (maintainer, NVIDIA/TensorRT-LLM#84); per-architecture "
                                                        "TP support by release is not modelled; no failure found"),
    "Y38": ("no config", "the thread states no config numbers (shape_json {}) and names no config of the same "
                         "architecture; Qwen/Qwen2.5-VL-3B-Instruct is not in ../shared/hub-configs/, so the product "
                         "answers 'unknown' (fields missing) where the run worked"),
    "Y39": ("version bug not modelled", "transformers 4.49.0 native TP failed in generate (a shape error inside "
                                        "modeling_qwen2_vl.py forward), a release bug, not a divisibility rule; the "
                                        "product has no such rule, and with no config numbers (shape_json {}) it "
                                        "finds no failure"),
    "Y40": ("rule not modelled", "Megatron-Core's expert grid check (world_size 8 not divisible by ETP 1 x EP 8 x PP 2 "
                                  "= 16, parallel_state) has no product rule; the product refuses the layout for "
                                  "another reason (47 layers % PP 2, pipeline_layers): right verdict, wrong check"),
}


def _kind_of_miss(case_id: str) -> str:
    return MISSES[case_id][0]


def _params():
    out = []
    for cid in CASES["case_id"].tolist():
        marks = []
        if cid in MISSES:
            kind, why = MISSES[cid]
            marks.append(pytest.mark.xfail(strict=True, reason=f"{kind}: {why}"))
        out.append(pytest.param(cid, id=cid, marks=marks))
    return out


def verdict_for(case: pd.Series):
    options = json.loads(case["options_json"] or "{}")
    ep = int(case["ep"])
    if options.get("enable_expert_parallel") and ep == 1:
        ep = int(case["tp"]) * int(case["dp"])
    return check(record_for(case), case["framework"], int(case["tp"]), version=case_version(case),
                 pp=int(case["pp"]), dp=int(case["dp"]), ep=ep, dp_attention=bool(options.get("dp_attention")))


@pytest.mark.parametrize("case_id", _params())
def test_case(case_id: str) -> None:
    case = CASES.set_index("case_id").loc[case_id]
    v = verdict_for(case)
    kind = case["rule_kind"]
    kinds = CASE_KINDS.get(kind, {kind})
    hits = list(v.failures) if kind == "all" else [f for f in v.failures if f.kind in kinds]
    msgs = [h.message for h in hits]
    if case["expected"] == "fail":
        assert hits, f"{case_id}: expected a {kind} failure under {case['framework']}, got {v.failures}"
        if case["message"]:
            assert case["message"] in msgs, f"{case_id}: {case['message']!r} not in {msgs}"
        assert not v.valid and v.status == "invalid"
    else:
        assert not hits, f"{case_id}: expected no {kind} failure, got {msgs}"
        if kind == "all":
            assert v.valid and v.status in ("valid", "valid_replicated", "valid_padded")


def test_every_case_is_parametrized() -> None:
    h = CASES[CASES["case_id"].str.startswith("H")]
    y = CASES[CASES["case_id"].str.startswith("Y")]
    assert len(h) == 26 and len(y) == 42 and CASES["case_id"].is_unique
    assert set(MISSES) <= set(CASES["case_id"]), "MISSES names a case that is not in the files"


def test_h11_sglang_pads_glm45v_vision_heads() -> None:
    case = CASES.set_index("case_id").loc["H11"]
    v = check(record_for(case), "sglang", 8)
    assert v.status == "valid_padded"
    assert any("padded with 4 dummy heads to 16" in w.message for w in v.warnings)
