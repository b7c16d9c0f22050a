"""The declarations of a preprocessed translation unit, looked up by name, with tree-sitter.

A name's declarations at namespace scope (class members included, so that a method call can be
looked up by name) carry their CUDA attributes, constness and the file that declared them, from
the unit's linemarkers: the CUDA toolkit (nvcc's own include folders), a system header (gcc's
flag 3), the project, or the region itself. The unit is parsed once; a name is looked up where
its text occurs, so a check pays for the names a candidate uses, not for every declaration of
the standard library. A declaration the grammar could not read (tree-sitter misses some
system-header syntax) is missing: a name found nowhere is the caller's to refuse.
The tree-sitter readings it shares with the region reader (the parser, declarator and attribute
names) are in `syntax.py`.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter

from nvcc_opt.verify.preprocess import Preprocessed, Side, segments
from nvcc_opt.verify.syntax import _indirect, attributes, blank_attributes, declarator_name, parser

TOOLKIT, SYSTEM, PROJECT, REGION = "toolkit", "system", "project", "region"
FUNCTION, VARIABLE, TYPE, ENUMERATOR = "function", "variable", "type", "enumerator"
# Types a C/C++ compiler knows without a declaration; tree-sitter also reads the <stdint.h>
# and <stddef.h> names (size_t, int32_t, ...) as primitive types.
_ARITHMETIC_NODES = frozenset(("primitive_type", "sized_type_specifier"))
_ALIAS = re.compile(r"\bnamespace\s+(\w+)\s*=\s*([\w:]+)\s*;")
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_RECORDS = frozenset(("struct_specifier", "class_specifier", "union_specifier", "enum_specifier"))
# Declarator nodes a declared name sits in, from the name outwards.
_WRAPPERS = frozenset(
    ("function_declarator", "pointer_declarator", "reference_declarator", "array_declarator",
     "parenthesized_declarator", "attributed_declarator", "init_declarator")
)  # fmt: skip
# Ancestors that make a declaration local (not at namespace or class scope).
_LOCAL = frozenset(
    ("compound_statement", "parameter_list", "condition_clause", "for_statement",
     "for_range_loop", "lambda_expression", "requires_expression", "template_parameter_list",
     "argument_list", "initializer_list", "template_argument_list")
)  # fmt: skip


@dataclass(frozen=True)
class Decl:
    name: str  # the last component: `getenv`, `thread`, `shfl_down`
    qualified: str  # namespaces and classes joined by `::`, inline namespaces included
    kind: str  # FUNCTION, VARIABLE, TYPE or ENUMERATOR
    attrs: frozenset[str]  # __attribute__ names: device, host, global, constant, ...
    origin: str  # TOOLKIT, SYSTEM, PROJECT or REGION
    file: str  # as the linemarker names it
    header: str  # toolkit: the path under nvcc's include folder; else the file's base name
    member: bool = False  # declared inside a class
    const: bool = False  # a const, constexpr or __constant__ variable
    constexpr: bool = False
    arithmetic: bool = False  # a variable of arithmetic type, or an array of them
    record: bool = False  # a class, struct or union
    special: bool = False  # a class that declares a constructor or destructor
    enum: bool = False
    typedef: str = ""  # a typedef's or alias's type, as written ("?" when not plain)
    type: str = ""  # a variable's type, as written

    @property
    def device_only(self) -> bool:
        """Callable from device code only: `__device__` (or `__global__`) without `__host__`."""
        return bool(self.attrs & {"device", "global"}) and "host" not in self.attrs


class Symbols:
    """Declarations of one or more units (a host side, device sides, added headers)."""

    def __init__(self, units: Iterable[Unit]) -> None:
        self.units = tuple(units)
        self.aliases: dict[str, str] = {}  # namespace aliases: `cg` -> `cooperative_groups`
        for unit in self.units:
            self.aliases.update(unit.aliases)

    def named(self, name: str) -> list[Decl]:
        """Every declaration whose last component is `name`."""
        return list(dict.fromkeys(d for unit in self.units for d in unit.declarations(name)))

    def lookup(self, name: str) -> list[Decl]:
        """Declarations outside the region that `name` (qualified or not) can mean.

        A qualified name keeps those whose qualified name holds every component of it in order
        (inline namespaces may sit between); when none does, the global ones (`std::getenv` is
        `::getenv` pulled into std by a using-declaration).
        """
        parts = [self.aliases.get(p, p) for p in _strip_templates(name).split("::") if p]
        if not parts:
            return []
        found = [d for d in self.named(parts[-1]) if d.origin != REGION]
        if len(parts) > 1:
            scoped = [d for d in found if _in_order(parts, d.qualified.split("::"))]
            return scoped or [d for d in found if "::" not in d.qualified]
        return found

    def is_arithmetic_type(self, text: str, depth: int = 0) -> bool:
        """Whether the type spelled `text` is arithmetic or an enum (typedefs followed)."""
        words = [w for w in text.replace("::", " :: ").split() if w not in _QUALIFIERS]
        if words and all(w in _ARITHMETIC_WORDS for w in words):
            return True
        name = "".join(words)
        if depth > 8 or not name or any(c in name for c in "*&[(<"):
            return False
        decls = [d for d in self.lookup(name) if d.kind == TYPE]
        if decls and all(d.enum for d in decls):
            return True
        typedefs = [d.typedef for d in decls if d.typedef]
        return bool(typedefs) and all(self.is_arithmetic_type(t, depth + 1) for t in typedefs)


_QUALIFIERS = frozenset(("const", "volatile", "constexpr", "signed", "typename", "struct", "enum"))
_ARITHMETIC_WORDS = frozenset(
    ("bool", "char", "char8_t", "char16_t", "char32_t", "wchar_t", "short", "int", "long",
     "unsigned", "float", "double", "size_t", "ssize_t", "ptrdiff_t", "intptr_t", "uintptr_t",
     "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
     "__int128", "_Float16", "__fp16")
)  # fmt: skip


def _strip_templates(name: str) -> str:
    out: list[str] = []
    depth = 0
    for char in name:
        depth += (char == "<") - (char == ">")
        if depth == 0 and char not in "<>":
            out.append(char)
    return "".join(out).replace(" ", "")


def _in_order(parts: list[str], qualified: list[str]) -> bool:
    if not qualified or qualified[-1] != parts[-1]:
        return False
    rest = iter(qualified[:-1])
    return all(any(q == p for q in rest) for p in parts[:-1])


def symbols_of(pre: Preprocessed, *, included_only: bool = False) -> Symbols:
    """The declarations of every side of `pre` together.

    With `included_only`, only those of the headers the region itself includes: what a
    candidate adds to its original's unit. That text holds nothing of the region, so
    candidates that include the same headers share one parse.
    """
    if included_only:
        texts = [_headers_text(side, pre) for side in pre.sides if side.includes]
        return Symbols(unit_of(text, "", pre.toolkit) for text in texts)
    return Symbols(unit_of(side.unit, pre.marker, pre.toolkit) for side in pre.sides)


@lru_cache(maxsize=4096)
def classify(file: str, system: bool, marker: str, toolkit: tuple[str, ...]) -> tuple[str, str]:
    """(origin, header) of a file a linemarker names; see `Decl.header`."""
    if file == marker:
        return REGION, file
    real = os.path.realpath(file)
    for folder in toolkit:
        if real.startswith(folder + os.sep):
            return TOOLKIT, real[len(folder) + 1 :]
    base = os.path.basename(file)
    if system or file.startswith("<") or real.startswith(("/usr/include/", "/usr/lib/")):
        return SYSTEM, base
    return PROJECT, base


def _headers_text(side: Side, pre: Preprocessed) -> str:
    """The lines of the headers inside the region's stretch of the unit, with their markers."""
    first, end = side.chunk
    return "\n".join(
        line
        for row, line in enumerate(side.unit.split("\n")[first:end], start=first)
        if side.file_at(row).file != pre.marker
    )


