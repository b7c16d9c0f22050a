"""Structural transforms: the launch's block shape, and a warp per row for row reductions.

The flag and annotation transforms rarely move a first-version kernel whose time goes to its
memory access pattern or to too few blocks. Two changes a person would try first:
- `block_*`: a block-size definition inside the region (`int block = 256;`, `constexpr int
  kBlock = 256;`, `dim3 block(16, 16);`) made smaller, larger or wider, when every grid launched
  with it is computed from it, so the grid still covers the problem (a grid rounded up with
  the block's numbers, `(n + 7) / 8` for an extent of 8, is first written from the block: the
  same grid). Smaller blocks spread a small problem over more multiprocessors; a 32-wide
  block reads whole 128-byte lines per row.
- `warp_rows`: a kernel that gives each thread one row `i` and loops over `j` reading
  `A[i * n + j]` (each thread its own row: 32 rows and 32 cache lines per warp load) becomes one
  where each warp of the block takes the block's rows in turn and its lanes read a row together
  (one line per load), summing with shuffles. The launch is unchanged, so it works for function
  regions whose launch lies outside.
Both leave the final word on correctness to benchmark_code, and refuse what they cannot see is
safe: shared arrays sized apart from the block constant (or at file scope, or `extern`),
existing `__launch_bounds__`, template kernels, a third launch argument apart from the block,
the block passed to a call (`cudaLaunchKernel`), a grid following the block in a launch with
another block, kernels pairing one axis's `blockIdx` with another's `blockDim` or `threadIdx`,
the old extent (b, b - 1 or b / 2) written as a number or macro anywhere else in the region,
and loops that do more than accumulate. `tests/fixtures/unsafe_rewrites/` holds the inputs
two reviews found; none of them may be rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    calls,
    edited,
    extern_shared,
    function_of,
    identifiers,
    indentation,
    launch_calls,
    operator_type,
    squeeze,
    walk,
)

if TYPE_CHECKING:
    from nvcc_opt.search.transforms import Facts

WARP = 32
AXES = ("x", "y", "z")
MAX_THREADS = 1024
CASTS = re.compile(r"\((long|longlong|size_t|int64_t|uint64_t|unsignedlong|unsigned|int)\)")
ACCUMULATOR_TYPES = {"float", "double", "int", "unsigned", "unsigned int", "long", "long long"}
ZERO = re.compile(r"^\(?\s*0+(\.0*)?([eE][+-]?\d+)?[fFlLuU]*\s*\)?$")


@dataclass(frozen=True)
class BlockSize:
    """One block-size definition in the region that its launches' grids are computed from."""

    numbers: tuple[tree_sitter.Node, ...]  # the literal(s): one, or dim3's two or three
    values: tuple[int, ...]


def block_sizes(source: Source) -> list[BlockSize]:
    """Block sizes defined in the region by literals, used by launches whose grids use them,
    for kernels with no shared arrays sized apart from them and no `__launch_bounds__`."""
    kernels = {k.name: k for k in source.kernels()}
    found: dict[int, BlockSize] = {}
    names: set[str] = set()  # the block constants of `found`
    launches = list(launch_calls(source))
    if _shared_outside_kernels(source):
        return []  # a file-scope or extern shared array has a size this cannot follow
    for launched, config in launches:
        if config[1].type != "identifier":
            continue
        name = source.text(config[1])
        if "<" in launched or (len(config) > 2 and name not in identifiers(source, config[2])):
            return []  # a template kernel's checks, or a shared size apart from the block
        definition = _definition(source, name)
        if definition is None or name not in _grid_names(source, config[0]):
            return []  # a launch whose grid would not follow: change none
        kernel = kernels.get(launched)
        if kernel is not None and (
            kernel.launch_bounds or _shared_apart(source, kernel, name) or _crossed(source, kernel)
        ):
            return []
        found[definition.numbers[0].start_byte] = definition
        names.add(name)
    for _, config in launches:
        uses = _grid_names(source, config[0]) & names
        if uses and source.text(config[1]) not in uses:
            return []  # a grid follows a block this launch does not use: its coverage changes
        if config[1].type != "identifier" and identifiers(source, config[1]) & names:
            return []  # `dim3(block)`: a block this cannot see follows
    if _passed(source, names):
        return []  # the block goes to a call (`cudaLaunchKernel(..., dim3(block), ...)`)
    blocks = list(found.values())
    own = {n.start_byte for block in blocks for n in block.numbers}
    if any(_held_elsewhere(source, block, own) for block in blocks):
        return []  # the old extent (or its rounding, or half of it) written as a number
    return blocks


