"""The names a region declares where code outside it can see them, and the names that code uses.

A region is compiled in the middle of its translation unit, so a namespace-scope declaration it
adds is visible to everything after it and, through overload resolution, argument-dependent
lookup and template instantiation (which happens at the end of the unit), to code before it as
well. A new overload `verify(float*, float*, int)` beside an outside `verify(const float*, ...)`,
or a `template<> struct Tol<float>` specializing an outside template, changes what the code
outside the region computes without a line of that code changing.

`exports` lists what one side of a region declares at namespace scope (functions, variables,
types, specializations, enumerators of unscoped enums, aliases, using-declarations and
-directives), by the name outside code would spell; `outside_of` reads what a preprocessed unit
uses outside the region's rows; `first_use_outside` says where one name is used.
Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.verify.preprocess import Side, linemarker
from nvcc_opt.verify.region_code import RegionCode
from nvcc_opt.verify.syntax import declarator_name

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RECORDS = frozenset(("struct_specifier", "class_specifier", "union_specifier", "enum_specifier"))
_OPENERS = frozenset(("linkage_specification", "declaration_list", "template_declaration"))


@dataclass(frozen=True)
class Export:
    """One namespace-scope declaration of the region, by the name code outside would use."""

    name: str  # the last component, template arguments dropped; `operator+` for operators
    kind: str  # "function", "specialization", "variable", "class" (a struct, class, union or
    # enum with its body), "type" (a typedef or alias), "enumerator", "using",
    # "using namespace" (its name: `using namespace X`)
    line: int
    parameter_types: tuple[str, ...] = ()  # an operator's parameters' type names
    parameters: str = ""  # a function's parameter list, whitespace collapsed
    defined: bool = True  # False for a function prototype

    @property
    def key(self) -> tuple[str, str]:
        """What tells two declarations of one name apart: a prototype and the definition of
        the same function share it."""
        return self.kind, self.parameters


def exports(code: RegionCode) -> list[Export]:
    """What the region declares at namespace scope (see the module docstring)."""
    found: list[Export] = []
    _walk(code, code.tree.root_node, found)
    return found


def _walk(code: RegionCode, node: tree_sitter.Node, found: list[Export]) -> None:
    for child in node.named_children:
        kind = child.type
        if kind == "namespace_definition":
            body = child.child_by_field_name("body")
            if body is not None:
                _walk(code, body, found)
        elif kind in _OPENERS:
            _walk(code, child, found)
        elif kind in ("function_definition", "declaration", "type_definition"):
            _declaration(code, child, found)
        elif kind in _RECORDS:
            _record(code, child, found)
        elif kind in ("alias_declaration", "namespace_alias_definition", "concept_definition"):
            name = child.child_by_field_name("name") or next(iter(child.named_children), None)
            if name is not None:
                found.append(Export(_base(code.text(name)), "type", code.line(child)))
        elif kind == "using_declaration":
            text = code.text(child)
            words = text.removesuffix(";").split()
            if len(words) >= 3 and words[1] == "namespace":
                found.append(Export(" ".join(words), "using namespace", code.line(child)))
            elif words:
                found.append(Export(_base(words[-1]), "using", code.line(child)))


def _declaration(code: RegionCode, node: tree_sitter.Node, found: list[Export]) -> None:
    kind = node.type
    type_node = node.child_by_field_name("type")
    if type_node is not None and type_node.type in _RECORDS:
        _record(code, type_node, found)
    for declarator in node.children_by_field_name("declarator"):
        name, function = declarator_name(declarator)
        if name is None:
            continue
        text = code.text(name)
        line = code.line(node)
        if name.type == "qualified_identifier":
            scope = _base(text.split("::")[0])
            if scope in code.own_types:
                continue  # `S::f` of a class the region defines: reached only through S
            # `Checker<int>::slack`, `A::f`: a member or specialization of what outside code
            # owns, reaching wherever that is used
            found.append(
                Export(scope, "specialization", line, parameters=_parameters(code, declarator))
            )
            continue
        if kind == "type_definition":
            found.append(Export(_base(text), "type", line))
        elif name.type == "operator_name":
            symbol = "operator" + text.removeprefix("operator").strip()
            types = _parameter_types(code, declarator)
            params = _parameters(code, declarator)
            found.append(Export(symbol, "function", line, types, params, _is_definition(node)))
        else:
            what = "function" if function else "variable"
            if name.type == "template_function":
                what = "specialization"
            params = _parameters(code, declarator) if function else ""
            defined = _is_definition(node) if function else True
            found.append(Export(_base(text), what, line, (), params, defined))


def _is_definition(node: tree_sitter.Node) -> bool:
    return node.type == "function_definition"


def _parameter_list(declarator: tree_sitter.Node) -> tree_sitter.Node | None:
    """The parameter list of the function declarator inside `declarator`, if any."""
    node: tree_sitter.Node | None = declarator
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    return node.child_by_field_name("parameters") if node is not None else None


def _parameters(code: RegionCode, declarator: tree_sitter.Node) -> str:
    """The parameter types of a function declarator, names and default values left out, so a
    prototype and its definition read the same: `(float*, const float*, int)`."""
    params = _parameter_list(declarator)
    if params is None:
        return ""
    shown: list[str] = []
    for param in params.named_children:
        cut: list[tuple[int, int]] = []
        inner = param.child_by_field_name("declarator")
        name = declarator_name(inner)[0] if inner is not None else None
        if name is not None:
            cut.append((name.start_byte, name.end_byte))
        value = param.child_by_field_name("default_value")
        if value is not None:
            cut.append((value.start_byte - 1, value.end_byte))  # with its `=`
        text, at = b"", param.start_byte
        for start, end in sorted(cut):
            text += code.data[at:start]
            at = max(at, end)
        text += code.data[at : param.end_byte]
        shown.append(" ".join(text.decode("utf-8", "replace").replace("=", " ").split()))
    return "(" + ", ".join(shown) + ")"


def _record(code: RegionCode, node: tree_sitter.Node, found: list[Export]) -> None:
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if body is None:
        return  # a use of the type or a forward declaration: declares nothing new to judge
    if name is not None:
        what = "specialization" if name.type == "template_type" else "class"
        found.append(Export(_base(code.text(name)), what, code.line(node)))
    scoped = any(c.type in ("class", "struct") for c in node.children)
    if node.type == "enum_specifier" and not scoped:
        for item in body.named_children:
            if item.type == "enumerator" and (label := item.child_by_field_name("name")):
                found.append(Export(code.text(label), "enumerator", code.line(item)))


def _parameter_types(code: RegionCode, declarator: tree_sitter.Node) -> tuple[str, ...]:
    """The type names of a function declarator's parameters (`const S&` -> `S`)."""
    params = _parameter_list(declarator)
    names: list[str] = []
    for param in params.named_children if params is not None else ():
        type_node = param.child_by_field_name("type")
        if type_node is not None:
            names.append(_base(code.text(type_node).split()[-1]))
    return tuple(names)


