"""The notebooks in ``notebooks/`` execute top to bottom on the shipped catalog, so they never rot.

Each notebook runs in a fresh ``python3`` kernel through nbclient (the same engine as ``jupyter
nbconvert --execute``) with the notebooks folder as working directory. A cell that raises fails the
test with the cell's source and traceback. Cells tagged ``plot`` must also *render*: HoloViews falls
back to a one-line text repr (``:HeatMap [x,y] (z)``) without raising when a plot cannot be drawn,
so the test requires each tagged cell's result to carry the HoloViews/Bokeh output mime type.

The committed notebooks carry no outputs (checked here too, cheaply, without a kernel).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EXPECTED = ("explore_catalog.ipynb", "capacity_planning.ipynb")
#: Output mime type of a rendered HoloViews object (a Bokeh model with its JS).
HV_MIME = "application/vnd.holoviews_exec.v0+json"


def _notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def test_expected_notebooks_exist():
    names = {p.name for p in _notebooks()}
    missing = [n for n in EXPECTED if n not in names]
    assert not missing, f"missing notebooks: {missing} (have {sorted(names)})"


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.name)
def test_committed_without_outputs(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them before committing"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    assert any("plot" in c.metadata.get("tags", []) for c in nb.cells), "no cell is tagged 'plot'"


def _execute(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    env_catalog = os.environ.pop("TP_PLANNER_CATALOG", None)  # the shipped catalog, whatever the shell says
    try:
        client = nbclient.NotebookClient(
            nb, timeout=600, kernel_name="python3", allow_errors=False,
            resources={"metadata": {"path": str(NOTEBOOKS)}},
        )
        try:
            client.execute()
        except nbclient.exceptions.CellExecutionError as exc:
            pytest.fail(f"{path.name}: a cell raised:\n{exc}", pytrace=False)
    finally:
        if env_catalog is not None:
            os.environ["TP_PLANNER_CATALOG"] = env_catalog
    return nb


@pytest.mark.slow
@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.name)
def test_notebook_executes_and_renders(path: Path, artifacts_dir: Path):
    nb = _execute(path)
    out_dir = artifacts_dir / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out_dir / path.name)  # executed copy for people to open

    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        outputs = cell.get("outputs", [])
        for o in outputs:
            if o.get("output_type") == "error":
                problems.append(f"cell {i}: {o.get('ename')}: {o.get('evalue')}")
            if o.get("output_type") == "stream" and o.get("name") == "stderr" and "Traceback" in o.get("text", ""):
                problems.append(f"cell {i}: traceback on stderr:\n{o['text'][-2000:]}")
        if "plot" in cell.metadata.get("tags", []):
            rendered = [o for o in outputs if o.get("output_type") in ("execute_result", "display_data")
                        and HV_MIME in o.get("data", {})]
            if not rendered:
                texts = [o.get("data", {}).get("text/plain", "") for o in outputs]
                problems.append(f"cell {i} is tagged 'plot' but did not render a plot; got {texts!r}\n"
                                f"source:\n{cell.source[:400]}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
