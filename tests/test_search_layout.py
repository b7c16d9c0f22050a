"""The layout of `nvcc_opt/search/`: no import cycle inside it, no transform module imports
another (only the registry, `transforms.py`, imports them all), files under 400 lines. The
import graph and the cycle finder are tests/test_layout.py's (the whole package's layout)."""

from __future__ import annotations

from nvcc_opt.search.transforms import TRANSFORMS
from tests.test_layout import MAX_LINES, PACKAGE, cycles, import_graph

SEARCH = PACKAGE / "search"


def _search_graph() -> dict[str, set[str]]:
    """The package's import graph restricted to the modules of search/."""
    graph = import_graph()
    inside = {m for m in graph if m == "nvcc_opt.search" or m.startswith("nvcc_opt.search.")}
    return {m: graph[m] & inside for m in inside}


def test_no_import_cycle_inside_search() -> None:
    assert cycles(_search_graph()) == []


def test_transform_modules_import_no_other_transform() -> None:
    transforms = {t.apply.__module__ for t in TRANSFORMS}
    assert len(transforms) >= 10
    graph = _search_graph()
    for module, imported in graph.items():
        if module.endswith(".transforms"):
            assert transforms <= imported  # the registry imports them all
            continue
        # transforms, their helpers and the policy reach transforms only through the registry
        assert not imported & transforms, f"{module} imports {imported & transforms}"


def test_search_files_are_small() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in SEARCH.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n >= MAX_LINES} == {}
