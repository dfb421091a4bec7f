"""Megatron-Core rules from 0.16 on (``versions=">=0.16.0"``), held to the executed release 0.16.1.

Each rule was checked by building every catalog model the harness maps with Megatron-Core's own code
under simulated TP x PP x EP layouts (``python -m conformance run --framework megatron-core``; the table
``data/conformance/megatron-core-0.16.1.parquet``, the mapping in ``conformance/megatron_worker.py``): the
rule fires exactly where Megatron-Core refused, with its message and raise site. The list order is the order
a Megatron-Bridge user meets the checks (``AutoBridge.to_megatron_provider()`` then ``provider.provide()``
on rank 0), so the first rule that fires is the error the user sees first:

1. ``TransformerConfig.__post_init__``: attention heads % TP, then query groups a multiple *or divisor* of
   TP (since core_v0.16.0 Megatron all-gathers QKV when there are fewer groups than ranks), EP on a model
   without experts;
2. the decoder block spec of PP stage 0 (``get_num_layers_to_build``): layers % PP;
3. ``GPTModel``: the vocabulary embedding (``VocabParallelEmbedding``: ``divide(vocab, tp)``, the checkpoint's
   unpadded vocabulary: Megatron-Bridge's providers keep ``should_pad_vocab=False``), then the decoder
   layers of stage 0 in order: a dense layer's MLP (``linear_fc1`` is ``2 x ffn`` wide for gated MLPs, then
   ``linear_fc2`` ``ffn``), then the first MoE layer: the bare ``num_moe_experts % ep_size`` assert, the
   routed experts on the expert-tensor-parallel group (its default size is the TP size, not 1: expert FFN
   ``2 x moe_ffn`` then ``moe_ffn`` by TP), then the shared experts (``2 x shared_ffn`` then ``shared_ffn``).

``divide()`` failures read ``{a} is not divisible by {b}`` (an ``AssertionError`` with a message, raised in
``megatron/core/utils.py``). Inside the decoder layers Megatron's ``build_module`` appends `` when
instantiating <Module>`` for each enclosing module built from a spec, so a layer's message names the chain
(``27648 is not divisible by 5 when instantiating ColumnParallelLinear when instantiating MLP when
instantiating TransformerLayer``); the experts assert has no text of its own, so its message is the chain alone
(`` when instantiating MoELayer when instantiating TransformerLayer``).
"""

from __future__ import annotations

import numpy as np

from dashboard import frameworks as _frameworks
from dashboard.rules import executed as X
from dashboard.rules.executed import DIVIDE
from dashboard.rules import sources as S
from dashboard.rules.common import Ctx, Rule, not_multiple

FW = "megatron-core"
V = ">=0.16.0"
#: Releases whose conformance tables reproduce these rules.
EXECUTED: tuple[str, ...] = _frameworks.get(FW).executed_releases
#: Megatron's ``build_module`` re-raises an exception from a module built from a spec with
#: `` when instantiating <Module>`` appended, once per enclosing spec-built module (spec_utils.py:119):
#: the message the user reads names the chain, innermost first.
LAYER = " when instantiating TransformerLayer"
MLP_CHAIN = " when instantiating MLP" + LAYER
MOE_CHAIN = " when instantiating MoELayer" + LAYER
REPO = "https://github.com/NVIDIA/Megatron-LM/blob"
SRC = f"{REPO}/core_v0.16.1/"

TCONFIG = "megatron/core/transformer/transformer_config.py"
SITES = {
    "heads": {"0.16.1": f"{TCONFIG}:925"},
    "kv": {"0.16.1": f"{TCONFIG}:943"},
    "ep_without_moe": {"0.16.1": f"{TCONFIG}:1049"},
    "pipeline": {"0.16.1": "megatron/core/transformer/transformer_block.py:156"},
    "divide": {"0.16.1": "megatron/core/utils.py:468"},
    "experts": {"0.16.1": "megatron/core/transformer/moe/moe_layer.py:101"},
}

