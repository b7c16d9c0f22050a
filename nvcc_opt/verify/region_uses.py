"""Pass 2 of reading one side of a region: the names it uses, attributes, `#` lines, host `asm`
and kernel launch streams (`Use`).

`RegionUses` is the third base of `region_code.RegionCode` (after `RegionDefinitions`): it visits
the tree and records each name the region uses without a definition of it in scope (scopes
followed, so a local of the same name elsewhere hides nothing) or that names one of its own
namespace-scope functions (which overload resolution could trade for another), with whether it is
called, through `.` or `->`, where C++ reads a type, and the string literals a call passes.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.verify.declarations import word_set
from nvcc_opt.verify.region_definitions import RegionDefinitions, _plain_name
from nvcc_opt.verify.syntax import attribute_names, declarator_name

_STRINGS = frozenset(("string_literal", "raw_string_literal", "concatenated_string"))
_KEYWORDS = word_set(
    "if for while switch return sizeof alignof alignas decltype static_assert typeid noexcept "
    "throw catch new delete operator asm __asm__ __asm volatile __volatile__ __attribute__ "
    "__declspec _Pragma __extension__ static_cast dynamic_cast reinterpret_cast const_cast "
    "defined do else case goto template typename requires co_await co_return co_yield "
    "__typeof__ typeof __alignof__ __builtin_offsetof __builtin_va_arg"
)


@dataclass(frozen=True)
class Use:
    """A name the region uses without a definition of it in scope, or one of its own
    namespace-scope functions (which overload resolution could trade for another)."""

    name: str  # as written, template arguments dropped: `std::getenv`, `detach`
    line: int
    called: bool = False
    method: bool = False  # after `.` or `->`
    type_context: bool = False  # where C++ reads a type
    shape: tuple[tuple[str, ...], ...] | None = None  # a call's string literals, by argument
    own_overload: bool = False  # the region defines a function of this name (it may overload)


class RegionUses(RegionDefinitions):
    """The names the region uses, and what else the second pass records (module docstring)."""

    # Set by `RegionCode`: its dataclass fields and `__post_init__`.
    tree: tree_sitter.Tree
    uses: list[Use]
    attributes: list[tuple[str, int]]
    directives: list[tuple[str, int]]
    host_asm: list[tuple[str, int]]
    launch_streams: list[tuple[str, int]]
    _storage_at: set[int]

    # -- pass 2: uses -------------------------------------------------------------------------

    def _visit(self, node: tree_sitter.Node, device: bool) -> None:
        kind = node.type
        if kind in ("attribute_specifier", "attribute_declaration"):
            for name in attribute_names(node, self.text):
                self.attributes.append((name, self.line(node)))
            return
        if kind == "ms_declspec_modifier":
            self.attributes.append(("__declspec", self.line(node)))
            return
        if kind in ("preproc_call", "preproc_def", "preproc_function_def", "preproc_include"):
            self.directives.append((self.text(node).strip(), self.line(node)))
            return
        if kind == "gnu_asm_expression" and not device:
            self.host_asm.append((" ".join(self.text(node).split()), self.line(node)))
        if kind in ("function_definition", "lambda_expression"):
            attrs = self._attrs(node) if kind == "function_definition" else frozenset()
            device = device or (bool(attrs & {"device", "global"}) and "host" not in attrs)
        if kind in ("declaration", "field_declaration"):
            self._static_storage(node)
        if kind == "storage_class_specifier" and node.parent is not None and node.parent.type in (
            "declaration", "field_declaration", "function_definition"
        ):  # fmt: skip
            self._storage_at.add(node.start_byte)
        if kind == "kernel_call_syntax":
            config = node.named_children
            if len(config) >= 4:
                self.launch_streams.append(
                    (" ".join(self.text(config[3]).split()), self.line(node))
                )
        if kind in ("identifier", "type_identifier", "qualified_identifier", "field_identifier"):
            self._use(node)
            for child in _template_arguments(node):
                self._visit(child, device)
            return
        if kind == "field_designator":
            return
        for child in node.children:
            self._visit(child, device)

    def _static_storage(self, node: tree_sitter.Node) -> None:
        storage = self._storage(node)
        scope = self._scope_of(node)
        if scope.type in ("translation_unit", "declaration_list"):
            self._variables(node, "namespace-scope")
        elif scope.type == "field_declaration_list" and "static" in storage:
            self._variables(node, "static member")
        elif "thread_local" in storage or "__thread" in storage:
            self._variables(node, "thread_local")
        elif "static" in storage:
            self._variables(node, "static local")
        elif "extern" in storage:
            self._variables(node, "extern")

    def _use(self, node: tree_sitter.Node) -> None:
        if node.id in self._declarators or _in_declarator_name(node, self._declarators):
            return
        parent = node.parent
        kind = node.type
        if kind == "field_identifier":
            call = _called_through(node)
            if call is None:
                return  # a data member: reading one is not a call
            if any(self.text(node) in members for members in self._members.values()):
                return
            use = Use(self.text(node), self.line(node), True, True, False, self._shape(call))
            self.uses.append(use)
            return
        if parent is not None and parent.type == "namespace_alias_definition":
            return
        text = _plain_name(self.text(node))
        if not text or text in _KEYWORDS or text in ("this", "__func__", "__PRETTY_FUNCTION__"):
            return
        own = self._own(node, text)
        if own and text.rsplit("::", 1)[-1] not in self._defined_functions():
            return  # the region's own variable, type or member
        call = _called_through(node)
        self.uses.append(
            Use(
                name=text,
                line=self.line(node),
                called=call is not None,
                type_context=kind == "type_identifier" or _in_type_position(node),
                shape=self._shape(call) if call is not None else None,
                own_overload=own,
            )
        )

    def _own(self, node: tree_sitter.Node, text: str) -> bool:
        """Whether a definition of `text` (its first component, if qualified) is in scope."""
        if "::" in text:
            return self._own_qualified(text)
        up = node.parent
        while up is not None:
            if text in self._declared.get(up.id, ()):
                return True
            if up.type == "function_definition" and text in self._outer_members(up):
                return True
            up = up.parent
        return False

    def _own_qualified(self, text: str) -> bool:
        """`A::x` with A a class of the region, or a name the region defines in namespace A
        (opening a namespace owns what it defines there, not the rest of it)."""
        parts = text.split("::")
        if not parts[0]:
            return parts[1] in self._declared.get(self.tree.root_node.id, ())
        if parts[0] in self.own_types:
            return True
        bodies = self._namespace_bodies.get(parts[-2], [])
        return any(parts[-1] in self._declared.get(body.id, ()) for body in bodies)

    def _outer_members(self, function: tree_sitter.Node) -> set[str]:
        """Members of the region's class whose method `A::f` this out-of-class body defines."""
        declarator = function.child_by_field_name("declarator")
        name = declarator_name(declarator)[0] if declarator is not None else None
        if name is None or name.type != "qualified_identifier":
            return set()
        return self._members.get(self.text(name).split("::")[0], set())

    def _shape(self, call: tree_sitter.Node) -> tuple[tuple[str, ...], ...]:
        """What a call passes: per argument, every string literal in it."""
        arguments = call.child_by_field_name("arguments")
        if arguments is None:
            return ()
        return tuple(
            tuple(" ".join(self.text(s).split()) for s in _strings(arg))
            for arg in arguments.named_children
            if arg.type != "comment"
        )


