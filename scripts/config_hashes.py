"""Store the content hashes of the configs each executed conformance table ran
(``data/conformance/<table>-configs.json``; see :mod:`dashboard.rules.evidence`).

    python scripts/config_hashes.py [--configs ../shared/hub-configs] [--write]

Without ``--write`` it prints, per table, how many stored hashes differ from a recomputation (exit 1 when
any does). Run it with ``--write`` after a conformance table is (re)run, never to make a changed catalog
row count as run: a config is "reproduced by running" only when the table ran that very config.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dashboard import frameworks  # noqa: E402
from dashboard.atomic import atomic_write_text  # noqa: E402
from dashboard.rules import evidence  # noqa: E402


def tables() -> list[Path]:
    """Every executed table of every framework (each file once)."""
    out: dict[Path, None] = {}
    for fw in frameworks.names():
        for rel in frameworks.get(fw).executed_releases:
            p = evidence.table_file(fw, rel)
            if p is not None:
                out[p] = None
            for plat in frameworks.get(fw).executed_platforms.get(rel, ()):  # data/conformance/<platform>/
                p = evidence.table_file(fw, rel, plat)
                if p is not None:
                    out[p] = None
    return list(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=str(ROOT.parent / "shared" / "hub-configs"),
                    help="the verbatim config.json files the harness ran (default ../shared/hub-configs)")
    ap.add_argument("--write", action="store_true", help="write data/conformance/<table>-configs.json")
    args = ap.parse_args(argv)
    if not Path(args.configs).is_dir():
        print(f"error: {args.configs} is not a folder of <org>--<name>.json configs", file=sys.stderr)
        return 2
    stale = 0
    for t in tables():
        hashes = evidence.run_hashes(t, args.configs)
        dest = evidence.configs_file(t)
        old = json.loads(dest.read_text(encoding="utf-8")).get("configs", {}) if dest.is_file() else {}
        diff = sorted(k for k in set(old) | set(hashes) if old.get(k) != hashes.get(k))
        stale += bool(diff)
        print(f"{t.name}: {len(hashes)} configs, {len(diff)} differ from {dest.name}")
        if args.write:
            doc = {"table": t.name, "written_by": "python scripts/config_hashes.py --write",
                   "hash": "dashboard.rules.evidence.config_hash", "configs": hashes}
            atomic_write_text(dest, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    raise SystemExit(main())
