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

    def __repr__(self) -> str:
        return f"<Framework {self.name}>"

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

__all__ = ["Layout", "Framework"]
