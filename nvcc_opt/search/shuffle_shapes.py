"""What both warp-shuffle rewrites (`shuffle.py`, `shuffle_scan.py`) read of a kernel: its
loops over a shared array one at a time, the array's element type when only indexing uses it,
the loop counter, and whether every thread of the block reaches the loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    declared_name,
    edited,
    extern_shared,
    identifiers,
    preceding_pragma,
    squeeze,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.launches import constant, definitions
from nvcc_opt.search.uniform_loops import enclosing_loops, is_uniform_loop

INTEGERS = {"int", "unsigned", "unsigned int", "long long", "unsigned long long"}
COUNTERS = ("int", "unsigned", "unsignedint")  # as squeezed
SHUFFLED = {"float", "double", *INTEGERS}
# (source, kernel, loop, block size, the facts with the code's own constants) -> the new loop
LoopRewrite = Callable[[Source, Kernel, tree_sitter.Node, int, Facts], "bytes | None"]


def each_loop(
    code: str, facts: Facts, fits: Callable[[int], bool], rewrite: LoopRewrite
) -> str | None:
    """`code` with every `for` loop of a kernel whose block size is known and `fits` replaced
    by what `rewrite` makes of it (None: left as it is)."""
    source = Source(code)
    known = replace(facts, names={**facts.names, **definitions(code)})
    edits = []
    for kernel in source.kernels():
        size = facts.block_sizes.get(kernel.name)
        if size is None or not fits(size):
            continue
        for loop in (n for n in walk(kernel.body) if n.type == "for_statement"):
            new = rewrite(source, kernel, loop, size, known)
            if new is not None:
                edits.append(Edit(loop.start_byte, loop.end_byte, new))
    return edited(code, source, edits)


def squeezed(source: Source, node: tree_sitter.Node | None) -> str:
    return "" if node is None else squeeze(source.text(node))


def int_counter(source: Source, loop: tree_sitter.Node) -> tuple[str, tree_sitter.Node] | None:
    """(name, initial value) of a loop `for (int name = value; ...)` (or `unsigned`)."""
    init = loop.child_by_field_name("initializer")
    declarator = None if init is None else init.child_by_field_name("declarator")
    if init is None or declarator is None or declarator.type != "init_declarator":
        return None
    value = declarator.child_by_field_name("value")
    if value is None or squeezed(source, init.child_by_field_name("type")) not in COUNTERS:
        return None
    return squeezed(source, declarator.child_by_field_name("declarator")), value


def returns_before(node: tree_sitter.Node, kernel: Kernel) -> bool:
    return any(
        n.type == "return_statement" and n.start_byte < node.start_byte for n in walk(kernel.body)
    )


def outside_fits(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, nested: bool = False
) -> bool:
    """What both rewrites need around the loop: every thread of a 1D block reaches it (no
    `return` before it, no y or z thread index or extent in the kernel; no enclosing loop, or
    where `nested`, one that every thread runs alike: uniform_loops) and no `#pragma` (an
    unroll) applies to it."""
    around = enclosing_loops(loop, kernel)
    if around and not (nested and len(around) == 1 and is_uniform_loop(source, kernel, around[0])):
        return False
    if returns_before(loop, kernel) or preceding_pragma(loop):
        return False
    if any(n.type in ("goto_statement", "labeled_statement") for n in walk(kernel.body)):
        return False  # a jump back is a loop no header shows
    text = "".join(source.text(kernel.body).split())
    return not any(f"{b}.{a}" in text for b in ("threadIdx", "blockDim") for a in ("y", "z"))


def shared_type(
    source: Source,
    kernel: Kernel,
    array: str,
    carried: set[str] = SHUFFLED,
    types: Mapping[str, str] | None = None,
) -> str | None:
    """The element type of `__shared__ T array[...]` declared in the kernel, as written, if it
    is one of `carried` (an alias through `types`: `Real_t` for double), and if that array is
    the only thing of this name in the kernel (no parameter, no other declaration shadowing it)
    and is only ever indexed (no pointer to it escapes)."""
    if not only_indexed(source, kernel, array) or named_in_macro(source, array):
        return None
    for node in walk(kernel.body):
        if node.type != "declaration":
            continue
        qualifiers = [source.text(c) for c in node.children if c.type == "type_qualifier"]
        declared = [c for c in node.named_children if c.type == "array_declarator"]
        if "__shared__" not in qualifiers or len(declared) != 1:
            continue
        name = declared[0].child_by_field_name("declarator")
        if name is None or source.text(name) != array:
            continue
        element = source.words(node.child_by_field_name("type") or node)
        return element if (types or {}).get(element, element) in carried else None
    return None


def named_in_macro(source: Source, name: str) -> bool:
    """Whether a macro of `source` names `name` in its body (`#define PEEK(j) part[j]`): a use
    through it is not seen as one."""
    for node in walk(source.root):
        if node.type in ("preproc_def", "preproc_function_def"):
            body = node.child_by_field_name("value")
            if body is not None and name in re.findall(r"[A-Za-z_]\w*", source.text(body)):
                return True
    return False


def only_indexed(source: Source, kernel: Kernel, array: str) -> bool:
    declarations = 0
    for node in walk(kernel.node):
        if node.type != "identifier" or source.text(node) != array:
            continue
        parent = node.parent
        if parent is not None and parent.type == "array_declarator":
            declarations += 1
        elif parent is None or parent.type != "subscript_expression" or parent.children[0] != node:
            return False  # a parameter, a pointer declared to it, the name passed or copied
        elif parent.parent is not None and parent.parent.type == "pointer_expression":
            return False  # `&buf[0]`: a pointer into it
    return declarations == 1 and _own_shared(source, kernel)


def _own_shared(source: Source, kernel: Kernel) -> bool:
    """Whether no other array may be the same memory as the kernel's shared arrays: every
    `extern __shared__` array is the same memory, so at most one may be declared outside the
    other kernels (in this kernel, a helper it may call, or at file scope)."""
    if not extern_shared(source):
        return True
    others = [k.node for k in source.kernels() if k.node != kernel.node]
    seen = [
        node
        for node in walk(source.root)
        if node.type == "declaration"
        and {"extern", "__shared__"} <= set(source.text(node).split("[")[0].split())
        and not any(o.start_byte <= node.start_byte < o.end_byte for o in others)
    ]
    return len(seen) == 1 and kernel.node.start_byte <= seen[0].start_byte < kernel.node.end_byte


def kernel_constant(
    source: Source, kernel: Kernel, node: tree_sitter.Node, names: Mapping[str, str]
) -> int | None:
    """The value of `node`, when it uses no name the kernel declares (a parameter or a local
    of the same name as a constant elsewhere is not that constant)."""
    if identifiers(source, node) & declared_in(source, kernel):
        return None
    return constant(source.text(node), names)


def declared_in(source: Source, kernel: Kernel) -> set[str]:
    found = set(kernel.params)
    for node in walk(kernel.body):
        target = (
            declared_name(node)
            if node.type in ("init_declarator", "declaration", "array_declarator")
            else None
        )
        if target is not None:
            found.add(source.text(target))
    return found
