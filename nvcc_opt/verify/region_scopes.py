"""Pass 1 of reading one side of a region: its parse, and the names it declares, scope by scope.

`RegionScopes` is the first base of `region_code.RegionCode`: the helpers every pass uses (a
node's text and its line in the code the model wrote, the scope a declaration declares into) and
the first pass over the tree, which records in which scope each name the region defines is
declared, its typedefs and aliases, its own types (classes, enums, template parameters), their
members, and its namespace aliases. A prototype or an `extern` declaration owns nothing.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from nvcc_opt.verify.preprocess import Side
from nvcc_opt.verify.syntax import attribute_names, declarator_name

# Scope nodes: a name declared directly inside one is visible in all of it.
_SCOPES = frozenset(
    ("translation_unit", "compound_statement", "declaration_list", "field_declaration_list",
     "function_definition", "lambda_expression", "template_declaration", "for_statement",
     "for_range_loop", "if_statement", "while_statement", "switch_statement", "catch_clause",
     "enumerator_list", "requires_expression")
)  # fmt: skip
_DECLARATIONS = frozenset(("declaration", "field_declaration", "function_definition"))
_NAMESPACE_LEVEL = frozenset(("translation_unit", "declaration_list", "field_declaration_list"))
_PARAMETERS = frozenset(
    ("parameter_declaration", "optional_parameter_declaration",
     "variadic_parameter_declaration", "type_parameter_declaration",
     "optional_type_parameter_declaration", "variadic_type_parameter_declaration",
     "template_template_parameter_declaration")
)  # fmt: skip
_RECORDS = frozenset(("struct_specifier", "class_specifier", "union_specifier", "enum_specifier"))


class RegionScopes:
    """The region's parse and what it declares where (pass 1); `RegionCode` runs it."""

    # Set by `RegionCode`: its dataclass fields and `__post_init__`.
    side: Side
    data: bytes
    typedefs: dict[str, str]
    own_types: set[str]
    mutable_types: set[str]
    enums: set[str]
    aliases: dict[str, str]
    _declared: dict[int, set[str]]
    _functions: dict[int, set[str]]
    _declarators: set[int]
    _declared_at: set[int]
    _members: dict[str, set[str]]
    _namespace_bodies: dict[str, list[tree_sitter.Node]]

    # -- helpers ---------------------------------------------------------------------------

    def text(self, node: tree_sitter.Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def line(self, node: tree_sitter.Node) -> int:
        return self._line_of_row(node.start_point[0])

    def _line_of_row(self, row: int) -> int:
        lines = self.side.region_lines
        return lines[min(row, len(lines) - 1)] if lines else 0

    def _scope_of(self, node: tree_sitter.Node) -> tree_sitter.Node:
        """The scope a declaration at `node` declares into (a template's is the one around it:
        only its parameters live in the template itself)."""
        parent = node.parent
        while parent is not None and (
            parent.type not in _SCOPES or parent.type == "template_declaration"
        ):
            parent = parent.parent
        return parent if parent is not None else node

    def _declares(self, name: tree_sitter.Node) -> None:
        """`name` is a declared name, no use of one."""
        self._declarators.add(name.id)
        self._declared_at.add(name.start_byte)

    def _register(self, name: str, scope: tree_sitter.Node) -> None:
        """`name` is declared in `scope`, and in the scopes an anonymous or inline namespace,
        an `extern "C"` block or an unscoped enum opens onto."""
        while True:
            self._declared[scope.id].add(name)
            opener = scope.parent
            transparent = scope.type == "enumerator_list" or (
                scope.type == "declaration_list"
                and opener is not None
                and (
                    opener.type == "linkage_specification"
                    or (opener.type == "namespace_definition"
                        and (opener.child_by_field_name("name") is None
                             or any(c.type == "inline" for c in opener.children)))
                )
            )  # fmt: skip
            if not transparent or opener is None:
                return
            scope = self._scope_of(opener)

    # -- pass 1: what the region declares -----------------------------------------------------

    def _declare(self, node: tree_sitter.Node) -> None:
        kind = node.type
        if kind in _DECLARATIONS:
            self._declare_declarators(node)
        elif kind in _PARAMETERS:
            self._declare_parameter(node)
        elif kind in ("type_definition", "alias_declaration"):
            self._declare_typedef(node)
        elif kind in _RECORDS:
            self._declare_record(node)
        else:
            self._declare_other(node)
        for child in node.children:
            self._declare(child)

    def _declare_typedef(self, node: tree_sitter.Node) -> None:
        target = node.child_by_field_name("type")
        for name in self._typedef_names(node):
            text = self.text(name)
            self._register(text, self._scope_of(node))
            self._declares(name)
            self.own_types.add(text)
            if target is not None:
                self.typedefs[text] = self.text(target)

    def _declare_record(self, node: tree_sitter.Node) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is None or body is None:
            return  # a use of the type (`struct S s;`), or an unnamed one
        self._declares(name)
        text = self.text(name)
        self._register(text, self._scope_of(node))
        self.own_types.add(text)
        if node.type == "enum_specifier":
            self.enums.add(text)
        self._members[text] |= self._member_names(body)
        if any(_is_mutable(item) for item in body.named_children):
            self.mutable_types.add(text)

    def _declare_other(self, node: tree_sitter.Node) -> None:
        """Enumerators, namespaces and their aliases, init-captures, structured bindings and
        range-for variables."""
        kind = node.type
        names: list[tree_sitter.Node] = []
        scope = self._scope_of(node)
        if kind in ("enumerator", "namespace_definition"):
            names = [n for n in [node.child_by_field_name("name")] if n is not None]
            body = node.child_by_field_name("body")
            if kind == "namespace_definition" and names and body is not None:
                self._namespace_bodies[self.text(names[0]).split("::")[-1]].append(body)
                self._declares(names[0])
                return
        elif kind == "namespace_alias_definition":
            parts = [c for c in node.named_children if c.type.endswith("identifier")]
            if len(parts) >= 2:
                self.aliases[self.text(parts[0])] = self.text(parts[-1])
                self._declares(parts[0])
            return
        elif kind == "lambda_capture_initializer":
            names = [n for n in [node.child_by_field_name("left")] if n is not None]
        elif kind == "structured_binding_declarator":
            names = [c for c in node.named_children if c.type == "identifier"]
        elif kind == "for_range_loop" and (decl := node.child_by_field_name("declarator")):
            names = [n for n in [declarator_name(decl)[0]] if n is not None]
            scope = node
        for name in names:
            self._register(self.text(name), scope)
            self._declares(name)

    def _declare_declarators(self, node: tree_sitter.Node) -> None:
        is_definition = node.type == "function_definition"
        extern = "extern" in self._storage(node)
        for declarator in node.children_by_field_name("declarator"):
            name, function = declarator_name(declarator)
            if name is None:
                continue
            self._declares(name)
            text = self.text(name)
            if function and not is_definition and not self._in_block(node):
                continue  # a prototype: the function is defined elsewhere (or later)
            shared = "shared" in self._attrs(node)
            if extern and not function and declarator.type != "init_declarator" and not shared:
                continue  # an `extern` variable is defined elsewhere (but not dynamic shared)
            if name.type in ("qualified_identifier", "template_function", "operator_name"):
                continue
            scope = self._scope_of(node)
            self._register(text, scope)
            if function and scope.type in ("translation_unit", "declaration_list"):
                self._functions[scope.id].add(text)

    def _in_block(self, node: tree_sitter.Node) -> bool:
        """Inside a function: `T x(y);` there declares a variable (C++ would read a function
        only where `y` is a type; a rewrite has no reason to declare local functions)."""
        return self._scope_of(node).type not in _NAMESPACE_LEVEL

    def _declare_parameter(self, node: tree_sitter.Node) -> None:
        names = []
        if (declarator := node.child_by_field_name("declarator")) is not None:
            names.append(declarator_name(declarator)[0])
        if (name := node.child_by_field_name("name")) is not None:
            names.append(name)
        if node.type.endswith("type_parameter_declaration"):
            names += [c for c in node.named_children if c.type == "type_identifier"]
        owner = self._parameter_owner(node)
        if owner.type == "function_declarator" and self._in_block(owner):
            return  # `static int x(y)`: `y` is an expression, not a parameter
        for name in names:
            if name is not None:
                self._register(self.text(name), owner)
                self._declares(name)
                if owner.type == "template_declaration":
                    self.own_types.add(self.text(name))

    def _parameter_owner(self, node: tree_sitter.Node) -> tree_sitter.Node:
        """The scope a parameter is visible in: its function's definition or lambda, its
        template, else its own declarator (a prototype's parameters are seen nowhere)."""
        plist = node.parent
        holder = plist.parent if plist is not None else None
        if holder is None:
            return node
        if plist is not None and plist.type == "template_parameter_list":
            return holder
        up: tree_sitter.Node | None = holder
        while up is not None and up.type in (
            "function_declarator", "pointer_declarator", "reference_declarator",
            "lambda_declarator", "abstract_function_declarator", "attributed_declarator",
            "parenthesized_declarator",
        ):  # fmt: skip
            up = up.parent
        if up is not None and up.type in ("function_definition", "lambda_expression"):
            return up
        return holder

    def _typedef_names(self, node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
        for declarator in node.children_by_field_name("declarator"):
            name, _ = declarator_name(declarator)
            if name is not None:
                yield name
        if (name := node.child_by_field_name("name")) is not None:
            yield name

    def _member_names(self, body: tree_sitter.Node) -> set[str]:
        names: set[str] = set()
        for item in body.named_children:
            target = item.named_children[-1] if item.type == "template_declaration" else item
            if target is None:
                continue
            for declarator in target.children_by_field_name("declarator"):
                name, _ = declarator_name(declarator)
                if name is not None:
                    names.add(self.text(name))
        return names

    def _storage(self, node: tree_sitter.Node) -> set[str]:
        return {self.text(c) for c in node.children if c.type == "storage_class_specifier"}

    def _attrs(self, node: tree_sitter.Node) -> frozenset[str]:
        found: set[str] = set()
        stack = [c for c in node.children if c.type != "compound_statement"]
        while stack:
            child = stack.pop()
            if child.type in ("attribute_specifier", "attribute_declaration"):
                found.update(attribute_names(child, self.text))
            elif child.type not in ("compound_statement", "parameter_list", "initializer_list"):
                stack.extend(child.children)
        return frozenset(found)


def _is_mutable(member: tree_sitter.Node) -> bool:
    return member.type == "field_declaration" and any(
        c.type == "type_qualifier" and c.text == b"mutable" for c in member.children
    )
