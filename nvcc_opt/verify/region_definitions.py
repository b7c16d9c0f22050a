"""The rule-1 and rule-2 facts of one side of a region: the functions it defines at namespace
scope and its variables with static storage (`Definition`, `Variable`).

`RegionDefinitions` is the second base of `region_code.RegionCode` (after `RegionScopes`): it walks
the namespaces, `extern "C"` blocks and templates the region opens for function definitions, and
reads each declaration with static storage (namespace scope, static member, `thread_local`,
static local, `extern`) for its qualifiers, type, declarator form and initializer.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from nvcc_opt.verify.region_scopes import RegionScopes
from nvcc_opt.verify.syntax import declarator_name


@dataclass(frozen=True)
class Definition:
    """A function the region defines at namespace scope."""

    name: str  # the declarator as written
    qualified: str  # with the namespaces the region opens
    line: int
    attrs: frozenset[str]
    internal: bool  # `static`, or in an anonymous namespace
    extern_c: bool
    foreign: bool  # `A::f` or `f<T>`: a qualified name or an explicit specialization


@dataclass(frozen=True)
class Variable:
    """A variable with static storage (or an `extern` one) the region declares."""

    name: str
    line: int
    where: str  # "namespace-scope", "static local", "thread_local", "static member", "extern"
    attrs: frozenset[str]
    constexpr: bool
    const: bool  # top-level const or constexpr
    type: str  # the declared type as written
    type_kind: str  # the type node's kind: primitive_type, type_identifier, struct_specifier...
    form: str  # "plain", "array", "const-pointer" (every level const), "pointer", "reference"
    initializer: str  # "" none, "constant" literals and operators, "plain", "runs-code"


class RegionDefinitions(RegionScopes):
    """Definitions and variables with static storage (see the module docstring)."""

    # Set by `RegionCode`: its dataclass fields and `__post_init__`.
    namespaces: list[tuple[str, int]]
    definitions: list[Definition]
    variables: list[Variable]

    # -- rule-1 and rule-2 facts: definitions and variables -----------------------------------

    def _top(
        self, node: tree_sitter.Node, spaces: list[str], *, internal: bool, extern_c: bool
    ) -> None:
        for child in node.named_children:
            kind = child.type
            if kind == "namespace_definition":
                name = child.child_by_field_name("name")
                body = child.child_by_field_name("body")
                inner = spaces
                if name is not None:
                    inner = [*spaces, self.text(name)]
                    self.namespaces.append(("::".join(inner), self.line(child)))
                if body is not None:
                    self._top(body, inner, internal=internal or name is None, extern_c=extern_c)
            elif kind == "linkage_specification":
                value = child.child_by_field_name("value")
                c_linkage = value is not None and self.text(value).strip('"') == "C"
                self._top(child, spaces, internal=internal, extern_c=extern_c or c_linkage)
            elif kind in ("declaration_list", "template_declaration"):
                self._top(child, spaces, internal=internal, extern_c=extern_c)
            elif kind in ("function_definition", "declaration"):
                self._definition(child, spaces, internal=internal, extern_c=extern_c)

    def _definition(
        self, node: tree_sitter.Node, spaces: list[str], *, internal: bool, extern_c: bool
    ) -> None:
        storage = self._storage(node)
        for declarator in node.children_by_field_name("declarator"):
            name, function = declarator_name(declarator)
            if name is None or not function:
                continue
            text = self.text(name)
            base = _plain_name(text).split("::")[0]
            foreign = (
                name.type in ("qualified_identifier", "template_function")
                and base not in self.own_types | self._defined_functions()
            ) or (name.type == "operator_name" and ("new" in text or "delete" in text))
            if node.type != "function_definition":
                continue
            self.definitions.append(
                Definition(
                    name=text,
                    qualified="::".join([*spaces, text]),
                    line=self.line(node),
                    attrs=self._attrs(node),
                    internal=internal or "static" in storage,
                    extern_c=extern_c,
                    foreign=foreign,
                )
            )

    def _defined_functions(self) -> set[str]:
        return set().union(*self._functions.values()) if self._functions else set()

    def _variables(self, node: tree_sitter.Node, where: str) -> None:
        """Record the variable declarators of a declaration with static storage."""
        storage = self._storage(node)
        qualifiers = {self.text(c) for c in node.children if c.type == "type_qualifier"}
        attrs = self._attrs(node)
        type_node = node.child_by_field_name("type")
        type_text = self.text(type_node) if type_node is not None else ""
        type_kind = type_node.type if type_node is not None else ""
        block = self._in_block(node)
        for declarator in node.children_by_field_name("declarator"):
            name, function = declarator_name(declarator)
            if name is None or (function and not block):
                continue
            value = declarator.child_by_field_name("value")
            if function:  # `static int x(y)` read as a function: its "parameters" are `y`
                value = declarator.child_by_field_name("parameters")
            initialized = declarator.type == "init_declarator" or function
            scope = "extern" if "extern" in storage and not initialized else where
            if "shared" in attrs:
                continue  # one copy per block, gone when the block ends
            self.variables.append(
                Variable(
                    name=self.text(name),
                    line=self.line(declarator),
                    where=scope,
                    attrs=attrs,
                    constexpr="constexpr" in qualifiers,
                    const="const" in qualifiers or "constexpr" in qualifiers,
                    type=type_text,
                    type_kind=type_kind,
                    form=_form(declarator),
                    initializer=_initializer(value) if value is not None else "",
                )
            )


def _plain_name(text: str) -> str:
    """`std :: vector < int >` -> `std::vector`: spaces and template arguments dropped."""
    out: list[str] = []
    depth = 0
    for char in text:
        depth += (char == "<") - (char == ">")
        if depth == 0 and char not in "<> \t\n":
            out.append(char)
    return "".join(out)


def _form(declarator: tree_sitter.Node) -> str:
    """How a declarator builds its type from the declared one."""
    node: tree_sitter.Node | None = declarator
    levels: list[bool] = []  # per pointer level: is the pointer itself const
    array = False
    while node is not None:
        kind = node.type
        if kind == "pointer_declarator":
            levels.append(
                any(c.type == "type_qualifier" and c.text == b"const" for c in node.children)
            )
        elif kind == "reference_declarator":
            return "reference"
        elif kind == "array_declarator":
            array = True
        elif kind in ("identifier", "field_identifier", "qualified_identifier"):
            break
        inner = node.child_by_field_name("declarator")
        node = inner or next(
            (c for c in node.named_children if c.type.endswith("declarator")), None
        )
    if levels:
        return "const-pointer" if all(levels) else "pointer"
    return "array" if array else "plain"


_RUNS_CODE = frozenset(
    ("call_expression", "new_expression", "lambda_expression", "ERROR", "co_await_expression",
     "throw_expression", "delete_expression")
)  # fmt: skip


def _initializer(value: tree_sitter.Node) -> str:
    """'runs-code' when it holds a call, `new`, a lambda or a parse error; 'constant' when it
    holds nothing but literals, operators and braces; else 'plain' (it names something)."""
    constant = True
    stack = [value]
    while stack:
        node = stack.pop()
        if node.type in _RUNS_CODE:
            return "runs-code"
        if node.type in ("identifier", "qualified_identifier", "field_expression", "this"):
            constant = False
        stack.extend(node.children)
    return "constant" if constant else "plain"
