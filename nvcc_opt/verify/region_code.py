"""What one side of a preprocessed region declares, defines, uses and calls (tree-sitter).

`RegionCode` reads the region's own preprocessed lines (`Side.region`) and keeps facts, with
lines counted in the code the model wrote: the names it uses that it does not declare itself
(scopes followed, so a local of the same name elsewhere hides nothing), its namespace-scope
definitions, its variables with static storage, attributes, pragmas, `asm` statements and kernel
launch streams. A name counts as the region's own only where a definition of it is in scope: a
prototype or an `extern` declaration owns nothing, it names something defined elsewhere.
Pure: no I/O; the rules that judge these facts are in `allowlist.py`.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import tree_sitter

from nvcc_opt.regions.lexer import DIRECTIVE, PUNCT, STRING, WORD, tokenize
from nvcc_opt.verify.declarations import word_set
from nvcc_opt.verify.preprocess import Side
from nvcc_opt.verify.symbols import attribute_names, declarator_name, parser

# Scope nodes: a name declared directly inside one is visible in all of it.
_SCOPES = frozenset(
    ("translation_unit", "compound_statement", "declaration_list", "field_declaration_list",
     "function_definition", "lambda_expression", "template_declaration", "for_statement",
     "for_range_loop", "if_statement", "while_statement", "switch_statement", "catch_clause",
     "enumerator_list", "requires_expression")
)  # fmt: skip
_STORAGE = frozenset(("static", "thread_local", "__thread"))
_DECLARATIONS = frozenset(("declaration", "field_declaration", "function_definition"))
_NAMESPACE_LEVEL = frozenset(("translation_unit", "declaration_list", "field_declaration_list"))
_PARAMETERS = frozenset(
    ("parameter_declaration", "optional_parameter_declaration",
     "variadic_parameter_declaration", "type_parameter_declaration",
     "optional_type_parameter_declaration", "variadic_type_parameter_declaration",
     "template_template_parameter_declaration")
)  # fmt: skip
_RECORDS = frozenset(("struct_specifier", "class_specifier", "union_specifier", "enum_specifier"))
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


@dataclass
class RegionCode:
    """The facts of one side of a region (see the module docstring)."""

    side: Side
    uses: list[Use] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)
    namespaces: list[tuple[str, int]] = field(default_factory=list)  # named ones opened
    variables: list[Variable] = field(default_factory=list)
    attributes: list[tuple[str, int]] = field(default_factory=list)
    directives: list[tuple[str, int]] = field(default_factory=list)  # surviving `#` lines
    host_asm: list[tuple[str, int]] = field(default_factory=list)  # asm outside device code
    launch_streams: list[tuple[str, int]] = field(default_factory=list)
    typedefs: dict[str, str] = field(default_factory=dict)  # the region's typedefs and aliases
    own_types: set[str] = field(default_factory=set)  # classes, enums, typedefs, parameters
    mutable_types: set[str] = field(default_factory=set)  # own classes with a mutable member
    enums: set[str] = field(default_factory=set)  # own enum types
    aliases: dict[str, str] = field(default_factory=dict)  # namespace aliases it declares
    unread_storage: list[tuple[str, int]] = field(default_factory=list)  # `static` not parsed

    def __post_init__(self) -> None:
        self.data = self.side.region.encode("utf-8", "surrogateescape")
        self.tree = parser().parse(self.data)
        self._declared: dict[int, set[str]] = defaultdict(set)
        self._functions: dict[int, set[str]] = defaultdict(set)  # namespace-scope functions
        self._declarators: set[int] = set()
        self._declared_at: set[int] = set()  # where declared names start, for the token scan
        self._storage_at: set[int] = set()  # where the parse read storage classes
        self._members: dict[str, set[str]] = defaultdict(set)  # class -> member names
        self._namespace_bodies: dict[str, list[tree_sitter.Node]] = defaultdict(list)
        root = self.tree.root_node
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20_000))
        try:
            self._declare(root)
            self._top(root, [], internal=False, extern_c=False)
            self._visit(root, device=False)
        finally:
            sys.setrecursionlimit(limit)
        self._scan_tokens()

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

    # -- robustness: calls the parse may have missed ------------------------------------------

    def _scan_tokens(self) -> None:
        """`name (` in the region's tokens, for calls inside ERROR nodes or missed otherwise."""
        data = self.data
        starts = [0] + [i + 1 for i, c in enumerate(data) if c == 10]
        tokens = [t for t in tokenize(data) if t[0] in (WORD, PUNCT, STRING, DIRECTIVE)]
        texts = [data[s:e].decode("utf-8", "replace") for _, s, e in tokens]
        seen = {(u.name, u.line) for u in self.uses if u.called}
        own = set().union(*self._declared.values()) if self._declared else set()
        skip_until = -1
        for i, (kind, start, _) in enumerate(tokens):
            if i <= skip_until or kind != WORD:
                continue
            if texts[i] in _STORAGE and start not in self._storage_at:
                self.unread_storage.append((texts[i], self._line_of_row(_row(starts, start))))
            if start in self._declared_at:
                continue
            if texts[i] in ("__attribute__", "__declspec", "asm", "__asm__", "__asm"):
                skip_until = _group_end(texts, i + 1)
                continue
            name, j = _qualified_at(texts, tokens, i)
            skip_until = j - 1
            if j >= len(texts) or texts[j] != "(" or name.split("::")[-1] in _KEYWORDS:
                continue
            if name[:1].isdigit() or name in own or ("::" in name and self._own_qualified(name)):
                continue
            method = i > 0 and texts[i - 1] in (".", "->")
            line = self._line_of_row(_row(starts, start))
            if (name, line) not in seen:
                self.uses.append(Use(name, line, called=True, method=method, shape=None))
                seen.add((name, line))


def _is_mutable(member: tree_sitter.Node) -> bool:
    return member.type == "field_declaration" and any(
        c.type == "type_qualifier" and c.text == b"mutable" for c in member.children
    )


def _row(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid
    return lo


def _qualified_at(texts: list[str], tokens: list[tuple[int, int, int]], i: int) -> tuple[str, int]:
    """The name `a::b::c` starting at token i, and the index after it."""
    parts = [texts[i]]
    j = i + 1
    while (
        j + 2 < len(texts) and texts[j] == ":" and texts[j + 1] == ":" and tokens[j + 2][0] == WORD
    ):
        parts.append(texts[j + 2])
        j += 3
    return "::".join(parts), j


def _group_end(texts: list[str], i: int) -> int:
    """The index of the `)` closing the first `(` at or after i (qualifiers skipped)."""
    while i < len(texts) and texts[i] != "(":
        if texts[i] in (";", "{", "}"):
            return i
        i += 1
    depth = 0
    for j in range(i, len(texts)):
        depth += (texts[j] == "(") - (texts[j] == ")")
        if depth == 0:
            return j
    return len(texts)


def _plain_name(text: str) -> str:
    """`std :: vector < int >` -> `std::vector`: spaces and template arguments dropped."""
    out: list[str] = []
    depth = 0
    for char in text:
        depth += (char == "<") - (char == ">")
        if depth == 0 and char not in "<> \t\n":
            out.append(char)
    return "".join(out)


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