def _base(text: str) -> str:
    """`ns::Tol<float>` -> `Tol`."""
    depth, out = 0, []
    for char in text:
        depth += (char == "<") - (char == ">")
        if depth == 0 and char not in "<>":
            out.append(char)
    return "".join(out).split("::")[-1].strip()


@dataclass(frozen=True)
class OuterOperator:
    """A line outside the region that names an operator function."""

    symbol: str  # `operator+`
    project: bool  # in a project file (not a system header)
    words: frozenset[str]  # the identifiers on its line


@dataclass(frozen=True)
class Outside:
    """What the preprocessed unit uses outside the region's rows: its identifiers before and
    after them (linemarkers and string literals included: a name there too counts, erring toward
    refusing), and the operator functions it names."""

    before: frozenset[str]
    after: frozenset[str]
    operators: tuple[OuterOperator, ...]


_OPERATOR = re.compile(
    r"\boperator\s*(<<=|>>=|<=>|->\*|\(\s*\)|\[\s*\]|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|\+=|-=|"
    r"\*=|/=|%=|&=|\|=|\^=|->|[-+*/%^&|~!=<>,])"
)


def outside_of(side: Side) -> Outside:
    """`Outside` of one side, from one reading of its unit."""
    first, last = side.chunk
    rows = side.unit.split("\n")
    operators: list[OuterOperator] = []
    for row, text in enumerate(rows):
        if "operator" not in text or first <= row <= last:
            continue
        words = frozenset(_WORD.findall(text))
        project = not side.file_at(row).system
        for match in _OPERATOR.finditer(text):
            symbol = "operator" + "".join(match.group(1).split())
            operators.append(OuterOperator(symbol, project, words))
    return Outside(
        before=frozenset(_WORD.findall("\n".join(rows[:first]))),
        after=frozenset(_WORD.findall("\n".join(rows[last + 1 :]))),
        operators=tuple(operators),
    )


def first_use_outside(side: Side, name: str, *, after_only: bool = False) -> str:
    """`FILE:LINE` of the first use of `name` outside the region in `side`'s unit (after it,
    with `after_only`), or ''."""
    first, last = side.chunk
    if after_only:
        first = 0
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
    file, line = "", 0
    for row, text in enumerate(side.unit.split("\n")):
        marker = linemarker(text) if text.startswith("# ") else None
        if marker is not None:
            file, line = marker[1], marker[0] - 1
            continue
        line += 1
        if not first <= row <= last and word.search(text):
            return f"{file}:{line}"
    return ""


_VECTOR = re.compile(r"(u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4]|__half2|half2")
ARITHMETIC = frozenset(
    ("bool", "char", "short", "int", "long", "unsigned", "signed", "float", "double", "size_t")
)


def builtin_vector(name: str) -> bool:
    """A CUDA built-in vector type (`float4`, `int2`, `__half2`, ...)."""
    return _VECTOR.fullmatch(name) is not None
