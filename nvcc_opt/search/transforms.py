"""Source transforms of a region, each on a tree-sitter parse of the CUDA code.

A transform takes the region's code and the facts found about its launches and returns the new
code, or None when it has nothing to change. It never makes the parse worse: a result with more
parse errors than its input is dropped. Whether a change is correct and faster is for
benchmark_code to say; the transforms only avoid changes they can see are wrong (`__restrict__`
or `__ldg` on pointers that a launch passes twice, or that the kernel writes through).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import tree_sitter

from nvcc_opt.search import (
    division,
    fusion,
    preload,
    privatize,
    shuffle,
    staging,
    structure,
    tiling,
)
from nvcc_opt.search.cuda import (
    LDG_TYPES,
    Edit,
    Kernel,
    Source,
    edited,
    fresh_name,
    identifiers,
    indentation,
    modified,
    preceding_pragma,
    walk,
)
from nvcc_opt.search.launches import constant, definitions

MAX_FULL_UNROLL = 64  # full unrolling beyond this many iterations mostly grows code
RUNTIME_UNROLL = 4


@dataclass(frozen=True)
class Facts:
    """What the policy found out about the region's kernels outside their own code."""

    block_sizes: Mapping[str, int] = field(default_factory=dict)  # every launch agrees
    no_alias: frozenset[str] = frozenset()  # every launch found, none passes a pointer twice
    names: Mapping[str, str] = field(default_factory=dict)  # constants defined elsewhere


@dataclass(frozen=True)
class Transform:
    name: str
    change: str  # what it does, for the explanation
    apply: Callable[[str, Facts], str | None]
    group: str | None = None  # transforms of one group exclude each other (the block shape)
    host_side: bool = False  # changes host code (launches), which the kernels' SASS cannot show


def restrict(code: str, facts: Facts) -> str | None:
    source = Source(code)
    edits = [
        Edit(p.star_end, p.star_end, b" __restrict__")
        for k in source.kernels()
        if k.name in facts.no_alias
        for p in k.pointers
        if not p.restrict
    ]
    return edited(code, source, edits)


def const_restrict(code: str, facts: Facts) -> str | None:
    source = Source(code)
    edits = []
    for kernel in source.kernels():
        if kernel.name not in facts.no_alias:
            continue
        for p in kernel.pointers:
            if not p.read_only or (p.const and p.restrict):
                continue
            if not p.const:
                edits.append(Edit(p.type_start, p.type_start, b"const "))
            if not p.restrict:
                edits.append(Edit(p.star_end, p.star_end, b" __restrict__"))
    return edited(code, source, edits)


def ldg(code: str, facts: Facts) -> str | None:
    source = Source(code)
    reads: list[tree_sitter.Node] = []
    for kernel in source.kernels():
        if kernel.name in facts.no_alias:
            reads += [
                r for p in kernel.pointers if _ldg_able(p.element, p.read_only) for r in p.reads
            ]
    starts = {(r.start_byte, r.end_byte) for r in reads}

    def render(node: tree_sitter.Node) -> bytes:
        # The node's text with every read inside it (and itself) wrapped, innermost first.
        out, at = b"", node.start_byte
        for child in _outermost(node, starts, include_self=False):
            out += source.data[at : child.start_byte] + render(child)
            at = child.end_byte
        out += source.data[at : node.end_byte]
        return b"__ldg(&" + out + b")" if (node.start_byte, node.end_byte) in starts else out

    edits = [Edit(r.start_byte, r.end_byte, render(r)) for r in _outermost(source.root, starts)]
    return edited(code, source, edits)


def _ldg_able(element: str, read_only: bool) -> bool:
    return read_only and " ".join(element.split()) in LDG_TYPES


def _outermost(
    node: tree_sitter.Node, spans: set[tuple[int, int]], include_self: bool = True
) -> list[tree_sitter.Node]:
    if include_self and (node.start_byte, node.end_byte) in spans:
        return [node]
    found = []
    for child in node.children:
        found += _outermost(child, spans)
    return found