#: Rules no judged cell of an executed release reaches first: their site was read from that release's
#: source (evidence ``source``); ``tests/rules/test_conformance_megatron.py`` keeps this list exact.
#: In 0.16.1 the catalog reaches four rules first (heads, query groups, pipeline split, vocabulary): every
#: catalog MLP, expert and shared-expert width divides the TP sizes whose heads divide, and every expert
#: count is a multiple of EP 2/4/8 (data/conformance/README.md shows the probe cells that raise the others).
NOT_SEEN_FIRST: dict[str, frozenset[str]] = X.not_seen_first(FW, EXECUTED)


def _url_of(release: str, path: str, line: str) -> str:
    return f"{REPO}/core_v{release}/{path}#L{line}"


# ----------------------------------------------------------------------------------------------------
# predicates
# ----------------------------------------------------------------------------------------------------


def _L(ctx: Ctx) -> np.ndarray:
    return ctx.i("num_hidden_layers")


def _stage0_layers(ctx: Ctx) -> np.ndarray:
    """Decoder layers PP stage 0 builds (``num_layers / pp``; the pipeline rule refuses uneven splits)."""
    return _L(ctx) // max(ctx.pp, 1)


def _dense_first(ctx: Ctx) -> np.ndarray:
    """Decoder layer 0 has a dense MLP: not MoE, or MoE with ``num_dense_layers`` leading dense layers."""
    return ctx.has("intermediate_size") & (~ctx.is_moe() | ctx.has("num_dense_layers"))


def _moe_on_stage0(ctx: Ctx) -> np.ndarray:
    """PP stage 0 holds a MoE layer (its layers go beyond the leading dense ones; assumed when the record
    has no layer count)."""
    beyond = ~ctx.has("num_hidden_layers") | (_stage0_layers(ctx) > ctx.i("num_dense_layers"))
    return ctx.is_moe() & ctx.has("num_experts") & beyond


def _gated(ctx: Ctx) -> np.ndarray:
    return ctx.bool_col("mlp_gated")


def heads(ctx: Ctx):
    h = ctx.i("num_attention_heads")
    return ctx.has("num_attention_heads") & not_multiple(h, ctx.tp), {"h": h, "tp": ctx.tp}


def kv_groups(ctx: Ctx):
    kv = np.maximum(ctx.i("num_key_value_heads"), 1)
    fire = ctx.has("num_key_value_heads") & ~ctx.is_mla() & not_multiple(kv, ctx.tp) & not_multiple(ctx.tp, kv)
    return fire, {"kv": kv, "tp": ctx.tp}


def ep_without_moe(ctx: Ctx):
    if ctx.ep <= 1:
        return np.zeros(ctx.n, dtype=bool), {}
    return ~ctx.is_moe() & ctx.has("num_attention_heads"), {}


def pipeline(ctx: Ctx):
    if ctx.pp <= 1:
        return np.zeros(ctx.n, dtype=bool), {}
    L = _L(ctx)
    return ctx.has("num_hidden_layers") & ((L % ctx.pp) != 0), {"layers": L, "pp": np.full_like(L, ctx.pp)}


def vocab(ctx: Ctx):
    v = ctx.i("vocab_size")
    return ctx.has("vocab_size") & not_multiple(v, ctx.tp), {"a": v, "b": ctx.tp}


def dense_fc1(ctx: Ctx):
    inter = ctx.i("intermediate_size")
    width = np.where(_gated(ctx), 2 * inter, inter)
    return _dense_first(ctx) & not_multiple(width, ctx.tp), {"a": width, "b": ctx.tp}


def dense_fc2(ctx: Ctx):
    """linear_fc2 is built after linear_fc1: fires only where fc1 passed."""
    inter = ctx.i("intermediate_size")
    return _dense_first(ctx) & ~dense_fc1(ctx)[0] & not_multiple(inter, ctx.tp), {"a": inter, "b": ctx.tp}


