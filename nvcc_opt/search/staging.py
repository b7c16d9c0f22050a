"""A small read-only table whose row differs from lane to lane, staged per block in shared memory.

In `phi[i] = sum over d < C of T[m * C + d] * psi[...]` with `m = i % R`, the lanes of a warp
read up to 32 different rows of T at once: each load touches that many 128-byte lines, of which
it uses 8 bytes each. Staged in shared memory with rows of C + 1 elements (so that rows start on
different banks), the same loads cost one or two shared-memory wavefronts.

It applies to a kernel shaped `T i = <global x index>; if (i >= n) return; ...` (or `if (i < n)
{ ... }`) where every use of a read-only pointer parameter P of an arithmetic element type (one
no launch aliases) is a read `P[ROW * C + d]`, as a value, evaluated on every iteration of a
top-level `for (int d = 0; d < C; ++d)` (no break, continue, return or goto in it), ROW being
`m` declared once as `U m = e % R;` (U an integer type) or that expression itself, e naming
nothing but i and R's names, and R and C compile-time constants (literals or names the kernel
neither declares nor takes). i, m and d are declared once each and used only as values (never
assigned, passed to a function, bound to a reference or under `&`). No thread leaves between
the guard and the loop, so each thread that passes the guard reads exactly row m, columns 0 to
C - 1: before the guard, every thread of the block marks the row its own i gives (when it passes
the guard), and the block copies only the marked rows, each element through the kernel's own
index expression. It reads no element of P the original did not, and each read then gives the
value the original read there. A row outside [0, R) (a negative i) reads P as before.

Refused outright, as each can hide a change of the names the proof rests on: kernels with
barriers or shared memory of their own, `asm`, `__trap`, `assert`, references, enumerators,
labels, lambdas, `using`, typedefs, structured bindings, `auto`, `decltype`, `constexpr` or
`static` locals, volatile parameters, casts to anything but an arithmetic type, directives
other than `#pragma unroll`, calls of upper-case names, names the region `#define`s, and calls
other than math functions after the guard (one could leave the thread); files with an
`extern __shared__` array, an overloaded operator or a `#define` that returns; kernels a launch
in the region gives dynamic shared memory. Two reviews' inputs are in
`tests/fixtures/unsafe_staging/`. Not seen: a macro from a header the region does not hold that
gives R or C another meaning inside the kernel; benchmark_code's checks remain the net there. R
or C that is not a positive constant fails to compile, which benchmark_code reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    PointerParam,
    Source,
    edited,
    extern_shared,
    fresh_name,
    identifiers,
    indentation,
    launch_calls,
    modified,
    operator_type,
    squeeze,
    walk,
)
from nvcc_opt.search.kernel_facts import (
    FLAT_THREAD,
    MACRO_RETURN,
    THREADS,
    Facts,
    global_index_name,
    guarded_rest,
)
from nvcc_opt.search.read_patterns import (
    bare,
    candidate_kernels,
    compile_time,
    declarations,
    every_iteration,
    full_loop,
    math_call,
    names_in,
    pure,
    taken_names,
    value_only,
    value_reads,
)

INTEGER_TYPE = re.compile(
    r"^(const )?((unsigned|signed) )?(int|long|long long|short|unsigned|size_t|u?int(32|64)_t)$"
)
ROW, COLUMN = b"\x00row\x00", b"\x00column\x00"  # replaced by the copy's counters' names
ELEMENT = re.compile(r"^(float|double|int|unsigned|unsigned int|long|long long|short)$")


@dataclass(frozen=True)
class Table:
    """One pointer parameter's reads, all `P[ROW * C + d]` with the same ROW, R and C."""

    pointer: PointerParam
    reads: list[tree_sitter.Node]  # the subscript expressions
    loops: dict[int, str]  # each read's start byte: its loop's variable
    row: str  # ROW as written at the reads
    value: str  # the row's value computed from i alone: `(U)(e % R)`
    rows: str  # R
    columns: str  # C
    source_index: str  # the first read's index, ROW and d as the placeholders ROW and COLUMN


def stage_table(code: str, facts: Facts) -> str | None:
    source = Source(code)
    if extern_shared(source) or MACRO_RETURN.search(source.data.decode("utf-8", "replace")):
        return None
    dynamic = _dynamic_shared(source)
    edits: list[Edit] = []
    used = taken_names(source)
    for kernel in candidate_kernels(source, facts):
        if kernel.name in dynamic:
            continue
        found = _table(source, kernel, facts)
        if found is not None:
            guard, valid, table = found
            edits += _edits(source, guard, valid, table, used)
    return edited(code, source, edits)


