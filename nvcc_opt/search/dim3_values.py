"""Block shapes written as `dim3` in the two forms a parse of the declaration alone misses:

- `dim3 blocks (BLOCK_SIZE);`: C++'s most vexing parse. With only names inside the parentheses
  the declaration reads, to a parser, as a function `blocks` taking a `BLOCK_SIZE`; nvcc (which
  knows BLOCK_SIZE is a macro or a value) makes it a dim3. Read as `dim3(BLOCK_SIZE)`, and only
  for dim3, where a prototype taking an unnamed parameter of a user type is what is rare.
- `dim3 threads; threads.x = 128; threads.y = 2;`: a dim3 declared without a value and given its
  extents by assignment. Read as `dim3(128, 2)` where every assignment to an extent is plain `=`
  (a name assigned an extent twice, updated with `+=`, or assigned whole, is given no value).
"""

from __future__ import annotations

import tree_sitter

from nvcc_opt.search.cuda import Source, walk

AXES = ("x", "y", "z")


def dim3_definitions(source: Source) -> list[tuple[str, str]]:
    """(name, `dim3(...)`) for each dim3 `source` declares in either form."""
    found: list[tuple[str, str]] = []
    bare: set[str] = set()
    for node in walk(source.root):
        kind = node.child_by_field_name("type") if node.type == "declaration" else None
        if kind is None or source.words(kind) != "dim3":
            continue
        for child in node.named_children:
            if child.type == "identifier":
                bare.add(source.text(child))
            elif child.type == "function_declarator":
                named = _vexing(source, child)
                if named is not None:
                    found.append(named)
    extents = _extents(source, bare)
    for name, given in extents.items():
        if given is None or "x" not in given:
            continue
        values = [given.get(axis, "1") for axis in AXES]
        while len(values) > 1 and values[-1] == "1":
            values.pop()
        found.append((name, f"dim3({', '.join(values)})"))
    return found


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


def _extents(source: Source, names: set[str]) -> dict[str, dict[str, str] | None]:
    """name -> {axis: value} of the plain assignments to the extents of the dim3s `names`;
    None for a name whose extent is assigned twice or updated otherwise."""
    found: dict[str, dict[str, str] | None] = {}
    for node in walk(source.root):
        target = node.child_by_field_name("left") if node.type == "assignment_expression" else None
        if target is None and node.type == "update_expression":
            target = node.child_by_field_name("argument")
        if target is not None and target.type == "identifier" and source.text(target) in names:
            found[source.text(target)] = None  # `threads = dim3(256);`: a value given later
            continue
        if target is None or target.type != "field_expression":
            continue
        base, field = target.child_by_field_name("argument"), target.child_by_field_name("field")
        if base is None or field is None or source.text(base) not in names:
            continue
        name, axis = source.text(base), source.text(field)
        operator = node.child_by_field_name("operator")
        value = node.child_by_field_name("right")
        given = found.setdefault(name, {})
        plain = operator is not None and source.text(operator) == "=" and value is not None
        if given is None or not plain or axis not in AXES or axis in given:
            found[name] = None
            continue
        assert value is not None
        given[axis] = source.text(value)
    return found
