"""vLLM: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`).

Heavier pieces live in submodules imported lazily: :mod:`.serving` (the planner's command writer, the
start-up memory messages), :mod:`.context` (the context-length refusal)."""

from __future__ import annotations

from typing import Any

import numpy as np
from typing import Any, ClassVar

from dashboard.frameworks.base import Framework


class VLLM(Framework):
    name = "vllm"
    label = "vLLM"
    reports_kv_replication = True
    mla_latent = True
    executed_releases = ("0.22.0", "0.33.0")
    #: The platform tables the rules are held to (tests/rules/test_conformance_platform_rules.py): the rules keyed
    #: by platform (attention backends, FP8 MoE kernels, quantization minimums) match every verdict there.
    executed_platforms = {"0.33.0": ("cuda-sm75", "cuda-sm80", "cuda-sm89", "cuda-sm100", "cuda-sm120")}
    platform_keyed_rules = True
    release_label = "vLLM"

    conformance_module = "dashboard.frameworks.vllm.conformance"
    rule_modules = ("dashboard.frameworks.vllm.rules_source",)
    source_repo_url = "https://github.com/vllm-project/vllm/blob"
    replicates_kv = True
    ep_off_hint = "(drop --enable-expert-parallel)."

    def expert_parallel_suggestion(self, tp: int, dp: int, valid_with) -> "str | None":
        """``--enable-expert-parallel`` (EP size ``tp x dp``) when that layout is valid."""
        if valid_with(expert_parallel=True):
            return (f"Valid at tp={tp} with --enable-expert-parallel (EP size {tp * dp}): experts are not "
                    "TP-sliced.")
        return None

    # memory (formulas in dashboard/frameworks/vllm/memory.py and dashboard.memory)
    kv_tokens_per_block = 16
    kv_budget_rule = "gpu_memory_utilization x total - weights - peak activation - non-torch - CUDA graphs (vLLM >= 0.21)"
    default_mem_fraction = 0.9
    caches_mla_latent = True
    vocab_pad_multiple = 64
    moe_tp_spans_dp = True
    applies_architecture_weight_quirks = True
    # RotaryEmbedding registers cos_sin_cache = [max_position, rotary_dim] in the model dtype as a GPU buffer at
    # init (model_executor/layers/rotary_embedding/base.py:58-63 of 0.33.0), one per distinct rope
    # (get_rope's _ROPE_DICT, rotary_embedding/__init__.py:84), with max_position = the config's
    # max_position_embeddings (e.g. llama4.py:326 -> 241): "Model loading took" includes it.
    charges_rope_cache = True
    memory_rules_release = "0.33.0"
    kv_oracle_checked = True
    reserve_parts = (("activation peak", "activation_bytes_per_gpu"), ("CUDA graphs", "cuda_graph_bytes_per_gpu"),
                     ("non-torch", "non_torch_bytes_per_gpu"))

    def kv_budget(self, b: dict[str, Any]) -> dict[str, Any]:
        """``gpu_memory_utilization x M - weights - activation - non_torch - CUDA graphs`` (graphs charged from
        vLLM 0.21), see :func:`dashboard.frameworks.vllm.memory.kv_budget`."""
        from dashboard.frameworks.vllm import memory

        return memory.kv_budget(b)

    def kv_pool_capacity(self, b: dict[str, Any]) -> dict[str, Any] | None:
        """The hybrid KV manager's groups and pages (:func:`dashboard.frameworks.vllm.memory.kv_pool_capacity`)."""
        from dashboard.frameworks.vllm import memory

        return memory.kv_pool_capacity(b)

    platform_source_url = "https://docs.vllm.ai/en/v0.31.0/getting_started/installation/gpu/"

    def platform_refusal(self, gpu: Any) -> str:
        """CUDA SM 7.5+, ROCm gfx90a / gfx942 / gfx950 / RDNA (:mod:`dashboard.frameworks.vllm.platforms`)."""
        from dashboard.frameworks.vllm import platforms

        return platforms.platform_refusal(gpu)

    def dtype_refusal(self, gpu: Any, weight_kind: str, kv_dtype: str, *, explicit: bool = True) -> str:
        """The hardware rule with ``--dtype auto`` / ``--kv-cache-dtype auto`` and vLLM's own bf16 message
        (:func:`dashboard.frameworks.vllm.dtypes.dtype_refusal`)."""
        from dashboard.frameworks.vllm import dtypes

        return dtypes.dtype_refusal(gpu, weight_kind, kv_dtype, explicit=explicit)

    def auto_dtype(self, gpu: Any, weight_kind: str, model_type: str, explicit: bool) -> tuple[str | None, str]:
        """What ``--dtype auto`` runs a bfloat16 checkpoint in on a GPU without bfloat16
        (:func:`dashboard.frameworks.vllm.dtypes.vllm_auto_dtype`)."""
        from dashboard.frameworks.vllm import dtypes

        return dtypes.vllm_auto_dtype(gpu, weight_kind, model_type, explicit)

    def vision_unsharded_when_uneven(self, arch: Any) -> np.ndarray:
        """Only the towers the executed 0.33.0 table shows raising no TP error
        (:data:`dashboard.frameworks.vllm.rules_executed.VISION_NO_HEAD_CHECK`: MoonViT switches to data-parallel by
        itself, Gemma-4's tower is an unsharded HF module); the others divide their heads over TP."""
        from dashboard.frameworks.vllm.rules_executed import VISION_NO_HEAD_CHECK  # lazy: rules are heavy

        if arch is None:
            return np.asarray(False)
        return np.isin(np.asarray(arch, dtype=object), list(VISION_NO_HEAD_CHECK))

    # layouts: --enable-expert-parallel, the EP group spans TP x DP ranks
    expert_parallel_mode = "flag"
    version_param = "vllm_version"
    kv_block_tokens = 16
    auto_dtype_fallback = True
    refuses_quantization_mismatch = True
    #: vLLM ``--nnodes``: ``ParallelConfig.local_world_size = world_size // nnodes_within_dp``
    #: (vllm/config/parallel.py:838-840, 0.33.0; ranks are TP-innermost).
    even_node_spread = "vLLM --nnodes"
    context_flag = "--max-model-len"
    flag_underscores = True
    positional_model = True
    launch_flags: ClassVar[dict[str, tuple[str, ...]]] = {
        "tp": ("--tensor-parallel-size", "-tp"),
        "pp": ("--pipeline-parallel-size", "-pp"),
        "dp": ("--data-parallel-size", "-dp"),
        "expert_parallel": ("--enable-expert-parallel", "-ep"),
        "no_expert_parallel": ("--no-enable-expert-parallel",),
        "mem_fraction": ("--gpu-memory-utilization",),
        "kv_cache_dtype": ("--kv-cache-dtype",),
        "max_model_len": ("--max-model-len",),
        "mm_encoder_tp_mode": ("--mm-encoder-tp-mode",),
        "quantization": ("--quantization", "-q"),
        "model": ("--model",),
    }
    context_limit_column = "max_model_len_vllm"

    @property
    def context_raise_site(self) -> tuple[str, str, str]:  # type: ignore[override]
        from dashboard.frameworks.vllm import context

        return context.RAISE_SITE_INFO

    def layout_rows(self, tp, pp, dp, ep_on, *, release=None):
        if ep_on and tp * dp == 1:
            return []
        return [(tp, pp, dp, 1, tp * dp if ep_on else 1, ep_on, dp, False, 1, ep_on)]

    def launch_layout(self, launch: Any) -> dict[str, Any]:
        return dict(super().launch_layout(launch), ep=1)

    def layout_flags(self, lay, *, version=None, keep_vision=False, replicas=1):
        f = self.launch_flags
        out, _, _, dp, ep = self.tp_pp_flags(lay)
        if dp > 1:
            out += [f["dp"][0], str(dp)]
        if lay.get("expert_parallel") or ep > 1:
            out.append(f["expert_parallel"][0])
        if keep_vision and lay.get("vision_dp"):
            out += [f["mm_encoder_tp_mode"][0], "data"]
        return out

    def launch_head(self, model: str) -> list[str]:
        return ["vllm", "serve", model]

    def kv_cache_flag(self, kv_dtype: str) -> str:
        kv = str(kv_dtype).lower()
        return "fp8" if kv == "fp8" else (kv if kv.startswith("fp8") else "auto")

    def plan_commands(self, row, model_id, *, gpus_per_node, context_len, kv_dtype, release):
        from dashboard.frameworks.vllm import serving

        return serving.plan_commands(row, model_id, gpus_per_node=gpus_per_node, context_len=context_len,
                                     kv_flag=self.kv_cache_flag(kv_dtype))

    def scheduler_cap(self, gpu, tokens_per_gpu, context_len, groups):
        from dashboard.frameworks.vllm import serving

        return serving.default_max_num_seqs(gpu)

    def memory_refusal(self, *, weights, budget, ctx, kv_tok, tokens, frac, seq_group):
        from dashboard.frameworks.vllm import serving

        return serving.memory_refusal(budget=budget, ctx=ctx, kv_tok=kv_tok, tokens=tokens, seq_group=seq_group)

    def memory_issue(self, req, release, cap):
        from dashboard.frameworks.vllm import serving

        return serving.memory_issue(release, cap)

    def quantization_mismatch_issue(self, have: str, asked: str, release: str | None) -> dict:
        """The refusal of ``--quantization asked`` on a ``have`` checkpoint (fields of a
        :class:`dashboard.check.Issue`); only for :attr:`refuses_quantization_mismatch` frameworks."""
        from dashboard.frameworks.vllm import serving

        return serving.quantization_mismatch_issue(have, asked, release)

    def context_message(self, context_len, derived, record):
        from dashboard.frameworks.vllm import context

        return context.context_message(context_len, derived, record)


__all__ = ["VLLM"]
