"""The static import graph of ``vision/`` has no cycle.

Every module of the package is parsed with :mod:`ast` (nothing is imported). An edge ``a -> b`` is any import of
``b`` written anywhere in ``a``: at the top, inside a function (a lazy import) or under ``if TYPE_CHECKING:``, since
each is a dependency of ``a`` on ``b`` all the same. Imports are resolved as Python does:

- ``import vision.x.y`` -> ``vision.x.y``;
- ``from vision.x import y`` -> ``vision.x.y`` when ``y`` is a module, else ``vision.x`` (the package's
  ``__init__``, where the name lives);
- ``from . import y`` / ``from .y import z`` relative to the importing module's package.

Importing ``vision.x.y`` also runs ``vision/x/__init__.py``; that implied edge is left out (a package's
``__init__`` re-exporting its own modules would otherwise be a cycle with each of them). Imports by a computed name
(``importlib.import_module``, as :mod:`vision.tasks` resolves a task's parts) are not in the graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "vision"


def module_name(path: Path) -> str:
    """``vision/tracking/session.py`` -> ``vision.tracking.session``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of ``vision`` by its dotted name."""
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` (the file at ``path``) imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in known:  # ``import vision.x.y`` of a name inside a module: its module
                    name = name.rpartition(".")[0]
                if name:
                    found.add(name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in known:
                    found.add(submodule)
                elif base in known:
                    found.add(base)
    found.discard(module)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the ``vision`` modules it imports (see the module docstring)."""
    files = modules()
    known = set(files)
    return {name: imported(name, path, known) for name, path in files.items()}


def loops(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative): the sets of
    modules that reach each other through imports; sorted by their smallest name."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return sorted(components, key=min)


def one_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the smallest name of ``component`` (breadth-first within the component)."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{sorted(component)} is not strongly connected")


def test_loops_are_found_and_only_loops():
    graph = {"a": {"b"}, "b": {"c", "a"}, "c": {"a", "d"}, "d": set(), "e": {"d", "f"}, "f": {"e"}}
    assert loops(graph) == [{"a", "b", "c"}, {"e", "f"}]
    assert one_cycle(graph, {"a", "b", "c"}) == ["a", "b", "a"]
    assert loops({"a": {"b"}, "b": set()}) == []


def test_imports_resolve_lazy_type_checking_and_relative(tmp_path):
    source = ("from typing import TYPE_CHECKING\n"
              "from vision.tracking import session\n"
              "from . import prompts\n"
              "from .model import G2TAM\n"
              "import vision.errors\n"
              "if TYPE_CHECKING:\n    from vision.tracking.predictor import TrackerPredictor\n"
              "def f():\n    from vision.tasks import get_task\n")
    path = tmp_path / "export.py"
    path.write_text(source)
    known = {"vision", "vision.errors", "vision.tasks", "vision.tracking", "vision.tracking.session",
             "vision.tracking.prompts", "vision.tracking.model", "vision.tracking.predictor",
             "vision.tracking.export"}
    assert imported("vision.tracking.export", path, known) == {
        "vision.tracking.session", "vision.tracking.prompts", "vision.tracking.model", "vision.errors",
        "vision.tracking.predictor", "vision.tasks"}


def test_the_vision_package_has_no_import_cycle():
    graph = import_graph()
    assert "vision.tracking.session" in graph and graph["vision.tracking.predictor"]
    found = loops(graph)
    assert not found, "modules that import each other (lazy and TYPE_CHECKING imports count):\n" + "\n".join(
        f"{', '.join(sorted(loop))}: e.g. {' -> '.join(one_cycle(graph, loop))}" for loop in found)


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for child in graph[todo.pop()]:
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def test_the_tracking_session_propagation_export_and_predictor_form_a_line():
    """Each of these tracking modules may import the ones before it, never one after it."""
    graph = import_graph()
    line = [f"vision.tracking.{name}" for name in ("session", "propagation", "export", "predictor")]
    for i, module in enumerate(line):
        assert not reachable(graph, module) & set(line[i + 1:]), module
