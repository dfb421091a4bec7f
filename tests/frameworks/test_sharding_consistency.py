"""Issue 21: the verdict, the per-rank layout and the memory model give the same per-rank heads.

Over EVERY catalog model x EVERY framework x TP 1..64 x the layouts the planner enumerates at those TP
sizes (plain TP, expert parallelism -- vLLM ``--enable-expert-parallel``, SGLang / TensorRT-LLM EP = TP --,
SGLang attention-DP of every divisor of TP, TensorRT-LLM attention-DP over the TP group) and the vision
encoder data-parallel or not:

* every cell the verdict (:func:`dashboard.rules.layout_grid`) calls valid has a per-rank layout
  (:func:`dashboard.layout.heads_per_rank_counts` ``ok``, the exact condition under which
  :func:`~dashboard.layout.rank_layout` raises; checked against full ``rank_layout`` on a stratified
  sample);
* the verdict's query / KV heads per rank and KV replicas equal the layout's;
* the memory model's KV heads per rank (``memory.attention_tp`` -> the framework's KV pool) equal the
  framework's documented pool property ``kv_pool_heads_per_rank`` -- which equals the attention shard
  except where the framework says so (SGLang DP-attention on a full-TP model file) -- and, on a sample,
  the KV bytes per token the memory model reports.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import catalog as catalog_mod
from dashboard import frameworks, layout, memory, rules, schema

TPS = np.arange(1, 65)
VALID = ("valid", "valid_replicated", "valid_padded")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def planner_layouts(fw: str) -> pd.DataFrame:
    """The layouts :func:`dashboard.planner.enumerate_layouts` builds, at every TP size 1..64 (PP and
    replica DP do not change a rank's heads)."""
    rows = []
    for tp in TPS.tolist():
        rows.append((tp, 1, 1, False, False))
        if fw == "vllm":
            rows.append((tp, 1, 1, False, True))
            rows.append((tp, 2, 1, False, True))  # EP spans TP x DP
            continue
        if tp > 1:
            rows.append((tp, 1, tp, False, False))  # EP = tp
        if fw == "sglang":
            rows += [(tp, d, 1, True, False) for d in _divisors(tp)[1:]]
            rows += [(tp, d, tp, True, False) for d in _divisors(tp)[1:] if tp > 1]
        elif fw == "tensorrt-llm" and tp > 1:
            rows.append((tp, tp, 1, True, False))
    return pd.DataFrame(rows, columns=["tp", "dp", "ep", "dp_attention", "expert_parallel"])


def _verdicts(cat: pd.DataFrame, lays: pd.DataFrame, fw: str, vision_dp: bool) -> pd.DataFrame:
    """``rules.layout_grid`` over ``lays`` (model-major); where a framework's predicates do not take
    per-layout EP arrays (Megatron-Core's ``ep_without_moe`` compares ``ctx.ep <= 1``), the EP layouts
    are evaluated one EP size at a time with :func:`rules.grid` (the same verdict per cell)."""
    try:
        return rules.layout_grid(cat, lays, [fw], vision_dp=vision_dp, messages=False)
    except ValueError:
        pass
    parts = []
    for i, L in lays.iterrows():
        g = rules.grid(cat, [int(L.tp)], [fw], dp=int(L.dp), ep=int(L.ep), dp_attention=bool(L.dp_attention),
                       expert_parallel=bool(L.expert_parallel), vision_dp=vision_dp)
        parts.append(g.assign(layout=i))
    return pd.concat(parts).assign(_m=lambda d: d.model_id.map({m: k for k, m in enumerate(cat.model_id)})) \
        .sort_values(["_m", "layout"], kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def cat() -> pd.DataFrame:
    return catalog_mod.load_catalog().reset_index(drop=True)


@pytest.mark.parametrize("vision_dp", (False, True))
@pytest.mark.parametrize("fw", schema.FRAMEWORKS)
def test_verdict_layout_memory_agree_on_every_cell(cat, fw, vision_dp):
    lays = planner_layouts(fw)
    g = _verdicts(cat, lays, fw, vision_dp)
    n_m, n_l = len(cat), len(lays)
    assert len(g) == n_m * n_l
    rows = np.repeat(np.arange(n_m), n_l)
    cells = cat.iloc[rows].reset_index(drop=True)
    tp, dp = np.tile(lays.tp.to_numpy(), n_m), np.tile(lays.dp.to_numpy(), n_m)
    dpa = np.tile(lays.dp_attention.to_numpy(), n_m)
    c = layout.heads_per_rank_counts(cells, fw, tp, dp=dp, dp_attention=dpa, vision_dp=vision_dp)
    valid = g.status.isin(VALID).to_numpy() & c["has_q"]
    assert valid.sum() > 1000
    bad = valid & ~c["ok"]
    assert not bad.any(), g.loc[bad, ["model_id", "tp", "dp", "dp_attention"]].drop_duplicates("model_id").head(10)
    for col, key in (("q_heads_per_rank", "q"), ("kv_heads_per_rank", "kv"), ("kv_replicas", "kv_replicas")):
        v = g[col].to_numpy(dtype="float64", na_value=np.nan)
        diff = valid & (v != c[key])
        assert not diff.any(), (col, g.loc[diff, ["model_id", "tp", "dp", "dp_attention", col]].head(10),
                                c[key][diff][:10])
    # memory: the KV heads its cache is sized for == the framework's documented pool property
    f = frameworks.get(fw)
    kv = cells.num_key_value_heads.fillna(cells.num_attention_heads).to_numpy(dtype="float64", na_value=np.nan)
    gqa = valid & ~cells.is_mla.fillna(False).to_numpy(dtype=bool) & ~np.isnan(kv)
    mem = f.kv_cache_heads_per_rank(kv, memory.attention_tp(fw, tp, dp, dpa))
    assert not (gqa & (mem != c["kv_pool"])).any()
    # ... and the pool differs from the attention shard only where the framework sizes it differently
    differs = gqa & (c["kv_pool"] != c["kv"])
    assert not (differs & (f.kv_pool_tp(tp, dp, dpa) == c["attn_tp"])).any()


def test_pool_differs_from_shard_only_for_sglang_full_tp_files(cat):
    r = cat[cat.model_id == "meta-llama/Llama-3.1-70B-Instruct"].iloc[0]
    v = rules.check(r, "sglang", 8, dp=2, dp_attention=True)
    c = layout.heads_per_rank_counts(r, "sglang", [8], dp=2, dp_attention=True)
    assert (v.attn_tp, v.q_heads_per_rank, v.kv_heads_per_rank) == (8, 8, 1) == (c["attn_tp"][0], c["q"][0], c["kv"][0])
    assert c["kv_pool"][0] == 2  # pool_configurator.py:356 sizes the pool with attn_tp_size = 4
    assert memory.kv_cache_bytes_per_token_per_rank(r, "sglang", 8, dp=2, dp_attention=True) == 80 * 2 * 2 * 128 * 2
    L = layout.rank_layout(r, "sglang", 8, dp=2, dp_attention=True)
    assert L[L.component == "query"].groupby("rank").size().iloc[0] == 8
    assert L[L.component == "kv"].groupby("rank").size().iloc[0] == 1


@pytest.mark.parametrize("fw", schema.FRAMEWORKS)
def test_counts_match_full_rank_layout_on_a_stratified_sample(cat, fw):
    shape_cols = ["num_attention_heads", "num_key_value_heads", "is_mla", "linear_attention_kind",
                  "linear_num_key_heads", "linear_num_value_heads", "mamba_n_groups", "vision_num_heads",
                  "architectures"]
    ok = cat[cat.num_attention_heads.notna()]
    distinct = ok.astype({c: "string" for c in shape_cols}).drop_duplicates(shape_cols).index
    lays = planner_layouts(fw)
    rng = np.random.default_rng(21)
    for n, i in enumerate(distinct):
        r = cat.loc[i]
        # per shape: 2 random layouts + one fixed TP size (rotating 1, 3, 8, 16, 32): every shape, a spread
        # of layouts over the catalog, a few seconds per framework
        fixed = np.flatnonzero(lays.tp == (1, 3, 8, 16, 32)[n % 5])[:1]
        pick = lays.iloc[np.unique(np.concatenate([rng.choice(len(lays), 2, replace=False), fixed]))]
        c = layout.heads_per_rank_counts(r, fw, pick.tp.to_numpy(), dp=pick.dp.to_numpy(),
                                         dp_attention=pick.dp_attention.to_numpy())
        for k, (tp, dp, dpa) in enumerate(zip(pick.tp, pick.dp, pick.dp_attention)):
            try:
                L = layout.rank_layout(r, fw, int(tp), dp=int(dp), dp_attention=bool(dpa))
            except layout.LayoutError:
                assert not c["ok"][k], (r.model_id, tp, dp, dpa)
                continue
            assert c["ok"][k], (r.model_id, tp, dp, dpa)
            per = L.groupby(["rank", "component"]).size()
            q = per.xs("query", level="component")
            assert q.eq(c["q"][k]).all(), (r.model_id, tp, dp, dpa)
            kvc = per.xs("kv", level="component")
            assert kvc.eq(c["kv"][k]).all(), (r.model_id, tp, dp, dpa)