@lru_cache(maxsize=8)
def unit_of(text: str, marker: str, toolkit: tuple[str, ...]) -> Unit:
    """The parse of `text` (kept: the same original or headers serve many candidates)."""
    return Unit(text, marker, toolkit)


class Unit:
    """One parsed preprocessed text, whose declarations are read on demand, name by name."""

    def __init__(self, text: str, marker: str, toolkit: tuple[str, ...]) -> None:
        self.marker = marker
        self.toolkit = toolkit
        self.segments = segments(text.split("\n"))
        self.rows = [segment.row for segment in self.segments]
        blanked = blank_attributes(text)
        self.aliases = dict(_ALIAS.findall(blanked))
        self.data = blanked.encode("utf-8", "surrogateescape")
        self.root = parser().parse(self.data).root_node
        self._found: dict[str, tuple[Decl, ...]] = {}

    def text(self, node: tree_sitter.Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def declarations(self, name: str) -> tuple[Decl, ...]:
        """The declarations of `name` at namespace or class scope, wherever its text occurs."""
        if name not in self._found:
            self._found[name] = tuple(dict.fromkeys(self._search(name)))
        return self._found[name]

    def _search(self, name: str) -> Iterable[Decl]:
        key = name.encode("utf-8", "surrogateescape")
        if not key:
            return
        at = self.data.find(key)
        while at >= 0:
            end = at + len(key)
            before = self.data[at - 1] if at else 32
            after = self.data[end] if end < len(self.data) else 32
            if before not in _NAME_BYTES and after not in _NAME_BYTES:
                node = self.root.named_descendant_for_byte_range(at, end)
                if node is not None and node.start_byte == at and node.end_byte == end:
                    yield from self._declared_at(node)
            at = self.data.find(key, end)

    def origin(self, node: tree_sitter.Node) -> tuple[str, str, str]:
        """(origin, file, header) of the file that declared `node`."""
        at = bisect.bisect_right(self.rows, node.start_point[0]) - 1
        if at < 0:
            return PROJECT, "", ""
        segment = self.segments[at]
        origin, header = classify(segment.file, segment.system, self.marker, self.toolkit)
        return origin, segment.file, header

    def _declared_at(self, node: tree_sitter.Node) -> Iterable[Decl]:
        """The declaration `node` is the declared name of, if it is one at namespace or class
        scope."""
        up = node
        while up.parent is not None and up.parent.type in (
            "qualified_identifier",
            "template_function",
        ):
            if _field(up.parent, "name") != up:
                return
            up = up.parent
        outer = up
        while outer.parent is not None and outer.parent.type in _WRAPPERS:
            if _field(outer.parent, "declarator") != outer:
                return
            outer = outer.parent
        holder = outer.parent
        if holder is None:
            return
        kind = holder.type
        if kind in ("declaration", "field_declaration", "function_definition"):
            if outer in holder.children_by_field_name("declarator"):
                scope = self._scope(holder)
                if scope is not None:
                    yield self._plain(holder, outer, up, scope)
        elif kind == "type_definition" and outer in holder.children_by_field_name("declarator"):
            scope = self._scope(holder)
            if scope is not None:
                yield self._typedef(holder, outer, node, scope)
        elif kind == "alias_declaration" and _field(holder, "name") == node:
            scope = self._scope(holder)
            if scope is not None:
                yield self._typedef(holder, None, node, scope)
        elif kind in _RECORDS and _field(holder, "name") == node:
            scope = self._scope(holder)
            if scope is not None:
                yield self._record(holder, node, scope)
        elif kind == "enumerator" and _field(holder, "name") == node:
            scope = self._scope(holder)
            if scope is not None:
                origin, file, header = self.origin(holder)
                label = self.text(node)
                yield Decl(label, "::".join([*scope[0], label]), ENUMERATOR, frozenset(),
                           origin, file, header, scope[1], const=True)  # fmt: skip

    def _scope(self, holder: tree_sitter.Node) -> tuple[list[str], bool] | None:
        """(enclosing namespaces and classes, in a class) of a declaration; None when local."""
        names: list[str] = []
        member = False
        up = holder.parent
        while up is not None:
            kind = up.type
            if kind in _LOCAL:
                return None
            if kind == "namespace_definition" and (name := _field(up, "name")) is not None:
                names.append(self.text(name))
            elif kind in ("struct_specifier", "class_specifier", "union_specifier"):
                name = _field(up, "name")
                names.append(_strip_templates(self.text(name)) if name is not None else "<unnamed>")
                member = True
            up = up.parent
        return names[::-1], member

    def _plain(
        self,
        node: tree_sitter.Node,
        declarator: tree_sitter.Node,
        name: tree_sitter.Node,
        scope: tuple[list[str], bool],
    ) -> Decl:
        type_node = _field(node, "type")
        attrs = attributes(node, self.text) | attributes(declarator, self.text)
        origin, file, header = self.origin(node)
        qualifiers = {self.text(c) for c in node.children if c.type == "type_qualifier"}
        _, function = declarator_name(declarator)
        indirect = _indirect(declarator)
        text = _strip_templates(self.text(name))
        return Decl(
            name=text.rsplit("::", 1)[-1],
            qualified="::".join([*scope[0], text]),
            kind=FUNCTION if function else VARIABLE,
            attrs=attrs,
            origin=origin,
            file=file,
            header=header,
            member=scope[1],
            const=bool(qualifiers & {"const", "constexpr"}) or "constant" in attrs,
            constexpr="constexpr" in qualifiers,
            arithmetic=type_node is not None
            and type_node.type in _ARITHMETIC_NODES
            and not indirect,
            type="" if function or indirect or type_node is None else self.text(type_node),
        )

    def _typedef(
        self,
        node: tree_sitter.Node,
        declarator: tree_sitter.Node | None,
        name: tree_sitter.Node,
        scope: tuple[list[str], bool],
    ) -> Decl:
        type_node = _field(node, "type")
        plain = type_node is not None and (declarator is None or not _indirect(declarator))
        target = self.text(type_node) if plain and type_node is not None else ""
        origin, file, header = self.origin(node)
        text = self.text(name)
        return Decl(text, "::".join([*scope[0], text]), TYPE, frozenset(), origin, file,
                    header, scope[1], typedef=target or "?")  # fmt: skip

    def _record(
        self, node: tree_sitter.Node, name: tree_sitter.Node, scope: tuple[list[str], bool]
    ) -> Decl:
        text = _strip_templates(self.text(name))
        body = _field(node, "body")
        origin, file, header = self.origin(node)
        special = body is not None and any(
            self.text(n).lstrip("~") == text for n in _member_names(body)
        )
        return Decl(
            name=text,
            qualified="::".join([*scope[0], text]),
            kind=TYPE,
            attrs=frozenset(),
            origin=origin,
            file=file,
            header=header,
            member=scope[1],
            record=node.type != "enum_specifier",
            special=special,
            enum=node.type == "enum_specifier",
        )


def _field(node: tree_sitter.Node, name: str) -> tree_sitter.Node | None:
    return node.child_by_field_name(name)


def _member_names(body: tree_sitter.Node) -> Iterable[tree_sitter.Node]:
    """The names a class body's members declare (templates' included)."""
    for item in body.named_children:
        if item.type == "template_declaration":
            item = next(
                (c for c in item.named_children if c.type != "template_parameter_list"), item
            )
        for declarator in item.children_by_field_name("declarator"):
            name, _ = declarator_name(declarator)
            if name is not None:
                yield name
