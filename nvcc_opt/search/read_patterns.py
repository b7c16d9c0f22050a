"""What a kernel reads and how, for the transforms that move loads (staging a table in shared
memory, preloading a short run, splitting a division): which kernels are plain enough to reason
about (the refusals listed in `staging.py`), a pointer's reads as values, whether a read happens
on every iteration of a full loop, and what is a compile-time name.
"""

from __future__ import annotations

import re

import tree_sitter

from nvcc_opt.search.cuda import (
    Kernel,
    PointerParam,
    Source,
    calls_macro,
    declared_name,
    identifiers,
    operator_type,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts, unit_loop

BUILTINS = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}
# What an expression evaluated twice (the guard, a row) may hold: no calls, no side effects.
PURE = {
    "identifier", "number_literal", "binary_expression", "parenthesized_expression",
    "cast_expression", "type_descriptor", "primitive_type", "sized_type_specifier",
    "type_identifier", "field_expression", "field_identifier",
}  # fmt: skip
# Where a name or a read may stand: as a value only (never assigned, bound to a reference,
# passed to a function that could take it by reference, or under `&`).
VALUE = {
    "binary_expression", "parenthesized_expression", "cast_expression", "subscript_argument_list",
    "condition_clause", "unary_expression",
}  # fmt: skip
# The nodes between a read and its loop's body through which the read runs on every iteration.
ALWAYS = {
    "expression_statement", "compound_statement", "assignment_expression", "init_declarator",
    "declaration", "parenthesized_expression", "cast_expression", "unary_expression",
    "binary_expression", "subscript_argument_list", "subscript_expression",
}  # fmt: skip
BOTH_SIDES = {"+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&", "|", "^", "<<", ">>"}
LEAVES = {"return_statement", "goto_statement", "break_statement", "continue_statement"}
# A kernel holding any of these is left alone: each can hide a change of the names the proof
# rests on (references, enumerators, labels, lambdas, directives inside the kernel).
REFUSED = {
    "reference_declarator", "enum_specifier", "labeled_statement", "goto_statement",
    "lambda_expression", "preproc_def", "preproc_function_def", "preproc_call", "preproc_if",
    "preproc_ifdef", "using_declaration", "alias_declaration", "namespace_alias_definition",
    "structured_binding_declarator", "type_definition", "decltype", "placeholder_type_specifier",
    "storage_class_specifier", "abstract_reference_declarator",
}  # fmt: skip
# What the guarded statements may call: math that cannot leave the thread or touch memory.
MATH = re.compile(
    r"(std::)?(f?(min|max|abs)f?|r?sqrtf?|fmaf?|(exp|exp2|log|log2|log10|sin|cos|tan|pow|floor"
    r"|ceil|trunc|round|cbrt|hypot|erf)f?)"
)
CAST_TYPE = re.compile(
    r"(const )?((unsigned|signed) )?(int|long|long long|short|char|unsigned|float|double|size_t"
    r"|u?int(8|16|32|64)_t)"
)
REFUSED_WORDS = re.compile(
    r"\b(__shared__|__syncthreads|__syncwarp|asm|__trap|assert|constexpr|volatile)\b"
)
# The same, for a rewrite confined to one loop of global-memory element accesses: block
# shared memory and barriers elsewhere in the kernel are none of its business.
REFUSED_WORDS_BARRIERS = re.compile(r"\b(asm|__trap|assert|constexpr|volatile)\b")
LOOP_TYPE = re.compile(r"(unsigned |signed )?(int|long|long long)|unsigned|size_t|u?int(32|64)_t")
SIGNED = re.compile(r"(signed )?(int|long|long long)|int(32|64)_t")


def candidate_kernels(source: Source, facts: Facts, barriers: bool = False) -> list[Kernel]:
    """The kernels a table rewrite may look at: every launch found and none passing a pointer
    twice, no name the region `#define`s, nothing that could change names behind its back (in a
    file that is plain too); `barriers`: shared memory and barriers allowed."""
    if not plain_file(source):
        return []
    defined = defined_macros(source)
    return [
        kernel
        for kernel in source.kernels()
        if kernel.name in facts.no_alias
        and not identifiers(source, kernel.body) & defined
        and plain_kernel(source, kernel, barriers)
    ]


def value_reads(
    source: Source, kernel: Kernel, pointer: PointerParam
) -> list[tree_sitter.Node] | None:
    """Every use of the pointer in the kernel, each a read `P[...]` standing as a value; None
    when some use is anything else."""
    reads = []
    for use in walk(kernel.body):
        if use.type != "identifier" or source.text(use) != pointer.name:
            continue
        read = use.parent
        if (
            read is None
            or read.type != "subscript_expression"
            or read.child_by_field_name("argument") != use
            or read not in pointer.reads
            or not as_value(read)
        ):
            return None
        reads.append(read)
    return reads