def unroll(code: str, facts: Facts) -> str | None:
    """`#pragma unroll` on loops whose trip count is a compile-time constant."""
    source = Source(code)
    names = {**facts.names, **definitions(code)}
    edits = []
    for kernel in source.kernels():
        for loop in _loops(kernel):
            if preceding_pragma(loop) is not None:
                continue
            count = _trip_count(source, loop, names)
            if count == "runtime" or (isinstance(count, int) and count > MAX_FULL_UNROLL):
                continue
            edits.append(_pragma(source, loop, b"#pragma unroll"))
    return edited(code, source, edits)


def unroll_runtime(code: str, facts: Facts) -> str | None:
    """`#pragma unroll 4` on innermost loops with a trip count known only at run time."""
    source = Source(code)
    names = {**facts.names, **definitions(code)}
    edits = []
    for kernel in source.kernels():
        for loop in _loops(kernel):
            body = loop.child_by_field_name("body")
            inner = body is not None and any(
                n.type in ("for_statement", "while_statement", "do_statement") for n in walk(body)
            )
            if inner or preceding_pragma(loop) is not None:
                continue
            if _trip_count(source, loop, names) == "runtime":
                pragma = f"#pragma unroll {RUNTIME_UNROLL}".encode()
                edits.append(_pragma(source, loop, pragma))
    return edited(code, source, edits)


def launch_bounds(code: str, facts: Facts) -> str | None:
    source = Source(code)
    edits = [
        Edit(k.declarator_start, k.declarator_start, f"__launch_bounds__({threads}) ".encode())
        for k in source.kernels()
        if not k.launch_bounds and (threads := facts.block_sizes.get(k.name)) is not None
    ]
    return edited(code, source, edits)


def hoist(code: str, facts: Facts) -> str | None:
    """Loads of read-only data that do not change inside a loop, read once before it."""
    source = Source(code)
    edits: list[Edit] = []
    used = identifiers(source, source.root)
    for kernel in source.kernels():
        if kernel.name not in facts.no_alias:
            continue
        read_only = {p.name: p for p in kernel.pointers if p.read_only}
        taken: set[tuple[int, int]] = set()
        for loop in _loops(kernel):
            if any(loop.start_byte < a < loop.end_byte for a, _ in taken):
                continue  # an enclosing loop's hoist already edits inside this one
            if any(a <= loop.start_byte < b for a, b in taken):
                continue
            changed = modified(source, loop)
            body = loop.child_by_field_name("body")
            if body is None:
                continue
            candidates: dict[str, list[tree_sitter.Node]] = {}
            for node in walk(body):
                base = node.child_by_field_name("argument")
                if node.type != "subscript_expression" or base is None:
                    continue
                pointer = read_only.get(source.text(base))
                if pointer is None or node not in pointer.reads:
                    continue
                if _invariant(source, node, changed):
                    candidates.setdefault(source.words(node), []).append(node)
            if not candidates:
                continue
            anchor = preceding_pragma(loop) or loop
            indent = indentation(source, anchor)
            declared = b""
            for text, nodes in candidates.items():
                pointer = read_only[text.split("[", 1)[0].strip()]
                name = fresh_name(f"{pointer.name}_hoisted", used)
                used.add(name)
                declared += f"const {pointer.element} {name} = {text};\n".encode() + indent
                edits += [Edit(n.start_byte, n.end_byte, name.encode()) for n in nodes]
            edits.append(Edit(anchor.start_byte, anchor.start_byte, declared))
            taken.add((loop.start_byte, loop.end_byte))
    return edited(code, source, edits)


