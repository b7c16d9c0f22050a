"""Block shape transforms: the launch's block made smaller, larger or wider.

`block_*`: a block-size definition found by `block_shapes` made smaller, larger or wider, when
every grid launched with it is computed from it, so the grid still covers the problem (a grid
rounded up with the block's numbers, `(n + 7) / 8` for an extent of 8, is first written from the
block: the same grid). Smaller blocks spread a small problem over more multiprocessors; a
32-wide block reads whole 128-byte lines per row. The final word on correctness is
benchmark_code's; what the transforms cannot see is safe is refused (existing
`__launch_bounds__`, template kernels, a third launch argument apart from the block, and the
refusals of `block_shapes`). `tests/fixtures/unsafe_rewrites/` holds the inputs two reviews
found; none of them may be rewritten.
"""

from __future__ import annotations

from collections.abc import Callable

import tree_sitter

from nvcc_opt.search.block_shapes import (
    MAX_THREADS,
    BlockSize,
    assigned,
    block_definition,
    block_sizes,
    grid_names,
    held_elsewhere,
    initializers,
    integer,
    plain_indices,
)
from nvcc_opt.search.cuda import (
    Edit,
    Source,
    edited,
    function_of,
    launch_calls,
    operator_type,
    walk,
)
from nvcc_opt.search.kernel_facts import (
    AXES,
    WARP,
    Facts,
)


def _resize(
    change: Callable[[tuple[int, ...]], tuple[int, ...] | None],
) -> Callable[[str, Facts], str | None]:
    """A transform giving each block size in the region the shape `change` makes of it (one
    it has no shape for, or whose new shape is not whole warps within 1024 threads, stays)."""

    def transform(code: str, facts: Facts) -> str | None:
        code = grids_from_blocks(code) or code
        source = Source(code)
        edits = []
        for block in block_sizes(source):
            new = change(block.values)
            if new is None or new == block.values or not _valid(new):
                continue
            edits += [
                Edit(n.start_byte, n.end_byte, str(v).encode())
                for n, v in zip(block.numbers, new, strict=True)
            ]
        return edited(code, source, edits)

    return transform


def grids_from_blocks(code: str) -> str | None:
    """`code` with each launch grid written in literals, `(n + 7) / 8` or `(n + 8 - 1) / 8`,
    written from the block constant instead, `(n + (int)block.x - 1) / (int)block.x`, where
    the divisor on each axis is the block's extent on that axis: the same grid (and the same
    arithmetic type), which now follows a block reshape. Only where nothing else could still
    hold the old extent: the block (`dim3`, or `int`) defined before the grid in the launch's
    function; every launch with that grid uses that block; the launched kernels are in the
    region and never pair `blockIdx` of one axis with `blockDim` of another; and the extents
    and their roundings (8 and 7) appear as integers nowhere else in the region. None when no
    grid changes (`block_sizes` then refuses the block, as before)."""
    source = Source(code)
    kernels = {k.name: k for k in source.kernels()}
    launches = list(launch_calls(source))
    found: dict[str, tuple[BlockSize, list[tuple[int, tree_sitter.Node, tree_sitter.Node]]]] = {}
    refused: set[str] = set()
    for launched, config in launches:
        if config[1].type != "identifier":
            continue
        name = source.text(config[1])
        block = block_definition(source, name)
        if block is None or name in grid_names(source, config[0]):
            continue
        matched = _literal_grid(source, config, block, launches)
        kernel = kernels.get(launched)
        if matched is None or kernel is None or not plain_indices(source, kernel):
            refused.add(name)
            continue
        found.setdefault(name, (block, []))[1].extend(matched)
    edits: dict[int, Edit] = {}
    for name, (block, matched) in found.items():
        kind = _block_kind(source, block)
        if kind is None or name in refused:
            continue
        allowed = {n.start_byte for _, extent, _ in matched for n in walk(extent)}
        if held_elsewhere(source, block, allowed):
            continue
        for axis, extent, covered in matched:
            size = name if kind == "int" else f"(int){name}.{AXES[axis]}"
            text = f"({source.text(covered)} + {size} - 1) / {size}"
            edits[extent.start_byte] = Edit(extent.start_byte, extent.end_byte, text.encode())
    return edited(code, source, list(edits.values()))


def _literal_grid(
    source: Source,
    config: list[tree_sitter.Node],
    block: BlockSize,
    launches: list[tuple[str, list[tree_sitter.Node]]],
) -> list[tuple[int, tree_sitter.Node, tree_sitter.Node]] | None:
    """(axis, extent, E) for each axis of this launch's grid when every one is `(E + b - 1) / b`
    with b the block's extent on that axis, the block is defined before the grid in the
    launch's function, and every launch with this grid uses this block; else None."""
    grid, name = config[0], source.text(config[1])
    extents = _grid_extents(source, grid)
    if not extents or len(extents) > len(block.values):
        return None
    function = function_of(config[1])
    if function is None or function_of(block.numbers[0]) != function:
        return None
    if any(block.numbers[0].start_byte > extent.start_byte for extent in extents):
        return None  # the grid comes first: it cannot name the block
    if any(function_of(extent) != function for extent in extents):
        return None
    if grid.type == "identifier" and any(
        other[0].type == "identifier"
        and source.text(other[0]) == source.text(grid)
        and source.text(other[1]) != name
        for _, other in launches
    ):
        return None  # another launch with this grid and another block would not follow
    matched = []
    for axis, extent in enumerate(extents):
        parts = _ceil_div(source, extent)
        if parts is None or parts[1] != block.values[axis]:
            return None
        matched.append((axis, extent, parts[0]))
    return matched


