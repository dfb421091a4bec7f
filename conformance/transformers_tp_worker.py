"""torchrun worker of ``python -m conformance transformers runs`` and of the tests' TP matrix
(``tests/tp_matrix/worker.py`` runs it with ``--max-error-chars 600 --bare-sites``): load each tiny model
with transformers native TP and run it; record what happened.

Usage (``conformance/transformers_tp.py`` and ``tests/tp_matrix/run.py`` build the command)::

    OMP_NUM_THREADS=1 torchrun --nproc-per-node N --master-addr 127.0.0.1 --master-port P \
        conformance/transformers_tp_worker.py --spec spec.json --out OUTDIR \
        [--max-error-chars C] [--bare-sites]

``spec.json`` is a list of ``{"case_id", "path", "mode", "vocab"[, "dtype"]}``. Every rank runs every case in
order and appends one JSON line per case to ``OUTDIR/rank{R}.jsonl`` (flushed at once, so a run that
hangs or dies still leaves the finished cases). A line holds: ``case_id``, ``rank``, ``world_size``,
``load_ok``, ``forward_ok``, ``stage`` (``load`` / ``forward`` / ``reference`` / ``done``: where the
native-TP path stopped), ``error_type``, ``error`` (message, cut at ``--max-error-chars`` characters,
default 4000), ``where`` (deepest traceback frame inside transformers, ``transformers/file:line function``;
``file:line function`` relative to the package with ``--bare-sites``), ``where_code`` (that frame's source line, e.g.
``query_states = self.q_proj(hidden_states).view(hidden_shape)...``), ``where_last`` (deepest frame overall),
``max_abs_diff`` (TP logits vs the same checkpoint run without TP on this rank), ``seconds``; and for
mode ``cb`` (``generate_batch`` with the paged cache, run right after loading and independently of the
forward): ``cb_ok``, ``cb_error_type``, ``cb_error``, ``cb_where``, ``cb_where_code`` (``cb_ok`` is ``None``
otherwise).

The model is loaded with ``from_pretrained(path, tp_plan="auto")`` (transformers 5.x turns the
``tp_plan`` keyword into ``DistributedConfig(tp_plan="auto")``, modeling_utils.py ``from_pretrained``);
the process group is initialised here with the gloo backend (CPU) before the first load, and
transformers builds its TP device mesh on it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

#: Characters of an exception message kept in a record (``--max-error-chars``).
MAX_ERROR_CHARS = 4000
#: Prefix of a raise site's path inside the transformers package (``--bare-sites``: none).
SITE_PREFIX = "transformers/"
SEQ_LEN = 8


def _frames(exc: BaseException) -> tuple[str, str, str]:
    """(deepest frame inside transformers as ``path:line function``, its source line, deepest frame overall)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where_tf, code = "", ""
    for fr in tb:
        if "/transformers/" in fr.filename:
            where_tf = f"{SITE_PREFIX}{fr.filename.split('/transformers/', 1)[1]}:{fr.lineno} {fr.name}"
            code = (fr.line or "").strip()
    last = tb[-1] if tb else None
    where_last = f"{last.filename.rsplit('/site-packages/', 1)[-1]}:{last.lineno} {last.name}" if last else ""
    return where_tf, code, where_last


def _record_error(rec: dict, stage: str, exc: BaseException) -> None:
    rec["stage"] = stage
    rec["error_type"] = type(exc).__name__
    rec["error"] = str(exc)[:MAX_ERROR_CHARS]
    rec["where"], rec["where_code"], rec["where_last"] = _frames(exc)


