"""Import structure of the dashboard package, read from the source with :mod:`ast` (nothing is imported).

Every ``import`` / ``from ... import`` anywhere in a file counts, also inside functions: a lazy import
only hides a circle until the function runs.

* The views (``dashboard/views/*``) import each other without a circle, and so do the plot modules
  (``dashboard/plots/*``). A package's ``__init__`` is not a node: it only gathers its modules.
* The pure-logic modules import no Panel, HoloViews or Bokeh, directly or through another
  ``dashboard`` module; the plot modules import no Panel.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "dashboard"

#: The pure layer (a package stands for every module in it); "planner" once it exists.
PURE = ("schema", "sharding", "catalog", "rules", "layout", "memory", "planner", "hub", "addmodel")
UI_LIBS = ("panel", "holoviews", "bokeh")


def module_name(path: Path, root: Path = ROOT) -> str:
    """``dashboard.views.details`` for ``dashboard/views/details.py`` (``__init__`` names its package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(path: Path, root: Path = ROOT) -> set[str]:
    """Every module ``path`` imports anywhere in the file, as dotted names. ``from a import b`` gives
    ``a`` and ``a.b`` (``b`` may be a submodule); relative imports are resolved."""
    name = module_name(path, root)
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names if a.name != "*")
    return out


def package_graph(folder: Path, root: Path = ROOT) -> dict[str, set[str]]:
    """Edges between the modules of ``folder`` (its ``__init__`` left out): module -> modules it imports."""
    mods = {module_name(p, root): p for p in sorted(folder.glob("*.py")) if p.name != "__init__.py"}
    graph = {}
    for name, path in mods.items():
        hits = imported_names(path, root)
        graph[name] = {m for m in mods if m != name and any(h == m or h.startswith(m + ".") for h in hits)}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` as ``[a, b, ..., a]``, or None when it is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_find_cycle_sees_a_circle_through_a_lazy_import(tmp_path):
    """The walker counts an import inside a function, and the detector reports the circle."""
    pkg = tmp_path / "dashboard" / "views"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from dashboard.views.a import x\n")
    (pkg / "a.py").write_text("from dashboard.views import b\nx = 1\n")
    (pkg / "b.py").write_text("def f():\n    from .c import y\n    return y\n")
    (pkg / "c.py").write_text("import dashboard.views.a\ny = 2\n")
    graph = package_graph(pkg, root=tmp_path)
    assert graph == {"dashboard.views.a": {"dashboard.views.b"}, "dashboard.views.b": {"dashboard.views.c"},
                     "dashboard.views.c": {"dashboard.views.a"}}
    assert find_cycle(graph) == ["dashboard.views.a", "dashboard.views.b", "dashboard.views.c", "dashboard.views.a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("folder", ["views", "plots"])
def test_no_import_circle(folder):
    graph = package_graph(PKG / folder)
    assert len(graph) >= 3, graph
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_plots_package_has_one_module_per_view():
    assert not (PKG / "plots.py").exists()
    assert {"heatmap", "layout", "memory"} <= {p.stem for p in (PKG / "plots").glob("*.py")}


def _dashboard_file(name: str) -> list[Path]:
    """The source files of module or package ``name`` (``dashboard.x``), [] when it does not exist."""
    rel = Path(*name.split("."))
    if (ROOT / rel).is_dir():
        return sorted((ROOT / rel).rglob("*.py"))
    if (ROOT / rel).with_suffix(".py").exists():
        return [(ROOT / rel).with_suffix(".py")]
    return []


def reachable_imports(start: str) -> dict[str, set[str]]:
    """Every file reached from module or package ``start`` through ``dashboard.*`` imports (lazy ones
    too), with the modules each imports."""
    seen: dict[str, set[str]] = {}
    todo = list(_dashboard_file(start))
    while todo:
        path = todo.pop()
        key = str(path.relative_to(ROOT))
        if key in seen:
            continue
        seen[key] = imported_names(path)
        for name in seen[key]:
            if name.split(".")[0] == "dashboard" and name != "dashboard":
                todo.extend(_dashboard_file(name))
    return seen


@pytest.mark.parametrize("name", [p for p in PURE if _dashboard_file(f"dashboard.{p}")])
def test_pure_logic_imports_no_ui_library(name):
    bad = {f: sorted(n for n in names if n.split(".")[0] in UI_LIBS)
           for f, names in reachable_imports(f"dashboard.{name}").items()}
    assert not {f: n for f, n in bad.items() if n}, f"dashboard.{name} reaches UI libraries"


def test_plots_import_no_panel():
    for path in sorted((PKG / "plots").glob("*.py")):
        names = imported_names(path)
        assert not {n for n in names if n.split(".")[0] == "panel"}, path.name
        assert not {n for n in names if n.startswith("dashboard.views")}, path.name


def test_dashboard_never_imports_ray_or_the_harness():
    """Ray is the conformance sweep's (``conformance/cluster.py``, a test dependency): no file of the dashboard
    package imports it, nor the ``conformance`` harness that does, lazily or not."""
    bad = {str(p.relative_to(ROOT)): sorted(n for n in imported_names(p) if n.split(".")[0] in ("ray", "conformance"))
           for p in sorted(PKG.rglob("*.py"))}
    assert not {f: n for f, n in bad.items() if n}
    assert "ray" in imported_names(ROOT / "conformance" / "cluster.py")  # the walker sees the lazy import
