"""vLLM's attention-backend selection per GPU platform (vLLM 0.33.0; issue 23).

Each attention layer asks ``current_platform.get_attn_backend_cls`` for a backend
(``vllm/platforms/cuda.py:420-518``): the platform's priority list (``_get_backend_priorities``,
``cuda.py:84-180``, ported in :func:`priorities`), then per backend ``AttentionBackend.validate_configuration``
(``vllm/v1/attention/backend.py:279-369``, ported in :func:`reasons`), the first valid backend wins; none valid
raises ``ValueError("No valid attention backend found for cuda with AttentionSelectorConfig(...). Reasons:
{...}.")`` at ``cuda.py:472`` (:func:`select`). The chosen backend's implementation then checks the layer at
construction (:func:`impl_error`: the Triton backends refuse an FP8 KV cache below SM 8.9,
``triton_attn.py:520`` / ``mla/triton_mla.py:209``).

What is executed and what is ported
-----------------------------------
* **Executed** (``python -m conformance attention``, ``data/conformance/attention/``): every backend class's own
  answers on each platform stand-in -- head sizes 1..1024, dtypes, KV-cache dtypes, the flags, the compute
  capability, and each non-``None`` ``supports_combination`` answer over the catalog's head sizes x dtypes x
  KV-cache dtypes x flags, with no model config set (:func:`facts`).
* **Ported** (read from 0.33.0, cited per function): the priority lists, the order of the reasons, the message,
  the checks of ``supports_combination`` that read the model config (:data:`MODEL_CHECKS`), and the Triton
  construction checks. ``tests/rules/test_vllm_attention.py`` holds the port to every call each catalog
  model's layers made on each platform (same backend, same message) and to vLLM's whole selection over a grid.

Pure: reads the committed JSON / parquet; no vLLM import. Units: head sizes in elements.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

RELEASE = "0.33.0"
DATA = Path(__file__).resolve().parents[3] / "data" / "conformance" / "attention"
SELECT_SITE = "vllm/platforms/cuda.py:472"


@dataclass(frozen=True)
class SelectorConfig:
    """vLLM's ``AttentionSelectorConfig`` (``vllm/v1/attention/selector.py:25-65``) for one layer, plus the
    model-config fields some backends read (``hf``: ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``,
    ``kv_lora_rank``, ``index_topk``)."""

    head_size: int
    dtype: str  # "float16" | "bfloat16" | "float32"
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    use_mla: bool = False
    has_sink: bool = False
    use_sparse: bool = False
    use_mm_prefix: bool = False
    use_per_head_quant_scales: bool = False
    attn_type: str = "decoder"
    has_sliding_window: bool = False
    use_non_causal: bool = False
    use_batch_invariant: bool = False
    use_kv_connector: bool = False
    use_pcp: bool = False
    use_adaptive_verification: bool = False
    use_dcp: bool = False
    use_rswa: bool = False
    num_heads: int | None = None
    hf: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __repr__(self) -> str:  # selector.py:45-65, field order and spelling as vLLM prints them
        attn = {"decoder": "DECODER", "encoder": "ENCODER", "encoder_only": "ENCODER_ONLY",
                "encoder_decoder": "ENCODER_DECODER"}.get(self.attn_type, self.attn_type.upper())
        return (f"AttentionSelectorConfig(head_size={self.head_size}, dtype=torch.{self.dtype}, "
                f"kv_cache_dtype={self.kv_cache_dtype}, block_size={self.block_size}, use_mla={self.use_mla}, "
                f"has_sink={self.has_sink}, use_sparse={self.use_sparse}, use_mm_prefix={self.use_mm_prefix}, "
                f"use_per_head_quant_scales={self.use_per_head_quant_scales}, attn_type=AttentionType.{attn}, "
                f"has_sliding_window={self.has_sliding_window}, use_non_causal={self.use_non_causal}, "
                f"use_batch_invariant={self.use_batch_invariant}, use_kv_connector={self.use_kv_connector}, "
                f"use_adaptive_verification={self.use_adaptive_verification}, use_pcp={self.use_pcp}, "
                f"use_dcp={self.use_dcp}, use_rswa={self.use_rswa})")


def is_quantized_kv_cache(kv: str | None) -> bool:
    """``vllm/v1/kv_cache_interface.py:152``: any KV-cache dtype but the 16-bit ones and ``auto``."""
    return kv not in (None, "auto", "float16", "bfloat16", "float32")


def priorities(sel: SelectorConfig, capability: tuple[int, int]) -> list[str]:
    """``_get_backend_priorities`` (``vllm/platforms/cuda.py:84-180``, 0.33.0): backend names, best first."""
    major = capability[0]
    if sel.use_mla:
        if major == 10:
            if sel.kv_cache_dtype is not None and is_quantized_kv_cache(sel.kv_cache_dtype):
                sparse = ["FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
            elif sel.num_heads is not None and sel.num_heads <= 16:
                sparse = ["FLASH_ATTN_MLA_SPARSE_FA4", "FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE"]
            else:
                sparse = ["FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE"]
            return ["FLASHINFER_MLA", "TOKENSPEED_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA",
                    *sparse]
        if major == 12:
            return ["TRITON_MLA", "FLASHINFER_MLA_SPARSE_SM120"]
        tail = ["FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE"]
        if sel.head_size == 512:
            tail.insert(0, "FLASHINFER_MLA_SPARSE_SM90")
        else:
            tail.append("FLASHINFER_MLA_SPARSE_SM90")
        return ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", *tail]
    tail = ["TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT"]
    if major == 10 and not sel.use_non_causal:
        return [*(["TRITON_FLASHINFER"] if sel.use_mm_prefix else []), "FLASHINFER", "FLASH_ATTN", *tail]
    return [*(["TRITON_FLASH_ATTN"] if major == 9 and sel.use_mm_prefix else []), "FLASH_ATTN", "FLASHINFER", *tail]


@functools.lru_cache(maxsize=16)
def facts(platform: str, release: str = RELEASE) -> dict | None:
    """The executed answers of every backend on ``platform`` (``data/conformance/attention/
    vllm-<release>-<platform>.json`` and its ``-combinations.parquet``), or None when that platform was not
    run. ``backends[name]["combination"]`` maps ``(head_size, dtype, kv_cache_dtype, use_mla, has_sink,
    use_sparse, use_mm_prefix)`` to the reason."""
    if not isinstance(platform, str) or "/" in platform or ".." in platform:
        return None
    path = DATA / f"vllm-{release}-{platform}.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text())
    doc.pop("models", None)
    doc.pop("selection", None)
    comb = DATA / f"vllm-{release}-{platform}-combinations.parquet"
    by: dict[str, dict] = {name: {} for name in doc["backends"]}
    if comb.is_file():
        import pandas as pd

        df = pd.read_parquet(comb)
        for r in df.itertuples(index=False):
            by.setdefault(str(r.backend), {})[(int(r.head_size), str(r.dtype), str(r.kv_cache_dtype),
                                              bool(r.use_mla), bool(r.has_sink), bool(r.use_sparse),
                                              bool(r.use_mm_prefix))] = str(r.reason)
    for name, b in doc["backends"].items():
        b["combination"] = by.get(name, {})
        b["head_sizes"] = frozenset(b.get("head_sizes") or ())
    doc["combination_grid"] = doc.get("combination_grid") or {}
    return doc


def _hf(sel: SelectorConfig, key: str, default: Any = None) -> Any:
    return sel.hf.get(key, default) if sel.hf else default


def _model_check(name: str, sel: SelectorConfig, cap: tuple[int, int]) -> str | None:
    """The part of ``supports_combination`` that reads the model config (skipped by the executed facts, which
    run with no model), per backend, as 0.33.0 writes it. None: no such check, or it passes."""
    if not sel.hf:
        return None
    if name == "FLASHINFER_MLA":  # mla/flashinfer_mla.py:241-249
        nope = _hf(sel, "qk_nope_head_dim", 1)
        if nope not in (64, 128, 192):
            return f"FlashInfer MLA kernel requires qk_nope_head_dim in [64, 128, 192], but got {nope}"
    if name == "TOKENSPEED_MLA":  # mla/tokenspeed_mla.py:159-170
        dims = (_hf(sel, "qk_nope_head_dim", 0), _hf(sel, "qk_rope_head_dim", 0), _hf(sel, "v_head_dim", 0))
        if dims != (128, 64, 128):
            return ("tokenspeed_mla requires DeepSeek R1 MLA dimensions (qk_nope_head_dim=128, "
                    f"qk_rope_head_dim=64, v_head_dim=128), got ({dims[0]}, {dims[1]}, {dims[2]})")
    if name == "FLASH_ATTN_MLA_SPARSE":  # mla/flashattn_mla_sparse.py:106-115
        if "index_topk" not in sel.hf:
            return "FlashAttention MLA Sparse requires model with index_topk"
    if name == "FLASHINFER_MLA_SPARSE":  # mla/flashinfer_mla_sparse.py:121-160
        nope, rope, rank = (_hf(sel, "qk_nope_head_dim"), _hf(sel, "qk_rope_head_dim"), _hf(sel, "kv_lora_rank"))
        if rope == 0:
            if nope != 256 or rank != 512:
                return ("FlashInfer native no-rope MLA requires qk_nope_head_dim=256 and kv_lora_rank=512, "
                        f"but got qk_nope_head_dim={nope}, kv_lora_rank={rank}")
        elif nope not in (128, 192):
            return f"FlashInfer MLA Sparse kernel requires qk_nope_head_dim in [128, 192], but got {nope}"
        if "index_topk" not in sel.hf:
            return "FlashInfer MLA Sparse requires model with index_topk config"
    if name == "FLASHINFER_MLA_SPARSE_SM90":  # mla/flashinfer_mla_sparse_sm90.py:213-224
        if _hf(sel, "kv_lora_rank") != 512:
            return "FLASHINFER_MLA_SPARSE_SM90 requires kv_lora_rank=512"
        if _hf(sel, "qk_rope_head_dim") not in (0, 64):
            return "FLASHINFER_MLA_SPARSE_SM90 requires qk_rope_head_dim in (0, 64)"
    return None


#: Backends whose ``supports_combination`` reads the model config, and where (ported in :func:`_model_check`).
MODEL_CHECKS = {
    "FLASHINFER_MLA": "vllm/v1/attention/backends/mla/flashinfer_mla.py:241",
    "TOKENSPEED_MLA": "vllm/v1/attention/backends/mla/tokenspeed_mla.py:159",
    "FLASH_ATTN_MLA_SPARSE": "vllm/v1/attention/backends/mla/flashattn_mla_sparse.py:106",
    "FLASHINFER_MLA_SPARSE": "vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py:121",
    "FLASHINFER_MLA_SPARSE_SM90": "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py:213",
}


#: The flag checks after the attention type in ``validate_configuration`` (``backend.py:332-347``), in its order:
#: (selector field, the backend's executed answer, vLLM's reason).
_LATER_FLAG_CHECKS = (
    ("has_sliding_window", "supports_sliding_window", "sliding window not supported"),
    ("use_rswa", "supports_rswa", "R-SWA not supported"),
    ("use_non_causal", "supports_non_causal", "non-causal attention not supported"),
    ("use_batch_invariant", "supports_batch_invariance", "batch invariance not supported"),
    ("use_kv_connector", "supports_kv_connector", "KV connector not supported"),
    ("use_pcp", "supports_pcp", "PCP not supported"),
    ("use_dcp", "supports_dcp", "DCP not supported"),
)


def reasons(name: str, sel: SelectorConfig, doc: dict) -> list[str] | None:
    """Why backend ``name`` cannot take ``sel`` on the platform of ``doc`` (:func:`facts`), in the order of
    ``validate_configuration`` (``vllm/v1/attention/backend.py:279-369``); [] when it can; None when the
    executed facts do not decide it (the head size / dtype combination was not recorded)."""
    b = doc["backends"].get(name)
    if b is None:
        return None
    if b.get("import_error"):
        return [b["import_error"]]
    if b.get("harness_error"):
        return None
    out = []
    if b["head_sizes"] and sel.head_size not in b["head_sizes"]:
        out.append("head_size not supported")
    if sel.dtype not in b["dtypes"]:
        out.append("dtype not supported")
    if sel.kv_cache_dtype not in b["kv_cache_dtypes"] and sel.kv_cache_dtype is not None:
        out.append("kv_cache_dtype not supported")
    if b.get("block_size_none") is not True and sel.block_size is None:
        out.append("block_size not supported")
    if sel.use_mm_prefix and not b["supports_mm_prefix"]:
        out.append("partial multimodal token full attention not supported")
    if sel.use_mla != bool(b["is_mla"]):
        out.append("MLA not supported" if sel.use_mla else "non-MLA not supported")
    if sel.has_sink and not b["supports_sink"]:
        out.append("attention sinks not supported")
    if sel.use_sparse != bool(b["is_sparse"]):
        out.append("sparse not supported" if sel.use_sparse else "non-sparse not supported")
    if sel.use_per_head_quant_scales and not b["supports_per_head_quant_scales"]:
        out.append("per-head quant scales not supported")
    if b["compute_capability"] is not True:
        out.append("compute capability not supported")
    if sel.attn_type not in b["attn_types"]:
        out.append(f"attention type {sel.attn_type} not supported")
    for flag, fact, reason in _LATER_FLAG_CHECKS:
        if getattr(sel, flag) and not b[fact]:
            out.append(reason)
    key = (int(sel.head_size), sel.dtype, str(sel.kv_cache_dtype), sel.use_mla, sel.has_sink, sel.use_sparse,
           sel.use_mm_prefix)
    combination = b["combination"].get(key)
    if combination is None and not _recorded(name, key, doc):
        return None
    if combination is None:
        combination = _model_check(name, sel, tuple(doc["capability"]))
    if combination is not None:
        out.append(combination)
    return out


def _recorded(name: str, key: tuple, doc: dict) -> bool:
    """Whether ``supports_combination`` of backend ``name`` was executed for ``key``'s head size, dtype and
    KV-cache dtype (the run's ``combination_grid``; every flag combination was)."""
    g = doc["combination_grid"]
    return (name in g.get("backends", ()) and key[0] in g.get("head_sizes", ()) and key[1] in g.get("dtypes", ())
            and key[2] in g.get("kv_cache_dtypes", ()))


@dataclass(frozen=True)
class Selection:
    """What :func:`select` found: the backend chosen (``backend``) or the error raised (``message`` at
    ``site``, ``exc_type``); ``decided`` False when the executed facts do not cover the layer."""

    backend: str = ""
    message: str = ""
    site: str = ""
    exc_type: str = ""
    decided: bool = True


def select(sel: SelectorConfig, platform: str, device_name: str | None = None) -> Selection:
    """``get_attn_backend_cls(None, sel, num_heads)`` on ``platform`` (``vllm/platforms/cuda.py:420-518``):
    the first backend of :func:`priorities` with no :func:`reasons`, else the ``ValueError`` it raises at
    :data:`SELECT_SITE`. ``device_name`` is ``cls.device_name`` in the message ("cuda" on every CUDA
    platform). Not decided (``decided`` False) when the platform was not executed or a reason is unknown."""
    doc = facts(platform)
    if doc is None:
        return Selection(decided=False)
    invalid = []
    for name in priorities(sel, tuple(doc["capability"])):
        r = reasons(name, sel, doc)
        if r is None:
            return Selection(decided=False)
        if not r:
            return Selection(backend=name)
        invalid.append((name, r))
    reasons_str = "{" + ", ".join(f"{n}: [{', '.join(r)}]" for n, r in invalid) + "}"
    return Selection(message=f"No valid attention backend found for cuda with {sel!r}. Reasons: {reasons_str}.",
                     site=SELECT_SITE, exc_type="ValueError")


#: Construction-time checks of the chosen backend's implementation (0.33.0): backend -> (site, words).
IMPL_SITES = {"TRITON_ATTN": ("vllm/v1/attention/backends/triton_attn.py:520", "Triton attention backend"),
              "TRITON_MLA": ("vllm/v1/attention/backends/mla/triton_mla.py:209", "Triton MLA backend")}


def impl_error(backend: str, sel: SelectorConfig, capability: tuple[int, int], device_name: str) -> Selection | None:
    """The Triton backends' FP8-KV refusal below SM 8.9 (``triton_attn.py:510-524``,
    ``mla/triton_mla.py:199-213``): ``ValueError`` naming the device and the suggested ``--kv-cache-dtype``
    (``float16`` below SM 8.0, else ``bfloat16``). None when the implementation accepts the layer."""
    site = IMPL_SITES.get(backend)
    if site is None:
        return None
    cap = capability[0] * 10 + capability[1]
    if backend == "TRITON_ATTN" and sel.kv_cache_dtype == "bfloat16" and cap < 80:  # triton_attn.py:525-532
        return Selection(backend=backend, site=site[0], exc_type="ValueError",
                         message=(f"bfloat16 KV cache is not supported on {device_name} (compute capability "
                                  f"{capability[0]}.{capability[1]}); bfloat16 requires SM80+. Re-run with "
                                  "--kv-cache-dtype float16."))
    if not str(sel.kv_cache_dtype).startswith("fp8") or cap >= 89:
        return None
    suggested = "float16" if cap < 80 else "bfloat16"
    msg = (f"FP8 KV cache is not supported by the {site[1]} on {device_name} (compute capability "
           f"{capability[0]}.{capability[1]}); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype "
           f"{suggested}.")
    return Selection(backend=backend, message=msg, site=site[0], exc_type="ValueError")


# ----------------------------------------------------------------------------------------------------
# the selector configs of a model's layers, from its catalog record
# ----------------------------------------------------------------------------------------------------

#: ``_FLOAT16_NOT_SUPPORTED_MODELS`` (``vllm/config/model.py:2398-2403``).
NO_FP16_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})
#: ``ModelArchConfigConvertorBase.is_mm_prefix_lm``'s fallback list
#: (``vllm/transformers_utils/model_arch_config_convertor.py:357-366``).
MM_PREFIX_LM_MODELS = frozenset({"bagel", "gemma3", "molmo2", "moondream3", "paligemma"})
#: Architectures whose attention layers pass ``sinks`` unconditionally (``model_executor/models/gpt_oss.py``).
SINK_ARCHITECTURES = frozenset({"GptOssForCausalLM"})
#: Architectures whose attention does not go through ``get_attn_backend_cls`` with a selector config the
#: port derives (their own sparse / SWA attention modules: ``models/deepseek_v4``, MiniMax-M3, MiMo-V2):
#: the port says nothing about them (every call each catalog model made is in the executed facts' tests).
OWN_ATTENTION_ARCHITECTURES = frozenset({
    "DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration", "DeepseekV41ForCausalLM",
    "MiniMaxM3ForCausalLM", "MiniMaxM3SparseForCausalLM", "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM"})
