"""Pointer types behind a name: `using Real_ptr = Real_type*;`, `typedef float *fptr;`.

Kernels written against such names (RAJAPerf's `Real_ptr`, a code's `field_t`) show no `*` in
their parameters, so no transform sees a pointer there. The policy finds each name's definition
(`search`), and every transform then works on the region with those parameters spelled out
(`Real_ptr a` -> `Real_type* a`: the same type), where `const` and `__restrict__` can be added.
"""

from __future__ import annotations

from collections.abc import Mapping

import tree_sitter

from nvcc_opt.search.cuda import LDG_TYPES, Edit, Source, define, edited, walk


def pointer_aliases(code: str, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """name -> pointee type text of every `using name = T*;` and `typedef T *name;` in `code`
    (T one type, not itself a pointer), with `known`'s; a name defined twice differently is
    dropped."""
    source = Source(code)
    found: dict[str, str] = dict(known or {})
    dropped: set[str] = set()
    for node in walk(source.root):
        named = _pointer_definition(source, node)
        if named is not None:
            define(found, dropped, *named)
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


def pointer_names(code: str) -> set[str]:
    """Every name `code` defines as a pointer type, resolved or not (two definitions that differ,
    as under a precision switch, leave it out of `pointer_aliases` but in here)."""
    source = Source(code)
    return {named[0] for node in walk(source.root) if (named := _pointer_definition(source, node))}


def pointer_holders(code: str) -> set[str]:
    """The structs and classes `code` defines with a pointer or reference member (`struct Data
    { float* y; }`, `typedef struct { const double* a; } Params;`): passed by value, they carry
    pointers that may alias a kernel's pointer parameters."""
    source = Source(code)
    found = set()
    for node in walk(source.root):
        if node.type not in ("struct_specifier", "class_specifier"):
            continue
        body = node.child_by_field_name("body")
        if body is None or not any(_holds_pointer(f) for f in body.named_children):
            continue
        name = node.child_by_field_name("name")
        if name is not None:
            found.add(source.text(name))
        parent = node.parent
        if parent is not None and parent.type == "type_definition":  # typedef struct {...} N;
            alias = parent.child_by_field_name("declarator")
            if alias is not None and alias.type == "type_identifier":
                found.add(source.text(alias))
    return found


def _holds_pointer(field: tree_sitter.Node) -> bool:
    if field.type != "field_declaration":
        return False
    declarators = [c for c in field.named_children if c.type.endswith("declarator")]
    return any(d.type in ("pointer_declarator", "reference_declarator") for d in declarators)


def unresolved_pointers(code: str, suspects: set[str]) -> set[str]:
    """The kernels of `code` with a parameter still declared with a name of `suspects` (a pointer
    type whose pointee could not be told): whether it aliases another pointer parameter cannot
    be told either."""
    source = Source(code)
    return {
        kernel for kernel, _, kind in _named_parameters(source) if source.text(kind) in suspects
    }


def alias_parameters(code: str) -> set[str]:
    """The type names that kernel parameters are declared with (`Real_ptr a`, `const Real_ptr
    a`: no `*`), other than the builtin types: those that may name pointers."""
    source = Source(code)
    return {
        source.text(kind)
        for _, _, kind in _named_parameters(source)
        if source.text(kind) not in LDG_TYPES
    }


def expand(code: str, aliases: Mapping[str, str]) -> str:
    """`code` with every kernel parameter declared with a name of `aliases` spelled out as the
    pointer it is (`Real_ptr a` -> `Real_type* a`; a qualifier of the name qualifies the pointer:
    `const Real_ptr a` -> `Real_type* const a`); `code` itself when there is none."""
    if not aliases:
        return code
    source = Source(code)
    edits = []
    for _, param, kind in _named_parameters(source):
        pointee = aliases.get(source.text(kind))
        if pointee is None:
            continue
        qualifiers = [source.text(c) for c in param.named_children if c.type == "type_qualifier"]
        name = param.child_by_field_name("declarator")
        assert name is not None
        spelled = " ".join([f"{pointee}*", *qualifiers, source.text(name)])
        edits.append(Edit(param.start_byte, param.end_byte, spelled.encode()))
    return edited(code, source, edits) or code


def _named_parameters(source: Source) -> list[tuple[str, tree_sitter.Node, tree_sitter.Node]]:
    """(kernel name, parameter, its type node) of each kernel parameter `[qualifiers] Name
    ident`: a type name, a plain identifier, nothing else but `const`/`volatile`."""
    found = []
    for kernel in source.kernels():
        declarator = kernel.node.child_by_field_name("declarator")
        parameters = declarator.child_by_field_name("parameters") if declarator else None
        for param in parameters.named_children if parameters else ():
            kind = param.child_by_field_name("type")
            name = param.child_by_field_name("declarator")
            if param.type != "parameter_declaration" or kind is None or name is None:
                continue
            others = [c for c in param.named_children if c not in (kind, name)]
            plain = all(c.type == "type_qualifier" for c in others)
            if kind.type == "type_identifier" and name.type == "identifier" and plain:
                found.append((kernel.name, param, kind))
    return found
