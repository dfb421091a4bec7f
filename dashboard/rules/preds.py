"""Vectorized predicate builders shared by the framework modules.

Each builder returns ``pred(ctx) -> (fire: bool[N], fields: dict[str, int64[N]])``. ``fire`` is True
exactly where the rule applies to the cell AND the framework would refuse (or warn). Fields are only
meaningful where ``fire`` is True.
"""

from __future__ import annotations

import numpy as np

from dashboard import sharding
from dashboard.rules.common import Ctx, kv_partition_fail, not_multiple

VOCAB_PAD = 64  # vLLM / SGLang DEFAULT_VOCAB_PADDING_SIZE


def attention_heads(fw: str, *, mla: bool | None = None, key: str = "h"):
    """``num_attention_heads % attn_tp != 0``. ``mla``: True = MLA models only, False = non-MLA only,
    None = every model. Fields: ``{h}``/``{tp}`` (or ``{a}``/``{b}`` with ``key="a"``)."""

    def pred(ctx: Ctx):
        t = ctx.attn_tp(fw)
        h = ctx.i("num_attention_heads")
        fire = ctx.has("num_attention_heads") & ctx.not_div("num_attention_heads", t)
        if mla is True:
            fire = fire & ctx.is_mla()
        elif mla is False:
            fire = fire & ~ctx.is_mla()
        if key == "a":
            return fire, {"a": h, "b": t}
        return fire, {"h": h, "tp": t}

    return pred


def kv_partition(fw: str):
    """vLLM/SGLang QKVParallelLinear KV partition or replication (non-MLA)."""

    def pred(ctx: Ctx):
        t = ctx.attn_tp(fw)
        kv = ctx.i("num_key_value_heads")
        fire, f = kv_partition_fail(np.maximum(kv, 1), t)
        return fire & ctx.has("num_key_value_heads") & ~ctx.is_mla(), f

    return pred


def kv_strict(fw: str, *, only_tp_gt_1: bool = False):
    """KV heads must split evenly (no replication): ``kv % attn_tp != 0``. Fields ``{kv}``, ``{tp}``."""

    def pred(ctx: Ctx):
        t = ctx.attn_tp(fw)
        fire = ctx.has("num_key_value_heads") & ctx.not_div("num_key_value_heads", t) & ~ctx.is_mla()
        if only_tp_gt_1:
            fire = fire & (t > 1)
        return fire, {"kv": ctx.i("num_key_value_heads"), "tp": t}

    return pred


def kv_split_or_replicate(fw: str):
    """Neither ``kv % tp == 0`` nor ``tp % kv == 0`` (TensorRT-LLM)."""

    def pred(ctx: Ctx):
        t = ctx.attn_tp(fw)
        kv = np.maximum(ctx.i("num_key_value_heads"), 1)
        fire = ctx.has("num_key_value_heads") & ~ctx.is_mla() & not_multiple(kv, t) & not_multiple(t, kv)
        return fire, {"kv": kv, "tp": t}

    return pred


def vocab_padded(pad: int = VOCAB_PAD):
    """Vocab padded to a multiple of ``pad`` must divide by TP. Fields ``{a}`` (padded) ``{b}`` (tp)."""

    def pred(ctx: Ctx):
        padded = ctx.memo(("vpad", pad), lambda: sharding.pad_to_multiple(ctx.i("vocab_size"), pad))
        fire = ctx.has("vocab_size") & not_multiple(padded, ctx.tp)
        return fire, {"a": padded, "b": ctx.tp}

    return pred


def dense_mlp():
    """Dense MLP ``intermediate_size % tp`` (MergedColumnParallelLinear ``divide``)."""

    def pred(ctx: Ctx):
        fire = ctx.has_dense_mlp() & ctx.not_div("intermediate_size", ctx.tp)
        return fire, {"a": ctx.i("intermediate_size"), "b": ctx.tp}

    return pred


def shared_mlp():
    """Shared-expert MLP ``shared_expert_intermediate_size % tp``."""

    def pred(ctx: Ctx):
        fire = ctx.has("shared_expert_intermediate_size") & ctx.not_div("shared_expert_intermediate_size", ctx.tp)
        return fire, {"a": ctx.i("shared_expert_intermediate_size"), "b": ctx.tp}

    return pred


def moe_intermediate(fw: str):
    """Routed expert ``moe_intermediate_size % moe_tp``. Fields ``{m}``, ``{moe_tp}``, ``{tp}``, ``{ep}``."""

    def pred(ctx: Ctx):
        mt = ctx.moe_tp(fw)
        m = ctx.i("moe_intermediate_size")
        fire = ctx.is_moe() & ctx.has("moe_intermediate_size") & not_multiple(m, mt)
        return fire, {"m": m, "moe_tp": mt, "tp": ctx.tp, "ep": np.broadcast_to(ctx.ep, ctx.tp.shape)}

    return pred