#: Model types whose local layers are chunked attention (``llama4.py``: ``ChunkedLocalAttention``), which the
#: catalog counts as sliding-window layers but vLLM selects for with ``has_sliding_window=False``.
CHUNKED_MODEL_TYPES = frozenset({"llama4", "llama4_text"})
#: ``models/config.py:89-101``: GLM-5 DSA models take an FP8 KV cache by default on SM 10.x.
FP8_KV_ON_SM100 = frozenset({"GlmMoeDsaForCausalLM"})


def model_dtype(torch_dtype: str | None, model_type: str, capability: tuple[int, int]) -> str:
    """The dtype vLLM runs the model in with ``--dtype auto`` (``_resolve_auto_dtype``,
    ``vllm/config/model.py:2423-2462``): the config dtype when the platform supports it (float32 is downcast,
    a missing one counts as float32), else the platform's first supported dtype -- bfloat16 from SM 8.0, else
    float16 (``platforms/cuda.py:257-266``) -- skipping float16 for :data:`NO_FP16_MODEL_TYPES`."""
    supported = ["bfloat16", "float16", "float32"] if capability >= (8, 0) else ["float16", "float32"]
    supported = [d for d in supported if not (d == "float16" and model_type in NO_FP16_MODEL_TYPES)]
    preferred = supported[0]
    cfg = {"bfloat16": "bfloat16", "float16": "float16", "half": "float16", "bf16": "bfloat16",
           "fp16": "float16"}.get(str(torch_dtype or "").lower(), "float32")
    if cfg == "float32":
        cfg = preferred
    return cfg if cfg in supported else preferred


