"""Shared-memory tiles for the one-thread-per-element matrix product.

`C[i][j] = sum_k A[i][k] * B[k][j]` with one thread per (i, j) reads every A row and B column
from global memory once per output element. With a square block of T x T threads, the block can
load a T x T tile of A and one of B into shared memory together, then each thread reads its T
products from there: global loads fall by a factor of T. The sum runs over k in the original
order (tiles in order, zeros past the end), so the result is the same float for float.

The kernel must have that shape exactly: `i` from the y index, `j` from the x index, a guard
`i < M && j < N` around the rest, accumulators that start from constants, one loop `for (k = 0;
k < K; ++k) acc += A[<i, k>] * B[<k, j>]` whose A index does not use j and B index does not use
i, and a launch of the kernel in the region with a square literal block of 8, 16 or 32. The
accumulators' starts are constants, since every thread (also one past the edge) now runs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.block_shapes import launch_shapes
from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    declared_name,
    edited,
    identifiers,
    indentation,
    modified,
    squeeze,
    walk,
)
from nvcc_opt.search.kernel_facts import (
    Facts,
    assignment,
    global_index_name,
    split_at_loop,
    statement_text,
    unit_loop,
)

TILES = (8, 16, 32)


@dataclass(frozen=True)
class Product:
    row: tree_sitter.Node  # the declaration of i
    column: tree_sitter.Node  # the declaration of j
    row_test: str  # `i < M`
    column_test: str  # `j < N`
    decls: list[tree_sitter.Node]
    accumulator: str
    kind: str  # its type
    variable: str  # k
    bound: str  # K
    left: tuple[str, tree_sitter.Node]  # A, its index
    right: tuple[str, tree_sitter.Node]  # B, its index
    tail: list[tree_sitter.Node]


def tile_matmul(code: str, facts: Facts) -> str | None:
    source = Source(code)
    shapes = launch_shapes(source)
    edits = []
    for kernel in source.kernels():
        shape = shapes.get(kernel.name)
        if shape is None or len(shape) != 2 or shape[0] != shape[1] or shape[0] not in TILES:
            continue
        product = _product(source, kernel)
        if product is not None:
            new = _tiled(source, product, shape[0])
            edits.append(Edit(kernel.body.start_byte, kernel.body.end_byte, new))
    return edited(code, source, edits)


def _product(source: Source, kernel: Kernel) -> Product | None:
    body = [c for c in kernel.body.named_children if c.type != "comment"]
    if len(body) != 3 or "__shared__" in source.text(kernel.body):
        return None
    row, column = global_index_name(source, body[0], "y"), global_index_name(source, body[1])
    builtins = ("threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads")
    used = [n for n in walk(kernel.body) if n.type == "identifier" and source.text(n) in builtins]
    if row is None or column is None or len(used) != 6:
        return None
    tests = _tests(source, body[2], row, column)
    if tests is None:
        return None
    row_test, column_test, inner = tests
    parts = split_at_loop(inner)
    if parts is None:
        return None
    decls, loop, tail = parts
    if any(n.type in ("subscript_expression", "call_expression") for d in decls for n in walk(d)):
        return None  # every thread runs them now, also those past the edge
    found = _loop(source, loop, row, column)
    if found is None:
        return None
    variable, bound, accumulator, left, right = found
    names = {source.text(n) for n in walk(loop.child_by_field_name("condition") or loop)
             if n.type == "identifier"} - {variable}  # fmt: skip
    local = {source.text(d) for n in walk(kernel.body) if (d := declared_name(n)) is not None}
    if names & (local | modified(source, kernel.body)):
        return None  # the bound must be the block's own: a local could differ by thread
    kind = _declared_type(source, decls, accumulator)
    if kind is None:
        return None
    return Product(
        body[0], body[1], row_test, column_test, decls, accumulator, kind, variable, bound,
        left, right, tail,
    )  # fmt: skip


def _tests(
    source: Source, guard: tree_sitter.Node, row: str, column: str
) -> tuple[str, str, list[tree_sitter.Node]] | None:
    condition = guard.child_by_field_name("condition") if guard.type == "if_statement" else None
    consequence = guard.child_by_field_name("consequence") if condition is not None else None
    test = None if condition is None else condition.child_by_field_name("value")
    if test is None or consequence is None or guard.child_by_field_name("alternative"):
        return None
    operator = test.child_by_field_name("operator") if test.type == "binary_expression" else None
    if operator is None or source.text(operator) != "&&":
        return None
    parts = [test.child_by_field_name("left"), test.child_by_field_name("right")]
    by_name: dict[str, str] = {}
    for part in parts:
        left = part.child_by_field_name("left") if part is not None else None
        compare = part.child_by_field_name("operator") if part is not None else None
        if part is None or left is None or compare is None or source.text(compare) != "<":
            return None
        by_name[source.text(left)] = source.text(part)
    if set(by_name) != {row, column}:
        return None
    inner = [c for c in consequence.named_children if c.type != "comment"]
    if consequence.type != "compound_statement":
        return None
    return by_name[row], by_name[column], inner


def _loop(
    source: Source, loop: tree_sitter.Node, row: str, column: str
) -> tuple[str, str, str, tuple[str, tree_sitter.Node], tuple[str, tree_sitter.Node]] | None:
    variable = unit_loop(source, loop)  # for (T k = a; k < b; ++k): here `int k = 0`, `<`
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    if variable is None or init is None or condition is None or body is None:
        return None
    if squeeze(source.text(init)).rstrip(";") != f"int{variable}=0":
        return None
    compare = condition.child_by_field_name("operator")
    bound = condition.child_by_field_name("right")
    if compare is None or bound is None or source.text(compare) != "<":
        return None
    if identifiers(source, bound) & {row, column, variable}:
        return None
    statements = [c for c in body.named_children if c.type != "comment"]
    statement = body if body.type == "expression_statement" else None
    if body.type == "compound_statement" and len(statements) == 1:
        statement = statements[0]
    found = assignment(source, statement)
    if found is None or found[1] != "+=":
        return None
    target, _, value = found
    factors = _factors(value)
    if target.type != "identifier" or factors is None:
        return None
    reads = []
    for factor in factors:
        base = factor.child_by_field_name("argument")
        indices = factor.child_by_field_name("indices")
        index = (
            indices.named_children[0] if indices is not None and indices.named_children else None
        )
        if base is None or index is None or base.type != "identifier":
            return None
        reads.append((source.text(base), index))
    (a, a_index), (b, b_index) = reads
    if _uses(source, a_index, column) or _uses(source, b_index, row):
        a, a_index, b, b_index = b, b_index, a, a_index  # B[k][j] * A[i][k]
    if _uses(source, a_index, column) or _uses(source, b_index, row):
        return None
    if not (_uses(source, a_index, variable) and _uses(source, b_index, variable)):
        return None
    return variable, source.text(bound), source.text(target), (a, a_index), (b, b_index)


def _factors(value: tree_sitter.Node) -> list[tree_sitter.Node] | None:
    if value.type != "binary_expression" or value.child_by_field_name("operator") is None:
        return None
    operator = value.child_by_field_name("operator")
    left, right = value.child_by_field_name("left"), value.child_by_field_name("right")
    if operator is None or operator.text != b"*" or left is None or right is None:
        return None
    if left.type != "subscript_expression" or right.type != "subscript_expression":
        return None
    return [left, right]


def _uses(source: Source, node: tree_sitter.Node, name: str) -> bool:
    return name in identifiers(source, node)


def _declared_type(source: Source, decls: list[tree_sitter.Node], name: str) -> str | None:
    for decl in decls:
        for declarator in decl.children_by_field_name("declarator"):
            declared = declarator.child_by_field_name("declarator")
            value = declarator.child_by_field_name("value")
            if declared is not None and source.text(declared) == name and value is not None:
                kind = decl.child_by_field_name("type")
                return None if kind is None else source.text(kind)
    return None


def _replace(source: Source, node: tree_sitter.Node, name: str, by: str) -> str:
    """`node`'s text with every identifier `name` replaced by `by`."""
    data = source.data[node.start_byte : node.end_byte]
    for ident in sorted(
        (n for n in walk(node) if n.type == "identifier" and source.text(n) == name),
        key=lambda n: -n.start_byte,
    ):
        start, end = ident.start_byte - node.start_byte, ident.end_byte - node.start_byte
        data = data[:start] + by.encode() + data[end:]
    return data.decode("utf-8")


