"""Finding models in a big catalog (issue 13, item 3): the row order of the heatmap and the catalog table
(:func:`dashboard.state.order_catalog`), the ``sort`` link parameter, the y-axis labels that keep a
model's size (:func:`dashboard.plots.heatmap.short_label`) and the name filter applied as it is typed.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import panel as pn
import pytest

from dashboard.plots import heatmap
from dashboard.state import (
    SORT_CHOICES,
    PlannerState,
    app_data_from_catalog,
    filter_catalog,
    filter_models,
    order_catalog,
)
from tests.conftest import DATA

pn.extension("tabulator")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    """Seven rows covering the cases: a multimodal model whose text model is a mistral, case
    differences in orgs, names and types, a config that could not be read (no type, no size)."""
    rows = [
        # model_id, org, model_type, text_model_type, params_total
        ("zeta/Small-7B", "zeta", "mistral", "mistral", 7.2e9),
        ("Acme/big-70B", "Acme", "llama", "llama", 70.6e9),
        ("acme/Vision-12B", "acme", "llava", "mistral", 12.0e9),
        ("beta/Tiny-1B", "beta", "LLAMA", "LLAMA", 1.2e9),
        ("broken/config", "broken", None, None, np.nan),
        ("Beta/alpha-8B", "Beta", "llama", "llama", 8.0e9),
        ("zeta/Mid-8B", "zeta", "mistral", "mistral", 8.0e9),
    ]
    return pd.DataFrame(rows, columns=["model_id", "org", "model_type", "text_model_type", "params_total"])


PINNED = {
    # family (text model_type, case-insensitive), then total parameters; the unreadable config last.
    "family": ["beta/Tiny-1B", "Beta/alpha-8B", "Acme/big-70B", "zeta/Small-7B", "zeta/Mid-8B",
               "acme/Vision-12B", "broken/config"],
    # the name after the organisation, case-insensitive.
    "name": ["Beta/alpha-8B", "Acme/big-70B", "broken/config", "zeta/Mid-8B", "zeta/Small-7B", "beta/Tiny-1B",
             "acme/Vision-12B"],
    # total parameters, smallest first; unknown size last.
    "size": ["beta/Tiny-1B", "zeta/Small-7B", "Beta/alpha-8B", "zeta/Mid-8B", "acme/Vision-12B", "Acme/big-70B",
             "broken/config"],
    # organisation (case-insensitive), then name.
    "org": ["Acme/big-70B", "acme/Vision-12B", "Beta/alpha-8B", "beta/Tiny-1B", "broken/config", "zeta/Mid-8B",
            "zeta/Small-7B"],
}


@pytest.mark.parametrize("sort", SORT_CHOICES)
def test_order_catalog_pins_each_order(frame, sort):
    before = frame.copy()
    out = order_catalog(frame, sort)
    assert list(out["model_id"]) == PINNED[sort]
    pd.testing.assert_frame_equal(frame, before)  # input untouched
    assert sorted(out.index) == list(frame.index)  # same rows, index kept


def test_order_catalog_family_uses_the_text_model_type(frame):
    """A multimodal model sorts with its language model's family (llava wrapping a mistral -> mistral)."""
    out = list(order_catalog(frame, "family")["model_id"])
    mistrals = [m for m in out if m.startswith("zeta/") or m == "acme/Vision-12B"]
    assert out.index("acme/Vision-12B") == out.index(mistrals[-1])  # the biggest mistral, after the 7B and 8B
    assert out.index("acme/Vision-12B") > out.index("zeta/Mid-8B")


def test_order_catalog_falls_back_to_model_type_and_refuses_unknown_orders(frame):
    no_text = frame.assign(text_model_type=[None] * len(frame))
    # Without text_model_type the top-level model_type groups (llava apart from mistral).
    out = list(order_catalog(no_text, "family")["model_id"])
    assert out.index("acme/Vision-12B") < out.index("zeta/Small-7B")
    with pytest.raises(ValueError, match="unknown order"):
        order_catalog(frame, "<script>")


def test_order_on_the_shipped_catalog_groups_families_by_size():
    cat = pd.read_parquet(DATA / "catalog.parquet")
    out = order_catalog(cat, "family")
    fam = out["text_model_type"].astype(str).str.lower().tolist()
    # Each family is one contiguous block, sizes ascending inside it.
    blocks = [f for i, f in enumerate(fam) if i == 0 or f != fam[i - 1]]
    assert len(blocks) == len(set(blocks))
    for _f, g in out.groupby(out["text_model_type"].astype(str).str.lower(), sort=False):
        sizes = g["params_total"].dropna().to_numpy()
        assert (np.diff(sizes) >= 0).all()
    llama = list(out.loc[out["text_model_type"] == "llama", "model_id"])
    assert llama.index("meta-llama/Llama-3.1-8B-Instruct") < llama.index("meta-llama/Llama-3.1-70B-Instruct")
    size = order_catalog(cat, "size")["params_total"].dropna().to_numpy()
    assert (np.diff(size) >= 0).all()