def kv_cache_dtype(kv_cache_quant: str | None, quant_method: str | None, architecture: str,
                   capability: tuple[int, int]) -> str:
    """The KV-cache dtype string the layers pass to the selector with ``--kv-cache-dtype auto``:
    a ModelOpt checkpoint's scheme through ``get_kv_cache_quant_algo_string`` (``vllm/utils/torch_utils.py:
    443-495``: an 8-bit float static scheme or ``fp8`` -> ``fp8_e4m3``, a 4-bit float one -> ``nvfp4``),
    a compressed-tensors ``kv_cache_scheme`` -> ``fp8`` (``layers/attention/attention.py:287-291``),
    :data:`FP8_KV_ON_SM100` on SM 10.x -> ``fp8_e4m3``; else ``auto``."""
    method = str(quant_method or "").lower()
    q = str(kv_cache_quant or "")
    if q and method.startswith("modelopt"):
        if q in ("float8", "fp8"):
            return "fp8_e4m3"
        if q.startswith("float4") or q == "nvfp4":
            return "nvfp4"
        return "auto"
    if q and method == "compressed-tensors":
        return "fp8"
    if architecture in FP8_KV_ON_SM100 and capability[0] == 10:
        return "fp8_e4m3"
    return "auto"


def _get(rec: Mapping, key: str) -> Any:
    v = rec.get(key) if hasattr(rec, "get") else None
    try:
        import pandas as pd

        if v is None or (not isinstance(v, (list, tuple, dict)) and pd.isna(v)):
            return None
    except (TypeError, ValueError):
        pass
    return v