def _tiled(source: Source, p: Product, tile: int) -> bytes:
    unit = indentation(source, p.row).decode() or "  "
    k = p.variable
    (a, a_index), (b, b_index) = p.left, p.right
    a_at = _replace(source, a_index, k, "nvcc_opt_ka")
    b_at = _replace(source, b_index, k, "nvcc_opt_kb")
    zero = f"({p.kind})0"
    lines = [
        source.text(p.row),
        source.text(p.column),
        f"// {tile} x {tile} tiles of {a} and {b} in shared memory, loaded by the whole block",
        f"__shared__ {p.kind} nvcc_opt_{a}_tile[{tile}][{tile}];",
        f"__shared__ {p.kind} nvcc_opt_{b}_tile[{tile}][{tile}];",
        *[statement_text(source, d) for d in p.decls],
        f"for (int nvcc_opt_k0 = 0; nvcc_opt_k0 < {p.bound}; nvcc_opt_k0 += {tile}) {{",
        f"{unit}const int nvcc_opt_ka = nvcc_opt_k0 + threadIdx.x;",
        f"{unit}const int nvcc_opt_kb = nvcc_opt_k0 + threadIdx.y;",
        f"{unit}nvcc_opt_{a}_tile[threadIdx.y][threadIdx.x] ="
        f" ({p.row_test} && nvcc_opt_ka < {p.bound}) ? {a}[{a_at}] : {zero};",
        f"{unit}nvcc_opt_{b}_tile[threadIdx.y][threadIdx.x] ="
        f" (nvcc_opt_kb < {p.bound} && {p.column_test}) ? {b}[{b_at}] : {zero};",
        f"{unit}__syncthreads();",
        f"{unit}#pragma unroll",
        f"{unit}for (int {k} = 0; {k} < {tile}; ++{k})",
        f"{unit * 2}{p.accumulator} += nvcc_opt_{a}_tile[threadIdx.y][{k}]"
        f" * nvcc_opt_{b}_tile[{k}][threadIdx.x];",
        f"{unit}__syncthreads();",
        "}",
        f"if ({p.row_test} && {p.column_test}) {{",
        *[
            "\n".join(unit + line if line else "" for line in statement_text(source, t).split("\n"))
            for t in p.tail
        ],
        "}",
    ]
    text = "\n".join("\n".join(unit + x if x else "" for x in line.split("\n")) for line in lines)
    return ("{\n" + text + "\n}").encode()
