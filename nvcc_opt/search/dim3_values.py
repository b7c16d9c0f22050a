"""Block shapes written as `dim3`, and the dim3s whose value cannot be trusted.

Two forms a parse of the declaration alone misses:

- `dim3 blocks (BLOCK_SIZE);`: C++'s most vexing parse. With only names inside the parentheses
  the declaration reads, to a parser, as a function `blocks` taking a `BLOCK_SIZE`; nvcc (which
  knows BLOCK_SIZE is a macro or a value) makes it a dim3. Read as `dim3(BLOCK_SIZE)`, and only
  for dim3, where a prototype taking an unnamed parameter of a user type is what is rare.
- `dim3 threads; threads.x = 128; threads.y = 2;`: a dim3 declared without a value and given its
  extents by plain assignments, read as `dim3(128, 2)`, only in whole code (the region, a whole
  file), never in lines `search` found (whose branches and loops cannot be seen).

In whole code every mention of a dim3 after its declaration, in its block, must be one the value
can be read through (an allowlist): a launch's configuration (or a launch helper's arguments:
a function named for launching, as `launches` reads one), a read of an extent in an
expression (`block.x`, not passed to a call), or, for the bare form, a plain `name.x = value;`
statement of the declaring block itself before the first launch. Anything else
(passed to a call, its address taken, bound to a reference, assigned whole or in a branch or
loop, changed after a launch, a name declared again inside, a declaration inside a loop with a
value that is not a literal) makes it `unsafe`: `definitions` gives it no value, whatever its form.
"""

from __future__ import annotations

import re

import tree_sitter

from nvcc_opt.search.cuda import Source, walk

AXES = ("x", "y", "z")
LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


def dim3_definitions(source: Source, whole: bool = True) -> tuple[list[tuple[str, str]], set[str]]:
    """(name, `dim3(...)`) for each dim3 `source` declares in either form, and the names of
    dim3s (of any form) whose value cannot be trusted; `whole`: `source` is whole code."""
    found: list[tuple[str, str]] = []
    unsafe: set[str] = set()
    valueless: set[str] = set()  # declared somewhere without a value it can be read by
    for node in walk(source.root):
        kind = node.child_by_field_name("type") if node.type == "declaration" else None
        if kind is None or source.words(kind) != "dim3":
            continue
        for child in node.named_children:
            name_node = _declared(child)
            if name_node is None:
                continue
            name = source.text(name_node)
            extents = _extents(source, node, name, child) if whole else None
            if whole and extents is None:
                unsafe.add(name)
                continue
            named = None
            if child.type == "function_declarator":
                named = _vexing(source, child)
            elif child.type == "identifier" and extents and "x" in extents:
                values = [extents.get(axis, "1") for axis in AXES]
                while len(values) > 1 and values[-1] == "1":
                    values.pop()
                named = (name, f"dim3({', '.join(values)})")
            if named is not None:
                found.append(named)
            elif child.type != "init_declarator":  # (an initialised one: `definitions` reads it)
                valueless.add(name)
    # a name declared in two functions is two dim3s: one without a value leaves it unknown
    return found, unsafe | (valueless & {name for name, _ in found}) | _twice(source, valueless)


def _twice(source: Source, names: set[str]) -> set[str]:
    """The `names` that are also given a value elsewhere (`dim3 name(...)`, `T name = ...`)."""
    given = set()
    for node in walk(source.root):
        if node.type == "init_declarator":
            name = node.child_by_field_name("declarator")
            if name is not None and source.text(name) in names:
                given.add(source.text(name))
    return given


def _declared(child: tree_sitter.Node) -> tree_sitter.Node | None:
    if child.type == "identifier":
        return child
    if child.type in ("function_declarator", "init_declarator"):
        name = child.child_by_field_name("declarator")
        return name if name is not None and name.type == "identifier" else None
    return None


def _vexing(source: Source, declarator: tree_sitter.Node) -> tuple[str, str] | None:
    name = declarator.child_by_field_name("declarator")
    params = declarator.child_by_field_name("parameters")
    if name is None or params is None or name.type != "identifier":
        return None
    values = []
    for param in params.named_children:
        kind = param.child_by_field_name("type")
        if param.type != "parameter_declaration" or param.named_child_count != 1 or kind is None:
            return None
        if kind.type != "type_identifier":
            return None
        values.append(source.text(kind))
    if not values:
        return None
    return source.text(name), f"dim3({', '.join(values)})"


