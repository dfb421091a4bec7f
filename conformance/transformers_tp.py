"""transformers native TP, executed: tiny models of each plan shape under ``torchrun`` (gloo, CPU).

``python -m conformance transformers runs [--tp 1 2 3 4 8]`` builds one tiny random-weight model per
(:data:`TINY` shape, head case), saves it with ``save_pretrained``, and loads it with
``from_pretrained(path, tp_plan="auto")`` under ``torchrun --nproc-per-node T`` (one torchrun per TP size,
every case in it): load, ``generate_batch`` (continuous batching: the paged cache is built by the
library's own ``PagedAttentionCache`` with its ``DistributedHelper`` on the TP group), then one plain
forward pass compared with the same checkpoint run without TP. Worker: ``transformers_tp_worker.py``.

The shapes are the distinct TP-plan shapes of the catalog (``transformers-<version>-plans.parquet``):
q/k/v colwise (Llama), fused qkv colwise (GPT-NeoX, CodeGen), q/k/v gathered (OLMo-2: k/v in the plan, so
the paged cache divides its KV heads; Phi-3: fused and gathered), MLA colwise (GLM-4-MoE-Lite), experts and
MLP only (DeepSeek-V3), embeddings only (gpt-oss), no plan (GPT-2), colwise attention with TP-sharded
experts (Qwen3-MoE) and with gathered Gated-DeltaNet layers (Qwen3-Next).

Head cases (``head_dim`` 8): ``a`` 24 heads / 8 KV heads, ``b`` 6 / 2, ``c`` 8 / 2; MoE shapes use 4
experts with an intermediate size of 48 or 40 in bfloat16 (grouped_mm needs 16-byte strides). At TP 1, 2, 3, 4, 8 they cover: every
split even, KV heads only uneven, query heads uneven, fewer KV heads than ranks, fewer experts than ranks.

Per-TP results are checkpointed in ``data/conformance/.work/transformers-<version>-runs/tp<T>.json``
(atomic writes); a killed run resumes at the next TP size. A torchrun over its time budget is killed with
its ranks (a rank left waiting in a collective after another failed); its unfinished cases are ``hang``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dashboard.atomic import atomic_write_text

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data" / "conformance"
WORKER = Path(__file__).resolve().with_name("transformers_tp_worker.py")
RUN_TP = (1, 2, 3, 4, 8)
VOCAB = 384
HEAD_DIM = 8
HEADS = {"a": (24, 8), "b": (6, 2), "c": (8, 2)}
#: Experts' intermediate size per head case (MoE shapes, bfloat16): per rank, 48 / T is a multiple of 8
#: elements (16 bytes) at T 1, 2, 3 (16) but not at 4 (12) or 8 (6); 40 / T only at T 1.
MOE_INTERMEDIATE = {"a": 48, "b": 40, "c": 48}
MOE_TYPES = ("qwen3_moe", "qwen3_next", "glm4_moe_lite", "deepseek_v3", "gpt_oss")


@dataclass(frozen=True)
class Tiny:
    """One tiny model: a catalog ``model_type`` standing for a plan shape, with one head case."""

    model_type: str
    heads_case: str
    overrides: dict = field(default_factory=dict, hash=False, compare=False)
    cb: bool = True

    @property
    def moe(self) -> bool:
        return self.model_type in MOE_TYPES

    @property
    def dtype(self) -> str:
        """bfloat16 for the MoE shapes (the experts' grouped_mm needs 16-byte strides: the dtype matters),
        float32 otherwise."""
        return "bfloat16" if self.moe else "float32"

    @property
    def moe_intermediate(self) -> int:
        return MOE_INTERMEDIATE.get(self.heads_case, 48)

    @property
    def heads(self) -> int:
        return HEADS[self.heads_case][0]

    @property
    def kv(self) -> int:
        return HEADS[self.heads_case][1]

    @property
    def case_id(self) -> str:
        moe = f"-moe{self.moe_intermediate}" if self.moe else ""
        return f"{self.model_type}-{self.heads_case}-h{self.heads}-kv{self.kv}{moe}"

    def config_kwargs(self) -> dict:
        h, kv, hd = self.heads, self.kv, HEAD_DIM
        base = {"vocab_size": VOCAB, "tie_word_embeddings": False, "initializer_range": 0.2,
                "max_position_embeddings": 128, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
        mt = self.model_type
        if mt in ("llama", "olmo2", "qwen3_moe", "gpt_oss", "qwen3_next"):
            base.update(hidden_size=h * hd, num_attention_heads=h, num_key_value_heads=kv, head_dim=hd,
                        intermediate_size=48, num_hidden_layers=1)
        if mt == "phi3":
            base.update(hidden_size=h * hd, num_attention_heads=h, num_key_value_heads=kv, intermediate_size=48,
                        num_hidden_layers=1)
        if mt == "gpt_neox":
            base.update(hidden_size=h * hd, num_attention_heads=h, intermediate_size=48, num_hidden_layers=1,
                        rotary_pct=1.0)
        if mt == "codegen":
            base.update(n_embd=h * hd, n_head=h, n_layer=1, n_inner=48, rotary_dim=hd, n_positions=128, n_ctx=128)
        if mt == "gpt2":
            base.update(n_embd=h * hd, n_head=h, n_layer=1, n_inner=48, n_positions=128)
        if mt in ("qwen3_moe", "qwen3_next"):
            base.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=self.moe_intermediate, decoder_sparse_step=1,
                        mlp_only_layers=[])
        if mt == "qwen3_next":
            base.update(num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
                        linear_num_key_heads=kv, linear_num_value_heads=h, linear_key_head_dim=hd,
                        linear_value_head_dim=hd, linear_conv_kernel_dim=4, shared_expert_intermediate_size=48)
        if mt == "gpt_oss":
            base.update(num_local_experts=4, num_experts_per_tok=2, intermediate_size=self.moe_intermediate,
                        layer_types=["full_attention"], sliding_window=64)
        if mt in ("glm4_moe_lite", "deepseek_v3"):
            base.update(hidden_size=h * hd, num_attention_heads=h, num_key_value_heads=h, intermediate_size=48,
                        moe_intermediate_size=self.moe_intermediate, num_hidden_layers=2, first_k_dense_replace=1,
                        n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1, q_lora_rank=32,
                        kv_lora_rank=16, qk_nope_head_dim=hd, qk_rope_head_dim=hd, v_head_dim=hd,
                        n_shared_experts=1)
        base.update(self.overrides)
        return base

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(case_id=self.case_id, heads=self.heads, kv=self.kv, head_dim=HEAD_DIM, dtype=self.dtype,
                 moe_intermediate=self.moe_intermediate if self.moe else None)
        return d


#: model_type standing for each plan shape of the catalog (see the module docstring).
SHAPES: dict[str, str] = {
    "llama": "q/k/v colwise, o rowwise; MLP colwise/rowwise",
    "qwen3_moe": "q/k/v colwise; experts moe_tp_experts (gate_up packed_colwise, down rowwise)",
    "qwen3_next": "q/k/v colwise; Gated DeltaNet colwise_gather_output; experts and shared expert sharded",
    "gpt_neox": "fused query_key_value colwise",
    "codegen": "fused qkv_proj colwise",
    "olmo2": "q/k/v colwise_gather_output, o rowwise_split_input (k_proj/v_proj in the plan)",
    "phi3": "fused qkv_proj colwise_gather_output; gate_up colwise_gather_output",
    "glm4_moe_lite": "MLA: q_b_proj and kv_b_proj colwise; experts sharded",
    "deepseek_v3": "attention unsharded (MLA); MLP, shared and routed experts sharded",
    "gpt_oss": "embeddings (and LM head) only",
    "gpt2": "no plan",
}

TINY: tuple[Tiny, ...] = tuple(
    Tiny(mt, hc) for mt in SHAPES for hc in (("a", "b") if mt in ("glm4_moe_lite", "deepseek_v3", "gpt_neox",
                                                                 "codegen", "gpt2") else ("a", "b", "c"))
)


def work_dir(version: str) -> Path:
    return DATA / ".work" / f"transformers-{version}-runs"


def build(tiny: Tiny, folder: Path) -> Path:
    """Save ``tiny``'s model (seeded random weights, float32) under ``folder``; reuse an existing one."""
    import torch
    import transformers

    path = Path(folder) / tiny.case_id
    if (path / "config.json").is_file() and any(path.glob("*.safetensors")):
        return path
    torch.manual_seed(1234)
    cfg = transformers.AutoConfig.for_model(tiny.model_type, **tiny.config_kwargs())
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=getattr(torch, tiny.dtype))
    model.save_pretrained(path)
    (path / "tiny_case.json").write_text(json.dumps(tiny.to_dict(), indent=1))
    return path


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (the torchrun rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen, out: Path) -> None:
    """Stop a torchrun we started and its ranks: SIGTERM (torchrun forwards it), then SIGKILL.

    The ranks run in their own sessions (torch elastic starts them so), so the process group of
    torchrun does not reach them: each rank wrote its pid to ``out/pids/`` and is killed by pid.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    proc.wait()
    for pid_file in (out / "pids").glob("*"):
        try:
            os.kill(int(pid_file.name), signal.SIGKILL)
        except (ProcessLookupError, ValueError, PermissionError):
            pass


def torchrun(worker: Path, tp: int, spec: list[dict], out: Path, timeout_s: float, *, log: Path | None = None,
             extra_env: dict[str, str] | None = None) -> tuple[bool, float]:
    """Run ``worker`` (a torchrun script taking ``--spec FILE --out DIR``) on ``spec`` with ``tp`` ranks
    (gloo on loopback, offline, one thread each); output to ``log`` (default ``out/torchrun.log``).

    A run over ``timeout_s`` seconds is stopped with its ranks. Returns (finished in time, wall seconds).
    """
    spec_file = out / "spec.json"
    spec_file.write_text(json.dumps(spec))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={tp}", "--nnodes=1",
           "--master-addr=127.0.0.1", f"--master-port={free_port()}", str(worker), "--spec",
           str(spec_file), "--out", str(out)]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.update(extra_env or {})
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if Path("/sys/class/net/lo").exists():  # keep gloo on loopback (no hostname resolution)
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    t0 = time.perf_counter()
    with (log or out / "torchrun.log").open("ab") as lf:
        proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
            finished = True
        except subprocess.TimeoutExpired:
            _stop(proc, out)
            finished = False
    return finished, time.perf_counter() - t0


def read_rank_files(out: Path) -> dict[str, list[dict]]:
    """The workers' records in ``out/rank*.jsonl``, per ``case_id`` (ranks in file order)."""
    got: dict[str, list[dict]] = {}
    for f in sorted(out.glob("rank*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                got.setdefault(rec["case_id"], []).append(rec)
    return got


def run_tp(tp: int, cases: list[Tiny], models: Path, scratch: Path, *, timeout_s: float = 600.0,
           max_attempts: int = 3, log=print) -> dict:
    """Every case at one TP size (retrying the cases after one that hung in a fresh torchrun)."""
    paths = {c.case_id: build(c, models) for c in cases}
    results: dict[str, list[dict]] = {}
    pending = list(cases)
    t0 = time.perf_counter()
    for attempt in range(max_attempts):
        if not pending:
            break
        out = scratch / f"tp{tp}-run{attempt}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        spec = [{"case_id": c.case_id, "path": str(paths[c.case_id]), "mode": "cb" if c.cb else "forward",
                 "vocab": VOCAB, "dtype": c.dtype} for c in pending]
        finished, _ = torchrun(WORKER, tp, spec, out, timeout_s)
        got = read_rank_files(out)
        still, stuck = [], False
        for c in pending:
            recs = got.get(c.case_id, [])
            if len(recs) == tp or finished:
                results[c.case_id] = recs  # complete, or the run ended (a crash leaves partial records)
            elif not stuck:
                results[c.case_id] = recs  # the case the run hung on: keep what the ranks reported
                stuck = True
            else:
                still.append(c)
        pending = still
        log(f"tp {tp} attempt {attempt}: {'finished' if finished else 'killed (hang)'}, "
            f"{len(results)}/{len(cases)} cases")
        if finished:
            break
    for c in pending:
        results.setdefault(c.case_id, [])
    return {"tp": tp, "seconds": round(time.perf_counter() - t0, 1),
            "cases": {c.case_id: {"case": c.to_dict(), "ranks": sorted(results[c.case_id], key=lambda r: r["rank"])}
                      for c in cases}}


