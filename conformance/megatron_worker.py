"""One Megatron-Core worker: builds one model's cells with Megatron-Core's own code and prints one JSON line
per cell.

Run by the framework venv's interpreter (``/path/to/venv/bin/python conformance/megatron_worker.py``), not
imported by the project at run time: it depends only on Megatron-Core, torch and the standard library. (The
project imports it for :func:`hf_to_megatron` in tests and for :func:`harness_reason`.)

Protocol (the same as ``vllm_worker.py``): the first line on stdin is a JSON job ``{"platform": ...,
"models": [{"config_path", "model_id", "cells": [{"tp", "pp", "dp", "ep", "vision_dp"}, ...]}, ...]}``. Per
model, ``@@MODEL_START "<id>"``, then one line per cell prefixed ``@@CELL `` with a JSON record, then
``@@MODEL_DONE "<id>"``.

A cell is ``tensor_model_parallel_size = tp``, ``pipeline_model_parallel_size = pp``, a data-parallel size
``dp`` and, when ``ep`` is set, ``expert_model_parallel_size = dp`` (Megatron takes the expert-parallel ranks
from the data-parallel ranks; expert-tensor-parallel keeps its default, the TP size, so the smallest world
that holds the layout has DP = EP). The world is ``tp * pp * dp`` ranks; this process is rank 0.

What runs, in the order a Megatron-Bridge user meets it (``AutoBridge.to_megatron_provider()`` then
``provider.provide()`` on each rank after ``initialize_model_parallel``):

1. **Process groups** (stand-in, below): ``torch.distributed`` with the ``fake`` backend over ``world`` ranks,
   then Megatron's own ``parallel_state.initialize_model_parallel(tp, pp, expert_model_parallel_size=ep)``.
   Megatron's own group arithmetic runs; a failure here would be ``refused_engine`` (none in the grid: the
   world is always the product of the sizes).
2. **Config** (``refused_engine``): ``TransformerConfig`` (``MLATransformerConfig`` for multi-head latent
   attention) built from the HF config by :func:`hf_to_megatron`: ``ModelParallelConfig.__post_init__`` and
   ``TransformerConfig.__post_init__`` (heads % TP, query groups a multiple or divisor of TP, the MoE and
   pipeline checks ...).
3. **Model** (``refused_build`` / ``built``): ``GPTModel(config, get_gpt_decoder_block_spec(config,
   use_transformer_engine=False), vocab_size=<config.json's>, pre_process=first PP stage,
   post_process=last PP stage)`` on the meta device (Megatron-Core's local, non-Transformer-Engine modules:
   ``ColumnParallelLinear``/``RowParallelLinear``, ``SequentialMLP`` experts), with
   ``perform_initialization=False``: the embedding, the decoder block of PP stage 0 (the layers rank 0
   builds) and, with PP 1, the output layer. Rank 0's parameter bytes are recorded for built cells.

Stand-ins (what is simulated, and nothing else):

* **Process groups**: ``torch.distributed.init_process_group("fake", store=FakeStore(), rank=0,
  world_size=tp*pp*dp)`` (``torch.testing._internal.distributed.fake_pg``): every group Megatron creates is a
  real ``ProcessGroup`` object of the right size with this process as rank 0, whose collectives do nothing.
  No collective is needed to construct a model.
* **MLA without Transformer Engine**: :func:`mla_core_attention` (a keyword mismatch of 0.16.1's local MLA
  spec) and ``multi_latent_attention.HAVE_TE = False`` (:func:`install_cuda_standin`: the TE shim claims TE).
* **CUDA device**: ``torch.cuda.current_device()`` answers ``"meta"`` and ``Tensor.cuda()`` of a meta
  tensor returns it (:func:`install_cuda_standin`).
* **Tensors**: the model is built under ``torch.device("meta")`` with ``use_cpu_initialization=True`` and
  ``perform_initialization=False``: shapes, dtypes and every constructor-time check are real, no memory is
  allocated, no weight is read.
* **Config**: the verbatim ``config.json`` mapped to Megatron-Core's config the way Megatron-Bridge's model
  providers map it (:func:`hf_to_megatron`; no remote code runs, the config is read as data). Quantization
  (``quantization_config``, and the sidecar files the driver names, which the table lists but the worker does
  not read) is ignored: Megatron-Core builds the architecture in BF16. Models whose mapped config is the same
  (quantized copies of one checkpoint) reuse one another's records (:func:`cached_cell`).

A cell whose exception comes from a stand-in (a CUDA call, a meta tensor read) is ``harness_error`` with the
reason (:func:`harness_reason`), never a refusal.
"""

