"""vLLM's attention-backend selection, executed per platform (issue 23): the facts the rules engine's port reads.

Run by the framework venv's interpreter, one process per platform (the platform stand-in must be installed
before vLLM is imported)::

    /path/to/venv/bin/python conformance/vllm_attention_worker.py < job.json > out.json

The job (one JSON object on stdin): ``{"platform": "cuda-sm80", "device": {...descriptor...},
"grid": [[head_size, dtype, kv_cache_dtype, use_mla, has_sink, use_sparse, use_mm_prefix,
has_sliding_window, num_heads], ...]}``. The answer (one JSON object on stdout, after the marker line
``@@ATTENTION``):

* ``backends``: per backend of :class:`AttentionBackendEnum` that vLLM's CUDA priority lists can name, the
  answers of the class's own ``supports_*`` / ``is_*`` methods (the leaves of
  ``AttentionBackend.validate_configuration``, ``vllm/v1/attention/backend.py:279-369``): head sizes 1..1024,
  dtypes, KV-cache dtypes, the flags, the compute capability of this platform, and every non-``None``
  ``supports_combination`` reason over the grid; ``import_error`` when the class cannot be imported.
* ``models``: per catalog model of the job (``models``: ``[{"config_path", "model_id", "sidecars"}]``), built
  at TP 1 as ``vllm_worker.run_cell`` builds a cell, every call the model's layers made to
  ``current_platform.get_attn_backend_cls`` -- the ``AttentionSelectorConfig`` fields, ``num_heads`` and the
  backend chosen or the error raised (deduplicated, in call order) -- and the cell's outcome.
* ``selection``: per grid entry, what ``current_platform.get_attn_backend_cls(None, config, num_heads)``
  returned (the backend's enum name) or raised (type and message) -- vLLM's whole selection, for the port
  to be tested against.

Depends only on vLLM, torch and the sibling ``vllm_worker.py`` (its platform stand-in).
"""

from __future__ import annotations

import json
import sys
import traceback

try:
    from conformance import vllm_worker as vw
except ImportError:  # run as a script by the venv's interpreter
    import vllm_worker as vw

MARK = "@@ATTENTION "
HEAD_SIZES = range(1, 1025)
DTYPES = ("float16", "bfloat16", "float32")
FLAGS = ("is_mla", "supports_sink", "supports_mm_prefix", "is_sparse", "supports_per_head_quant_scales",
         "supports_sliding_window", "supports_rswa", "supports_non_causal", "supports_batch_invariance",
         "supports_kv_connector", "supports_pcp", "supports_dcp", "supports_device_cpu_query_lens_mismatch")
ATTN_TYPES = ("decoder", "encoder", "encoder_only", "encoder_decoder")


def _call(fn, *a):
    try:
        return fn(*a)
    except Exception as e:  # noqa: BLE001 - recorded, as vLLM's own selection would meet it
        return {"error": f"{type(e).__name__}: {e}"[:300]}


def backend_class(backend):
    """vLLM's class of ``backend`` (``cuda.py:189 _get_attn_backend_class``) imported under
    :func:`cuda_allocations_on_meta`; ImportError/OSError propagate, as vLLM's selection catches them."""
    from vllm.platforms.cuda import _get_attn_backend_class

    with vw.cuda_allocations_on_meta():
        return _get_attn_backend_class(backend)


def combination_keys(spec: dict):
    """Every ``(head_size, dtype, kv_cache_dtype, use_mla, has_sink, use_sparse, use_mm_prefix)`` of the job's
    ``combination`` spec: ``{"head_sizes": [...], "dtypes": [...], "kv_cache_dtypes": [...]}`` x every flag."""
    import itertools

    for h, dt, kvd in itertools.product(spec["head_sizes"], spec["dtypes"], spec["kv_cache_dtypes"]):
        for flags in itertools.product((False, True), repeat=4):
            yield (h, dt, kvd, *flags)


