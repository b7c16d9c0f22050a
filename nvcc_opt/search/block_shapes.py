"""The block sizes a region's launches use, found where they are defined (shared by the block
shape transforms and the tiled matrix product).

A block-size definition inside the region (`int block = 256;`, `constexpr int kBlock = 256;`,
`dim3 block(16, 16);`) counts when every grid launched with it is computed from it, so a
transform can change it and the grid still covers the problem. Refused (no block size found):
shared arrays sized apart from the block constant (or at file scope, or `extern`), the block
passed to a call (`cudaLaunchKernel`), a grid following the block in a launch with another
block, kernels pairing one axis's `blockIdx` with another's `blockDim` or `threadIdx`, the old
extent (b, b - 1 or b / 2) written as a number or macro anywhere else in the region.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import (
    Kernel,
    Source,
    calls,
    extern_shared,
    function_of,
    identifiers,
    launch_calls,
    operator_type,
    squeeze,
    walk,
)
from nvcc_opt.search.kernel_facts import (
    AXES,
)

MAX_THREADS = 1024


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
    if shared_outside_kernels(source):
        return []  # a file-scope or extern shared array has a size this cannot follow
    for launched, config in launches:
        if config[1].type != "identifier":
            continue
        name = source.text(config[1])
        if "<" in launched or (len(config) > 2 and name not in identifiers(source, config[2])):
            return []  # a template kernel's checks, or a shared size apart from the block
        definition = block_definition(source, name)
        if definition is None or name not in grid_names(source, config[0]):
            return []  # a launch whose grid would not follow: change none
        kernel = kernels.get(launched)
        if kernel is not None and (
            kernel.launch_bounds
            or shared_apart(source, kernel, name)
            or crossed(source, kernel)
            or not plain_indices(source, kernel)  # `out[blockIdx.x]`: one result per block
        ):
            return []
        if not _rounds_up(source, config[0], name):
            return []  # `n / block`: another block covers other elements
        found[definition.numbers[0].start_byte] = definition
        names.add(name)
    for _, config in launches:
        uses = grid_names(source, config[0]) & names
        if uses and source.text(config[1]) not in uses:
            return []  # a grid follows a block this launch does not use: its coverage changes
        if config[1].type != "identifier" and identifiers(source, config[1]) & names:
            return []  # `dim3(block)`: a block this cannot see follows
    if passed(source, names):
        return []  # the block goes to a call (`cudaLaunchKernel(..., dim3(block), ...)`)
    blocks = list(found.values())
    own = {n.start_byte for block in blocks for n in block.numbers}
    if any(held_elsewhere(source, block, own) for block in blocks):
        return []  # the old extent (or its rounding, or half of it) written as a number
    return blocks


def passed(source: Source, names: set[str]) -> bool:
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


def shared_outside_kernels(source: Source) -> bool:
    """Whether the region declares a shared array at file scope or `extern`."""
    return extern_shared(source) or any(
        node.type == "declaration"
        and "__shared__" in source.text(node).split("[")[0]
        and function_of(node) is None
        for node in walk(source.root)
    )


def held_elsewhere(source: Source, block: BlockSize, allowed: set[int]) -> bool:
    """Whether an integer literal or a macro of the region, other than the block's own
    numbers and the nodes at `allowed`, has the value of an extent b, b - 1 or b / 2 (b > 2)."""
    values = set(block.values)
    values |= {v - 1 for v in block.values if v > 2} | {v // 2 for v in block.values if v > 2}
    allowed = allowed | {n.start_byte for n in block.numbers}
    for node in walk(source.root):
        if node.type == "number_literal" and node.start_byte not in allowed:
            if integer(source.text(node)) in values:
                return True
        elif node.type == "preproc_arg":
            words = re.findall(r"\w+", source.text(node))
            if any(integer(w) in values for w in words):
                return True
    return False


def launch_shapes(source: Source) -> dict[str, tuple[int, ...]]:
    """Kernel -> its block shape, for kernels of the region whose every launch in the region
    uses one block constant defined there by literals."""
    shapes: dict[str, set[tuple[int, ...] | None]] = {}
    for launched, config in launch_calls(source):
        block = (
            block_definition(source, source.text(config[1]))
            if config[1].type == "identifier"
            else None
        )
        shapes.setdefault(launched, set()).add(None if block is None else block.values)
    agreed: dict[str, tuple[int, ...]] = {}
    for name, found in shapes.items():
        only = next(iter(found)) if len(found) == 1 else None
        if only is not None:
            agreed[name] = only
    return agreed


def block_definition(source: Source, name: str) -> BlockSize | None:
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
        values = [integer(source.text(n)) if n.type == "number_literal" else None for n in numbers]
        if not 1 <= len(numbers) <= 3 or any(v is None or v < 1 for v in values):
            return None
        matches.append(BlockSize(tuple(numbers), tuple(v for v in values if v is not None)))
    if len(matches) != 1 or assigned(source, name):
        return None
    return matches[0]


def integer(text: str) -> int | None:
    """A decimal integer literal's value (an octal one, `010`, is not read as decimal)."""
    digits = text.rstrip("uUlL")
    if not digits.isdigit() or (len(digits) > 1 and digits.startswith("0")):
        return None
    return int(digits)