from __future__ import annotations

import json
import os
import sys
import time

try:  # imported by the project (tests, driver)
    from conformance import worker_common as wc
except ImportError:  # run as a script by the framework venv's interpreter: the sibling file
    import worker_common as wc

# ----------------------------------------------------------------------------------------------------
# HF config -> Megatron-Core config (as Megatron-Bridge's providers map it)
# ----------------------------------------------------------------------------------------------------

#: Dense decoders: Llama-style (RMSNorm, gated SiLU/GELU MLP, RoPE, GQA) and the older GPT-style ones
#: (LayerNorm, plain GELU MLP). value: (gated MLP, normalization, qkv bias, qk layernorm)
DENSE: dict[str, tuple[bool, str, bool, bool]] = {
    "LlamaForCausalLM": (True, "RMSNorm", False, False),
    "MistralForCausalLM": (True, "RMSNorm", False, False),
    "Qwen2ForCausalLM": (True, "RMSNorm", True, False),
    "Qwen3ForCausalLM": (True, "RMSNorm", False, True),
    "Phi3ForCausalLM": (True, "RMSNorm", False, False),
    "GemmaForCausalLM": (True, "RMSNorm", False, False),
    "Gemma2ForCausalLM": (True, "RMSNorm", False, False),
    "Olmo2ForCausalLM": (True, "RMSNorm", False, True),
    "Olmo3ForCausalLM": (True, "RMSNorm", False, True),
    "GraniteForCausalLM": (True, "RMSNorm", False, False),
    "Exaone4ForCausalLM": (True, "RMSNorm", False, True),
    "SmolLM3ForCausalLM": (True, "RMSNorm", False, False),
    "MiMoForCausalLM": (True, "RMSNorm", True, False),
    "GPTNeoXForCausalLM": (False, "LayerNorm", True, False),
    "GPT2LMHeadModel": (False, "LayerNorm", True, False),
    "GPTBigCodeForCausalLM": (False, "LayerNorm", True, False),
    "GPTJForCausalLM": (False, "LayerNorm", False, False),
    "CodeGenForCausalLM": (False, "LayerNorm", False, False),
    "FalconForCausalLM": (False, "LayerNorm", False, False),
}
#: Mixture-of-experts decoders with softmax attention (every layer MoE unless the config names dense ones).
MOE = ("MixtralForCausalLM", "Qwen3MoeForCausalLM", "GptOssForCausalLM", "MiniMaxM2ForCausalLM",
       "GraniteMoeForCausalLM", "Glm4MoeForCausalLM")
#: Multi-head latent attention + MoE (DeepSeek-V2/V3 style): ``MLATransformerConfig``.
MLA = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "Glm4MoeLiteForCausalLM")