def backend_facts(backend, cap, grid) -> dict:
    import torch

    from vllm.config.cache import CacheDType

    try:
        cls = backend_class(backend)
    except (ImportError, OSError) as e:
        return {"import_error": f"{type(e).__name__}: {e}"}
    except Exception as e:  # noqa: BLE001 - the stand-in could not import it: not vLLM's answer
        return {"import_error": "", "harness_error": f"{type(e).__name__}: {e}"[:300]}
    out: dict = {"import_error": ""}
    out["head_sizes"] = [h for h in HEAD_SIZES if _call(cls.supports_head_size, h) is True]
    out["dtypes"] = [d for d in DTYPES if _call(cls.supports_dtype, getattr(torch, d)) is True]
    kv = list(CacheDType.__args__)
    out["kv_cache_dtypes"] = [k for k in kv if _call(cls.supports_kv_cache_dtype, k) is True]
    out["block_size_none"] = _call(cls.supports_block_size, None)
    for f in FLAGS:
        out[f] = _call(getattr(cls, f))
    out["compute_capability"] = _call(cls.supports_compute_capability, cap)
    out["attn_types"] = [t for t in ATTN_TYPES if _call(cls.supports_attn_type, t) is True]
    combos = []  # rows [head_size, dtype, kv_cache_dtype, use_mla, has_sink, use_sparse, use_mm_prefix, reason]
    if backend.name in grid.get("backends", ()):
        for key in combination_keys(grid):
            h, dt, kvd, mla, sink, sparse, mm = key
            r = _call(cls.supports_combination, h, getattr(torch, dt), kvd, None, mla, sink, sparse, mm, cap)
            if r is not None:
                combos.append([*key, r if isinstance(r, str) else json.dumps(r)])
    out["combination"] = combos
    return out


CALLS: list = []


def record_selector_calls(platform) -> None:
    """Wrap the stand-in's ``get_attn_backend_cls`` (``vllm/platforms/cuda.py:420``) so every call is appended
    to :data:`CALLS` (config fields, ``num_heads``, the backend name or the exception); vLLM's answer is
    returned / raised unchanged."""
    cls = type(platform)
    orig = cls.get_attn_backend_cls.__func__

    def wrapped(c, selected_backend, attn_selector_config, num_heads=None):
        entry = {"config": {k: (str(v).replace("torch.", "") if k == "dtype" else v)
                            for k, v in attn_selector_config._asdict().items()},
                 "num_heads": num_heads, "selected": None if selected_backend is None else str(selected_backend)}
        try:
            path = orig(c, selected_backend, attn_selector_config, num_heads)
        except Exception as e:  # noqa: BLE001
            entry.update(_exc(e))
            CALLS.append(entry)
            raise
        entry["backend"] = _backend_name(path)
        CALLS.append(entry)
        return path

    cls.get_attn_backend_cls = classmethod(wrapped)


def _backend_name(path: str) -> str:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    return next((b.name for b in AttentionBackendEnum if b.value and b.value == path), path)


def _exc(e: BaseException) -> dict:
    tb = traceback.extract_tb(e.__traceback__)
    site = next(((f.filename, f.lineno) for f in reversed(tb) if "/vllm/" in f.filename), ("", 0))
    return {"exc_type": type(e).__name__, "message": str(e)[:4000],
            "file": "vllm/" + site[0].split("/vllm/", 1)[-1] if site[0] else "", "line": site[1]}


def _clear_selection_cache() -> None:
    """vLLM caches each selection per process (``selector.py:206`` ``@cache _cached_get_attn_backend``): one
    server selects for one model. Cleared per model, so each model's layers make their own calls (and the
    checks that read the model config run for it)."""
    from vllm.v1.attention import selector

    selector._cached_get_attn_backend.cache_clear()


