"""TensorRT-LLM (PyTorch backend) tensor-parallel checks, as rule data.

Evidence is ``source`` only: TensorRT-LLM needs CUDA to import, and the newest PyPI release (1.2.1) is a
10 kB ``wheel_stub`` sdist that fetches the real wheel from pypi.nvidia.com (unreachable here), so no
release could be run or unpacked. The code was read from main-branch commits in the stored source index
(the v1.2.1 tag's tree is not stored); each rule's ``source_url`` names the commit read.

Rules are listed in the order TensorRT-LLM reaches them, so the first failing rule is the error a user sees:

1. ``Mapping.__init__`` (LLM args -> ``_ParallelConfig`` -> ``Mapping``, before any model code):
   ``moe_tp_size = tp_size // (moe_ep_size * moe_cluster_size)``, then a ValueError when the product is not
   ``tp_size``.
2. Model construction, layer by layer: ``Attention`` / ``MLA`` ``__init__`` (bare ``assert self.num_heads %
   (tp_size * cp_size) == 0``; ``tp_size = 1`` under attention-DP), then the dense MLP's ``Linear`` layers
   (``out_features {n} must be divisible by tp_size {tp}`` for the column-parallel gate_up projection,
   ``in_features ...`` for the row-parallel down projection), then the MoE layer (bare ``assert
   self.num_experts % self.ep_size == 0`` without EPLB).
3. Weight loading: ``duplicate_kv_weight`` (bare asserts on KV heads vs TP).

Upstream bare asserts print only ``AssertionError``: those messages are ours (``ours=True``), written as
``AssertionError (no message) from assert <expr>`` with the numbers, and the note names the assert. The
``Linear`` and ``Mapping`` messages are TensorRT-LLM's own text.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.rules import preds as P
from dashboard.rules import sources as S
from dashboard.rules.common import Ctx, Rule, not_multiple

FW = "tensorrt-llm"

_READ = "Read from source only (no CUDA build here); "


def _mapping_ep_tp():
    """``Mapping.__init__``: with ``moe_expert_parallel_size = ep`` and no MoE-TP given, ``moe_tp_size = tp //
    ep`` (``moe_cluster_size`` 1); ValueError when ``moe_tp_size * ep != tp``, i.e. ep does not divide tp
    (``moe_tp_size`` is 0 when ep > tp). Any model: the Mapping is built before the model. Fields
    ``{tp}``, ``{moe_tp}``, ``{ep}``."""

    def pred(ctx: Ctx):
        if not np.any(ctx.ep > 1):
            return np.zeros(ctx.n, dtype=bool), {}
        moe_tp = ctx.tp // ctx.ep
        return (((moe_tp * ctx.ep) != ctx.tp) & (ctx.ep > 1),
                {"tp": ctx.tp, "moe_tp": moe_tp, "ep": np.broadcast_to(ctx.ep, ctx.tp.shape)})

    return pred


def _gated(ctx: Ctx) -> np.ndarray:
    """Dense MLP is gated (``GatedMLP``: gate_up_proj of 2 x intermediate); unknown counts as gated."""

    def fn(df):
        if "mlp_gated" not in df.columns:
            return np.ones(len(df), dtype=bool)
        s = df["mlp_gated"]
        return np.array([True if pd.isna(v) else bool(v) for v in s], dtype=bool)

    return ctx.flag("trt_mlp_gated", fn)


def _mlp_out(ctx: Ctx):
    """Column-parallel first MLP projection: out_features = 2 x intermediate (gated) or intermediate."""
    inter = ctx.i("intermediate_size")
    return np.where(_gated(ctx), 2 * inter, inter), inter


def _mlp_column():
    """``Linear(..., COLUMN)``: ``out_features % tp_size``, out_features = 2I for GatedMLP's gate_up_proj (I for a
    plain MLP's up_proj). Fields ``{out}``, ``{tp}``."""

    def pred(ctx: Ctx):
        out, _ = _mlp_out(ctx)
        return ctx.has_dense_mlp() & not_multiple(out, ctx.tp), {"out": out, "tp": ctx.tp}

    return pred


def _mlp_row():
    """``Linear(..., ROW)`` down_proj: ``in_features (= I) % tp_size``, reached only when the column projection
    passed (2I divisible, I not: tp has one more factor 2 than I). Fields ``{inp}``, ``{tp}``."""

    def pred(ctx: Ctx):
        out, inter = _mlp_out(ctx)
        fire = ctx.has_dense_mlp() & ~not_multiple(out, ctx.tp) & not_multiple(inter, ctx.tp)
        return fire, {"inp": inter, "tp": ctx.tp}

    return pred