#: Why an architecture is not built (``not_run`` with this reason).
NOT_MAPPED: dict[str, str] = {
    "NemotronHForCausalLM": "Mamba hybrid: Megatron-Core 0.16.1's MambaModel needs mamba-ssm's CUDA kernels and "
                            "its only Mamba stack spec uses Transformer Engine modules (neither installable here)",
    "DeepseekV32ForCausalLM": "DeepSeek Sparse Attention (indexer): not mapped (Megatron-Core's experimental DSA "
                              "attention is not built by the harness)",
    "GlmMoeDsaForCausalLM": "DeepSeek Sparse Attention (indexer): not mapped (Megatron-Core's experimental DSA "
                            "attention is not built by the harness)",
    "DeepseekV4ForCausalLM": "DeepSeek-V4 compressed attention: no Megatron-Core module in 0.16.1",
    "Qwen3NextForCausalLM": "Gated DeltaNet hybrid: Megatron-Core 0.16.1's GatedDeltaNet layers need Transformer "
                            "Engine / FLA kernels (not mapped)",
    "KimiLinearForCausalLM": "Kimi Delta Attention hybrid: no Megatron-Core module in 0.16.1",
    "Lfm2ForCausalLM": "LFM2 short-convolution hybrid: no Megatron-Core module in 0.16.1",
    "MiniMaxM3ForCausalLM": "MiniMax-M3 hybrid attention: not mapped",
    "MiMoV2FlashForCausalLM": "per-layer attention shapes (hybrid sliding-window heads): not mapped",
    "LagunaForCausalLM": "per-layer attention shapes: not mapped",
    "HunYuanMoEV1ForCausalLM": "cross-layer attention (CLA): not mapped",
    "DeciLMForCausalLM": "heterogeneous per-layer blocks (Nemotron-NAS): not mapped",
}
#: Configs whose model class and config class are remote code (``auto_map``) without a transformers
#: implementation: Megatron-Bridge would have to run that code to read them.
REMOTE_CODE = ("QWenLMHeadModel", "ChatGLMModel", "ChatGLMForConditionalGeneration", "BaichuanForCausalLM",
               "InternLMForCausalLM", "CodeShell4bitForCausalLM", "RWForCausalLM", "StableLMEpochForCausalLM",
               "InfiMMZephyrModel", "MiniCPMV")


class Unmapped(Exception):
    """The config does not map to a Megatron-Core model in this harness (``not_run``; the message is why)."""


def _first(d: dict, *keys, default=None):
    for k in keys:
        v = d.get(k)
        if v is not None:
            return v
    return default


