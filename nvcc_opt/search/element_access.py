"""How an element-wise body touches memory, for the vectorizing transforms (`vector_loads.py`
for a guarded body, `vector_strided.py` for a grid-stride loop): which pointer parameters it
reads and writes at exactly its own index `P[i]`, and that body copied with those accesses
replaced (by a vector's fields, or by another index). A leaf helper: it imports no transform.

An access plan exists only when `i` appears in the body as nothing but the whole subscript of a
pointer parameter, each pointer the body uses appears only there (not outside the body), a
written pointer is assigned once by a top-level `P[i] = ...;` and never read after it, and every
read stands as a value. Then the body computes element i from elements i alone.

For the body of a loop that declares `i` (`loop=`), two forms more: a subscript `P[b + i]` (or
`P[i + b]`) with an offset `b` the same for every access of P (the caller proves it does not
change within the loop: `Access.bases`), and a pointer whose elements are const used outside the
loop too (it is only read; a written pointer still appears nowhere else). A later loop's own `i`
is another variable.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    PointerParam,
    Source,
    declared_name,
    edited,
    identifiers,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts, changed_names
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

BOUND = re.compile(r"[\w\s()+\-*/.]+")  # a bound `n` evaluated once: no call, no memory read
DEREFERENCE = re.compile(r"(^|[-+*/(])\s*\*")  # a `*` with no value before it: `*p`, `n * *p`
Replacement = tuple[int, int, str]  # (start byte, end byte, new text) in the source
P = TypeVar("P")


def rewrite_kernels(
    code: str,
    facts: Facts,
    plan: Callable[[Source, Kernel, Facts], P | None],
    edit: Callable[[Source, P, set[str]], Edit],
    barriers: bool = False,
) -> str | None:
    """`code` with `edit` applied to every kernel `plan` accepts (of the kernels whose launches
    are all found and pass distinct pointers), or None; never where the region defines a name
    the rewrite writes."""
    source = Source(code)
    if defined_macros(source) & EMITTED:
        return None
    used = taken_names(source)
    edits = []
    for kernel in candidate_kernels(source, facts, barriers):
        found = plan(source, kernel, facts)
        if found is not None:
            edits.append(edit(source, found, used))
    return edited(code, source, edits)


def element_wise(
    source: Source, rest: list[tree_sitter.Node], offsets: tuple[tree_sitter.Node, ...] = ()
) -> bool:
    """Whether the statements hold no loop, no jump, no call but math and no thread or block
    index: each runs once for its element, whichever thread runs it. Inside `offsets` (the
    `b` of `P[b + i]`, which the caller judges) indexes may appear."""
    inside = [n for s in rest for n in walk(s)]
    if not rest or any(n.type in LOOPS or n.type in LEAVES for n in inside):
        return False
    if any(n.type == "call_expression" and not math_call(source, n) for n in inside):
        return False
    spans = [(o.start_byte, o.end_byte) for o in offsets]
    return not any(
        n.type == "identifier"
        and source.text(n) in BUILTINS
        and not any(a <= n.start_byte < b for a, b in spans)
        for n in inside
    )


COMPOUND = {"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}


@dataclass(frozen=True)
class Access:
    element: str  # the one scalar type every accessed pointer has (a key of VECTOR)
    reads: dict[str, list[tree_sitter.Node]]  # pointer -> its `P[i]` reads (may be none)
    writes: dict[str, tree_sitter.Node]  # pointer -> the `P[i]` its one statement assigns
    # pointer -> its `P[i] op= E` assignment: a read of P[i] and its write at once
    compound: dict[str, tree_sitter.Node] = field(default_factory=dict)
    # pointer -> the offset b of its `P[b + i]` subscripts, as written (none: `P[i]`)
    bases: dict[str, str] = field(default_factory=dict)
    base_nodes: tuple[tree_sitter.Node, ...] = ()  # every offset expression, for the caller

    def at(self, name: str) -> str:
        """Where pointer `name`'s element i lives, as a pointer: `P` or `(P + (b))`."""
        base = self.bases.get(name)
        return name if base is None else f"({name} + ({base}))"


