"""A shared-memory tile padded by one column where a warp reads or writes it down a column.

Shared memory has 32 banks of 4 bytes; the word at byte address a sits in bank (a / 4) % 32.
When the threads of a warp, consecutive in `threadIdx.x`, touch `tile[f(threadIdx.x)][c]` (a
column: the transpose's read, a tile staged one way and used the other), their words lie one row
apart, R = C * size / 4 words. For C even, R shares a factor 2 or more with 32 and the accesses
meet in gcd(R, 32) / (size / 4) times fewer banks than they could: that many times serialized.
With one more column (C + 1, odd) every row starts size / 4 banks after the last, and a column
is spread over all the banks again. Element types of 4, 8 and 16 bytes only (smaller ones
share words).

The values are the same: every access is `tile[a][b]` with both subscripts, so each names the
same element as before, only laid out with one unused word per row. Fired only when all of this
holds, else the tile is left alone:

- `__shared__ T tile[R][C];` in the kernel: one declarator, no initializer, not `extern`, C a
  constant this code can see (the region's definitions and what `search` found), C even;
- every other use of the name in the kernel is `tile[a][b]` as an element (not `&tile[a][b]`,
  not `tile[a]`, not `tile` passed or measured with `sizeof`), and the name is declared once
  in the kernel and is not one of its parameters;
- some access's first subscript follows `threadIdx.x` (the builtin or a name the kernel gives
  it once): consecutive threads walk down a column;
- no subscript of the tile spells a multiplication or the column count (flat indexing past a
  row's end, undefined in C++ but written, would change meaning); the kernel has no `asm` and
  no call of an upper-case name, no `#define` of the region spells the tile's name (a macro
  could use it unseen), the region has no overloaded operator.

The extra shared memory is R * size bytes per block; a tile that no longer fits fails to build,
which benchmark_code reports.
"""

from __future__ import annotations

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    calls_macro,
    edited,
    identifiers,
    operator_type,
    squeeze,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts, thread_aliases
from nvcc_opt.search.launches import constant, definitions
from nvcc_opt.search.read_patterns import names_in, plain_file
from nvcc_opt.search.shared_tiles import Tile, tiles

ELEMENT_BYTES = {
    "float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4,
    "__half2": 4, "half2": 4, "__nv_bfloat162": 4, "double": 8, "long long": 8,
    "unsigned long long": 8, "int64_t": 8, "uint64_t": 8, "float2": 8, "int2": 8, "uint2": 8,
    "double2": 16, "float4": 16, "int4": 16, "uint4": 16,
}  # fmt: skip


def pad_shared(code: str, facts: Facts) -> str | None:
    """One more column on each shared tile a warp walks down a column of (see the module)."""
    source = Source(code)
    if not plain_file(source):
        return None
    names = {**facts.names, **definitions(code)}
    in_macros = _macro_words(source)
    edits = []
    for kernel in source.kernels():
        if not _plain(source, kernel):
            continue
        across = thread_aliases(source, kernel)
        for tile in tiles(source, kernel):
            if tile.name in in_macros:
                continue
            columns = constant(source.text(tile.columns), names)
            size = ELEMENT_BYTES.get(facts.scalar(tile.element))
            if columns is None or columns < 2 or columns % 2 or size is None:
                continue
            accesses = _accesses(source, kernel, tile)
            if accesses is None or not any(_follows(source, row, across) for row, _ in accesses):
                continue
            spelled = squeeze(source.text(tile.columns))
            if any(_flat(source, column, spelled) for row, column in accesses):
                continue
            edits.append(_pad(source, tile.columns))
    return edited(code, source, edits)


def _plain(source: Source, kernel: Kernel) -> bool:
    if any(calls_macro(source, node) for node in walk(kernel.body)):
        return False
    return "asm" not in names_in(source.text(kernel.body))


def _macro_words(source: Source) -> set[str]:
    """Every name the region's `#define`s spell: a tile named there may be used unseen."""
    return {
        word
        for node in walk(source.root)
        if node.type in ("preproc_def", "preproc_function_def")
        for word in names_in(source.text(node))
    }


def _accesses(
    source: Source, kernel: Kernel, tile: Tile
) -> list[tuple[tree_sitter.Node, tree_sitter.Node]] | None:
    """Each use's (row, column) subscripts; None when a use is not `tile[a][b]` as an element,
    or the name is declared more than once or taken as a parameter."""
    if tile.name in kernel.params:
        return None
    found = []
    declarations = 0
    for node in walk(kernel.body):
        if node.type != "identifier" or source.text(node) != tile.name:
            continue
        parent = node.parent
        if parent is not None and parent.type == "array_declarator":
            declarations += 1
            continue
        inner = parent
        outer = inner.parent if inner is not None else None
        if (
            inner is None
            or outer is None
            or inner.type != "subscript_expression"
            or inner.child_by_field_name("argument") != node
            or outer.type != "subscript_expression"
            or outer.child_by_field_name("argument") != inner
            or _taken(source, outer)
        ):
            return None
        row, column = _index(inner), _index(outer)
        if row is None or column is None:
            return None
        found.append((row, column))
    # any other declaration of the name (a scalar, a lambda's parameter) is a use that is not
    # an element, refused above; a second array of that name in an inner scope is counted here
    return found if declarations == 1 else None


def _index(subscript: tree_sitter.Node) -> tree_sitter.Node | None:
    arguments = subscript.child_by_field_name("indices")
    if arguments is None or arguments.named_child_count != 1:
        return None
    return arguments.named_children[0]


def _taken(source: Source, element: tree_sitter.Node) -> bool:
    """Whether the element's address is taken or it is indexed further (`tile[a][b][c]`)."""
    parent = element.parent
    if parent is None:
        return True
    if parent.type == "pointer_expression" and source.text(parent).lstrip().startswith("&"):
        return True
    if parent.type == "subscript_expression" and parent.child_by_field_name("argument") == element:
        return True
    return parent.type in ("sizeof_expression", "alignof_expression")


def _follows(source: Source, row: tree_sitter.Node, across: set[str]) -> bool:
    """Whether the row subscript follows `threadIdx.x` (directly or by an alias)."""
    text = squeeze(source.text(row))
    return "threadIdx.x" in text or bool(identifiers(source, row) & across)


def _flat(source: Source, column: tree_sitter.Node, spelled: str) -> bool:
    """Whether the column subscript may index past a row: a multiplication, or the column
    count's own spelling."""
    text = squeeze(source.text(column))
    if spelled in text:
        return True
    return any(
        n.type in ("binary_expression", "assignment_expression") and "*" in (operator_type(n) or "")
        for n in walk(column)
    )


def _pad(source: Source, columns: tree_sitter.Node) -> Edit:
    text = source.text(columns)
    simple = columns.type in ("identifier", "number_literal")
    padded = f"{text} + 1" if simple else f"({text}) + 1"
    return Edit(columns.start_byte, columns.end_byte, padded.encode("utf-8"))
