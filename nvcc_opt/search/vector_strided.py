"""Vectorized loads and stores for element-wise grid-stride and block-stride loops: the loop
steps over vectors of W consecutive elements, read and written 16 bytes at a time (`float4`,
`int4`, `double2`) where every pointer is aligned, then over the last elements one at a time.

`for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
y[i] = a * x[i] + y[i];` moves one element per array per iteration. Rewritten, thread t takes
the vectors t, t + T, t + 2T, ... (T the grid's thread count) below n / W, each vector the W
elements W*v ... W*v + W - 1, then the elements from (n / W) * W on, t + T apart; when a pointer
is not 16-byte aligned (checked at run time: an offset into an array may not be), the loop runs
as written. Every element below n is computed exactly once, as before, by another thread.

That is the same computation when each element's body depends on that element alone, which is
what the access plan proves (`element_access.py`: the loop variable appears only as the whole
subscript `P[i]` of pointer parameters of one element type, each read as a value, each output
written once by a top-level `P[i] = ...;` and not read after it), with the body holding no
loop, jump, thread or block index and no call but math, assigning no name declared outside it
(nothing is carried from one element to the next), and every launch passing distinct pointers.
The loop must start at the grid's global x index and step by the grid's thread count along x
(written directly, in any order and with integer casts, or through names declared once with
those values and never changed), bounded by `i < n` with n free of memory reads. It may sit
anywhere among the kernel's top-level statements, after no jump (a thread that returned early
would leave its elements to no one: the rewrite deals elements to threads differently); a
pointer it writes appears nowhere else, one whose elements are const may be read elsewhere.

A block-stride loop (`for (int j = threadIdx.x; j < n; j += blockDim.x)`, the loop of row
kernels: softmax, normalization, a row's scale) is the same with the block for the grid: each
block covers its own n elements, T its thread count. Its subscripts may carry an offset,
`P[row * n + j]`, the same for every access of P, free of memory reads, of the thread index and
of names that change in the kernel (`blockIdx` is allowed: the block stays the same); the
alignment is then checked on `P + offset`. A grid-stride loop's offsets hold no index at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    declared_name,
    fresh_name,
    indentation,
    modified,
    squeeze,
    walk,
)
from nvcc_opt.search.element_access import (
    BOUND,
    VECTOR,
    Access,
    access,
    declared_values,
    element_wise,
    free_names,
    rewrite_kernels,
    uniform,
)
from nvcc_opt.search.element_vectors import copy, scalar, vectors
from nvcc_opt.search.kernel_facts import (
    CASTS,
    Facts,
    changed_names,
    is_global_index,
    loop_header,
    statement_text,
    statements,
)
from nvcc_opt.search.read_patterns import LEAVES

STRIDES = {"gridDim.x*blockDim.x", "blockDim.x*gridDim.x"}
# (start, stride) of a block-stride loop, squeezed and without integer casts
BLOCK_START, BLOCK_STRIDE = "threadIdx.x", "blockDim.x"
GRID, BLOCK = "grid", "block"


@dataclass(frozen=True)
class Plan:
    loop: tree_sitter.Node  # the for statement, replaced whole
    index: str  # i
    start: str  # the global index, as written
    stride: str  # the grid's thread count, as written
    bound: str  # n as written
    rest: list[tree_sitter.Node]  # the loop's body statements
    access: Access
    over: str = GRID  # GRID or BLOCK: whose threads share the elements


def vector_loads_strided(code: str, facts: Facts) -> str | None:
    return rewrite_kernels(code, facts, _plan, _edit, barriers=True)


def _plan(source: Source, kernel: Kernel, facts: Facts) -> Plan | None:
    """The first top-level loop of the kernel that can be rewritten."""
    loops = [s for s in statements(kernel.body) if s.type == "for_statement"]
    return next((p for loop in loops if (p := _loop_plan(source, kernel, facts, loop))), None)


def _loop_plan(source: Source, kernel: Kernel, facts: Facts, loop: tree_sitter.Node) -> Plan | None:
    before = [n for n in walk(kernel.body) if n.start_byte < loop.start_byte]
    if any(n.type in LEAVES for n in before):
        return None  # a thread may never reach the loop
    header = _header(source, kernel, loop)
    body = loop.child_by_field_name("body")
    if header is None or body is None:
        return None
    index, start, bound, stride, over = header
    rest = statements(body)
    if not rest:
        return None
    found = access(source, kernel, facts, index, rest, loop)
    if found is None or not element_wise(source, rest, found.base_nodes):
        return None
    offsets = [source.text(o) for o in found.base_nodes]
    # in a grid-stride loop an element moves to another block: no block index either
    allowed = {"blockDim", "gridDim"} | ({"blockIdx"} if over == BLOCK else set())
    if not all(uniform(source, kernel, loop, t, allowed) for t in [bound, *offsets]):
        return None
    offset_names = {n for t in offsets for n in free_names(t)}
    if {p.name for p in kernel.pointers} & offset_names:
        return None
    inside = [n for s in rest for n in walk(s)]
    declared = {
        source.text(name)
        for n in inside
        if n.type in ("declaration", "init_declarator") and (name := declared_name(n)) is not None
    }
    outer = {m for s in rest for m in modified(source, s)} - declared
    if outer - set(found.writes):
        return None  # a name carried from one element to the next (a sum, a counter)
    if _names(bound) & {*found.reads, *found.writes}:
        return None
    if offset_names & declared:
        return None  # an offset that changes from one element to the next
    return Plan(loop, index, start, stride, bound, rest, found, over)


def _names(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def _header(
    source: Source, kernel: Kernel, loop: tree_sitter.Node
) -> tuple[str, str, str, str, str] | None:
    """(i, start, n, stride, GRID or BLOCK) of `for (T i = start; i < n; i += stride)`, start
    the global x index and stride the grid's thread count along x, or start the thread index
    and stride the block's size along x; None for any other loop."""
    header = loop_header(source, loop)
    if header is None or header.value is None or header.declarators != 1:
        return None
    index, condition = header.variable, header.condition
    left = condition.child_by_field_name("left")
    operator = condition.child_by_field_name("operator")
    right = condition.child_by_field_name("right")
    if left is None or operator is None or right is None or source.text(left) != index:
        return None
    bound = source.text(right)
    if source.text(operator) != "<" or not BOUND.fullmatch(bound) or index in _names(bound):
        return None
    step = _step(source, header.update, index)
    start = source.text(header.value)
    changed = changed_names(source, kernel.body)
    if step is None or _names(bound) & changed:
        return None  # n changes in the kernel: the rewrite reads it once
    if _is(source, kernel, loop, changed, start, is_global_index):
        if _is(source, kernel, loop, changed, step, lambda t: t in STRIDES):
            return index, start, bound, step, GRID
        return None
    block = _is(source, kernel, loop, changed, start, lambda t: t == BLOCK_START)
    if block and _is(source, kernel, loop, changed, step, lambda t: t == BLOCK_STRIDE):
        return index, start, bound, step, BLOCK
    return None


