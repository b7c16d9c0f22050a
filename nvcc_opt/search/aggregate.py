"""Atomic adds onto one address per warp, summed within the warp first (warp-aggregated atomics).

`atomicAdd(sum, x[i])` from every thread onto an address that is the same for the whole warp (a
total, a norm, an error, a count) makes every thread of the grid contend for one word: the
atomics run one after another. Summed within each warp by shuffles first, one lane adds the
warp's total: 32 times fewer atomics on the contended address.

Which lanes take part is read at run time (`__activemask()`), so the statement may sit anywhere,
under a branch or in a loop: where the active lanes are 0..k-1 (a whole warp, or the last warp of
a grid that stops at n), a tree of `__shfl_down_sync` over those k lanes sums them and lane 0
adds the total; any other set of lanes (a warp split by a branch) adds one by one, as before.
Each lane's value is added exactly once either way.

It applies to `atomicAdd(A, v);` whose result is not used (and not under `if (lane == 0)` or
another test of a thread index against zero: one lane per warp adds already), where A is `P`, `P +
e` or `&P[e]` for a pointer parameter P of int, unsigned, unsigned long long, float or double
elements that the kernel uses in no other way (no read of a partial sum), and A is the same for
every thread of a warp: it names only parameters the kernel never changes (never assigned, updated,
declared again, taken by address or passed to a call by name, which could take it by reference),
integer constants (the region's, or those found with `search`, whose values are numbers: `#define
tx threadIdx.x` is not one), `blockIdx`, `blockDim` and `gridDim`; no call, no assignment. A
file-scope variable could change between two lanes' reads, so an address that names one is left
alone. An int sum is added in unsigned arithmetic (it wraps as the hardware's atomics do, where a
signed overflow would be undefined). Float and double sums are added in another order (as any
atomic sum's order changes from run to run): the application's tolerance must allow that, and
benchmark_code checks it.
"""

from __future__ import annotations

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
    squeeze,
    walk,
)
from nvcc_opt.search.kernel_facts import FLAT_THREAD, Facts
from nvcc_opt.search.launches import constant, definitions

SHUFFLED = {"int", "unsigned", "unsigned int", "unsigned long long", "unsigned long long int"}
SHUFFLED |= {"float", "double"}
UNIFORM_BUILTINS = {"blockIdx", "blockDim", "gridDim", "warpSize"}
SIDE_EFFECTS = ("call_expression", "assignment_expression", "update_expression")


@dataclass(frozen=True)
class Add:
    statement: tree_sitter.Node  # `atomicAdd(A, v);`
    address: tree_sitter.Node
    value: tree_sitter.Node
    element: str


def warp_aggregate(code: str, facts: Facts) -> str | None:
    source = Source(code)
    known = {**facts.names, **definitions(code)}
    constants = {name for name, value in known.items() if constant(value, known) is not None}
    edits = []
    for kernel in source.kernels():
        used = identifiers(source, kernel.node)
        stems = ("add", "mask", "lane", "k", "other")
        names = {stem: fresh_name(f"nvcc_opt_{stem}", used) for stem in stems}
        edits += [
            Edit(a.statement.start_byte, a.statement.end_byte, _aggregated(source, a, names))
            for a in _adds(source, kernel, constants)
        ]
    return edited(code, source, edits)


def _adds(source: Source, kernel: Kernel, constants: set[str]) -> list[Add]:
    changed = _changed(source, kernel)
    uniform = (set(kernel.params) - changed) | UNIFORM_BUILTINS | (constants - changed)
    found: list[Add] = []
    for pointer in kernel.pointers:
        if pointer.element not in SHUFFLED or pointer.name in changed:
            continue
        uses = [
            n
            for n in walk(kernel.body)
            if n.type == "identifier" and source.text(n) == pointer.name
        ]
        adds = [_add(source, use, pointer, uniform) for use in uses]
        if uses and all(a is not None for a in adds):
            found += [a for a in adds if a is not None]
    threads = _thread_names(source, kernel)
    return [a for a in found if not _one_lane(source, kernel, a.statement, threads)]


def _thread_names(source: Source, kernel: Kernel) -> set[str]:
    """`threadIdx` and the locals declared from it (`int lane = threadIdx.x % 32;`)."""
    names = {"threadIdx"}
    for node in walk(kernel.body):
        if node.type != "init_declarator":
            continue
        name, value = node.child_by_field_name("declarator"), node.child_by_field_name("value")
        if name is not None and value is not None and identifiers(source, value) & names:
            names.add(source.text(name))
    return names


def _one_lane(
    source: Source, kernel: Kernel, statement: tree_sitter.Node, threads: set[str]
) -> bool:
    """Whether the add sits under `if (X == 0)` with X a thread index (`lane == 0`,
    `threadIdx.x == 0`): one lane per warp adds already, and aggregating gains nothing."""
    node = statement
    while node.parent is not None and node != kernel.body:
        parent = node.parent
        condition = (
            parent.child_by_field_name("condition") if parent.type == "if_statement" else None
        )
        if condition is not None and node == parent.child_by_field_name("consequence"):
            text = squeeze(source.text(condition)).strip("()")
            sides = text.split("==")
            if len(sides) == 2 and "0" in sides and identifiers(source, condition) & threads:
                return True
        node = parent
    return False


