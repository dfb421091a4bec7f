"""Sidebar controls: every widget is generated per session and bound two-way to PlannerState."""

from __future__ import annotations

import panel as pn
import param

from dashboard import schema
from dashboard.state import (
    DEFAULT_VERSIONS,
    KV_DTYPES,
    SORT_LABELS,
    TP_CHOICES,
    VERSION_PARAMS,
    WEIGHT_DTYPES,
    AppData,
    PlannerState,
    framework_releases,
)
from dashboard.views.add_model import AddModelPanel
from dashboard.views.common import bind_as_you_type, bind_two_way, esc


class Immediate:
    """Mixin for a Panel widget whose change reaches the server's callbacks at once. Panel delays a
    widget's change by 50 ms (``Syncable._debounce``) to merge a burst of them, e.g. keystrokes; a click
    on a checkbox or a pick in a list is one change, and the delay was a third of the time from a click
    to the repainted heatmap (scripts/bench_ui.py).

    The change is handled 1 ms later rather than on the next tick (Panel's ``_priority_changes``, as its
    Tabulator does): on the next tick the server is still writing its acknowledgement of the browser's
    message and holds the websocket's write lock, so Panel holds back the resulting patch and retries
    10 ms later (``panel.io.document._dispatch_msgs``); 1 ms later the lock is free and the patch goes
    out as soon as it is made."""

    _debounce = 1


class CheckBoxGroup(Immediate, pn.widgets.CheckBoxGroup):
    """A CheckBoxGroup whose clicks reach the server without Panel's 50 ms delay."""


def flag_box(label: str, obj: param.Parameterized, pname: str, css_classes: list[str] | None = None) -> CheckBoxGroup:
    """An on/off setting shown as one tick box whose text is clickable too (Panel's Checkbox toggles only
    on its 16 px box), bound two-way to the boolean ``obj.<pname>``."""
    box = CheckBoxGroup(options=[label], css_classes=list(css_classes or []))
    bind_two_way(box, obj, pname, to_widget=lambda v: [label] if v else [], to_param=lambda v: bool(v))
    return box


class Select(Immediate, pn.widgets.Select):
    """A Select whose picks reach the server without Panel's 50 ms delay."""


def gpu_names() -> list[str]:
    """GPU ids from :func:`dashboard.memory.load_gpus` (``gpu`` column), or ``[]`` when unavailable."""
    try:
        from dashboard import memory
        g = memory.load_gpus()
    except Exception:  # noqa: BLE001 -- the memory model may not be installed yet
        return []
    col = "gpu" if "gpu" in g.columns else g.columns[0]
    return [str(x) for x in g[col].tolist()]


def executed_group(framework: str) -> str:
    """Option group of a version selector holding the releases run through ``framework``'s own code."""
    return f"Run through {schema.FRAMEWORK_LABELS[framework]}'s own code"


#: Option groups of the vLLM version selector (the SGLang one: :func:`executed_group` and the same SOURCE_GROUP).
EXECUTED_GROUP = executed_group("vllm")
SOURCE_GROUP = "Rules read from source"


def version_groups(framework: str) -> dict[str, dict[str, str]]:
    """Options of ``framework``'s version selector (one of :data:`dashboard.state.VERSION_PARAMS`),
    ``{group: {label: release}}``: the releases run through the conformance harness first
    (``"0.33.0 (executed)"``), then every other release newest first, labelled with the date it reached
    PyPI where the framework has a release-date table (vLLM: ``"0.22.0 (2026-05-29)"``), else
    ``"0.5.21 (read from source)"`` (SGLang)."""
    ex_group = executed_group(framework)
    groups: dict[str, dict[str, str]] = {ex_group: {}, SOURCE_GROUP: {}}
    for v, date, executed in framework_releases(framework):
        if executed:
            groups[ex_group][f"{v} (executed)"] = v
        else:
            groups[SOURCE_GROUP][f"{v} ({date})" if date else f"{v} (read from source)"] = v
    return {g: o for g, o in groups.items() if o}


def vllm_version_groups() -> dict[str, dict[str, str]]:
    """:func:`version_groups` of vLLM."""
    return version_groups("vllm")


def sglang_version_groups() -> dict[str, dict[str, str]]:
    """:func:`version_groups` of SGLang."""
    return version_groups("sglang")


def version_select(framework: str, state: PlannerState) -> Select:
    """``framework``'s version selector ("vLLM version", CSS class ``tp-vllm-version``), bound two-way to
    its :data:`dashboard.state.VERSION_PARAMS` parameter; a release it does not offer shows the default."""
    groups = version_groups(framework)
    releases = {v for opts in groups.values() for v in opts.values()}
    default = DEFAULT_VERSIONS[framework]
    w = Select(label=f"{schema.FRAMEWORK_LABELS[framework]} version", groups=groups,
               css_classes=[f"tp-{framework}-version"], sizing_mode="stretch_width")
    bind_two_way(w, state, VERSION_PARAMS[framework], to_widget=lambda v: v if v in releases else default)
    return w


