"""The layout of `nvcc_opt/`, read statically from the source (no module is imported): no import
cycle anywhere in the package, counting every import a module makes (at its top, inside a
function, under `TYPE_CHECKING`), since a function-level import that closes a loop only moves the
cycle to run time; and the packages that know nothing of CUDA import only what is allowed."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "nvcc_opt"
MAX_LINES = 400
# The model-facing layers know nothing of CUDA: what each may import from the package
# (allowlists; a prefix allows the package and every module under it).
GENERIC = {
    "nvcc_opt.agent": ("nvcc_opt.agent", "nvcc_opt.toolbox"),
    "nvcc_opt.toolbox": ("nvcc_opt.toolbox",),
}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an ImportFrom names, relative imports resolved against `module`."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(path: Path, modules: set[str], package: Path = PACKAGE) -> set[str]:
    """The package modules `path` imports anywhere in it. `from pkg import name` counts `pkg`
    (its `__init__` runs) and `pkg.name` when that is a module."""
    module = module_name(path, package)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, path.name == "__init__.py")
            found |= {source} & modules
            found |= {f"{source}.{a.name}" for a in node.names} & modules
    return found - {module}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    paths = sorted(package.rglob("*.py"))
    modules = {module_name(p, package) for p in paths}
    return {module_name(p, package): imports_of(p, modules, package) for p in paths}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative: the
    package's import chains are deeper than a small recursion limit would allow)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    work: list[tuple[str, list[str]]] = []  # the depth-first path, each with targets left

    def enter(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        work.append((node, sorted(graph.get(node, ()))))

    for root in sorted(graph):
        if root in index:
            continue
        enter(root)
        while work:
            node, targets = work[-1]
            if targets:
                target = targets.pop(0)
                if target not in index:
                    enter(target)
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
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
    return found


def test_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}}
    assert sorted(cycles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_scan_counts_function_level_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg.sub import leaf\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "leaf.py").write_text("def f():\n    from .. import other\n")
    (package / "other.py").write_text("from . import sub\n")
    graph = import_graph(package)
    assert graph["pkg"] == {"pkg.sub", "pkg.sub.leaf"}
    assert graph["pkg.sub.leaf"] == {"pkg", "pkg.other"}
    assert graph["pkg.other"] == {"pkg", "pkg.sub"}
    assert cycles(graph) == [["pkg", "pkg.other", "pkg.sub.leaf"]]


def test_no_import_cycle_in_the_package() -> None:
    assert cycles(import_graph()) == []


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_generic_layers_import_no_cuda_module() -> None:
    graph = import_graph()
    for layer, allowed in GENERIC.items():
        members = [m for m in graph if _within(m, (layer,))]
        assert members, layer
        for module in members:
            outside = sorted(t for t in graph[module] if not _within(t, allowed))
            assert outside == [], f"{module} imports {outside}: only {allowed} are allowed"


def test_command_and_bench_files_are_small() -> None:
    sizes = {
        str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
        for folder in ("cli", "bench", "toolbox", "agent")
        for p in (PACKAGE / folder).rglob("*.py")
    }
    assert len(sizes) > 20
    assert {name: n for name, n in sizes.items() if n >= MAX_LINES} == {}


def test_every_module_is_small() -> None:
    """Every module of the package, the integrations and the training project under MAX_LINES."""
    root = PACKAGE.parent
    sizes = {
        str(p.relative_to(root)): len(p.read_text(encoding="utf-8").splitlines())
        for folder in (PACKAGE, root / "integration", root / "training" / "nvcc_opt_train")
        for p in folder.rglob("*.py")
    }
    assert len(sizes) > 200
    assert {name: n for name, n in sizes.items() if n >= MAX_LINES} == {}


def test_command_modules_live_in_cli() -> None:
    """A subcommand's click wiring is under `nvcc_opt/cli/` (or a package's own `cli.py`), never
    a `*_cli.py` beside the library modules."""
    assert sorted(p.name for p in PACKAGE.glob("*_cli.py")) == []
    assert sorted(p.name for p in PACKAGE.glob("suite_*.py")) == []