def hf_to_megatron(raw: dict) -> dict:
    """The Megatron-Core model a config.json maps to, as Megatron-Bridge's providers map it.

    Returns ``{"kind": "gpt", "mla": bool, "config": {TransformerConfig kwargs}, "vocab_size": int,
    "max_sequence_length": int, "position_embedding_type": str, "share_embeddings": bool}``; raises
    :class:`Unmapped` for configs the harness does not build.

    Mapping (Megatron-Bridge ``*Bridge.provider_bridge`` / ``CONFIG_MAPPING``): ``num_layers`` <-
    ``num_hidden_layers``; ``hidden_size``; ``num_attention_heads``; ``num_query_groups`` <-
    ``num_key_value_heads`` (1 for multi-query GPT-BigCode/Falcon-7B); ``kv_channels`` <- ``head_dim`` (else
    hidden / heads); ``ffn_hidden_size`` <- ``intermediate_size`` (``n_inner``/``ffn_hidden_size``, else 4 x
    hidden, for GPT-style configs); ``gated_linear_unit`` (SwiGLU/GeGLU: ``linear_fc1`` is 2 x ffn wide);
    ``vocab_size`` unpadded (the providers' ``should_pad_vocab=False``: the checkpoint's vocabulary);
    ``share_embeddings_and_output_weights`` <- ``tie_word_embeddings``. MoE: ``num_moe_experts`` <-
    ``num_experts``/``num_local_experts``/``n_routed_experts``; ``moe_ffn_hidden_size`` <-
    ``moe_intermediate_size`` (Mixtral, gpt-oss, MiniMax-M2, Granite-MoE: ``intermediate_size``);
    ``moe_router_topk`` <- ``num_experts_per_tok``; ``moe_shared_expert_intermediate_size`` <-
    ``moe_intermediate_size * n_shared_experts``; ``moe_layer_freq`` <- ``[0] * first_k_dense_replace + [1] *
    rest`` (Qwen3-MoE ``mlp_only_layers``); ``moe_router_num_groups``/``moe_router_group_topk`` <-
    ``n_group``/``topk_group``. MLA: ``q_lora_rank``, ``kv_lora_rank``, ``qk_head_dim`` <-
    ``qk_nope_head_dim``, ``qk_pos_emb_head_dim`` <- ``qk_rope_head_dim``, ``v_head_dim``. Parallel settings
    stay Megatron's defaults (no sequence parallelism, expert-tensor-parallel = TP). Not mapped: multi-token
    prediction heads, attention sinks, sliding windows, RoPE variants (none changes a shape check).
    """
    archs = raw.get("architectures") or []
    arch = archs[0] if archs else ""
    if not arch:
        raise Unmapped("config.json names no architecture")
    if arch in REMOTE_CODE:
        raise Unmapped("remote code")
    if arch in NOT_MAPPED:
        raise Unmapped(NOT_MAPPED[arch])
    if isinstance(raw.get("vision_config"), dict) or isinstance(raw.get("text_config"), dict):
        raise Unmapped("vision-language model: the harness builds Megatron-Core language models only "
                       "(Megatron-Bridge's VL providers add a vision encoder)")
    if arch not in DENSE and arch not in MOE and arch not in MLA:
        raise Unmapped(f"no Megatron-Bridge-style mapping for {arch} in the harness")
    c = raw
    L = int(_first(c, "num_hidden_layers", "n_layer", "num_layers"))
    hidden = int(_first(c, "hidden_size", "n_embd", "d_model"))
    heads = int(_first(c, "num_attention_heads", "n_head"))
    if arch == "GPTBigCodeForCausalLM":
        kv = 1 if c.get("multi_query", True) else heads
    elif arch == "FalconForCausalLM":
        if c.get("new_decoder_architecture"):
            kv = int(_first(c, "num_kv_heads", "num_key_value_heads", default=heads))
        else:
            kv = 1 if c.get("multi_query", True) else heads
    else:
        kv = int(_first(c, "num_key_value_heads", "num_kv_heads", default=heads))
    head_dim = c.get("head_dim")
    kv_channels = int(head_dim) if head_dim else hidden // heads
    vocab = int(c["vocab_size"])
    cfg: dict = dict(num_layers=L, hidden_size=hidden, num_attention_heads=heads, num_query_groups=kv,
                     kv_channels=kv_channels, add_bias_linear=False, bias_activation_fusion=False,
                     masked_softmax_fusion=False, persist_layer_norm=False, bias_dropout_fusion=False,
                     apply_rope_fusion=False, gradient_accumulation_fusion=False)
    out = {"kind": "gpt", "mla": False, "vocab_size": vocab,
           "max_sequence_length": int(_first(c, "max_position_embeddings", "n_positions", "seq_length",
                                            default=4096)),
           "position_embedding_type": "rope", "share_embeddings": bool(c.get("tie_word_embeddings", False)),
           "arch": arch}
    if arch in DENSE:
        gated, norm, qkv_bias, qk_ln = DENSE[arch]
        ffn = _first(c, "intermediate_size", "n_inner", "ffn_hidden_size")
        cfg.update(ffn_hidden_size=int(ffn) if ffn else 4 * hidden, gated_linear_unit=gated,
                   activation=("silu" if gated and not arch.startswith("Gemma") else "gelu"),
                   normalization=norm, add_qkv_bias=qkv_bias, qk_layernorm=qk_ln)
        if arch == "GPT2LMHeadModel":
            out["position_embedding_type"] = "learned_absolute"
            out["share_embeddings"] = True
        out["config"] = cfg
        return out
    # mixture of experts (and MLA)
    n_exp = int(_first(c, "num_experts", "num_local_experts", "n_routed_experts"))
    dense_ffn = c.get("intermediate_size")
    if arch in ("MixtralForCausalLM", "GptOssForCausalLM", "MiniMaxM2ForCausalLM", "GraniteMoeForCausalLM"):
        moe_ffn = int(c["intermediate_size"])
    else:
        moe_ffn = int(c["moe_intermediate_size"])
    cfg.update(ffn_hidden_size=int(dense_ffn) if dense_ffn else moe_ffn, gated_linear_unit=True,
               activation="silu", normalization="RMSNorm", num_moe_experts=n_exp, moe_ffn_hidden_size=moe_ffn,
               moe_router_topk=int(_first(c, "num_experts_per_tok", "experts_per_token", default=2)),
               qk_layernorm=arch in ("Qwen3MoeForCausalLM", "MiniMaxM2ForCausalLM"),
               add_qkv_bias=arch == "GptOssForCausalLM")
    shared = int(c.get("n_shared_experts") or 0)
    if shared:
        cfg["moe_shared_expert_intermediate_size"] = moe_ffn * shared
    k_dense = int(c.get("first_k_dense_replace") or 0)
    only_dense = set(c.get("mlp_only_layers") or [])
    if k_dense or only_dense:
        cfg["moe_layer_freq"] = [0 if (i < k_dense or i in only_dense) else 1 for i in range(L)]
    groups = c.get("n_group")
    if groups and int(groups) > 1:
        cfg.update(moe_router_num_groups=int(groups), moe_router_group_topk=int(c.get("topk_group") or 1))
    if arch in MLA:
        out["mla"] = True
        q_lora = c.get("q_lora_rank")
        cfg.update(multi_latent_attention=True, q_lora_rank=int(q_lora) if q_lora else None,
                   kv_lora_rank=int(c["kv_lora_rank"]), qk_head_dim=int(c["qk_nope_head_dim"]),
                   qk_pos_emb_head_dim=int(c["qk_rope_head_dim"]), v_head_dim=int(c["v_head_dim"]),
                   kv_channels=None, num_query_groups=heads)
    out["config"] = cfg
    return out


