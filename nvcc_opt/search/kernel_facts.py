"""The kernel facts and shape helpers the transforms share (a leaf of `search/`: every transform
module may import it; no transform imports another, and only the registry, `transforms.py`,
imports them all).

- `Facts`: what the policy found out about the region's kernels outside their own code.
- Thread-index shapes: the global index `blockIdx.x * blockDim.x + threadIdx.x` in any order and
  with casts, a block's flat thread number and size, the guard `if (i < n)` around a body.
- Statement helpers: a unit-stride loop, a statement's text re-indented.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import tree_sitter

from nvcc_opt.search.cuda import Kernel, Source, indentation, squeeze, walk


@dataclass(frozen=True)
class Facts:
    """What the policy found out about the region's kernels outside their own code."""

    block_sizes: Mapping[str, int] = field(default_factory=dict)  # every launch agrees
    no_alias: frozenset[str] = frozenset()  # every launch found, none passes a pointer twice
    names: Mapping[str, str] = field(default_factory=dict)  # constants defined elsewhere
    types: Mapping[str, str] = field(default_factory=dict)  # typedef/using name -> builtin type
    # helper function -> the argument positions it cannot write through (signatures.py)
    readonly_params: Mapping[str, frozenset[int]] = field(default_factory=dict)
    # a type name kernels declare pointer parameters with -> its pointee (pointer_aliases.py)
    pointer_aliases: Mapping[str, str] = field(default_factory=dict)

    def scalar(self, element: str) -> str:
        """A pointer's element type with `const`/`volatile` dropped and a type alias the policy
        found (`typedef double Real_t;`) replaced by its builtin type; else the words as given."""
        words = [w for w in element.split() if w not in ("const", "volatile")]
        text = " ".join(words)
        return self.types.get(text, text)


# Each thread of a block of any shape clears and flushes its share of the counters once.
FLAT_THREAD = "(int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
THREADS = "(int)(blockDim.x * blockDim.y * blockDim.z)"
MACRO_RETURN = re.compile(r"^[ \t]*#[ \t]*define\b[^\n]*\breturn\b", re.MULTILINE)
WARP = 32
AXES = ("x", "y", "z")
# What reads memory, or may: an expression holding one may differ from thread to thread and from
# one pass to the next (a bound, a guard).
MEMORY_READS = frozenset(
    {"subscript_expression", "pointer_expression", "call_expression", "field_expression"}
)
# Calls of math that neither touches memory nor leaves the thread (arguments taken by value).
PURE_CALL = re.compile(
    r"(std::)?(f?(min|max|abs)f?|r?sqrtf?|fmaf?|(exp|exp2|expm1|log|log2|log10|log1p|sin|cos|tan"
    r"|sinh|cosh|tanh|asin|acos|atan|atan2|pow|floor|ceil|trunc|round|rint|cbrt|hypot|erf|erfc"
    r"|copysign|fdim|fmod)f?|__f(add|sub|mul|div|ma)_r[nzud]|__(exp|log|sin|cos|pow)f|__ldg)"
)
CASTS = re.compile(r"\((long|longlong|size_t|int64_t|uint64_t|unsignedlong|unsigned|int)\)")
INDEX_TYPE_WORDS = {
    "const", "unsigned", "signed", "int", "long", "short", "size_t", "auto", "ptrdiff_t",
    "int32_t", "uint32_t", "int64_t", "uint64_t", "std::size_t",
}  # fmt: skip


