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
from typing import TYPE_CHECKING

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    PointerParam,
    Source,
    calls_macro,
    declared_name,
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
from nvcc_opt.search.privatize import FLAT_THREAD, MACRO_RETURN, THREADS
from nvcc_opt.search.structure import global_index_name, guarded_rest, unit_loop

if TYPE_CHECKING:
    from nvcc_opt.search.transforms import Facts

BUILTINS = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}
# What an expression evaluated twice (the guard, a row) may hold: no calls, no side effects.
PURE = {
    "identifier", "number_literal", "binary_expression", "parenthesized_expression",
    "cast_expression", "type_descriptor", "primitive_type", "sized_type_specifier",
    "type_identifier", "field_expression", "field_identifier",
}  # fmt: skip
# Where a name or a read may stand: as a value only (never assigned, bound to a reference,
# passed to a function that could take it by reference, or under `&`).
VALUE = {
    "binary_expression", "parenthesized_expression", "cast_expression", "subscript_argument_list",
    "condition_clause", "unary_expression",
}  # fmt: skip
# The nodes between a read and its loop's body through which the read runs on every iteration.
ALWAYS = {
    "expression_statement", "compound_statement", "assignment_expression", "init_declarator",
    "declaration", "parenthesized_expression", "cast_expression", "unary_expression",
    "binary_expression", "subscript_argument_list", "subscript_expression",
}  # fmt: skip
BOTH_SIDES = {"+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&", "|", "^", "<<", ">>"}
LEAVES = {"return_statement", "goto_statement", "break_statement", "continue_statement"}
# A kernel holding any of these is left alone: each can hide a change of the names the proof
# rests on (references, enumerators, labels, lambdas, directives inside the kernel).
REFUSED = {
    "reference_declarator", "enum_specifier", "labeled_statement", "goto_statement",
    "lambda_expression", "preproc_def", "preproc_function_def", "preproc_call", "preproc_if",
    "preproc_ifdef", "using_declaration", "alias_declaration", "namespace_alias_definition",
    "structured_binding_declarator", "type_definition", "decltype", "placeholder_type_specifier",
    "storage_class_specifier", "abstract_reference_declarator",
}  # fmt: skip
# What the guarded statements may call: math that cannot leave the thread or touch memory.
MATH = re.compile(
    r"(std::)?(f?(min|max|abs)f?|r?sqrtf?|fmaf?|(exp|exp2|log|log2|log10|sin|cos|tan|pow|floor"
    r"|ceil|trunc|round|cbrt|hypot|erf)f?)"
)
CAST_TYPE = re.compile(
    r"(const )?((unsigned|signed) )?(int|long|long long|short|char|unsigned|float|double|size_t"
    r"|u?int(8|16|32|64)_t)"
)
REFUSED_WORDS = re.compile(
    r"\b(__shared__|__syncthreads|__syncwarp|asm|__trap|assert|constexpr|volatile)\b"
)
INTEGER_TYPE = re.compile(
    r"^(const )?((unsigned|signed) )?(int|long|long long|short|unsigned|size_t|u?int(32|64)_t)$"
)
LOOP_TYPE = re.compile(r"(unsigned |signed )?(int|long|long long)|unsigned|size_t|u?int(32|64)_t")
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
        found = _table(source, kernel)
        if found is not None:
            guard, valid, table = found
            edits += _edits(source, guard, valid, table, used)
    return edited(code, source, edits)


def candidate_kernels(source: Source, facts: Facts) -> list[Kernel]:
    """The kernels a table rewrite may look at: every launch found and none passing a pointer
    twice, no name the region `#define`s, nothing that could change names behind its back (in a
    file that is plain too)."""
    if not plain_file(source):
        return []
    defined = defined_macros(source)
    return [
        kernel
        for kernel in source.kernels()
        if kernel.name in facts.no_alias
        and not identifiers(source, kernel.body) & defined
        and plain_kernel(source, kernel)
    ]


def value_reads(
    source: Source, kernel: Kernel, pointer: PointerParam
) -> list[tree_sitter.Node] | None:
    """Every use of the pointer in the kernel, each a read `P[...]` standing as a value; None
    when some use is anything else."""
    reads = []
    for use in walk(kernel.body):
        if use.type != "identifier" or source.text(use) != pointer.name:
            continue
        read = use.parent
        if (
            read is None
            or read.type != "subscript_expression"
            or read.child_by_field_name("argument") != use
            or read not in pointer.reads
            or not as_value(read)
        ):
            return None
        reads.append(read)
    return reads


