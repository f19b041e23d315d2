"""Tests import nothing from ``benchmarks/``: what a test checks lives in ``vision/``. A test file fails this when
it imports a benchmark module (``benchmarks.x``, or a script's own name such as ``bench_tracking`` or ``curves``) or
names a path under ``benchmarks/`` in a file that loads code by path (importlib, runpy, ``sys.path``, exec)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Modules and names through which a file can load a module from a path.
LOADER_MODULES = ("importlib", "runpy")
LOADER_NAMES = ("exec", "__import__")


def _imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _loads_by_path(tree: ast.AST) -> bool:
    """Whether the code (not its strings) uses importlib, runpy, ``sys.path``, exec or __import__."""
    if any(m.split(".")[0] in LOADER_MODULES for m in _imported_modules(tree)):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name) \
                and node.value.id == "sys":
            return True
        if isinstance(node, ast.Name) and node.id in LOADER_NAMES:
            return True
    return False


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _benchmark_imports(path: Path, scripts: set[str]) -> list[str]:
    """What in the test file ``path`` reaches into ``benchmarks/``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = [f"imports {m}" for m in sorted(_imported_modules(tree))
             if m.split(".")[0] == "benchmarks" or m.split(".")[0] in scripts]
    if _loads_by_path(tree):
        docs = _docstrings(tree)
        found += [f"loads {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and "benchmarks" in node.value
                  and id(node) not in docs]
    return found


def test_benchmark_scripts_are_known():
    """The check below needs the scripts' names; they are the ``.py`` files in ``benchmarks/``."""
    assert {p.stem for p in (ROOT / "benchmarks").glob("*.py")}


def test_no_test_imports_a_benchmark():
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    offenders = {str(p.relative_to(ROOT)): found for p in sorted((ROOT / "tests").rglob("*.py"))
                 if (found := _benchmark_imports(p, scripts))}
    assert not offenders, f"tests reach into benchmarks/ (move the code into vision/): {offenders}"


def test_the_check_finds_each_way_in(tmp_path):
    scripts = {"bench_tracking", "curves"}
    cases = {"import benchmarks.bench_tracking\n": True,
             "from bench_tracking import train\n": True,
             "from curves import format_curves\n": True,
             "import importlib.util\nSPEC = importlib.util.spec_from_file_location('b', 'benchmarks/b.py')\n": True,
             "import sys\nsys.path.insert(0, 'benchmarks')\n": True,
             "import runpy\nrunpy.run_path('benchmarks/bench_tracking.py')\n": True,
             '"""Checks what benchmarks/bench_tracking.py reports."""\nimport importlib\n': False,
             "from vision.detection import ablation\n": False,
             "NOTE = 'benchmarks/ print tables'\n": False}
    for source, bad in cases.items():
        path = tmp_path / "test_case.py"
        path.write_text(source)
        assert bool(_benchmark_imports(path, scripts)) is bad, source
