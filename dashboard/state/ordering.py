"""The catalog as the views list it: sorted, ordered and filtered by a session's choices."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from dashboard.state.choices import SORT_CHOICES
from dashboard.state.links import folded

if TYPE_CHECKING:  # annotations only
    from dashboard.state.data import AppData
    from dashboard.state.session import PlannerState


def order_catalog(catalog: pd.DataFrame, sort: str = "family") -> pd.DataFrame:
    """``catalog``'s rows in the order ``sort`` names (a new frame, index kept; the input is untouched).

    Orders (one of :data:`SORT_CHOICES`):

    * ``family`` -- the text model's ``model_type`` (``text_model_type``: for a multimodal model the
      language model's type, e.g. ``mistral`` for a LLaVA-style model; else ``model_type``),
      case-insensitive, then total parameters (``params_total``, a count), smallest first;
    * ``name`` -- the repo name after the organisation (``Llama-3.1-8B`` of ``meta-llama/Llama-3.1-8B``),
      case-insensitive, then the organisation;
    * ``size`` -- total parameters, smallest first;
    * ``org`` -- the organisation (the id before its first ``/``), case-insensitive, then the name.

    A row with no family or no parameter count (a config that could not be read) comes after the rows
    that have one; remaining ties fall back to the name, then the full id case-insensitively, then the
    catalog's own order (the sort is stable). Raises ValueError for an unknown ``sort``.
    """
    if sort not in SORT_CHOICES:
        raise ValueError(f"unknown order {sort!r} (expected one of {', '.join(SORT_CHOICES)})")
    ids = catalog["model_id"].astype(object).where(catalog["model_id"].notna(), "").astype(str)
    parts = ids.str.split("/", n=1)
    org = folded(parts.str[0].where(parts.str.len() > 1, ""))
    name = folded(parts.str[-1])
    fam = folded(catalog["text_model_type"]) if "text_model_type" in catalog.columns else pd.Series("", index=ids.index)
    if "model_type" in catalog.columns:
        fam = fam.where(fam != "", folded(catalog["model_type"]))
    size = pd.to_numeric(catalog.get("params_total", pd.Series(float("nan"), index=ids.index)), errors="coerce")
    size = size.astype("float64")
    keys = pd.DataFrame({
        "no_fam": fam == "", "fam": fam, "no_size": size.isna(), "size": size.fillna(0.0),
        "no_org": org == "", "org": org, "name": name, "id": folded(ids),
    }, index=catalog.index)
    by = {"family": ["no_fam", "fam", "no_size", "size", "name", "id"],
          "name": ["name", "no_org", "org", "id"],
          "size": ["no_size", "size", "name", "id"],
          "org": ["no_org", "org", "name", "id"]}[sort]
    order = keys.sort_values(by=by, kind="stable").index
    return catalog.loc[order]


def model_order(data: AppData, sort: str = "family") -> dict[str, int]:
    """Position of each catalog model id in :func:`order_catalog` order ``sort`` (computed once per
    process and order; read-only)."""
    def build():
        ordered = order_catalog(data.catalog, sort)["model_id"].astype(str).tolist()
        return {m: i for i, m in enumerate(ordered)}

    return data.memo(("model-order", sort), build)


def filter_models(state: PlannerState, data: AppData, *, ok_only: bool = False) -> list[str]:
    """Model ids the heatmaps show for ``state``: explicit picks (or all), narrowed by the name filter.

    Order: ``state.sort`` (:func:`order_catalog`; ids not in the catalog last). ``ok_only`` drops rows
    whose config could not be read.
    """
    ids = list(state.models) if state.models else list(data.model_ids)
    terms = state.search_terms()
    if terms:
        ids = [m for m in ids if any(t in m.lower() for t in terms)]
    if ok_only:
        okset = set(data.catalog.loc[data.catalog["status"] == "ok", "model_id"].astype(str))
        ids = [m for m in ids if m in okset]
    rank = model_order(data, state.sort)
    last = len(rank)
    return sorted(ids, key=lambda m: rank.get(m, last))


def filter_catalog(state: PlannerState, catalog: pd.DataFrame) -> pd.DataFrame:
    """Catalog rows passing the catalog-view filters of ``state``, in ``state.sort`` order
    (:func:`order_catalog`; a new frame; input untouched)."""
    df = catalog
    mask = pd.Series(True, index=df.index)
    terms = state.search_terms()
    if terms:
        low = df["model_id"].astype(str).str.lower()
        m = pd.Series(False, index=df.index)
        for t in terms:
            m |= low.str.contains(t, regex=False)
        mask &= m
    if state.org:
        mask &= df["org"].astype(str).str.lower() == state.org.lower()
    if state.model_type:
        mt = state.model_type.lower()
        mask &= (df["model_type"].astype(str).str.lower() == mt) | (df["text_model_type"].astype(str).str.lower() == mt)
    params_b = df["params_total"].astype("float64") / 1e9
    if state.min_params_b:
        mask &= params_b.fillna(-1) >= state.min_params_b
    if state.max_params_b:
        mask &= params_b.fillna(float("inf")) <= state.max_params_b
    if state.heads:
        mask &= df["num_attention_heads"].astype("Float64").fillna(-1) == state.heads
    if state.kv_heads:
        mask &= df["num_key_value_heads"].astype("Float64").fillna(-1) == state.kv_heads
    for pname, col in (("moe", "is_moe"), ("mla", "is_mla"), ("linear", "has_linear_attention"), ("vision", "has_vision")):
        v = getattr(state, pname)
        if v != "any":
            flag = df[col].astype("boolean").fillna(False).astype(bool)
            mask &= flag if v == "yes" else ~flag
    if state.quant:
        q = state.quant.lower()
        qm = df["quant_method"].astype("string").fillna("").str.lower()
        mask &= (qm == "") if q == "none" else (qm == q)
    return order_catalog(df.loc[mask.astype(bool)], state.sort)