def plain_file(source: Source) -> bool:
    """No overloaded operator (it could bind a read or a name to a reference) and no function
    of its own named like a math function (`math_call` trusts those names)."""
    for node in walk(source.root):
        if node.type == "operator_name":
            return False
        if node.type == "function_declarator":
            name = node.child_by_field_name("declarator")
            if name is not None and MATH.fullmatch(source.text(name)):
                return False
    return True


def taken_names(source: Source) -> set[str]:
    """Every name in the region, types and fields included: what a fresh name must avoid."""
    kinds = ("identifier", "type_identifier", "field_identifier", "namespace_identifier")
    return {source.text(n) for n in walk(source.root) if n.type in kinds}


def plain_kernel(source: Source, kernel: Kernel) -> bool:
    """Whether the kernel holds nothing that could change the names a proof here rests on
    behind its back (the refusals in the module's docstring)."""
    if REFUSED_WORDS.search(source.text(kernel.body)) or _volatile(source, kernel):
        return False
    for node in walk(kernel.body):
        if node.type in REFUSED and not _unroll_pragma(source, node):
            return False
        if calls_macro(source, node):
            return False
        if node.type == "cast_expression" and not _plain_cast(source, node):
            return False
    return not _writes_outside(source, kernel)


def _writes_outside(source: Source, kernel: Kernel) -> bool:
    """Whether the kernel assigns through a name it neither takes nor declares (a `__device__`
    array a table pointer could point into)."""
    own = set(kernel.params)
    for node in walk(kernel.body):
        if node.type in ("declaration", "init_declarator", "parameter_declaration"):
            name = declared_name(node)
            if name is not None:
                own.add(source.text(name))
    for node in walk(kernel.body):
        target = None
        if node.type == "assignment_expression":
            target = node.child_by_field_name("left")
        elif node.type == "update_expression":
            target = node.child_by_field_name("argument")
        while target is not None and target.type != "identifier":
            target = (
                target.child_by_field_name("argument")
                or target.child_by_field_name("value")
                or (target.named_children[0] if target.named_children else None)
            )
        if target is not None and source.text(target) not in own:
            return True
    return False


def defined_macros(source: Source) -> set[str]:
    """The names the region `#define`s."""
    names = set()
    for node in walk(source.root):
        if node.type in ("preproc_def", "preproc_function_def"):
            name = node.child_by_field_name("name")
            if name is not None:
                names.add(source.text(name))
    return names


def _dynamic_shared(source: Source) -> set[str]:
    """Kernels a launch in the region gives dynamic shared memory (a third `<<<>>>` value):
    static shared memory added to them could push a launch past the limit."""
    return {kernel for kernel, config in launch_calls(source) if len(config) > 2}


