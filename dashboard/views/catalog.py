"""Catalog view: the models table with search and filters; its selection feeds the other views."""

from __future__ import annotations

import pandas as pd
import panel as pn
import param

from dashboard.state import TRISTATE, AppData, PlannerState, catalog_choices, filter_catalog
from dashboard.views.common import bind_two_way, when_shown

#: Columns shown (catalog column -> header).
TABLE_COLUMNS: dict[str, str] = {
    "model_id": "model",
    "model_type": "model_type",
    "params_b": "params (B)",
    "active_b": "active (B)",
    "num_attention_heads": "heads",
    "num_key_value_heads": "KV heads",
    "head_dim": "head_dim",
    "num_hidden_layers": "layers",
    "attention_kind": "attention",
    "is_moe": "MoE",
    "num_experts": "experts",
    "is_mla": "MLA",
    "linear_attention_kind": "linear attn",
    "has_vision": "vision",
    "quant_method": "quant",
    "torch_dtype": "dtype",
    "status": "status",
}


#: How the table shows a missing value, in every column (numbers through their formatter's nan_format).
MISSING = "–"
#: Whole-number columns (nullable integers: floats with NaN on the wire).
INT_COLUMNS = ("num_attention_heads", "num_key_value_heads", "head_dim", "num_hidden_layers", "num_experts")
#: Columns in billions of parameters.
PARAM_COLUMNS = ("params_b", "active_b")


def table_formatters() -> dict:
    """Tabulator formatters: untrusted text as plain text; numbers without a spurious ".0" and missing
    numbers shown as :data:`MISSING`, like missing text (Tabulator would print "NaN")."""
    from bokeh.models.widgets.tables import NumberFormatter

    return {
        **{c: {"type": "plaintext"} for c in ("model_id", "model_type", "attention_kind", "linear_attention_kind",
                                               "quant_method", "torch_dtype", "status", "is_moe", "is_mla",
                                               "has_vision")},
        **{c: NumberFormatter(format="0", nan_format=MISSING, null_format=MISSING, text_align="right")
           for c in INT_COLUMNS},
        **{c: NumberFormatter(format="0.00", nan_format=MISSING, null_format=MISSING, text_align="right")
           for c in PARAM_COLUMNS},
    }


