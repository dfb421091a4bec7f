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
from typing import Any, ClassVar

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
    #: The name a release number follows in notices ("vLLM 0.22.0", "transformers 5.24.0"); the id when "".
    release_label: ClassVar[str] = ""

    def __repr__(self) -> str:
        return f"<Framework {self.name}>"

    # -- sharding: attention-TP, KV heads, experts ------------------------------------------------------

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
    #: The framework replicates KV heads when there are fewer than the attention-TP degree (cell status
    #: ``valid_replicated``).
    replicates_kv: ClassVar[bool] = False
    #: :func:`dashboard.sharding.kv_heads_per_rank` style of KV sharding (``"vllm"`` or ``"tensorrt-llm"``).
    kv_shard_style: ClassVar[str] = "vllm"
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


    # -- launch: flags, scheduler defaults, commands ----------------------------------------------------

    # -- context limit ----------------------------------------------------------------------------------

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
