"""Loops inside one kernel fused: consecutive `for` loops over the same range become one loop
whose body runs the first body, then the second, for each index (`for (l..8) nodes[l] = ...;
for (l..8) x[l] = X[nodes[l]];` -> one pass), so values stay in registers between them and the
index arithmetic and loop overhead are paid once.

Fusion reorders work across iterations; it is done only where that provably changes nothing:

- the two headers are the same after renaming the second loop's index to the first's, each loop
  declares its index, no body assigns the index or a name the bounds read;
- the bodies hold only what the allowlist below names (assignments, declarations, arithmetic,
  `if`, nested loops, and calls to side-effect-free math), so nothing leaves the thread, waits for
  other threads or hides a memory access;
- every name one body writes and the other touches is an array indexed by the loop index alone
  (`a[l]`, `a[l][c]`), so iteration l of each body touches only slice l; a scalar shared between
  the bodies refuses the fusion;
- two different arrays, one written by one body and touched by the other, are distinct objects:
  arrays the kernel declares, or pointers declared `__restrict__`; anything that might alias
  (plain pointers, globals, pointers made in the kernel) refuses the fusion.

Each body keeps its own braces when their local names would otherwise meet.
"""

from __future__ import annotations

import re

import tree_sitter

from nvcc_opt.search.cuda import Edit, Kernel, Source, edited, preceding_pragma, squeeze, walk
from nvcc_opt.search.kernel_facts import MEMORY_READS, PURE_CALL, Facts

ALLOWED = {
    "compound_statement", "expression_statement", "declaration", "init_declarator",
    "array_declarator", "assignment_expression", "binary_expression", "unary_expression",
    "update_expression", "subscript_expression", "subscript_argument_list", "identifier",
    "number_literal", "true", "false", "char_literal", "parenthesized_expression",
    "cast_expression", "type_descriptor", "primitive_type", "sized_type_specifier",
    "type_identifier", "type_qualifier", "conditional_expression", "if_statement",
    "condition_clause", "else_clause", "for_statement", "comment", "call_expression",
    "argument_list", "field_expression", "field_identifier", "initializer_list",
}  # fmt: skip
MAX_CHAIN = 16


# the words of a builtin arithmetic type
ARITHMETIC = {
    "int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "size_t",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
}  # fmt: skip
PARTS = ("condition", "update")


def fuse_loops(code: str, facts: Facts) -> str | None:
    """Every run of consecutive same-range loops in a kernel fused, or None."""
    del facts  # the proof needs no launch facts: distinctness comes from the kernel's own code
    new = code
    for _ in range(MAX_CHAIN):
        step = _fuse_first(new)
        if step is None:
            break
        new = step
    return new if new != code else None


def _fuse_first(code: str) -> str | None:
    source = Source(code)
    for kernel in source.kernels():
        kinds = _name_kinds(source, kernel)
        for block in walk(kernel.body):
            if block.type != "compound_statement":
                continue
            loops = [c for c in block.named_children if c.type not in ("comment", "preproc_call")]
            for first, second in zip(loops, loops[1:], strict=False):
                if first.type != "for_statement" or second.type != "for_statement":
                    continue
                if not _only_pragma_between(source, first, second):
                    continue
                fused = _fused(source, first, second, kinds)
                if fused is None:
                    continue
                result = edited(code, source, [Edit(first.start_byte, second.end_byte, fused)])
                if result is not None:
                    return result
    return None


def _only_pragma_between(source: Source, first: tree_sitter.Node, second: tree_sitter.Node) -> bool:
    """Between the loops: whitespace, comments, and a `#pragma` for the second equal to the
    first's (or none for both)."""
    pragma1, pragma2 = preceding_pragma(first), preceding_pragma(second)
    if (pragma1 is None) != (pragma2 is None):
        return False
    if (
        pragma1 is not None
        and pragma2 is not None
        and squeeze(source.text(pragma1)) != squeeze(source.text(pragma2))
    ):
        return False
    node = second.prev_sibling
    while node is not None and node != first:
        if node.type not in ("comment", "preproc_call") or (
            node.type == "preproc_call" and node != pragma2
        ):
            return False
        node = node.prev_sibling
    return node == first


def _header(source: Source, loop: tree_sitter.Node) -> tuple[str, str, str] | None:
    """(index, init, condition + update) of a loop that declares one index, or None."""
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or condition is None or update is None or init.type != "declaration":
        return None
    declarators = [c for c in init.children if c.type == "init_declarator"]
    if len(declarators) != 1:
        return None
    name = declarators[0].child_by_field_name("declarator")
    if name is None or name.type != "identifier":
        return None
    return source.text(name), source.text(init), source.text(condition) + ";" + source.text(update)


def _renamed(text: str, old: str, new: str) -> str:
    return text if old == new else re.sub(rf"\b{re.escape(old)}\b", new, text)


