"""Two-dimensional `__shared__` arrays declared in a kernel (`__shared__ float tile[R][C];`): a
leaf of `search/` for the padding transform (`bank_padding.py`) and for `find_facts`, which
looks up the names their column counts use (`TILE_DIM` defined outside the region)."""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import Kernel, Source, walk
from nvcc_opt.search.read_patterns import names_in


@dataclass(frozen=True)
class Tile:
    name: str
    element: str  # the element type as written, qualifiers dropped ("float", "dfloat")
    columns: tree_sitter.Node  # the second (last) size expression


def tiles(source: Source, kernel: Kernel) -> list[Tile]:
    """The kernel's `__shared__ T name[R][C];` declarations: one declarator, two sizes, no
    initializer, not `extern`, a plain type name (no pointer, no template arguments)."""
    found = []
    for node in walk(kernel.body):
        if node.type != "declaration":
            continue
        words = [
            c for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")
        ]
        spelled = {source.text(w) for w in words}
        if "__shared__" not in spelled or "extern" in spelled:
            continue
        declarators = node.children_by_field_name("declarator")
        kind = node.child_by_field_name("type")
        if len(declarators) != 1 or kind is None:
            continue
        outer = declarators[0]
        inner = (
            outer.child_by_field_name("declarator") if outer.type == "array_declarator" else None
        )
        name = inner.child_by_field_name("declarator") if inner is not None else None
        if inner is None or inner.type != "array_declarator" or name is None:
            continue
        rows, columns = inner.child_by_field_name("size"), outer.child_by_field_name("size")
        if name.type != "identifier" or rows is None or columns is None:  # both sizes given
            continue
        if kind.type not in ("primitive_type", "type_identifier", "sized_type_specifier"):
            continue
        found.append(Tile(source.text(name), source.words(kind), columns))
    return found


def column_words(source: Source) -> set[str]:
    """The names the column counts of the region's shared tiles use: values `search` finds."""
    return {
        word
        for kernel in source.kernels()
        for tile in tiles(source, kernel)
        for word in names_in(source.text(tile.columns))
    }
