"""vLLM: everything the product knows about it (see :class:`dashboard.frameworks.base.Framework`)."""

from __future__ import annotations

from dashboard.frameworks.base import Framework


class VLLM(Framework):
    name = "vllm"
    label = "vLLM"
    executed_releases = ("0.22.0", "0.33.0")
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


__all__ = ["VLLM"]
