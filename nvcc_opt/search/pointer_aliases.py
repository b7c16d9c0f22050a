"""Pointer types behind a name: `using Real_ptr = Real_type*;`, `typedef float *fptr;`.

Kernels written against such names (RAJAPerf's `Real_ptr`, a code's `field_t`) show no `*` in
their parameters, so no transform sees a pointer there. The policy finds each name's definition
(`search`), and every transform then works on the region with those parameters spelled out
(`Real_ptr a` -> `Real_type* a`: the same type), where `const` and `__restrict__` can be added.
"""

from __future__ import annotations

from collections.abc import Mapping

import tree_sitter

from nvcc_opt.search.cuda import LDG_TYPES, Edit, Source, edited, walk


def pointer_aliases(code: str, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """name -> pointee type text of every `using name = T*;` and `typedef T *name;` in `code`
    (T one type, not itself a pointer), with `known`'s; a name defined twice differently is
    dropped."""
    source = Source(code)
    found: dict[str, str] = dict(known or {})
    dropped: set[str] = set()
    for node in walk(source.root):
        named = _pointer_definition(source, node)
        if named is None:
            continue
        name, pointee = named
        if name in dropped:
            continue
        if found.get(name, pointee) != pointee:
            dropped.add(name)
            found.pop(name, None)
            continue
        found[name] = pointee
    return found


def _pointer_definition(source: Source, node: tree_sitter.Node) -> tuple[str, str] | None:
    if node.type == "alias_declaration":  # using name = T*;
        name, described = node.child_by_field_name("name"), node.child_by_field_name("type")
        if name is None or described is None:
            return None
        kind = described.child_by_field_name("type")
        pointer = described.child_by_field_name("declarator")
        if kind is None or pointer is None or pointer.type != "abstract_pointer_declarator":
            return None
        if pointer.named_children:  # T** or T* const*: not one level
            return None
        return source.text(name), source.words(kind)
    if node.type == "type_definition":  # typedef T *name;
        kind, declarator = node.child_by_field_name("type"), node.child_by_field_name("declarator")
        if kind is None or declarator is None or declarator.type != "pointer_declarator":
            return None
        inner = declarator.child_by_field_name("declarator")
        if inner is None or inner.type != "type_identifier":
            return None
        return source.text(inner), source.words(kind)
    return None


def alias_parameters(code: str) -> set[str]:
    """The type names that kernel parameters are declared with bare (`Real_ptr a`: no `*`, no
    qualifier), other than the builtin types: those that may name pointers."""
    source = Source(code)
    return {
        source.text(kind)
        for _, kind in _bare_parameters(source)
        if source.text(kind) not in LDG_TYPES
    }


def expand(code: str, aliases: Mapping[str, str]) -> str:
    """`code` with every kernel parameter declared bare with a name of `aliases` spelled out as
    the pointer it is (`Real_ptr a` -> `Real_type* a`); `code` itself when there is none."""
    if not aliases:
        return code
    source = Source(code)
    edits = [
        Edit(kind.start_byte, kind.end_byte, f"{aliases[source.text(kind)]}*".encode())
        for _, kind in _bare_parameters(source)
        if source.text(kind) in aliases
    ]
    return edited(code, source, edits) or code


def _bare_parameters(source: Source) -> list[tuple[tree_sitter.Node, tree_sitter.Node]]:
    """(parameter, its type node) of each kernel parameter `Name ident` with nothing else."""
    found = []
    for kernel in source.kernels():
        declarator = kernel.node.child_by_field_name("declarator")
        parameters = declarator.child_by_field_name("parameters") if declarator else None
        for param in parameters.named_children if parameters else ():
            kind = param.child_by_field_name("type")
            name = param.child_by_field_name("declarator")
            if param.type != "parameter_declaration" or kind is None or name is None:
                continue
            bare = len(param.named_children) == 2  # no qualifier, no attribute
            if kind.type == "type_identifier" and name.type == "identifier" and bare:
                found.append((param, kind))
    return found
