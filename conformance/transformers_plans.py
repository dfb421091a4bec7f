"""transformers native TP: which modules each catalog model's TP plan shards, read from the library itself.

``python -m conformance transformers plans`` runs, for every catalog config (``../shared/hub-configs``),
what ``AutoModelForCausalLM.from_pretrained(path, tp_plan="auto")`` does before it reads a weight:

1. ``AutoConfig.from_pretrained(<folder with the verbatim config.json>, trust_remote_code=False)``
   (``HF_HUB_OFFLINE=1``; the JSON is untrusted: nothing from the Hub, no remote code);
2. ``AutoModelForCausalLM.from_config(config)`` on the meta device (no memory, no weights): the model
   class the auto class picks (for a composite VLM config, the class its causal-LM mapping names);
3. ``model._resolve_parallel_plans(DistributedConfig(tp_size=2))``: the library's own plan resolution
   (class ``_tp_plan`` + config ``base_model_tp_plan`` + children's plans, ``embed_tokens`` added, ``*``
   expanded over the modules that exist). It raises the "has no `tp_plan`" ``ValueError`` for a model
   without a plan, exactly as ``from_pretrained`` does at any TP size > 1.

A model is one record (one row of ``data/conformance/transformers-<version>-plans.parquet``): what
happened (``outcome``), the raw and the effective plan (JSON, layer numbers folded to ``*``), and the
plan read per role: attention (q / k / v / fused qkv / MLA), dense MLP, experts, embeddings, LM head,
vision tower, plus the two predicates the library itself evaluates on the plan:

* ``kv_sharded``: ``distributed/tensor_parallel.py:get_kv_heads_per_rank`` (a key projection --
  ``k_proj``, ``qkv_proj``, ``query_key_value`` -- with style ``colwise``);
* ``cb_kv_tp``: ``generation/continuous_batching/distributed.py:are_kv_heads_tp_ed`` (plan keys ending in
  ``layers.*.self_attn.k_proj`` and ``layers.*.self_attn.v_proj``), which gates the paged cache's check.

Each model is checkpointed in ``data/conformance/.work/transformers-<version>-plans/<model>.json``
(atomic writes, git-ignored): a killed run resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Iterable

from dashboard.atomic import atomic_write, atomic_write_text
from dashboard.catalog import model_id_from_filename

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data" / "conformance"
FRAMEWORK = "transformers"

#: Outcomes of a plan record.
#: TP sizes of the tables (as conformance.driver.TP_SIZES).
TP_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)
PLAN_OUTCOMES = ("plan", "no_plan", "refused_config", "refused_class", "not_run", "harness_error")

PLAN_COLUMNS = (
    "framework", "version", "model_id", "model_type", "text_model_type", "architecture", "auto_class", "model_class",
    "outcome", "reason", "exc_type", "message", "file", "line", "function",
    "tp_plan", "effective_plan", "unmatched_rules", "ep_plan", "load_by_tp", "cb_by_tp", "layer_types",
    "attn_style", "q_module", "q_style", "k_module", "k_style", "v_module", "v_style",
    "heads_sharded", "kv_sharded", "cb_kv_tp", "mlp_style", "experts_style", "shared_experts_style",
    "embed_style", "lm_head_style", "linear_attn_style", "vision_style", "shape", "seconds",
)  # fmt: skip

_Q = ("q_proj", "q_b_proj", "query")
_K = ("k_proj", "key")
_V = ("v_proj", "value")
_FUSED = ("qkv_proj", "query_key_value", "c_attn", "W_pack", "Wqkv")
_MLA_KV = ("kv_b_proj",)
_VISION = ("vision", "visual", "image", "audio", "vpm", "mm_projector", "multi_modal_projector")
_LINEAR_ATTN = ("linear_attn", "mixer", "conv", "mamba", "kda", "deltanet")


def _strip_param(key: str) -> str:
    for suffix in (".weight", ".bias"):
        if key.endswith(suffix):
            return key[: -len(suffix)]
    return key


def _parts(key: str) -> list[str]:
    return key.split(".")


def _is_vision(key: str) -> bool:
    return any(v in p for p in _parts(key) for v in _VISION)


def _in_attention(key: str) -> bool:
    parts = _parts(key)[:-1]
    return any(("attn" in p or "attention" in p) and not any(la in p for la in _LINEAR_ATTN) for p in parts)


def _in_linear_attention(key: str) -> bool:
    return any(any(la in p for la in _LINEAR_ATTN) for p in _parts(key)[:-1]) and ".experts" not in key


def _summary(styles: Iterable[str]) -> str:
    s = sorted(set(styles))
    return "+".join(s) if s else "none"


def classify(effective: dict[str, str], raw_plan: dict[str, str]) -> dict:
    """The effective plan (module or parameter name with ``*`` -> style) read per role.

    Pure; used by the harness and by the tests (``dashboard.frameworks.transformers.rules_executed`` is checked
    against its output)."""
    mods: dict[str, str] = {}
    for k, v in effective.items():
        mods.setdefault(_strip_param(k), v)
    text = {k: v for k, v in mods.items() if not _is_vision(k)}
    vision = {k: v for k, v in mods.items() if _is_vision(k)}

    def role(names: tuple[str, ...]) -> tuple[str, str]:
        hits = sorted((k, v) for k, v in text.items() if k.rsplit(".", 1)[-1] in names and _in_attention(k))
        if not hits:
            return "", ""
        return hits[0][0], _summary(v for _, v in hits)

    q_mod, q_style = role(_Q)
    k_mod, k_style = role(_K)
    v_mod, v_style = role(_V)
    f_mod, f_style = role(_FUSED)
    m_mod, m_style = role(_MLA_KV)
    if f_mod:
        q_mod = q_mod or f_mod
        q_style = q_style or f_style
        k_mod, k_style, v_mod, v_style = k_mod or f_mod, k_style or f_style, v_mod or f_mod, v_style or f_style
    if m_mod and not k_mod:
        k_mod, k_style, v_mod, v_style = m_mod, m_style, m_mod, m_style
    attn_styles = {s for s in (q_style, k_style, v_style) if s}
    if not attn_styles:
        attn = "none"
    elif m_mod:
        attn = "mla_" + _summary(attn_styles)
    elif f_mod:
        attn = "fused_" + _summary(attn_styles)
    else:
        attn = _summary(attn_styles)
    # library predicates on the plan
    key_proj = ("k_proj", "qkv_proj", "query_key_value")
    kv_sharded = any(k.rsplit(".", 1)[-1] in key_proj and v == "colwise" for k, v in raw_plan.items())
    cb_kv_tp = all(any(k.endswith(f"layers.*.self_attn.{n}") for k in raw_plan) for n in ("k_proj", "v_proj"))
    heads_sharded = q_style == "colwise" or (bool(m_mod) and m_style == "colwise")

    def group(pred) -> str:
        return _summary(v for k, v in text.items() if pred(k))

    experts = group(lambda k: ".experts" in k and "shared_expert" not in k)
    shared = group(lambda k: "shared_expert" in k)
    mlp = group(lambda k: any(p in ("mlp", "feed_forward", "ffn") for p in _parts(k)[:-1])
                and ".experts" not in k and "shared_expert" not in k)
    embed = group(lambda k: k.rsplit(".", 1)[-1] in ("embed_tokens", "wte", "embed_in", "embeddings", "word_embeddings"))
    lm_head = group(lambda k: k == "lm_head")
    linear = group(lambda k: _in_linear_attention(k) and not _in_attention(k))
    vis = _summary(vision.values())
    if not text and not vision:
        shape = "no_plan"
    elif attn == "none" and mlp == "none" and experts == "none" and shared == "none" and linear == "none":
        shape = "embeddings_only"
    else:
        shape = f"attn={attn}"
        if mlp != "none":
            shape += f" mlp={mlp}"
        if experts != "none":
            shape += f" experts={experts}"
        if shared != "none":
            shape += f" shared={shared}"
        if linear != "none":
            shape += f" linear_attn={linear}"
    return {
        "attn_style": attn, "q_module": q_mod, "q_style": q_style, "k_module": k_mod, "k_style": k_style,
        "v_module": v_mod, "v_style": v_style, "heads_sharded": bool(heads_sharded), "kv_sharded": bool(kv_sharded),
        "cb_kv_tp": bool(cb_kv_tp), "mlp_style": mlp, "experts_style": experts, "shared_experts_style": shared,
        "embed_style": embed, "lm_head_style": lm_head, "linear_attn_style": linear, "vision_style": vis,
        "shape": shape,
    }  # fmt: skip


def _site(exc: BaseException) -> tuple[str, int, str]:
    """Innermost traceback frame inside the ``transformers`` package (path relative to it)."""
    tb = traceback.extract_tb(exc.__traceback__)
    best = None
    for fr in tb:
        if "/transformers/" in fr.filename:
            best = fr
    if best is None:
        return "", 0, ""
    return "transformers/" + best.filename.split("/transformers/", 1)[1], int(best.lineno or 0), best.name


def normalize_message(msg: str, folder: str) -> str:
    """The message with the harness's temp folder replaced by ``<model dir>``."""
    return msg.replace(folder, "<model dir>")


