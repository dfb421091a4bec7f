"""The request ``tp-planner check`` judges and the issues it reports: the layout, the GPU count, the KV
dtype, the memory refusal in the framework's words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dashboard import frameworks, schema
from dashboard.launch import Launch
from dashboard.check.common import CheckInputError, GiB, printable


@dataclass
class Request:
    framework: str
    tp: int
    pp: int = 1
    dp: int = 1
    ep: int = 1
    expert_parallel: bool = False
    dp_attention: bool = False
    vision_dp: bool = False
    version: str | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    gpu: str | None = None
    max_model_len: int | None = None
    mem_fraction: float | None = None
    launch: Launch | None = None

    def layout(self) -> dict[str, Any]:
        return dict(tp=self.tp, pp=self.pp, dp=self.dp, ep=self.ep, dp_attention=self.dp_attention,
                    expert_parallel=self.expert_parallel, vision_dp=self.vision_dp)


def gpu_count(framework: str, lay: dict[str, Any]) -> int:
    """GPUs a layout occupies: TP x PP x DP, where attention-DP groups live inside the TP group (SGLang
    DP-attention, TensorRT-LLM attention-DP) and so add none."""
    return frameworks.get(framework).gpu_count(lay)


_KV_DTYPES = {"auto": None, "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}


def kv_dtype(name: str | None, rec: dict[str, Any]) -> str:
    from dashboard.memory import KV_DTYPE_BYTES

    if name is None or name.lower() == "auto":
        td = str(rec.get("torch_dtype") or "bfloat16").lower()
        name = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(td, "bf16")
        return name
    n = _KV_DTYPES.get(name.lower(), name.lower())
    if n not in KV_DTYPE_BYTES:
        raise CheckInputError(f"unknown KV-cache dtype {printable(name, 40)!r}; known: auto, "
                              + ", ".join(sorted(KV_DTYPE_BYTES)))
    return n


def quant_family(q: str) -> str:
    q = q.lower().replace("-", "_")
    q = q.removeprefix("auto_")
    for suf in ("_marlin_24", "_marlin", "_bitblas"):
        q = q.removesuffix(suf)
    return {"compressed_tensors": "compressed_tensors", "modelopt_fp4": "modelopt", "modelopt_mxfp8": "modelopt",
            "gpt_oss_mxfp4": "mxfp4"}.get(q, q)


@dataclass
class Issue:
    """One reason the framework would not start (a failing rule, or the memory check)."""

    rule_id: str
    message: str
    exc_type: str = ""
    location: str = ""
    source_url: str = ""
    evidence: str = "source"
    ours: bool = False
    kind: str = ""
    condition: str = ""


def hit_issue(h: Any) -> Issue:
    return Issue(h.rule_id, h.message, h.exc_type, h.location, h.source_url, h.evidence, h.ours, h.kind, h.condition)


def memory_issue(req: Request, release: str | None, cap: dict[str, Any]) -> Issue | None:
    """The start-up failure the framework reports when the layout loads (rules pass) but memory does not
    hold weights plus one ``max_model_len`` sequence, in the framework's words where it has some."""
    fw = req.framework
    ctx = int(cap["context_len"])
    tokens = int(cap["tokens_per_gpu"] or 0)
    gib = lambda b: f"{round(b / GiB, 2)}"  # noqa: E731 - vLLM's format_gib
    if float(cap["weight_bytes_per_gpu"]) > float(cap["memory_bytes"]):
        return Issue("memory.weights", f"torch.OutOfMemoryError: CUDA out of memory (the weights need "
                     f"{gib(cap['weight_bytes_per_gpu'])} GiB per GPU; {cap['gpu']} has "
                     f"{gib(cap['memory_bytes'])} GiB)", "torch.OutOfMemoryError", ours=True, kind="memory",
                     condition="weight bytes per GPU > GPU memory (the checkpoint does not load)")
    own = frameworks.get(fw).memory_issue(req, release, cap)
    if own is not NotImplemented:
        return None if own is None else Issue(**own)
    if tokens <= 0 or tokens < ctx:
        return Issue(f"memory.{fw}.max_model_len",
                     f"The KV cache holds {max(tokens, 0)} tokens per GPU, fewer than one sequence of {ctx} tokens "
                     f"({schema.FRAMEWORK_LABELS.get(fw, fw)}; budget rule: {cap['budget_rule']}).", ours=True,
                     kind="memory", condition="KV-cache tokens per GPU < max_model_len")
    return None


def capacity(rec: dict[str, Any], req: Request, lay: dict[str, Any], kv: str) -> dict[str, Any]:
    from dashboard import memory

    return memory.capacity(rec, req.framework, req.gpu, int(lay["tp"]), pp=int(lay["pp"]), ep=int(lay["ep"]),
                           kv_dtype=kv, context_len=req.max_model_len, mem_fraction=req.mem_fraction,
                           dp=int(lay["dp"]), dp_attention=bool(lay["dp_attention"]),
                           expert_parallel=bool(lay["expert_parallel"]), vision_dp=bool(lay["vision_dp"]))