def _table(source: Source, kernel: Kernel) -> tuple[tree_sitter.Node, str, Table] | None:
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
    if test is None or not _pure(test):
        return None
    wraps = operator_type(test) == "<"  # else `>=`: a return
    valid = f"({source.text(test)})" if wraps else f"!({source.text(test)})"
    if len(declarations(source, kernel.body, index)) != 1 or not _value_only(
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
        if not pointer.read_only or not ELEMENT.match(pointer.element):
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


def every_iteration(read: tree_sitter.Node) -> tree_sitter.Node | None:
    """The nearest `for` whose every iteration evaluates `read`: between them only statements,
    declarations, assignments, casts, parentheses and operators that evaluate both operands
    (never `&&`, `||`, `and`, `or`, `?:`, a call or another loop)."""
    node = read.parent
    while node is not None:
        if node.type == "for_statement":
            return node
        if node.type not in ALWAYS:
            return None
        if node.type == "binary_expression" and operator_type(node) not in BOTH_SIDES:
            return None
        node = node.parent
    return None


def full_loop(source: Source, kernel: Kernel, loop: tree_sitter.Node) -> tuple[str, str] | None:
    """(d, C as written) for `for (int d = 0; d < C; ++d)` whose body neither leaves nor
    touches d other than as a value, d declared nowhere else."""
    variable = unit_loop(source, loop)
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    if variable is None or init is None or condition is None or body is None:
        return None
    declarator = init.child_by_field_name("declarator")
    start = None if declarator is None else declarator.child_by_field_name("value")
    if declarator is None or not LOOP_TYPE.fullmatch(
        " ".join(source.data[init.start_byte : declarator.start_byte].decode().split())
    ):
        return None  # a narrow counter could wrap before reaching C
    operator = condition.child_by_field_name("operator")
    bound = condition.child_by_field_name("right")
    if start is None or source.text(start) != "0" or operator is None or bound is None:
        return None
    if source.text(operator) != "<" or not _pure(bound):
        return None
    if len(declarations(source, kernel.body, variable)) != 1:
        return None
    if not _value_only(source, body, variable) or any(n.type in LEAVES for n in walk(body)):
        return None
    return variable, source.text(bound)


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
            if squeeze(source.text(bare(width))) == columns and _pure(row):
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
        if not _value_only(source, kernel.body, name):
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
    if not _pure(value):
        return None
    remainder = bare(value)
    rows_node = remainder.child_by_field_name("right")
    if remainder.type != "binary_expression" or operator_type(remainder) != "%" or not rows_node:
        return None
    rows = source.text(rows_node)
    if not compile_time(rows, local) or identifiers(source, remainder) - {index} - _names(rows):
        return None
    return f"({kind})({source.text(value)})", rows


def declarations(source: Source, body: tree_sitter.Node, name: str) -> list[tree_sitter.Node]:
    """Every declaration of `name` under `body` (for-loop initializers and parameters of
    nested functions included)."""
    found = []
    for node in walk(body):
        if node.type in ("declaration", "parameter_declaration"):
            for part in [node, *node.named_children]:
                target = declared_name(part) if part.type != "identifier" else None
                if target is not None and source.text(target) == name:
                    found.append(node)
                    break
    return found


def _value_only(source: Source, body: tree_sitter.Node, name: str) -> bool:
    """Whether every use of `name` under `body` is as a value: in arithmetic, a comparison, a
    cast, an index or a declaration's initial value (through any parentheses); never assigned,
    updated (the `++d` of the for loop that declares d aside), passed to a function, bound to a
    reference or under `&`."""
    for node in walk(body):
        if node.type != "identifier" or source.text(node) != name:
            continue
        parent = node.parent
        if parent is not None and parent.child_by_field_name("declarator") == node:
            continue  # its declaration
        while parent is not None and parent.type == "parenthesized_expression":
            node, parent = parent, parent.parent
        if parent is None:
            return False
        if parent.type == "init_declarator":
            if parent.child_by_field_name("value") == node:
                continue
            return False
        if parent.type == "update_expression":
            loop = parent.parent
            if (
                loop is not None
                and loop.type == "for_statement"
                and loop.child_by_field_name("update") == parent
                and _declares_loop_variable(source, loop, name)
            ):
                continue
            return False
        if parent.type in VALUE and not (
            parent.type == "unary_expression" and source.text(parent)[:1] in ("&", "*")
        ):
            continue
        return False
    return True


def _declares_loop_variable(source: Source, loop: tree_sitter.Node, name: str) -> bool:
    init = loop.child_by_field_name("initializer")
    target = None if init is None else declared_name(init)
    return target is not None and source.text(target) == name


def _volatile(source: Source, kernel: Kernel) -> bool:
    """Whether a parameter is volatile: its reads cannot be made once per block."""
    parameters = kernel.node.child_by_field_name("declarator")
    return parameters is not None and "volatile" in source.text(parameters).split()


def math_call(source: Source, call: tree_sitter.Node) -> bool:
    function = call.child_by_field_name("function")
    return function is not None and bool(MATH.fullmatch(source.text(function)))


def _plain_cast(source: Source, cast: tree_sitter.Node) -> bool:
    """A cast to an arithmetic type (never to a reference or a class, which could bind)."""
    kind = cast.child_by_field_name("type")
    return kind is not None and bool(CAST_TYPE.fullmatch(source.words(kind)))


def as_value(read: tree_sitter.Node) -> bool:
    """Whether a read `P[...]` stands as a value (never assigned to, bound, passed or under &)."""
    node, parent = read, read.parent
    while parent is not None and parent.type == "parenthesized_expression":
        node, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression":
        return parent.child_by_field_name("right") == node
    if parent.type == "init_declarator":
        return parent.child_by_field_name("value") == node
    return parent.type in ("binary_expression", "cast_expression")


def compile_time(text: str, local: set[str]) -> bool:
    """Whether `text` is a literal or names only what the kernel neither takes nor declares."""
    names = _names(text)
    return (
        bool(text) and not names & (local | BUILTINS) and bool(re.fullmatch(r"[\w()+*\-/ ]+", text))
    )


def _names(text: str) -> set[str]:
    return {w for w in re.findall(r"[A-Za-z_]\w*", text)}


def _pure(node: tree_sitter.Node) -> bool:
    return all(n.type in PURE or not n.is_named for n in walk(node))


def bare(node: tree_sitter.Node) -> tree_sitter.Node:
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def _unroll_pragma(source: Source, node: tree_sitter.Node) -> bool:
    """`#pragma unroll [N]` (or `nounroll`), which changes no name."""
    return node.type == "preproc_call" and bool(
        re.fullmatch(r"#\s*pragma\s+(no)?unroll(\s+\w+)?", source.text(node).strip())
    )


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
