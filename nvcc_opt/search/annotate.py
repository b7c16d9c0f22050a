"""Annotations of a kernel's own code: `__restrict__` and `const __restrict__` on pointer
parameters no launch aliases, `__ldg()` on their read-only loads, loop-invariant loads hoisted out
of their loops, and `__launch_bounds__` matching the launch's block size.

Each refuses what it can see is wrong: `__restrict__` or `__ldg` on pointers that a launch
passes twice (`Facts.no_alias` lists the kernels where every launch was found and none does),
or that the kernel writes through.
"""

from __future__ import annotations

import tree_sitter

from nvcc_opt.search.cuda import (
    LDG_TYPES,
    Edit,
    Source,
    edited,
    fresh_name,
    identifiers,
    indentation,
    modified,
    preceding_pragma,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts, for_loops


def restrict(code: str, facts: Facts) -> str | None:
    source = Source(code)
    edits = [
        Edit(p.star_end, p.star_end, b" __restrict__")
        for k in source.kernels()
        if k.name in facts.no_alias
        for p in k.pointers
        if not p.restrict
    ]
    return edited(code, source, edits)


def const_restrict(code: str, facts: Facts) -> str | None:
    source = Source(code)
    edits = []
    for kernel in source.kernels():
        if kernel.name not in facts.no_alias:
            continue
        for p in kernel.pointers:
            if not p.read_only or (p.const and p.restrict):
                continue
            if not p.const:
                edits.append(Edit(p.type_start, p.type_start, b"const "))
            if not p.restrict:
                edits.append(Edit(p.star_end, p.star_end, b" __restrict__"))
    return edited(code, source, edits)


def ldg(code: str, facts: Facts) -> str | None:
    source = Source(code)
    reads: list[tree_sitter.Node] = []
    for kernel in source.kernels():
        if kernel.name in facts.no_alias:
            reads += [
                r
                for p in kernel.pointers
                if _ldg_able(facts.scalar(p.element), p.read_only)
                for r in p.reads
            ]
    starts = {(r.start_byte, r.end_byte) for r in reads}

    def render(node: tree_sitter.Node) -> bytes:
        # The node's text with every read inside it (and itself) wrapped, innermost first.
        out, at = b"", node.start_byte
        for child in _outermost(node, starts, include_self=False):
            out += source.data[at : child.start_byte] + render(child)
            at = child.end_byte
        out += source.data[at : node.end_byte]
        return b"__ldg(&" + out + b")" if (node.start_byte, node.end_byte) in starts else out

    edits = [Edit(r.start_byte, r.end_byte, render(r)) for r in _outermost(source.root, starts)]
    return edited(code, source, edits)


def _ldg_able(element: str, read_only: bool) -> bool:
    return read_only and " ".join(element.split()) in LDG_TYPES


def _outermost(
    node: tree_sitter.Node, spans: set[tuple[int, int]], include_self: bool = True
) -> list[tree_sitter.Node]:
    if include_self and (node.start_byte, node.end_byte) in spans:
        return [node]
    found = []
    for child in node.children:
        found += _outermost(child, spans)
    return found


def launch_bounds(code: str, facts: Facts) -> str | None:
    source = Source(code)
    edits = [
        Edit(k.declarator_start, k.declarator_start, f"__launch_bounds__({threads}) ".encode())
        for k in source.kernels()
        if not k.launch_bounds and (threads := facts.block_sizes.get(k.name)) is not None
    ]
    return edited(code, source, edits)


def hoist(code: str, facts: Facts) -> str | None:
    """Loads of read-only data that do not change inside a loop, read once before it."""
    source = Source(code)
    edits: list[Edit] = []
    used = identifiers(source, source.root)
    for kernel in source.kernels():
        if kernel.name not in facts.no_alias:
            continue
        read_only = {p.name: p for p in kernel.pointers if p.read_only}
        taken: set[tuple[int, int]] = set()
        for loop in for_loops(kernel):
            if any(loop.start_byte < a < loop.end_byte for a, _ in taken):
                continue  # an enclosing loop's hoist already edits inside this one
            if any(a <= loop.start_byte < b for a, b in taken):
                continue
            changed = modified(source, loop)
            body = loop.child_by_field_name("body")
            if body is None:
                continue
            candidates: dict[str, list[tree_sitter.Node]] = {}
            for node in walk(body):
                base = node.child_by_field_name("argument")
                if node.type != "subscript_expression" or base is None:
                    continue
                pointer = read_only.get(source.text(base))
                if pointer is None or node not in pointer.reads:
                    continue
                if _invariant(source, node, changed):
                    candidates.setdefault(source.words(node), []).append(node)
            if not candidates:
                continue
            anchor = preceding_pragma(loop) or loop
            indent = indentation(source, anchor)
            declared = b""
            for text, nodes in candidates.items():
                pointer = read_only[text.split("[", 1)[0].strip()]
                name = fresh_name(f"{pointer.name}_hoisted", used)
                used.add(name)
                declared += f"const {pointer.element} {name} = {text};\n".encode() + indent
                edits += [Edit(n.start_byte, n.end_byte, name.encode()) for n in nodes]
            edits.append(Edit(anchor.start_byte, anchor.start_byte, declared))
            taken.add((loop.start_byte, loop.end_byte))
    return edited(code, source, edits)


def _invariant(source: Source, read: tree_sitter.Node, changed: set[str]) -> bool:
    index = read.child_by_field_name("indices") or read.child_by_field_name("index")
    if index is None:
        return False
    for node in walk(index):
        if node.type in ("call_expression", "assignment_expression", "update_expression"):
            return False
        if node.type == "subscript_expression":
            return False  # a load in the index: leave it to the compiler
        if node.type == "identifier" and source.text(node) in changed:
            return False
    return True
