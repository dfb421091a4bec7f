"""SGLang: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`).

Heavier pieces live in submodules imported lazily: :mod:`.serving` (the planner's command writer, the
running-request default, the start-up memory messages), :mod:`.context` (the context-length refusal)."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from dashboard.frameworks.base import Framework
from dashboard.frameworks.sglang.sharding import SGLangSharding

@functools.lru_cache(maxsize=256)
def attn_dp_with_replicas(release: str | None) -> bool:
    """From 0.5.22 (``rules.SGLANG_ATTN_DP_SIZE_FROM``) SGLang spells attention-DP ``--attn-dp-size`` and
    keeps ``--dp-size`` for replicas (``release`` None: the newest release)."""
    from packaging.version import Version

    from dashboard import rules

    return release is None or Version(release) >= Version(rules.SGLANG_ATTN_DP_SIZE_FROM)


def dp_attention_flags(version: str | None, attn_dp: int) -> str:
    """The attention-DP flags of the release ``version`` resolves to
    (:func:`dashboard.rules.sglang_dp_attention_flags`)."""
    from dashboard import rules

    return rules.sglang_dp_attention_flags(version, attn_dp)


class SGLang(SGLangSharding, Framework):
    name = "sglang"
    label = "SGLang"
    executed_releases = ("0.5.21", "0.5.23")
    release_label = "SGLang"

    conformance_module = "dashboard.frameworks.sglang.conformance"
    rule_modules = ("dashboard.frameworks.sglang.rules_source", "dashboard.frameworks.sglang.rules_executed")
    source_repo_url = "https://github.com/sgl-project/sglang/blob/v{release}/python"
    replicates_kv = True
    #: First release that spells attention-DP ``--attn-dp-size D`` (earlier: ``--enable-dp-attention --dp-size D``).
    ATTN_DP_SIZE_FROM: ClassVar[str] = "0.5.22"

    def dp_attention_groups(self, tp: int) -> list[int]:
        """Every divisor ``d`` of ``tp`` from 2 on (attention-TP ``tp / d``)."""
        return [d for d in range(2, tp + 1) if tp % d == 0]

    def dp_attention_suggestion(self, version: "str | None", tp: int, dp: int) -> str:
        return f"Valid at tp={tp} with {self.dp_attention_flags(version, dp)} (attention-TP {tp // dp})."

    def dp_attention_flags(self, version: "str | None", dp: int) -> str:
        """SGLang's launch flags for attention-DP over ``dp`` groups, as the release ``version`` resolves to
        (:func:`dashboard.rules.resolve_version`) spells them: ``--attn-dp-size D`` from 0.5.22 on,
        ``--enable-dp-attention --dp-size D`` before."""
        if _before_attn_dp_size(version):
            return f"--enable-dp-attention --dp-size {int(dp)}"
        return f"--attn-dp-size {int(dp)}"


    # memory (formulas in dashboard/frameworks/sglang/memory.py)
    kv_tokens_per_block = 1
    kv_budget_rule = "mem_fraction_static x (total - startup) - weights"
    default_mem_fraction = None
    caches_mla_latent = True
    vocab_pad_multiple = 64
    memory_rules_release = "0.5.23"
    kv_oracle_checked = True

    def kv_budget(self, b: dict[str, Any]) -> dict[str, Any]:
        """``mem_fraction_static x (M - startup) - weights - load extras``
        (:func:`dashboard.frameworks.sglang.memory.kv_budget`)."""
        from dashboard.frameworks.sglang import memory

        return memory.kv_budget(b)

    def breakdown_reserve(self, cap: Any, value: Any) -> list[tuple[str, float]]:
        """One ``non-torch`` part: the memory in use before the weights load plus the load extras."""
        from dashboard.frameworks.sglang import memory

        return memory.breakdown_reserve(cap)


    attention_dp_in_tp = True
    expert_parallel_mode = "size"
    version_param = "sglang_version"
    #: SGLang ``--nnodes``: whole pipeline stages per node (``_calculate_rank_ranges``,
    #: python/sglang/srt/entrypoints/engine.py:2061-2076, 0.5.23).
    even_node_spread = "SGLang --nnodes"
    launch_flags: ClassVar[dict[str, tuple[str, ...]]] = {
        "tp": ("--tp-size", "--tensor-parallel-size", "--tp"),
        "pp": ("--pp-size", "--pipeline-parallel-size", "--pp"),
        "dp": ("--dp-size", "--data-parallel-size", "--dp"),
        "attn_dp": ("--attn-dp-size", "--attention-data-parallel-size"),
        "ep": ("--ep-size", "--expert-parallel-size", "--ep"),
        "dp_attention": ("--enable-dp-attention",),
        "vision_dp": ("--mm-enable-dp-encoder",),
        "mem_fraction": ("--mem-fraction-static",),
        "kv_cache_dtype": ("--kv-cache-dtype",),
        "max_model_len": ("--context-length",),
        "quantization": ("--quantization",),
        "model": ("--model-path", "--model"),
    }
    context_limit_column = "context_length_sglang"

    @property
    def context_raise_site(self) -> tuple[str, str, str]:  # type: ignore[override]
        from dashboard.frameworks.sglang import context

        return context.RAISE_SITE_INFO

    def attention_dp_sizes(self, tp, dp, *, release=None):
        """Every divisor ``D > 1`` of tp (``--attn-dp-size D``); before 0.5.22 (``--enable-dp-attention
        --dp-size D``, which uses the DP flag) only with one replica."""
        if dp > 1 and not attn_dp_with_replicas(release):
            return []
        return [d for d in range(2, tp + 1) if tp % d == 0]

    def launch_layout(self, launch: Any) -> dict[str, Any]:
        out = super().launch_layout(launch)
        if launch.attn_dp and launch.attn_dp > 1:
            out.update(dp_attention=True, dp=launch.attn_dp)
        return out

    def launch_replicas(self, launch: Any) -> int:
        """``--dp-size`` next to ``--attn-dp-size`` (0.5.22+): whole replicas, kept as written."""
        if launch.attn_dp and launch.attn_dp > 1 and launch.dp and launch.dp > 1:
            return launch.dp
        return 1

    def launch_notes(self, launch: Any) -> list[str]:
        if launch.dp_attention and launch.attn_dp:
            return ["--enable-dp-attention and --attn-dp-size both given: --attn-dp-size is used"]
        return []

    def layout_flags(self, lay, *, version=None, keep_vision=False, replicas=1):
        f = self.launch_flags
        out, _, _, dp, ep = self.tp_pp_flags(lay)
        if lay.get("dp_attention") and dp > 1:
            out += dp_attention_flags(version, dp).split()
            if replicas > 1:
                out += [f["dp"][0], str(replicas)]
        elif dp > 1:
            out += [f["dp"][0], str(dp)]
        if ep > 1:
            out += [f["ep"][0], str(ep)]
        if keep_vision and lay.get("vision_dp"):
            out.append(f["vision_dp"][0])
        return out

    def launch_head(self, model: str) -> list[str]:
        return ["python", "-m", "sglang.launch_server", "--model-path", model]

    def kv_cache_flag(self, kv_dtype: str) -> str:
        kv = str(kv_dtype).lower()
        return ("fp8_e5m2" if kv == "fp8_e5m2" else "fp8_e4m3") if kv.startswith("fp8") else "auto"

    def plan_commands(self, row, model_id, *, gpus_per_node, context_len, kv_dtype, release):
        from dashboard.frameworks.sglang import serving

        return serving.plan_commands(row, model_id, gpus_per_node=gpus_per_node, context_len=context_len,
                                     kv_flag=self.kv_cache_flag(kv_dtype), release=release)

    def scheduler_cap(self, gpu, tokens_per_gpu, context_len, groups):
        from dashboard.frameworks.sglang import serving

        return serving.default_max_running_requests(tokens_per_gpu, context_len) * groups

    def memory_refusal(self, *, weights, budget, ctx, kv_tok, tokens, frac, seq_group):
        if budget <= 0:
            return ("Not enough memory. Please try to increase --mem-fraction-static. Current value: "
                    f"mem_fraction_static={frac:.3f}")
        if seq_group < 1:
            return (f"The KV pool holds {int(tokens)} tokens per GPU, fewer than one {ctx}-token sequence: SGLang "
                    "starts but cannot schedule a request of that length (planner message).")
        return ""

    def memory_issue(self, req, release, cap):
        from dashboard.frameworks.sglang import serving

        return serving.memory_issue(release, cap, req.mem_fraction)

    def check_warnings(self, launch, release, dp):
        """SGLang spells attention-DP ``--attn-dp-size`` from 0.5.22 and deprecates
        ``--enable-dp-attention`` there."""
        from packaging.version import Version

        from dashboard import rules

        out: list[str] = []
        if launch is None or not release:
            return out
        newer = lambda: Version(release) >= Version(rules.SGLANG_ATTN_DP_SIZE_FROM)  # noqa: E731
        if launch.attn_dp and not newer():
            out.append(f"--attn-dp-size is new in SGLang {rules.SGLANG_ATTN_DP_SIZE_FROM}; SGLang {release} "
                       f"spells it {dp_attention_flags(release, dp)}")
        if launch.dp_attention and not launch.attn_dp and newer():
            out.append(f"--enable-dp-attention is deprecated in SGLang {release}: "
                       f"use {dp_attention_flags(release, dp)}")
        return out

    def context_message(self, context_len, derived, record):
        from dashboard.frameworks.sglang import context

        return context.context_message(context_len, derived, record)


@functools.lru_cache(maxsize=256)
def _before_attn_dp_size(version: "str | None") -> bool:
    from packaging.version import Version

    from dashboard.rules import resolve_version

    rel = resolve_version("sglang", version).release
    return rel is not None and Version(rel) < Version(SGLang.ATTN_DP_SIZE_FROM)


__all__ = ["SGLang", "attn_dp_with_replicas", "dp_attention_flags"]