def statements(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    if node.type == "compound_statement":
        return [c for c in node.named_children if c.type != "comment"]
    return [node]


def is_global_index(text: str, axis: str = "x") -> bool:
    """Whether `text` is `blockIdx.x * blockDim.x + threadIdx.x` (any order, integer casts),
    or the same along `axis` ("y", "z")."""
    block, size, thread = f"blockIdx.{axis}", f"blockDim.{axis}", f"threadIdx.{axis}"
    forms = {f"{b}*{d}+{thread}" for b, d in ((block, size), (size, block))}
    forms |= {f"{thread}+{b}*{d}" for b, d in ((block, size), (size, block))}
    return CASTS.sub("", squeeze(text)) in forms


def global_index_name(source: Source, node: tree_sitter.Node, axis: str = "x") -> str | None:
    """`i` when `node` is `T i = blockIdx.x * blockDim.x + threadIdx.x;` (or along `axis`)."""
    declarator = node.child_by_field_name("declarator") if node.type == "declaration" else None
    value = None if declarator is None else declarator.child_by_field_name("value")
    name = None if declarator is None else declarator.child_by_field_name("declarator")
    if value is None or name is None or not is_global_index(source.text(value), axis):
        return None
    return source.text(name)


def split_at_loop(
    statements: list[tree_sitter.Node],
) -> tuple[list[tree_sitter.Node], tree_sitter.Node, list[tree_sitter.Node]] | None:
    """(declarations, the loop, what follows) for `decl...; for (...) ...; tail...` with one
    `for` loop, only declarations before it and something after it; None for anything else."""
    loops = [n for n, s in enumerate(statements) if s.type == "for_statement"]
    if len(loops) != 1:
        return None
    decls, loop, tail = statements[: loops[0]], statements[loops[0]], statements[loops[0] + 1 :]
    if not tail or any(d.type != "declaration" for d in decls):
        return None
    return decls, loop, tail


def index_guard(
    source: Source, node: tree_sitter.Node, row: str
) -> tuple[bool, list[tree_sitter.Node]] | None:
    """(True, the guarded statements) for `if (i < n) {...}`, (False, []) for
    `if (i >= n) return;`, None for anything else."""
    condition = node.child_by_field_name("condition") if node.type == "if_statement" else None
    consequence = node.child_by_field_name("consequence") if condition is not None else None
    test = condition.child_by_field_name("value") if condition is not None else None
    if consequence is None or test is None or node.child_by_field_name("alternative") is not None:
        return None
    left = test.child_by_field_name("left") if test.type == "binary_expression" else None
    operator = test.child_by_field_name("operator") if left is not None else None
    if left is None or operator is None or source.text(left) != row:
        return None
    if source.text(operator) in ("<", "<="):
        return True, statements(consequence)
    if source.text(operator) in (">=", ">") and consequence.type == "return_statement":
        return False, []
    return None


def guarded_rest(
    source: Source, body: list[tree_sitter.Node], row: str
) -> tuple[str, list[tree_sitter.Node]] | None:
    """For a body `[index, if (i >= n) return;, rest...]` or `[index, if (i < n) {rest}]`: the
    bound `n` as written and the statements the guard lets run; None for any other shape."""
    guarded = index_guard(source, body[1], row) if len(body) >= 2 else None
    if guarded is None:
        return None
    condition = body[1].child_by_field_name("condition")
    test = None if condition is None else condition.child_by_field_name("value")
    operator = None if test is None else test.child_by_field_name("operator")
    bound = None if test is None else test.child_by_field_name("right")
    if operator is None or bound is None or source.text(operator) not in ("<", ">="):
        return None
    wraps, inner = guarded
    if wraps:
        return (source.text(bound), inner) if len(body) == 2 else None
    return source.text(bound), body[2:]


@dataclass(frozen=True)
class LoopHeader:
    """`for (T variable = value; condition; update)` as the parse has it."""

    variable: str
    value: tree_sitter.Node | None
    condition: tree_sitter.Node
    update: tree_sitter.Node
    declarators: int  # how many names the initializer declares


def loop_header(source: Source, loop: tree_sitter.Node) -> LoopHeader | None:
    """The header of a `for` loop whose initializer declares its variable; None otherwise."""
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or condition is None or update is None or init.type != "declaration":
        return None
    declarator = init.child_by_field_name("declarator")
    name = None if declarator is None else declarator.child_by_field_name("declarator")
    if declarator is None or declarator.type != "init_declarator" or name is None:
        return None
    count = sum(c.type == "init_declarator" for c in init.named_children)
    value = declarator.child_by_field_name("value")
    return LoopHeader(source.text(name), value, condition, update, count)


def unit_loop(source: Source, loop: tree_sitter.Node) -> str | None:
    """The loop variable of `for (int j = a; j < b; ++j)` (also `<=`, `j++`, `j += 1`)."""
    header = loop_header(source, loop)
    if header is None:
        return None
    variable, condition = header.variable, header.condition
    steps = (f"++{variable}", f"{variable}++", f"{variable}+=1")
    if squeeze(source.text(header.update)) not in steps:
        return None
    left = condition.child_by_field_name("left")
    operator = condition.child_by_field_name("operator")
    if left is None or operator is None or source.text(left) != variable:
        return None
    return variable if source.text(operator) in ("<", "<=") else None


def statement_text(
    source: Source, node: tree_sitter.Node, line_of: tree_sitter.Node | None = None
) -> str:
    """The statement as written, its later lines without the indentation of the line it
    starts on (the line `line_of` starts, when given)."""
    base = indentation(source, line_of or node).decode()
    lines = source.text(node).split("\n")
    return "\n".join([lines[0], *(x[len(base) :] if x.startswith(base) else x for x in lines[1:])])


def for_loops(kernel: Kernel) -> list[tree_sitter.Node]:
    """The kernel's `for` loops, outermost first."""
    return [n for n in walk(kernel.body) if n.type == "for_statement"]


def thread_aliases(source: Source, kernel: Kernel, axis: str = "x") -> set[str]:
    """`threadIdx.x` and the names a kernel gives it once and never changes (`unsigned tid =
    threadIdx.x;`): declared once in the kernel, not a parameter, never assigned, updated,
    taken by address or passed to a call by name (which could take it by reference)."""
    return builtin_aliases(source, kernel, f"threadIdx.{axis}")


def builtin_aliases(source: Source, kernel: Kernel, builtin: str) -> set[str]:
    """`builtin` (`threadIdx.x`, `blockDim.x`) and the names a kernel gives it as
    `thread_aliases` finds them (`const int local_size = blockDim.x;`), declared with a type
    that holds every value (an integer of 16 bits or more, `auto`)."""
    declared: dict[str, int] = {}
    values: dict[str, str] = {}  # name -> its declared value, squeezed, casts dropped
    for node in walk(kernel.body):
        parent = node.parent
        if (
            node.type == "identifier"
            and parent is not None
            and node == (parent.child_by_field_name("declarator"))
        ):  # any declaration of the name, with a value or not, in any scope
            declared[source.text(node)] = declared.get(source.text(node), 0) + 1
        if node.type == "init_declarator":
            name, value = node.child_by_field_name("declarator"), node.child_by_field_name("value")
            if name is None or name.type != "identifier" or value is None:
                continue
            kind = node.parent.child_by_field_name("type") if node.parent is not None else None
            if kind is None or not set(source.words(kind).split()) <= INDEX_TYPE_WORDS:
                continue  # `char c = threadIdx.x`, `bool b = ...`: not every index fits
            values[source.text(name)] = CASTS.sub("", squeeze(source.text(value)))
    changed = changed_names(source, kernel.body)
    kept = {builtin}
    while True:  # `int lid = threadIdx.x; int tid = lid;`: an alias of an alias too
        more = {
            a
            for a, value in values.items()
            if value in kept and declared[a] == 1 and a not in changed and a not in kernel.params
        }
        if more <= kept:
            return kept
        kept |= more


def changed_names(source: Source, node: tree_sitter.Node) -> set[str]:
    """The names under `node` that may change: assigned, updated, taken by address, or passed
    to a call by name (which could take them by reference)."""
    changed: set[str] = set()
    for n in walk(node):
        if n.type == "argument_list":
            changed |= {source.text(c) for c in n.named_children if c.type == "identifier"}
        elif n.type in ("assignment_expression", "update_expression", "pointer_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            taken = n.type != "pointer_expression" or source.text(n).startswith("&")
            if target is not None and target.type == "identifier" and taken:
                changed.add(source.text(target))
    return changed


def assignment(
    source: Source, node: tree_sitter.Node | None
) -> tuple[tree_sitter.Node, str, tree_sitter.Node] | None:
    """(left side, operator, right side) of `node` when it is an assignment (`=`, `+=`, ...) or a
    statement that holds exactly one (`a[i] += e;`); None otherwise."""
    if node is not None and node.type == "expression_statement":
        node = node.named_children[0] if len(node.named_children) == 1 else None
    if node is None or node.type != "assignment_expression":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    operator = node.child_by_field_name("operator")
    if left is None or right is None or operator is None:
        return None
    return left, source.text(operator), right
