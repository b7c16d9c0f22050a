"""A division by a product split in two, so that its first half is a division already there.

A cell's coordinates from its flat index are often written `i = z % n; j = (z / n) % n;
k = z / ((long)n * n);`: three divisions, and a 64-bit one is a call of a few dozen
instructions. Written `k = ((z / (long)n) / n)`, the first division is the one `j` already
does, which the compiler then computes once: two divisions instead of three.

The rewrite is `E / (A * B)` to `((E / A) / B)` (or `((E / B) / A)`), where the kernel also
divides (or takes the remainder of) E by the factor that goes first. E, A and B are each a
name, a cast of a name to a signed integer type, or a decimal literal without `u` that fits a
signed 64-bit integer. A name must be of a signed integer type spelled with keywords only
(`int`, `long`, `long long`, `short`, `signed`, `const`; names such as `int64_t` can be a
template parameter, an enum or a struct of the region's own), declared exactly once in the
kernel, as one of its parameters or as a plain local whose scope holds the division and which
comes before it; a cast may also read an unsigned name. Every other occurrence of the name in
the kernel must be a use in an expression, and none where C++ could read a declarator
(`U(n) = u;` declares n where U is a type). That refuses whatever could make the name something
else there: another declaration in an inner scope, a range-for variable, a lambda's parameter or
capture, an enumerator, a structured binding, a `using`, a field, a reference, `::n`.

The division must be the whole value of an initializer, an assignment or a `return` (nothing
before it that a macro such as `#define SCALE 100 *` could bind to E), and at least one operand
must read a parameter or a local not declared `const` (so it is never evaluated at compile
time, where a split that overflows would stop the compile). Refused too: a division anywhere in
a call's argument (were the call a macro, it could regroup or stringify it), in a lambda, or in
a constant expression (`static_assert`, a template argument, an array bound, `case`, an
enumerator, anything `constexpr`); kernels with a directive other than a `#pragma`, a name the
region `#define`s, a call of an upper-case name or a statement that is a lone name (a macro
such as `SHADOW;` could declare a name the parse never sees); regions that `#define` an integer
keyword, that hold a directive the parse does not know, a line splice, a universal character
name or a `%:` (each can make the parse see other names than the compiler), or that the parse
does not read cleanly. Three reviews' inputs are in `tests/fixtures/unsafe_division/`.

Why the value is the same: both forms have the type of the widest of the three operands (signed
throughout, so no operand turns unsigned), and for nonzero integers a and b, truncating division
gives trunc(trunc(e / a) / b) = trunc(e / (a * b)) (true for e >= 0 and a, b > 0; truncation is
odd in each sign). The first factor is one whose division by E is already as wide as the result,
so where the original is defined (A * B neither zero nor overflowing its type), so is the
rewrite, with one exception: E the minimum of its type and the first factor -1, where E / A
overflows; an index never is. No operand has a side effect, so evaluating them in another
grouping changes nothing else. Not seen: a header's macro of a lower-case name that declares or
renames a name the division reads; benchmark_code's checks remain the net there.
"""

from __future__ import annotations

import re

import tree_sitter

from nvcc_opt.search.cuda import Edit, Kernel, Source, calls_macro, edited, walk
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.read_patterns import bare, defined_macros

SIGNED_WORDS = r"(int|long|long int|long long|long long int|short|short int|signed)"
# Keywords only: a name such as int64_t can be a template parameter, an enum or a struct of the
# region's own, or a header's macro.
SIGNED = re.compile(rf"((const|signed) )*{SIGNED_WORDS}( const)?")
INTEGER = re.compile(rf"((const|signed|unsigned) )*({SIGNED_WORDS}|unsigned)( const)?")
KEYWORDS = {"int", "long", "short", "signed", "unsigned", "char", "const", "volatile"}
# Text that can make the parse see other names or directives than the compiler does: a line
# splice, a universal character name, a digraph `%:` (a directive).
HIDDEN = re.compile(r"\\\r?\n|\\[uU][0-9a-fA-F]|%:")
DIRECTIVES = re.compile(r"#\s*(pragma|include|undef|line|error|warning)\b")
# Where a value must be a constant expression: the split could overflow there at compile time.
CONSTANT = {
    "static_assert_declaration", "template_argument_list", "array_declarator", "case_statement",
    "enumerator", "bitfield_clause",
}  # fmt: skip
# The nodes through which a name in a statement could be a declarator: `U(n) = u;`, `U(n);`,
# `U(a), (n);` declare n where U is a type, though the parse sees a call.
DECLARATOR_LIKE = {
    "parenthesized_expression", "argument_list", "call_expression", "comma_expression",
    "pointer_expression",
}  # fmt: skip
LITERAL = re.compile(r"([1-9][0-9]*)([lL]{0,2})")
NAME_KINDS = {"identifier", "field_identifier", "type_identifier", "namespace_identifier"}
# Where a name may stand besides its one declaration: as a value in an expression.
EXPRESSION = {
    "binary_expression", "parenthesized_expression", "cast_expression", "subscript_expression",
    "subscript_argument_list", "argument_list", "assignment_expression", "update_expression",
    "unary_expression", "conditional_expression", "comma_expression", "condition_clause",
    "return_statement", "expression_statement", "initializer_list", "sizeof_expression",
}  # fmt: skip
WIDE_TYPES = re.compile(r"\blong\b")


