"""A warp per row for row reductions.

`warp_rows`: a kernel that gives each thread one row `i` and loops over `j` reading
`A[i * n + j]` (each thread its own row: 32 rows and 32 cache lines per warp load) becomes one
where each warp of the block takes the block's rows in turn and its lanes read a row together
(one line per load), summing with shuffles. The launch is unchanged, so it works for function
regions whose launch lies outside. `warp_rows_grid` gives each row its own warp with 32 times
the blocks. Loops that do more than accumulate are refused; correctness is benchmark_code's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    edited,
    identifiers,
    indentation,
    launch_calls,
    walk,
)
from nvcc_opt.search.kernel_facts import (
    MEMORY_READS,
    WARP,
    Facts,
    global_index_name,
    index_guard,
    split_at_loop,
    statement_text,
    statements,
    unit_loop,
)
from nvcc_opt.search.read_patterns import math_call

ACCUMULATOR_TYPES = {"float", "double", "int", "unsigned", "unsigned int", "long", "long long"}
ZERO = re.compile(r"^\(?\s*0+(\.0*)?([eE][+-]?\d+)?[fFlLuU]*\s*\)?$")


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


def _row_loop(source: Source, kernel: Kernel) -> RowLoop | None:
    body = statements(kernel.body)
    if len(body) < 2 or "__shared__" in source.text(kernel.body):
        return None
    row = global_index_name(source, body[0])
    if row is None:
        return None
    builtins = ("threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads", "__syncwarp")
    uses = [n for n in walk(kernel.body) if n.type == "identifier" and source.text(n) in builtins]
    if len(uses) != 3:  # only the three of the row index
        return None
    guarded = index_guard(source, body[1], row)
    if guarded is None:
        return None
    condition = body[1].child_by_field_name("condition") or body[1]
    rows = [n for n in walk(condition) if n.type == "identifier" and source.text(n) == row]
    if len(rows) != 1 or any(n.type in MEMORY_READS for n in walk(condition)):
        return None  # a bound read per row: a warp returning on one row would skip its others
    wraps, inner = guarded
    if wraps and len(body) != 2:
        return None
    if not wraps:
        inner = body[2:]
    parts = split_at_loop(inner)
    if parts is None:
        return None
    decls, loop, tail = parts
    for node in (n for d in decls for n in walk(d)):
        if node.type in ("assignment_expression", "update_expression") or (
            node.type == "call_expression" and not math_call(source, node)
        ):
            return None  # each lane of the warp runs the declarations now: once per lane
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
    for statement in statements(body) if body is not None else []:
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