# ----------------------------------------------------------------------------------------------------
# one cell
# ----------------------------------------------------------------------------------------------------


def raise_site(exc: BaseException) -> tuple[str, int, str]:
    """``(file, line, function)`` of the innermost frame inside the megatron package, relative to the
    package root (``megatron/core/...``); the innermost frame overall when no megatron frame is on the stack."""
    return wc.package_raise_site(exc, "megatron/core")


def mcore_stack(exc: BaseException, keep: int = 8) -> list[str]:
    """The last ``keep`` frames inside ``megatron/core``, innermost last, as ``file:line function``."""
    return wc.package_stack(exc, "megatron/core", keep)


def exc_record(exc: BaseException) -> dict:
    return wc.exc_fields(exc, "megatron/core")


HARNESS_MARKERS = (
    ("CUDA", "the code called the CUDA runtime (no GPU here)"),
    ("NCCL", "the code called NCCL (no GPU here)"),
    ("meta tensors", "an operation needed real tensor data (meta device)"),
    ("Cannot copy out of meta tensor", "an operation needed real tensor data (meta device)"),
    ("TransformerEngine", "the code needs Transformer Engine (not installed: local specs only)"),
    ("transformer_engine", "the code needs Transformer Engine (not installed: local specs only)"),
    ("No module named", "a module the code imports is not installed in the venv"),
)


def harness_reason(exc: BaseException) -> str:
    """Why an exception comes from the stand-ins rather than from Megatron-Core's checks ("" = a refusal)."""
    if isinstance(exc, (ImportError, ModuleNotFoundError)):
        return "a module the code imports is not installed in the venv"
    return wc.marker_reason(exc, HARNESS_MARKERS)


def ep_size(cell: dict) -> int:
    return int(cell.get("dp", 1)) if cell.get("ep") else 1


def init_groups(tp: int, pp: int, dp: int, ep: int) -> None:
    import torch.distributed as dist
    from megatron.core import parallel_state as ps
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=tp * pp * dp)
    ps.initialize_model_parallel(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                                 expert_model_parallel_size=ep, create_gloo_process_groups=False)