class _ErrorCapture(logging.Handler):
    """Collects ERROR records of the transformers loggers.

    ``generate_batch`` does not raise when its background generation thread fails: it logs the
    exception (``ContinuousBatchingLogger``) and fails the requests (driver rank) or returns no results
    (other ranks). The logged exception is what this stage reports.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _load(path: str, dtype: str = "float32"):
    import transformers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # tp_plan= keyword deprecation notice
        return _auto(path).from_pretrained(path, tp_plan="auto", dtype=dtype)


def _auto(path: str):
    """AutoModelForCausalLM, or AutoModelForImageTextToText for a config the causal-LM class does not map."""
    import transformers

    cfg = transformers.AutoConfig.from_pretrained(path)
    if type(cfg) not in transformers.AutoModelForCausalLM._model_mapping and \
            type(cfg) in transformers.AutoModelForImageTextToText._model_mapping:
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM


def _run_cb(model, rec: dict, capture: _ErrorCapture) -> None:
    """Drive the continuous-batching manager (paged cache) for 2 new tokens on 2 short prompts."""
    import transformers

    capture.records.clear()
    gen = transformers.GenerationConfig(max_new_tokens=2, do_sample=False, eos_token_id=None, pad_token_id=0)
    cbc = transformers.ContinuousBatchingConfig(
        page_size=16, num_blocks=16, max_batch_tokens=32, cpu_group_timeout=60, seed=0
    )
    results = model.generate_batch(
        inputs=[[1, 2, 3, 4], [5, 6, 7]], generation_config=gen, continuous_batching_config=cbc, warmup=False
    )
    errors = [r for r in capture.records if r.exc_info]
    if errors:
        exc = errors[0].exc_info[1]
        raise exc
    if capture.records:
        raise RuntimeError("; ".join(r.getMessage() for r in capture.records)[:MAX_ERROR_CHARS])
    if len(results) != 2:
        raise RuntimeError(f"generate_batch returned {len(results)} of 2 results")
    for out in results.values():
        err = getattr(out, "error", None)
        if err:
            raise RuntimeError(f"request failed: {err}")
        if len(getattr(out, "generated_tokens", []) or []) != 2:
            raise RuntimeError(f"request produced {getattr(out, 'generated_tokens', None)!r}, wanted 2 tokens")


def run_case(case: dict, rank: int, world: int, capture: _ErrorCapture) -> dict:
    """Load, [continuous batching,] forward, compare with the unsharded reference; never raises."""
    import torch
    import transformers

    rec: dict = {
        "case_id": case["case_id"],
        "rank": rank,
        "world_size": world,
        "load_ok": False,
        "forward_ok": False,
        "cb_ok": None,
        "stage": "load",
        "error_type": "",
        "error": "",
        "where": "",
        "where_code": "",
        "where_last": "",
        "cb_error_type": "",
        "cb_error": "",
        "cb_where": "",
        "cb_where_code": "",
        "max_abs_diff": None,
    }
    t0 = time.perf_counter()
    try:
        try:
            model = _load(case["path"], case.get("dtype", "float32"))
        except Exception as exc:
            _record_error(rec, "load", exc)
            return rec
        rec["load_ok"] = True
        if case.get("mode") == "cb":
            # Before the plain forward: the paged cache is built before the first forward of the batch,
            # so its own check (not the attention reshape) decides this stage.
            try:
                _run_cb(model, rec, capture)
                rec["cb_ok"] = True
            except Exception as exc:
                rec["cb_ok"] = False
                rec["cb_error_type"] = type(exc).__name__
                rec["cb_error"] = str(exc)[:MAX_ERROR_CHARS]
                rec["cb_where"], rec["cb_where_code"], _ = _frames(exc)
            # generate_batch switched the attention to a paged implementation: reload for the plain forward
            model = _load(case["path"], case.get("dtype", "float32"))
        gen = torch.Generator().manual_seed(7)
        ids = torch.randint(0, int(case["vocab"]), (1, SEQ_LEN), generator=gen)
        try:
            with torch.no_grad():
                logits = model(input_ids=ids).logits
            if tuple(logits.shape) != (1, SEQ_LEN, int(case["vocab"])):
                raise RuntimeError(f"logits shape {tuple(logits.shape)}, wanted (1, {SEQ_LEN}, {case['vocab']})")
            if not torch.isfinite(logits).all():
                raise RuntimeError("non-finite logits")
        except Exception as exc:
            _record_error(rec, "forward", exc)
            return rec
        rec["forward_ok"] = True
        # The same checkpoint without TP on this rank: the TP logits must equal it.
        try:
            ref = _auto(case["path"]).from_pretrained(case["path"], dtype=case.get("dtype", "float32"))
            with torch.no_grad():
                ref_logits = ref(input_ids=ids).logits
            rec["max_abs_diff"] = float((logits.float() - ref_logits.float()).abs().max())
        except Exception as exc:
            _record_error(rec, "reference", exc)
            return rec
        rec["stage"] = "done"
        return rec
    finally:
        rec["seconds"] = round(time.perf_counter() - t0, 3)


def _die_with_parent() -> None:
    """Linux: get SIGKILL when torchrun (our parent) dies, so a killed run leaves no orphan ranks."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG = 1
    except Exception:  # not Linux: the runner kills the pids in OUT/pids instead
        pass


def _set_format(max_error_chars: int, site_prefix: str) -> None:
    """The record format of this process: message length kept (characters) and raise-site path prefix."""
    global MAX_ERROR_CHARS, SITE_PREFIX
    MAX_ERROR_CHARS, SITE_PREFIX = max(1, int(max_error_chars)), site_prefix


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-error-chars", type=int, default=MAX_ERROR_CHARS,
                    help="characters of an exception message kept (default %(default)s)")
    ap.add_argument("--bare-sites", action="store_true",
                    help="raise sites relative to the transformers package, without the 'transformers/' prefix")
    args = ap.parse_args(argv)
    _set_format(args.max_error_chars, "" if args.bare_sites else "transformers/")

    _die_with_parent()
    pids = Path(args.out) / "pids"
    pids.mkdir(parents=True, exist_ok=True)
    (pids / f"{os.getpid()}").write_text(os.environ.get("RANK", "?"))
    if os.environ.get("TP_MATRIX_HANG_RANK") == os.environ.get("RANK"):
        time.sleep(3600)  # fault injection for the runner's timeout test: this rank never reports

    import torch
    import torch.distributed as dist
    import transformers

    transformers.logging.set_verbosity_error()
    capture = _ErrorCapture()
    logging.getLogger("transformers").addHandler(capture)
    # continuous batching logs its background-thread errors here (generation/continuous_batching/utils.py)
    logging.getLogger("ContinuousBatchingLogger").addHandler(capture)

    torch.set_num_threads(1)
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    cases = json.loads(Path(args.spec).read_text())
    out = Path(args.out) / f"rank{rank}.jsonl"
    with out.open("a", encoding="utf-8") as fh:
        for case in cases:
            dist.barrier()  # start every case together; a rank stuck in the previous case stalls here
            rec = run_case(case, rank, world, capture)
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
