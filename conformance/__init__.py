"""Conformance harness: run the serving frameworks' own code on every catalog model under simulated
parallel layouts, and record what really happens (built / refused, with the exact exception and the
``file:line`` of the raise).

Not imported by :mod:`dashboard`. Each framework runs in its own virtualenv outside the repo (see
``data/conformance/README.md`` for the commands); the driver (:mod:`conformance.driver`) runs in the
project's Python and talks to one worker process per model (:mod:`conformance.vllm_worker`, executed by
the framework venv's interpreter, importing nothing from this repo but the stdlib-only
:mod:`conformance.worker_common`) over JSON lines.
"""