def _passed(source: Source, names: set[str]) -> bool:
    """Whether one of `names` is in the arguments of a call other than a launch's
    configuration (`k<<<grid, block>>>` itself is not a call's arguments)."""
    for node in walk(source.root):
        if node.type != "identifier" or source.text(node) not in names:
            continue
        parent = node.parent
        while parent is not None and parent.type not in (
            "kernel_call_syntax",
            "function_definition",
        ):
            if (
                parent.type == "argument_list"
                and parent.parent is not None
                and parent.parent.type == "call_expression"
            ):
                return True
            parent = parent.parent
    return False


def _shared_outside_kernels(source: Source) -> bool:
    """Whether the region declares a shared array at file scope or `extern`."""
    return extern_shared(source) or any(
        node.type == "declaration"
        and "__shared__" in source.text(node).split("[")[0]
        and function_of(node) is None
        for node in walk(source.root)
    )


def _held_elsewhere(source: Source, block: BlockSize, allowed: set[int]) -> bool:
    """Whether an integer literal or a macro of the region, other than the block's own
    numbers and the nodes at `allowed`, has the value of an extent b, b - 1 or b / 2 (b > 2)."""
    values = set(block.values)
    values |= {v - 1 for v in block.values if v > 2} | {v // 2 for v in block.values if v > 2}
    allowed = allowed | {n.start_byte for n in block.numbers}
    for node in walk(source.root):
        if node.type == "number_literal" and node.start_byte not in allowed:
            if _integer(source.text(node)) in values:
                return True
        elif node.type == "preproc_arg":
            words = re.findall(r"\w+", source.text(node))
            if any(_integer(w) in values for w in words):
                return True
    return False


def launch_shapes(source: Source) -> dict[str, tuple[int, ...]]:
    """Kernel -> its block shape, for kernels of the region whose every launch in the region
    uses one block constant defined there by literals."""
    shapes: dict[str, set[tuple[int, ...] | None]] = {}
    for launched, config in launch_calls(source):
        block = (
            _definition(source, source.text(config[1])) if config[1].type == "identifier" else None
        )
        shapes.setdefault(launched, set()).add(None if block is None else block.values)
    agreed: dict[str, tuple[int, ...]] = {}
    for name, found in shapes.items():
        only = next(iter(found)) if len(found) == 1 else None
        if only is not None:
            agreed[name] = only
    return agreed


def _definition(source: Source, name: str) -> BlockSize | None:
    """`name`'s one definition in the region, by literals, never assigned afterwards."""
    matches = []
    for node in walk(source.root):
        declared = (
            node.child_by_field_name("declarator") if node.type == "init_declarator" else None
        )
        value = node.child_by_field_name("value") if declared is not None else None
        if declared is None or value is None or source.text(declared) != name:
            continue
        numbers = [value] if value.type == "number_literal" else list(value.named_children)
        if value.type not in ("number_literal", "argument_list", "initializer_list"):
            return None
        values = [_integer(source.text(n)) if n.type == "number_literal" else None for n in numbers]
        if not 1 <= len(numbers) <= 3 or any(v is None or v < 1 for v in values):
            return None
        matches.append(BlockSize(tuple(numbers), tuple(v for v in values if v is not None)))
    if len(matches) != 1 or _assigned(source, name):
        return None
    return matches[0]


def _integer(text: str) -> int | None:
    """A decimal integer literal's value (an octal one, `010`, is not read as decimal)."""
    digits = text.rstrip("uUlL")
    if not digits.isdigit() or (len(digits) > 1 and digits.startswith("0")):
        return None
    return int(digits)


def _assigned(source: Source, name: str) -> bool:
    for node in walk(source.root):
        if node.type in ("assignment_expression", "update_expression"):
            target = node.child_by_field_name("left") or node.child_by_field_name("argument")
            if target is not None and name in identifiers(source, target):
                return True
    return False


def _grid_names(source: Source, grid: tree_sitter.Node) -> set[str]:
    """Names the grid expression uses, through the definitions of the names it uses (`int
    grid = ...;`, `int g2 = blocks;`), as deep as they go."""
    values = _initializers(source)
    names: set[str] = set()
    todo = list(identifiers(source, grid))
    while todo:
        name = todo.pop()
        if name in names:
            continue
        names.add(name)
        for value in values.get(name, []):
            todo += identifiers(source, value)
    return names


def _initializers(source: Source) -> dict[str, list[tree_sitter.Node]]:
    """Name -> the value of each `T name = value;` / `dim3 name(a, b);` in the region."""
    values: dict[str, list[tree_sitter.Node]] = {}
    for node in walk(source.root):
        declared = (
            node.child_by_field_name("declarator") if node.type == "init_declarator" else None
        )
        value = node.child_by_field_name("value") if declared is not None else None
        if value is not None and declared is not None:
            values.setdefault(source.text(declared), []).append(value)
    return values


def _shared_apart(source: Source, kernel: Kernel, name: str) -> bool:
    """Whether the kernel declares a `__shared__` array whose size does not use `name`."""
    for node in walk(kernel.body):
        if node.type != "declaration" or "__shared__" not in source.text(node).split("[")[0]:
            continue
        sizes = [n for n in walk(node) if n.type == "array_declarator"]
        if not sizes or any(name not in identifiers(source, s) for s in sizes):
            return True
    return False


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
        block = _definition(source, name)
        if block is None or name in _grid_names(source, config[0]):
            continue
        matched = _literal_grid(source, config, block, launches)
        kernel = kernels.get(launched)
        if matched is None or kernel is None or not _plain_indices(source, kernel):
            refused.add(name)
            continue
        found.setdefault(name, (block, []))[1].extend(matched)
    edits: dict[int, Edit] = {}
    for name, (block, matched) in found.items():
        kind = _block_kind(source, block)
        if kind is None or name in refused:
            continue
        allowed = {n.start_byte for _, extent, _ in matched for n in walk(extent)}
        if _held_elsewhere(source, block, allowed):
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


def _plain_indices(source: Source, kernel: Kernel) -> bool:
    """Whether the kernel uses `blockIdx` only as `blockIdx.a * blockDim.a` (through casts),
    `threadIdx` only of axes it multiplies so, and calls no function of the region that reads
    them: then its index on each axis follows that axis's block extent, whatever it becomes."""
    multiplied: set[str] = set()
    for node in walk(kernel.body):
        axis = _builtin_axis(source, node) if node.type == "field_expression" else None
        if axis is None or axis[0] != "blockIdx":
            continue
        product = node.parent
        while product is not None and product.type in (
            "cast_expression",
            "parenthesized_expression",
        ):
            product = product.parent
        if product is None or product.type != "binary_expression" or operator_type(product) != "*":
            return False
        operands = [product.child_by_field_name("left"), product.child_by_field_name("right")]
        axes = {_builtin_axis(source, n) for n in operands if n is not None}
        if ("blockDim", axis[1]) not in axes:
            return False
        multiplied.add(axis[1])
    for node in walk(kernel.body):
        axis = _builtin_axis(source, node) if node.type == "field_expression" else None
        if axis is not None and axis[0] == "threadIdx" and axis[1] not in multiplied:
            return False
    called = set(calls(source, kernel.body))
    helpers = [
        f
        for f in walk(source.root)
        if f.type == "function_definition"
        and f != kernel.node
        and _function_name(source, f) in called
    ]
    return not any(
        n.type == "field_expression" and _builtin_axis(source, n) is not None
        for helper in helpers
        for n in walk(helper)
    )


def _crossed(source: Source, kernel: Kernel) -> bool:
    """Whether the kernel pairs axes: `blockIdx.a * blockDim.b`, or such a product of axis a
    plus `threadIdx.b`, with b not a (a reshape would then leave gaps or overlaps)."""
    for node in walk(kernel.body):
        if node.type != "binary_expression" or operator_type(node) not in ("*", "+"):
            continue
        operands = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        axes = {_builtin_axis(source, n) for n in operands if n is not None}
        if operator_type(node) == "*":
            index = {a[1] for a in axes if a is not None and a[0] == "blockIdx"}
            extent = {a[1] for a in axes if a is not None and a[0] == "blockDim"}
            if index and extent and index != extent:
                return True
            continue
        thread = {a[1] for a in axes if a is not None and a[0] == "threadIdx"}
        products = [n for n in operands if n is not None and n.type == "binary_expression"]
        for product in products:
            inner = [product.child_by_field_name("left"), product.child_by_field_name("right")]
            block = {_builtin_axis(source, n) for n in inner if n is not None}
            index = {a[1] for a in block if a is not None and a[0] == "blockIdx"}
            if thread and index and thread != index:
                return True
    return False


def _function_name(source: Source, function: tree_sitter.Node) -> str | None:
    declarator = function.child_by_field_name("declarator")
    name = None if declarator is None else declarator.child_by_field_name("declarator")
    return None if name is None else source.text(name)


def _builtin_axis(source: Source, node: tree_sitter.Node) -> tuple[str, str] | None:
    """("blockIdx", "x") for `blockIdx.x`, through casts and parentheses."""
    while node.type in ("cast_expression", "parenthesized_expression"):
        inner = node.child_by_field_name("value") or (
            node.named_children[-1] if node.named_children else None
        )
        if inner is None:
            return None
        node = inner
    base, _, axis = squeeze(source.text(node)).partition(".")
    return (base, axis) if base in ("blockIdx", "blockDim", "threadIdx") and axis in AXES else None


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
    values = _initializers(source).get(name, [])
    if len(values) != 1 or _assigned(source, name):
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
    divisor = _integer(source.text(right))
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
        _integer(source.text(right))
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


@dataclass(frozen=True)
class RowLoop:
    """A kernel body `int i = <global x index>; if (i < n) { decls; for (j) acc += ...; tail }`
    (or `if (i >= n) return;` before the rest)."""

    index: tree_sitter.Node  # the declaration of i
    guard: str  # `if (i < n)` to wrap the rest, or `if (i >= n) return;` as written
    wraps: bool
    decls: list[tree_sitter.Node]
    accumulators: dict[str, tuple[str, tree_sitter.Node]]  # name -> type, init_declarator
    loop: tree_sitter.Node
    variable: str
    tail: list[tree_sitter.Node]


def warp_rows(code: str, facts: Facts) -> str | None:
    source = Source(code)
    edits = []
    for kernel in source.kernels():
        threads = facts.block_sizes.get(kernel.name)
        if threads is None or threads % WARP:
            continue  # rows are split by warps: the block must be whole warps
        shape = _row_loop(source, kernel)
        if shape is not None:
            body = kernel.body
            edits.append(Edit(body.start_byte, body.end_byte, _rewrite(source, shape)))
    return edited(code, source, edits)


def warp_rows_grid(code: str, facts: Facts) -> str | None:
    """A warp per row with 32 times the blocks: each warp of the grid takes one row, for
    kernels whose every launch is in the region with a scalar grid (which gets `* 32`)."""
    source = Source(code)
    edits = []
    for kernel in source.kernels():
        threads = facts.block_sizes.get(kernel.name)
        grids = _scalar_grids(source, kernel.name)
        shape = _row_loop(source, kernel) if threads and threads % WARP == 0 and grids else None
        if shape is None or grids is None:
            continue
        body = kernel.body
        edits.append(Edit(body.start_byte, body.end_byte, _rewrite(source, shape, per_block=False)))
        edits += [
            Edit(g.start_byte, g.end_byte, f"({source.text(g)}) * {WARP}".encode()) for g in grids
        ]
    return edited(code, source, edits)


def _scalar_grids(source: Source, kernel: str) -> list[tree_sitter.Node] | None:
    """The grid arguments of `kernel`'s launches in the region, when there are some and each
    is a scalar (an expression, or a name declared with an integer type), else None."""
    grids = []
    for launched, config in launch_calls(source):
        if launched != kernel:
            continue
        if not _scalar(source, config[0]):
            return None
        grids.append(config[0])
    return grids or None


def _scalar(source: Source, grid: tree_sitter.Node) -> bool:
    if grid.type != "identifier":
        return grid.type in ("binary_expression", "parenthesized_expression", "number_literal")
    for node in walk(source.root):
        if node.type != "declaration":
            continue
        declared = {
            source.text(d.child_by_field_name("declarator") or d)
            for d in node.children_by_field_name("declarator")
        }
        kind = node.child_by_field_name("type")
        if source.text(grid) in declared and kind is not None:
            return (
                kind.type in ("primitive_type", "sized_type_specifier")
                or source.text(kind) == "size_t"
            )
    return False


def _statements(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment"]
    return [node]


def is_global_index(text: str, axis: str = "x") -> bool:
    """Whether `text` is `blockIdx.x * blockDim.x + threadIdx.x` (any order, integer casts),
    or the same along `axis` ("y", "z")."""
    block, size, thread = f"blockIdx.{axis}", f"blockDim.{axis}", f"threadIdx.{axis}"
    forms = {f"{b}*{d}+{thread}" for b, d in ((block, size), (size, block))}
    forms |= {f"{thread}+{b}*{d}" for b, d in ((block, size), (size, block))}
    return CASTS.sub("", squeeze(text)) in forms


def global_index_name(source: Source, node: tree_sitter.Node, axis: str = "x") -> str | None:
    """`i` when `node` is `T i = blockIdx.x * blockDim.x + threadIdx.x;` (or along `axis`)."""
    declarator = node.child_by_field_name("declarator") if node.type == "declaration" else None
    value = None if declarator is None else declarator.child_by_field_name("value")
    name = None if declarator is None else declarator.child_by_field_name("declarator")
    if value is None or name is None or not is_global_index(source.text(value), axis):
        return None
    return source.text(name)


def split_at_loop(
    statements: list[tree_sitter.Node],
) -> tuple[list[tree_sitter.Node], tree_sitter.Node, list[tree_sitter.Node]] | None:
    """(declarations, the loop, what follows) for `decl...; for (...) ...; tail...` with one
    `for` loop, only declarations before it and something after it; None for anything else."""
    loops = [n for n, s in enumerate(statements) if s.type == "for_statement"]
    if len(loops) != 1:
        return None
    decls, loop, tail = statements[: loops[0]], statements[loops[0]], statements[loops[0] + 1 :]
    if not tail or any(d.type != "declaration" for d in decls):
        return None
    return decls, loop, tail


def _row_loop(source: Source, kernel: Kernel) -> RowLoop | None:
    body = _statements(kernel.body)
    if len(body) < 2 or "__shared__" in source.text(kernel.body):
        return None
    row = global_index_name(source, body[0])
    if row is None:
        return None
    builtins = ("threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads", "__syncwarp")
    uses = [n for n in walk(kernel.body) if n.type == "identifier" and source.text(n) in builtins]
    if len(uses) != 3:  # only the three of the row index
        return None
    guarded = _guard(source, body[1], row)
    if guarded is None:
        return None
    wraps, inner = guarded
    if wraps and len(body) != 2:
        return None
    if not wraps:
        inner = body[2:]
    parts = split_at_loop(inner)
    if parts is None:
        return None
    decls, loop, tail = parts
    variable = unit_loop(source, loop)
    if variable is None or not _reads_along_rows(source, loop, row, variable):
        return None
    accumulators = _accumulators(source, decls, loop)
    if not accumulators:
        return None
    guard = (
        f"if {source.text(body[1].child_by_field_name('condition') or body[1])}"
        if wraps
        else source.text(body[1])
    )
    return RowLoop(body[0], guard, wraps, decls, accumulators, loop, variable, tail)


def _guard(
    source: Source, node: tree_sitter.Node, row: str
) -> tuple[bool, list[tree_sitter.Node]] | None:
    """(True, the guarded statements) for `if (i < n) {...}`, (False, []) for
    `if (i >= n) return;`, None for anything else."""
    condition = node.child_by_field_name("condition") if node.type == "if_statement" else None
    consequence = node.child_by_field_name("consequence") if condition is not None else None
    test = condition.child_by_field_name("value") if condition is not None else None
    if consequence is None or test is None or node.child_by_field_name("alternative") is not None:
        return None
    left = test.child_by_field_name("left") if test.type == "binary_expression" else None
    operator = test.child_by_field_name("operator") if left is not None else None
    if left is None or operator is None or source.text(left) != row:
        return None
    if source.text(operator) in ("<", "<="):
        return True, _statements(consequence)
    if source.text(operator) in (">=", ">") and consequence.type == "return_statement":
        return False, []
    return None


def guarded_rest(
    source: Source, body: list[tree_sitter.Node], row: str
) -> tuple[str, list[tree_sitter.Node]] | None:
    """For a body `[index, if (i >= n) return;, rest...]` or `[index, if (i < n) {rest}]`: the
    bound `n` as written and the statements the guard lets run; None for any other shape."""
    guarded = _guard(source, body[1], row) if len(body) >= 2 else None
    if guarded is None:
        return None
    condition = body[1].child_by_field_name("condition")
    test = None if condition is None else condition.child_by_field_name("value")
    operator = None if test is None else test.child_by_field_name("operator")
    bound = None if test is None else test.child_by_field_name("right")
    if operator is None or bound is None or source.text(operator) not in ("<", ">="):
        return None
    wraps, inner = guarded
    if wraps:
        return (source.text(bound), inner) if len(body) == 2 else None
    return source.text(bound), body[2:]


def unit_loop(source: Source, loop: tree_sitter.Node) -> str | None:
    """The loop variable of `for (int j = a; j < b; ++j)` (also `<=`, `j++`, `j += 1`)."""
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or condition is None or update is None or init.type != "declaration":
        return None
    declarator = init.child_by_field_name("declarator")
    name = None if declarator is None else declarator.child_by_field_name("declarator")
    if declarator is None or declarator.type != "init_declarator" or name is None:
        return None
    variable = source.text(name)
    if squeeze(source.text(update)) not in (f"++{variable}", f"{variable}++", f"{variable}+=1"):
        return None
    left = condition.child_by_field_name("left")
    operator = condition.child_by_field_name("operator")
    if left is None or operator is None or source.text(left) != variable:
        return None
    return variable if source.text(operator) in ("<", "<=") else None


def _accumulators(
    source: Source, decls: list[tree_sitter.Node], loop: tree_sitter.Node
) -> dict[str, tuple[str, tree_sitter.Node]]:
    """The declared scalars the loop only adds to; empty when the loop does anything else
    (stores, calls, other updates, or an addend that reads an accumulator)."""
    declared: dict[str, tuple[str, tree_sitter.Node]] = {}
    for decl in decls:
        kind = source.words(decl.child_by_field_name("type") or decl)
        for declarator in decl.children_by_field_name("declarator"):
            name = declarator.child_by_field_name("declarator")
            if declarator.type == "init_declarator" and name is not None:
                declared[source.text(name)] = (kind, declarator)
    body = loop.child_by_field_name("body")
    addends: list[tree_sitter.Node] = []
    summed: dict[str, tuple[str, tree_sitter.Node]] = {}
    for statement in _statements(body) if body is not None else []:
        expression = statement.named_children[0] if statement.named_children else None
        if statement.type != "expression_statement" or expression is None:
            return {}
        left = expression.child_by_field_name("left")
        operator = expression.child_by_field_name("operator")
        right = expression.child_by_field_name("right")
        if expression.type != "assignment_expression" or left is None or right is None:
            return {}
        target = source.text(left)
        if operator is None or source.text(operator) != "+=" or target not in declared:
            return {}
        if declared[target][0] not in ACCUMULATOR_TYPES:
            return {}
        summed[target] = declared[target]
        addends.append(right)
    for right in addends:
        if identifiers(source, right) & set(summed):
            return {}
        side_effects = ("assignment_expression", "update_expression", "call_expression")
        if any(n.type in side_effects for n in walk(right)):
            return {}
    return summed


def _reads_along_rows(source: Source, loop: tree_sitter.Node, row: str, variable: str) -> bool:
    """Some load indexes `[i * n + j]`: consecutive j along row i of a row-major matrix (not
    `[i + j]`, a window that neighbouring threads share)."""
    body = loop.child_by_field_name("body")
    for node in walk(body) if body is not None else ():
        indices = (
            node.child_by_field_name("indices") if node.type == "subscript_expression" else None
        )
        index = (
            indices.named_children[0] if indices is not None and indices.named_children else None
        )
        if index is None or index.type != "binary_expression":
            continue
        operator = index.child_by_field_name("operator")
        left = index.child_by_field_name("left")
        right = index.child_by_field_name("right")
        if operator is None or left is None or right is None or source.text(operator) != "+":
            continue
        for one, other in ((left, right), (right, left)):
            if source.text(one) != variable or other.type != "binary_expression":
                continue
            scale = other.child_by_field_name("operator")  # `i * n`: a row's start
            if (
                scale is not None
                and source.text(scale) == "*"
                and row in identifiers(source, other)
            ):
                return True
    return False


def _rewrite(source: Source, shape: RowLoop, per_block: bool = True) -> bytes:
    """The kernel body with each warp taking the block's rows in turn (see the module doc), or
    (not `per_block`) with one row per warp of the grid."""
    lane, mine = "nvcc_opt_lane", "nvcc_opt_row"
    if per_block:
        head = [
            "// each warp takes the block's rows in turn; its lanes read a row together",
            f"const int {lane} = threadIdx.x % {WARP};",
            f"for (int {mine} = threadIdx.x / {WARP}; {mine} < (int)blockDim.x;"
            f" {mine} += (int)blockDim.x / {WARP}) {{",
            re.sub(r"\bthreadIdx\s*\.\s*x\b", mine, source.text(shape.index)),
        ]
    else:
        head = [
            f"// one row per warp (the launch has {WARP} times the blocks); its lanes read it",
            f"const int {lane} = threadIdx.x % {WARP};",
            "{",
            _per_warp(source, shape.index),
        ]
    lines = [
        "{",
        *head,
        shape.guard + (" {" if shape.wraps else ""),
        *[_split_start(source, decl, shape.accumulators, lane) for decl in shape.decls],
        _strided(source, shape.loop, shape.variable, lane),
        f"for (int nvcc_opt_offset = {WARP // 2}; nvcc_opt_offset > 0; nvcc_opt_offset /= 2) {{",
        *[
            f"{name} += __shfl_down_sync(0xffffffffu, {name}, nvcc_opt_offset);"
            for name in shape.accumulators
        ],
        "}",
        f"if ({lane} == 0) {{",
        *[statement_text(source, n) for n in shape.tail],
        "}",
        *(["}"] if shape.wraps else []),
        "}",
        "}",
    ]
    return _indent(lines, indentation(source, shape.index).decode() or "  ").encode()


def _per_warp(source: Source, index: tree_sitter.Node) -> str:
    """`int i = <global thread index>;` as `int i = (<global thread index>) / 32;`."""
    declarator = index.child_by_field_name("declarator")
    value = None if declarator is None else declarator.child_by_field_name("value")
    assert value is not None  # _row_loop checked the shape
    start, end = value.start_byte - index.start_byte, value.end_byte - index.start_byte
    text = source.data[index.start_byte : index.end_byte]
    return (text[:start] + f"({source.text(value)}) / {WARP}".encode() + text[end:]).decode()


def _split_start(
    source: Source,
    decl: tree_sitter.Node,
    accumulators: dict[str, tuple[str, tree_sitter.Node]],
    lane: str,
) -> str:
    """The declaration as written, with a non-zero start of an accumulator given to lane 0
    only (the lanes' partial sums are added up at the end)."""
    edits = []
    for kind, declarator in accumulators.values():
        value = declarator.child_by_field_name("value")
        inside = decl.start_byte <= declarator.start_byte < decl.end_byte
        if value is not None and inside and not ZERO.match(source.text(value)):
            split = f"{lane} == 0 ? ({source.text(value)}) : ({kind})0".encode()
            edits.append(Edit(value.start_byte, value.end_byte, split))
    data = source.data[: decl.end_byte]
    for edit in sorted(edits, key=lambda e: -e.start):
        data = data[: edit.start] + edit.text + data[edit.end :]
    return data[decl.start_byte :].decode("utf-8")  # declarations before a loop: one line


def _strided(source: Source, loop: tree_sitter.Node, variable: str, lane: str) -> str:
    """`for (int j = a; j < b; ++j) body` as `for (int j = (a) + lane; j < b; j += 32) body`."""
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    declarator = None if init is None else init.child_by_field_name("declarator")
    start = None if declarator is None else declarator.child_by_field_name("value")
    kind = None if init is None else init.child_by_field_name("type")
    assert start is not None and kind is not None and condition is not None and body is not None
    first = lane if ZERO.match(source.text(start)) else f"({source.text(start)}) + {lane}"
    header = f"for ({source.text(kind)} {variable} = {first}; {source.text(condition)};"
    return f"{header} {variable} += {WARP}) {statement_text(source, body, loop)}"


def _indent(lines: list[str], unit: str) -> str:
    """`lines` indented by their brace depth; the lines of a multi-line statement keep their
    layout relative to its first line."""
    out: list[str] = []
    depth = 0
    for line in lines:
        text = line.strip()
        if text.startswith("}"):
            depth -= 1
        prefix = unit * depth if out else ""
        out += [prefix + part if part.strip() else "" for part in text.split("\n")]
        depth += text.count("{") - text.count("}") + (1 if text.startswith("}") else 0)
    return "\n".join(out)


def statement_text(
    source: Source, node: tree_sitter.Node, line_of: tree_sitter.Node | None = None
) -> str:
    """The statement as written, its later lines without the indentation of the line it
    starts on (the line `line_of` starts, when given)."""
    base = indentation(source, line_of or node).decode()
    lines = source.text(node).split("\n")
    return "\n".join([lines[0], *(x[len(base) :] if x.startswith(base) else x for x in lines[1:])])