def access(
    source: Source,
    kernel: Kernel,
    facts: Facts,
    index: str,
    rest: list[tree_sitter.Node],
    loop: tree_sitter.Node | None = None,
) -> Access | None:
    """The reads and writes of `rest` at index `index`, or None (see the module's text)."""
    pointers = {p.name: p for p in kernel.pointers}
    offsets: dict[str, tuple[str, tree_sitter.Node]] = {}
    found = _accesses(source, kernel, index, pointers, rest, loop, offsets)
    if not found or (loop is not None and _written_elsewhere(source, kernel, found, rest)):
        return None
    kinds = {facts.scalar(pointers[name].element) for name in found}
    if len(kinds) != 1 or next(iter(kinds)) not in VECTOR:
        return None
    reads: dict[str, list[tree_sitter.Node]] = {}
    writes: dict[str, tree_sitter.Node] = {}
    compound: dict[str, tree_sitter.Node] = {}
    top = {s.start_byte for s in rest}
    for name, nodes in found.items():
        for node in nodes:
            parent = node.parent
            operator = _top_assignment(source, node, top)
            if operator is not None and name not in writes:
                writes[name] = node
                if operator in COMPOUND and parent is not None:
                    compound[name] = parent
                    reads.setdefault(name, [])
                elif operator != "=":
                    return None
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
    bases = {name: text for name, (text, _) in offsets.items()}
    nodes = [n for rs in found.values() for r in rs if (n := _offset(source, r, index))]
    return Access(next(iter(kinds)), reads, writes, compound, bases, tuple(nodes) if bases else ())


def _written_elsewhere(
    source: Source,
    kernel: Kernel,
    found: dict[str, list[tree_sitter.Node]],
    rest: list[tree_sitter.Node],
) -> bool:
    """Whether a pointer the loop accesses and whose elements are not const appears outside
    the loop's body (a write there, or a read another thread's rewritten write could race)."""
    start, end = rest[0].start_byte, rest[-1].end_byte
    pointers = {p.name: p for p in kernel.pointers}
    loose = {name for name in found if not pointers[name].const}
    return any(
        n.type == "identifier" and source.text(n) in loose and not start <= n.start_byte < end
        for n in walk(kernel.body)
    )


def _top_assignment(source: Source, node: tree_sitter.Node, top: set[int]) -> str | None:
    """The operator of the statement `node = ...;` or `node op= ...;` when it is one of the
    body's top-level statements, else None."""
    parent = node.parent
    if (
        parent is None
        or parent.type != "assignment_expression"
        or parent.child_by_field_name("left") != node
        or parent.parent is None
        or parent.parent.type != "expression_statement"
        or parent.parent.start_byte not in top
    ):
        return None
    return source.text(parent.child_by_field_name("operator") or parent)


def _accesses(
    source: Source,
    kernel: Kernel,
    index: str,
    pointers: dict[str, PointerParam],
    rest: list[tree_sitter.Node],
    loop: tree_sitter.Node | None,
    offsets: dict[str, tuple[str, tree_sitter.Node]],
) -> dict[str, list[tree_sitter.Node]] | None:
    """Pointer -> its `P[i]` subscripts in the rest (and, for a loop's body, `P[b + i]`, each
    pointer's offset put in `offsets`); None when i or a pointer the rest uses is used any other
    way (i in arithmetic, `P[i + 1]`, a pointer outside the rest, two offsets for one pointer)."""
    start, end = rest[0].start_byte, rest[-1].end_byte
    found: dict[str, list[tree_sitter.Node]] = {}
    forms: dict[str, str] = {}  # pointer -> its offset as written, "" for `P[i]`
    for node in walk(kernel.body):
        if node.type != "identifier":
            continue
        name = source.text(node)
        inside = start <= node.start_byte < end
        if name == index and inside:
            subscript = _subscript_of_index(source, node, index, loop is not None)
            if subscript is None:
                return None
            array = subscript.child_by_field_name("argument")
            if array is None or source.text(array) not in pointers:
                return None
        elif name in pointers and inside:
            subscript = node.parent
            if (
                subscript is None
                or subscript.type != "subscript_expression"
                or subscript.child_by_field_name("argument") != node
            ):
                return None
            offset = _offset(source, subscript, index) if loop is not None else None
            if _subscript_index(source, subscript) != index and offset is None:
                return None
            form = "" if offset is None else re.sub(r"\s+", " ", source.text(offset)).strip()
            if forms.setdefault(name, form) != form:
                return None  # two offsets for one pointer (`P[i]` and `P[b + i]`, ...)
            if offset is not None:
                offsets[name] = (form, offset)
            found.setdefault(name, []).append(subscript)
        elif loop is not None and not loop.start_byte <= node.start_byte < loop.end_byte:
            continue  # outside the loop: another i, or a pointer _written_elsewhere judges
        elif name in pointers or (name == index and node.start_byte >= end):
            return None
    return found


