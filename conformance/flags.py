"""Every launch flag as the engine's own parser sees it: ``data/flags/<framework>-<release>.json``.

    python -m conformance flags --framework vllm --venv /work/venvs/vllm-0.33.0 --write
    python -m conformance flags --framework sglang --venv /work/venvs/sglang-0.5.23 --write
    python -m conformance flags --diff vllm 0.22.0 0.33.0      # flags added / removed between two specs

The spec is taken from the parser the release's own entry point builds (:mod:`conformance.flags_worker`,
run with the venv's Python), and the probes are the real entry point run on arguments that fail to parse:
their last stderr line is the engine's own error message, which the product's rebuilt parser must print
word for word (tests/test_launch_flags.py compares them). ``evidence`` is ``"executed"``.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import subprocess
import tempfile
from pathlib import Path

from conformance import driver

WORKER = Path(__file__).with_name("flags_worker.py")
OUT = driver.REPO / "data" / "flags"

#: Arguments that fail to parse, per framework: the real CLI's error line is recorded for each.
PROBES = {
    "vllm": [["serve", "MODEL", "--tensor-paralel-size", "4"],
             ["serve", "MODEL", "--kv-cache-dtype", "fp9"],
             ["serve", "MODEL", "--tensor-parallel-size", "four"],
             ["serve", "MODEL", "--tensor-parallel-size"]],
    "sglang": [["--model-path", "MODEL", "--tp-sise", "4"],
               ["--model-path", "MODEL", "--kv-cache-dtype", "fp9"],
               ["--model-path", "MODEL", "--tp-size", "four"],
               ["--model-path", "MODEL", "--tp-size"]],
}


def _env(venv: Path) -> dict[str, str]:
    env = dict(os.environ)  # offline, no GPU, the libcuda stand-in (as conformance.driver runs workers)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
               PYTHONNOUSERSITE="1", CUDA_VISIBLE_DEVICES="", VLLM_LOGGING_LEVEL="ERROR")
    env.pop("PYTHONPATH", None)
    stubs = venv / "conformance-stubs"
    if (stubs / "libcuda.so.1").exists():
        env["LD_LIBRARY_PATH"] = f"{stubs}:{env.get('LD_LIBRARY_PATH', '')}".rstrip(":")
    return env


def _run(python: str, venv: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([python, str(WORKER), *args], capture_output=True, text=True, timeout=timeout,
                          env=_env(venv), cwd=tempfile.gettempdir())


def probe(python: str, venv: Path, framework: str, argv: list[str]) -> dict:
    """The real entry point on ``argv``: exit status and the last line of stderr (argparse's error)."""
    p = _run(python, venv, "probe", framework, *argv, timeout=300)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    sub = 1 if argv and not argv[0].startswith("-") else 0  # a subcommand (vllm serve): not an argument
    return {"argv": argv, "args": argv[sub:], "exit_status": p.returncode,
            "stderr_last_line": lines[-1] if lines else ""}


def spec(framework: str, venv: str | os.PathLike) -> dict:
    venv = Path(venv)
    python = driver.python_of(venv)
    package = framework  # the pip distribution is named as the framework
    version = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    p = _run(python, venv, "spec", framework)
    if p.returncode != 0:
        raise RuntimeError(f"{framework} {version}: the parser could not be built:\n{p.stderr[-3000:]}")
    doc = json.loads(p.stdout)
    head = {
        "framework": framework,
        "release": version,
        "evidence": "executed",
        "date": dt.date.today().isoformat(),
        "how": (f"python -m conformance flags --framework {framework} --venv <venv with {package}=={version}> "
                "--write: the parser its own entry point builds (conformance/flags_worker.py), "
                "probes run through the real entry point"),
    }
    doc = {**head, **doc}
    doc["probes"] = [probe(python, venv, framework, argv) for argv in PROBES.get(framework, [])]
    return with_unrecognized_prog(doc)


def with_unrecognized_prog(doc: dict) -> dict:
    """Which parser reports unknown arguments: with subcommands it is the top-level one (``vllm``), not the
    subcommand's (argparse collects a subparser's extras and the top parser errors), as the probe shows."""
    for pr in doc.get("probes", []):
        line = pr.get("stderr_last_line", "")
        if ": error: unrecognized arguments:" in line:
            doc["unrecognized_prog"] = line.split(": error:")[0]
    return doc


def write(doc: dict) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{doc['framework']}-{doc['release']}.json"
    fd, tmp = tempfile.mkstemp(dir=OUT, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def load(framework: str, release: str) -> dict:
    return json.loads((OUT / f"{framework}-{release}.json").read_text())


def spellings(doc: dict) -> set[str]:
    return {s for f in doc["flags"] for s in f["option_strings"]}


def diff(framework: str, old: str, new: str) -> str:
    a, b = spellings(load(framework, old)), spellings(load(framework, new))
    out = [f"{framework} {old} -> {new}: {len(b - a)} spellings added, {len(a - b)} removed"]
    out += [f"+ {s}" for s in sorted(b - a)]
    for s in sorted(a - b):
        near = difflib.get_close_matches(s, sorted(b), n=1)
        out.append(f"- {s}" + (f"   (nearest in {new}: {near[0]})" if near else ""))
    return "\n".join(out)