def _extents(
    source: Source, declaration: tree_sitter.Node, name: str, declared: tree_sitter.Node
) -> dict[str, str] | None:
    """{axis: value} of the plain extent assignments of a bare dim3 (none for the other forms),
    when every mention of `name` after `declaration` in its block is allowed; None otherwise."""
    block = declaration.parent
    if block is None:
        return None
    if block.type == "translation_unit":
        return {}  # a file-scope dim3: its value as declared (a bare one has none)
    if _in_loop(declaration) and re.search(r"[A-Za-z_]", _value_text(source, declared)):
        return None
    given: dict[str, str] = {}
    launched = False
    for node in walk(block):
        if node.start_byte < declaration.end_byte or node.type not in ("identifier", "declaration"):
            continue
        if node.type == "declaration":
            if any(source.text(n) == name for c in node.named_children if (n := _declared(c))):
                return None  # declared again inside: which one a mention means is not read
            continue
        if source.text(node) != name:
            continue
        parent = node.parent
        if parent is not None and (parent.type == "kernel_call_syntax" or _helper(source, parent)):
            launched = True
            continue
        if _read(source, node):
            continue  # `(n + block.x - 1) / block.x`: an extent read, nothing changed
        axis = _plain_extent(source, node, block)
        if axis is None or launched or declared.type != "identifier" or axis[0] in given:
            return None
        given[axis[0]] = axis[1]
    return given


def _helper(source: Source, arguments: tree_sitter.Node) -> bool:
    """Whether `arguments` are those of a launch helper's call (`launch_on_stream(k, grid,
    block, ...)`, `cudaLaunchKernel`: a function named for launching, as `launches` reads it)."""
    call = arguments.parent
    if arguments.type != "argument_list" or call is None or call.type != "call_expression":
        return False
    function = call.child_by_field_name("function")
    return function is not None and "launch" in source.text(function).lower()


def _extent(source: Source, mention: tree_sitter.Node) -> tuple[tree_sitter.Node, str] | None:
    """(the `name.axis` node, the axis) when `mention` is the dim3 of an extent (`name.x`), inside
    an expression."""
    field = mention.parent
    axis = field.child_by_field_name("field") if field is not None else None
    if field is None or field.type != "field_expression" or axis is None or field.parent is None:
        return None
    return (field, source.text(axis)) if source.text(axis) in AXES else None


def _read(source: Source, mention: tree_sitter.Node) -> bool:
    """Whether `mention` only reads an extent (`name.x` in an expression), never one that is
    assigned, updated, has its address taken or is passed to a call (a reference may change it)."""
    found = _extent(source, mention)
    if found is None:
        return False
    field = found[0]
    outer = field.parent
    assert outer is not None
    if outer.type in ("update_expression", "pointer_expression", "argument_list"):
        return False
    return not (
        outer.type == "assignment_expression" and outer.child_by_field_name("left") == field
    )


def _plain_extent(
    source: Source, mention: tree_sitter.Node, block: tree_sitter.Node
) -> tuple[str, str] | None:
    """(axis, value) when `mention` is `name.axis = value;`, a statement of `block` itself."""
    found = _extent(source, mention)
    if found is None:
        return None
    field, axis = found
    assignment = field.parent
    assert assignment is not None
    if (
        assignment.type != "assignment_expression"
        or assignment.child_by_field_name("left") != field
    ):
        return None
    operator = assignment.child_by_field_name("operator")
    value = assignment.child_by_field_name("right")
    statement = assignment.parent
    if operator is None or value is None or source.text(operator) != "=" or statement is None:
        return None
    if statement.type != "expression_statement" or statement.parent != block:
        return None
    return axis, source.text(value)


def _in_loop(node: tree_sitter.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in LOOPS:
            return True
        parent = parent.parent
    return False


def _value_text(source: Source, declared: tree_sitter.Node) -> str:
    if declared.type == "identifier":
        return "x"  # a bare dim3 in a loop: its extents are set in the loop
    value = declared.child_by_field_name("value") or declared.child_by_field_name("parameters")
    return source.text(value) if value is not None else ""
