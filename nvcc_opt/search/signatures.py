"""Which arguments a helper function cannot write through, read from its declaration: the
positions of its parameters that are pointers or arrays to `const` (`const T* x`, `const T* const
x`, `const T x[8]`, `const T b[][8]`) or plain values (`T x`). A non-const pointer, array or
reference parameter may be written through, so its position is left out.

The declarations come from the region's own code or from the lines `search` and `file_viewer`
show of the file (a signature written over several lines is read up to its closing parenthesis).
Overloads, or two declarations that disagree, keep only the positions every one of them allows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import tree_sitter

from nvcc_opt.search.cuda import Source, walk

MAX_SIGNATURE_LINES = 24


def readonly_params(code: str) -> dict[str, frozenset[int]]:
    """function name -> the parameter positions it cannot write through, for every function
    declared or defined in `code` (several declarations of one name: the positions all allow)."""
    found: dict[str, frozenset[int]] = {}
    source = Source(code)
    for node in walk(source.tree.root_node):
        if node.type != "function_declarator":
            continue
        name = node.child_by_field_name("declarator")
        parameters = node.child_by_field_name("parameters")
        if name is None or parameters is None or name.type != "identifier":
            continue
        if node.parent is None or node.parent.type not in (
            "function_definition",
            "declaration",
            "pointer_declarator",
            "reference_declarator",
        ):
            continue
        positions = _readonly(source, parameters)
        if positions is None:
            continue
        found = merge(found, {source.text(name): positions})
    return found


def signature_text(lines: Iterable[str]) -> str:
    """A declaration written over several lines, from its first line up to the parenthesis that
    closes its parameters, as one declaration (`...);`), or "" when none closes in view."""
    taken: list[str] = []
    depth, opened = 0, False
    for line in list(lines)[:MAX_SIGNATURE_LINES]:
        taken.append(line)
        for char in line:
            if char == "(":
                depth, opened = depth + 1, True
            elif char == ")":
                depth -= 1
                if opened and depth == 0:
                    text = "\n".join(taken)
                    return text[: text.rfind(")") + 1] + ";"
    return ""


def merge(
    known: Mapping[str, frozenset[int]], more: Mapping[str, frozenset[int]]
) -> dict[str, frozenset[int]]:
    """Both, a name in each keeping only the positions both allow."""
    merged = dict(known)
    for name, positions in more.items():
        merged[name] = merged[name] & positions if name in merged else positions
    return merged


def _readonly(source: Source, parameters: tree_sitter.Node) -> frozenset[int] | None:
    positions = set()
    declared = [p for p in parameters.named_children if p.type != "comment"]
    for position, param in enumerate(declared):
        if param.type == "variadic_parameter":
            return None
        if param.type != "parameter_declaration":
            return None
        if _cannot_write(source, param):
            positions.add(position)
    return frozenset(positions)


def _cannot_write(source: Source, param: tree_sitter.Node) -> bool:
    """A plain value, or a pointer or array whose element is `const` (every level of pointer:
    `const T**` can still write the inner pointer)."""
    declarator = param.child_by_field_name("declarator")
    if declarator is None:  # unnamed: a value only when the type is a builtin (`f(x)` is no type)
        kind = param.child_by_field_name("type")
        return kind is not None and kind.type in ("primitive_type", "sized_type_specifier")
    levels, array = 0, False
    node: tree_sitter.Node | None = declarator
    while node is not None and node.type != "identifier":
        if node.type == "reference_declarator":
            return _const_type(source, param)
        if node.type in ("pointer_declarator", "abstract_pointer_declarator"):
            levels += 1
        if node.type in ("array_declarator", "abstract_array_declarator"):
            array = True  # `b[][8]`: one pointer, however many extents
        if node.type == "function_declarator":
            return False
        if node.type == "parenthesized_declarator":  # `const T (&a)[N]`
            node = node.named_children[0] if node.named_children else None
            continue
        node = node.child_by_field_name("declarator")
    levels += array
    if levels == 0:
        return True
    return levels == 1 and _const_type(source, param)


def _const_type(source: Source, param: tree_sitter.Node) -> bool:
    """Whether the parameter's type (before its declarator) is `const`."""
    declarator = param.child_by_field_name("declarator")
    end = declarator.start_byte if declarator is not None else param.end_byte
    return any(
        c.type == "type_qualifier" and source.text(c) == "const"
        for c in param.children
        if c.end_byte <= end
    )