def run(tps=RUN_TP, *, scratch: Path | None = None, log=print) -> tuple[str, Path]:
    """Run every TP size not yet checkpointed; returns (transformers version, work folder)."""
    import tempfile

    import transformers

    transformers.logging.set_verbosity_error()
    version = transformers.__version__
    wd = work_dir(version)
    wd.mkdir(parents=True, exist_ok=True)
    scratch = Path(scratch or tempfile.mkdtemp(prefix="tf-tp-runs-"))
    models = scratch / "models"
    models.mkdir(parents=True, exist_ok=True)
    for tp in tps:
        ck = wd / f"tp{tp}.json"
        if ck.is_file():
            log(f"tp {tp}: checkpointed, skipped")
            continue
        res = run_tp(tp, list(TINY), models, scratch, log=log)
        res["versions"] = versions()
        atomic_write_text(ck, json.dumps(res, indent=1) + "\n")
        log(f"tp {tp}: {res['seconds']} s")
    return version, wd


def versions(*more: str) -> dict[str, str]:
    """Versions of transformers, torch and the ``more`` packages named (import names)."""
    import importlib

    return {name: importlib.import_module(name).__version__ for name in ("transformers", "torch", *more)}


def load_runs(version: str) -> list[dict]:
    """Per (case, TP) outcome of the checkpointed runs: one dict each (see :func:`outcome`)."""
    out = []
    for ck in sorted(work_dir(version).glob("tp*.json")):
        res = json.loads(ck.read_text(encoding="utf-8"))
        for cid, x in res["cases"].items():
            out.append(outcome(x["case"], int(res["tp"]), x["ranks"]))
    return out