def _dynamic_shared(source: Source) -> set[str]:
    """Kernels a launch in the region gives dynamic shared memory (a third `<<<>>>` value):
    static shared memory added to them could push a launch past the limit."""
    return {kernel for kernel, config in launch_calls(source) if len(config) > 2}


def _table(
    source: Source, kernel: Kernel, facts: Facts
) -> tuple[tree_sitter.Node, str, Table] | None:
    """(the guard statement, the condition a thread passes it by, the table) or None."""
    body = [c for c in kernel.body.named_children if c.type != "comment"]
    index = global_index_name(source, body[0]) if body else None
    rest = None if index is None else guarded_rest(source, body, index)
    if index is None or rest is None or index in kernel.params:
        return None
    _, inner = rest
    guard = body[1]
    condition = guard.child_by_field_name("condition")
    test = None if condition is None else condition.child_by_field_name("value")
    if test is None or not pure(test):
        return None
    wraps = operator_type(test) == "<"  # else `>=`: a return
    valid = f"({source.text(test)})" if wraps else f"!({source.text(test)})"
    if len(declarations(source, kernel.body, index)) != 1 or not value_only(
        source, kernel.body, index
    ):
        return None
    if any(n.type == "return_statement" for s in inner for n in walk(s)):
        return None
    calls = [n for s in inner for n in walk(s) if n.type == "call_expression"]
    if not all(math_call(source, n) for n in calls):
        return None  # a function could leave the thread (`asm("exit;")`) before the loop
    local = modified(source, kernel.body) | set(kernel.params)
    for pointer in kernel.pointers:
        if not pointer.read_only or not ELEMENT.match(facts.scalar(pointer.element)):
            continue
        if declarations(source, kernel.body, pointer.name):
            continue
        table = _reads(source, kernel, pointer, inner, index, local)
        if table is not None:
            return guard, valid, table
    return None


def _reads(
    source: Source,
    kernel: Kernel,
    pointer: PointerParam,
    inner: list[tree_sitter.Node],
    index: str,
    local: set[str],
) -> Table | None:
    reads = value_reads(source, kernel, pointer)
    if reads is None:
        return None
    loops: dict[int, str] = {}
    loop_nodes: list[tree_sitter.Node] = []
    shapes: set[tuple[str, str]] = set()
    first: tuple[tree_sitter.Node, tree_sitter.Node, tree_sitter.Node, str] | None = None
    for subscript in reads:
        loop = _loop_of(subscript, inner)
        header = None if loop is None else full_loop(source, kernel, loop)
        if loop is None or header is None:
            return None
        variable, bound = header
        shape = _shape(source, subscript, variable, squeeze(bound))
        if shape is None:
            return None
        shapes.add((squeeze(source.text(shape[0])), squeeze(bound)))
        if first is None:
            first = (subscript, *shape, bound)
        loops[subscript.start_byte] = variable
        loop_nodes.append(loop)
    if len(shapes) != 1 or first is None:
        return None
    subscript, row_node, column, columns = first
    if not compile_time(columns, local):
        return None
    found = _row_value(source, kernel, inner, loop_nodes, bare(row_node), index, local)
    if found is None:
        return None
    value, rows = found
    copied = _copied_index(source, subscript, row_node, column)
    return Table(pointer, reads, loops, source.text(bare(row_node)), value, rows, columns, copied)


def _copied_index(
    source: Source, read: tree_sitter.Node, row: tree_sitter.Node, column: tree_sitter.Node
) -> str:
    """The read's index as written, its row and column replaced by the copy's counters: the
    copy reads P through the same expression as the kernel does, whatever its names expand to."""
    indices = read.child_by_field_name("indices")
    assert indices is not None
    index = indices.named_children[0]
    data = source.data
    parts = sorted([(row, b"(" + ROW + b")"), (column, COLUMN)], key=lambda p: p[0].start_byte)
    out, at = b"", index.start_byte
    for node, text in parts:
        out += data[at : node.start_byte] + text
        at = node.end_byte
    return (out + data[at : index.end_byte]).decode("utf-8")


def _loop_of(read: tree_sitter.Node, inner: list[tree_sitter.Node]) -> tree_sitter.Node | None:
    """The top-level `for` of the guarded statements whose every iteration evaluates `read`."""
    loop = every_iteration(read)
    return loop if loop is not None and loop in inner else None