def destroy_groups() -> None:
    import torch.distributed as dist
    from megatron.core import parallel_state as ps

    try:
        ps.destroy_model_parallel()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def build_config(spec: dict, tp: int, pp: int, ep: int):
    """Stage 2: the Megatron-Core config (its ``__post_init__`` checks run here)."""
    import torch
    import torch.nn.functional as F
    from megatron.core.transformer.transformer_config import MLATransformerConfig, TransformerConfig

    kw = dict(spec["config"])
    act = kw.pop("activation", "silu")
    kw["activation_func"] = F.silu if act == "silu" else F.gelu
    kw.update(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp, expert_model_parallel_size=ep,
              sequence_parallel=False, bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
              perform_initialization=False, use_cpu_initialization=True)
    if kw.get("moe_layer_freq") is None:
        kw.pop("moe_layer_freq", None)
    cls = MLATransformerConfig if kw.get("multi_latent_attention") else TransformerConfig
    return cls(**kw)


#: Rank 0 builds every layer of its pipeline stage unless its stage holds more expert MLPs than this
#: (local experts x MoE layers): then each distinct layer spec is built once (see :func:`build_model`).
DEDUP_EXPERT_MLPS = 64


class _MLACoreAttentionMixin:
    """See :func:`mla_core_attention`."""

    def __init__(self, *args, k_channels=None, v_channels=None, **kwargs):
        super().__init__(*args, **kwargs)


def mla_core_attention():
    """Stand-in for one argument mismatch: Megatron-Core 0.16.1's local (non-Transformer-Engine) MLA layer
    spec builds its core attention as ``DotProductAttention(..., k_channels=, v_channels=)``, keywords the
    local ``DotProductAttention`` does not take (``TypeError``; Megatron-Bridge builds MLA with Transformer
    Engine's attention, which takes them). While the MLA spec is made, its core attention is
    ``DotProductAttention`` accepting and ignoring those two keywords: the module has no parameters and its
    ``divide`` checks (heads and query groups by TP) are the config's own heads % TP check."""
    import contextlib

    from megatron.core.models import backends as B

    @contextlib.contextmanager
    def swap():
        real = B.DotProductAttention  # what LocalSpecProvider.core_attention() returns
        B.DotProductAttention = type("DotProductAttention", (_MLACoreAttentionMixin, real), {})
        try:
            yield
        finally:
            B.DotProductAttention = real

    return swap()


def build_model(spec: dict, config):
    """Stage 3: rank 0's GPTModel (first pipeline stage) with the local layer specs, on the meta device.

    Returns ``(model, layer_counts)``. ``get_gpt_decoder_block_spec`` (Megatron's own: it runs the pipeline
    split check and slices the stage's layer specs) gives the stage's layers; when the stage would hold more
    than :data:`DEDUP_EXPERT_MLPS` expert MLPs (a 256-expert model takes ~1 s per MoE layer to construct
    here), each distinct layer spec (dense, MoE) is built once, in the stage's order: layers of one spec are
    the same modules with the same config, so they raise the same errors and hold the same parameters
    (``layer_counts`` gives how many layers each built layer stands for; ``None`` when every layer was built)."""
    import torch
    from megatron.core import parallel_state as ps
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.transformer.transformer_block import TransformerBlockSubmodules

    if spec.get("mla"):
        with mla_core_attention():
            block = get_gpt_decoder_block_spec(config, use_transformer_engine=False,
                                               normalization=config.normalization)
    else:
        block = get_gpt_decoder_block_spec(config, use_transformer_engine=False, normalization=config.normalization)
    counts = None
    n_exp = int(config.num_moe_experts or 0)
    if n_exp:
        local_experts = n_exp // max(int(config.expert_model_parallel_size), 1)
        moe_layers = sum(1 for ls in block.layer_specs
                         if getattr(getattr(getattr(ls, "submodules", None), "mlp", None), "module", None).__name__
                         == "MoELayer")
        if local_experts * moe_layers > DEDUP_EXPERT_MLPS:
            uniq, counts = [], []
            for ls in block.layer_specs:
                for j, u in enumerate(uniq):
                    if u is ls:
                        counts[j] += 1
                        break
                else:
                    uniq.append(ls)
                    counts.append(1)
            block = TransformerBlockSubmodules(layer_specs=uniq, layer_norm=block.layer_norm)
    with torch.device("meta"):
        model = GPTModel(config, block, vocab_size=spec["vocab_size"],
                         max_sequence_length=spec["max_sequence_length"],
                         position_embedding_type=spec["position_embedding_type"],
                         share_embeddings_and_output_weights=spec["share_embeddings"],
                         pre_process=ps.is_pipeline_first_stage(), post_process=ps.is_pipeline_last_stage())
    return model, counts


