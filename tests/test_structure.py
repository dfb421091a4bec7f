"""Where knowledge lives (issue 21), read from the source with :mod:`ast` (nothing is imported).

* No module of ``dashboard/`` is over :data:`MAX_LINES` lines, except generated data modules, which say
  so in their first line.
* No private name crosses a module boundary: ``from dashboard.x import _y``, ``import dashboard._x``
  and ``x._y`` on an imported ``dashboard`` module are refused (inside the module that defines it a
  private name is fine).
* No code outside ``dashboard/frameworks/`` branches on a framework's name: ``framework == "vllm"``,
  ``fw in ("sglang", "tensorrt-llm")``, ``name != "megatron-core"`` and the like (a comparison of a
  variable named like a framework id with a string literal, a tuple/list/set of them, or a module-level
  constant of framework ids). Loops over frameworks are fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "dashboard"
MAX_LINES = 800
GENERATED_MARK = "generated"

#: Variable names that hold a framework id in this code base.
FW_NAMES = {"framework", "fw", "frameworks", "fws", "engine", "kv_fw", "fw_name", "framework_name"}


def _py_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _framework_ids() -> set[str]:
    from dashboard import frameworks

    return set(frameworks.names())


def long_modules(folder: Path = PKG, root: Path = ROOT) -> dict[str, int]:
    """Modules over MAX_LINES lines that do not say in line 1 that they are generated."""
    out = {}
    for p in _py_files(folder):
        lines = p.read_text(encoding="utf-8").splitlines()
        if len(lines) > MAX_LINES and GENERATED_MARK not in (lines[0].lower() if lines else ""):
            out[str(p.relative_to(root))] = len(lines)
    return out


def private_crossings(folder: Path = PKG, root: Path = ROOT) -> list[str]:
    """``file:line name`` for every private name taken from another dashboard module."""
    out = []
    for p in _py_files(folder):
        tree = ast.parse(p.read_text(encoding="utf-8"), str(p))
        aliases: set[str] = set()  # local names bound to dashboard modules
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dashboard") or (
                    isinstance(node, ast.ImportFrom) and node.level):
                mod = node.module or ""
                for part in mod.split("."):
                    if part.startswith("_") and not part.startswith("__"):
                        out.append(f"{p.relative_to(root)}:{node.lineno} module {mod}")
                        break
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        out.append(f"{p.relative_to(root)}:{node.lineno} {mod}.{a.name}")
                    aliases.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("dashboard"):
                        if any(x.startswith("_") and not x.startswith("__") for x in a.name.split(".")):
                            out.append(f"{p.relative_to(root)}:{node.lineno} module {a.name}")
                        aliases.add(a.asname or a.name.split(".")[0])
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                out.append(f"{p.relative_to(root)}:{node.lineno} {node.value.id}.{node.attr}")
    return out


def _names_framework(node: ast.AST, ids: set[str], consts: set[str]) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in ids
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_framework(e, ids, consts) for e in node.elts)
    if isinstance(node, ast.Name):
        return node.id in consts
    return False


def _is_fw_var(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in FW_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in FW_NAMES
    if isinstance(node, ast.Subscript):  # req["framework"], row.framework
        s = node.slice
        return isinstance(s, ast.Constant) and s.value in FW_NAMES
    return False


def name_branches(folder: Path, ids: set[str] | None = None, root: Path = ROOT) -> list[str]:
    """``file:line`` of every comparison of a framework-id variable with framework names."""
    ids = ids or _framework_ids()
    out = []
    for p in _py_files(folder):
        if "frameworks" in p.relative_to(root).parts[:2]:
            continue
        tree = ast.parse(p.read_text(encoding="utf-8"), str(p))
        consts = set()  # module-level NAME = ("vllm", "sglang") / {"vllm": ...}
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                v = node.value
                if v is not None and (_names_framework(v, ids, set()) or (
                        isinstance(v, ast.Dict) and any(_names_framework(k, ids, set()) for k in v.keys if k))):
                    consts.update(t.id for t in targets if isinstance(t, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_is_fw_var(s) for s in sides) and any(_names_framework(s, ids, consts) for s in sides):
                    out.append(f"{p.relative_to(root)}:{node.lineno}")
    return out


# -- the detectors see what they must ------------------------------------------------------------------

def test_detectors_see_a_branch_a_private_import_and_a_long_module(tmp_path):
    pkg = tmp_path / "dashboard"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        "from dashboard.memory import _cols\nfrom dashboard import memory\nMINE = ('vllm', 'sglang')\n"
        "def f(framework, fw, x):\n    if framework == 'vllm':\n        pass\n    if fw in MINE:\n        pass\n"
        "    if x.framework != 'sglang':\n        pass\n    memory._nz(1)\n    for fw in ('vllm',):\n        pass\n")
    (pkg / "b.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (pkg / "c.py").write_text("# generated by scripts/x.py\n" + "x = 1\n" * (MAX_LINES + 1))
    ids = {"vllm", "sglang"}
    assert name_branches(pkg, ids, root=tmp_path) == ["dashboard/a.py:5", "dashboard/a.py:7", "dashboard/a.py:9"]
    crossings = private_crossings(pkg, root=tmp_path)
    assert any("_cols" in c for c in crossings) and any("memory._nz" in c for c in crossings)
    assert list(long_modules(pkg, root=tmp_path)) == ["dashboard/b.py"]


# -- the tree ------------------------------------------------------------------------------------------

def test_no_module_over_800_lines():
    assert long_modules() == {}


def test_no_private_name_crosses_a_module():
    assert private_crossings() == []


@pytest.mark.parametrize("folder", ["dashboard", "conformance"])
def test_no_framework_name_branch_outside_frameworks(folder):
    assert name_branches(ROOT / folder) == []