def _invariant(source: Source, read: tree_sitter.Node, changed: set[str]) -> bool:
    index = read.child_by_field_name("indices") or read.child_by_field_name("index")
    if index is None:
        return False
    for node in walk(index):
        if node.type in ("call_expression", "assignment_expression", "update_expression"):
            return False
        if node.type == "subscript_expression":
            return False  # a load in the index: leave it to the compiler
        if node.type == "identifier" and source.text(node) in changed:
            return False
    return True


def _loops(kernel: Kernel) -> list[tree_sitter.Node]:
    return [n for n in walk(kernel.body) if n.type == "for_statement"]


def _pragma(source: Source, loop: tree_sitter.Node, pragma: bytes) -> Edit:
    return Edit(loop.start_byte, loop.start_byte, pragma + b"\n" + indentation(source, loop))


def _trip_count(source: Source, loop: tree_sitter.Node, names: Mapping[str, str]) -> int | str:
    """The number of iterations when constant; "constant" when the bounds are compile-time names
    whose value is not known here; "runtime" otherwise."""
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or condition is None or update is None:
        return "runtime"
    variable, start = _initial(source, init)
    if variable is None or start is None or condition.type != "binary_expression":
        return "runtime"
    left = condition.child_by_field_name("left")
    right = condition.child_by_field_name("right")
    operator = condition.child_by_field_name("operator")
    if left is None or right is None or operator is None or source.text(left) != variable:
        return "runtime"
    step = _step(source, update, variable)
    if step is None or variable in modified(source, loop.child_by_field_name("body") or loop):
        return "runtime"
    function_scope = _locals_and_params(source, loop)
    bound_names = identifiers(source, right) | identifiers(source, start)
    if bound_names & function_scope:
        return "runtime"
    low = constant(source.text(start), names)
    high = constant(source.text(right), names)
    if low is None or high is None:
        return "constant"
    op = source.text(operator)
    span = {"<": high - low, "<=": high - low + 1, ">": low - high, ">=": low - high + 1}.get(op)
    if span is None or (step > 0) != (op in ("<", "<=")):
        return "runtime"
    return max(0, -(-span // abs(step)))


def _initial(source: Source, init: tree_sitter.Node) -> tuple[str | None, tree_sitter.Node | None]:
    if init.type == "declaration":
        declarator = init.child_by_field_name("declarator")
        if declarator is not None and declarator.type == "init_declarator":
            name = declarator.child_by_field_name("declarator")
            value = declarator.child_by_field_name("value")
            if name is not None and value is not None:
                return source.text(name), value
    if init.type == "assignment_expression":
        left, right = init.child_by_field_name("left"), init.child_by_field_name("right")
        if left is not None and right is not None and left.type == "identifier":
            return source.text(left), right
    return None, None


def _step(source: Source, update: tree_sitter.Node, variable: str) -> int | None:
    if update.type == "update_expression":
        argument = update.child_by_field_name("argument")
        operator = update.child_by_field_name("operator")
        if argument is None or operator is None or source.text(argument) != variable:
            return None
        return 1 if source.text(operator) == "++" else -1
    if update.type == "assignment_expression":
        left, right = update.child_by_field_name("left"), update.child_by_field_name("right")
        operator = update.child_by_field_name("operator")
        if left is None or right is None or operator is None or source.text(left) != variable:
            return None
        amount = constant(source.text(right), {})
        if amount is None or amount == 0:
            return None
        op = source.text(operator)
        return amount if op == "+=" else -amount if op == "-=" else None
    return None


def _locals_and_params(source: Source, loop: tree_sitter.Node) -> set[str]:
    """Names declared by the function around `loop`, other than `const`/`constexpr` locals
    with a value: those may change at run time."""
    function = loop.parent
    while function is not None and function.type != "function_definition":
        function = function.parent
    if function is None:
        return set()
    names: set[str] = set()
    declarator = function.child_by_field_name("declarator")
    if declarator is not None:
        parameters = declarator.child_by_field_name("parameters")
        if parameters is not None:
            names |= identifiers(source, parameters)
    for node in walk(function.child_by_field_name("body") or function):
        if node.type != "declaration":
            continue
        qualifiers = {source.text(c) for c in node.children if c.type == "type_qualifier"}
        if qualifiers & {"const", "constexpr"}:
            continue
        names |= modified(source, node)
    return names


TRANSFORMS: tuple[Transform, ...] = (
    Transform(
        "fuse",
        "consecutive launches of element-wise kernels fused into one pass",
        fusion.fuse,
        host_side=True,
    ),
    Transform(
        "warp_rows",
        "a warp per row for the row-per-thread reduction (lanes read the row together, then a"
        " shuffle sum)",
        structure.warp_rows,
        group="rows",
    ),
    Transform(
        "warp_rows_grid",
        "a warp per row for the row-per-thread reduction, with 32 times the blocks",
        structure.warp_rows_grid,
        group="rows",
        host_side=True,
    ),
    Transform(
        "const_restrict", "const __restrict__ on read-only pointer parameters", const_restrict
    ),
    Transform("restrict", "__restrict__ on every pointer parameter", restrict),
    Transform("hoist", "loop-invariant loads hoisted out of their loops", hoist),
    Transform("ldg", "__ldg() for loads of read-only data", ldg),
    Transform("unroll", "#pragma unroll on loops with a constant trip count", unroll),
    Transform(
        "unroll_runtime",
        f"#pragma unroll {RUNTIME_UNROLL} on innermost loops with a run-time trip count",
        unroll_runtime,
    ),
    Transform(
        "launch_bounds",
        "__launch_bounds__ matching the launch's block size",
        launch_bounds,
        group="block",
    ),
    Transform(
        "shared_atomics",
        "atomic adds onto a few counters privatized per block in shared memory",
        privatize.shared_atomics,
    ),
    Transform(
        "warp_shuffle_tail",
        "the last warp of the shared-memory tree reduction done with shuffles (the same sums,"
        " five barriers fewer)",
        shuffle.warp_shuffle_tail,
        group="block",
    ),
    Transform(
        "warp_shuffle_scan",
        "the block's shared-memory scan done within warps by shuffles (integers: the same"
        " values; 3 barriers in all instead of 2 per step)",
        shuffle.warp_shuffle_scan,
        group="block",
    ),
    Transform(
        "stage_table",
        "the rows of a small read-only table each lane reads staged per block in shared memory"
        " (the same values; one or two wavefronts per load instead of one line per lane)",
        staging.stage_table,
    ),
    Transform(
        "preload_run",
        "a short read-only run every lane reads alike loaded before its loop, 16 bytes at a time"
        " where aligned (the same values; a quarter of the loads for floats)",
        preload.preload_run,
    ),
    Transform(
        "split_division",
        "a division by a product split in two, its first half the division the kernel already"
        " does (the same values; one 64-bit division fewer)",
        division.split_division,
    ),
    Transform(
        "tile_matmul",
        "shared-memory tiles for the one-thread-per-element matrix product",
        tiling.tile_matmul,
        group="block",
    ),
    Transform(
        "block_half", "half the threads per block", structure.block_half, "block", host_side=True
    ),
    Transform(
        "block_quarter",
        "a quarter of the threads per block (a 2D block twice as wide)",
        structure.block_quarter,
        group="block",
        host_side=True,
    ),
    Transform(
        "block_double",
        "twice the threads per block",
        structure.block_double,
        "block",
        host_side=True,
    ),
    Transform(
        "block_warp_wide",
        "a block 32 threads wide (whole 128-byte rows per warp), the same number of threads",
        structure.block_warp_wide,
        group="block",
        host_side=True,
    ),
    Transform(
        "block_wide",
        "a 2D block twice as wide and half as tall",
        structure.block_wide,
        group="block",
        host_side=True,
    ),
)
BY_NAME = {t.name: t for t in TRANSFORMS}
