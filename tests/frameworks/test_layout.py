"""Per-rank layout: query / KV / linear / vision heads per TP rank, replicas and dummy heads."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import schema
from dashboard.layout import COMPONENTS, LayoutError, heads_per_rank, rank_layout


@pytest.fixture(scope="module")
def rec(catalog):
    by_id = catalog.set_index("model_id", drop=False)
    return lambda model_id: by_id.loc[model_id]


def check_invariants(df: pd.DataFrame, record, tp: int, attn_tp: int | None = None) -> None:
    """Invariants every layout must satisfy (used by the property and catalog-wide tests)."""
    attn_tp = attn_tp or tp
    groups = tp // attn_tp
    assert list(df.columns) == ["rank", "component", "head", "replica", "dummy"]
    assert set(df["component"]) <= set(COMPONENTS)
    assert df["rank"].between(0, tp - 1).all()
    assert not df.duplicated(["rank", "component", "head"]).any()
    # every (component, head) copy has a distinct replica number 0..n-1
    srt = df.sort_values(["component", "head", "replica"])
    expected = srt.groupby(["component", "head"]).cumcount()
    assert (srt["replica"].to_numpy() == expected.to_numpy()).all()
    q = df[df.component == "query"]
    heads = int(record["num_attention_heads"])
    # within each attention-TP group the ranks' query heads are every head exactly once
    for gi in range(groups):
        part = q[(q["rank"] // attn_tp) == gi]
        if len(part) == heads * attn_tp and attn_tp > 1:  # not split (transformers, uneven heads)
            assert part.groupby("rank")["head"].apply(sorted).map(lambda h: h == list(range(heads))).all()
            continue
        assert sorted(part["head"]) == list(range(heads))
    kv = df[df.component == "kv"]
    assert set(kv["rank"]) == set(range(tp))  # every rank caches something


# ------------------------------------------------------------------------------ oracles ----
def test_four_kv_heads_at_tp8_vllm_one_head_per_rank_two_ranks_per_head(rec):
    r = rec("Qwen/Qwen3-235B-A22B")  # 64 query heads, 4 KV heads
    df = rank_layout(r, "vllm", 8)
    kv = df[df.component == "kv"]
    assert kv.groupby("rank").size().eq(1).all()
    assert kv.groupby("head").size().to_dict() == {0: 2, 1: 2, 2: 2, 3: 2}
    # consecutive ranks share a head (vLLM: head = rank // replicas)
    assert kv.sort_values("rank")["head"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert df[df.component == "query"].groupby("rank").size().eq(8).all()
    check_invariants(df, r, 8)


def test_kv_split_without_replication(rec):
    r = rec("meta-llama/Llama-3.1-70B-Instruct")  # 64 / 8
    df = rank_layout(r, "vllm", 4)
    kv = df[df.component == "kv"]
    assert kv.groupby("rank")["head"].apply(list).tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert (kv["replica"] == 0).all()


def test_mla_latent_on_every_rank(rec):
    r = rec("deepseek-ai/DeepSeek-V3")
    for fw in ("vllm", "sglang", "tensorrt-llm"):
        df = rank_layout(r, fw, 8)
        kv = df[df.component == "kv"]
        assert kv["head"].eq(0).all() and sorted(kv["replica"]) == list(range(8))
        assert df[df.component == "query"].groupby("rank").size().eq(16).all()
        check_invariants(df, r, 8)
    # transformers caches up-projected per-head K/V: split like the query heads
    kv = rank_layout(r, "transformers-native-tp", 8).query("component == 'kv'")
    assert kv.groupby("rank").size().eq(16).all() and (kv["replica"] == 0).all()


def test_sglang_pads_vision_heads_with_dummies_vllm_refuses(rec):
    r = rec("Qwen/Qwen2.5-VL-7B-Instruct")  # 28 heads, 4 KV, 16 vision heads
    df = rank_layout(r, "sglang", 4)
    assert not df[df.component == "vision"]["dummy"].any()
    with pytest.raises(LayoutError, match=r"num_attention_heads \(28\).*TP size \(3\)"):
        rank_layout(r, "sglang", 3)
    vl = {"num_attention_heads": 24, "num_key_value_heads": 2, "vision_num_heads": 16}
    df = rank_layout(vl, "sglang", 6)
    vis = df[df.component == "vision"]
    assert len(vis) == 18 and vis.groupby("rank").size().eq(3).all()
    assert sorted(vis.loc[vis.dummy, "head"]) == [16, 17]
    assert sorted(vis.loc[~vis.dummy, "head"]) == list(range(16))
    counts = heads_per_rank(df)
    assert counts.loc[5, "vision"] == 1 and counts.loc[5, "vision_dummy"] == 2
    with pytest.raises(LayoutError, match=r"vision_num_heads \(16\).*TP size \(6\)"):
        rank_layout(vl, "vllm", 6)
    dp = rank_layout(vl, "vllm", 6, vision_dp=True).query("component == 'vision'")
    assert dp.groupby("rank").size().eq(16).all() and dp.groupby("head").size().eq(6).all()


def test_transformers_leaves_uneven_kv_heads_whole():
    # the plan does not split 4 KV heads over 8 ranks; every rank holds all 4 (as the memory
    # model and the cache do), replica = rank
    r = {"num_attention_heads": 32, "num_key_value_heads": 4}
    kv8 = rank_layout(r, "transformers-native-tp", 8).query("component == 'kv'")
    assert kv8.groupby("rank").size().eq(4).all() and kv8.groupby("head").size().eq(8).all()
    df = rank_layout(r, "transformers-native-tp", 4)
    assert df[df.component == "kv"].groupby("rank").size().eq(1).all()
    with pytest.raises(LayoutError, match=r"must divide the attention-TP size \(8\)"):
        rank_layout({"num_attention_heads": 24, "num_key_value_heads": 6}, "vllm", 8)


def test_sglang_dp_attention_splits_heads_over_attn_tp(rec):
    q3 = rec("Qwen/Qwen3-14B")  # 40 heads, 8 KV; qwen3.py shards attention on the attention-TP group
    df = rank_layout(q3, "sglang", 8, dp=2, dp_attention=True)
    q = df[df.component == "query"]
    assert q.groupby("rank").size().eq(10).all()  # 40 / attn_tp 4
    assert q.groupby("head").size().eq(2).all()  # each head once per DP group
    check_invariants(df, q3, 8, attn_tp=4)
    # llama.py shards attention over the full TP even under DP-attention (llama.py:181)
    r = rec("meta-llama/Llama-3.1-70B-Instruct")  # 64 heads, 8 KV
    df = rank_layout(r, "sglang", 8, dp=2, dp_attention=True)
    assert df[df.component == "query"].groupby("rank").size().eq(8).all()
    assert df[df.component == "kv"].groupby("rank").size().eq(1).all()
    from dashboard import frameworks
    assert int(frameworks.get("sglang").kv_pool_heads_per_rank(8, 8, 2, True)) == 2  # the pool: 8 // 4
    df_old = rank_layout(r, "sglang", 8, dp=2, dp_attention=True, release="0.5.4")  # read from source
    assert df_old[df_old.component == "query"].groupby("rank").size().eq(16).all()
    with pytest.raises(LayoutError, match="dp"):
        rank_layout(r, "sglang", 8, dp=3, dp_attention=True)
    trt = rank_layout(r, "tensorrt-llm", 4, dp_attention=True)
    assert trt[trt.component == "query"].groupby("rank").size().eq(64).all()


def test_linear_attention_heads(rec):
    qn = rec("Qwen/Qwen3-Next-80B-A3B-Instruct")  # GDN 16 key / 32 value heads
    c = heads_per_rank(rank_layout(qn, "vllm", 4))
    assert c["linear_key"].eq(4).all() and c["linear_value"].eq(8).all()
    nh = rec("nvidia/Nemotron-H-56B-Base-8K")  # Mamba2: 256 heads, 8 groups
    df = rank_layout(nh, "vllm", 16)
    keys = df[df.component == "linear_key"]
    assert keys.groupby("head").size().eq(2).all()  # 8 groups replicated on 16 ranks
    assert df[df.component == "linear_value"].groupby("rank").size().eq(16).all()
    kl = rec("moonshotai/Kimi-Linear-48B-A3B-Instruct")  # KDA 32 heads + MLA
    c = heads_per_rank(rank_layout(kl, "vllm", 8))
    assert c["linear_value"].eq(4).all() and c["kv"].eq(1).all()


def test_bad_input_errors():
    with pytest.raises(ValueError, match="unknown framework"):
        rank_layout({"num_attention_heads": 8}, "tgi", 2)
    with pytest.raises(ValueError, match="tp must be"):
        rank_layout({"num_attention_heads": 8}, "vllm", 0)
    with pytest.raises(ValueError, match="num_attention_heads"):
        rank_layout({"num_attention_heads": None}, "vllm", 2)


def test_every_catalog_model_lays_out_or_raises_layout_error(catalog):
    # models with the same head shapes have the same layout: check each distinct shape once
    shape_cols = ["num_attention_heads", "num_key_value_heads", "is_mla", "linear_attention_kind",
                  "linear_num_key_heads", "linear_num_value_heads", "mamba_n_groups", "vision_num_heads"]
    ok = catalog[catalog.status == "ok"]
    distinct = ok.astype({c: "string" for c in shape_cols}).drop_duplicates(shape_cols).index
    assert len(distinct) > 20
    laid = 0
    for _, r in ok.loc[distinct].iterrows():
        for fw in schema.FRAMEWORKS:
            for tp in schema.DEFAULT_TP_SIZES:
                try:
                    df = rank_layout(r, fw, tp)
                except LayoutError:
                    continue
                check_invariants(df, r, tp)
                laid += 1
    assert laid > 300


# ---------------------------------------------------------------------------- properties ----
@st.composite
def valid_vllm_cases(draw):
    tp = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    # KV heads either a multiple of tp or a divisor of tp (the layouts vLLM accepts)
    kv = draw(st.one_of(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32, 64) if tp % d == 0]),
                        st.integers(1, 8).map(lambda k: k * tp)))
    group = draw(st.integers(1, 8))
    heads = kv * group
    if heads % tp:
        heads = tp * group
        kv = min(kv, heads)
        if heads % kv:
            kv = tp if heads % tp == 0 and tp <= heads else 1
    return {"num_attention_heads": heads, "num_key_value_heads": kv}, tp


@settings(max_examples=300, deadline=None)
@given(case=valid_vllm_cases(), fw=st.sampled_from(["vllm", "sglang", "tensorrt-llm"]))
def test_property_query_heads_exactly_once_kv_heads_replicated_evenly(case, fw):
    r, tp = case
    df = rank_layout(r, fw, tp)
    check_invariants(df, r, tp)
    q = df[df.component == "query"]
    assert sorted(q["head"]) == list(range(r["num_attention_heads"]))  # every head exactly once
    kv = df[df.component == "kv"]
    n_kv = r["num_key_value_heads"]
    per_head = kv.groupby("head").size()
    assert set(per_head.index) == set(range(n_kv))  # every KV head on >= 1 rank
    if tp > n_kv:
        assert per_head.eq(tp // n_kv).all()  # exactly tp / kv ranks
    else:
        assert per_head.eq(1).all()
