"""python -m conformance: run a framework's own code over the catalog, assemble and verify tables.

Commands (see data/conformance/README.md for the venv set-up):

    python -m conformance run --framework vllm --venv /work/venvs/vllm-0.33.0 [--models ID ...] [--depth tp]
    python -m conformance run --framework vllm --venv /work/venvs/vllm-0.33.0 --ray HEAD_IP:6379  # on a cluster
    python -m conformance run --framework sglang --venv /work/venvs/sglang-0.5.23 --workers 1 [--no-assemble]
    python -m conformance run --framework megatron-core --venv /work/venvs/megatron-core-0.16.1 --workers 1
    python -m conformance assemble --framework vllm --version 0.33.0
    python -m conformance run --framework vllm --venv /work/venvs/vllm-0.33.0 --platform cuda-sm80 --workers 1
    python -m conformance assemble --version 0.33.0 --platform cuda-sm80   # data/conformance/cuda-sm80/vllm-0.33.0.parquet
    python -m conformance report --version 0.33.0 --platform cuda-sm80     # its differences from cuda-sm90
    python -m conformance verify --framework vllm --venv /work/venvs/vllm-0.33.0 --sample 40 --seed 0
    python -m conformance report --version 0.33.0      # results + remaining mismatches in the README
    python -m conformance report --framework sglang --version 0.5.23
    python -m conformance stub --venv /work/venvs/vllm-0.33.0     # build the libcuda.so.1 stand-in
    python -m conformance transformers plans|runs|assemble|report|verify  # transformers native TP (this Python)
    python -m conformance flags --framework vllm --venv /work/venvs/vllm-0.33.0 --write   # data/flags/ spec
    python -m conformance flags --diff vllm 0.22.0 0.33.0    # flags added / removed between two releases
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from conformance import cluster, driver, libcuda_stub
from dashboard.gpus import PLATFORMS

DEFAULT_CONFIGS = driver.REPO.parent / "shared" / "hub-configs"


def _add_platform(p: argparse.ArgumentParser) -> None:
    from dashboard.gpus import PLATFORMS

    p.add_argument("--platform", default=driver.DEFAULT_PLATFORM, choices=list(PLATFORMS),
                   help=f"the GPU platform the stand-in answers as (default: {driver.DEFAULT_PLATFORM}, the tables "
                   "in data/conformance/; any other: data/conformance/<platform>/)")


def _venv_version(python: str, framework: str) -> str:
    out = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({framework!r}))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run every model not yet checkpointed (resumable)")
    r.add_argument("--framework", default="vllm", choices=sorted(driver.WORKER), help="(default: vllm)")
    r.add_argument("--venv", required=True, help="the framework's virtualenv (outside the repo)")
    r.add_argument("--configs", type=Path, default=DEFAULT_CONFIGS,
                   help="folder of <org>--<name>.json configs (default: ../shared/hub-configs)")
    r.add_argument("--models", nargs="*", help="only these model ids")
    r.add_argument("--depth", choices=driver.DEPTHS, default=None,
                   help="full: vLLM: TP sizes x EP off/on, DP 2/3 for MoE, vision DP; SGLang: TP sizes x EP "
                   "off/on x attention-DP 1/2/4; Megatron-Core: TP x PP 1-4, EP 2/4/8 at PP 1/2 for MoE; "
                   "platform: vLLM: TP sizes, EP off/on for MoE, vision DP (no DP); "
                   "tp: TP sizes only (default: full on cuda-sm90, platform elsewhere)")
    _add_platform(r)
    r.add_argument("--workers", type=int, help="worker processes at once: a local Ray's CPUs (default: the "
                   "machine's); on a cluster, Ray tasks in flight (default: as many as its CPUs take); 1 without "
                   "--ray: one batch after the other in this process, no Ray")
    r.add_argument("--batch", type=int, default=12, help="models per worker process, i.e. per Ray task (default: 12)")
    r.add_argument("--ray", metavar="auto|HOST:PORT",
                   help="auto: start a local Ray (the default unless --workers 1); HOST:PORT: run the tasks on that "
                   "Ray cluster (its head's address, 'ray start --head'); the venv must be at the same path on "
                   "every node (data/conformance/README.md)")
    r.add_argument("--limit", type=int, help="run at most this many models (the rest stay for the next run)")
    r.add_argument("--no-assemble", action="store_true", help="do not rebuild the parquet table afterwards")
    a = sub.add_parser("assemble", help="per-model checkpoints -> data/conformance/<fw>-<version>.parquet")
    a.add_argument("--framework", default="vllm")
    a.add_argument("--version", required=True)
    _add_platform(a)
    v = sub.add_parser("verify", help="re-run a fixed sample of the committed table and diff")
    v.add_argument("--framework", default="vllm", choices=sorted(driver.WORKER))
    v.add_argument("--venv", required=True)
    v.add_argument("--configs", type=Path, default=DEFAULT_CONFIGS)
    v.add_argument("--sample", type=int, default=40)
    v.add_argument("--seed", type=int, default=0)
    _add_platform(v)
    rp = sub.add_parser("report", help="regenerate data/conformance/README.md's results for a release")
    rp.add_argument("--version", required=True)
    rp.add_argument("--framework", default="vllm", choices=sorted(driver.WORKER), help="(default: vllm)")
    _add_platform(rp)
    st = sub.add_parser("sites", help="an executed release's evidence: the rules' raise sites there and the "
                        "rules its table never reaches first (data/conformance/<framework>-<release>-evidence.json)")
    st.add_argument("--version", required=True)
    st.add_argument("--framework", default="vllm", choices=sorted(driver.WORKER), help="(default: vllm)")
    st.add_argument("--work", action="store_true", help="read the release's checkpoint folder, not its table")
    st.add_argument("--src-new", type=Path, help="unpacked wheel of the newest executed release (with --src-old: "
                    "derive the sites; without: keep the evidence file's)")
    st.add_argument("--src-old", type=Path, help="unpacked wheel of --version")
    st.add_argument("--write", action="store_true", help="write the evidence file (atomically) instead of printing it")
    pa = sub.add_parser("params", help="build one cell and print rank 0's parameter bytes by module group "
                        "(a diagnostic for the memory model; writes nothing)")
    pa.add_argument("--framework", default="vllm", choices=sorted(driver.WORKER))
    pa.add_argument("--venv", required=True)
    pa.add_argument("model", help="model id (its config is read from --configs) or a config.json path")
    pa.add_argument("--configs", type=Path, default=DEFAULT_CONFIGS)
    pa.add_argument("--tp", type=int, default=1)
    pa.add_argument("--pp", type=int, default=1)
    pa.add_argument("--dp", type=int, default=1)
    pa.add_argument("--ep", action="store_true", help="--enable-expert-parallel")
    pa.add_argument("--vision-dp", action="store_true", help="--mm-encoder-tp-mode data")
    pa.add_argument("--sidecar", type=Path, action="append", default=[],
                    help="a file copied beside config.json (e.g. hf_quant_config.json); repeatable")
    pa.add_argument("--depth", type=int, default=99, help="dotted name parts kept per group (default: all)")
    pa.add_argument("--json", action="store_true", help="print the raw per-parameter list as JSON")
    _add_platform(pa)
    tf = sub.add_parser("transformers", help="transformers native TP / CB cache with the transformers installed "
                        "here: plans (per catalog model), runs (tiny models under torchrun), assemble, report")
    tf.add_argument("action", choices=("plans", "runs", "assemble", "report", "verify"))
    tf.add_argument("--sample", type=int, default=40, help="verify: models to re-inspect")
    tf.add_argument("--seed", type=int, default=0)
    tf.add_argument("--configs", type=Path, default=DEFAULT_CONFIGS)
    tf.add_argument("--models", nargs="*", help="plans: only these model ids (re-inspected)")
    tf.add_argument("--tp", type=int, nargs="*", help="runs: only these TP sizes (default 1 2 3 4 8)")
    fl = sub.add_parser("flags", help="the serve command's flags as the release's own parser builds them "
                        "(data/flags/<framework>-<release>.json)")
    fl.add_argument("--framework", choices=("vllm", "sglang"), default="vllm", help="(default: vllm)")
    fl.add_argument("--venv", help="the release's virtualenv (outside the repo)")
    fl.add_argument("--write", action="store_true", help="write the spec (atomically) instead of printing it")
    fl.add_argument("--diff", nargs=3, metavar=("FRAMEWORK", "OLD", "NEW"),
                    help="spellings added and removed between two written specs")
    at = sub.add_parser("attention", help="vLLM's attention-backend selection per platform stand-in "
                        "(data/conformance/attention/vllm-<release>-<platform>.json)")
    at.add_argument("--venv", required=True, help="the vLLM release's virtualenv (outside the repo)")
    at.add_argument("--platform", nargs="+", default=[p for p, d in PLATFORMS.items() if not d.is_rocm],
                    help="platform ids (default: every CUDA platform)")
    at.add_argument("--configs", type=Path, default=DEFAULT_CONFIGS)
    at.add_argument("--no-models", action="store_true", help="skip the per-model selector calls")
    s = sub.add_parser("stub", help="build the libcuda.so.1 stand-in inside the venv")
    s.add_argument("--venv", required=True)
    args = ap.parse_args(argv)

    if args.cmd == "transformers":
        from conformance import transformers_table

        return transformers_table.cli(args)
    if args.cmd == "attention":
        from conformance import attention

        libcuda_stub.build(Path(args.venv))
        attention.run(args.venv, args.platform, configs=None if args.no_models else args.configs)
        return 0
    if args.cmd == "flags":
        from conformance import flags

        if args.diff:
            print(flags.diff(*args.diff))
            return 0
        if not args.venv:
            ap.error("flags: give --venv (or --diff FRAMEWORK OLD NEW)")
        libcuda_stub.build(Path(args.venv))
        doc = flags.spec(args.framework, args.venv)
        print(flags.write(doc) if args.write else json.dumps(doc, indent=1))
        return 0
    if args.cmd == "stub":
        print(libcuda_stub.build(Path(args.venv)))
        return 0
    if args.cmd == "report":
        if args.platform != driver.DEFAULT_PLATFORM:
            from conformance import platforms

            print(platforms.update(args.version, args.platform, args.framework))
            return 0
        from conformance import report

        print(report.update(args.version, args.framework))
        return 0
    if args.cmd == "sites":
        from conformance import sites

        doc = sites.evidence(args.version, args.framework, args.src_new, args.src_old, args.work)
        print(sites.write(doc) if args.write else sites.render(doc), end="" if not args.write else "\n")
        return 0
    if args.cmd == "assemble":
        print(driver.assemble(args.framework, args.version, args.platform))
        return 0
    if args.cmd == "run" and (args.ray or args.workers != 1):
        try:  # fail fast, before the venv's ~15 s registry dump
            cluster.check_address(args.ray or "auto")
            cluster.require_ray()
        except cluster.RayUnavailable as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    python = driver.python_of(args.venv)
    libcuda_stub.build(Path(args.venv))
    version = _venv_version(python, args.framework)
    if args.cmd == "run":
        print(driver.dump_registry(python, args.framework, version, args.platform))
        try:
            driver.run(python, args.framework, version, args.configs, models=args.models,
                       depth=args.depth or driver.default_depth(args.platform), platform=args.platform,
                       workers=args.workers, batch=args.batch, limit=args.limit, ray=args.ray)
        except cluster.RayUnavailable as e:
            print(f"error: {e}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(2)  # a ray.init left waiting in its thread would hold up the interpreter's exit
        if not args.no_assemble:
            print(driver.assemble(args.framework, version, args.platform))
        return 0
    if args.cmd == "params":
        path = Path(args.model)
        if not path.is_file():
            path = args.configs / (args.model.replace("/", "--") + ".json")
        if not path.is_file():
            ap.error(f"no config for {args.model!r}: not a file and not {path}")
        cell = driver.Cell(tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep, vision_dp=args.vision_dp)
        rec = driver.inspect_params(python, args.framework, path, cell, sidecars=args.sidecar, platform=args.platform)
        if args.json:
            print(json.dumps(rec, indent=1, default=str))
            return 0
        print(f"{rec.get('model_id')} {cell}: {rec.get('outcome')}", rec.get("message") or "")
        if rec.get("params"):
            import pandas as pd

            df = driver.group_params(rec["params"], args.depth)
            with pd.option_context("display.width", 200, "display.max_colwidth", 110, "display.max_rows", 1000):
                print(df.to_string(index=False))
            print(f"total {rec['param_bytes']:,} B; by dtype {rec['param_bytes_by_dtype']}")
        return 0
    if args.cmd == "verify":
        df = driver.verify(python, args.framework, version, args.configs, sample=args.sample, seed=args.seed,
                           platform=args.platform)
        import pandas as pd

        with pd.option_context("display.width", 200, "display.max_colwidth", 120, "display.max_rows", 500):
            print(df.to_string(index=False))
        same = int(df["same"].sum())
        where = "" if args.platform == driver.DEFAULT_PLATFORM else f" on {args.platform}"
        print(f"{args.framework} {version}{where}: {same} of {len(df)} sampled cells reproduced exactly "
              f"(outcome, exception type, message, raise site, parameter bytes)")
        return 0 if same == len(df) else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
