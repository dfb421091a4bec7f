"""Worst-case wall time of ``tp-planner check`` and ``tp-planner plan`` on the largest values they accept
(issue 24): each command in a fresh process, as a user runs it; prints one line per case and the worst.

    python scripts/bench_worst_case.py [--budget 5]

Cases: ``check --tp 4096 --pp 4096 --dp 4096`` (4096**3 GPUs, the largest sizes ``check`` accepts), the same
as a pasted launch command, and ``plan --gpus`` at 65536 (the largest count) and 60480 (the count <= 65536
with the most TP x PP splits, 2520). Prints wall and CPU seconds (the CPU time is what a loaded machine does not inflate). Exit status 1 when a
case takes longer than ``--budget`` seconds of wall time.

``--ref REV`` also runs every case on a ``git archive`` of ``REV`` (e.g. ``main``), each case on both trees
back to back, and prints before / after and their ratio for each case and for the worst (the budget applies
to this checkout). ``--load N`` keeps N busy-looping processes running during the measurement (a loaded
machine, as in CI), stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}


def cases(cfg: str) -> list[tuple[str, list[str]]]:
    big = ["--tp", "4096", "--pp", "4096", "--dp", "4096"]
    out = [("check flags 4096^3 (vllm)", ["check", cfg, *big]),
           ("check flags 4096^3 (sglang)", ["check", cfg, "--framework", "sglang", *big]),
           ("check flags 4096^3 --gpu", ["check", cfg, "--gpu", "H100-80GB", *big]),
           ("check pasted command 4096^3", ["check", cfg, "--", "vllm", "serve", "m", "-tp", "4096", "-pp", "4096",
                                             "-dp", "4096"])]
    for n in ("65536", "60480"):
        for m in (cfg, "deepseek-ai/DeepSeek-V3"):
            out.append((f"plan --gpus {n} {Path(m).name}", ["plan", m, "--gpus", n, "--gpu", "H100-80GB", "--limit", "3"]))
    return out


def run_case(tree: Path, argv: list[str]) -> tuple[float, float, int, str]:
    """(wall s, CPU s, exit status, first output line) of ``tp-planner ARGV`` run from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "dashboard.cli", *argv], env=env, cwd=tree, capture_output=True,
                       text=True, timeout=600)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    first = (p.stdout or p.stderr).splitlines()[0][:70] if (p.stdout or p.stderr) else ""
    return dt, cpu, p.returncode, first


def export(rev: str, dest: Path) -> Path:
    """``git archive`` of ``rev`` unpacked under ``dest``."""
    tar = dest / "tree.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(tar), rev], cwd=ROOT, check=True)
    with tarfile.open(tar) as t:
        t.extractall(dest / "tree", filter="data")
    tar.unlink()
    return dest / "tree"


def burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--budget", type=float, default=5.0, help="seconds a case may take (default 5)")
    ap.add_argument("--ref", default=None, help="also run each case on this git revision (before / after)")
    ap.add_argument("--load", type=int, default=0, help="busy-looping processes to run meanwhile (default 0)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = str(Path(tmp) / "llama-8b.json")
        Path(cfg).write_text(json.dumps(LLAMA))
        base = export(args.ref, Path(tmp)) if args.ref else None
        load = burners(args.load)
        try:
            worst = ("", 0.0)
            worst_before = ("", 0.0)
            for name, argv in cases(cfg):
                if base is not None:
                    bt, bc, brc, _ = run_case(base, argv)
                dt, cpu, rc, first = run_case(ROOT, argv)
                print(f"{dt:7.2f} s wall {cpu:6.2f} s CPU  exit {rc}  {name}: {first}", flush=True)
                if base is not None:
                    print(f"{'':9}before ({args.ref}): {bt:6.2f} s wall {bc:6.2f} s CPU  exit {brc}; ratio before/after "
                          f"{bt / max(dt, 1e-9):.2f}x wall, {bc / max(cpu, 1e-9):.2f}x CPU", flush=True)
                    if bt > worst_before[1]:
                        worst_before = (name, bt)
                if dt > worst[1]:
                    worst = (name, dt)
        finally:
            for p in load:
                p.kill()
                p.wait()
    la = os.getloadavg()[0]
    print(f"worst case: {worst[0]}: {worst[1]:.2f} s wall (budget {args.budget:g} s; load average {la:.1f} on "
          f"{os.cpu_count()} CPUs{f', {args.load} busy loops running' if args.load else ''}: wall times include "
          "waiting for a CPU)")
    if base is not None:
        print(f"worst case before ({args.ref}): {worst_before[0]}: {worst_before[1]:.2f} s wall; ratio "
              f"{worst_before[1] / max(worst[1], 1e-9):.2f}x")
    return 0 if worst[1] <= args.budget else 1


if __name__ == "__main__":
    raise SystemExit(main())
