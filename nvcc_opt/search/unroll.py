"""`#pragma unroll` on loops with a compile-time trip count (fully, up to MAX_FULL_UNROLL
iterations) and `#pragma unroll 4` on innermost loops whose trip count is known only at run time.
"""

from __future__ import annotations

from collections.abc import Mapping

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Source,
    edited,
    identifiers,
    indentation,
    modified,
    preceding_pragma,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts, for_loops
from nvcc_opt.search.launches import constant, definitions

MAX_FULL_UNROLL = 64  # full unrolling beyond this many iterations mostly grows code
RUNTIME_UNROLL = 4


def unroll(code: str, facts: Facts) -> str | None:
    """`#pragma unroll` on loops whose trip count is a compile-time constant."""
    source = Source(code)
    names = {**facts.names, **definitions(code)}
    edits = []
    for kernel in source.kernels():
        for loop in for_loops(kernel):
            if preceding_pragma(loop) is not None:
                continue
            count = _trip_count(source, loop, names)
            if count == "runtime" or (isinstance(count, int) and count > MAX_FULL_UNROLL):
                continue
            edits.append(_pragma(source, loop, b"#pragma unroll"))
    return edited(code, source, edits)


def unroll_runtime(code: str, facts: Facts) -> str | None:
    """`#pragma unroll 4` on innermost loops with a trip count known only at run time."""
    source = Source(code)
    names = {**facts.names, **definitions(code)}
    edits = []
    for kernel in source.kernels():
        for loop in for_loops(kernel):
            body = loop.child_by_field_name("body")
            inner = body is not None and any(
                n.type in ("for_statement", "while_statement", "do_statement") for n in walk(body)
            )
            if inner or preceding_pragma(loop) is not None:
                continue
            if _trip_count(source, loop, names) == "runtime":
                pragma = f"#pragma unroll {RUNTIME_UNROLL}".encode()
                edits.append(_pragma(source, loop, pragma))
    return edited(code, source, edits)


def _pragma(source: Source, loop: tree_sitter.Node, pragma: bytes) -> Edit:
    return Edit(loop.start_byte, loop.start_byte, pragma + b"\n" + indentation(source, loop))


def _trip_count(source: Source, loop: tree_sitter.Node, names: Mapping[str, str]) -> int | str:
    """The number of iterations when constant; "constant" when the bounds are compile-time names
    whose value is not known here; "runtime" otherwise."""
    init = loop.child_by_field_name("initializer")
    condition = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or condition is None or update is None:
        return "runtime"
    variable, start = _initial(source, init)
    if variable is None or start is None or condition.type != "binary_expression":
        return "runtime"
    left = condition.child_by_field_name("left")
    right = condition.child_by_field_name("right")
    operator = condition.child_by_field_name("operator")
    if left is None or right is None or operator is None or source.text(left) != variable:
        return "runtime"
    step = _step(source, update, variable)
    if step is None or variable in modified(source, loop.child_by_field_name("body") or loop):
        return "runtime"
    function_scope = _locals_and_params(source, loop)
    bound_names = identifiers(source, right) | identifiers(source, start)
    if bound_names & function_scope:
        return "runtime"
    low = constant(source.text(start), names)
    high = constant(source.text(right), names)
    if low is None or high is None:
        return "constant"
    op = source.text(operator)
    span = {"<": high - low, "<=": high - low + 1, ">": low - high, ">=": low - high + 1}.get(op)
    if span is None or (step > 0) != (op in ("<", "<=")):
        return "runtime"
    return max(0, -(-span // abs(step)))


def _initial(source: Source, init: tree_sitter.Node) -> tuple[str | None, tree_sitter.Node | None]:
    if init.type == "declaration":
        declarator = init.child_by_field_name("declarator")
        if declarator is not None and declarator.type == "init_declarator":
            name = declarator.child_by_field_name("declarator")
            value = declarator.child_by_field_name("value")
            if name is not None and value is not None:
                return source.text(name), value
    if init.type == "assignment_expression":
        left, right = init.child_by_field_name("left"), init.child_by_field_name("right")
        if left is not None and right is not None and left.type == "identifier":
            return source.text(left), right
    return None, None


def _step(source: Source, update: tree_sitter.Node, variable: str) -> int | None:
    if update.type == "update_expression":
        argument = update.child_by_field_name("argument")
        operator = update.child_by_field_name("operator")
        if argument is None or operator is None or source.text(argument) != variable:
            return None
        return 1 if source.text(operator) == "++" else -1
    if update.type == "assignment_expression":
        left, right = update.child_by_field_name("left"), update.child_by_field_name("right")
        operator = update.child_by_field_name("operator")
        if left is None or right is None or operator is None or source.text(left) != variable:
            return None
        amount = constant(source.text(right), {})
        if amount is None or amount == 0:
            return None
        op = source.text(operator)
        return amount if op == "+=" else -amount if op == "-=" else None
    return None


def _locals_and_params(source: Source, loop: tree_sitter.Node) -> set[str]:
    """Names declared by the function around `loop`, other than `const`/`constexpr` locals
    with a value: those may change at run time."""
    function = loop.parent
    while function is not None and function.type != "function_definition":
        function = function.parent
    if function is None:
        return set()
    names: set[str] = set()
    declarator = function.child_by_field_name("declarator")
    if declarator is not None:
        parameters = declarator.child_by_field_name("parameters")
        if parameters is not None:
            names |= identifiers(source, parameters)
    for node in walk(function.child_by_field_name("body") or function):
        if node.type != "declaration":
            continue
        qualifiers = {source.text(c) for c in node.children if c.type == "type_qualifier"}
        if qualifiers & {"const", "constexpr"}:
            continue
        names |= modified(source, node)
    return names
