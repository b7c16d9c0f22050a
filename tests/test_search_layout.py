"""The layout of `nvcc_opt/search/`: no import cycle inside it, no transform module imports
another (only the registry, `transforms.py`, imports them all), files under 400 lines (the
import cycles of the whole package: tests/test_layout.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from nvcc_opt.search.transforms import TRANSFORMS

PACKAGE = Path(__file__).resolve().parent.parent / "nvcc_opt"
SEARCH = PACKAGE / "search"
MAX_LINES = 400


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules `path` imports anywhere in it (type-checking imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} & modules
            found |= {f"{node.module}.{a.name}" for a in node.names} & modules
    return found - {_module(path)}


def _graph(root: Path) -> dict[str, set[str]]:
    paths = sorted(root.rglob("*.py"))
    modules = {_module(p) for p in paths}
    return {_module(p): _imports(p, modules) for p in paths}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_inside_search() -> None:
    assert _cycles(_graph(SEARCH)) == []


def test_transform_modules_import_no_other_transform() -> None:
    transforms = {t.apply.__module__ for t in TRANSFORMS}
    assert len(transforms) >= 10
    graph = _graph(SEARCH)
    for module, imported in graph.items():
        if module.endswith(".transforms"):
            assert transforms <= imported  # the registry imports them all
            continue
        # transforms, their helpers and the policy reach transforms only through the registry
        assert not imported & transforms, f"{module} imports {imported & transforms}"


def test_search_files_are_small() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in SEARCH.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n >= MAX_LINES} == {}