_TEMPLATED = frozenset(
    ("qualified_identifier", "template_function", "template_type", "template_method")
)


def _template_arguments(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    for child in node.children:
        if child.type == "template_argument_list":
            yield child
        elif child.type in _TEMPLATED:
            yield from _template_arguments(child)


def _called_through(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The call_expression whose callee `node` names (through templates, qualifiers, `.`)."""
    child, up = node, node.parent
    while up is not None and up.type in (
        "template_function", "qualified_identifier", "template_method", "field_expression",
        "parenthesized_expression", "template_type",
    ):  # fmt: skip
        if up.type == "field_expression" and up.child_by_field_name("field") != child:
            return None
        child, up = up, up.parent
    if up is not None and up.type == "call_expression":
        function = up.child_by_field_name("function")
        if function is not None and function.id == child.id:
            return up
    return None


def _in_declarator_name(node: tree_sitter.Node, declarators: set[int]) -> bool:
    up = node.parent
    while up is not None and up.type in ("qualified_identifier", "template_function"):
        if up.id in declarators:
            return True
        up = up.parent
    return False


def _in_type_position(node: tree_sitter.Node) -> bool:
    up = node.parent
    while up is not None and up.type in ("qualified_identifier", "template_type"):
        node, up = up, up.parent
    if up is None:
        return False
    field_type = up.child_by_field_name("type")
    return field_type is not None and field_type.id == node.id


def _strings(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    if node.type in _STRINGS:
        yield node
        return
    for child in node.children:
        yield from _strings(child)
