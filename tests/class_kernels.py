"""The class kernels of tests/fixtures/search_classes/ as the search snapshot reads them, a
transform's rewrite of one, and what nvcc makes of that rewrite."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from nvcc_opt.search import snapshot
from nvcc_opt.search.transforms import Facts
from tests.cuda_programs import ptx_of

CLASSES = Path(__file__).parent / "fixtures" / "search_classes"


def unit(path: Path) -> snapshot.Unit:
    """The kernel file at `path` with the facts the snapshot gives it (its own launches)."""
    (found,) = snapshot.file_units("classes", path, CLASSES.parent.parent.parent)
    return found


def rewritten(name: str, transform: Callable[[str, Facts], str | None]) -> str:
    """`transform`'s rewrite of the class kernel `name`; fails the test when it refuses."""
    found = unit(CLASSES / name)
    new = transform(found.code, found.facts)
    assert new is not None, name
    return new


def assert_ptx_has(
    name: str,
    transform: Callable[[str, Facts], str | None],
    instructions: Iterable[str],
    folder: Path,
) -> None:
    """nvcc's PTX of the rewrite of `name` holds every one of `instructions`."""
    text = ptx_of(rewritten(name, transform), folder)
    for instruction in instructions:
        assert instruction in text, (name, instruction)
