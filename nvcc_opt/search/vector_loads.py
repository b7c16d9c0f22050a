"""Vectorized loads and stores for element-wise kernels: each thread handles W consecutive
elements, read and written 16 bytes at a time (`float4`, `int4`, `double2`) where aligned.

In `int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i];` each
thread moves one 4-byte element per array: one load instruction per element. Thread i takes
elements [W*i, W*i + W) instead: when all W are in range and every pointer is 16-byte aligned
(checked at run time: a kernel parameter from cudaMalloc is 256-byte aligned, a pointer offset
into an array may not be), one vector load per input array and one vector store per output,
the body computed per element on the loaded values; else (the tail, or a misaligned pointer)
the elements one at a time, as before. The index W*i is a multiple of W and the threads are
contiguous, so the vector at position i is exactly those elements.

The same elements are computed as before, with the same values: an element e is computed when
e < n and e < the launch's thread count along x (gridDim.x * blockDim.x), which is when the
original computed it; its statements run as written with `e` for `i`. It applies where the
kernel is `index; guard; rest` (`if (i < n) {rest}` or `if (i >= n) return; rest`), i is used
in the rest only as the whole index of `P[i]` for pointer parameters of one element type
(float, int or double), each such pointer is read as a value or written once by a top-level
`P[i] = ...;` with no read of it after that statement, the rest holds no loop, no jump, no
thread or block index and calls only math functions, and every launch found passes distinct
pointers (so a write through one cannot change what another reads). The kernel-wide refusals
are staging.py's. Threads past n/W now exit at once: fewer threads do the same work, which
benchmark_code times.
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
    fresh_name,
    identifiers,
    indentation,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts, global_index_name, guarded_rest, statements
from nvcc_opt.search.read_patterns import (
    BUILTINS,
    LEAVES,
    as_value,
    bare,
    candidate_kernels,
    defined_macros,
    math_call,
    taken_names,
)

VECTOR = {"float": ("::float4", 4), "int": ("::int4", 4), "double": ("::double2", 2)}
FIELDS = ("x", "y", "z", "w")
EMITTED = {*FIELDS, "float4", "int4", "double2", "reinterpret_cast", "gridDim", "blockDim"}
LOOPS = {"for_statement", "while_statement", "do_statement", "for_range_loop"}
BOUND = re.compile(r"[\w\s()+\-*/.]+")


@dataclass(frozen=True)
class Plan:
    index: str  # i
    bound: str  # n as written
    element: str
    rest: list[tree_sitter.Node]  # the statements the guard lets run
    reads: dict[str, list[tree_sitter.Node]]  # pointer -> its `P[i]` reads
    writes: dict[str, tree_sitter.Node]  # pointer -> the `P[i]` its one statement assigns
    replaced: tree_sitter.Node  # the first node replaced (the guard)


def vector_loads(code: str, facts: Facts) -> str | None:
    source = Source(code)
    if defined_macros(source) & EMITTED:
        return None
    used = taken_names(source)
    edits: list[Edit] = []
    for kernel in candidate_kernels(source, facts):
        plan = _plan(source, kernel, facts)
        if plan is not None:
            edits.append(_edit(source, plan, used))
    return edited(code, source, edits)


def _plan(source: Source, kernel: Kernel, facts: Facts) -> Plan | None:
    body = statements(kernel.body)
    index = global_index_name(source, body[0]) if len(body) >= 2 else None
    guarded = None if index is None else guarded_rest(source, body, index)
    if index is None or guarded is None or not guarded[1] or not BOUND.fullmatch(guarded[0]):
        return None
    bound, rest = guarded
    inside = [n for s in rest for n in walk(s)]
    if any(n.type in LOOPS or n.type in LEAVES for n in inside):
        return None
    if any(n.type == "call_expression" and not math_call(source, n) for n in inside):
        return None
    if any(identifiers(source, s) & BUILTINS for s in rest):
        return None
    pointers = {p.name: p for p in kernel.pointers}
    accesses = _accesses(source, kernel, index, pointers, rest)
    if not accesses:
        return None
    kinds = {facts.scalar(pointers[name].element) for name in accesses}
    if len(kinds) != 1 or next(iter(kinds)) not in VECTOR:
        return None
    reads: dict[str, list[tree_sitter.Node]] = {}
    writes: dict[str, tree_sitter.Node] = {}
    top = {s.start_byte for s in rest}
    for name, nodes in accesses.items():
        for node in nodes:
            parent = node.parent
            if (
                parent is not None
                and parent.type == "assignment_expression"
                and parent.child_by_field_name("left") == node
                and source.text(parent.child_by_field_name("operator") or parent) == "="
                and parent.parent is not None
                and parent.parent.type == "expression_statement"
                and parent.parent.start_byte in top
                and name not in writes
            ):
                writes[name] = node
            elif _value(source, node):
                reads.setdefault(name, []).append(node)
            else:
                return None
    for name, write in writes.items():
        statement = write.parent.parent if write.parent is not None else None
        end = write.end_byte if statement is None else statement.end_byte
        if pointers[name].const or any(r.start_byte > end for r in reads.get(name, [])):
            return None  # a read after the write would see the new value
    if not reads:
        return None
    element = next(iter(kinds))
    return Plan(index, bound, element, rest, reads, writes, body[1])


def _accesses(
    source: Source,
    kernel: Kernel,
    index: str,
    pointers: dict[str, PointerParam],
    rest: list[tree_sitter.Node],
) -> dict[str, list[tree_sitter.Node]] | None:
    """Pointer -> its `P[i]` subscripts in the rest; None when i or a pointer the rest uses is
    used any other way (i in arithmetic, `P[i + 1]`, a pointer outside the rest)."""
    start, end = rest[0].start_byte, rest[-1].end_byte
    found: dict[str, list[tree_sitter.Node]] = {}
    for node in walk(kernel.body):
        if node.type != "identifier":
            continue
        name = source.text(node)
        inside = start <= node.start_byte < end
        if name == index and inside:
            subscript = _subscript_of_index(source, node, index)
            if subscript is None:
                return None
            array = subscript.child_by_field_name("argument")
            if array is None or source.text(array) not in pointers:
                return None
        elif name in pointers and inside:
            subscript = node.parent
            indices = None if subscript is None else subscript.child_by_field_name("indices")
            if (
                subscript is None
                or subscript.type != "subscript_expression"
                or subscript.child_by_field_name("argument") != node
                or indices is None
                or len(indices.named_children) != 1
                or source.text(bare(indices.named_children[0])) != index
            ):
                return None
            found.setdefault(name, []).append(subscript)
        elif name in pointers or (name == index and node.start_byte >= end):
            return None
    return found


def _value(source: Source, read: tree_sitter.Node) -> bool:
    """A read standing as a value: as `as_value` says, or a branch of `?:`, or an argument of a
    math function (which takes its arguments by value)."""
    parent = read.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if parent is not None and parent.type == "conditional_expression":
        return True
    if parent is not None and parent.type == "argument_list" and parent.parent is not None:
        return parent.parent.type == "call_expression" and math_call(source, parent.parent)
    return as_value(read)


def _subscript_of_index(
    source: Source, node: tree_sitter.Node, index: str
) -> tree_sitter.Node | None:
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if parent is None or parent.type != "subscript_argument_list":
        return None
    subscript = parent.parent
    return subscript if subscript is not None and subscript.type == "subscript_expression" else None


def _edit(source: Source, plan: Plan, used: set[str]) -> Edit:
    vector, width = VECTOR[plan.element]
    total, first, k, e = (fresh_name(f"nvcc_opt_{s}", used) for s in ("threads", "first", "k", "e"))
    used |= {total, first, k, e}
    loaded = {name: fresh_name(f"nvcc_opt_in_{name}", used) for name in plan.reads}
    used |= set(loaded.values())
    stored = {name: fresh_name(f"nvcc_opt_out_{name}", used) for name in plan.writes}
    used |= set(stored.values())
    pad = indentation(source, plan.replaced).decode()
    names = sorted({*plan.reads, *plan.writes})
    aligned = " && ".join(f"reinterpret_cast<unsigned long long>({n}) % 16 == 0" for n in names)
    bound = f"(long long)({plan.bound})"
    lines = [
        f"// nvcc-opt: {width} consecutive elements per thread, loaded and stored 16 bytes at a"
        " time where all are in range and aligned, else one at a time",
        f"const long long {total} = (long long)gridDim.x * blockDim.x;",
        f"const long long {first} = (long long)({plan.index}) * {width};",
        f"if ({first} + {width} <= {bound} && {first} + {width} <= {total} && {aligned}) {{",
    ]
    lines += [
        f"  const {vector} {loaded[n]} = reinterpret_cast<const {vector}*>({n})[{plan.index}];"
        for n in sorted(plan.reads)
    ]
    lines += [f"  {vector} {stored[n]};" for n in sorted(plan.writes)]
    for lane in range(width):
        lines += ["  {", *_copy(source, plan, _lane(plan, loaded, stored, FIELDS[lane]), 4), "  }"]
    lines += [
        f"  reinterpret_cast<{vector}*>({n})[{plan.index}] = {stored[n]};"
        for n in sorted(plan.writes)
    ]
    lines += [
        "} else {",
        f"  for (int {k} = 0; {k} < {width}; ++{k}) {{",
        f"    const long long {e} = {first} + {k};",
        f"    if ({e} < {bound} && {e} < {total}) {{",
        *_copy(source, plan, _scalar(plan, e), 6),
        "    }",
        "  }",
        "}",
    ]
    text = "\n".join(lines[:1] + [pad + line for line in lines[1:]])
    end = plan.rest[-1].end_byte
    if plan.rest[0].start_byte < plan.replaced.end_byte:  # `if (i < n) {rest}`: the whole if
        end = plan.replaced.end_byte
    return Edit(plan.replaced.start_byte, end, text.encode())


def _lane(
    plan: Plan, loaded: dict[str, str], stored: dict[str, str], field: str
) -> list[tuple[int, int, str]]:
    out = [(r.start_byte, r.end_byte, f"{loaded[n]}.{field}") for n, rs in plan.reads.items()
           for r in rs]  # fmt: skip
    out += [(w.start_byte, w.end_byte, f"{stored[n]}.{field}") for n, w in plan.writes.items()]
    return out


def _scalar(plan: Plan, e: str) -> list[tuple[int, int, str]]:
    nodes = [*(r for rs in plan.reads.values() for r in rs), *plan.writes.values()]
    out = []
    for node in nodes:
        indices = node.child_by_field_name("indices")
        assert indices is not None
        inner = indices.named_children[0]
        out.append((inner.start_byte, inner.end_byte, e))
    return out


def _copy(
    source: Source, plan: Plan, replacements: list[tuple[int, int, str]], indent: int
) -> list[str]:
    """The rest's lines with `replacements` (absolute byte ranges) applied, indented."""
    start, end = plan.rest[0].start_byte, plan.rest[-1].end_byte
    data = source.data[start:end]
    for at, stop, text in sorted(replacements, reverse=True):
        data = data[: at - start] + text.encode() + data[stop - start :]
    base = indentation(source, plan.rest[0]).decode()
    lines = data.decode().split("\n")
    lines = [lines[0], *(x[len(base) :] if x.startswith(base) else x.lstrip() for x in lines[1:])]
    return [" " * indent + line for line in lines]