def outcome(case: dict, tp: int, ranks: list[dict]) -> dict:
    """One executed cell: what the library did over all ranks (first failing rank's error)."""
    complete = len(ranks) == tp
    load_ok = complete and all(r["load_ok"] for r in ranks)
    fwd_ok = complete and all(r["forward_ok"] for r in ranks)
    cb = [r.get("cb_ok") for r in ranks]
    cb_ok = complete and all(cb) if case.get("cb") else None
    err = next((r for r in ranks if r.get("error")), {})
    cb_err = next((r for r in ranks if r.get("cb_error")), {})
    stage = "hang" if not complete else next((s for s in ("load", "forward", "reference")
                                              if any(r["stage"] == s for r in ranks)), "done")
    diffs = [r["max_abs_diff"] for r in ranks if r.get("max_abs_diff") is not None]
    return {
        "case_id": case["case_id"], "model_type": case["model_type"], "heads": case["heads"], "kv": case["kv"],
        "head_dim": case["head_dim"], "dtype": case.get("dtype", "float32"),
        "moe_intermediate": case.get("moe_intermediate"), "tp": tp, "ranks_reported": len(ranks), "load_ok": load_ok,
        "forward_ok": fwd_ok, "ok": load_ok and fwd_ok, "stage": stage,
        "exc_type": err.get("error_type", ""), "message": err.get("error", ""), "where": err.get("where", ""),
        "where_code": err.get("where_code", ""), "where_last": err.get("where_last", ""),
        "failing_ranks": sum(1 for r in ranks if r.get("error")),
        "cb_ok": cb_ok, "cb_exc_type": cb_err.get("cb_error_type", ""), "cb_message": cb_err.get("cb_error", ""),
        "cb_where": cb_err.get("cb_where", ""), "cb_where_code": cb_err.get("cb_where_code", ""),
        "max_abs_diff": max(diffs) if diffs else None,
        "seconds": max((r.get("seconds", 0.0) for r in ranks), default=0.0),
    }  # fmt: skip