#: GPU shown when the state names none (or one the table lacks).
DEFAULT_GPU = "H100-80GB"


#: Option of the GPU selectors for a card given by its memory (the number box beside it sets the GiB).
OTHER_GPU_LABEL = "Other (GiB)…"


def other_gpu_id(name: str) -> str:
    """The canonical ``"other:<GiB>"`` id of ``name`` (``"Other: 24.0"`` -> ``"other:24"``), or ``""`` when
    ``name`` is not a valid ``other:`` spelling (see :func:`dashboard.memory.parse_other_gpu`)."""
    try:
        from dashboard import memory

        gib = memory.parse_other_gpu(name)
        return "" if gib is None else memory.other_gpu(gib)
    except (ValueError, ImportError):
        return ""


def resolve_gpu(name: str, gpus: list[str]) -> str:
    """``name`` when it is in ``gpus`` or a valid ``"other:<GiB>"`` id (canonical spelling); else
    :data:`DEFAULT_GPU` when listed; else the first GPU."""
    if name in gpus:
        return name
    other = other_gpu_id(name) if gpus else ""
    if other:
        return other
    return DEFAULT_GPU if DEFAULT_GPU in gpus else (gpus[0] if gpus else "")


def gpu_picker(state: PlannerState, *, width: int, css_class: str) -> tuple[pn.widgets.Widget, pn.widgets.Widget]:
    """The GPU selector bound to ``state.gpu``: a Select of the GPU table's ids plus :data:`OTHER_GPU_LABEL`,
    and a GiB-per-GPU number box shown while "Other" is picked (``state.gpu`` is then ``"other:<GiB>"``,
    24 GiB when first picked). Returns ``(select, gib_input)``; the select is disabled when the table is
    unavailable."""
    gpus = gpu_names()
    select = Select(label="GPU", options=(gpus + [OTHER_GPU_LABEL]) if gpus else ["(GPU table unavailable)"],
                    disabled=not gpus, width=width, css_classes=[css_class])
    gib = pn.widgets.FloatInput(label="GiB per GPU", start=1, end=4096, step=1, value=24.0, width=95,
                                visible=False, css_classes=[css_class + "-gib"])
    if not gpus:
        return select, gib
    from dashboard import memory

    def to_widget(v):
        return OTHER_GPU_LABEL if other_gpu_id(v) else resolve_gpu(v, gpus)

    def to_param(v):
        if v == OTHER_GPU_LABEL:
            return memory.other_gpu(gib.value if gib.value is not None else 24.0)
        return v

    bind_two_way(select, state, "gpu", to_widget=to_widget, to_param=to_param)

    def sync_gib(*_):
        other = other_gpu_id(state.gpu)
        gib.visible = bool(other)
        if other:
            v = memory.parse_other_gpu(other)
            if gib.value != v:
                gib.value = v

    def gib_changed(event):
        if select.value != OTHER_GPU_LABEL or event.new is None:
            return
        try:
            new = memory.other_gpu(event.new)
        except ValueError:  # outside 1..4096 GiB: snap back to the GiB in use, so the box never shows a
            # figure the plan does not use
            gib.value = memory.parse_other_gpu(other_gpu_id(state.gpu) or "") or 24.0
            return
        if new != state.gpu:
            state.gpu = new

    state.param.watch(sync_gib, "gpu")
    gib.param.watch(gib_changed, "value")
    sync_gib()
    return select, gib