def _subscript_index(source: Source, subscript: tree_sitter.Node) -> str | None:
    """The text of the one index of `P[...]`, without parentheses."""
    indices = subscript.child_by_field_name("indices")
    if indices is None or len(indices.named_children) != 1:
        return None
    return source.text(bare(indices.named_children[0]))


def _offset(source: Source, subscript: tree_sitter.Node, index: str) -> tree_sitter.Node | None:
    """b of `P[b + i]` or `P[i + b]` (b free of i), else None."""
    indices = subscript.child_by_field_name("indices")
    if indices is None or len(indices.named_children) != 1:
        return None
    inner = bare(indices.named_children[0])
    operator = inner.child_by_field_name("operator")
    if inner.type != "binary_expression" or operator is None or source.text(operator) != "+":
        return None
    left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
    if left is None or right is None:
        return None
    for mine, other in ((right, left), (left, right)):
        if source.text(bare(mine)) == index and index not in identifiers(source, other):
            return other
    return None


def _value(source: Source, read: tree_sitter.Node) -> bool:
    """A read standing as a value: as `as_value` says, or a branch of `?:`, or under a unary
    sign or negation, or an argument of a math function (which takes its arguments by value)."""
    parent = read.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if parent is not None and parent.type in ("conditional_expression", "unary_expression"):
        return True  # `c ? P[i] : ...`, `-P[i]`, `!P[i]`, `~P[i]` (`&` and `*` are not unary here)
    if parent is not None and parent.type == "argument_list" and parent.parent is not None:
        return parent.parent.type == "call_expression" and math_call(source, parent.parent)
    return as_value(read)


def _subscript_of_index(
    source: Source, node: tree_sitter.Node, index: str, offsets: bool = False
) -> tree_sitter.Node | None:
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if offsets and parent is not None and parent.type == "binary_expression":
        parent = parent.parent  # `b + i`: _offset checks its shape
        while parent is not None and parent.type == "parenthesized_expression":
            parent = parent.parent
    if parent is None or parent.type != "subscript_argument_list":
        return None
    subscript = parent.parent
    return subscript if subscript is not None and subscript.type == "subscript_expression" else None


def uniform(
    source: Source, kernel: Kernel, at: tree_sitter.Node, text: str, allowed: set[str]
) -> bool:
    """Whether `text` (a bound n, an offset b) has one value for every thread that shares the
    elements: free of memory reads and calls, and so are the values of the local names it uses
    (declared once before `at`, never changed; followed through their values); of the builtin
    indexes and extents, only those `allowed`. Parameters and names the kernel does not declare
    (globals, constants, types in casts) are the same for every thread."""
    changed = changed_names(source, kernel.body)
    seen: set[str] = set()
    todo = [text]
    while todo:
        current = todo.pop()
        names = free_names(current)
        if not BOUND.fullmatch(current) or names & (BUILTINS - allowed) or names & changed:
            return False
        if DEREFERENCE.search(current):
            return False  # `*count`: a memory read
        for name in names - seen - set(kernel.params):
            seen.add(name)
            values = declared_values(source, kernel, name)
            declared = any(
                n.type == "declaration" and (d := declared_name(n)) is not None
                and source.text(d) == name
                for n in walk(kernel.body)
            )  # fmt: skip
            if not values and not declared:
                continue  # not the kernel's: a global, a constant, a type in a cast
            if len(values) != 1 or values[0] is None or values[0].start_byte > at.start_byte:
                return False
            todo.append(source.text(values[0]))
    return True


def declared_values(source: Source, kernel: Kernel, name: str) -> list[tree_sitter.Node | None]:
    """The initial values of every declaration of `name` in the kernel (None: none given)."""
    return [
        n.child_by_field_name("value")
        for n in walk(kernel.body)
        if n.type == "init_declarator"
        and (d := n.child_by_field_name("declarator")) is not None
        and source.text(d) == name
    ]


def free_names(text: str) -> set[str]:
    """The names in `text`, not the fields after a `.` (`blockIdx.x` names blockIdx only)."""
    return set(re.findall(r"(?<![.\w])[A-Za-z_]\w*", text))
