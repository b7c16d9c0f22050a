"""A pass that undoes an earlier update replaced by restoring saved values: a kernel that shifts
thread-local arrays in place (`for (j..8) x[j] -= dt2 * xd[j];`), uses the shifted values, and
later shifts them back (`for (j..8) x[j] += dt2 * xd[j];`) pays the arithmetic twice; saving the
values in the first loop and restoring them in the second leaves only register copies, and gives
back the values exactly (the undo's rounding gone: results may differ in the last bits, as the
checks judge).

Done only where the second loop provably undoes the first and nothing between them could see the
difference:

- both loops have the same header (after renaming the index) and each body is only compound
  updates `a[j] += e;` / `a[j] -= e;` of arrays the kernel declares (one-dimensional, not
  `__shared__`), indexed by the loop index alone; the second updates the same arrays by the same
  expressions with the opposite operator;
- the expressions read only the kernel's own values and arrays (no global memory; calls only of
  math that takes values), never an updated array;
- between the loops (any statements, in the same block), no updated array and no name an
  expression reads is assigned, updated, declared again, taken by address or named bare except
  as a call argument the callee cannot write through (a value, or a pointer or array to const,
  as its declaration in the region or found by `search` says); no inline assembly, `goto` or
  lambda.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    edited,
    fresh_name,
    identifiers,
    indentation,
    preceding_pragma,
    squeeze,
    walk,
)
from nvcc_opt.search.kernel_facts import PURE_CALL, Facts, assignment, unit_loop

INVERSE = {"+=": "-=", "-=": "+="}
VALUE_NODES = {
    "identifier", "number_literal", "binary_expression", "unary_expression",
    "parenthesized_expression", "subscript_expression", "subscript_argument_list",
    "cast_expression", "type_descriptor", "primitive_type", "type_identifier",
    "sized_type_specifier", "field_expression", "field_identifier", "comment", "argument_list",
}  # fmt: skip
FORBIDDEN_BETWEEN = {
    "gnu_asm_expression",
    "goto_statement",
    "labeled_statement",
    "lambda_expression",
}
LVALUE_PARENTS = ("subscript_expression", "field_expression", "parenthesized_expression")


@dataclass(frozen=True)
class _Update:
    array: str
    operator: str
    expression: str  # squeezed, the loop index written `@`
    statement: tree_sitter.Node


@dataclass(frozen=True)
class _Loop:
    node: tree_sitter.Node
    index: str
    header: str  # squeezed init, condition and update, the index written `@`
    updates: tuple[_Update, ...]
    reads: frozenset[str]  # names the expressions read, the index left out


def drop_undo(code: str, facts: Facts) -> str | None:
    """The first loop whose updates a later loop undoes, saving and restoring instead, or None."""
    source = Source(code)
    helpers = facts.readonly_params  # the region's own helpers and those `search` found
    for kernel in source.kernels():
        arrays = _local_arrays(source, kernel)
        owned = _own_values(source, kernel) | set(arrays)
        for block in walk(kernel.body):
            if block.type != "compound_statement":
                continue
            items = [c for c in block.named_children if c.type not in ("comment", "preproc_call")]
            for i, first in enumerate(items):
                shift = _update_loop(source, first, arrays, owned)
                if shift is None:
                    continue
                for j in range(i + 1, len(items)):
                    back = _update_loop(source, items[j], arrays, owned)
                    if (
                        back is not None
                        and _undoes(shift, back)
                        and _unaliased(source, kernel, shift, helpers)
                    ):
                        if _untouched(source, items[i + 1 : j], shift, arrays, helpers):
                            return _rewrite(code, source, kernel, shift, back, arrays)
                        break
    return None


def _local_arrays(source: Source, kernel: Kernel) -> dict[str, tuple[str, str]]:
    """name -> (element type, extent) of each one-dimensional array the kernel declares once,
    not `__shared__`, `static` or `extern`."""
    found: dict[str, tuple[str, str]] = {}
    seen: dict[str, int] = {}
    for node in walk(kernel.body):
        if node.type != "declaration":
            continue
        words = {source.text(c) for c in node.children if not c.is_named or c.type != "identifier"}
        shared = any(w in words for w in ("__shared__", "static", "extern"))
        kind = node.child_by_field_name("type")
        for declarator in node.children_by_field_name("declarator"):
            name = declarator.child_by_field_name("declarator")
            if declarator.type == "array_declarator" and name is not None:  # noqa: SIM102
                if name.type == "identifier":
                    text = source.text(name)
                    seen[text] = seen.get(text, 0) + 1
                    size = declarator.child_by_field_name("size")
                    if not shared and kind is not None and size is not None:
                        qualifiers = [
                            source.text(c) for c in node.children if c.type == "type_qualifier"
                        ]
                        element = " ".join([*qualifiers, source.words(kind)])
                        found[text] = (element, source.text(size))
                    continue
            target: tree_sitter.Node | None = declarator
            while target is not None and target.type != "identifier":
                target = target.child_by_field_name("declarator")
            if target is not None:
                seen[source.text(target)] = seen.get(source.text(target), 0) + 1
    return {n: t for n, t in found.items() if seen.get(n) == 1 and "const" not in t[0].split()}


def _own_values(source: Source, kernel: Kernel) -> set[str]:
    """Names of plain values the kernel declares or takes by value (no pointer, no reference)."""
    names: set[str] = set()
    pointers = {p.name for p in kernel.pointers}
    names |= {p for p in kernel.params if p not in pointers}
    for node in walk(kernel.body):
        if node.type != "declaration":
            continue
        for declarator in node.children_by_field_name("declarator"):
            target: tree_sitter.Node | None = declarator
            if target is not None and target.type == "init_declarator":
                target = target.child_by_field_name("declarator")
            if target is not None and target.type == "identifier":
                names.add(source.text(target))
    return names


def _update_loop(
    source: Source, node: tree_sitter.Node, arrays: Mapping[str, tuple[str, str]], owned: set[str]
) -> _Loop | None:
    if node.type != "for_statement":
        return None
    index = unit_loop(source, node)
    body = node.child_by_field_name("body")
    if index is None or body is None:
        return None
    parts = [node.child_by_field_name(f) for f in ("initializer", "condition", "update")]
    header = ";".join(squeeze(_at(source.text(p), index)) for p in parts if p is not None)
    statements = body.named_children if body.type == "compound_statement" else [body]
    updates, reads = [], set()
    for statement in statements:
        if statement.type == "comment":
            continue
        update = _update(source, statement, index, arrays)
        if update is None:
            return None
        updates.append(update)
        right = statement.named_children[0].child_by_field_name("right")
        reads |= _read_names(source, right) - {index} if right is not None else set()
    targets = [u.array for u in updates]
    if not updates or len(set(targets)) != len(targets) or reads & set(targets):
        return None
    if not reads <= owned:
        return None  # global memory or a name the kernel does not own could change between
    return _Loop(node, index, header, tuple(updates), frozenset(reads))


def _update(
    source: Source, statement: tree_sitter.Node, index: str, arrays: Mapping[str, tuple[str, str]]
) -> _Update | None:
    """`a[index] += e;` or `-=`, `a` an array of `arrays`, `e` plain arithmetic."""
    found = assignment(source, statement) if statement.type == "expression_statement" else None
    if found is None or found[0].type != "subscript_expression":
        return None
    left, operator, right = found
    if operator not in INVERSE:
        return None
    array, indices = left.child_by_field_name("argument"), left.child_by_field_name("indices")
    if array is None or indices is None or array.type != "identifier":
        return None
    if source.text(array) not in arrays or squeeze(source.text(indices)) != f"[{index}]":
        return None
    for node in walk(right):
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            if function is None or not PURE_CALL.fullmatch(source.text(function)):
                return None
        elif node.is_named and node.type not in VALUE_NODES:
            return None
    text = squeeze(_at(source.text(right), index))
    return _Update(source.text(array), operator, text, statement)


def _read_names(source: Source, node: tree_sitter.Node) -> set[str]:
    """The names an expression reads (a called function's name is not one)."""
    return {
        source.text(n)
        for n in walk(node)
        if n.type == "identifier"
        and not (
            n.parent is not None
            and n.parent.type == "call_expression"
            and n.parent.child_by_field_name("function") == n
        )
    }


def _undoes(shift: _Loop, back: _Loop) -> bool:
    if shift.header != back.header or len(shift.updates) != len(back.updates):
        return False
    wanted = {u.array: (INVERSE[u.operator], u.expression) for u in shift.updates}
    return all(wanted.get(u.array) == (u.operator, u.expression) for u in back.updates)


def _unaliased(
    source: Source, kernel: Kernel, shift: _Loop, helpers: Mapping[str, frozenset[int]]
) -> bool:
    """Whether every use of an updated array in the kernel is an element of it (`p[j]`), its
    declaration, or an argument of a call that cannot write through it: no pointer to it
    (`float* q = p;`) through which a write could go unseen."""
    updated = {u.array for u in shift.updates}
    for node in walk(kernel.body):
        if node.type != "identifier" or source.text(node) not in updated:
            continue
        parent = node.parent
        if parent is None:
            return False
        if parent.type == "subscript_expression" and parent.child_by_field_name("argument") == node:
            continue
        if parent.type in ("array_declarator", "init_declarator") and (
            parent.child_by_field_name("declarator") == node
        ):
            continue
        if parent.type == "argument_list" and _harmless_use(source, node, True, helpers):
            continue
        return False
    return True


def _untouched(
    source: Source,
    between: list[tree_sitter.Node],
    shift: _Loop,
    arrays: Mapping[str, tuple[str, str]],
    helpers: Mapping[str, frozenset[int]],
) -> bool:
    """Whether no statement between the loops can change an updated array or a name the
    expressions read (see the module's docstring)."""
    guarded = {u.array for u in shift.updates} | set(shift.reads)
    for part in ("initializer", "condition", "update"):  # the loops' bounds: the same header
        head = shift.node.child_by_field_name(part)  # text names the same values only if
        guarded |= identifiers(source, head) - {shift.index} if head is not None else set()
    for statement in between:
        for node in walk(statement):
            if node.type in FORBIDDEN_BETWEEN:
                return False
            if node.type != "identifier" or source.text(node) not in guarded:
                continue
            if not _harmless_use(source, node, source.text(node) in arrays, helpers):
                return False
    return True


def _harmless_use(
    source: Source, node: tree_sitter.Node, array: bool, helpers: Mapping[str, frozenset[int]]
) -> bool:
    """A read of the name: an element read (`a[i]`, never assigned, updated or addressed), a
    value used in arithmetic, or an argument the callee cannot write through."""
    parent = node.parent
    if parent is None:
        return False
    if (
        parent.type in ("init_declarator", "declaration", "array_declarator")
        and parent.child_by_field_name("declarator") == node
    ):
        return False  # declared again: another object under the same name
    lvalue = node
    while lvalue.parent is not None and lvalue.parent.type in LVALUE_PARENTS:
        if lvalue.parent.type == "subscript_expression" and (
            lvalue.parent.child_by_field_name("argument") != lvalue
        ):
            break
        lvalue = lvalue.parent
    outer = lvalue.parent
    if outer is None:
        return False
    if outer.type == "assignment_expression" and outer.child_by_field_name("left") == lvalue:
        return False
    if outer.type == "update_expression" or (
        outer.type == "pointer_expression" and source.text(outer).lstrip().startswith("&")
    ):
        return False
    if outer.type == "argument_list":
        call = outer.parent
        function = call.child_by_field_name("function") if call is not None else None
        if function is not None and function.type == "template_function":
            function = function.child_by_field_name("name")
        if function is None or function.type != "identifier":
            return False
        if PURE_CALL.fullmatch(source.text(function)):
            return not (array and lvalue == node)  # values passed to math
        position = [c for c in outer.named_children if c.type != "comment"].index(lvalue)
        return position in helpers.get(source.text(function), frozenset())
    return not (array and lvalue == node)  # an array named bare: a pointer to it could escape


def _rewrite(
    code: str,
    source: Source,
    kernel: Kernel,
    shift: _Loop,
    back: _Loop,
    arrays: Mapping[str, tuple[str, str]],
) -> str | None:
    used = identifiers(source, kernel.node)
    kept = {}
    for update in shift.updates:
        kept[update.array] = fresh_name(f"{update.array}_kept", used)
        used.add(kept[update.array])
    start = preceding_pragma(shift.node) or shift.node
    indent = indentation(source, start).decode()
    line_start = source.data.rfind(b"\n", 0, start.start_byte) + 1
    declarations = "".join(
        f"{indent}{arrays[a][0]} {k}[{arrays[a][1]}];  // saved to restore below\n"
        for a, k in kept.items()
    )
    edits = [Edit(line_start, line_start, declarations.encode())]
    body = shift.node.child_by_field_name("body")
    index = shift.index
    if body is not None and body.type != "compound_statement":
        update = shift.updates[0]
        text = f"{{ {kept[update.array]}[{index}] = {update.array}[{index}]; {source.text(body)} }}"
        edits.append(Edit(body.start_byte, body.end_byte, text.encode()))
    else:
        for update in shift.updates:
            pad = indentation(source, update.statement).decode()
            save = f"{kept[update.array]}[{index}] = {update.array}[{index}];\n{pad}"
            start_byte = update.statement.start_byte
            edits.append(Edit(start_byte, start_byte, save.encode()))
    for update in back.updates:
        restore = f"{update.array}[{back.index}] = {kept[update.array]}[{back.index}];"
        edits.append(Edit(update.statement.start_byte, update.statement.end_byte, restore.encode()))
    edits.sort(key=lambda e: e.start)
    return edited(code, source, edits)


def _at(text: str, index: str) -> str:
    return re.sub(rf"\b{re.escape(index)}\b", "@", text)