def _changed(source: Source, kernel: Kernel) -> set[str]:
    """Names the kernel's body may give another value in some thread: declared anywhere in it
    (a local, a lambda's parameter: any declarator), assigned or updated (through parentheses
    too), taken by address, or passed to a call by name (a reference parameter)."""
    names: set[str] = set()
    for node in walk(kernel.body):
        parent = node.parent
        if node.type == "identifier" and parent is not None:
            passed = parent.type == "argument_list" and not _atomic_arguments(source, parent)
            if node == parent.child_by_field_name("declarator") or passed:
                names.add(source.text(node))
        target = None
        if node.type == "assignment_expression":
            target = node.child_by_field_name("left")
        elif node.type == "update_expression":
            target = node.child_by_field_name("argument")
        elif node.type == "pointer_expression" and source.text(node)[:1] == "&":
            target = node.named_children[0] if node.named_children else None
        while target is not None and target.type == "parenthesized_expression":
            target = target.named_children[0] if target.named_children else None
        if target is not None and target.type == "identifier":
            names.add(source.text(target))
    return names


def _atomic_arguments(source: Source, arguments: tree_sitter.Node) -> bool:
    """Whether `arguments` are an `atomicAdd`'s (which takes its operands by value)."""
    call = arguments.parent
    function = None if call is None else call.child_by_field_name("function")
    return function is not None and source.text(function) == "atomicAdd"


def _add(
    source: Source,
    use: tree_sitter.Node,
    pointer: PointerParam,
    uniform: set[str],
) -> Add | None:
    """The add when `use` is P in the address of `atomicAdd(A, v);` and A is warp-uniform."""
    address = use
    while address.parent is not None and address.parent.type in (
        "subscript_expression",
        "subscript_argument_list",
        "pointer_expression",
        "binary_expression",
        "parenthesized_expression",
    ):
        address = address.parent
    arguments = address.parent
    call = None if arguments is None else arguments.parent
    statement = None if call is None else call.parent
    if arguments is None or call is None or statement is None:
        return None
    function = call.child_by_field_name("function")
    if (
        arguments.type != "argument_list"
        or len(arguments.named_children) != 2
        or arguments.named_children[0] != address
        or call.type != "call_expression"
        or function is None
        or source.text(function) != "atomicAdd"
        or statement.type != "expression_statement"
        or not _points_into(source, address, pointer.name)
        or not _uniform(source, address, uniform)
    ):
        return None
    return Add(statement, address, arguments.named_children[1], pointer.element)


def _points_into(source: Source, address: tree_sitter.Node, name: str) -> bool:
    """Whether `address` is `P`, `P + e`, `e + P` or `&P[e]` (parenthesized or not)."""
    while address.type == "parenthesized_expression" and address.named_children:
        address = address.named_children[0]
    text = source.text(address)
    if address.type == "identifier":
        return text == name
    if address.type == "binary_expression":
        operator = address.child_by_field_name("operator")
        sides = [address.child_by_field_name(f) for f in ("left", "right")]
        named = [s for s in sides if s is not None and s.type == "identifier"]
        return (
            operator is not None
            and source.text(operator) == "+"
            and [source.text(s) for s in named].count(name) == 1
        )
    if address.type == "pointer_expression" and text[:1] == "&" and address.named_children:
        inner = address.named_children[0]
        base = (
            inner.child_by_field_name("argument") if inner.type == "subscript_expression" else None
        )
        return base is not None and base.type == "identifier" and source.text(base) == name
    return False


def _uniform(source: Source, node: tree_sitter.Node, uniform: set[str]) -> bool:
    """Whether `node` has the same value in every thread of a warp: no side effect, and only
    names known to be the same for all (no thread index, no local)."""
    if any(n.type in SIDE_EFFECTS for n in walk(node)):
        return False
    return identifiers(source, node) <= uniform


def _line_indent(source: Source, node: tree_sitter.Node) -> str:
    """The whitespace that starts the line of `node`, also when the statement sits after an
    unbraced `if (...)` on that line (the block then lines up with that line, not column 0)."""
    line_start = source.data.rfind(b"\n", 0, node.start_byte) + 1
    line = source.data[line_start : node.start_byte]
    return line[: len(line) - len(line.lstrip(b" \t"))].decode()


def _aggregated(source: Source, add: Add, names: dict[str, str]) -> bytes:
    pad = _line_indent(source, add.statement)
    address = source.text(add.address)
    kind = "unsigned" if add.element == "int" else add.element  # wraps, as the atomics do
    total = f"(int){names['add']}" if add.element == "int" else names["add"]
    cast = f"({kind})" if kind == add.element else f"({kind})({add.element})"
    value, mask, lane, k = names["add"], names["mask"], names["lane"], names["k"]
    other = names["other"]
    lines = [
        "{  // the atomicAdd summed within the warp first: one atomic per warp",
        f"{pad}  {kind} {value} = {cast}({source.text(add.value)});",
        f"{pad}  const unsigned {mask} = __activemask();",
        f"{pad}  const int {lane} = {FLAT_THREAD} & 31;",
        f"{pad}  if (({mask} & ({mask} + 1u)) == 0u) {{  // lanes 0..k-1: a tree over them",
        f"{pad}    for (int {k} = 16; {k} > 0; {k} >>= 1) {{",
        f"{pad}      {kind} {other} = __shfl_down_sync({mask}, {value}, {k});",
        f"{pad}      if ({lane} + {k} < __popc({mask})) {value} += {other};",
        f"{pad}    }}",
        f"{pad}    if ({lane} == 0) atomicAdd({address}, {total});",
        f"{pad}  }} else {{",
        f"{pad}    atomicAdd({address}, {total});",
        f"{pad}  }}",
        f"{pad}}}",
    ]
    return "\n".join(lines).encode()
