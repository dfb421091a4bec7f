"""Scrape ``config.json`` files and metadata from the Hugging Face Hub into the catalog.

This package's modules are the only ones of the project that import :mod:`huggingface_hub` (tested with 2.4). It is
I/O: network, the Hugging Face cache, and the catalog file. Everything pure (turning a config into a
record, the catalog's dtypes, merging, atomic writes) lives in :mod:`dashboard.catalog`.

Command line::

    python -m dashboard.hub scrape [REPO_IDS...] [--repos-file F] [--author A] [--search S]
        [--pipeline-tag T] [--sort downloads|likes|trending] [--limit N] [--workers N]
        [--refresh] [--catalog PATH] [--timeout S] [--max-retries N] [--no-progress]

From a notebook::

    from dashboard.hub import scrape
    df, summary = scrape(["meta-llama/Llama-3.1-8B"], catalog_path="my-catalog.parquet")
    print(summary)

What one run does
-----------------
1. **Select** repos: explicit ids (arguments and/or a file, one id per line, ``#`` comments) and/or a
   Hub query through :meth:`huggingface_hub.HfApi.list_models` (``author``, ``search``,
   ``pipeline_tag``, ``sort`` = downloads | likes | trending, ``limit``), de-duplicated in order.
2. For each repo, in a bounded thread pool (``workers``): metadata (commit ``sha``, ``last_modified``,
   ``downloads``, ``likes``, ``gated``, safetensors parameter counts by dtype) from
   :meth:`HfApi.model_info` (or from the listing when it already carried them), then ``config.json``
   through :func:`dashboard.hub.fetch.download_capped` pinned to that sha: the ``HEAD``'s size is checked
   against :data:`dashboard.schema.MAX_CONFIG_BYTES` (8 MiB, the cap of ``check`` and ``plan`` too) before
   any byte is downloaded, the body is read streamed and capped (an understated size or a gzip body never
   writes more than the cap) within an overall deadline, and the Hugging Face cache under ``HF_HOME`` is
   used and filled; then :func:`dashboard.catalog.normalize_config`.
3. **Incremental**: a repo whose catalog row has the same sha (status ok, invalid_json or not_found)
   downloads nothing; only its popularity columns are refreshed. ``refresh=True`` forces a download.
4. **One status per repo**, never an exception: ``ok``; ``gated`` (401/403, ``GatedRepoError``);
   ``not_found`` (404: no such repo, revision or ``config.json``); ``invalid_json``; ``error`` with
   the reason (timeouts, 5xx after retries, a config the normalizer cannot use ...).
5. **Nothing is lost**: rows of repos not in this run are kept (:func:`dashboard.catalog.merge_catalog`);
   a row with status ``ok`` is only ever replaced by a newer ``ok`` row (a failed or gated re-fetch keeps
   the shapes already known and is reported as ``kept_previous``); every finished repo is appended at
   once to a journal beside the catalog (``<catalog>.journal.jsonl``), the catalog is rewritten
   atomically (:func:`dashboard.catalog.write_catalog`) every ``checkpoint_every`` seconds and at the
   end, and the journal is removed only after the final write. A run killed at any point and started
   again replays the journal, skips the repos it holds, and finishes the rest. A file lock
   (in the temp folder, keyed by the catalog's path) keeps two scrapes from writing one catalog.

Retries and timeouts (how they wrap huggingface_hub's own)
-----------------------------------------------------------
huggingface_hub 2.x talks HTTP through a shared ``httpx2.Client`` created with ``timeout=None``:

* ``HfApi.model_info`` sends one request with the ``timeout`` it is given and never retries: this module
  retries it (429, 408, 5xx, timeouts, connection errors) with exponential backoff
  ``backoff_base * 2**attempt`` (capped at ``backoff_max``, 0-10 % jitter), honouring ``Retry-After``
  (seconds or HTTP date; capped at ``retry_after_max``) and pausing *all* workers while a 429's
  ``Retry-After`` runs.
* ``HfApi.list_models`` pages through ``utils.http_backoff`` (5 retries, 1 s base, ``Retry-After``
  honoured, no timeout): this module adds its own retries around the whole listing.
* ``config.json`` (:func:`~dashboard.hub.fetch.download_capped`): the ``HEAD``
  (:func:`huggingface_hub.get_hf_file_metadata`, ``timeout`` s, without huggingface_hub's retries) and the
  streamed ``GET`` (``timeout`` s per read, :data:`~dashboard.hub.fetch.DOWNLOAD_DEADLINE_S` in all) are
  retried here like ``model_info``: 429 / 408 / 5xx, timeouts, connection resets and early closes. A repo
  whose requests were retried says so in its row (``parse_notes`` of an ``ok`` row, else ``status_reason``:
  ``N retries in M requests (first: ...)``). Offline, ``hf_hub_download(local_files_only=True)`` reads
  the cache.

Environment (as huggingface_hub defines it): ``HF_TOKEN`` (or a stored login) authenticates, and is
never written to the catalog, the journal or the logs (every string written or logged is scrubbed of
it); ``HF_ENDPOINT`` selects the Hub (read by huggingface_hub at import; ``endpoint=`` overrides);
``HF_HOME`` / ``HF_HUB_CACHE`` locate the download cache (``cache_dir=`` overrides);
``HF_HUB_OFFLINE=1`` makes no request at all: configs come from the cache only (repos not in it get
``error``), and a Hub query (``author=`` ...) is refused.

Modules
-------
:mod:`~dashboard.hub.scrub` (the token out of every string written or logged), :mod:`~dashboard.hub.retry`
(retries, backoff, error classification), :mod:`~dashboard.hub.rows` (catalog rows from Hub metadata),
:mod:`~dashboard.hub.fetch` (one repo's config for ``tp-planner check``), :mod:`~dashboard.hub.scrape`
(the scrape, journal and lock) and :mod:`~dashboard.hub.cli` (``python -m dashboard.hub``).
"""

from __future__ import annotations

from dashboard.hub.cli import main
from dashboard.hub.fetch import FetchedConfig, FetchError, fetch_config
from dashboard.hub.retry import RETRY_EXCEPTIONS, RETRY_STATUSES, RetryPolicy, classify_error, parse_retry_after
from dashboard.hub.rows import META_COLUMNS, meta_columns
from dashboard.hub.scrape import SORTS, ScrapeError, ScrapeSummary, read_repos_file, scrape

__all__ = ["FetchError", "FetchedConfig", "RetryPolicy", "ScrapeError", "ScrapeSummary", "fetch_config", "main",
           "read_repos_file", "scrape"]