def table_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The catalog rows as the table shows them: plain Python values, params in billions; missing text
    and flags are :data:`MISSING`, missing numbers NaN (drawn as :data:`MISSING` by the formatters)."""
    out = pd.DataFrame(index=df.index)
    for col in TABLE_COLUMNS:
        if col == "params_b":
            out[col] = (df["params_total"].astype("float64") / 1e9).round(2)
        elif col == "active_b":
            out[col] = (df["params_active"].astype("float64") / 1e9).round(2)
        elif col in df.columns:
            s = df[col]
            if str(s.dtype) in ("Int64", "Float64"):
                out[col] = s.astype("float64")
            elif str(s.dtype) == "boolean":
                out[col] = s.map({True: "yes", False: "no"}).astype(object).fillna(MISSING)
            else:
                out[col] = s.astype(object).where(s.notna() & (s.astype(object) != ""), MISSING)
    return out.reset_index(drop=True)


def _spelled_as(options: list[str]):
    """Widget converter: a state value shown as the option it equals case-insensitively, else ``""`` (the
    catalog filters compare case-insensitively, so ``qwen`` filters as ``Qwen``)."""
    by_lower = {}
    for o in options:
        by_lower.setdefault(o.lower(), o)
    return lambda v: by_lower.get(str(v).strip().lower(), "") if v else ""


class CatalogView(pn.viewable.Viewer):
    """Tabulator of the catalog with search and filters; selected rows become the heatmaps' models."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        s, cat = self.state, self.data.catalog
        choices = catalog_choices(cat)
        orgs, types = choices["org"], choices["model_type"]
        quants = [q for q in choices["quant"] if q != "none"]
        self.org = pn.widgets.Select(label="Organisation", options=["", *orgs], width=190)
        bind_two_way(self.org, s, "org", to_widget=_spelled_as(orgs))
        self.model_type = pn.widgets.Select(label="model_type", options=["", *types], width=190)
        bind_two_way(self.model_type, s, "model_type", to_widget=_spelled_as(types))
        self.quant = pn.widgets.Select(label="Quantization", options=["", "none", *quants], width=150)
        bind_two_way(self.quant, s, "quant", to_widget=_spelled_as(["none", *quants]))
        self.min_p = pn.widgets.FloatInput(label="Params ≥ (B)", start=0, width=110)
        bind_two_way(self.min_p, s, "min_params_b", to_param=lambda v: float(v or 0))
        self.max_p = pn.widgets.FloatInput(label="Params ≤ (B, 0 = any)", start=0, width=150)
        bind_two_way(self.max_p, s, "max_params_b", to_param=lambda v: float(v or 0))
        self.heads = pn.widgets.IntInput(label="Heads (0 = any)", start=0, width=120)
        bind_two_way(self.heads, s, "heads", to_param=lambda v: int(v or 0))
        self.kv_heads = pn.widgets.IntInput(label="KV heads (0 = any)", start=0, width=130)
        bind_two_way(self.kv_heads, s, "kv_heads", to_param=lambda v: int(v or 0))
        self.flags = {}
        for p, label in (("moe", "MoE"), ("mla", "MLA"), ("linear", "Linear attention"), ("vision", "Vision")):
            w = pn.widgets.RadioButtonGroup(label=label, options=list(TRISTATE), color="light", width=170)
            bind_two_way(w, s, p)
            self.flags[p] = w
        self.use = pn.widgets.Button(label="Show selected rows on the heatmaps", color="primary",
                                     css_classes=["tp-use-selection"])
        self.use.on_click(self._use_selection)
        self.count = pn.pane.HTML()
        self.table = pn.widgets.Tabulator(
            table_frame(cat.iloc[0:0]),
            show_index=False,
            selectable="checkbox",
            pagination="local",
            page_size=25,
            header_filters=True,
            disabled=True,
            sizing_mode="stretch_width",
            height=820,
            formatters=table_formatters(),
            titles=TABLE_COLUMNS,
            frozen_columns=["model_id"],
            css_classes=["tp-catalog-table"],
            stylesheets=[":host .tabulator {font-size: 15px;}"],
        )
        self.table.on_click(self._on_click)
        # the table's own column filters (typed in its header) narrow the rows it shows: so does the count
        self.table.param.watch(lambda *_: self._show_count(), "filters")
        s.param.watch(when_shown(self, "catalog", self._refresh), ["search", "sort", "org", "model_type", "min_params_b", "max_params_b", "heads",
                                      "kv_heads", "moe", "mla", "linear", "vision", "quant"])
        self.param.watch(when_shown(self, "catalog", self._refresh), "data")  # a model added to the session
        self._refresh()

    def _refresh(self, *_):
        sub = filter_catalog(self.state, self.data.catalog)
        self._ids = [str(x) for x in sub["model_id"].tolist()]
        self.table.value = table_frame(sub)
        picked = set(self.state.models)
        self.table.selection = [i for i, m in enumerate(self._ids) if m in picked]
        self._show_count()

    def shown_rows(self) -> int:
        """Rows the table shows: the catalog filters' matches narrowed by the table's own column filters."""
        try:
            view = self.table.current_view
        except Exception:  # noqa: BLE001 -- no view to narrow by: every row
            return len(self._ids)
        return len(self._ids) if view is None else len(view)

    def _show_count(self) -> None:
        n, total = self.shown_rows(), len(self.data.catalog)
        narrowed = (f" ({len(self._ids)} before the table's column filters)" if n != len(self._ids) else "")
        self.count.object = (f'<div class="tp-catalog-count" style="font-size:16px"><b>{n}</b> of {total} models '
                             f"match{narrowed}. Tick rows and press the button to show just those on the heatmaps; "
                             "click a row to select that model for details, layout and memory.</div>")

    def visible_selection(self) -> list[int]:
        """Selected row positions that are in the table's current view (its header filters applied), in
        selection order. The header's select-all box selects every row, filtered out or not."""
        sel = [i for i in self.table.selection if 0 <= i < len(self._ids)]
        try:
            view = self.table.current_view
        except Exception:  # noqa: BLE001 -- no view to narrow by: keep the whole selection
            return sel
        if view is None:
            return sel
        value = self.table.value
        shown = {int(p) for p in value.index.get_indexer(view.index) if p >= 0}
        return [i for i in sel if i in shown]

    def _use_selection(self, *_):
        ids = [self._ids[i] for i in self.visible_selection()]
        self.state.param.update(models=ids, **({"model": ids[0]} if ids and self.state.model not in ids else {}))

    def _on_click(self, event):
        row = getattr(event, "row", None)
        if row is not None and 0 <= row < len(self._ids):
            self.state.model = self._ids[row]

    def __panel__(self):
        # FlexBox, not Row: a Row's minimum width is the sum of its widgets' widths, which widened the whole
        # tab past a 1366 px page with the sidebar open (filters and help text cut off at the right); a
        # FlexBox wraps its widgets onto as many lines as the page needs.
        return pn.Column(
            pn.FlexBox(self.org, self.model_type, self.quant, self.min_p, self.max_p, self.heads, self.kv_heads,
                       flex_wrap="wrap", sizing_mode="stretch_width", css_classes=["tp-catalog-filters"]),
            pn.FlexBox(*[pn.Column(pn.pane.HTML(f"<b>{w.label}</b>"), w) for w in self.flags.values()], self.use,
                       flex_wrap="wrap", align_items="flex-end", sizing_mode="stretch_width",
                       css_classes=["tp-catalog-flags"]),
            self.count,
            self.table,
            sizing_mode="stretch_width",
            styles={"min-width": "0", "max-width": "100%"},
        )