def test_both_views_use_the_state_order(frame):
    """filter_models (the heatmap rows) and filter_catalog (the table) follow state.sort."""
    cat = frame.assign(status="ok", num_attention_heads=32, num_key_value_heads=8, quant_method=None,
                       is_moe=False, is_mla=False, has_linear_attention=False, has_vision=False)
    data = app_data_from_catalog(cat)
    for sort in SORT_CHOICES:
        s = PlannerState(sort=sort)
        assert list(filter_catalog(s, cat)["model_id"]) == PINNED[sort]
        assert filter_models(s, data) == PINNED[sort]
    # Explicit picks and the name filter keep the order too.
    s = PlannerState(sort="size", models=["Acme/big-70B", "beta/Tiny-1B", "zeta/Mid-8B"], search="b m")
    assert filter_models(s, data) == ["beta/Tiny-1B", "zeta/Mid-8B", "Acme/big-70B"]
    s.sort = "name"
    assert filter_models(s, data) == ["Acme/big-70B", "zeta/Mid-8B", "beta/Tiny-1B"]


def test_sort_is_in_the_link_and_hostile_values_fall_back():
    s = PlannerState(sort="org")
    assert s.to_query() == {"sort": "org"} and s.query_string() == "?sort=org"
    t = PlannerState()
    assert t.apply_query("?sort=org") == [] and t.sort == "org"
    for bad in ("<script>alert(1)</script>", "SIZE", "", "name%00", "family,size"):
        u = PlannerState()
        notices = u.apply_query({"sort": bad})
        assert u.sort == "family", bad
        assert len(notices) == 1 and notices[0].startswith("Ignored link parameter sort=")
        assert "expected one of family, name, size, org" in notices[0]


# ---- labels -------------------------------------------------------------------------------------------


def _sizes(text: str) -> list[str]:
    return [m.group(0) for m in heatmap.SIZE_TOKEN.finditer(text)]


def test_size_token_pattern():
    assert _sizes("Mixtral-8x22B-Instruct-v0.1") == ["8x22B"]
    assert _sizes("Qwen3-Coder-480B-A35B-Instruct") == ["480B", "A35B"]
    assert _sizes("granite-3.1-1b-a400m-instruct") == ["1b", "a400m"]
    assert _sizes("Qwen2.5-0.5B") == ["0.5B"] and _sizes("granite-docling-258M") == ["258M"]
    assert _sizes("MiniMax-M2.5") == [] and _sizes("Mistral-Nemo-Instruct-2407") == []
    assert _sizes("DeepSeek-V4-Flash-NVFP4-FP8") == [] and _sizes("granite-3b-code-instruct-128k") == ["3b"]


def test_labels_of_real_long_ids_keep_their_size():
    """Every id of the shipped catalog: a label of at most MAX_LABEL_CHARS characters; ids that fit are
    shown whole; longer ones drop the organisation; every size token of the name stays whole."""
    ids = pd.read_parquet(DATA / "catalog.parquet")["model_id"].astype(str).tolist()
    long = [m for m in ids if len(m) > heatmap.MAX_LABEL_CHARS]
    assert len(long) >= 20
    for m in ids:
        label = heatmap.short_label(m)
        assert len(label) <= heatmap.MAX_LABEL_CHARS, (m, label)
        if len(m) <= heatmap.MAX_LABEL_CHARS:
            assert label == m
            continue
        assert "/" not in label, (m, label)
        for tok in _sizes(m.split("/", 1)[1]):
            assert re.search(rf"(?<![A-Za-z0-9.]){re.escape(tok)}(?![A-Za-z0-9])", label), (m, label, tok)


@pytest.mark.parametrize(("model_id", "label"), [
    ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct"),  # fits: whole id
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "Qwen3-Coder-480B-A35B-Instruct"),
    ("mistralai/Mixtral-8x22B-Instruct-v0.1", "Mixtral-8x22B-Instruct-v0.1"),
    ("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", "Llama-4-Scout-17B…-FP8-dynamic"),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "Nemotron-3-Nano-30B-A3B-BF16"),
    ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", "Nemotron-3-Ultra-550B-A55B-BF16"),
    ("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", "Nemotron-3.5-Lightn…-30B-A3B-NVFP4"),
    ("ibm-granite/granite-3.1-1b-a400m-instruct", "granite-3.1-1b-a400m-instruct"),
    ("org/Very-Long-Family-Name-Of-Model-Here-70B-Instruct", "Very-Long-Family…-70B-Instruct"),
    ("acme/Some-Very-Long-Model-Name-Without-Any-Size-Token-At-All", "Some-Very-Long-M…Size-Token-At-All"),
])
def test_pinned_labels(model_id, label):
    assert heatmap.short_label(model_id) == label