def plain_file(source: Source) -> bool:
    """No overloaded operator (it could bind a read or a name to a reference) and no function
    of its own named like a math function (`math_call` trusts those names)."""
    for node in walk(source.root):
        if node.type == "operator_name":
            return False
        if node.type == "function_declarator":
            name = node.child_by_field_name("declarator")
            if name is not None and MATH.fullmatch(source.text(name)):
                return False
    return True


def taken_names(source: Source) -> set[str]:
    """Every name in the region, types and fields included: what a fresh name must avoid."""
    kinds = ("identifier", "type_identifier", "field_identifier", "namespace_identifier")
    return {source.text(n) for n in walk(source.root) if n.type in kinds}


def plain_kernel(source: Source, kernel: Kernel, barriers: bool = False) -> bool:
    """Whether the kernel holds nothing that could change the names a proof here rests on
    behind its back (the refusals in the module's docstring)."""
    words = REFUSED_WORDS_BARRIERS if barriers else REFUSED_WORDS
    if words.search(source.text(kernel.body)) or _volatile(source, kernel):
        return False
    for node in walk(kernel.body):
        if node.type in REFUSED and not _unroll_pragma(source, node):
            return False
        if calls_macro(source, node):
            return False
        if node.type == "cast_expression" and not _plain_cast(source, node):
            return False
    return not _writes_outside(source, kernel)


def _writes_outside(source: Source, kernel: Kernel) -> bool:
    """Whether the kernel assigns through a name it neither takes nor declares (a `__device__`
    array a table pointer could point into)."""
    own = set(kernel.params)
    for node in walk(kernel.body):
        if node.type in ("declaration", "init_declarator", "parameter_declaration"):
            name = declared_name(node)
            if name is not None:
                own.add(source.text(name))
    for node in walk(kernel.body):
        target = None
        if node.type == "assignment_expression":
            target = node.child_by_field_name("left")
        elif node.type == "update_expression":
            target = node.child_by_field_name("argument")
        while target is not None and target.type != "identifier":
            target = (
                target.child_by_field_name("argument")
                or target.child_by_field_name("value")
                or (target.named_children[0] if target.named_children else None)
            )
        if target is not None and source.text(target) not in own:
            return True
    return False


def defined_macros(source: Source) -> set[str]:
    """The names the region `#define`s."""
    names = set()
    for node in walk(source.root):
        if node.type in ("preproc_def", "preproc_function_def"):
            name = node.child_by_field_name("name")
            if name is not None:
                names.add(source.text(name))
    return names


def every_iteration(read: tree_sitter.Node) -> tree_sitter.Node | None:
    """The nearest `for` whose every iteration evaluates `read`: between them only statements,
    declarations, assignments, casts, parentheses and operators that evaluate both operands
    (never `&&`, `||`, `and`, `or`, `?:`, a call or another loop)."""
    node = read.parent
    while node is not None:
        if node.type == "for_statement":
            return node
        if node.type not in ALWAYS:
            return None
        if node.type == "binary_expression" and operator_type(node) not in BOTH_SIDES:
            return None
        node = node.parent
    return None


def full_loop(source: Source, kernel: Kernel, loop: tree_sitter.Node) -> tuple[str, str] | None:
    """(d, C as written) for `for (int d = 0; d < C; ++d)` whose body neither leaves nor
    touches d other than as a value, d declared nowhere else."""
    found = counted_loop(source, kernel, loop)
    if found is None or found[1] != "0" or found[3] != "<":
        return None
    return found[0], found[2]


def counted_loop(
    source: Source, kernel: Kernel, loop: tree_sitter.Node
) -> tuple[str, str, str, str] | None:
    """(d, S, E, "<" or "<=") as written for `for (int d = S; d < E; ++d)` (or `d <= E`) whose
    body neither leaves nor touches d other than as a value, d declared nowhere else, S and E
    free of calls; a start other than 0 only with a signed counter (-R cannot wrap)."""
    variable = unit_loop(source, loop)
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    if variable is None or init is None or condition is None or body is None:
        return None
    declarator = init.child_by_field_name("declarator")
    start = None if declarator is None else declarator.child_by_field_name("value")
    kind = b"" if declarator is None else source.data[init.start_byte : declarator.start_byte]
    counter = " ".join(kind.decode().split())
    if declarator is None or not LOOP_TYPE.fullmatch(counter):
        return None  # a narrow counter could wrap before reaching C
    operator = condition.child_by_field_name("operator")
    bound = condition.child_by_field_name("right")
    if start is None or operator is None or bound is None or not _signed_pure(start):
        return None
    if source.text(start) != "0" and not SIGNED.fullmatch(counter):
        return None
    if source.text(operator) not in ("<", "<=") or not pure(bound):
        return None
    if len(declarations(source, kernel.body, variable)) != 1:
        return None
    if not value_only(source, body, variable) or any(n.type in LEAVES for n in walk(body)):
        return None
    return variable, source.text(start), source.text(bound), source.text(operator)