def inspect_config(path: Path, tp_size: int = 2) -> dict:
    """One catalog config through the library (see the module docstring). Never raises."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText, DistributedConfig
    from transformers.distributed.parallel_utils import replace_layer_number_by_wildcard

    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    text_cfg = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
    arch = raw.get("architectures") or [""]
    rec: dict = {
        "model_id": model_id_from_filename(path), "model_type": str(raw.get("model_type") or ""),
        "text_model_type": str(text_cfg.get("model_type") or ""), "architecture": str(arch[0] if arch else ""),
        "auto_class": "", "model_class": "", "outcome": "harness_error", "reason": "", "exc_type": "", "message": "", "file": "",
        "line": 0, "function": "", "tp_plan": "{}", "effective_plan": "{}", "unmatched_rules": "[]", "ep_plan": "{}", "load_by_tp": "{}", "cb_by_tp": "{}", "layer_types": "[]",
    }  # fmt: skip
    t0 = time.perf_counter()
    folder = tempfile.mkdtemp(prefix="tf-plan-")
    stage = "config"
    try:
        shutil.copy(path, Path(folder) / "config.json")
        try:
            config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
            stage = "class"
            auto = AutoModelForCausalLM
            if type(config) not in AutoModelForCausalLM._model_mapping and \
                    type(config) in AutoModelForImageTextToText._model_mapping:
                auto = AutoModelForImageTextToText  # a VLM: how its users load it
            rec["auto_class"] = auto.__name__
            with torch.device("meta"):
                model = auto.from_config(config, trust_remote_code=False)
            rec["model_class"] = type(model).__name__
            stage = "plan"
            raw_plan = dict(model.tp_plan or {})
            rec["tp_plan"] = json.dumps(raw_plan, sort_keys=True)
            rec["ep_plan"] = json.dumps(dict(model.ep_plan or {}), sort_keys=True)
            expanded = model._expand_parallel_plan(raw_plan) if raw_plan else {}
            effective = {replace_layer_number_by_wildcard(k): v for k, v in expanded.items()}
            rec["effective_plan"] = json.dumps(effective, sort_keys=True)
            names = {replace_layer_number_by_wildcard(n) for n, _ in model.named_modules()}
            names |= {replace_layer_number_by_wildcard(n) for n, _ in model.named_parameters()}
            rec["unmatched_rules"] = json.dumps(sorted(raw_plan.keys() - names))
            rec.update(classify(effective, raw_plan))
            # the load-time plan resolution at every TP size of the tables (raises for a model without plan)
            by_tp = {}
            for t in TP_SIZES[1:]:
                try:
                    model._resolve_parallel_plans(DistributedConfig(tp_size=t))
                    by_tp[str(t)] = ""
                except ValueError as exc:
                    by_tp[str(t)] = str(exc)
            rec["load_by_tp"] = json.dumps(by_tp, sort_keys=True)
            rec["cb_by_tp"] = json.dumps(_cb_cache_by_tp(model), sort_keys=True)
            text = model.config.get_text_config()
            rec["layer_types"] = json.dumps(sorted(set(getattr(text, "layer_types", None) or [])))
            model._resolve_parallel_plans(DistributedConfig(tp_size=tp_size))
            rec["outcome"] = "plan"
        except Exception as exc:  # the library refused: record what it said and where
            msg = normalize_message(str(exc), folder)
            f, ln, fn = _site(exc)
            rec.update(exc_type=type(exc).__name__, message=msg, file=f, line=ln, function=fn)
            if "contains custom code which must be executed" in msg:
                rec.update(outcome="not_run", reason="remote code")
            elif stage == "config":
                rec["outcome"] = "refused_config"
            elif stage == "class":
                rec["outcome"] = "refused_class"
            elif stage == "plan" and f"has no `tp_plan`" in msg:
                rec["outcome"] = "no_plan"
                rec.update(classify({}, {}))
            else:
                rec.update(outcome="harness_error", reason=f"{stage}: {type(exc).__name__}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        rec["seconds"] = round(time.perf_counter() - t0, 3)
    rec["message"] = rec["message"][:4000]
    _ = transformers
    return rec


def _cb_cache_by_tp(model) -> dict[str, list]:
    """The continuous-batching paged cache built by the library for ``model`` at every TP size: the
    ``PagedAttentionCache`` constructor ``generate_batch`` calls (text config, the model's TP plan,
    ``model.dtype``), with a ``DistributedHelper`` whose TP size is set to T (no process group: the
    constructor reads only ``tp_size`` and the plan in its checks) and its tensors on the meta device.
    Per TP: ``[]`` when the constructor passed its checks (at TP > 1 it then stops at its first collective,
    the memory agreement over the TP group, which needs a process group: that is not a refusal), else
    ``[exc_type, message, file, line]``."""
    import torch
    from transformers import ContinuousBatchingConfig
    from transformers.generation.continuous_batching.cache import PagedAttentionCache
    from transformers.generation.continuous_batching.distributed import DistributedHelper

    out: dict[str, list] = {}
    for t in TP_SIZES:
        helper = DistributedHelper(None, None, tp_plan=getattr(model, "tp_plan", {}))
        helper.tp_size = t
        cbc = ContinuousBatchingConfig(page_size=16, num_blocks=16, max_batch_tokens=32, max_memory_percent=0.9)
        try:
            PagedAttentionCache(config=model.config.get_text_config(), continuous_batching_config=cbc,
                                device=torch.device("meta"), distributed_helper=helper, dtype=model.dtype)
            out[str(t)] = []
        except Exception as exc:
            if "process group has not been initialized" in str(exc):
                out[str(t)] = []  # past every check: stopped at its first TP collective (no group here)
                continue
            f, ln, _fn = _site(exc)
            out[str(t)] = [type(exc).__name__, str(exc)[:2000], f, ln]
    return out


# ----------------------------------------------------------------------------------------------------
# run (resumable) and assemble
# ----------------------------------------------------------------------------------------------------


def work_dir(version: str) -> Path:
    return DATA / ".work" / f"{FRAMEWORK}-{version}-plans"


def table_path(version: str) -> Path:
    return DATA / f"{FRAMEWORK}-{version}-plans.parquet"


def catalog_files(configs_dir: Path) -> list[Path]:
    """The catalog's configs (``data/catalog.parquet``'s model ids) in ``configs_dir``."""
    from dashboard.catalog import load_catalog

    ids = set(load_catalog()["model_id"])
    return [p for p in sorted(Path(configs_dir).glob("*.json")) if model_id_from_filename(p) in ids]


def run(configs_dir: Path, *, models: Iterable[str] | None = None, log=print) -> tuple[str, Path]:
    """Inspect every catalog model not yet checkpointed; returns (version, work folder)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import transformers

    transformers.logging.set_verbosity_error()
    version = transformers.__version__
    wd = work_dir(version)
    wd.mkdir(parents=True, exist_ok=True)
    wanted = set(models) if models else None
    t0 = time.perf_counter()
    n = 0
    for f in catalog_files(configs_dir):
        mid = model_id_from_filename(f)
        if wanted is not None and mid not in wanted:
            continue
        out = wd / (mid.replace("/", "--") + ".json")
        if out.is_file() and wanted is None:
            continue
        rec = inspect_config(f)
        atomic_write_text(out, json.dumps(rec, indent=1) + "\n")
        n += 1
        log(f"{mid}: {rec['outcome']} {rec.get('shape', '')} ({rec['seconds']:.1f} s)")
    log(f"{n} models inspected in {time.perf_counter() - t0:.0f} s")
    dump_registry(version)
    return version, wd