def assigned(source: Source, name: str) -> bool:
    for node in walk(source.root):
        if node.type in ("assignment_expression", "update_expression"):
            target = node.child_by_field_name("left") or node.child_by_field_name("argument")
            if target is not None and name in identifiers(source, target):
                return True
    return False


def grid_names(source: Source, grid: tree_sitter.Node) -> set[str]:
    """Names the grid expression uses, through the definitions of the names it uses (`int
    grid = ...;`, `int g2 = blocks;`), as deep as they go."""
    values = initializers(source)
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


def initializers(source: Source) -> dict[str, list[tree_sitter.Node]]:
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


def shared_apart(source: Source, kernel: Kernel, name: str) -> bool:
    """Whether the kernel declares a `__shared__` array whose size does not use `name`."""
    for node in walk(kernel.body):
        if node.type != "declaration" or "__shared__" not in source.text(node).split("[")[0]:
            continue
        sizes = [n for n in walk(node) if n.type == "array_declarator"]
        if not sizes or any(name not in identifiers(source, s) for s in sizes):
            return True
    return False


def _rounds_up(source: Source, grid: tree_sitter.Node, name: str) -> bool:
    """Whether every division by the block `name` in the grid rounds up by the block itself:
    `(n + name - 1) / name`, so that the grid covers n whatever the block becomes. A floor
    division covers a number of elements that changes with the block, and `(n + 255) / name`
    rounds up by the old extent only: a smaller block would launch threads past n."""
    for node in walk(grid):
        if node.type != "binary_expression" or operator_type(node) != "/":
            continue
        right = node.child_by_field_name("right")
        if right is None or name not in {source.text(n) for n in walk(right)}:
            continue
        left = node.child_by_field_name("left")
        while left is not None and left.type == "parenthesized_expression" and left.named_children:
            left = left.named_children[0]
        text = "".join(source.text(left).split()) if left is not None else ""
        if not re.search(rf"\+\(?{re.escape(name)}-1\)?$", text):
            return False
    return True


def plain_indices(source: Source, kernel: Kernel) -> bool:
    """Whether the kernel uses `blockIdx` only as `blockIdx.a * blockDim.a` (through casts),
    `threadIdx` only of axes it multiplies so, and calls no function of the region that reads
    them: then its index on each axis follows that axis's block extent, whatever it becomes."""
    multiplied: set[str] = set()
    for node in walk(kernel.body):
        axis = builtin_axis(source, node) if node.type == "field_expression" else None
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
        axes = {builtin_axis(source, n) for n in operands if n is not None}
        if ("blockDim", axis[1]) not in axes:
            return False
        multiplied.add(axis[1])
    for node in walk(kernel.body):
        axis = builtin_axis(source, node) if node.type == "field_expression" else None
        if axis is not None and axis[0] == "threadIdx" and axis[1] not in multiplied:
            return False
    called = set(calls(source, kernel.body))
    helpers = [
        f
        for f in walk(source.root)
        if f.type == "function_definition"
        and f != kernel.node
        and function_name(source, f) in called
    ]
    return not any(
        n.type == "field_expression" and builtin_axis(source, n) is not None
        for helper in helpers
        for n in walk(helper)
    )


def crossed(source: Source, kernel: Kernel) -> bool:
    """Whether the kernel pairs axes: `blockIdx.a * blockDim.b`, or such a product of axis a
    plus `threadIdx.b`, with b not a (a reshape would then leave gaps or overlaps)."""
    for node in walk(kernel.body):
        if node.type != "binary_expression" or operator_type(node) not in ("*", "+"):
            continue
        operands = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        axes = {builtin_axis(source, n) for n in operands if n is not None}
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
            block = {builtin_axis(source, n) for n in inner if n is not None}
            index = {a[1] for a in block if a is not None and a[0] == "blockIdx"}
            if thread and index and thread != index:
                return True
    return False


def function_name(source: Source, function: tree_sitter.Node) -> str | None:
    declarator = function.child_by_field_name("declarator")
    name = None if declarator is None else declarator.child_by_field_name("declarator")
    return None if name is None else source.text(name)


def builtin_axis(source: Source, node: tree_sitter.Node) -> tuple[str, str] | None:
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
