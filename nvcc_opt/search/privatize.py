"""Atomic adds onto a few addresses, privatized per block in shared memory.

`atomicAdd(&counters[i % kCounters], w[i])` from every thread makes all of a grid's threads
contend for kCounters addresses in global memory. With a copy of the counters in shared memory
per block, the contention stays inside the block, and each block adds its kCounters partial
sums to global memory once at the end.

The transform applies to a kernel whose every use of a pointer parameter P is the address of an
`atomicAdd(&P[e], v);` whose result is not used (a privatized add returns the block's count, not
the grid's). Where every index is `e % B`, B a compile-time constant (a literal or a name that is
not a parameter or local of the kernel), the shared copy has B counters; otherwise (a histogram's
`bins[values[i]]`) it has `GUARDED_SLOTS`. Either way each add checks its index: one inside the
copy goes to it, any other to P as before (`e % B` is negative for a negative signed e). The
flush adds only counters that are not zero, so it touches no address of P the original did not.
The kernel's statements run inside `do { ... } while (0)` with each `return;` as `break;` (so
every thread reaches the barriers), which needs every return outside loops and switches. The
order of the additions changes (as it does between runs of any atomic sum): the application's
tolerance must allow that, and benchmark_code checks it.
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    PointerParam,
    Source,
    calls_macro,
    edited,
    identifiers,
    indentation,
    modified,
    walk,
)
from nvcc_opt.search.kernel_facts import FLAT_THREAD, MACRO_RETURN, THREADS, Facts

LOOPS = ("for_statement", "while_statement", "do_statement", "switch_statement")
GUARDED_SLOTS = 1024  # counters of a shared copy whose index has no compile-time bound
AT = "nvcc_opt_at"


@dataclass(frozen=True)
class Add:
    """One `atomicAdd(&P[index], value);` statement."""

    statement: tree_sitter.Node
    address: tree_sitter.Node  # `&P[index]`
    index: tree_sitter.Node
    value: tree_sitter.Node


@dataclass(frozen=True)
class Target:
    pointer: PointerParam
    bound: str  # the shared copy's counters: B, or GUARDED_SLOTS
    adds: list[Add]


def shared_atomics(code: str, facts: Facts) -> str | None:
    source = Source(code)
    edits = []
    for kernel in source.kernels():
        target = _target(source, kernel)
        if target is not None and _returns_can_break(source, kernel):
            edits.append(
                Edit(kernel.body.start_byte, kernel.body.end_byte, _body(source, kernel, target))
            )
    return edited(code, source, edits)


def _target(source: Source, kernel: Kernel) -> Target | None:
    runtime = set(kernel.params) | modified(source, kernel.body)
    for pointer in kernel.pointers:
        uses = [
            n
            for n in walk(kernel.body)
            if n.type == "identifier" and source.text(n) == pointer.name
        ]
        adds = [_atomic_add(source, use) for use in uses]
        if not uses or any(add is None for add in adds):
            continue
        found = [add for add in adds if add is not None]
        bounds = {_bound(source, add.index, runtime) for add in found}
        bound = bounds.pop() if len(bounds) == 1 else None
        if bound is not None and not (bound.isdigit() and int(bound) > GUARDED_SLOTS):
            return Target(pointer, bound, found)  # still checked: `e % B` < 0 for a signed e < 0
        return Target(pointer, str(GUARDED_SLOTS), found)
    return None


def _atomic_add(source: Source, use: tree_sitter.Node) -> Add | None:
    """The add when `use` is P in `atomicAdd(&P[index], value);`, exactly so."""
    subscript = use.parent
    address = None if subscript is None else subscript.parent
    arguments = None if address is None else address.parent
    call = None if arguments is None else arguments.parent
    statement = None if call is None else call.parent
    if subscript is None or address is None or arguments is None or call is None:
        return None
    function = call.child_by_field_name("function")
    indices = subscript.child_by_field_name("indices")
    if (
        subscript.type != "subscript_expression"
        or subscript.child_by_field_name("argument") != use
        or address.type != "pointer_expression"
        or source.text(address)[:1] != "&"
        or call.type != "call_expression"
        or function is None
        or source.text(function) != "atomicAdd"
        or len(arguments.named_children) != 2
        or arguments.named_children[0] != address
        or statement is None
        or statement.type != "expression_statement"
        or indices is None
        or len(indices.named_children) != 1
    ):
        return None
    return Add(statement, address, indices.named_children[0], arguments.named_children[1])


def _bound(source: Source, index: tree_sitter.Node, runtime: set[str]) -> str | None:
    """B when `index` is `e % B` with B a compile-time constant, else None."""
    if index.type != "binary_expression":
        return None
    operator = index.child_by_field_name("operator")
    bound = index.child_by_field_name("right")
    if operator is None or bound is None or source.text(operator) != "%":
        return None
    if identifiers(source, bound) & runtime:
        return None
    return "".join(source.text(bound).split())


def _returns_can_break(source: Source, kernel: Kernel) -> bool:
    """Whether every `return` of the kernel can become `break` out of a `do { } while (0)`: none
    inside a loop, a switch or a lambda, and none hidden in a macro (a call of an upper-case
    name, or a `#define` with a `return` in the region), whose thread would skip the flush."""
    text = source.text(kernel.body)
    if "__syncthreads" in text or "__shared__" in text:
        return False
    if MACRO_RETURN.search(source.data.decode("utf-8", "replace")):
        return False
    for node in walk(kernel.body):
        if node.type == "lambda_expression":
            return False
        if calls_macro(source, node):
            return False
        if node.type != "return_statement":
            continue
        if node.named_children:
            return False
        parent = node.parent
        while parent is not None and parent != kernel.body:
            if parent.type in LOOPS:
                return False
            parent = parent.parent
    return True


def _body(source: Source, kernel: Kernel, target: Target) -> bytes:
    unit = indentation(source, kernel.body.named_children[0]).decode() or "  "
    kind, name, bound = target.pointer.element, target.pointer.name, target.bound
    private = f"nvcc_opt_{name}"
    first, *rest = _inner(source, kernel, target, private).split("\n")
    inner = "\n".join([first, *(unit + line if line else line for line in rest)])
    each = f"for (int nvcc_opt_k = {FLAT_THREAD}; nvcc_opt_k < ({bound}); nvcc_opt_k += {THREADS})"
    lines = [
        "{",
        f"{unit}// {name} privatized per block in shared memory: one global add per counter",
        f"{unit}__shared__ {kind} {private}[{bound}];",
        f"{unit}{each}",
        f"{unit * 2}{private}[nvcc_opt_k] = ({kind})0;",
        f"{unit}__syncthreads();",
        f"{unit}do {inner} while (0);",
        f"{unit}__syncthreads();",
        f"{unit}{each}",
        f"{unit * 2}if ({private}[nvcc_opt_k] != ({kind})0)",
        f"{unit * 3}atomicAdd(&{name}[nvcc_opt_k], {private}[nvcc_opt_k]);",
        "}",
    ]
    return "\n".join(lines).encode()


def _inner(source: Source, kernel: Kernel, target: Target, private: str) -> str:
    """The kernel's body with its atomics on the private copy (each index checked against its
    size) and `return;` as `break;`."""
    body = kernel.body
    edits: list[tuple[int, int, bytes]] = [
        (add.statement.start_byte, add.statement.end_byte, _guarded(source, add, target, private))
        for add in target.adds
    ]
    for node in walk(body):
        if node.type == "return_statement":
            edits.append((node.start_byte, node.end_byte, b"break;"))
    data = source.data[body.start_byte : body.end_byte]
    for start, end, text in sorted(edits, reverse=True):
        data = data[: start - body.start_byte] + text + data[end - body.start_byte :]
    return data.decode("utf-8")


def _guarded(source: Source, add: Add, target: Target, private: str) -> bytes:
    """`{ index once; inside the shared copy: add there, else to P as before }`."""
    name, value = target.pointer.name, source.text(add.value)
    return (
        f"{{ const long long {AT} = (long long)({source.text(add.index)}); "
        f"if ({AT} >= 0 && {AT} < {target.bound}) atomicAdd(&{private}[{AT}], {value}); "
        f"else atomicAdd(&{name}[{AT}], {value}); }}"
    ).encode()