def layer_configs(rec: Mapping, platform: str, tp: int = 1, kv_override: str | None = None) -> list[SelectorConfig] | None:
    """The distinct selector configs of a model's attention layers, in the order vLLM builds them (sliding-window
    layers first where a model has both -- Gemma, gpt-oss, Cohere2 start with one), at TP ``tp`` on ``platform``;
    [] when it has no softmax-attention layer; None when the port does not know the model's attention path
    (:data:`OWN_ATTENTION_ARCHITECTURES`) or the record lacks the head shape. ``kv_override``: the user's
    ``--kv-cache-dtype`` (None / "auto": the checkpoint's scheme, else the model dtype)."""
    from dashboard import gpus

    arch = str(_get(rec, "architectures") or "")
    arch = arch.split(",")[0].strip()
    if arch in OWN_ATTENTION_ARCHITECTURES:
        return None
    try:
        cap = tuple(gpus.platform(platform).capability)
    except ValueError:
        return None
    full = int(_get(rec, "num_full_attention_layers") or 0)
    swa = int(_get(rec, "num_sliding_window_layers") or 0)
    if full + swa == 0:
        return []
    dtype = model_dtype(_get(rec, "torch_dtype"), str(_get(rec, "text_model_type") or _get(rec, "model_type") or ""),
                        cap)
    kv = kv_cache_dtype(_get(rec, "kv_cache_quant"), _get(rec, "quant_method"), arch, cap)
    if kv_override and kv_override != "auto":  # --kv-cache-dtype given: it wins (arg_utils.py:2297 resolves "auto" only)
        kv = str(kv_override)
    mt = str(_get(rec, "model_type") or "")
    mm = mt in MM_PREFIX_LM_MODELS or (mt in ("gemma4",) and _get(rec, "bidirectional_attention") == "vision")
    if mm and not bool(_get(rec, "has_vision")):
        mm = False
    heads = _get(rec, "num_attention_heads")
    if bool(_get(rec, "is_mla")):
        rank, rope = _get(rec, "kv_lora_rank"), _get(rec, "qk_rope_head_dim")
        if rank is None or rope is None:
            return None
        hf = {k: int(v) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank")
              if (v := _get(rec, k)) is not None}
        sparse = _get(rec, "index_n_heads") is not None
        if sparse:
            hf["index_topk"] = True
        nh = int(heads) // max(int(tp), 1) if heads is not None else None
        return [SelectorConfig(head_size=int(rank) + int(rope), dtype=dtype, kv_cache_dtype=kv, use_mla=True,
                               use_sparse=sparse, use_mm_prefix=mm, num_heads=nh, hf=hf)]
    hd = _get(rec, "head_dim")
    if hd is None:
        return None
    sink = arch in SINK_ARCHITECTURES
    if mt in CHUNKED_MODEL_TYPES or str(_get(rec, "text_model_type") or "") in CHUNKED_MODEL_TYPES:
        # Llama 4's local layers are chunked, not sliding: ChunkedLocalAttention selects with no sliding window
        # (model_executor/layers/attention/chunked_local_attention.py); the catalog counts them as sliding
        full, swa = full + swa, 0
    out = []
    if swa:
        out.append(SelectorConfig(head_size=int(hd), dtype=dtype, kv_cache_dtype=kv, has_sink=sink,
                                  use_mm_prefix=mm, has_sliding_window=True))
    if full:
        g = _get(rec, "global_head_dim")
        out.append(SelectorConfig(head_size=int(g if g is not None else hd), dtype=dtype, kv_cache_dtype=kv,
                                  has_sink=sink, use_mm_prefix=mm))
    return out


