"""Issue 23 (part 5): the sidebar GPU decides the evidence the dashboard shows. The conformance tables so far
ran as an H100 (cuda-sm90): on a GPU of another platform the details pane says the verdict was read from
source for it, and the heatmap's summary says which GPU its executed verdicts ran as."""

from __future__ import annotations

import holoviews as hv
import pytest

from dashboard.views.common import esc

hv.extension("bokeh")

LLAMA = "meta-llama/Llama-3.1-70B-Instruct"


@pytest.fixture(scope="module")
def app():
    from dashboard.app import DashboardApp

    return DashboardApp(query=f"?model={LLAMA}&framework=vllm&tp=8&gpu=H100-80GB")


def _summary(app) -> str:
    return app.validity._summary.object


def test_the_heatmap_and_details_follow_the_sidebar_gpu(app):
    details = app.validity._details._html.object
    assert "Reproduced by running vLLM 0.33.0&#x27;s own code on this config and layout, as an H100-80GB" in details
    assert "ran as an H100-80GB (cuda-sm90)." in _summary(app)
    app.state.gpu = "MI300X-192GB"
    details = app.validity._details._html.object
    assert "Reproduced" not in details
    assert esc("Rules read from vLLM 0.33.0 source for this GPU (rocm-gfx942); not executed on it") in details
    assert "Your GPU, MI300X-192GB (rocm-gfx942), was never run through the conformance harness" in _summary(app)
    app.state.gpu = "T4-16GB"  # a platform whose table was run: its own table backs the verdict
    details = app.validity._details._html.object
    assert "as a T4-16GB (cuda-sm75); conformance table cuda-sm75/vllm-0.33.0.parquet" in details
    app.state.gpu = "other:24"  # a card given by its memory: family unknown, judged as the tables' own platform
    assert "The family of other:24 is unknown" in _summary(app)
    assert "judged as on the tables run as an H100-80GB (cuda-sm90), and none was executed on this card" in _summary(app)
    details = app.validity._details._html.object
    assert "Reproduced" not in details and "family is unknown" in details
    app.state.gpu = "H200-141GB"  # another Hopper card: the H100's table is its platform's
    assert "Reproduced by running" in app.validity._details._html.object


def test_the_note_says_which_frameworks_ran_as_the_gpu() -> None:
    from dashboard.views.validity import platform_note

    note = platform_note("T4-16GB", "cuda-sm75", [("vllm", None), ("sglang", None)])
    assert note.startswith("Executed vLLM verdicts for T4-16GB come from the tables run as a T4-16GB (cuda-sm75).")
    assert "SGLang was not run as this GPU: its verdicts are the rules checked as an H100-80GB (cuda-sm90)" in note