def moe_experts_divisible(*, model_types: tuple[str, ...] | None = None, name: str = "n"):
    """Under EP (ep > 1): ``num_experts % ep != 0``. ``model_types``: restrict to these model_type
    prefixes. Fields ``{n}``, ``{ep}``."""

    def pred(ctx: Ctx):
        if not np.any(ctx.ep > 1):
            return np.zeros(ctx.n, dtype=bool), {}
        n = ctx.i("num_experts")
        fire = ctx.has("num_experts") & ((n % ctx.ep) != 0) & (ctx.ep > 1)
        if model_types is not None:
            fire = fire & (
                ctx.str_startswith("model_type", model_types) | ctx.str_startswith("text_model_type", model_types)
            )
        return fire, {name: n, "ep": np.broadcast_to(ctx.ep, n.shape)}

    return pred


def moe_experts_uneven(*, exclude_model_types: tuple[str, ...] = ()):
    """Warning: under EP the experts do not split evenly (vLLM FusedMoE gives the first
    ``n % ep`` ranks one extra expert). Fields ``{n}``, ``{ep}``, ``{lo}``, ``{hi}``."""

    def pred(ctx: Ctx):
        if not np.any(ctx.ep > 1):
            return np.zeros(ctx.n, dtype=bool), {}
        n = ctx.i("num_experts")
        fire = ctx.has("num_experts") & ((n % ctx.ep) != 0) & (ctx.ep > 1)
        if exclude_model_types:
            fire = fire & ~(
                ctx.str_startswith("model_type", exclude_model_types)
                | ctx.str_startswith("text_model_type", exclude_model_types)
            )
        lo = n // ctx.ep
        return fire, {"n": n, "ep": np.broadcast_to(ctx.ep, n.shape), "lo": lo, "hi": lo + 1}

    return pred


def ep_without_moe():
    """EP requested on a model without experts."""

    def pred(ctx: Ctx):
        if not np.any(ctx.ep > 1):
            return np.zeros(ctx.n, dtype=bool), {}
        return ~ctx.is_moe() & ctx.has("num_attention_heads") & (ctx.ep > 1), {}

    return pred


# -- block FP8 ------------------------------------------------------------------------------------------


def _bn_bk(ctx: Ctx):
    return ctx.i("weight_block_n"), ctx.i("weight_block_k")


def fp8_dense(which: str, *, shared: bool = False):
    """Block-FP8 dense (or shared-expert) MLP: gate_up output per rank % block_n (``which="n"``), or,
    when that passes, down_proj input per rank % block_k (``which="k"``, tp > 1 only).
    Fields ``{size}``, ``{block}``."""
    col = "shared_expert_intermediate_size" if shared else "intermediate_size"

    def pred(ctx: Ctx):
        bn, bk = _bn_bk(ctx)
        inter = ctx.i(col)
        applies = ctx.fp8_block() & (ctx.has(col) if shared else ctx.has_dense_mlp())
        applies = applies & ~not_multiple(inter, ctx.tp)  # an indivisible size is the mlp rule's job
        size = inter // ctx.tp
        fail_n = applies & not_multiple(size, bn)
        if which == "n":
            return fail_n, {"size": size, "block": bn}
        fail_k = applies & ~fail_n & (ctx.tp > 1) & not_multiple(size, bk)
        return fail_k, {"size": size, "block": bk}

    return pred


def fp8_moe(fw: str, which: str):
    """Block-FP8 routed experts: ``moe_intermediate_size / moe_tp`` % block_n (always), then % block_k
    (moe_tp > 1). Fields ``{size}``, ``{block}``."""

    def pred(ctx: Ctx):
        bn, bk = _bn_bk(ctx)
        mt = ctx.moe_tp(fw)
        m = ctx.i("moe_intermediate_size")
        applies = ctx.fp8_block() & ctx.is_moe() & ctx.has("moe_intermediate_size") & ~not_multiple(m, mt)
        size = m // np.maximum(mt, 1)
        fail_n = applies & not_multiple(size, bn)
        if which == "n":
            return fail_n, {"size": size, "block": bn}
        fail_k = applies & ~fail_n & (mt > 1) & not_multiple(size, bk)
        return fail_k, {"size": size, "block": bk}

    return pred


