"""Loops every thread of a block runs the same iterations of, so that a block-wide step inside
them (a barrier, a shuffle over the full warp) is reached by all threads each time:

    for (int d = 0; d < 16; d++) { ... }      // the block's histogram digits, one at a time

A `for` loop is uniform when its counter is declared in its header with a uniform value, compared
with a uniform bound, stepped by `++`, `--`, `+= c` or `-= c` with c uniform, and changed nowhere
in the body; and nothing in the body leaves it early (its own `break` or `continue`, a `return`
or `goto`), so no thread skips an iteration. Uniform (element_access.uniform): no memory read or
call, no thread index, local names followed to single values set before the loop.
"""

from __future__ import annotations

import tree_sitter

from nvcc_opt.search.cuda import Kernel, Source, squeeze, walk
from nvcc_opt.search.element_access import uniform
from nvcc_opt.search.kernel_facts import changed_names

LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
BLOCK_WIDE = {"blockIdx", "blockDim", "gridDim", "warpSize"}  # the same in every thread
COMPARISONS = ("<", "<=", ">", ">=", "!=")


def enclosing_loops(node: tree_sitter.Node, kernel: Kernel) -> list[tree_sitter.Node]:
    """The loops of `kernel` that hold `node`, innermost first."""
    found = []
    parent = node.parent
    while parent is not None and parent != kernel.body:
        if parent.type in LOOPS:
            found.append(parent)
        parent = parent.parent
    return found


def is_uniform_loop(source: Source, kernel: Kernel, loop: tree_sitter.Node) -> bool:
    """Whether every thread of the block runs the same iterations of `loop`."""
    if loop.type != "for_statement":
        return False
    init = loop.child_by_field_name("initializer")
    declarator = None if init is None else init.child_by_field_name("declarator")
    if init is None or declarator is None or declarator.type != "init_declarator":
        return False
    name_node = declarator.child_by_field_name("declarator")
    value = declarator.child_by_field_name("value")
    body = loop.child_by_field_name("body")
    if name_node is None or value is None or body is None or name_node.type != "identifier":
        return False
    name = source.text(name_node)
    if not _even(source, kernel, loop, source.text(value)):
        return False
    if not _bound(source, kernel, loop, name) or not _step(source, kernel, loop, name):
        return False
    if name in changed_names(source, body):
        return False
    return not any(_leaves(n, loop) for n in walk(body))


def _leaves(node: tree_sitter.Node, loop: tree_sitter.Node) -> bool:
    """Whether `node` may end an iteration of `loop` early for some threads: a `return` or
    `goto` anywhere in it, a `break` or `continue` that belongs to it (not to an inner loop or,
    for `break`, an inner `switch`)."""
    if node.type in ("return_statement", "goto_statement"):
        return True
    if node.type not in ("break_statement", "continue_statement"):
        return False
    owners = LOOPS + (("switch_statement",) if node.type == "break_statement" else ())
    parent = node.parent
    while parent is not None and parent.type not in owners:
        parent = parent.parent
    return parent == loop


def _even(source: Source, kernel: Kernel, loop: tree_sitter.Node, text: str) -> bool:
    return uniform(source, kernel, loop, text, BLOCK_WIDE)


def _bound(source: Source, kernel: Kernel, loop: tree_sitter.Node, name: str) -> bool:
    condition = loop.child_by_field_name("condition")
    if condition is None or condition.type != "binary_expression":
        return False
    left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
    operator = condition.child_by_field_name("operator")
    if left is None or right is None or operator is None:
        return False
    if source.text(operator) not in COMPARISONS:
        return False
    if squeeze(source.text(left)) == name:
        return _even(source, kernel, loop, source.text(right))
    return squeeze(source.text(right)) == name and _even(source, kernel, loop, source.text(left))


def _step(source: Source, kernel: Kernel, loop: tree_sitter.Node, name: str) -> bool:
    update = loop.child_by_field_name("update")
    if update is None:
        return False
    text = squeeze(source.text(update))
    if text in (f"{name}++", f"++{name}", f"{name}--", f"--{name}"):
        return True
    for operator in ("+=", "-="):
        if text.startswith(name + operator):
            return _even(source, kernel, loop, text[len(name) + len(operator) :])
    return False