def experts_ep(ctx: Ctx):
    if ctx.ep <= 1:
        return np.zeros(ctx.n, dtype=bool), {}
    n = ctx.i("num_experts")
    return _moe_on_stage0(ctx) & ((n % ctx.ep) != 0), {}


def _etp(ctx: Ctx) -> np.ndarray:
    """Expert-tensor-parallel size: Megatron's default, the TP size (also under expert parallelism)."""
    return ctx.tp


def expert_fc1(ctx: Ctx):
    m = ctx.i("moe_intermediate_size")
    width = np.where(_gated(ctx), 2 * m, m)
    return _moe_on_stage0(ctx) & ctx.has("moe_intermediate_size") & not_multiple(width, _etp(ctx)), \
        {"a": width, "b": _etp(ctx)}


def expert_fc2(ctx: Ctx):
    m = ctx.i("moe_intermediate_size")
    fire = _moe_on_stage0(ctx) & ctx.has("moe_intermediate_size") & ~expert_fc1(ctx)[0] & not_multiple(m, _etp(ctx))
    return fire, {"a": m, "b": _etp(ctx)}


def shared_fc1(ctx: Ctx):
    s = ctx.i("shared_expert_intermediate_size")
    width = np.where(_gated(ctx), 2 * s, s)
    return _moe_on_stage0(ctx) & ctx.has("shared_expert_intermediate_size") & not_multiple(width, ctx.tp), \
        {"a": width, "b": ctx.tp}


def shared_fc2(ctx: Ctx):
    s = ctx.i("shared_expert_intermediate_size")
    fire = _moe_on_stage0(ctx) & ctx.has("shared_expert_intermediate_size") & ~shared_fc1(ctx)[0] \
        & not_multiple(s, ctx.tp)
    return fire, {"a": s, "b": ctx.tp}


# ----------------------------------------------------------------------------------------------------
# rules, in Megatron-Core's order
# ----------------------------------------------------------------------------------------------------


def _rule(rid: str, kind: str, site_key: str, condition: str, message: str, predicate, *, exc: str,
          needs: tuple[str, ...] = (), note: str = "", versions: str = V) -> Rule:
    """A Megatron-Core rule (:func:`dashboard.rules.executed.executed_rule`) raised at ``SITES[site_key]``."""
    return X.executed_rule(FW, EXECUTED, NOT_SEEN_FIRST, _url_of, rid, kind, condition, message, SITES[site_key],
                           predicate, exc_type=exc, needs=needs, note=note, versions=versions)