def split_division(code: str, facts: Facts) -> str | None:
    del facts  # nothing outside the region matters: the operands' types are the kernel's own
    source = Source(code)
    macros = defined_macros(source)
    if macros & KEYWORDS or source.errors() or HIDDEN.search(code) or _unknown_directive(source):
        return None
    edits: list[Edit] = []
    for kernel in source.kernels():
        if not _plain(source, kernel, macros):
            continue
        for node in walk(kernel.body):
            split = _split(source, kernel, node, macros)
            if split is not None:
                edits.append(Edit(node.start_byte, node.end_byte, split.encode()))
    return edited(code, source, edits)


def _split(source: Source, kernel: Kernel, node: tree_sitter.Node, avoid: set[str]) -> str | None:
    """`((E / A) / B)` for a division `E / (A * B)` that may be split, else None."""
    if node.type != "binary_expression" or _operator(node) != "/":
        return None
    if _enclosed(kernel, node) or not _whole_value(node):
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None or right.type != "parenthesized_expression":
        return None
    product = bare(right)
    if product.type != "binary_expression" or _operator(product) != "*":
        return None
    a, b = product.child_by_field_name("left"), product.child_by_field_name("right")
    if a is None or b is None:
        return None
    found = [_operand(source, kernel, bare(n), node, avoid) for n in (left, a, b)]
    operands = [o for o in found if o is not None]
    if len(operands) != 3 or not any(variable for _, variable in operands):
        return None
    shared = _divisors(source, kernel, _name(source, bare(left)), node)
    widest = max(width for width, _ in operands)
    factors = ((a, operands[1][0]), (b, operands[2][0]))
    for (first, width), (second, _) in (factors, factors[::-1]):
        if _name(source, bare(first)) in shared and max(operands[0][0], width) == widest:
            return f"(({source.text(left)} / {source.text(first)}) / {source.text(second)})"
    return None


def _operator(node: tree_sitter.Node) -> str | None:
    operator = node.child_by_field_name("operator")
    return None if operator is None else operator.type


def _whole_value(node: tree_sitter.Node) -> bool:
    """Whether the division (in any parentheses) is the whole value of an initializer, of an
    assignment or of a `return`: nothing before it in its expression, which a macro (`#define
    SCALE 100 *`) could bind to its dividend."""
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "init_declarator":
        return parent.child_by_field_name("value") == node
    if parent.type == "assignment_expression":
        return parent.child_by_field_name("right") == node
    return parent.type == "return_statement"


def _enclosed(kernel: Kernel, node: tree_sitter.Node) -> bool:
    """Whether the division is part of a call's argument (were the call a macro, it could
    regroup or stringify the division) or of a constant expression (where a split that
    overflows stops the compile)."""
    parent = node.parent
    while parent is not None and parent != kernel.body:
        if parent.type in ("argument_list", "lambda_expression") or parent.type in CONSTANT:
            return True
        if any(c.type == "constexpr" for c in parent.children):
            return True
        parent = parent.parent
    return False


def _unknown_directive(source: Source) -> bool:
    """A directive the parse does not know as one (`#def\\` spliced into `#define`)."""
    return any(
        n.type == "preproc_call" and not DIRECTIVES.match(source.text(n).lstrip())
        for n in walk(source.root)
    )


def _plain(source: Source, kernel: Kernel, macros: set[str]) -> bool:
    """No directive but a `#pragma` in the kernel, no name the region `#define`s, no statement
    that is a lone name and no call of an upper-case name (a macro such as `SHADOW;` could
    declare a name the parse never sees)."""
    for node in walk(kernel.body):
        if node.type.startswith("preproc") and not _pragma(source, node):
            return False
        if node.type == "identifier" and source.text(node) in macros:
            return False
        if calls_macro(source, node):
            return False
        lone = node.type == "expression_statement" and node.named_children
        if lone and bare(node.named_children[0]).type == "identifier":
            return False
    return True


def _pragma(source: Source, node: tree_sitter.Node) -> bool:
    return node.type == "preproc_call" and source.text(node).lstrip().startswith("#pragma")


def _divisors(
    source: Source, kernel: Kernel, dividend: str | None, skip: tree_sitter.Node
) -> set[str]:
    """The names the kernel divides the name `dividend` by (`/` or `%`) elsewhere."""
    found: set[str] = set()
    if dividend is None:
        return found
    for node in walk(kernel.body):
        if node == skip or node.type != "binary_expression":
            continue
        if _operator(node) not in ("/", "%"):
            continue
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            continue
        name = _name(source, bare(right))
        if _name(source, bare(left)) == dividend and name is not None:
            found.add(name)
    return found