def _step(source: Source, update: tree_sitter.Node, index: str) -> str | None:
    """s of `i += s` or `i = i + s`."""
    if update.type != "assignment_expression":
        return None
    left, right = update.child_by_field_name("left"), update.child_by_field_name("right")
    operator = source.text(update.child_by_field_name("operator") or update)
    if left is None or right is None or source.text(left) != index:
        return None
    if operator == "+=":
        return source.text(right)
    if operator == "=" and right.type == "binary_expression":
        first, second = right.child_by_field_name("left"), right.child_by_field_name("right")
        plus = source.text(right.child_by_field_name("operator") or right) == "+"
        if plus and first is not None and second is not None and source.text(first) == index:
            return source.text(second)
    return None


def _is(
    source: Source,
    kernel: Kernel,
    loop: tree_sitter.Node,
    changed: set[str],
    text: str,
    shape: Callable[[str], bool],
) -> bool:
    """Whether `text` has the shape (a predicate on the squeezed text without integer casts),
    as written or as the value of a name declared once before the loop and never changed."""
    plain = CASTS.sub("", squeeze(text))
    if shape(plain) or shape(_unwrapped(plain)):
        return True
    if not re.fullmatch(r"[A-Za-z_]\w*", text.strip()):
        return False
    name = text.strip()
    values = declared_values(source, kernel, name)
    if len(values) != 1 or values[0] is None or values[0].start_byte > loop.start_byte:
        return False
    if name in kernel.params or name in changed:
        return False
    value = CASTS.sub("", squeeze(source.text(values[0])))
    return shape(value) or shape(_unwrapped(value))


def _unwrapped(text: str) -> str:
    """`(a*b)` -> `a*b` (one pair of outer parentheses that enclose the whole)."""
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for at, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and at < len(text) - 1:
                return text
        return text[1:-1]
    return text


def _edit(source: Source, plan: Plan, used: set[str]) -> Edit:
    width = VECTOR[plan.access.element][1]
    n, v, e = (fresh_name(f"nvcc_opt_{s}", used) for s in ("n", "v", "e"))
    used |= {n, v, e}
    vec = vectors(plan.access, used)
    pad = indentation(source, plan.loop).decode()
    start, stride = f"(long long)({plan.start})", f"(long long)({plan.stride})"
    lines = [
        f"// nvcc-opt: the {plan.over}-stride loop over vectors of {width} consecutive elements,"
        " loaded and stored 16 bytes at a time where aligned, then the last elements one at a"
        " time",
        f"if ({vec.aligned}) {{",
        f"  const long long {n} = (long long)({plan.bound});",
        f"  for (long long {v} = {start}; {v} < {n} / {width}; {v} += {stride}) {{",
        *("    " + line for line in vec.loads(v)),
        *vec.lanes(source, plan.rest, 4),
        *("    " + line for line in vec.stores(v)),
        "  }",
        f"  for (long long {e} = {n} / {width} * {width} + {start}; {e} < {n}; {e} += {stride}) {{",
        *copy(source, plan.rest, scalar(plan.access, e), 4),
        "  }",
        "} else {",
        *("  " + line for line in statement_text(source, plan.loop).split("\n")),
        "}",
    ]
    text = "\n".join(lines[:1] + [pad + line for line in lines[1:]])
    return Edit(plan.loop.start_byte, plan.loop.end_byte, text.encode())