def dedup_param_bytes(model, counts: list[int]) -> tuple[int, int, dict]:
    """Rank 0's parameter bytes when each built decoder layer stands for ``counts[i]`` layers."""
    b, n, by = wc.param_bytes(model)
    for layer, k in zip(model.decoder.layers, counts):
        lb, ln, lby = wc.param_bytes(layer)
        b += (k - 1) * lb
        n += (k - 1) * ln
        for dt, v in lby.items():
            by[dt] = by.get(dt, 0) + (k - 1) * v
    return b, n, by


def run_cell(spec: dict, cell: dict) -> dict:
    """Build one cell; returns the outcome record (never raises)."""
    import warnings

    rec = dict(cell)
    tp, pp, dp = int(cell["tp"]), int(cell.get("pp", 1)), int(cell.get("dp", 1))
    ep = ep_size(cell)
    rec["ep_size"] = ep
    t0 = time.perf_counter()
    stage = "groups"
    model = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            init_groups(tp, pp, dp, ep)
            stage = "config"
            config = build_config(spec, tp, pp, ep)
            stage = "model"
            model, counts = build_model(spec, config)
    except Exception as e:  # noqa: BLE001
        rec.update(exc_record(e))
        harness = harness_reason(e)
        if harness:
            rec["outcome"], rec["reason"] = "harness_error", harness
        else:
            rec["outcome"] = "refused_build" if stage == "model" else "refused_engine"
        rec["stage"] = stage
    else:
        counted = None
        if counts is not None:
            counted = dedup_param_bytes(model, counts)
            rec["reason"] = (f"each distinct layer built once ({len(counts)} of {sum(counts)} layers of the stage; "
                             "parameter bytes summed per layer)")
        wc.add_params(rec, model, cell, counted)
    finally:
        try:
            destroy_groups()
        except Exception:  # noqa: BLE001
            pass
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    del model
    return rec


#: Records reused between models whose mapped config is identical (quantized copies of one checkpoint: the
#: harness ignores quantization, so Megatron-Core receives exactly the same inputs). In memory, and on disk in
#: ``data/conformance/.work/megatron-core-<version>/_spec_cache/`` (beside the per-model checkpoints).
_CACHE: dict[str, dict] = {}
_OUTCOME_KEYS = ("outcome", "reason", "exc_type", "message", "file", "line", "function", "innermost", "stack",
                 "stage", "param_bytes", "param_count", "param_bytes_by_dtype", "seconds", "ep_size")


def _cache_dir(version: str) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "data", "conformance", ".work", f"megatron-core-{version}",
                        "_spec_cache")


def _cache_key(spec: dict, cell: dict, version: str) -> str:
    import hashlib

    body = {k: v for k, v in spec.items() if k != "arch"}
    cell_key = [int(cell["tp"]), int(cell.get("pp", 1)), int(cell.get("dp", 1)), int(bool(cell.get("ep")))]
    return hashlib.sha256(json.dumps([version, body, cell_key], sort_keys=True).encode()).hexdigest()[:32]


