"""CUDA source as the search policy sees it: a tree-sitter parse (the CUDA grammar of
`tree-sitter-cuda`) and the facts the source transforms need, read from the tree, never by regex.

Offsets are byte offsets into the UTF-8 encoding of the code. Anything the grammar could not parse
(an ERROR or MISSING node inside a kernel) makes that kernel opaque: no transform touches it.
Preprocessor conditionals are parsed as one branch of each group (`conditionals.view`: the other
branches and the directive lines blanked, offsets kept); node text is the original's, and an
edit that would change a blanked byte is refused (`edited`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter
import tree_sitter_cuda

from nvcc_opt.search.conditionals import preserved, view

# Element types __ldg has overloads for (CUDA C++ Programming Guide, read-only data cache load).
LDG_TYPES = frozenset(
    ["char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int",
     "unsigned", "long", "unsigned long", "long long", "unsigned long long", "float", "double",
     "char2", "char4", "uchar2", "uchar4", "short2", "short4", "ushort2", "ushort4", "int2", "int4",
     "uint2", "uint4", "longlong2", "ulonglong2", "float2", "float4", "double2", "__half",
     "__half2", "__nv_bfloat16", "__nv_bfloat162"]
)  # fmt: skip


class ParseError(ValueError):
    """The code could not be parsed well enough to transform it."""


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    text: bytes


@dataclass(frozen=True)
class PointerParam:
    name: str
    element: str  # the pointee's type as written, without qualifiers ("float", "T", "real_t")
    const: bool  # the pointee is const
    restrict: bool
    type_start: int  # where `const ` goes
    star_end: int  # just after the `*`, where ` __restrict__` goes
    written: bool  # stored through, updated, or its address or value escapes
    reads: tuple[tree_sitter.Node, ...]  # every `name[...]` read (the subscript expressions)

    @property
    def read_only(self) -> bool:
        return not self.written


@dataclass(frozen=True)
class Kernel:
    name: str
    node: tree_sitter.Node  # the function_definition
    body: tree_sitter.Node
    declarator_start: int  # where `__launch_bounds__(N) ` goes
    launch_bounds: bool
    pointers: tuple[PointerParam, ...]
    params: tuple[str, ...]


class Source:
    """One parse of `code`."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.data = code.encode("utf-8")
        self.view = view(self.data)  # one branch of each preprocessor conditional
        self.tree = _parser().parse(self.view.data)
        self.root = self.tree.root_node

    def text(self, node: tree_sitter.Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def words(self, node: tree_sitter.Node) -> str:
        """The node's text with each run of whitespace as one space (`unsigned   long`)."""
        return " ".join(self.text(node).split())

    def errors(self) -> int:
        return sum(1 for n in walk(self.root) if n.is_error or n.is_missing)

    def kernels(self) -> list[Kernel]:
        """Every `__global__` function definition the grammar parsed cleanly."""
        found = []
        for node in walk(self.root):
            if node.type != "function_definition" or node.has_error:
                continue
            if not any(child.type == "__global__" for child in node.children):
                continue
            kernel = self._kernel(node)
            if kernel is not None:
                found.append(kernel)
        return found

    def _kernel(self, node: tree_sitter.Node) -> Kernel | None:
        declarator = node.child_by_field_name("declarator")
        body = node.child_by_field_name("body")
        if declarator is None or body is None or declarator.type != "function_declarator":
            return None
        name_node = declarator.child_by_field_name("declarator")
        parameters = declarator.child_by_field_name("parameters")
        if name_node is None or parameters is None:
            return None
        params, pointers = [], []
        for param in parameters.named_children:
            if param.type != "parameter_declaration":
                continue
            pointer = self._pointer(param, body)
            if pointer is not None:
                pointers.append(pointer)
                params.append(pointer.name)
            else:
                ident = declared_name(param)
                if ident is not None:
                    params.append(self.text(ident))
        return Kernel(
            name=self.text(name_node),
            node=node,
            body=body,
            declarator_start=declarator.start_byte,
            launch_bounds=any(child.type == "launch_bounds" for child in node.children),
            pointers=tuple(pointers),
            params=tuple(params),
        )

    def _pointer(self, param: tree_sitter.Node, body: tree_sitter.Node) -> PointerParam | None:
        declarator = param.child_by_field_name("declarator")
        type_node = param.child_by_field_name("type")
        if declarator is None or type_node is None or declarator.type != "pointer_declarator":
            return None
        inner = declarator.child_by_field_name("declarator")
        if inner is None or inner.type != "identifier":
            return None  # pointer to pointer, function pointer, ...: left alone
        star = next(c for c in declarator.children if c.type == "*")
        modifiers = [self.text(c) for c in declarator.children if c.type != "*" and c != inner]
        const = any(
            c.type == "type_qualifier" and self.text(c) == "const" for c in param.children
        ) or any(self.text(c) == "const" for c in type_node.children)
        name = self.text(inner)
        written, reads = self._uses(name, body)
        first = param.children[0]
        return PointerParam(
            name=name,
            element=self.text(type_node),
            const=const,
            restrict=any("restrict" in m for m in modifiers),
            type_start=first.start_byte,
            star_end=star.end_byte,
            written=written,
            reads=tuple(reads),
        )

    def _uses(self, name: str, body: tree_sitter.Node) -> tuple[bool, list[tree_sitter.Node]]:
        """(written, reads): a use other than a plain read `name[i]` counts as written."""
        reads = []
        written = False
        for node in walk(body):
            if node.type in ("identifier", "field_identifier") and self.text(node) == name:
                if node.type == "field_identifier":
                    continue  # `s.name` is another thing
                kind = self._use(node)
                if kind == "read":
                    assert node.parent is not None
                    reads.append(node.parent)
                else:
                    written = True
            elif _declares(node, name, self):
                written = True  # shadowed by a local: not worth reasoning about
        return written, reads

    def _use(self, ident: tree_sitter.Node) -> str:
        sub = ident.parent
        if sub is None or sub.type != "subscript_expression":
            return "escapes"
        if sub.child_by_field_name("argument") != ident:
            return "escapes"
        outer = sub
        while outer.parent is not None and outer.parent.type in (
            "field_expression",
            "parenthesized_expression",
        ):
            outer = outer.parent
        context = outer.parent
        if context is None:
            return "escapes"
        if context.type == "assignment_expression" and context.child_by_field_name("left") == outer:
            return "written"
        if context.type == "update_expression":
            return "written"
        if context.type == "pointer_expression":
            return "escapes"  # &name[i]: an address, maybe written through
        return "read"


def walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """`node` and everything under it, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def apply(code: str, edits: Iterable[Edit]) -> str:
    """`code` with `edits` (byte ranges of its UTF-8 form) applied; overlapping edits are a bug."""
    data = code.encode("utf-8")
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after.start < before.end:
            raise ParseError(f"overlapping edits at bytes {before.start} and {after.start}")
    for edit in reversed(ordered):
        data = data[: edit.start] + edit.text + data[edit.end :]
    return data.decode("utf-8")


def edited(code: str, source: Source, edits: list[Edit]) -> str | None:
    """`code` with `edits` applied, or None when there are none, they overlap, they change a
    preprocessor directive or a branch the parse did not see, or the result parses worse than
    `source` (a transform never makes the parse worse)."""
    if not edits:
        return None
    try:
        new = apply(code, edits)
    except ParseError:
        return None
    if not preserved(code.encode("utf-8"), new.encode("utf-8")):
        return None
    return new if Source(new).errors() <= source.errors() else None


def define(found: dict[str, str], dropped: set[str], name: str, value: str) -> None:
    """Record `name` as `value` in `found`, unless it was dropped: a name defined two ways (a
    precision switch, a configuration) is dropped from `found` for good."""
    if name in dropped:
        return
    if found.get(name, value) != value:
        dropped.add(name)
        found.pop(name, None)
        return
    found[name] = value


# A string or character literal (kept), a comment or whitespace (dropped), for `squeeze`.
_LEXEMES = re.compile(r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|//[^\n]*|/\*.*?\*/|\s+", re.S)


def squeeze(text: str) -> str:
    """`text` without any whitespace or comment, for comparing small expressions and statements
    by their form (real code comments its steps: `x += y; // accumulate`)."""
    return _LEXEMES.sub(lambda m: "".join(m[0].split()) if m[0][0] in "\"'" else "", text)


def function_of(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The function definition `node` lies in; None at file scope."""
    parent = node.parent
    while parent is not None and parent.type != "function_definition":
        parent = parent.parent
    return parent


def extern_shared(source: Source) -> bool:
    """Whether `source` declares an `extern __shared__` array: every one of them is the same
    memory, whatever its name and size."""
    return any(
        node.type == "declaration"
        and {"extern", "__shared__"} <= set(source.text(node).split("[")[0].split())
        for node in walk(source.root)
    )


def operator_type(node: tree_sitter.Node) -> str | None:
    """A binary or assignment expression's operator (`+`, `/`, `<`, `+=`), else None."""
    operator = node.child_by_field_name("operator")
    return None if operator is None else operator.type


def calls_macro(source: Source, node: tree_sitter.Node) -> bool:
    """Whether `node` calls an upper-case name: a macro that may hide a `return` or a jump."""
    if node.type != "call_expression":
        return False
    function = node.child_by_field_name("function")
    name = "" if function is None else source.text(function)
    return name.isupper() and name.isidentifier()


def launch_calls(source: Source) -> Iterator[tuple[str, list[tree_sitter.Node]]]:
    """(kernel name, [grid, block, ...] nodes) of every `kernel<<<grid, block>>>(...)`."""
    for node in walk(source.root):
        if node.type != "call_expression":
            continue
        syntax = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
        function = node.child_by_field_name("function")
        config = [] if syntax is None else syntax.named_children
        if function is not None and len(config) >= 2:
            yield source.text(function), config


def fresh_name(stem: str, used: set[str]) -> str:
    """`stem`, or `stem2`, `stem3`, ...: the first not in `used`."""
    name, n = stem, 1
    while name in used:
        n += 1
        name = f"{stem}{n}"
    return name


def indentation(source: Source, node: tree_sitter.Node) -> bytes:
    """The whitespace before `node` on its line."""
    line_start = source.data.rfind(b"\n", 0, node.start_byte) + 1
    prefix = source.data[line_start : node.start_byte]
    return prefix if not prefix.strip() else b""


def identifiers(source: Source, node: tree_sitter.Node) -> set[str]:
    return {source.text(n) for n in walk(node) if n.type == "identifier"}


def preceding_pragma(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The `#pragma` line right before `node`, if there is one."""
    previous = node.prev_named_sibling
    if previous is not None and previous.type == "preproc_call":
        directive = previous.child_by_field_name("directive")
        if directive is not None and directive.text == b"#pragma":
            return previous
    return None


def modified(source: Source, node: tree_sitter.Node) -> set[str]:
    """Names assigned, updated or declared anywhere under `node`."""
    names: set[str] = set()
    for n in walk(node):
        target: tree_sitter.Node | None = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        elif n.type in ("init_declarator", "declaration"):
            target = n.child_by_field_name("declarator")
        while target is not None and target.type not in ("identifier",):
            target = target.child_by_field_name("declarator") or target.child_by_field_name(
                "argument"
            )
        if target is not None:
            names.add(source.text(target))
    return names


def declared_name(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The identifier a declaration, parameter or declarator declares (through `*`, `[]`, `=`)."""
    target = node.child_by_field_name("declarator")
    while target is not None and target.type != "identifier":
        target = target.child_by_field_name("declarator")
    return target


def _declares(node: tree_sitter.Node, name: str, source: Source) -> bool:
    if node.type not in ("init_declarator", "declaration"):
        return False
    target = declared_name(node)
    return target is not None and source.text(target) == name


def calls(source: Source, node: tree_sitter.Node) -> Sequence[str]:
    """Names of the functions called under `node`."""
    found = []
    for n in walk(node):
        if n.type == "call_expression":
            function = n.child_by_field_name("function")
            if function is not None:
                found.append(source.text(function))
    return found