RULES: list[Rule] = [
    _rule("megatron.attention_heads.v016", "attention_heads", "heads",
          "TransformerConfig.__post_init__: num_attention_heads % tensor_model_parallel_size != 0 (MLA too)",
          "num_attention_heads ({h}) must be a multiple of tensor_model_parallel_size ({tp}).", heads,
          exc="ValueError", needs=("num_attention_heads",)),
    _rule("megatron.kv_heads.v016", "kv_heads", "kv",
          "TransformerConfig.__post_init__ (since core_v0.16.0): num_query_groups % tp != 0 and "
          "tp % num_query_groups != 0 (fewer groups than ranks: QKV is all-gathered and sliced); not MLA",
          "num_query_groups ({kv}) must be a multiple or divisor of tensor_model_parallel_size ({tp}).",
          kv_groups, exc="ValueError", needs=("num_key_value_heads",)),
    _rule("megatron.moe_experts.ep_without_moe", "moe_experts", "ep_without_moe",
          "TransformerConfig.__post_init__: expert_model_parallel_size > 1 on a model without experts",
          "num_moe_experts must be non None to use expert-parallel.", ep_without_moe, exc="ValueError"),
    _rule("megatron.pipeline_layers.v016", "pipeline_layers", "pipeline",
          "get_num_layers_to_build (PP stage 0's block spec; no uneven first/last stage configured): "
          "num_layers % pipeline_model_parallel_size != 0",
          "num_layers should be divisible by pipeline_model_parallel_size", pipeline, exc="AssertionError",
          versions=">=0.16.0,<0.17.0",
          note="From core_v0.17.0 the text is num_layers={layers} should be divisible by "
               "config.pipeline_model_parallel_size={pp} (rule megatron.pipeline_layers.v017)."),
    _rule("megatron.vocab.embedding", "vocab", "divide",
          "GPTModel embedding (VocabParallelEmbedding): divide(vocab_size, tp); the checkpoint's vocabulary, "
          "unpadded (Megatron-Bridge providers: should_pad_vocab=False)",
          DIVIDE, vocab, exc="AssertionError", needs=("vocab_size",),
          note="Megatron-LM's own training front end pads the vocabulary to a multiple of 128 x TP "
               "(--make-vocab-size-divisible-by), where this never fires."),
    _rule("megatron.mlp_intermediate.fc1", "mlp_intermediate", "divide",
          "decoder layer 0 dense MLP: linear_fc1 ColumnParallelLinear divide(ffn x 2 if gated else ffn, tp)",
          DIVIDE + " when instantiating ColumnParallelLinear" + MLP_CHAIN, dense_fc1, exc="AssertionError"),
    _rule("megatron.mlp_intermediate.fc2", "mlp_intermediate", "divide",
          "decoder layer 0 dense MLP: linear_fc2 RowParallelLinear divide(ffn, tp)",
          DIVIDE + " when instantiating RowParallelLinear" + MLP_CHAIN, dense_fc2, exc="AssertionError"),
    _rule("megatron.moe_experts.v016", "moe_experts", "experts",
          "first MoE layer of PP stage 0 (BaseMoELayer): bare assert num_moe_experts % "
          "expert_model_parallel_size == 0 (the message is build_module's chain alone)",
          MOE_CHAIN, experts_ep, exc="AssertionError"),
    _rule("megatron.moe_intermediate.fc1", "moe_intermediate", "divide",
          "routed experts (SequentialMLP, expert-tensor-parallel size = TP by default): linear_fc1 "
          "divide(moe_ffn x 2 if gated else moe_ffn, tp)",
          DIVIDE + " when instantiating ColumnParallelLinear when instantiating SequentialMLP" + MOE_CHAIN,
          expert_fc1, exc="AssertionError"),
    _rule("megatron.moe_intermediate.fc2", "moe_intermediate", "divide",
          "routed experts: linear_fc2 divide(moe_ffn, tp)",
          DIVIDE + " when instantiating RowParallelLinear when instantiating SequentialMLP" + MOE_CHAIN,
          expert_fc2, exc="AssertionError"),
    _rule("megatron.moe_intermediate.shared_fc1", "moe_intermediate", "divide",
          "shared experts (SharedExpertMLP): linear_fc1 divide(shared_ffn x 2 if gated else shared_ffn, tp)",
          DIVIDE + " when instantiating ColumnParallelLinear when instantiating SharedExpertMLP" + MOE_CHAIN,
          shared_fc1, exc="AssertionError"),
    _rule("megatron.moe_intermediate.shared_fc2", "moe_intermediate", "divide",
          "shared experts: linear_fc2 divide(shared_ffn, tp)",
          DIVIDE + " when instantiating RowParallelLinear when instantiating SharedExpertMLP" + MOE_CHAIN,
          shared_fc2, exc="AssertionError"),
    Rule(id="megatron.pipeline_layers.v017", framework=FW, kind="pipeline_layers", versions=">=0.17.0",
         condition="get_num_layers_to_build: num_layers % pipeline_model_parallel_size != 0",
         message="num_layers={layers} should be divisible by config.pipeline_model_parallel_size={pp}",
         source_url=S.MEGATRON_TBLOCK_HEAD, predicate=pipeline, exc_type="AssertionError",
         note="Read from source (Megatron-LM HEAD d98e8a64, transformer_block.py:156-158; changed in "
              "core_v0.17.0, commit bb451db2); not executed."),
]


def rules() -> list[Rule]:
    """This module's rules, in evaluation order."""
    return RULES


__all__ = ["RULES", "FW", "V", "EXECUTED", "NOT_SEEN_FIRST"]