def model_calls(job_model: dict) -> dict:
    """One model at TP 1 (``vllm_worker.run_cell`` in a folder holding its config and sidecars): the selector
    calls its layers made and the cell's outcome / first error."""
    import os
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="attn-") as d:
        shutil.copyfile(job_model["config_path"], os.path.join(d, "config.json"))
        quantization = None
        for name, path in sorted((job_model.get("sidecars") or {}).items()):
            shutil.copyfile(path, os.path.join(d, os.path.basename(name)))
            if os.path.basename(name) == "quantize_config.json":
                quantization = json.load(open(path)).get("quant_method") or "gptq"
        raw = open(job_model["config_path"], "rb").read()
        cell = {"tp": 1, "pp": 1, "dp": 1, "ep": 0, "vision_dp": 0, "quantization": quantization,
                **vw._auto_map(raw)}
        del CALLS[:]
        _clear_selection_cache()
        try:
            rec = vw.run_cell(d, cell)
        except Exception as e:  # noqa: BLE001
            rec = {"outcome": "harness_error", **_exc(e)}
    calls, seen = [], set()
    for c in CALLS:
        key = json.dumps(c, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            calls.append(c)
    keep = ("outcome", "exc_type", "message", "file", "line", "reason")
    return {"model_id": job_model["model_id"], "calls": calls,
            **{k: rec.get(k) for k in keep if rec.get(k) is not None}}


def quantization_facts() -> dict:
    """Per quantization method vLLM registers (``QUANTIZATION_METHODS``), its config class's
    ``get_min_capability()`` -- what ``VllmConfig._get_quantization_config`` (``vllm/config/vllm.py:931``)
    compares the GPU's capability with."""
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS, get_quantization_config

    out = {}
    for name in QUANTIZATION_METHODS:
        try:
            out[name] = int(get_quantization_config(name).get_min_capability())
        except Exception as e:  # noqa: BLE001
            out[name] = f"{type(e).__name__}: {e}"[:200]
    return out


def main() -> int:
    vw.set_worker_env()
    job = json.loads(sys.stdin.readline())
    platform = vw.install_platform(job["platform"], job.get("device"))
    if job.get("quantization_only"):
        import vllm

        sys.stdout.write(MARK + json.dumps({"version": vllm.__version__, "quantization": quantization_facts()}) + "\n")
        return 0
    import torch
    import vllm
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1.attention.backends.registry import AttentionBackendEnum
    from vllm.v1.attention.selector import AttentionSelectorConfig

    vw.inspect_in_process()
    vw.install_streams()
    record_selector_calls(platform)
    cap = platform.get_device_capability()
    assert isinstance(cap, DeviceCapability)
    grid = job["grid"]
    from vllm.config import VllmConfig, set_current_vllm_config

    backends = {}
    # a default config, no model: the answers that read the model config (qk_nope_head_dim, index_topk, head
    # counts) take their no-model branch; the port adds the model's part (dashboard/frameworks/vllm/attention.py)
    with set_current_vllm_config(VllmConfig()):
        for b in AttentionBackendEnum:
            if not b.value:  # TORCH_SDPA: a ViT tag with no class
                continue
            backends[b.name] = backend_facts(b, cap, job["combination"])
    vw.preload_attention_backends()  # selection below finds every backend module loaded
    models = [model_calls(m) for m in job.get("models", [])]
    selection = []
    for g in grid:
        h, dt, kvd, mla, sink, sparse, mm, swa, nh = g
        cfg = AttentionSelectorConfig(head_size=h, dtype=getattr(torch, dt), kv_cache_dtype=kvd, block_size=None,
                                      use_mla=mla, has_sink=sink, use_sparse=sparse, use_mm_prefix=mm,
                                      has_sliding_window=swa)
        try:  # no model: the checks that read the model config (qk_nope_head_dim, index_topk) are skipped
            with set_current_vllm_config(VllmConfig()):
                selection.append({"backend": _backend_name(platform.get_attn_backend_cls(None, cfg, nh))})
        except Exception as e:  # noqa: BLE001
            selection.append(_exc(e))
        del CALLS[:]
    sys.stdout.write(MARK + json.dumps({"platform": job["platform"], "version": vllm.__version__,
                                        "capability": [cap.major, cap.minor],
                                        "device_name": platform.get_device_name(),
                                        "backends": backends, "models": models,
                                        "quantization": quantization_facts(),
                                        "selection": selection}, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