def fp8_attention(fw: str):
    """Block-FP8 attention projections: per-rank q output (``heads/tp * head_dim``) and o_proj input
    (``heads/tp * v_head_dim``) must be multiples of block_n / block_k. Fields ``{size}``, ``{block}``."""

    def pred(ctx: Ctx):
        bn, bk = _bn_bk(ctx)
        t = ctx.attn_tp(fw)
        h = ctx.i("num_attention_heads")
        applies = ctx.fp8_block() & ctx.has("num_attention_heads") & ctx.has("head_dim") & (t > 1)
        applies = applies & ~not_multiple(h, t)
        q_out = (h // np.maximum(t, 1)) * ctx.i("head_dim")
        fire = applies & not_multiple(q_out, bn)
        return fire, {"size": q_out, "block": bn}

    return pred


def fp8_linear_attention(fw: str):
    """Block-FP8 linear-attention (GDN/KDA) projections: per-rank key and value projection widths
    (``heads/tp * head_dim``) must be multiples of block_n. Fields ``{size}``, ``{block}``."""

    def pred(ctx: Ctx):
        bn, _ = _bn_bk(ctx)
        t = ctx.attn_tp(fw)
        kh, vh = ctx.i("linear_num_key_heads"), ctx.i("linear_num_value_heads")
        kd, vd = ctx.i("linear_key_head_dim"), ctx.i("linear_value_head_dim")
        gk = ctx.has("linear_num_key_heads") & ctx.has("linear_key_head_dim") & ~not_multiple(kh, t)
        gv = ctx.has("linear_num_value_heads") & ctx.has("linear_value_head_dim") & ~not_multiple(vh, t)
        base = ctx.fp8_block() & (ctx.linear_kind("gdn") | ctx.linear_kind("kda")) & (t > 1)
        k_out = (kh // np.maximum(t, 1)) * kd
        v_out = (vh // np.maximum(t, 1)) * vd
        fk = base & gk & not_multiple(k_out, bn)
        fv = base & gv & not_multiple(v_out, bn)
        return fk | fv, {"size": np.where(fk, k_out, v_out), "block": bn}

    return pred


def group_size_rowparallel(fw: str):
    """AWQ/GPTQ: every row-parallel input per rank (o_proj ``heads/tp*head_dim``, down_proj
    ``intermediate/tp``, expert down ``moe_intermediate/moe_tp``) must be a multiple of group_size."""

    def pred(ctx: Ctx):
        g = np.maximum(ctx.i("quant_group_size"), 1)
        t = ctx.attn_tp(fw)
        h = ctx.i("num_attention_heads")
        o_in = (h // np.maximum(t, 1)) * ctx.i("head_dim")
        o_bad = ctx.has("num_attention_heads") & ctx.has("head_dim") & ~not_multiple(h, t) & not_multiple(o_in, g)
        inter = ctx.i("intermediate_size")
        d_bad = ctx.has_dense_mlp() & ~not_multiple(inter, ctx.tp) & not_multiple(inter // ctx.tp, g)
        mt = ctx.moe_tp(fw)
        m = ctx.i("moe_intermediate_size")
        m_bad = ctx.is_moe() & ctx.has("moe_intermediate_size") & ~not_multiple(m, mt) & not_multiple(m // mt, g)
        fire = ctx.group_quant() & (ctx.tp > 1) & (o_bad | d_bad | m_bad)
        return fire, {}

    return pred


# -- vision, linear attention, Mamba ---------------------------------------------------------------------


def vision_heads(fw: str, *, honour_vision_dp: bool = True):
    """Vision-tower heads % tp (skipped when the encoder runs data-parallel). Fields ``{a}``, ``{b}``,
    ``{padded}``, ``{dummy}``."""

    def pred(ctx: Ctx):
        if honour_vision_dp and ctx.vision_dp:
            return np.zeros(ctx.n, dtype=bool), {}
        vh = ctx.i("vision_num_heads")
        fire = ctx.has("vision_num_heads") & ctx.not_div("vision_num_heads", ctx.tp)
        padded = sharding.pad_to_multiple(vh, ctx.tp)
        return fire, {"a": vh, "b": ctx.tp, "padded": padded, "dummy": padded - vh}

    return pred


def kda_heads(fw: str):
    """KDA heads (``linear_attn_config.num_heads``) % attention-TP. Fields ``{h}``, ``{tp}``."""

    def pred(ctx: Ctx):
        t = ctx.attn_tp(fw)
        fire = ctx.linear_kind("kda") & ctx.has("linear_num_value_heads") & ctx.not_div("linear_num_value_heads", t)
        return fire, {"h": ctx.i("linear_num_value_heads"), "tp": t}

    return pred


def gdn_heads(fw: str):
    """GDN key heads and value heads must each divide by attention-TP (``divide``). Fields ``{a}``, ``{b}``."""

    def pred(ctx: Ctx):
        t = ctx.attn_tp(fw)
        kh, vh = ctx.i("linear_num_key_heads"), ctx.i("linear_num_value_heads")
        fk = ctx.has("linear_num_key_heads") & not_multiple(kh, t)
        fv = ctx.has("linear_num_value_heads") & not_multiple(vh, t)
        fire = ctx.linear_kind("gdn") & (fk | fv)
        return fire, {"a": np.where(fk, kh, vh), "b": t}

    return pred


def mamba_heads(fw: str):
    """Mamba2 heads % tp."""

    def pred(ctx: Ctx):
        fire = ctx.linear_kind("mamba2") & ctx.has("linear_num_value_heads") & ctx.not_div(
            "linear_num_value_heads", ctx.tp
        )
        return fire, {"h": ctx.i("linear_num_value_heads"), "tp": ctx.tp}

    return pred


def mamba_groups(fw: str):
    """Mamba2 ``n_groups % tp != 0 and n_groups != 1``. Fields ``{g}``, ``{tp}``."""

    def pred(ctx: Ctx):
        g = ctx.i("mamba_n_groups")
        fire = ctx.has("mamba_n_groups") & not_multiple(g, ctx.tp) & (g != 1)
        return fire, {"g": g, "tp": ctx.tp}

    return pred


def cross_attention_heads(fw: str):
    """Cross-attention layers shard plain heads: ``num_heads % tp``. Fields ``{h}``, ``{tp}``."""

    def pred(ctx: Ctx):
        t = ctx.attn_tp(fw)
        fire = (
            ctx.has("num_cross_attention_layers")
            & ctx.has("num_attention_heads")
            & ctx.not_div("num_attention_heads", t)
        )
        return fire, {"h": ctx.i("num_attention_heads"), "tp": t}

    return pred


def pipeline_even(*, warning: bool = False):
    """``num_hidden_layers % pp != 0`` (pp > 1). Fields ``{layers}``, ``{pp}``, ``{lo}``, ``{hi}``."""

    def pred(ctx: Ctx):
        if not np.any(ctx.pp > 1):
            return np.zeros(ctx.n, dtype=bool), {}
        L = ctx.i("num_hidden_layers")
        fire = ctx.has("num_hidden_layers") & ((L % ctx.pp) != 0) & (ctx.pp > 1)
        lo = L // ctx.pp
        return fire, {"layers": L, "pp": np.broadcast_to(ctx.pp, L.shape), "lo": lo, "hi": lo + 1}

    return pred


def pipeline_too_deep():
    """More pipeline stages than layers (some stage would hold no layer)."""

    def pred(ctx: Ctx):
        if not np.any(ctx.pp > 1):
            return np.zeros(ctx.n, dtype=bool), {}
        L = ctx.i("num_hidden_layers")
        return (ctx.has("num_hidden_layers") & (L < ctx.pp) & (ctx.pp > 1),
                {"layers": L, "pp": np.broadcast_to(ctx.pp, L.shape)})

    return pred


def dp_attention_split(fw: str):
    """SGLang DP-attention needs ``tp % dp == 0`` (attention-TP = tp / dp). Fields ``{tp}``, ``{dp}``."""

    def pred(ctx: Ctx):
        on = np.asarray(ctx.dp_attention) & (ctx.dp > 1)
        if not np.any(on):
            return np.zeros(ctx.n, dtype=bool), {}
        return ((ctx.tp % ctx.dp) != 0) & on, {"tp": ctx.tp, "dp": np.broadcast_to(ctx.dp, ctx.tp.shape)}

    return pred


def native_tp_replication_warning():
    """transformers native TP: KV heads that do not split load fine and fail in the forward pass."""

    def pred(ctx: Ctx):
        fire = ctx.has("num_key_value_heads") & ctx.not_div("num_key_value_heads", ctx.tp) & ~ctx.is_mla()
        return fire & (ctx.tp > 1), {"kv": ctx.i("num_key_value_heads"), "tp": ctx.tp}

    return pred


def unknown_model_type(known_types):
    """The config's ``model_type`` is not in ``known_types()`` (a release's config classes plus those of
    the transformers it installs, as the conformance harness read them; called at evaluation, not when
    the rule is built): ``AutoConfig`` refuses it without remote code. An empty set (the release's
    registry was not read): never fires. Fields: ``model_type``."""

    def pred(ctx: Ctx):
        known = set(known_types())
        if not known or "model_type" not in ctx.models.columns:
            return np.zeros(ctx.n, dtype=bool), {}
        mt = ctx.model_level(("model_type_str",), lambda: ctx.models["model_type"].astype("string").fillna("")
                             .to_numpy(dtype=object))
        # set membership per model (a pandas isin over a pyarrow string column converts the whole
        # registry on every call: ~15 ms even for one model)
        fire_m = np.fromiter((m != "" and m not in known for m in mt), dtype=bool, count=len(mt))
        fire = np.repeat(fire_m, ctx.n_tp)
        return fire, {"model_type": np.repeat(mt, ctx.n_tp)}

    return pred
