"""The interface every serving framework implements, and the value of one parallel layout.

A framework is one object (:class:`Framework`), found by name in :data:`dashboard.frameworks.REGISTRY`.
Code outside ``dashboard/frameworks/`` asks the object and never branches on the framework's name:
its label, its releases, how it shards attention, KV heads and experts, its KV-cache budget, its launch
flags and its context limit all live in the framework's own package.

Pure: no I/O at import, no Panel. This module imports nothing from ``dashboard`` but
:mod:`dashboard.sharding`, so any module may import it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Mapping

import numpy as np

from dashboard import sharding


@dataclass(frozen=True)
class Layout:
    """One parallel layout of one replica set, as the user launches it.

    Fields
    ------
    tp : tensor-parallel size (ranks per pipeline stage), ``1 .. sharding.MAX_PARALLEL``.
    pp : pipeline stages.
    dp : data-parallel size: replicas (vLLM ``--data-parallel-size``), or attention-DP groups inside the
        TP group when ``dp_attention`` is set (SGLang ``--attn-dp-size`` / ``--dp-size`` with
        ``--enable-dp-attention``; TensorRT-LLM attention-DP).
    ep : expert-parallel size as given (SGLang ``--ep-size``, TensorRT-LLM ``--ep_size``, Megatron
        ``expert_model_parallel_size``); 1 = off.
    dp_attention : attention data-parallel is on.
    vision_dp : the vision encoder runs data-parallel (vLLM ``--mm-encoder-tp-mode data``).
    expert_parallel : vLLM ``--enable-expert-parallel`` (its EP group spans TP x DP ranks).

    Derived sizes (attention-TP, MoE-TP, the EP group) depend on the framework: ask it
    (``framework.attention_tp(layout, ...)``).

    Raises ValueError / TypeError (from :func:`dashboard.sharding.parallel_size`) for a size that is not
    a whole number in range.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    dp_attention: bool = False
    vision_dp: bool = False
    expert_parallel: bool = False

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "ep"):
            object.__setattr__(self, name, sharding.parallel_size(getattr(self, name), name))
        for name in ("dp_attention", "vision_dp", "expert_parallel"):
            object.__setattr__(self, name, bool(getattr(self, name)))

    @property
    def gpus(self) -> int:
        """GPUs the layout occupies: ``tp x pp x dp`` (attention-DP groups live inside TP, so they add
        none)."""
        return self.tp * self.pp * (1 if self.dp_attention else self.dp)

    def with_(self, **changes: Any) -> "Layout":
        """A copy with ``changes`` applied (validated again)."""
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (keyword arguments of the older API)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def of(cls, layout: "Layout | None" = None, **kw: Any) -> "Layout":
        """``layout`` itself, or one built from the older keyword arguments (unknown keys ignored,
        ``None`` values meaning the default)."""
        if isinstance(layout, Layout):
            return layout
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in kw.items() if k in names and v is not None})


