""":func:`plan_catalog`: the best layout of every model of a catalog on N GPUs, per framework."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard import memory, rules
from dashboard import frameworks as fw_registry
from dashboard.planner.common import PLAN_FRAMEWORKS
from dashboard.planner.enumeration import cross_node, enumerate_layouts, layout_label, unique_rows
from dashboard.planner.hardware import VLLM_NO_FP16_MODEL_TYPES, cc_below, dtype_check_note, dtype_refusal, rules_platform
from dashboard.planner.inputs import weight_kind
from dashboard.planner.plan import check_args, check_frameworks, check_versions
from dashboard.planner.ranking import best_per_row



#: Catalog columns that name or describe a repository, not the model's shapes: neither the rules nor the
#: memory model read them, so models that differ only here plan the same.
IDENTITY_COLUMNS = ("model_id", "org", "name", "source", "fetched_at", "sha", "last_modified", "downloads",
                    "likes", "gated", "status_reason")


def catalog_shapes(catalog: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """(per model, the index of its shape; one representative row per distinct shape). Shapes are told
    apart by a 64-bit hash of every non-identity column (pandas ``hash_pandas_object``; NA hashes as NA)."""
    cols = [c for c in catalog.columns if c not in IDENTITY_COLUMNS]
    if not cols or len(catalog) < 2:
        return np.arange(len(catalog), dtype=np.int64), catalog
    try:
        h = pd.util.hash_pandas_object(catalog[cols], index=False).to_numpy()
    except TypeError:  # unhashable cells (lists, dicts) in a hand-made frame: no deduplication
        return np.arange(len(catalog), dtype=np.int64), catalog
    codes, uniq = pd.factorize(h)
    if len(uniq) == len(catalog):
        return np.arange(len(catalog), dtype=np.int64), catalog
    first = np.full(len(uniq), -1, dtype=np.int64)
    order = np.arange(len(codes))[::-1]
    first[codes[order]] = order  # first occurrence of each shape
    return codes.astype(np.int64), catalog.iloc[first].reset_index(drop=True)


def plan_catalog(catalog: pd.DataFrame, gpus: int, gpu_type: str, *, min_sequences: int, context_len: int,
                 gpus_per_node: int | None = None, frameworks: Sequence[str] = PLAN_FRAMEWORKS,
                 versions: Mapping[str, str | None] | None = None, kv_dtype: str = "bf16",
                 weight_dtype: str | None = None, cross_node_tp: bool = False) -> pd.DataFrame:
    """Which models can serve >= ``min_sequences`` sequences of ``context_len`` tokens on ``gpus`` x
    ``gpu_type``, under each framework, and with which best layout -- over a whole catalog.

    Vectorized: the layouts of N GPUs are enumerated once (EP variants for every model; they are refused
    for models without experts), then one :func:`dashboard.rules.layout_grid` over catalog x layouts x
    frameworks and one :func:`dashboard.memory.layout_capacity` per framework; the best layout per
    (model, framework) is a groupby. The start-up checks are :func:`plan`'s (GPU family, context length, rules, cross-node TP, GPU
    dtypes, memory); messages are not built (call :func:`plan` on a model for them).

    Returns
    -------
    DataFrame, one row per (model_id, framework): ``model_id, framework, serves`` (bool: some layout
    starts and holds >= min_sequences), ``best_layout`` (label, '' when none starts), ``tp, pp, dp,
    attn_dp, ep`` of it, ``sequences_total`` (of the best layout, 0 when none starts),
    ``gpus_per_replica``, ``layouts_starting`` (how many layouts start), ``why_not`` ('' when it serves,
    else the most common refusal kind or "fewer than K sequences").

    Raises ValueError / TypeError as :func:`plan` does; ValueError for a catalog without ``model_id``.
    """
    fws = check_frameworks(frameworks)
    vers = check_versions(versions, fws)
    n, gpu, gpn, ctx, k = check_args(gpus, gpu_type, gpus_per_node, context_len, kv_dtype, weight_dtype,
                                      min_sequences)
    if not isinstance(catalog, pd.DataFrame) or "model_id" not in catalog.columns:
        raise ValueError("plan_catalog needs a catalog DataFrame with a model_id column")
    full = catalog.reset_index(drop=True)
    ids = full["model_id"].astype(str).to_numpy()
    # models of the same shape (a base model and its fine-tunes: every column but the identity ones) get
    # the same verdicts and capacities: plan each distinct shape once, then give every model its shape's row
    shape, cat = catalog_shapes(full)
    nm = len(cat)
    releases = {fw: rules.resolve_version(fw, vers.get(fw)).release for fw in fws}
    lays = pd.concat([enumerate_layouts(n, fw, moe=True, release=releases[fw]) for fw in fws], ignore_index=True)
    keys = ["tp", "pp", "r_dp", "r_ep", "r_dp_attention", "r_expert_parallel"]
    uniq, u = unique_rows(lays, keys)
    lays["u"] = u
    nu = len(uniq["tp"])
    ren = {"r_dp": "dp", "r_ep": "ep", "r_dp_attention": "dp_attention", "r_expert_parallel": "expert_parallel"}
    rg = rules.layout_grid(cat, uniq, fws, versions=vers, messages=False, **rules_platform(gpu_type))
    valid = rg["valid"].to_numpy(dtype=bool).reshape(len(fws), nm, nu)  # framework-major, model, layout
    cols = memory.model_columns(cat)
    moe = memory.is_set(cols["is_moe"]) | (memory.nz(cols["num_experts"]) > 0)
    wk_all = _weight_kinds(cat, weight_dtype)
    M = float(gpu.memory_bytes)
    frames = []
    for fi, fw in enumerate(fws):
        lf = lays[lays["framework"] == fw].reset_index(drop=True)
        nl = len(lf)
        sel = lf[["tp", "pp", "r_dp", "r_ep", "r_dp_attention", "r_expert_parallel"]].rename(columns=ren)
        cap = memory.layout_capacity(cat, fw, gpu.memory_bytes, sel, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                                     context_len=ctx, cols=cols)
        if fw_registry.get(fw).auto_dtype_fallback and weight_dtype is None and cc_below(gpu, 8.0):
            # --dtype auto on a GPU without bfloat16 (vllm_auto_dtype): bf16 checkpoints run in float16 (the
            # same bytes) or, for the model types that refuse float16, in float32: size those in float32
            f32 = (wk_all["kinds"][wk_all["codes"]] == "bf16") & np.isin(memory.text_model_type(cols),
                                                                        list(VLLM_NO_FP16_MODEL_TYPES))
            if f32.any():
                kv32 = "fp32" if str(kv_dtype).lower() in ("bf16", "bfloat16") else kv_dtype
                cap32 = memory.layout_capacity(cat[f32], fw, gpu.memory_bytes, sel, kv_dtype=kv32,
                                               weight_dtype="fp32", context_len=ctx)
                cap = dict(cap)
                for key, val in cap32.items():
                    if np.ndim(val) == 2 and key in cap:
                        cap[key] = cap[key].astype(np.result_type(cap[key], val))  # a copy: cap is not shared
                        cap[key][f32] = val
        v = valid[fi][:, lf["u"].to_numpy()]  # (models, layouts)
        tp = lf["tp"].to_numpy()
        node_ok = (np.ones(nl, dtype=bool) if cross_node_tp
                   else ~cross_node(tp, lf["pp"].to_numpy(), n, gpn, np.full(nl, fw, dtype=object))[0])
        plat_ok = not fw_registry.get(fw).platform_refusal(gpu)  # the framework runs on this GPU family
        ctx_ok = _context_ok(cat, fw, ctx)
        dtype_ok = np.array([not dtype_refusal(gpu, w, kv_dtype, fw, explicit=weight_dtype is not None)
                             for w in wk_all["kinds"]])[wk_all["codes"]]
        w = cap["weight_bytes_per_gpu"]
        seqg = np.nan_to_num(cap["concurrent_sequences"], nan=0.0)
        mem_ok = (np.isfinite(w) & (w + cap["reserve_bytes_per_gpu"] < M) & (cap["kv_budget_bytes_per_gpu"] > 0)
                  & (seqg >= 1))
        # EP variants are planned for MoE models only (as plan() does): a dense model's rows are masked
        ep_layout = (lf["ep"].to_numpy() > 1)[None, :]
        v = v & ~(ep_layout & ~moe[:, None])
        starts = v & node_ok[None, :] & dtype_ok[:, None] & mem_ok & ctx_ok[:, None] & plat_ok
        groups = lf["attn_dp"].to_numpy()[None, :]
        kv_rep = np.maximum(seqg, 0) * groups
        tok = np.nan_to_num(cap["tokens_per_gpu"], nan=0.0)
        cap_rep = fw_registry.get(fw).scheduler_cap(gpu, tok, ctx, groups)
        total = np.where(starts, np.minimum(kv_rep, cap_rep) * lf["dp"].to_numpy()[None, :], -1.0)
        # best: the interim ranking of plan() per model (dashboard.planner.ranking: most KV capacity,
        # near-ties within 10 % by fewest pipeline stages, then most replicas)
        # among the layouts holding min_sequences (plan()'s "fits"), else among those that start
        rank_cols = (lf["pp"].to_numpy(), lf["dp"].to_numpy(), (lf["tp"] * lf["pp"]).to_numpy())
        fit_ok = starts & (total >= k)
        bi = np.where(fit_ok.any(axis=1), best_per_row(total, fit_ok, *rank_cols),
                      best_per_row(total, starts, *rank_cols))
        rows = np.arange(nm)
        bt = total[rows, bi]
        any_start = starts.any(axis=1)
        serves = any_start & (bt >= k)
        why = np.where(serves, "", np.where(
            any_start, f"fewer than {k} sequences of {ctx} tokens",
            np.where(~np.broadcast_to(plat_ok, ctx_ok.shape), "platform", np.where(~ctx_ok, "context", np.where(~v.any(axis=1), "rule", np.where(~(v & node_ok[None, :]).any(axis=1), "cross_node_tp",
                     np.where(~dtype_ok, "dtype", "memory")))))))
        b = lf.iloc[bi].reset_index(drop=True)
        label = np.array([layout_label(*x, fw) for x in zip(b["tp"], b["pp"], b["dp"], b["attn_dp"], b["ep"])],
                         dtype=object)
        # per distinct shape above; per model below
        bi, bt, any_start, serves, why = bi[shape], bt[shape], any_start[shape], serves[shape], why[shape]
        label, n_start = label[shape], starts.sum(axis=1).astype(np.int64)[shape]
        b = lf.iloc[bi].reset_index(drop=True)
        frames.append(pd.DataFrame({
            "model_id": ids, "framework": fw, "serves": serves,
            "best_layout": np.where(any_start, label, ""),
            "tp": np.where(any_start, b["tp"], 0), "pp": np.where(any_start, b["pp"], 0),
            "dp": np.where(any_start, b["dp"], 0), "attn_dp": np.where(any_start, b["attn_dp"], 0),
            "ep": np.where(any_start, b["ep"], 0),
            "sequences_total": np.where(any_start, bt, 0).astype(np.int64),
            "gpus_per_replica": np.where(any_start, b["tp"] * b["pp"], 0),
            "layouts_starting": n_start,
            "why_not": why,
        }))
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update(gpus=n, gpu=gpu.gpu, gpus_per_node=gpn, context_len=ctx, min_sequences=k,
                     dtype_check=dtype_check_note(gpu),
                     kv_dtype=str(kv_dtype), weight_dtype=weight_dtype, releases=releases)
    return out


def _context_ok(cat: pd.DataFrame, fw: str, ctx: int) -> np.ndarray:
    """Per model, whether ``fw`` accepts ``ctx`` tokens (:func:`dashboard.context.context_refusal`'s test
    over the catalog columns; True when the limit is unknown or the framework is not modelled)."""
    col = fw_registry.get(fw).context_limit_column
    if not col or col not in cat.columns:
        return np.ones(len(cat), dtype=bool)
    lim = pd.to_numeric(cat[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)
    return ~(np.isfinite(lim) & (ctx > lim))


def _weight_kinds(cat: pd.DataFrame, weight_dtype: str | None) -> dict[str, np.ndarray]:
    """Per model, the weight kind of :func:`weight_kind`, factorized (``kinds`` unique, ``codes`` per row)."""
    if weight_dtype is not None:
        kind = weight_kind(cat.iloc[[0]] if len(cat) else pd.DataFrame([{}]), weight_dtype)
        return {"kinds": np.array([kind], dtype=object), "codes": np.zeros(len(cat), dtype=np.int64)}

    def low(col):
        if col not in cat.columns:
            return pd.Series([""] * len(cat))
        return cat[col].astype("string").fillna("").str.lower()

    method, fmt, td = low("quant_method"), low("quant_format"), low("torch_dtype")
    nv = fmt.str.contains("nvfp4", regex=False) | method.str.contains("nvfp4", regex=False) | (method == "modelopt_fp4")
    f8 = (method == "fp8") | fmt.str.contains("fp8", regex=False) | fmt.str.contains("float-quantized", regex=False)
    kinds = np.select([nv.to_numpy(bool), f8.to_numpy(bool), td.isin(["bfloat16", "bf16"]).to_numpy(bool),
                       td.isin(["float16", "fp16", "half"]).to_numpy(bool)], ["nvfp4", "fp8", "bf16", "fp16"],
                      default="other")
    codes, uniq = pd.factorize(kinds)
    return {"kinds": np.asarray(uniq, dtype=object), "codes": codes}
