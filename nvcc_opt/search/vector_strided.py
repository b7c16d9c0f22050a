"""Vectorized loads and stores for element-wise grid-stride loops: the loop steps over vectors
of W consecutive elements, read and written 16 bytes at a time (`float4`, `int4`, `double2`)
where every pointer is aligned, then over the last elements one at a time.

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
anywhere among the kernel's top-level statements; nothing outside it may use those pointers.
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
    copy,
    element_wise,
    rewrite_kernels,
    scalar,
    vectors,
)
from nvcc_opt.search.kernel_facts import (
    CASTS,
    Facts,
    changed_names,
    is_global_index,
    loop_header,
    statement_text,
    statements,
)

STRIDES = {"gridDim.x*blockDim.x", "blockDim.x*gridDim.x"}


@dataclass(frozen=True)
class Plan:
    loop: tree_sitter.Node  # the for statement, replaced whole
    index: str  # i
    start: str  # the global index, as written
    stride: str  # the grid's thread count, as written
    bound: str  # n as written
    rest: list[tree_sitter.Node]  # the loop's body statements
    access: Access


def vector_loads_strided(code: str, facts: Facts) -> str | None:
    return rewrite_kernels(code, facts, _plan, _edit)


def _plan(source: Source, kernel: Kernel, facts: Facts) -> Plan | None:
    loops = [s for s in statements(kernel.body) if s.type == "for_statement"]
    if len(loops) != 1:
        return None
    loop = loops[0]
    header = _header(source, kernel, loop)
    body = loop.child_by_field_name("body")
    if header is None or body is None:
        return None
    index, start, bound, stride = header
    rest = statements(body)
    if not element_wise(source, rest):
        return None
    inside = [n for s in rest for n in walk(s)]
    declared = {
        source.text(name)
        for n in inside
        if n.type in ("declaration", "init_declarator") and (name := declared_name(n)) is not None
    }
    outer = {m for s in rest for m in modified(source, s)} - declared
    found = access(source, kernel, facts, index, rest)
    if found is None or outer - set(found.writes):
        return None  # a name carried from one element to the next (a sum, a counter)
    if _names(bound) & {*found.reads, *found.writes}:
        return None
    return Plan(loop, index, start, stride, bound, rest, found)


def _names(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def _header(
    source: Source, kernel: Kernel, loop: tree_sitter.Node
) -> tuple[str, str, str, str] | None:
    """(i, start, n, stride) of `for (T i = start; i < n; i += stride)`, start the global x
    index and stride the grid's thread count along x; None for any other loop."""
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
    if step is None or not _is(source, kernel, loop, changed, start, is_global_index):
        return None
    if not _is(source, kernel, loop, changed, step, lambda t: t in STRIDES):
        return None
    if _names(bound) & changed:
        return None  # n changes in the kernel: the rewrite reads it once
    return index, start, bound, step


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
    values = [
        n.child_by_field_name("value")
        for n in walk(kernel.body)
        if n.type == "init_declarator"
        and (d := n.child_by_field_name("declarator")) is not None
        and source.text(d) == name
    ]
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
        f"// nvcc-opt: the grid-stride loop over vectors of {width} consecutive elements, loaded"
        " and stored 16 bytes at a time where aligned, then the last elements one at a time",
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