def _shape(
    source: Source, read: tree_sitter.Node, variable: str, columns: str
) -> tuple[tree_sitter.Node, tree_sitter.Node] | None:
    """(ROW, d) for a read `P[ROW * C + d]` (or `d + ROW * C`, `C * ROW`), else None."""
    indices = read.child_by_field_name("indices")
    if indices is None or len(indices.named_children) != 1:
        return None
    index = bare(indices.named_children[0])
    if index.type != "binary_expression" or operator_type(index) != "+":
        return None
    left, right = index.child_by_field_name("left"), index.child_by_field_name("right")
    if left is None or right is None:
        return None
    for product, column in ((left, right), (right, left)):
        product, column = bare(product), bare(column)
        if source.text(column) != variable or product.type != "binary_expression":
            continue
        if operator_type(product) != "*":
            continue
        a, b = product.child_by_field_name("left"), product.child_by_field_name("right")
        if a is None or b is None:
            continue
        for row, width in ((a, b), (b, a)):
            if squeeze(source.text(bare(width))) == columns and pure(row):
                return row, column
    return None


def _row_value(
    source: Source,
    kernel: Kernel,
    inner: list[tree_sitter.Node],
    loops: list[tree_sitter.Node],
    row: tree_sitter.Node,
    index: str,
    local: set[str],
) -> tuple[str, str] | None:
    """(the row's value from i alone, R) when ROW is `m` declared once as `U m = e % R;` at the
    top of the guarded statements (U an integer type, m used only as a value), or is `e % R`
    itself; e names nothing but i and R's names."""
    value, kind = row, "long long"
    if row.type == "identifier":
        name = source.text(row)
        found_at = declarations(source, kernel.body, name)
        if len(found_at) != 1 or found_at[0] not in inner or name in kernel.params:
            return None
        if not value_only(source, kernel.body, name):
            return None
        declaration = found_at[0]
        if len(declaration.children_by_field_name("declarator")) != 1:
            return None  # `int q = ..., m = ...`
        if any(inner.index(declaration) > inner.index(loop) for loop in loops):
            return None  # the loop would read another m
        declarator = declaration.child_by_field_name("declarator")
        initial = None if declarator is None else declarator.child_by_field_name("value")
        if declarator is None or declarator.type != "init_declarator" or initial is None:
            return None
        kind = " ".join(
            source.data[declaration.start_byte : declarator.start_byte].decode().split()
        )
        if not INTEGER_TYPE.match(kind):
            return None
        value = initial
    if not pure(value):
        return None
    remainder = bare(value)
    rows_node = remainder.child_by_field_name("right")
    if remainder.type != "binary_expression" or operator_type(remainder) != "%" or not rows_node:
        return None
    rows = source.text(rows_node)
    if not compile_time(rows, local) or identifiers(source, remainder) - {index} - names_in(rows):
        return None
    return f"({kind})({source.text(value)})", rows


def _edits(
    source: Source, guard: tree_sitter.Node, valid: str, table: Table, used: set[str]
) -> list[Edit]:
    name, kind = table.pointer.name, table.pointer.element
    staged = fresh_name(f"nvcc_opt_{name}", used)
    marks = fresh_name(f"nvcc_opt_{name}_rows", used)
    used |= {staged, marks}
    rows, columns = f"({table.rows})", f"({table.columns})"
    pad = indentation(source, guard).decode()
    k, r, c = (fresh_name(f"nvcc_opt_{stem}", used) for stem in ("k", "r", "c"))
    used |= {k, r, c}
    index = table.source_index.replace(ROW.decode(), r).replace(COLUMN.decode(), c)
    each = f"for (int {k} = {{0}}; {k} < {{1}}; {k} += {{2}})"
    lines = [
        f"// {name}: the rows this block's threads read, staged in shared memory (rows of",
        "// C + 1 elements start on different banks); a row outside [0, R) reads as before",
        f"__shared__ {kind} {staged}[{rows} * ({columns} + 1)];",
        f"__shared__ int {marks}[{rows}];",
        each.format(FLAT_THREAD, rows, THREADS) + f" {marks}[{k}] = 0;",
        "__syncthreads();",
        f"if ({valid}) {{",
        f"  const long long {r} = (long long){table.value};",
        f"  if ({r} >= 0 && {r} < {rows}) atomicOr(&{marks}[{r}], 1);",
        "}",
        "__syncthreads();",
        each.format(FLAT_THREAD, f"{rows} * {columns}", THREADS) + " {",
        f"  const int {r} = {k} / {columns}, {c} = {k} % {columns};",
        f"  if ({marks}[{r}]) {staged}[{r} * ({columns} + 1) + {c}] = {name}[{index}];",
        "}",
        "__syncthreads();",
    ]
    text = "\n".join(lines[:1] + [pad + line for line in lines[1:]]) + "\n" + pad
    edits = [Edit(guard.start_byte, guard.start_byte, text.encode())]
    row = f"({table.row})"
    for read in table.reads:
        column = table.loops[read.start_byte]
        replacement = (
            f"({row} >= 0 && {row} < {rows} ? {staged}[{row} * ({columns} + 1) + {column}]"
            f" : {source.text(read)})"
        )
        edits.append(Edit(read.start_byte, read.end_byte, replacement.encode()))
    return edits