def canonical_sparse_kv(backend: str, kv: str) -> str:
    """``_canonicalize_sparse_mla_kv_cache_dtype`` (``layers/attention/mla_attention.py:359-376``): the KV-cache
    dtype the first MLA layer's backend imposes on the cache config (and so on every later layer)."""
    if backend == "FLASHMLA_SPARSE" and is_quantized_kv_cache(kv):
        return kv if kv == "nvfp4_ds_mla" else "fp8_ds_mla"
    if backend == "FLASHINFER_MLA_SPARSE_SM120" and kv in ("auto", "fp8", "fp8_e4m3"):
        return "fp8_ds_mla"
    return kv


def layer_calls(rec: Mapping, platform: str, tp: int = 1,
                kv_override: str | None = None) -> list[tuple[SelectorConfig, Selection]] | None:
    """Every distinct selector call a model's layers make on ``platform`` at TP ``tp``, in order, with what the
    port answers; the calls stop at the first error, as vLLM's construction does. An MLA layer's backend may
    rewrite the cache dtype (:func:`canonical_sparse_kv`, ``mla_attention.py:523-529``): the later layers then
    select again with it. None as :func:`layer_configs`."""
    import dataclasses

    cfgs = layer_configs(rec, platform, tp, kv_override)
    if cfgs is None:
        return None
    out: list[tuple[SelectorConfig, Selection]] = []
    for sel in cfgs:
        s = select(sel, platform)
        out.append((sel, s))
        if not s.decided or s.message:
            return out
        if sel.use_mla:
            kv2 = canonical_sparse_kv(s.backend, sel.kv_cache_dtype)
            if kv2 != sel.kv_cache_dtype:
                sel2 = dataclasses.replace(sel, kv_cache_dtype=kv2)
                s2 = select(sel2, platform)
                out.append((sel2, s2))
                if not s2.decided or s2.message:
                    return out
    return out


def first_error(rec: Mapping, platform: str, tp: int = 1, device_name: str | None = None,
                kv_override: str | None = None) -> Selection | None:
    """The first attention-backend error a model's layers raise on ``platform`` at TP ``tp`` (selection at
    :data:`SELECT_SITE`, else the chosen backend's construction check :func:`impl_error`), None when every
    layer gets a backend; ``Selection(decided=False)`` when the port cannot tell (unknown attention path,
    platform not executed, a combination not recorded). ``device_name``: ``get_device_name()`` as the
    Triton message prints it (default: the platform stand-in's)."""
    doc = facts(platform)
    calls = layer_calls(rec, platform, tp, kv_override) if doc is not None else None
    if calls is None:
        return Selection(decided=False)
    name = device_name or doc.get("device_name", "")
    for sel, s in calls:
        if not s.decided or s.message:
            return s
        bad = impl_error(s.backend, sel, tuple(doc["capability"]), name)
        if bad is not None:
            return bad
    return None