@pytest.mark.parametrize("model_id", ["x" * 300, "/" + "y" * 60, "a/" + "7B-" * 40, "org/", "<img src=x onerror=1>" * 3,
                                      "a/b/c/" + "d" * 50, ""])
def test_labels_of_odd_ids_stay_short(model_id):
    label = heatmap.short_label(model_id)
    assert isinstance(label, str) and len(label) <= heatmap.MAX_LABEL_CHARS


def test_heatmap_axis_gets_the_labels_and_the_hover_the_full_id():
    """The y axis draws short_label (computed on the server, sent as data); the hover names the full id."""
    from dashboard.app import DashboardApp

    app = DashboardApp(query="?search=nemotron")
    fig = app.validity.figure
    names = fig.yaxis[0].formatter.args["names"]
    assert "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4" in names
    assert fig.yaxis[0].formatter.args["labels"] == [heatmap.short_label(m) for m in names]
    hover = next(t for t in fig.toolbar.tools if type(t).__name__ == "HoverTool")
    assert list(hover.formatters["@y"].args["names"]) == names
    # The label column is as wide as the longest label drawn, not the longest id.
    assert heatmap.ylabel_px(names) == int(8.8 * max(len(heatmap.short_label(m)) for m in names)) + 28


# ---- the sidebar controls -----------------------------------------------------------------------------


def test_sort_control_orders_the_heatmap_and_the_table():
    from dashboard.app import DashboardApp

    app = DashboardApp()
    assert app.controls.sort.value == "family"
    app.controls.sort.value = "size"
    assert app.state.sort == "size" and app.state.query_string() == "?sort=size"
    names = app.validity.figure.yaxis[0].formatter.args["names"]
    assert names == list(order_catalog(app.data.catalog, "size")["model_id"])
    app.state.tab = "catalog"
    assert list(app.catalog.table.value["model_id"]) == names
    app.state.sort = "org"  # (a link or Back / Forward) -> the control follows
    assert app.controls.sort.value == "org"
    assert list(app.catalog.table.value["model_id"]) == list(order_catalog(app.data.catalog, "org")["model_id"])


def test_name_filter_applies_as_typed_outside_a_served_session():
    """Outside a served session each keystroke (value_input) applies at once; Enter (value) too; a change
    of the state shows in the box."""
    from dashboard.app import DashboardApp

    app = DashboardApp()
    box = app.controls.search
    box.value_input = "mixtral"
    assert app.state.search == "mixtral"
    assert all("mixtral" in m.lower() for m in app.validity._models) and len(app.validity._models) >= 2
    box.value = "qwen3"
    assert app.state.search == "qwen3"
    app.state.search = "llama"
    assert (box.value, box.value_input) == ("llama", "llama")
    box.value_input = ""
    assert app.state.search == "" and len(app.validity._models) == len(app.data.model_ids)


# ---- the heatmap fits the page ------------------------------------------------------------------------


def test_heatmap_budget_follows_the_main_area():
    assert heatmap.heatmap_budget(1580) == heatmap.HEATMAP_BUDGET_PX  # 1920 px page, sidebar open
    assert heatmap.heatmap_budget(1026) == 1026 - heatmap.MAIN_INSET_PX  # 1366 px page, sidebar open
    assert heatmap.heatmap_budget(100) == heatmap.MIN_BUDGET_PX
    for junk in (None, "junk", float("nan"), float("inf"), -5, 0):
        assert heatmap.heatmap_budget(junk) == heatmap.HEATMAP_BUDGET_PX, junk


def test_reported_width_narrows_the_heatmap_and_junk_is_ignored():
    from dashboard.app import DashboardApp

    app = DashboardApp()
    fig = app.validity.figure
    wide = fig.width
    assert wide > 1026 - heatmap.MAIN_INSET_PX  # as before: too wide for a 1366 px laptop's main area
    for junk in ("<script>", "-3", "1e9", "", "99999999", None):
        app.set_main_width(junk)
        assert app.main_px is None and fig.width == wide, junk
    app.set_main_width("1026")
    assert app.main_px == 1026 and fig.width <= 1026 - heatmap.MAIN_INSET_PX
    assert fig.frame_width / heatmap.heatmap_units(2, 10) >= heatmap.MIN_COL_PX
    app.set_main_width("1580")
    assert fig.width == wide
