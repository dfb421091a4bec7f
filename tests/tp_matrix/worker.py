"""torchrun worker of the tests' TP matrix: :mod:`conformance.transformers_tp_worker` with this matrix's
record format (messages cut at 600 characters, raise sites relative to the transformers package).

Usage (the runner builds the command)::

    OMP_NUM_THREADS=1 torchrun --nproc-per-node N --master-addr 127.0.0.1 --master-port P \
        tests/tp_matrix/worker.py --spec spec.json --out OUTDIR

What a rank does and the fields of its ``OUTDIR/rank{R}.jsonl`` lines: see the conformance worker.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The options this matrix runs the conformance worker with.
ARGS = ["--max-error-chars", "600", "--bare-sites"]


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root (run as a script by torchrun)
    from conformance import transformers_tp_worker

    return transformers_tp_worker.main(ARGS + list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