class Controls(pn.viewable.Viewer):
    """Model search and selection, frameworks and the vLLM and SGLang versions, TP sizes, PP/DP/EP, DP-attention, dtypes,
    GPU, context."""

    state = param.ClassSelector(class_=PlannerState, doc="Session state.")
    data = param.ClassSelector(class_=AppData, doc="Process-wide catalog and grid (read-only).")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self.search = pn.widgets.TextInput(
            label="Filter models by name", placeholder="e.g. llama qwen deepseek", css_classes=["tp-search"]
        )
        bind_as_you_type(self.search, s, "search")
        self.sort = Select(label="Order models by", options={v: k for k, v in SORT_LABELS.items()},
                           css_classes=["tp-sort"], sizing_mode="stretch_width")
        bind_two_way(self.sort, s, "sort")
        self.model = pn.widgets.AutocompleteInput(
            label="Selected model", options=list(self.data.model_ids), case_sensitive=False,
            search_strategy="includes", min_characters=1, restrict=True, placeholder="type part of a model id",
            css_classes=["tp-model-picker"],
        )
        bind_two_way(self.model, s, "model")
        #: "Add a model": owns this session's catalog (its ``data`` changes when a model is added).
        self.add_model = AddModelPanel(state=s, data=self.data)
        self.param.watch(self._data_changed, "data")
        self.picked = pn.pane.HTML(sizing_mode="stretch_width")
        self.clear_picks = pn.widgets.Button(label="Show all models", color="light", visible=False)
        self.clear_picks.on_click(lambda _e: setattr(s, "models", []))
        s.param.watch(self._picks_changed, "models")
        self._picks_changed()

        fw_opts = {schema.FRAMEWORK_LABELS[f]: f for f in schema.FRAMEWORKS}
        self.frameworks = CheckBoxGroup(label="Frameworks", options=fw_opts, css_classes=["tp-frameworks"])
        bind_two_way(self.frameworks, s, "frameworks", to_widget=list, to_param=lambda v: [f for f in schema.FRAMEWORKS if f in v])
        self.disagreement = flag_box("Show only where frameworks disagree", s, "disagreement", ["tp-disagree"])
        self.vllm_version = version_select("vllm", s)
        self.sglang_version = version_select("sglang", s)
        self.cell_fw = Select(label="Framework of the selected cell", options=fw_opts)
        bind_two_way(self.cell_fw, s, "framework")
        self.tp_sizes = CheckBoxGroup(
            label="TP sizes", options={str(t): t for t in TP_CHOICES}, inline=True,
            css_classes=["tp-tp-sizes"], sizing_mode="stretch_width",
            stylesheets=[":host .bk-input-group { flex-wrap: wrap; gap: 2px 10px; }"],
        )
        bind_two_way(self.tp_sizes, s, "tp_sizes", to_widget=list, to_param=lambda v: sorted(int(x) for x in v))
        self.tp = Select(label="TP of the selected cell", options=list(TP_CHOICES))
        bind_two_way(self.tp, s, "tp", to_param=int,
                     to_widget=lambda v: v)
        s.param.watch(self._tp_options, "tp")
        self._tp_options()
        self.pp = pn.widgets.IntInput(label="PP", start=1, end=128, width=80, css_classes=["tp-pp"])
        self.dp = pn.widgets.IntInput(label="DP", start=1, end=128, width=80)
        self.ep = pn.widgets.IntInput(label="EP", start=1, end=1024, width=80)
        for w, p in ((self.pp, "pp"), (self.dp, "dp"), (self.ep, "ep")):
            bind_two_way(w, s, p)
        self.ep_hint = pn.pane.HTML(
            '<div style="font-size:13px;color:#555;line-height:1.35">vLLM: EP &gt; 1 means '
            '<code style="white-space:nowrap;color:inherit;font-size:12px">--enable-expert-parallel</code>, '
            "an EP size of TP &times; DP. The other frameworks use EP as given.</div>",
            sizing_mode="stretch_width", css_classes=["tp-ep-hint"])
        self.dp_attention = flag_box("DP-attention (SGLang: attn_tp = TP / DP)", s, "dp_attention", ["tp-dp-attention"])
        self.weight_dtype = Select(label="Weight dtype", options=list(WEIGHT_DTYPES), width=130)
        bind_two_way(self.weight_dtype, s, "weight_dtype")
        self.kv_dtype = Select(label="KV-cache dtype", options=list(KV_DTYPES), width=130)
        bind_two_way(self.kv_dtype, s, "kv_dtype")
        self.gpu, self.gpu_gib = gpu_picker(s, width=170, css_class="tp-gpu")
        self.gpu_count = pn.widgets.IntInput(label="GPUs", start=1, end=4096, width=90)
        bind_two_way(self.gpu_count, s, "gpu_count")
        self.context_len = pn.widgets.IntInput(label="Context length (tokens)", start=1, end=10_000_000, step=1024)
        bind_two_way(self.context_len, s, "context_len")

    def _data_changed(self, event):
        """This session's catalog changed (a model was added): offer its models in the picker."""
        ids = list(event.new.model_ids)
        if list(self.model.options) != ids:
            self.model.options = ids
        if self.add_model.data is not event.new:
            self.add_model.data = event.new

    def _picks_changed(self, *_):
        n = len(self.state.models)
        self.clear_picks.visible = n > 0
        self.picked.object = (
            f'<div style="font-size:14px">Showing <b>{n}</b> models picked in the Catalog tab.</div>' if n else ""
        )

    def _tp_options(self, *_):
        opts = sorted(set(TP_CHOICES) | {int(self.state.tp)})
        if list(self.tp.options) != opts:
            self.tp.options = opts

    def __panel__(self):
        h = lambda t: pn.pane.HTML(f'<div style="font-size:13px;font-weight:600;letter-spacing:.04em;color:#555;margin-top:8px">{esc(t)}</div>')  # noqa: E731
        return pn.Column(
            h("MODELS"), self.search, self.sort, self.model, self.picked, self.clear_picks,
            h("ADD A MODEL"), self.add_model,
            h("FRAMEWORKS"), self.frameworks, self.vllm_version, self.sglang_version, self.disagreement,
            h("TP SIZES"), self.tp_sizes,
            h("SELECTED CELL"), self.cell_fw, self.tp,
            h("PARALLELISM"), pn.Row(self.pp, self.dp, self.ep), self.ep_hint, self.dp_attention,
            h("MEMORY"), pn.Row(self.weight_dtype, self.kv_dtype), pn.Row(self.gpu, self.gpu_count), self.gpu_gib, self.context_len,
            sizing_mode="stretch_width",
        )