def _kv_dup(split: bool):
    """``duplicate_kv_weight(weight, num_kv_heads, tensor_parallel_size)``: kv >= tp -> ``assert kv % tp == 0``
    (``split``); kv < tp -> ``assert tp % kv == 0``. Non-MLA; attention-TP (1 under attention-DP)."""

    def pred(ctx: Ctx):
        t = ctx.attn_tp(FW)
        kv = np.maximum(ctx.i("num_key_value_heads"), 1)
        base = ctx.has("num_key_value_heads") & ~ctx.is_mla()
        if split:
            fire = base & (kv >= t) & not_multiple(kv, t)
        else:
            fire = base & (kv < t) & not_multiple(t, kv)
        return fire, {"kv": kv, "tp": t}

    return pred


RULES: list[Rule] = [
    Rule(
        id="trtllm.moe_experts.mapping",
        framework=FW,
        kind="moe_experts",
        versions="",
        condition="Mapping: moe_expert_parallel_size = ep > 1 and no moe_tensor_parallel_size -> moe_tp_size = "
        "tp_size // (ep * moe_cluster_size), moe_cluster_size = 1; ValueError when moe_tp_size * ep * 1 != tp_size "
        "(ep does not divide tp). Raised for any model, before it is built",
        message="tp_size must equal to moe_tp_size * moe_ep_size * moe_cluster_size, but got {tp} != {moe_tp} * {ep} "
        "* 1",
        source_url=S.TRT_MAPPING,
        predicate=_mapping_ep_tp(),
        exc_type="ValueError",
        note=_READ + "TensorRT-LLM's own text (tensorrt_llm/mapping.py Mapping.__init__, L177-180 at the commit "
        "read; moe_tp_size default at L142-143). Older Mapping code without moe_cluster_size printed 'tp_size must "
        "equal to moe_tp_size * moe_ep_size, but got ...' and set moe_tp_size = tp_size, moe_ep_size = 1 when "
        "moe_tp_size was not given; the release where that changed was not established.",
    ),
    Rule(
        id="trtllm.attention_heads",
        framework=FW,
        kind="attention_heads",
        versions="",
        condition="Attention.__init__: tp_size = 1 under enable_attention_dp else mapping.tp_size; "
        "assert self.num_heads % (tp_size * cp_size) == 0 (cp_size = 1 here; non-MLA)",
        message="AssertionError (no message) from assert self.num_heads % (tp_size * cp_size) == 0: num_heads={h}, "
        "tp_size={tp}, cp_size=1",
        source_url=S.TRT_ATTENTION,
        predicate=P.attention_heads(FW, mla=False),
        needs=("num_attention_heads",),
        ours=True,
        note=_READ + "message is ours: our rendering of the bare `assert self.num_heads % (tp_size * cp_size) == 0` "
        "in Attention.__init__ of the newer stored attention.py (with Helix context parallelism; audit: "
        "attention.py@00547a25); TensorRT-LLM prints only AssertionError. The linked attention.py@c6d3bb2a has "
        "the older bare `assert self.num_heads % tp_size == 0`: the same verdict with cp_size = 1.",
    ),
    Rule(
        id="trtllm.mla",
        framework=FW,
        kind="mla",
        versions="",
        condition="MLA.__init__: tp_size = 1 under enable_attention_dp else mapping.tp_size; assert self.num_heads "
        "% (tp_size * cp_size) == 0 (cp_size = 1 here); the KV latent is replicated on every rank",
        message="AssertionError (no message) from assert self.num_heads % (tp_size * cp_size) == 0: num_heads={h}, "
        "tp_size={tp}, cp_size=1",
        source_url=S.TRT_MLA,
        predicate=P.attention_heads(FW, mla=True),
        needs=("num_attention_heads",),
        ours=True,
        note=_READ + "message is ours: our rendering of the bare `assert self.num_heads % (tp_size * cp_size) == 0` "
        "in MLA.__init__ (tensorrt_llm/_torch/modules/mla.py@c0261efa); TensorRT-LLM prints only AssertionError. "
        "Older code (class MLA in attention.py@c6d3bb2a) asserts self.num_heads % tp_size == 0.",
    ),
    Rule(
        id="trtllm.mlp_intermediate",
        framework=FW,
        kind="mlp_intermediate",
        versions="",
        condition="dense MLP, Linear(..., COLUMN).__init__: assert out_features % tp_size == 0, out_features = "
        "2 x intermediate_size for GatedMLP's fused gate_up_proj (intermediate_size for a non-gated MLP)",
        message="out_features {out} must be divisible by tp_size {tp}",
        source_url=S.TRT_GATED_MLP,
        predicate=_mlp_column(),
        exc_type="AssertionError",
        note=_READ + "TensorRT-LLM's own text: Linear.__init__ "
        f"({S.TRT_LINEAR.split('/blob/')[-1]}) asserts with this message; GatedMLP builds gate_up_proj "
        "(2 x intermediate_size, COLUMN) before down_proj, so the number is 2 x intermediate_size.",
    ),
    Rule(
        id="trtllm.mlp_intermediate.down",
        framework=FW,
        kind="mlp_intermediate",
        versions="",
        condition="dense MLP, Linear(..., ROW).__init__ (down_proj): assert in_features % tp_size == 0, "
        "in_features = intermediate_size; reached when the column projection passed",
        message="in_features {inp} must be divisible by tp_size {tp}",
        source_url=S.TRT_GATED_MLP,
        predicate=_mlp_row(),
        exc_type="AssertionError",
        note=_READ + "TensorRT-LLM's own text: Linear.__init__ "
        f"({S.TRT_LINEAR.split('/blob/')[-1]}), ROW branch.",
    ),
    Rule(
        id="trtllm.moe_experts",
        framework=FW,
        kind="moe_experts",
        versions="",
        condition="MoE._init_load_balancer without a MoE load balancer (EPLB): assert self.num_experts % "
        "self.ep_size == 0, ep_size = mapping.moe_ep_size",
        message="AssertionError (no message) from assert self.num_experts % self.ep_size == 0: num_experts={n}, "
        "ep_size={ep}",
        source_url=S.TRT_MOE,
        predicate=P.moe_experts_divisible(),
        ours=True,
        note=_READ + "message is ours: our rendering of the bare `assert self.num_experts % self.ep_size == 0` "
        "(the 'Fallback when no load balancer' branch of MoE._init_load_balancer in "
        "tensorrt_llm/_torch/modules/fused_moe/interface.py; stored index version id 3744845622, commit not "
        "recorded; the linked commit 567239fc has no such assert). With EPLB the slots need not divide.",
    ),
    Rule(
        id="trtllm.moe_intermediate",
        framework=FW,
        kind="moe_intermediate",
        versions="",
        condition="MoE-TP = tp // ep; moe_intermediate_size % moe_tp != 0 (MoE.__init__ floors "
        "intermediate_size // moe_tp_size without a check)",
        message="moe_intermediate_size {m} is not divisible by the MoE tensor-parallel size {moe_tp}.",
        source_url=S.TRT_MOE,
        predicate=P.moe_intermediate(FW),
        ours=True,
        note=_READ + "message is ours: upstream has no check here; MoE.__init__ computes "
        "intermediate_size_per_partition = intermediate_size // self.tp_size (floor) and the quantized backends "
        "pad it to their alignment. That unquantized weights then fail to load was not verified.",
    ),
    Rule(
        id="trtllm.kv_heads",
        framework=FW,
        kind="kv_heads",
        versions="",
        condition="weight load, duplicate_kv_weight: num_kv_heads >= tp_size and num_kv_heads % tp_size != 0 "
        "(tp_size = 1 under attention-DP; non-MLA)",
        message="AssertionError (no message) from assert num_kv_heads % tensor_parallel_size == 0: num_kv_heads={kv}, "
        "tensor_parallel_size={tp}",
        source_url=S.TRT_KV_DUP,
        predicate=_kv_dup(split=True),
        needs=("num_key_value_heads",),
        ours=True,
        note=_READ + "message is ours: our rendering of the bare `assert num_kv_heads % tensor_parallel_size == 0` "
        "in duplicate_kv_weight (tensorrt_llm/_torch/models/modeling_utils.py@000a01de, L101), reached when the "
        "k/v weights load (after the model is built).",
    ),
    Rule(
        id="trtllm.kv_heads.replicate",
        framework=FW,
        kind="kv_heads",
        versions="",
        condition="weight load, duplicate_kv_weight: num_kv_heads < tp_size and tp_size % num_kv_heads != 0 "
        "(KV heads are duplicated tp / kv times; tp_size = 1 under attention-DP; non-MLA)",
        message="AssertionError (no message) from assert tensor_parallel_size % num_kv_heads == 0: "
        "tensor_parallel_size={tp}, num_kv_heads={kv}",
        source_url=S.TRT_KV_DUP,
        predicate=_kv_dup(split=False),
        needs=("num_key_value_heads",),
        ours=True,
        note=_READ + "message is ours: our rendering of the bare `assert tensor_parallel_size % num_kv_heads == 0` "
        "in duplicate_kv_weight (tensorrt_llm/_torch/models/modeling_utils.py@000a01de, L104), reached when the "
        "k/v weights load.",
    ),
]


def rules() -> list[Rule]:
    """This module's rules, in evaluation order."""
    return RULES