def _name(source: Source, node: tree_sitter.Node) -> str | None:
    """The name an operand reads (through a cast), or None for a literal or anything else."""
    if node.type == "cast_expression":
        value = node.child_by_field_name("value")
        return None if value is None else _name(source, bare(value))
    return source.text(node) if node.type == "identifier" else None


def _operand(
    source: Source, kernel: Kernel, node: tree_sitter.Node, at: tree_sitter.Node, avoid: set[str]
) -> tuple[int, bool] | None:
    """(32 or 64, whether it reads a variable) for an operand the split may take: a signed name,
    a cast of an integer name to a signed type, a decimal literal without `u` that fits; else
    None. A variable is a parameter or a local not declared `const`: a division that reads one
    is never evaluated at compile time (where a split that overflows would stop the compile)."""
    if node.type == "number_literal":
        literal = LITERAL.fullmatch(source.text(node))
        if literal is None or int(literal.group(1)) >= 2**63:
            return None
        return (64 if literal.group(2) or int(literal.group(1)) >= 2**31 else 32), False
    cast = None
    if node.type == "cast_expression":
        kind, value = node.child_by_field_name("type"), node.child_by_field_name("value")
        cast = None if kind is None else source.words(kind)
        if value is None or cast is None or not SIGNED.fullmatch(cast):
            return None
        node = bare(value)
    found = _declared(source, kernel, node, at, avoid)
    if found is None or not (INTEGER if cast else SIGNED).fullmatch(found[0]):
        return None
    declared, parameter = found
    width = 64 if WIDE_TYPES.search(cast or declared) else 32
    return width, parameter or "const" not in declared.split()


def _declared(
    source: Source, kernel: Kernel, node: tree_sitter.Node, at: tree_sitter.Node, avoid: set[str]
) -> tuple[str, bool] | None:
    """(the type a name at `at` was declared with, whether it is a parameter), when that is the
    kernel's one declaration of it and every other occurrence of the name in the kernel is a
    use in an expression."""
    if node.type != "identifier" or source.text(node) in avoid:
        return None
    name = source.text(node)
    declaration: tree_sitter.Node | None = None
    for other in walk(kernel.node):
        if other.type not in NAME_KINDS or source.text(other) != name:
            continue
        declares = _declaration(kernel, other)
        if declares is not None:
            if declaration is not None:
                return None  # declared twice
            declaration = declares
        elif other.type != "identifier" or not _use(other) or _declarator_like(other):
            return None
    if declaration is None:
        return None
    if declaration.type == "declaration":
        scope = declaration.parent
        if scope is None or declaration.end_byte > at.start_byte or not _holds(scope, at):
            return None
    kind = declaration.child_by_field_name("type")
    if kind is None:
        return None
    qualifiers = [source.text(c) for c in declaration.children if c.type == "type_qualifier"]
    return " ".join([*qualifiers, source.words(kind)]), declaration.type != "declaration"


def _declaration(kernel: Kernel, name: tree_sitter.Node) -> tree_sitter.Node | None:
    """The kernel's parameter or the plain local declaration `name` declares, if it declares
    one (`T n`, `T n = ...`), else None."""
    parent = name.parent
    if name.type != "identifier" or parent is None:
        return None
    if parent.type == "parameter_declaration" and parent.child_by_field_name("declarator") == name:
        declarator = kernel.node.child_by_field_name("declarator")
        own = None if declarator is None else declarator.child_by_field_name("parameters")
        return parent if parent.parent == own else None
    if parent.type == "init_declarator" and parent.child_by_field_name("declarator") == name:
        parent = parent.parent
    elif parent.type != "declaration" or parent.child_by_field_name("type") == name:
        return None
    if parent is None or parent.type != "declaration":
        return None
    return parent


def _use(name: tree_sitter.Node) -> bool:
    """Whether an identifier stands as a value in an expression (an initializer's value too)."""
    parent = name.parent
    if parent is None:
        return False
    if parent.type == "init_declarator":
        return parent.child_by_field_name("value") == name
    return parent.type in EXPRESSION


def _declarator_like(name: tree_sitter.Node) -> bool:
    """Whether a name stands where C++ could read a declarator: reached from a statement, an
    initializer of a `for` or a condition through parentheses, calls, commas, `*` and `&` and
    the left side of `=` only (`U(n) = u;` declares n where U is a type)."""
    node, parent = name, name.parent
    while parent is not None:
        if parent.type == "assignment_expression":
            if parent.child_by_field_name("left") != node:
                return False
        elif parent.type not in DECLARATOR_LIKE:
            return parent.type in ("expression_statement", "for_statement", "condition_clause")
        node, parent = parent, parent.parent
    return False


def _holds(scope: tree_sitter.Node, node: tree_sitter.Node) -> bool:
    return scope.start_byte <= node.start_byte and node.end_byte <= scope.end_byte