def _fused(
    source: Source, first: tree_sitter.Node, second: tree_sitter.Node, kinds: dict[str, str]
) -> bytes | None:
    head1, head2 = _header(source, first), _header(source, second)
    body1, body2 = first.child_by_field_name("body"), second.child_by_field_name("body")
    if head1 is None or head2 is None or body1 is None or body2 is None:
        return None
    index, index2 = head1[0], head2[0]
    if squeeze(head1[1] + head1[2]) != squeeze(_renamed(head2[1] + head2[2], index2, index)):
        return None
    if not (_allowed(source, body1) and _allowed(source, body2)):
        return None
    heads = [loop.child_by_field_name(part) for loop in (first, second) for part in PARTS]
    if any(n.type in MEMORY_READS for h in heads if h is not None for n in walk(h)):
        return None  # a bound read from memory a body may write: the trip counts could differ
    names2 = _identifiers(source, body2)
    if index != index2 and index in names2:
        return None  # the second body already means something else by the first's index
    bound_names = _identifiers(source, first.child_by_field_name("condition")) | _identifiers(
        source, first.child_by_field_name("initializer")
    )
    use1, use2 = _uses(source, body1, index), _uses(source, body2, index2)
    if use1 is None or use2 is None:
        return None
    for uses in (use1, use2):
        if uses.written & (bound_names | {index, index2}):
            return None
    if not _independent(use1, use2, kinds):
        return None
    between = _comments_between(source, first, second)
    indent = _indent(source, first)
    step = _body_indent(source, body1, indent)
    inner1 = _inner(source, body1, step)
    inner2 = _renamed(_inner(source, body2, step), index2, index)
    keep_apart = bool(use1.declared & (names2 | use2.declared)) or bool(
        use2.declared & _identifiers(source, body1)
    )
    if keep_apart:
        inner1 = f"{step}{{\n{_shift(inner1)}\n{step}}}"
        inner2 = f"{step}{{\n{_shift(inner2)}\n{step}}}"
    header = source.text(first)[: body1.start_byte - first.start_byte].rstrip()
    parts = [inner1] + [f"{step}{c}" for c in between] + [inner2]
    return f"{header}\n{indent}{{\n".encode() + "\n".join(parts).encode() + f"\n{indent}}}".encode()


class _Uses:
    def __init__(self) -> None:
        self.written: set[str] = set()  # roots assigned or updated
        # root -> the first subscript of each access, the index as `@` (None: not subscripted)
        self.touched: dict[str, set[str | None]] = {}
        self.declared: set[str] = set()  # names the body declares (its locals)


def _uses(source: Source, body: tree_sitter.Node, index: str) -> _Uses | None:
    uses = _Uses()
    for node in walk(body):
        if node.type in ("init_declarator", "array_declarator") or (
            node.type == "declaration" and node.child_by_field_name("declarator") is not None
        ):
            target = node.child_by_field_name("declarator")
            while target is not None and target.type != "identifier":
                target = target.child_by_field_name("declarator")
            if target is not None:
                uses.declared.add(source.text(target))
        if node.type != "identifier" or node.parent is None:
            continue
        parent = node.parent
        if parent.type in ("init_declarator", "array_declarator", "declaration") and (
            parent.child_by_field_name("declarator") == node
        ):
            continue
        if parent.type == "call_expression" and parent.child_by_field_name("function") == node:
            continue
        uses.touched.setdefault(source.text(node), set()).add(_subscript(source, node, index))
        root = source.text(node)
        if _is_written(_outer(node)):
            uses.written.add(root)
    for name in uses.declared:
        uses.touched.pop(name, None)
        uses.written.discard(name)
    return uses


def _subscript(source: Source, ident: tree_sitter.Node, index: str) -> str | None:
    """The first subscript of an access `ident[...]`, squeezed, the index written `@`; None for
    any other use of the name (a plain value, a field, under an index)."""
    parent = ident.parent
    if parent is None or parent.type != "subscript_expression":
        return None
    if parent.child_by_field_name("argument") != ident:
        return None
    indices = parent.child_by_field_name("indices")
    text = squeeze(source.text(indices)) if indices is not None else ""
    return re.sub(rf"\b{re.escape(index)}\b", "@", text)


def _injective(subscript: str | None, written: set[str]) -> bool:
    """Whether `[subscript]` names a different element for each index: the index alone, or the
    index plus (or after) a term that holds no index and nothing the bodies write."""
    if subscript is None:
        return False
    if subscript == "[@]":
        return True
    match = re.fullmatch(r"\[(?:@\+(?P<after>.+)|(?P<before>.+)\+@)\]", subscript)
    if match is None:
        return False
    term = match.group("after") or match.group("before")
    names = set(re.findall(r"[A-Za-z_]\w*", term))
    return "@" not in term and not names & written and bool(re.fullmatch(r"[\w()*+\-]+", term))


def _outer(ident: tree_sitter.Node) -> tree_sitter.Node:
    """The whole lvalue an identifier is the root of (`a[i][j].f`)."""
    node = ident
    while node.parent is not None and node.parent.type in (
        "subscript_expression",
        "field_expression",
        "parenthesized_expression",
    ):
        if (
            node.parent.type == "subscript_expression"
            and node.parent.child_by_field_name("argument") != node
        ):
            break
        node = node.parent
    return node


