"""What a tree-sitter parse of CUDA says about a declaration, shared by the symbol table
(`symbols.py`) and the region reader (`region_code.py` and its passes).

The CUDA grammar's parser (one, kept); the name a declarator declares and whether it declares a
function; whether a declarator makes a pointer, reference or function; the names in attribute
specifiers; and `blank_attributes`, which blanks the `__attribute__((...))` the table does not
keep (the grammar misreads some of them), rows unmoved. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import tree_sitter
import tree_sitter_cuda

_WORD = re.compile(r"[A-Za-z_]\w*")


@lru_cache(maxsize=1)
def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def attributes(node: tree_sitter.Node, text: Callable[[tree_sitter.Node], str]) -> frozenset[str]:
    """Names in the `__attribute__((...))` and `[[...]]` specifiers among `node`'s children."""
    found: set[str] = set()
    for child in node.children:
        if child.type in ("attribute_specifier", "attribute_declaration"):
            found.update(attribute_names(child, text))
    return frozenset(found)


def attribute_names(spec: tree_sitter.Node, text: Callable[[tree_sitter.Node], str]) -> list[str]:
    """The names one attribute specifier holds: `((device, launch_bounds(256)))`, `[[likely]]`."""
    names: list[str] = []
    for child in spec.named_children:
        items = child.named_children if child.type == "argument_list" else [child]
        for item in items:
            if item.type == "call_expression" and (fn := item.child_by_field_name("function")):
                item = fn
            elif item.type == "attribute" and (named := item.child_by_field_name("name")):
                item = named
            names.append(text(item).strip("_") if item.type != "ERROR" else "?")
    return names


def declarator_name(node: tree_sitter.Node) -> tuple[tree_sitter.Node | None, bool]:
    """The name a declarator declares, and whether it declares a function (not a pointer to
    one: the declarator nearest the name decides)."""
    function = False
    while node is not None:
        kind = node.type
        if kind in _NAMES:
            return node, function
        if kind in _FORMS:
            function = kind == "function_declarator"
        inner = node.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in node.named_children if c.type not in _NOT_INNER), None)
        if inner is None:
            return None, function
        node = inner
    return None, function


_FORMS = frozenset(
    ("function_declarator", "pointer_declarator", "reference_declarator", "array_declarator")
)
_NAMES = frozenset(
    ("identifier", "field_identifier", "type_identifier", "qualified_identifier", "operator_name",
     "destructor_name", "template_function", "primitive_type", "operator_cast")
)  # fmt: skip
_NOT_INNER = frozenset(("type_qualifier", "attribute_specifier", "ms_pointer_modifier"))


def _indirect(declarator: tree_sitter.Node) -> bool:
    """The declarator makes a pointer, reference or function (not the plain type, or arrays)."""
    node: tree_sitter.Node | None = declarator
    while node is not None:
        if node.type in ("pointer_declarator", "reference_declarator", "function_declarator"):
            return True
        if node.type in _NAMES:
            return False
        inner = node.child_by_field_name("declarator")
        node = inner or next((c for c in node.named_children if c.type not in _NOT_INNER), None)
    return False


# The attributes the table keeps; the grammar misreads others in some places (`enum
# __attribute__((device_builtin)) cudaError {` reads as a function and swallows what follows).
_KEPT_ATTRIBUTES = frozenset(("host", "device", "global", "constant", "shared", "managed"))


def blank_attributes(text: str) -> str:
    """`text` with every `__attribute__((...))` that holds none of `_KEPT_ATTRIBUTES` blanked
    (spaces, newlines kept, so rows do not move)."""
    pieces: list[str] = []
    done = 0
    at = text.find("__attribute__")
    while at >= 0:
        open_at = at + len("__attribute__")
        while open_at < len(text) and text[open_at] in " \t\n":
            open_at += 1
        end = _close(text, open_at) if text.startswith("(", open_at) else -1
        if end < 0:
            at = text.find("__attribute__", open_at)
            continue
        words = {w.strip("_") for w in _WORD.findall(text, open_at, end)}
        if not words & _KEPT_ATTRIBUTES:
            pieces += [text[done:at], "".join(c if c == "\n" else " " for c in text[at:end])]
            done = end
        at = text.find("__attribute__", end)
    pieces.append(text[done:])
    return "".join(pieces)


def _close(text: str, at: int) -> int:
    """One past the parenthesis that closes the one at `at`; -1 when none does."""
    depth = 0
    for i in range(at, min(len(text), at + 4096)):
        depth += (text[i] == "(") - (text[i] == ")")
        if depth == 0:
            return i + 1
    return -1
