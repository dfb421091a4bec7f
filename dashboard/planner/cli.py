"""``tp-planner plan``: the thin command (argument parsing, then :func:`dashboard.planner.plan`)."""

from __future__ import annotations

import os
from typing import Sequence

import pandas as pd

from dashboard.planner.common import PLAN_FRAMEWORKS, SCHEMA_VERSION
from dashboard.planner.enumeration import CROSS_NODE_HINTS
from dashboard.planner.formatting import format_table, plan_to_dict
from dashboard.planner.inputs import resolve_record
from dashboard.planner.plan import plan


def main(argv: Sequence[str] | None = None) -> int:
    """``tp-planner plan MODEL --gpus N --gpu GPU [...]``: print :func:`plan` as a table or JSON.
    Exit status 0 when some layout fits (starts and holds ``--min-sequences``), 1 when none does (the plan
    is still printed: every refusal and shortfall), 2 for bad usage / input (message on stderr)."""
    import argparse
    import json
    import sys

    from dashboard.terminal import safe_text

    ap = argparse.ArgumentParser(prog="tp-planner plan",
                                 description="Every way to split N GPUs for one model under vLLM, SGLang and "
                                             "TensorRT-LLM: verdict, capacity, ranking, launch commands.")
    ap.add_argument("model", help="a catalog model id (e.g. meta-llama/Llama-3.1-70B-Instruct), else a config.json, "
                    "a model folder, - (stdin) or a Hub id, read as tp-planner check reads them")
    ap.add_argument("--gpus", required=True, help="total GPU count N")
    ap.add_argument("--gpu", required=True, help="GPU id of data/gpus.csv (e.g. H100-80GB), or other:GiB for a card given by its "
                    "memory per GPU (e.g. other:24)")
    ap.add_argument("--gpus-per-node", default=None, help="GPUs per node (default: the GPU table's)")
    ap.add_argument("--context-len", "--max-model-len", dest="context_len", default="32768",
                    help="tokens per sequence: 32768, 32k (x1000), 32K (x1024), 1m / 1M, as vLLM reads "
                         "--max-model-len (default 32768)")
    ap.add_argument("--framework", action="append", choices=PLAN_FRAMEWORKS,
                    help="framework to plan (repeatable; default: all three)")
    ap.add_argument("--version", action="append", default=[], metavar="FRAMEWORK=RELEASE",
                    help="release (or date) of a framework, e.g. vllm=0.22.0 (repeatable)")
    ap.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype (bf16, fp16, fp8; default bf16)")
    ap.add_argument("--weight-dtype", default=None, help="weight format override (default: the checkpoint's)")
    ap.add_argument("--min-sequences", default=None, help="concurrent sequences a layout must hold (default 1)")
    ap.add_argument("--cross-node-tp", action="store_true", help="allow TP groups that span nodes")
    ap.add_argument("--catalog", default=None, help="catalog parquet (default: the shipped one)")
    ap.add_argument("--refresh", action="store_true",
                    help="fetch the Hub's current config.json for MODEL even when the catalog has it (by default a "
                         "catalog model is planned from the catalog, with no network)")
    ap.add_argument("--limit", default="40", help="table rows to print (0 = all; default 40)")
    ap.add_argument("--json", action="store_true", help="print JSON (schema_version %d)" % SCHEMA_VERSION)
    argl = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argl

    class _Usage(Exception):
        pass

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # noqa: D401 - one line like tp-planner check's, also as JSON
            raise _Usage(message)

    ap.__class__ = _Parser
    if any(a in ("-h", "--help") for a in argl):
        ap.print_help()
        return 0
    from dashboard.environment import environment_errors

    bad_env = environment_errors()
    if bad_env:  # one line per variable, before any other work
        for line in bad_env:
            print(f"tp-planner plan: error: {line}", file=sys.stderr)
        if as_json:
            print(json.dumps({"schema_version": SCHEMA_VERSION, "error": "; ".join(bad_env), "exit_status": 2}))
        return 2
    try:
        args = ap.parse_args(argl)
    except _Usage as e:
        msg = safe_text(e, 600)
        print(f"tp-planner plan: error: {msg}", file=sys.stderr)
        if as_json:
            print(json.dumps({"schema_version": SCHEMA_VERSION, "error": msg, "exit_status": 2}))
        return 2
    try:
        from dashboard.sharding import whole_number

        from dashboard.sharding import parallel_size

        # one number reader for every count (ASCII digits, as tp-planner check reads --tp), named as typed
        gpus = parallel_size(args.gpus, "--gpus")
        gpn = None if args.gpus_per_node is None else parallel_size(args.gpus_per_node, "--gpus-per-node")
        limit = whole_number(args.limit)
        if limit is None:
            raise ValueError(f"--limit must be 0 (all) or a whole number of rows, got {safe_text(args.limit, 40)!r}")
        from dashboard.launch import LaunchError, parse_len

        try:
            context_len = parse_len(args.context_len, "--context-len")
        except LaunchError as e:
            raise ValueError(str(e)) from None
        versions = {}
        for item in args.version:
            fw, sep, rel = item.partition("=")
            if not sep:
                raise ValueError(f"--version takes FRAMEWORK=RELEASE, got {item!r}")
            versions[fw.strip()] = rel.strip()
        catalog = None
        if args.catalog:
            from dashboard.catalog import load_catalog

            catalog = load_catalog(args.catalog)
        snapshot = ""
        try:
            if args.refresh:
                raise ValueError("--refresh: ask the Hub")
            record = resolve_record(args.model, catalog)
            from dashboard.check.source import source_of_row

            got = source_of_row(record)
            snapshot = (got[1].describe() if got is not None else "shipped catalog") if catalog is None else \
                f"catalog {args.catalog}"
        except ValueError:
            # not in the catalog (or --refresh): a config.json, a model folder, '-' (stdin) or a Hub id, read
            # as ``tp-planner check`` reads it
            from dashboard.check import CheckInputError, load_model

            try:
                rec, src = load_model(args.model, refresh=args.refresh,
                                      config_hint="give a local config.json (or its folder) as MODEL")
            except CheckInputError as e:
                # (the message names the model once)
                raise ValueError(str(e) if args.refresh else f"not in the catalog; {e}") from None
            record = pd.DataFrame([rec])
            snapshot = src.describe() + (f"; {src.note}" if src.note else "")
        if versions:
            from dashboard import rules as _rules
            from dashboard.check import check_release

            for fw, rel in versions.items():
                if fw not in PLAN_FRAMEWORKS:
                    raise ValueError(f"--version {fw}={rel}: unknown framework {fw!r}; expected one of "
                                     f"{', '.join(PLAN_FRAMEWORKS)}")
                check_release(fw, rel, _rules.resolve_version(fw, rel))
        df = plan(record, gpus, args.gpu, gpus_per_node=gpn,
                  frameworks=tuple(args.framework or PLAN_FRAMEWORKS), versions=versions or None,
                  context_len=context_len, kv_dtype=args.kv_dtype, weight_dtype=args.weight_dtype,
                  min_sequences=args.min_sequences, cross_node_tp=args.cross_node_tp,
                  cross_node_hint=CROSS_NODE_HINTS["cli"],
                  commands=True if args.json else "best")  # (the table prints the best layouts' commands only)
    except Exception as exc:  # bad input: one line, exit 2 (TP_PLANNER_DEBUG=1 shows the traceback)
        from dashboard.check import CheckInputError

        if not isinstance(exc, (ValueError, TypeError, FileNotFoundError, CheckInputError)) or \
                os.environ.get("TP_PLANNER_DEBUG"):
            raise
        msg = safe_text(exc, 600)
        print(f"tp-planner plan: error: {msg}", file=sys.stderr)
        if args.json:  # like tp-planner check --json: a JSON error object on stdout
            print(json.dumps({"schema_version": SCHEMA_VERSION, "error": msg, "exit_status": 2}))
        return 2
    if args.json:
        doc = plan_to_dict(df)
        doc["config"] = snapshot
        print(json.dumps(doc, indent=1))  # ASCII: every control and bidi character as a \\u escape
    else:
        print(safe_text(f"config: {snapshot}"))
        # the table's line breaks are ours; every string in it from the config passes safe_text
        print(safe_text(format_table(df, limit=None if limit == 0 else limit), keep_newlines=True))
    return 0 if bool(df["fits"].any()) else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