def _is_written(lvalue: tree_sitter.Node) -> bool:
    parent = lvalue.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression":
        return parent.child_by_field_name("left") == lvalue
    return parent.type == "update_expression"


def _independent(first: _Uses, second: _Uses, kinds: dict[str, str]) -> bool:
    """Whether no access of one body can meet an access of the other in another iteration, where
    either writes: the same name only through one subscript in both that names a different
    element for each index (`a[i]`, `a[row * W + i]`); different names only when one is the
    kernel's own (a local array or a value), or one is a `__restrict__` parameter (all access to
    what it reaches goes through it) and the other no pointer made in the kernel (which may be
    based on it)."""
    written = first.written | second.written
    for x, x_subscripts in first.touched.items():
        for y, y_subscripts in second.touched.items():
            if x not in first.written and y not in second.written:
                continue  # both only read
            kx, ky = kinds.get(x, "unknown"), kinds.get(y, "unknown")
            if x == y:
                both = x_subscripts | y_subscripts
                if len(both) != 1 or not _injective(next(iter(both)), written):
                    return False
            elif not ("own" in (kx, ky) or ("restrict" in (kx, ky) and "made" not in (kx, ky))):
                return False
    return True


def _name_kinds(source: Source, kernel: Kernel) -> dict[str, str]:
    """name -> "own" (an array the kernel declares, or a parameter or local that is a plain
    value of a builtin arithmetic type: memory no other name reaches), "restrict" (a
    `__restrict__` pointer parameter) or "made" (a pointer or reference the kernel declares, or
    a local of any other type: `auto p = x + 1` is a pointer, a struct may hold one); other
    names (plain pointer parameters, struct parameters, globals) are unknown."""
    kinds = {p.name: "restrict" for p in kernel.pointers if p.restrict}
    declarator = kernel.node.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator else None
    for param in parameters.named_children if parameters is not None else []:
        found = _declared(source, param.child_by_field_name("declarator"))
        if found is not None and found[1] == "value" and _arithmetic(source, param):
            kinds[found[0]] = "own"
    for node in walk(kernel.body):
        if node.type != "declaration":
            continue
        plain = _arithmetic(source, node)
        for child in node.children_by_field_name("declarator"):
            found = _declared(source, child)
            if found is not None:
                own = found[1] == "array" or (found[1] == "value" and plain)
                kinds[found[0]] = "own" if own else "made"
    return kinds


def _arithmetic(source: Source, declaration: tree_sitter.Node) -> bool:
    """Whether a declaration's type is a builtin arithmetic type (what holds no pointer)."""
    kind = declaration.child_by_field_name("type")
    words = set(source.words(kind).split()) - {"const", "volatile"} if kind else set()
    return bool(words) and words <= ARITHMETIC


def _declared(source: Source, node: tree_sitter.Node | None) -> tuple[str, str] | None:
    """(name, "value" | "array" | "pointer") of a declarator."""
    kind = "value"
    while node is not None and node.type != "identifier":
        if node.type in ("pointer_declarator", "reference_declarator", "function_declarator"):
            kind = "pointer"
        elif node.type == "array_declarator" and kind == "value":
            kind = "array"
        node = node.child_by_field_name("declarator")
    return None if node is None else (source.text(node), kind)


def _allowed(source: Source, body: tree_sitter.Node) -> bool:
    for node in walk(body):
        if node.is_named and node.type not in ALLOWED:
            return False
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            if function is None or not PURE_CALL.fullmatch(source.text(function)):
                return False
        if node.type == "unary_expression" and source.text(node).lstrip().startswith(("&", "*")):
            return False
    return True


def _identifiers(source: Source, node: tree_sitter.Node | None) -> set[str]:
    if node is None:
        return set()
    return {source.text(n) for n in walk(node) if n.type == "identifier"}


def _inner(source: Source, body: tree_sitter.Node, step: str) -> str:
    """The body's statements as text, without its braces, each line as it was (a body without
    braces, or braces on one line, at `step`)."""
    if body.type != "compound_statement":
        return step + source.text(body)
    if b"\n" not in source.data[body.start_byte : body.end_byte]:
        return step + source.text(body)[1:-1].strip()
    text = source.text(body)[1:-1]
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _comments_between(
    source: Source, first: tree_sitter.Node, second: tree_sitter.Node
) -> list[str]:
    found = []
    node = first.next_sibling
    while node is not None and node != second:
        if node.type == "comment":
            found.append(source.text(node))
        node = node.next_sibling
    return found


def _indent(source: Source, node: tree_sitter.Node) -> str:
    start = source.data.rfind(b"\n", 0, node.start_byte) + 1
    prefix = source.data[start : node.start_byte].decode("utf-8", "replace")
    return prefix if not prefix.strip() else ""


def _body_indent(source: Source, body: tree_sitter.Node, indent: str) -> str:
    statements = [c for c in body.named_children] if body.type == "compound_statement" else [body]
    for statement in statements:
        found = _indent(source, statement)
        if len(found) > len(indent):
            return found
    return indent + "    "


def _shift(text: str) -> str:
    return "\n".join(("    " + line) if line.strip() else line for line in text.split("\n"))