def cached_cell(spec: dict, cell: dict, version: str, use_cache: bool = True) -> dict:
    """:func:`run_cell`, reusing the record of an identical (mapped config, cell) built before."""
    if not use_cache or cell.get("params_detail"):
        return run_cell(spec, cell)
    key = _cache_key(spec, cell, version)
    path = os.path.join(_cache_dir(version), key + ".json")
    hit = _CACHE.get(key)
    if hit is None and os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                hit = json.load(fh)
        except (OSError, ValueError):
            hit = None
    if hit is not None:
        rec = dict(cell)
        rec.update({k: v for k, v in hit.items() if k in _OUTCOME_KEYS})
        return rec
    rec = run_cell(spec, cell)
    if rec.get("outcome") != "harness_error":
        keep = {k: v for k, v in rec.items() if k in _OUTCOME_KEYS}
        _CACHE[key] = keep
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = path + f".{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(keep, fh)
            os.replace(tmp, path)  # atomic
        except OSError:
            pass
    return rec


def run_model(job_model: dict, platform_kind: str, version: str, use_cache: bool = True) -> None:
    with open(job_model["config_path"], encoding="utf-8") as fh:
        raw = json.load(fh)
    try:
        spec = hf_to_megatron(raw)
        why = ""
    except Unmapped as e:
        spec, why = None, str(e)
    except Exception as e:  # noqa: BLE001 - a config the mapping cannot read
        spec, why = None, f"config not mappable: {type(e).__name__}: {e}"
    # the quantization sidecars the driver passes (driver.sidecars_for) are named, as in the other
    # tables, but not read: the harness builds the architecture, not the checkpoint's quantization
    sidecars = sorted(job_model.get("sidecars") or {})
    for cell in job_model["cells"]:
        if spec is None:
            r = dict(cell, outcome="not_run", reason=why)
        else:
            r = wc.guarded_cell(lambda c: cached_cell(spec, c, version, use_cache), cell, exc_record,
                                reraise=(KeyboardInterrupt,))
        wc.emit_cell(r, job_model, version, platform_kind, list(sidecars))
    wc.model_done(job_model["model_id"])


def registry(version: str) -> dict:
    """What the harness maps (``python -m conformance run`` writes it beside the table)."""
    return {"version": version, "dense": sorted(DENSE), "moe": list(MOE), "mla": list(MLA),
            "not_mapped": NOT_MAPPED, "remote_code": list(REMOTE_CODE)}


def install_cuda_standin() -> None:
    """``torch.cuda.current_device()`` answers the meta device: a few constructors place small buffers on
    the current CUDA device when ``use_cpu_initialization`` is not passed down (MLA's YaRN RoPE builds its
    frequency tables there); on the meta device they keep their shapes and hold no data. ``Tensor.cuda()``
    of a meta tensor returns it (tied embeddings under PP: the first stage moves the embedding to the GPU
    before the all-reduce that syncs it with the last stage, a no-op on the fake process group)."""
    import torch

    torch.cuda.current_device = lambda: "meta"  # type: ignore[assignment]
    real_cuda = torch.Tensor.cuda

    def cuda(self, *args, **kwargs):
        return self if self.is_meta else real_cuda(self, *args, **kwargs)

    torch.Tensor.cuda = cuda  # type: ignore[assignment]
    # Transformer Engine is not installed, yet Megatron-Core's TE shim leaves multi_latent_attention.py
    # believing it is (HAVE_TE True, TELinear a MagicMock), so MLASelfAttention's isinstance(linear_proj,
    # TELinear) raises TypeError; HAVE_TE False there only skips the TE FP8/FP4 branch it guards.
    from megatron.core.transformer import multi_latent_attention as mla

    if not _te_installed():
        mla.HAVE_TE = False


def _te_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("transformer_engine") is not None


def setup(platform_kind: str) -> str:
    """Import Megatron-Core and its GPT model, install the CUDA stand-in; returns Megatron-Core's version."""
    import importlib.metadata as md
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import megatron.core  # noqa: F401
        from megatron.core.models.gpt import gpt_model  # noqa: F401
    install_cuda_standin()
    return md.version("megatron-core")


def main() -> int:
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    return wc.serve(setup, exc_record, "Megatron-Core import failed", registry,
                    lambda m, platform_kind, version, job: run_model(m, platform_kind, version,
                                                                    use_cache=not job.get("no_cache")),
                    platform="cpu-meta")


if __name__ == "__main__":
    sys.exit(main())