class Framework:
    """One serving framework: everything the product knows about it.

    Subclasses (one per framework, each in its own package under ``dashboard/frameworks/``) set the
    identity below and override the concerns that differ from these defaults. Instances are stateless
    singletons: get one with :func:`dashboard.frameworks.get`.
    """

    # -- identity --------------------------------------------------------------------------------------
    #: Id used in URLs, tables, rule ids and the API (``"vllm"``).
    name: ClassVar[str] = ""
    #: Human label (``"vLLM"``).
    label: ClassVar[str] = ""
    #: Releases whose own code was run over the catalog by the conformance harness, oldest first
    #: (tables ``data/conformance/<table_key>.parquet``). Empty: rules read from source only.
    executed_releases: ClassVar[tuple[str, ...]] = ()
    #: Further platforms each executed release was run on, beyond its default table's (release -> platform
    #: ids of :data:`dashboard.gpus.PLATFORMS`; tables ``data/conformance/<platform>/<table_key>.parquet``).
    #: A platform is listed only once the rules are held to its table (tests/rules/test_conformance*.py):
    #: until then a verdict for a GPU of that platform is evidence ``source`` for that GPU.
    executed_platforms: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: Whether some of the framework's rules read the GPU platform (``Ctx.platform``: kernel and attention-backend
    #: selection): its grids are then computed per platform, the others' once for every GPU.
    platform_keyed_rules: ClassVar[bool] = False
    #: The name a release number follows in notices ("vLLM 0.22.0", "transformers 5.24.0"); the id when "".
    release_label: ClassVar[str] = ""

    def __repr__(self) -> str:
        return f"<Framework {self.name}>"

    # -- sharding: attention-TP, KV heads, experts ------------------------------------------------------
    # ONE definition per framework of how a layout splits heads and experts. Every method is vectorized:
    # ``tp, dp, ep`` int arrays (or scalars), ``dp_attention, expert_parallel`` bool arrays (or scalars),
    # ``arch`` an array of ``architectures[0]`` names (object/str; None = unknown), all broadcasting to
    # one shape N; results are int64 / bool numpy arrays of that shape. The rules engine's verdict
    # (:mod:`dashboard.rules`), the per-rank layout (:mod:`dashboard.layout`) and the memory model
    # (:mod:`dashboard.memory`) all call these, so their per-rank numbers are the same by construction.

    #: KV heads may be replicated (``tp % kv == 0``: each KV head on ``tp // kv`` ranks). vLLM / SGLang
    #: ``QKVParallelLinear`` (``num_kv_head_replicas = divide(tp, kv)``), TensorRT-LLM (duplicated),
    #: Megatron-Core >= 0.16 (``num_query_groups`` a multiple or divisor of TP).
    replicates_kv: ClassVar[bool] = True
    #: A replicated-KV cell is reported with status ``valid_replicated`` (frameworks whose rules say so).
    reports_kv_replication: ClassVar[bool] = False
    #: MLA (DeepSeek-V2/V3 style) caches the compressed latent, one copy on every attention rank (vLLM,
    #: SGLang, TensorRT-LLM); False: per-head K/V up-projected, split like the query heads.
    mla_latent: ClassVar[bool] = False
    #: A head count that does not divide its TP size is not split at all (every rank holds every head):
    #: transformers' TP plans, whose run does not check the heads (``colwise_gather_output``, plans that
    #: shard no attention, embedding-only plans). False: such a split is refused by the rules.
    uneven_heads_whole: ClassVar[bool] = False
    #: KV heads per rank rounded up (``ceil(kv / tp)``, TensorRT-LLM ``Attention``) instead of
    #: ``max(1, kv // tp)``.
    kv_heads_ceil: ClassVar[bool] = False
    #: Vision heads over TP: ``"divide"`` (``heads / tp`` each; a count that does not divide means the
    #: tower runs unsharded / data-parallel: every rank holds every head -- vLLM's MoonViT switches to
    #: data-parallel by itself, HF towers are not in the TP plan; the rules refuse the other towers) or
    #: ``"pad"`` (SGLang ``update_vit_attn_dummy_heads_config``: dummy heads up to a multiple of TP).
    vision_split: ClassVar[str] = "divide"
    #: DP-attention splits the TP group into ``dp`` attention groups, so ``dp`` must divide ``tp``
    #: (SGLang ``assert tp_size % attn_dp_size == 0``).
    attention_dp_groups: ClassVar[bool] = False
    #: Linear-attention / Mamba mixers split over the model file's attention-TP (SGLang hybrids build
    #: them on the attention-TP group: valid at TP 5 with attention-DP 5 in the executed table) instead
    #: of the full TP.
    linear_on_attention_tp: ClassVar[bool] = False

    def attention_tp(self, tp: Any, dp: Any = 1, dp_attention: Any = False, *, arch: Any = None,
                     release: str | None = None) -> np.ndarray:
        """Ranks the attention heads (query and KV) of one model are split over, per cell (int64 array).

        Default: the full ``tp`` (DP-attention is not a concept of the framework). ``arch`` and
        ``release`` matter for frameworks whose model files differ (SGLang)."""
        return np.asarray(tp, dtype=np.int64) + np.zeros(np.broadcast(np.asarray(tp), np.asarray(dp),
                                                                      np.asarray(dp_attention)).shape, np.int64)

    def kv_pool_tp(self, tp: Any, dp: Any = 1, dp_attention: Any = False, *, release: str | None = None) -> np.ndarray:
        """The TP size the framework sizes its KV-cache POOL with, per cell (int64). Default: the
        attention-TP of the layout (no model file involved). SGLang sizes its pool with
        ``get_attention_tp_size()`` whatever the model file does, so there the two can differ."""
        return self.attention_tp(tp, dp, dp_attention, release=release)

    def q_heads_per_rank(self, heads: Any, attn_tp: Any) -> np.ndarray:
        """Query heads each attention rank holds: ``heads // attn_tp`` (only meaningful when it divides;
        with :attr:`uneven_heads_whole`, every head when it does not)."""
        return self._split_count(heads, attn_tp)

    def _split_count(self, n: Any, t: Any) -> np.ndarray:
        n_, t_ = np.asarray(n, dtype=np.int64), np.maximum(np.asarray(t, dtype=np.int64), 1)
        if self.uneven_heads_whole:
            return np.where(n_ % t_ == 0, n_ // t_, n_)
        return n_ // t_

    def kv_heads_per_rank(self, kv: Any, attn_tp: Any, *, heads: Any = None, is_mla: Any = False) -> np.ndarray:
        """KV heads each attention rank stores in its KV cache (count, int64).

        ``kv`` is ``num_key_value_heads`` (>= 1; callers substitute the query heads when missing).
        GQA: ``max(1, kv // attn_tp)`` (replicated when ``attn_tp > kv``; vLLM ``QKVParallelLinear``),
        ``ceil(kv / attn_tp)`` with :attr:`kv_heads_ceil` (TensorRT-LLM), ``kv / attn_tp`` or every head
        with :attr:`uneven_heads_whole` (transformers). MLA: 1 (the latent) with :attr:`mla_latent`,
        else the up-projected per-head K/V, split as the query heads (``heads`` needed)."""
        kv_, t = np.maximum(np.asarray(kv, dtype=np.int64), 1), np.maximum(np.asarray(attn_tp, dtype=np.int64), 1)
        if self.kv_heads_ceil:
            gqa = -(-kv_ // t)
        elif self.uneven_heads_whole:
            gqa = np.where(kv_ % t == 0, kv_ // t, kv_)
        else:
            gqa = np.maximum(1, kv_ // t)
        mla = np.asarray(is_mla, dtype=bool)
        if not mla.any():
            return gqa
        alt = np.ones_like(gqa) if self.mla_latent else self.q_heads_per_rank(kv_ if heads is None else heads, t)
        return np.where(mla, alt, gqa)

    def kv_cache_heads_per_rank(self, kv: Any, attn_tp: Any) -> np.ndarray:
        """GQA KV heads per rank the memory model budgets (float64, NaN kept): ``ceil(kv / attn_tp)``,
        which is :meth:`kv_heads_per_rank` on every layout the framework accepts (``kv % t == 0`` or
        ``t % kv == 0``) and, on a layout it refuses, what an even split would need (never under-counts
        the unreplicated total). With :attr:`uneven_heads_whole`: ``kv / t`` when it divides, else
        every head."""
        kv_, t = np.asarray(kv, dtype=np.float64), np.asarray(attn_tp, dtype=np.float64)
        if self.uneven_heads_whole:
            return np.where(np.mod(kv_, t) == 0, kv_ / t, kv_)
        return np.ceil(kv_ / t)

    def kv_replicas(self, kv: Any, attn_tp: Any, *, heads: Any = None, is_mla: Any = False) -> np.ndarray:
        """Ranks (of one attention group) that hold each KV head (int64): ``attn_tp // kv`` when
        ``attn_tp > kv`` (1 otherwise); with :attr:`uneven_heads_whole` ``attn_tp`` where the heads are
        not split; MLA latent: ``attn_tp`` (every rank holds it), MLA per-head: as the query heads."""
        kv_, t = np.maximum(np.asarray(kv, dtype=np.int64), 1), np.maximum(np.asarray(attn_tp, dtype=np.int64), 1)
        if self.uneven_heads_whole:
            gqa = np.where(kv_ % t == 0, 1, t)
        else:
            gqa = np.where(t > kv_, t // kv_, 1)
        mla = np.asarray(is_mla, dtype=bool)
        if not mla.any():
            return gqa
        if self.mla_latent:
            alt = t + np.zeros_like(gqa)
        else:
            h = np.maximum(np.asarray(kv_ if heads is None else heads, dtype=np.int64), 1)
            alt = np.where(h % t == 0, 1, t) if self.uneven_heads_whole else np.ones_like(gqa)
        return np.where(mla, alt, gqa)

    def kv_replicated(self, kv: Any, attn_tp: Any, *, is_mla: Any = False) -> np.ndarray:
        """Whether the verdict reports the cell as ``valid_replicated`` (bool): GQA KV heads fewer than
        the attention ranks, for frameworks with :attr:`reports_kv_replication`."""
        kv_, t = np.asarray(kv, dtype=np.int64), np.asarray(attn_tp, dtype=np.int64)
        out = ~np.asarray(is_mla, dtype=bool) & (t > kv_)
        return out if self.reports_kv_replication else np.zeros(out.shape, dtype=bool)

    def kv_pool_heads_per_rank(self, kv: Any, tp: Any, dp: Any = 1, dp_attention: Any = False, *,
                               heads: Any = None, is_mla: Any = False, release: str | None = None) -> np.ndarray:
        """KV heads per rank the framework sizes its KV-cache pool for (int64): :meth:`kv_heads_per_rank`
        over :meth:`kv_pool_tp`. Equal to the attention shard's :meth:`kv_heads_per_rank` over
        :meth:`attention_tp` except where :meth:`kv_pool_tp` differs from the model file's attention-TP
        (SGLang DP-attention on a model file that shards attention over the full TP)."""
        return self.kv_heads_per_rank(kv, self.kv_pool_tp(tp, dp, dp_attention, release=release),
                                      heads=heads, is_mla=is_mla)

    def vision_heads_per_rank(self, vision_heads: Any, tp: Any, *, vision_dp: Any = False) -> tuple[np.ndarray, np.ndarray]:
        """``(real, dummy)`` vision heads per rank (int64 arrays). Data-parallel encoder (``vision_dp``)
        or a count that does not divide ``tp`` (``"divide"``): every head on every rank. ``"pad"``:
        ``pad_to_multiple(heads, tp) / tp`` slots per rank, the ones past the real heads dummies
        (``real`` counts the real heads of rank 0, the busiest)."""
        vh, t = np.asarray(vision_heads, dtype=np.int64), np.maximum(np.asarray(tp, dtype=np.int64), 1)
        dp_ = np.asarray(vision_dp, dtype=bool)
        if self.vision_split == "pad":
            per = sharding.pad_to_multiple(vh, t) // t
            real, dummy = np.minimum(per, vh), per - np.minimum(per, vh)
        else:
            whole = vh % t != 0
            real, dummy = np.where(whole, vh, vh // t), np.zeros_like(vh)
        return np.where(dp_, vh, real), np.where(dp_, 0, dummy)

    def vision_unsharded_when_uneven(self, arch: Any) -> np.ndarray:
        """Per cell (``arch``: ``architectures[0]`` names, or None): whether a vision tower whose heads do
        not divide TP runs unsharded (every head on every rank) instead of being refused. Default True:
        the tower is outside the framework's TP (transformers plans, TensorRT-LLM / Megatron HF towers);
        vLLM: only the towers that raise no TP error (MoonViT switches to data-parallel by itself,
        Gemma-4's unsharded HF tower)."""
        return np.ones(np.shape(arch), dtype=bool) if arch is not None else np.asarray(True)

    def linear_heads_split(self, n: Any, tp: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(per_rank, replicas)`` of linear-attention key/value heads or Mamba-2 groups over ``tp``
        (int64): ``n / tp`` each when it divides, else one per rank replicated on ``tp / n`` ranks
        (vLLM ``extra_groups_for_head_shards`` for Mamba-2 groups; TensorRT-LLM GDN key heads). Over the
        full TP group (DP-attention does not apply to these mixers here)."""
        n_, t = np.maximum(np.asarray(n, dtype=np.int64), 1), np.maximum(np.asarray(tp, dtype=np.int64), 1)
        rep = (n_ % t != 0) & (t % n_ == 0)
        return np.where(rep, 1, n_ // t), np.where(rep, t // n_, 1)

    def moe_tp(self, tp: Any, ep: Any = 1, expert_parallel: Any = False) -> np.ndarray:
        """TP degree inside one expert's MLP (int64): ``tp`` without expert parallelism (``ep > 1`` or
        ``expert_parallel``), 1 under it (default: vLLM / Megatron, the EP group spans the TP ranks)."""
        t = np.asarray(tp, dtype=np.int64)
        on = np.asarray(expert_parallel, dtype=bool) | (np.asarray(ep) > 1)
        return np.where(on, 1, t)

    def ep_size(self, tp: Any, dp: Any = 1, ep: Any = 1, expert_parallel: Any = False) -> np.ndarray:
        """Expert-parallel group size (int64): the given ``ep`` when > 1; ``tp x dp`` under vLLM's
        ``--enable-expert-parallel``; 1 without EP."""
        t, d, e = (np.asarray(x, dtype=np.int64) for x in (tp, dp, ep))
        return np.where(e > 1, e, np.where(np.asarray(expert_parallel, dtype=bool), t * d, 1)).astype(np.int64)

    def sizes(self, layout: "Layout", *, arch: str | None = None, release: str | None = None) -> dict[str, int]:
        """The derived sizes of one :class:`Layout` (scalars): ``attn_tp``, ``kv_pool_tp``, ``moe_tp``,
        ``ep_size``."""
        L = layout
        return {
            "attn_tp": int(self.attention_tp(L.tp, L.dp, L.dp_attention, arch=None if arch is None else np.asarray([arch], dtype=object), release=release).ravel()[0]),
            "kv_pool_tp": int(self.kv_pool_tp(L.tp, L.dp, L.dp_attention, release=release).ravel()[0]),
            "moe_tp": int(self.moe_tp(L.tp, L.ep, L.expert_parallel)),
            "ep_size": int(self.ep_size(L.tp, L.dp, L.ep, L.expert_parallel)),
        }

    # -- rules -------------------------------------------------------------------------------------------
    #: Modules holding this framework's rules (each has ``rules() -> list[Rule]``), in evaluation order.
    #: A module may hold the rules of several frameworks (transformers' two); :meth:`rules` keeps this
    #: framework's. Imported lazily (not at import of the package: rule 5 of the brief).
    rule_modules: ClassVar[tuple[str, ...]] = ()
    #: Rule-id prefix (``"vllm"`` in ``vllm.kv_heads``); the id when empty.
    rule_prefix: ClassVar[str] = ""
    #: Source links of a release: ``str.format`` pattern with ``{release}`` (or a repository ``.../blob``
    #: the rules' own paths follow); "" when the rules carry their own links.
    source_repo_url: ClassVar[str] = ""
    #: The rule page lists the real library runs the rules were checked against (``verified_with``).
    lists_verified_runs: ClassVar[bool] = False

    @property
    def rule_id_prefix(self) -> str:
        """The prefix of this framework's rule ids (``"tf_native"`` for ``tf_native.kv_heads``)."""
        return self.rule_prefix or self.name

    def rules(self) -> list:
        """This framework's rules (:class:`dashboard.rules.common.Rule`), every release, in evaluation
        order (the order the framework reaches them). Built once per module (cached there)."""
        import importlib

        return [r for m in self.rule_modules for r in importlib.import_module(m).rules() if r.framework == self.name]

    # -- suggestions (dashboard.rules.verdict) ----------------------------------------------------------
    #: How to switch expert parallelism off, after "launch it without expert parallelism ".
    ep_off_hint: ClassVar[str] = "(ep = 1)."
    def dp_attention_groups(self, tp: int) -> list[int]:
        """Attention-DP group counts worth suggesting at TP ``tp``, tried in order; [] when the framework
        has no attention-DP."""
        return []

    def dp_attention_suggestion(self, version: "str | None", tp: int, dp: int) -> str:
        """The suggestion for a layout valid at ``tp`` with attention-DP over ``dp`` groups."""
        return f"Valid at tp={tp} with attention data-parallel over {dp} groups."

    def expert_parallel_suggestion(self, tp: int, dp: int, valid_with) -> "str | None":
        """The suggestion to turn expert parallelism on, or None; ``valid_with(**layout_changes) -> bool``
        says whether the layout with those changes is valid."""
        if tp > 1 and valid_with(ep=tp):
            return f"Valid at tp={tp} with expert parallelism (ep={tp}): experts are not TP-sliced."
        return None

    # -- memory: KV-cache budget, reserve, weights ------------------------------------------------------
    #: KV-cache block granularity in tokens (vLLM ``block_size`` 16, TensorRT-LLM ``tokens_per_block`` 32,
    #: SGLang page size 1, transformers continuous batching ``block_size`` 256).
    kv_tokens_per_block: ClassVar[int] = 1
    #: The KV-cache budget rule in words (shown by the dashboard); see :meth:`kv_budget`.
    kv_budget_rule: ClassVar[str] = "total - weights - activation - non-torch (no pre-allocated pool)"
    #: Default fraction of the budget rule (vLLM ``gpu_memory_utilization``, TensorRT-LLM
    #: ``free_gpu_memory_fraction``, ...); ``None``: computed per GPU (SGLang ``mem_fraction_static``).
    default_mem_fraction: ClassVar[float | None] = 1.0
    #: MLA models: the cache holds the compressed latent ``kv_lora_rank + qk_rope_head_dim`` per layer on every
    #: rank (True), or the up-projected per-head K and V of the local heads (False: transformers, Megatron).
    caches_mla_latent: ClassVar[bool] = False
    #: A float32 checkpoint stays float32 (True), or is loaded in 16-bit (the serving engines).
    keeps_fp32_weights: ClassVar[bool] = False
    #: The vocabulary of the vocab-parallel embedding / LM head is padded to this multiple (1: not padded).
    vocab_pad_multiple: ClassVar[int] = 1
    #: The rotary cos/sin cache (``max_position_embeddings x rotary dim``, in the weights' 16-bit dtype, not split
    #: by TP) is allocated with the model and counted in the weights (True); False: not charged.
    charges_rope_cache: ClassVar[bool] = False
    #: Without expert parallelism the routed experts are split over ``tp x dp`` ranks (MoE-TP flattened across
    #: DP, vLLM ``FusedMoEParallelConfig.make``), instead of the generic ``EP = ep, MoE-TP = tp // ep``.
    moe_tp_spans_dp: ClassVar[bool] = False
    #: The per-architecture weight-layout tables of :mod:`dashboard.memory.params` apply (read from vLLM 0.33.0:
    #: padded MoE intermediate, block-padded shared MLP, replicated dense MLP, vision-heads DP fallback).
    applies_architecture_weight_quirks: ClassVar[bool] = False
    #: Release the memory rules were read from (``engine_version=None`` means it); ``None``: no
    #: version-dependent memory rule.
    memory_rules_release: ClassVar[str | None] = None
    #: The KV-capacity rule was checked against logged runs (``data/kv_oracle_summary.csv``).
    kv_oracle_checked: ClassVar[bool] = False
    #: ``(max_num_seqs, max_num_batched_tokens)`` the activation peak is sized for, when the framework fixes
    #: it; ``None``: the scheduler limits given (vLLM's defaults).
    profile_batch: ClassVar[tuple[int, int] | None] = None
    #: Parts of :func:`dashboard.memory.memory_breakdown` the reserve is made of, with the ``capacity()`` key of each.
    reserve_parts: ClassVar[tuple[tuple[str, str], ...]] = (
        ("activation peak", "activation_bytes_per_gpu"), ("non-torch", "non_torch_bytes_per_gpu"))

    def kv_budget(self, b: dict[str, Any]) -> dict[str, Any]:
        """KV-cache budget per GPU under the framework's rule.

        ``b`` (arrays broadcast to ``(models, layouts)``, bytes per GPU): ``memory_bytes`` (float M),
        ``weights``, ``activation``, ``non_torch``, ``fraction`` (the knob, or None for the default), and
        for the engines that need them ``c`` (model columns), ``t`` (TP, float (1, layouts)), ``tp``, ``pp``,
        ``dp``, ``dp_attention``, ``version`` (tuple) and ``engine_version`` (text or None).

        Returns ``{"budget", "reserve", "fraction"}`` and optionally ``"cuda_graph"`` (bytes per GPU).
        Default (no pre-allocated pool, the cache grows until out-of-memory: transformers native TP,
        Megatron-Core): ``(M - weights - activation - non_torch) x fraction``, reserve ``activation + non_torch``.
        """
        act, nt = b["activation"], b["non_torch"]
        return {"budget": (b["memory_bytes"] - b["weights"] - act - nt) * b["fraction"], "reserve": act + nt,
                "fraction": b["fraction"]}

    def kv_pool_capacity(self, b: dict[str, Any]) -> dict[str, Any] | None:
        """Tokens / sequences / blocks of a KV pool whose allocator is not one page per token (vLLM's hybrid KV
        manager), or ``None`` (default): the per-token rule of :mod:`dashboard.memory.capacity`."""
        return None

    def breakdown_reserve(self, cap: Any, value: Any) -> list[tuple[str, float]]:
        """The reserve parts of one :func:`dashboard.memory.capacity` result ``cap``, bytes per GPU, for
        :func:`dashboard.memory.memory_breakdown`; ``value(key)`` reads a key as a finite float (0 otherwise).
        Default: :attr:`reserve_parts`."""
        return [(part, value(key)) for part, key in self.reserve_parts]

    # -- hardware dtypes ---------------------------------------------------------------------------------
    def dtype_refusal(self, gpu: Any, weight_kind: str, kv_dtype: str, *, explicit: bool = True) -> str:
        """Why the framework cannot run ``weight_kind`` weights / ``kv_dtype`` KV cache on ``gpu`` (a
        :class:`dashboard.gpus.GPU`), '' when it can or the GPU table does not say. ``explicit``: the weight
        dtype was asked for. Default: the hardware rule of :func:`dashboard.gpus.dtype_refusal`."""
        from dashboard import gpus

        return gpus.dtype_refusal(gpu, weight_kind, kv_dtype)

    # -- GPU families ----------------------------------------------------------------------------------
    #: Where the framework's supported-hardware facts come from (pinned docs page or source URL); '' when
    #: the framework states none (then nothing is refused).
    platform_source_url: ClassVar[str] = ""

    def platform_refusal(self, gpu: Any) -> str:
        """Why the framework does not run at all on ``gpu`` (a :class:`dashboard.gpus.GPU`): its vendor /
        AMD LLVM target is not one the framework builds for, or its CUDA compute capability is below the
        framework's minimum. '' when it runs there, and always '' for a card given by its memory only
        (``"other:<GiB>"``: vendor and capability unknown) or a framework without known facts. Default: ''
        (transformers, Megatron-Core: they run wherever PyTorch runs)."""
        return ""

    # -- parallel layouts ------------------------------------------------------------------------------
    #: Attention-DP groups live inside the TP group, so they add no GPUs (SGLang DP-attention,
    #: TensorRT-LLM attention-DP); False: ``dp`` counts replicas.
    attention_dp_in_tp: ClassVar[bool] = False
    #: Attention-DP always spans the whole TP group (TensorRT-LLM ``enable_attention_dp``: attn-DP = TP).
    attention_dp_whole_tp: ClassVar[bool] = False
    #: How expert parallelism is asked for: ``"flag"`` (vLLM ``--enable-expert-parallel``, the EP group is
    #: TP x DP), ``"size"`` (an EP size, SGLang ``--ep-size`` / TensorRT-LLM ``--ep_size`` / Megatron), or
    #: ``""`` (none).
    expert_parallel_mode: ClassVar[str] = ""
    #: The EP size must divide TP (TensorRT-LLM ``moe_tp_size = tp_size // moe_ep_size``).
    ep_divides_tp: ClassVar[bool] = False

    def gpu_count(self, lay: "Layout | dict") -> int:
        """GPUs a layout occupies: TP x PP x DP, where attention-DP groups inside the TP group
        (:attr:`attention_dp_in_tp`) add none. ``lay``: a :class:`Layout` or a dict with ``tp, pp, dp``
        (and ``dp_attention``)."""
        get = lay.get if isinstance(lay, dict) else (lambda k, d=None: getattr(lay, k, d))
        n = int(get("tp")) * int(get("pp"))
        if not (get("dp_attention") and self.attention_dp_in_tp):
            n *= int(get("dp"))
        return n

    def ep_group(self, lay: "Layout | dict") -> int:
        """The expert-parallel size the framework uses: the EP size as given, or for
        :attr:`expert_parallel_mode` ``"flag"`` with the flag on, TP x DP."""
        get = lay.get if isinstance(lay, dict) else (lambda k, d=None: getattr(lay, k, d))
        if self.expert_parallel_mode == "flag" and get("expert_parallel"):
            return int(get("tp")) * int(get("dp"))
        return get("ep")

    def rule_ep(self, ep: int) -> dict[str, Any]:
        """The rules' ``ep`` / ``expert_parallel`` for one EP control of size ``ep`` (the dashboard's): an
        EP flag framework turns the flag on for ``ep > 1`` and takes ``ep=1``; the others take the size."""
        if self.expert_parallel_mode == "flag":
            return {"ep": 1, "expert_parallel": int(ep) > 1}
        return {}

    def layout_rows(self, tp: int, pp: int, dp: int, ep_on: bool, *, release: str | None = None) -> list[tuple]:
        """The planner's layouts at one (tp, pp, dp) with expert parallelism ``ep_on``: tuples
        ``(tp, pp, dp, attn_dp, ep, expert_parallel, r_dp, r_dp_attention, r_ep, r_expert_parallel)``
        (see :func:`dashboard.planner.enumerate_layouts`). Default: EP = TP when on (more than one rank);
        attention-DP as :meth:`attention_dp_sizes` gives."""
        if ep_on and tp == 1:
            return []
        ep = tp if ep_on else 1
        rows = [(tp, pp, dp, 1, ep, ep_on, dp, False, ep, False)]
        if tp > 1:
            for d in self.attention_dp_sizes(tp, dp, release=release):
                rows.append((tp, pp, dp, d, ep, ep_on, d, True, ep, False))
        return rows

    def attention_dp_sizes(self, tp: int, dp: int, *, release: str | None = None) -> list[int]:
        """Attention-DP sizes the planner enumerates at TP ``tp`` (> 1) with ``dp`` replicas under ``release``
        (None: the newest); none by default."""
        return []

    # -- rules -------------------------------------------------------------------------------------------
    #: URL / state parameter naming the release whose rules apply (``"vllm_version"``); "" = current rules.
    version_param: ClassVar[str] = ""

    # -- memory: KV-cache budget, reserve, weights ------------------------------------------------------
    #: KV-cache block size in tokens the start-up check rounds a sequence to (vLLM 16; else 1).
    kv_block_tokens: ClassVar[int] = 1
    #: ``--dtype auto`` casts a bfloat16 checkpoint to a dtype the GPU has (vLLM); False: refused.
    auto_dtype_fallback: ClassVar[bool] = False

    def memory_refusal(self, *, weights: float, budget: float, ctx: int, kv_tok: float, tokens: float,
                       frac: float, seq_group: float) -> str:
        """The planner's start-up refusal when the KV budget is <= 0 or holds less than one ``ctx``-token
        sequence (bytes per GPU; '' when it starts). Raises NotImplementedError where the planner does
        not plan the framework."""
        raise NotImplementedError(f"{self.name} has no start-up memory messages")

    def memory_issue(self, req: Any, release: str | None, cap: dict) -> Any:
        """``tp-planner check``'s memory refusal in the engine's words (an ``Issue``), ``None`` when it
        starts, or ``NotImplemented`` for the generic wording (:func:`dashboard.check.memory_issue`)."""
        return NotImplemented

    # -- launch: flags, scheduler defaults, commands ----------------------------------------------------
    #: The launch flags the planner models: key -> spellings (first = the one corrected commands use).
    #: Empty: no server command (``tp-planner check`` flags are written instead).
    launch_flags: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: Long flags also take ``_`` for ``-`` (vLLM's ``FlexibleArgumentParser``).
    flag_underscores: ClassVar[bool] = False
    #: The launch command's first positional argument is the MODEL (``vllm serve MODEL``).
    positional_model: ClassVar[bool] = False
    #: Name of this framework's launch-flag specs, ``data/flags/<flag_spec_name>-<release>.json`` (written
    #: by ``python -m conformance flags`` from the release's own parser); "" = :attr:`name`.
    flag_spec_name: ClassVar[str] = ""

    def flag_spec(self, release: str | None) -> dict | None:
        """The serve command's flags as ``release``'s own parser builds them (:mod:`dashboard.flagspec`);
        None when no spec was written for that release."""
        from dashboard import flagspec

        return flagspec.load(self.flag_spec_name or self.name, release)

    def flag_spec_releases(self) -> list[str]:
        """Releases with a launch-flag spec, oldest first."""
        from dashboard import flagspec

        return flagspec.releases(self.flag_spec_name or self.name)

    #: The context-length flag named in ``tp-planner check``'s conditions.
    context_flag: ClassVar[str] = "--context-length"
    #: A replica larger than a node spreads its ranks evenly over its nodes (``--nnodes``); the text says
    #: who does (``"vLLM --nnodes"``). "" = fills each node first (TensorRT-LLM ``mpirun``).
    even_node_spread: ClassVar[str] = ""

    def launch_layout(self, launch: Any) -> dict[str, Any]:
        """``tp, pp, dp, ep, dp_attention, expert_parallel, vision_dp`` of a parsed launch command
        (:class:`dashboard.launch.Launch`; absent flags take the defaults)."""
        return dict(tp=launch.tp or 1, pp=launch.pp or 1, dp=launch.dp or 1, ep=launch.ep or 1,
                    dp_attention=launch.dp_attention, expert_parallel=launch.expert_parallel,
                    vision_dp=launch.vision_dp)

    def launch_replicas(self, launch: Any) -> int:
        """Whole replicas a launch command keeps as written next to attention-DP (1 by default)."""
        return 1

    def launch_notes(self, launch: Any) -> list[str]:
        """Notes on how a parsed launch command was read (conflicting flags)."""
        return []

    def layout_flags(self, lay: dict[str, Any], *, version: str | None = None, keep_vision: bool = False,
                     replicas: int = 1) -> list[str]:
        """The flags that spell layout ``lay`` for this framework (defaults left out); none by default."""
        return []

    def tp_pp_flags(self, lay: dict[str, Any]) -> tuple[list[str], int, int, int, int]:
        """The start of :meth:`layout_flags`: the TP flag, and the PP flag past one stage, in the first
        spellings of :attr:`launch_flags`; with ``lay``'s ``tp, pp, dp, ep`` (a missing or empty size is 1)."""
        f = self.launch_flags
        tp, pp, dp, ep = (int(lay.get(k) or 1) for k in ("tp", "pp", "dp", "ep"))
        out = [f["tp"][0], str(tp)]
        if pp > 1:
            out += [f["pp"][0], str(pp)]
        return out, tp, pp, dp, ep

    def launch_head(self, model: str) -> list[str] | None:
        """The start of a launch command serving ``model`` (``["vllm", "serve", model]``); None when the
        framework has no server command."""
        return None

    def kv_cache_flag(self, kv_dtype: str) -> str:
        """The ``--kv-cache-dtype`` value for the planner's KV dtype (``fp8`` / ``auto``)."""
        return "fp8" if str(kv_dtype).lower().startswith("fp8") else "auto"

    def plan_commands(self, row: Any, model_id: str, *, gpus_per_node: int, context_len: int, kv_dtype: str,
                      release: str | None) -> tuple[str, ...]:
        """The planner's launch command(s) for one accepted layout (see
        :func:`dashboard.planner.launch_commands`). Raises NotImplementedError for a framework the
        planner does not plan."""
        raise NotImplementedError(f"{self.name} has no launch commands")

    def scheduler_cap(self, gpu: Any, tokens_per_gpu: Any, context_len: int, groups: Any) -> Any:
        """Concurrent sequences the scheduler runs per replica by default (an array over layouts, or a
        number): the planner caps the KV capacity by it. Raises NotImplementedError where not modelled."""
        raise NotImplementedError(f"{self.name} has no scheduler default")

    def check_request_layout(self, lay: dict[str, Any], *, ep: str | None, dp_attention: bool) -> None:
        """Apply ``tp-planner check``'s ``--ep`` (``"on"`` or a size) and ``--dp-attention`` to ``lay`` in
        place (the framework's meaning of them)."""
        from dashboard.launch import parse_size

        if ep is not None:
            if self.expert_parallel_mode == "flag":
                lay["expert_parallel"], lay["ep"] = True, 1
            else:
                lay["ep"] = lay["tp"] if ep == "on" else parse_size(ep, "--ep")
        if dp_attention:
            lay["dp_attention"] = True
            if self.attention_dp_whole_tp and lay["dp"] == 1:
                lay["dp"] = lay["tp"]

    def check_warnings(self, launch: Any, release: str | None, dp: int) -> list[str]:
        """Warnings ``tp-planner check`` adds for a launch command's spelling under ``release``."""
        return []

    #: ``--quantization`` that differs from the checkpoint's is refused (vLLM); False: the config's wins.
    refuses_quantization_mismatch: ClassVar[bool] = False

    # -- context limit ----------------------------------------------------------------------------------
    #: Catalog column holding the longest context the framework accepts; "" = not modelled.
    context_limit_column: ClassVar[str] = ""
    #: (raise site, release, source URL) of the context-length refusal; None = not modelled.
    context_raise_site: ClassVar[tuple[str, str, str] | None] = None

    def context_message(self, context_len: int, derived: float | None, record: Any) -> str:
        """The engine's own error text when it refuses ``context_len`` tokens for a catalog record whose
        limit ``derived`` (tokens, from :attr:`context_limit_column`; None = unknown) was read by
        :func:`dashboard.context.context_message`; '' when it starts, the limit is unknown, or the context
        limit is not modelled."""
        return ""

    # -- conformance adapter -----------------------------------------------------------------------------
    #: Module holding the framework's :class:`~dashboard.frameworks.conformance.ConformanceAdapter`
    #: (``ADAPTER``); "" when the harness does not run it (through ``conformance.driver``).
    conformance_module: ClassVar[str] = ""

    def conformance(self):
        """The framework's conformance adapter (imported lazily), or None when the harness's driver does
        not run it."""
        if not self.conformance_module:
            return None
        import importlib

        return importlib.import_module(self.conformance_module).ADAPTER

__all__ = ["Layout", "Framework"]


#: Most per-node / per-replica launch commands a planned layout lists (:func:`listed_count`): beyond it the
#: rest are one template command (``$NODE_RANK`` / ``$REPLICA``), so a 7,560-node plan stays a few dozen
#: lines per layout and ``tp-planner plan --gpus 60480`` answers in seconds, not minutes.
MAX_LISTED_COMMANDS = 32


def listed_count(count: int) -> int:
    """How many of ``count`` per-node (or per-replica) commands are written out one by one: all of them up to
    :data:`MAX_LISTED_COMMANDS`, else ``MAX_LISTED_COMMANDS - 1`` and one template for the rest."""
    return count if count <= MAX_LISTED_COMMANDS else MAX_LISTED_COMMANDS - 1