def _block_kind(source: Source, block: BlockSize) -> str | None:
    """ "dim3" or "int" (const, constexpr), the block's declared type; None for any other."""
    node: tree_sitter.Node | None = block.numbers[0]
    while node is not None and node.type != "declaration":
        node = node.parent
    declared = None if node is None else node.child_by_field_name("type")
    kind = None if declared is None else source.text(declared)
    return kind if kind in ("dim3", "int") else None


def _grid_extents(source: Source, grid: tree_sitter.Node) -> list[tree_sitter.Node] | None:
    """The grid's extent expressions, one per axis: of `dim3 grid(a, b)` or `int grid = a;`
    (defined once in the region, never assigned), `dim3(a, b)` or an expression in the launch."""
    if (
        grid.type == "call_expression"
        and source.text(grid.child_by_field_name("function") or grid) == "dim3"
    ):
        arguments = grid.child_by_field_name("arguments")
        return None if arguments is None else list(arguments.named_children)
    if grid.type != "identifier":
        return [grid]
    name = source.text(grid)
    values = initializers(source).get(name, [])
    if len(values) != 1 or assigned(source, name):
        return None
    value = values[0]
    return list(value.named_children) if value.type == "argument_list" else [value]


def _ceil_div(source: Source, node: tree_sitter.Node) -> tuple[tree_sitter.Node, int] | None:
    """(E, b) for `(E + c) / b` with c = b - 1, or `(E + b - 1) / b`; b a literal."""
    right = node.child_by_field_name("right")
    left = node.child_by_field_name("left")
    operator = node.child_by_field_name("operator")
    if node.type != "binary_expression" or operator is None or operator.type != "/":
        return None
    if right is None or left is None or right.type != "number_literal":
        return None
    divisor = integer(source.text(right))
    if divisor is None or left.type != "parenthesized_expression" or not left.named_children:
        return None
    inner = left.named_children[0]
    term = _sum(source, inner)
    if term is not None and term[1] == divisor - 1:
        return term[0], divisor
    if inner.type == "binary_expression" and operator_type(inner) == "-":
        one = inner.child_by_field_name("right")
        first = inner.child_by_field_name("left")
        if one is not None and first is not None and source.text(one) == "1":
            term = _sum(source, first)
            if term is not None and term[1] == divisor:
                return term[0], divisor
    return None


def _sum(source: Source, node: tree_sitter.Node) -> tuple[tree_sitter.Node, int] | None:
    """(E, c) for `E + c`, c a literal."""
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if node.type != "binary_expression" or operator_type(node) != "+" or left is None:
        return None
    value = (
        integer(source.text(right))
        if right is not None and right.type == "number_literal"
        else None
    )
    return None if value is None else (left, value)


def _valid(shape: tuple[int, ...]) -> bool:
    threads = 1
    for extent in shape:
        threads *= extent
    return all(e >= 1 for e in shape) and WARP <= threads <= MAX_THREADS and threads % WARP == 0


def _half(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    if len(shape) == 1:
        return (shape[0] // 2,) if shape[0] % 2 == 0 else None
    return (shape[0], shape[1] // 2, *shape[2:]) if shape[1] % 2 == 0 else None


def _quarter(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    if len(shape) == 1:
        return (shape[0] // 4,) if shape[0] % 4 == 0 else None
    return (shape[0] * 2, shape[1] // 4, *shape[2:]) if shape[1] % 4 == 0 else None


def _double(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    return (shape[0] * 2, *shape[1:])


def _wide(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    if len(shape) == 1 or shape[1] % 2:
        return None
    return (shape[0] * 2, shape[1] // 2, *shape[2:])


def _warp_wide(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """A block 32 wide (whole 128-byte rows per warp), the threads kept: the factor taken from
    the last axes first, so (8, 8, 8) becomes (32, 8, 2). None where `_wide` makes the same."""
    if len(shape) == 1 or shape[0] >= WARP or WARP % shape[0]:
        return None
    factor, new = WARP // shape[0], [WARP, *shape[1:]]
    for axis in range(len(new) - 1, 0, -1):
        while factor > 1 and new[axis] % 2 == 0:
            new[axis] //= 2
            factor //= 2
    if factor > 1 or tuple(new) == _wide(shape):
        return None
    return tuple(new)


block_half = _resize(_half)
block_quarter = _resize(_quarter)
block_double = _resize(_double)
block_wide = _resize(_wide)
block_warp_wide = _resize(_warp_wide)