def registry_path(version: str) -> Path:
    return DATA / f"{FRAMEWORK}-{version}-architectures.json"


def dump_registry(version: str) -> Path:
    """The release's config registry (``CONFIG_MAPPING``: the ``model_type``s ``AutoConfig`` reads without
    remote code), as ``transformers-<version>-architectures.json`` (what the unknown-model_type rule reads)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    data = {"framework": FRAMEWORK, "version": version, "model_types": sorted(CONFIG_MAPPING_NAMES)}
    out = registry_path(version)
    atomic_write_text(out, json.dumps(data, indent=1) + "\n")
    return out


def load_work(version: str):
    import pandas as pd

    from conformance.driver import rows_frame

    rows = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(work_dir(version).glob("*.json"))]
    df = rows_frame(rows, PLAN_COLUMNS, FRAMEWORK, version)
    df = df[list(PLAN_COLUMNS)].copy()
    for c in ("heads_sharded", "kv_sharded", "cb_kv_tp"):
        df[c] = df[c].fillna(False).astype(bool)
    df["line"] = pd.to_numeric(df["line"], errors="coerce").fillna(0).astype("int64")
    df["seconds"] = pd.to_numeric(df["seconds"], errors="coerce")
    for c in PLAN_COLUMNS:
        if c not in ("heads_sharded", "kv_sharded", "cb_kv_tp", "line", "seconds"):
            df[c] = df[c].fillna("").astype(str)
    return df.sort_values("model_id").reset_index(drop=True)


def assemble(version: str) -> Path:
    df = load_work(version)
    path = table_path(version)
    atomic_write(path, lambda fh: df.to_parquet(fh, index=False))
    return path


def load_table(version: str):
    import pandas as pd

    return pd.read_parquet(table_path(version))


__all__ = ["classify", "inspect_config", "run", "assemble", "load_table", "table_path", "PLAN_COLUMNS"]


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit("use: python -m conformance transformers plans")


def verify(configs_dir: Path, *, sample: int = 40, seed: int = 0, log=print) -> tuple[int, int, list[str]]:
    """Re-inspect ``sample`` catalog models (``random.Random(seed)``, like ``conformance verify``) with the
    transformers installed here and compare every column of their plans-table rows but ``seconds``
    (the load check and the paged-cache constructor at every TP size included: ``load_by_tp``,
    ``cb_by_tp``). Returns (reproduced, sampled, differences)."""
    import random

    import transformers

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    transformers.logging.set_verbosity_error()
    version = transformers.__version__
    table = load_table(version).set_index("model_id")
    files = {model_id_from_filename(p): p for p in catalog_files(configs_dir)}
    ids = random.Random(seed).sample(sorted(files), min(sample, len(files)))
    same, diffs = 0, []
    for mid in ids:
        rec = inspect_config(files[mid])
        if mid not in table.index:
            diffs.append(f"{mid}: not in the table")
            continue
        row = table.loc[mid]
        bad = []
        for c in PLAN_COLUMNS:
            if c in ("seconds", "framework", "version", "model_id"):
                continue
            got, want = rec.get(c), row[c]
            if c == "line":
                got, want = int(got or 0), int(want or 0)
            elif c in ("heads_sharded", "kv_sharded", "cb_kv_tp"):
                got, want = bool(got), bool(want)
            else:
                got, want = ("" if got is None else str(got)), ("" if want is None else str(want))
            if got != want:
                bad.append(c)
        if bad:
            diffs.append(f"{mid}: {', '.join(bad)}")
        else:
            same += 1
        log(f"verified {mid}: {'same' if not bad else 'DIFFERS in ' + ', '.join(bad)}")
    log(f"transformers {version}: {same} of {len(ids)} sampled models reproduced exactly (plan, outcome, "
        "exception, message, raise site, load check and paged-cache constructor at every TP size)")
    return same, len(ids), diffs