def declarations(source: Source, body: tree_sitter.Node, name: str) -> list[tree_sitter.Node]:
    """Every declaration of `name` under `body` (for-loop initializers and parameters of
    nested functions included)."""
    found = []
    for node in walk(body):
        if node.type in ("declaration", "parameter_declaration"):
            for part in [node, *node.named_children]:
                target = declared_name(part) if part.type != "identifier" else None
                if target is not None and source.text(target) == name:
                    found.append(node)
                    break
    return found


def value_only(source: Source, body: tree_sitter.Node, name: str) -> bool:
    """Whether every use of `name` under `body` is as a value: in arithmetic, a comparison, a
    cast, an index or a declaration's initial value (through any parentheses); never assigned,
    updated (the `++d` of the for loop that declares d aside), passed to a function, bound to a
    reference or under `&`."""
    for node in walk(body):
        if node.type != "identifier" or source.text(node) != name:
            continue
        parent = node.parent
        if parent is not None and parent.child_by_field_name("declarator") == node:
            continue  # its declaration
        while parent is not None and parent.type == "parenthesized_expression":
            node, parent = parent, parent.parent
        if parent is None:
            return False
        if parent.type == "init_declarator":
            if parent.child_by_field_name("value") == node:
                continue
            return False
        if parent.type == "update_expression":
            loop = parent.parent
            if (
                loop is not None
                and loop.type == "for_statement"
                and loop.child_by_field_name("update") == parent
                and _declares_loop_variable(source, loop, name)
            ):
                continue
            return False
        if parent.type in VALUE and not (
            parent.type == "unary_expression" and source.text(parent)[:1] in ("&", "*")
        ):
            continue
        return False
    return True


def _declares_loop_variable(source: Source, loop: tree_sitter.Node, name: str) -> bool:
    init = loop.child_by_field_name("initializer")
    target = None if init is None else declared_name(init)
    return target is not None and source.text(target) == name


def _volatile(source: Source, kernel: Kernel) -> bool:
    """Whether a parameter is volatile: its reads cannot be made once per block."""
    parameters = kernel.node.child_by_field_name("declarator")
    return parameters is not None and "volatile" in source.text(parameters).split()


def math_call(source: Source, call: tree_sitter.Node) -> bool:
    function = call.child_by_field_name("function")
    return function is not None and bool(MATH.fullmatch(source.text(function)))


def _plain_cast(source: Source, cast: tree_sitter.Node) -> bool:
    """A cast to an arithmetic type (never to a reference or a class, which could bind)."""
    kind = cast.child_by_field_name("type")
    return kind is not None and bool(CAST_TYPE.fullmatch(source.words(kind)))


def as_value(read: tree_sitter.Node) -> bool:
    """Whether a read `P[...]` stands as a value (never assigned to, bound, passed or under &)."""
    node, parent = read, read.parent
    while parent is not None and parent.type == "parenthesized_expression":
        node, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression":
        return parent.child_by_field_name("right") == node
    if parent.type == "init_declarator":
        return parent.child_by_field_name("value") == node
    return parent.type in ("binary_expression", "cast_expression")


def compile_time(text: str, local: set[str]) -> bool:
    """Whether `text` is a literal or names only what the kernel neither takes nor declares."""
    names = names_in(text)
    return (
        bool(text) and not names & (local | BUILTINS) and bool(re.fullmatch(r"[\w()+*\-/ ]+", text))
    )


def names_in(text: str) -> set[str]:
    return {w for w in re.findall(r"[A-Za-z_]\w*", text)}


def pure(node: tree_sitter.Node) -> bool:
    return all(n.type in PURE or not n.is_named for n in walk(node))


def _signed_pure(node: tree_sitter.Node) -> bool:
    """`pure`, negation allowed (a loop from -R)."""
    for n in walk(node):
        if n.type == "unary_expression":
            operator = n.child_by_field_name("operator")
            if operator is None or operator.type not in ("-", "+"):
                return False
        elif n.is_named and n.type not in PURE:
            return False
    return True


def bare(node: tree_sitter.Node) -> tree_sitter.Node:
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def _unroll_pragma(source: Source, node: tree_sitter.Node) -> bool:
    """`#pragma unroll [N]` (or `nounroll`), which changes no name."""
    return node.type == "preproc_call" and bool(
        re.fullmatch(r"#\s*pragma\s+(no)?unroll(\s+\w+)?", source.text(node).strip())
    )
