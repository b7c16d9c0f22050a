"""Where kernels are launched, with what block size, and whether two pointer arguments alias.

Read from code through the same tree-sitter parse as the transforms: the region itself, and the
lines the `search` tool found elsewhere in the project (each parsed on its own).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import LDG_TYPES, Source, declared_name, define, walk
from nvcc_opt.search.dim3_values import dim3_definitions
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.signatures import readonly_params

MAX_DEPTH = 4  # a block size defined through at most this many names


@dataclass(frozen=True)
class Launch:
    kernel: str
    block: str  # the block-size expression as written
    args: tuple[str, ...]  # the kernel's arguments as written
    # a launch helper's call: its arguments after the block size, the kernel's the last ones
    # (helper(kernel, grid, block, shared, stream, a, b)); None: they cannot be told apart
    through_helper: bool = False


# A function that launches the kernel it is given first, then the grid and the block size:
# cudaLaunchKernel, hipLaunchKernelGGL, RAJAPerf's RPlaunchCudaKernel, a code's own launch_k.
HELPER = re.compile(r"(?i)launch")
# Those that take the kernel's arguments as one array (void**), not one by one.
ARRAY_ARGUMENTS = re.compile(r"^(cuda|cu|hip)Launch(Kernel|CooperativeKernel)(Ex)?$")


def launches(code: str) -> list[Launch]:
    """Every `kernel<<<grid, block, ...>>>(args)` in `code`, and every call of a launch helper
    (a function named for launching, given the kernel, the grid and the block size first)."""
    source = Source(code)
    found = []
    for node in walk(source.root):
        if node.type != "call_expression":
            continue
        syntax = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        if function is None or arguments is None:
            continue
        if syntax is None:
            found += _helper_launch(source, function, arguments)
            continue
        if function.type == "template_function":
            function = function.child_by_field_name("name") or function
        config = syntax.named_children
        if len(config) < 2:
            continue
        found.append(
            Launch(
                kernel=source.text(function),
                block=source.text(config[1]),
                args=tuple(source.text(a) for a in arguments.named_children),
            )
        )
    return found


def _helper_launch(
    source: Source, function: tree_sitter.Node, arguments: tree_sitter.Node
) -> list[Launch]:
    name = source.text(function).rsplit("::", 1)[-1]
    given = [a for a in arguments.named_children if a.type != "comment"]
    if not HELPER.search(name) or len(given) < 3:
        return []
    kernel = given[0]
    while kernel.type in ("parenthesized_expression", "cast_expression"):  # ((void*)k), (k<256>)
        inner = kernel.child_by_field_name("value")
        if inner is None and kernel.named_children:
            inner = kernel.named_children[-1]
        if inner is None:
            break
        kernel = inner
    if kernel.type == "template_function":
        kernel = kernel.child_by_field_name("name") or kernel
    if kernel.type != "identifier":
        return []
    rest = () if ARRAY_ARGUMENTS.match(name) else tuple(source.text(a) for a in given[3:])
    return [Launch(source.text(kernel), source.text(given[2]), rest, through_helper=True)]


def definitions(code: str, whole: bool = True) -> dict[str, str]:
    """name -> value text of every `[const|constexpr] T name = value;`, `dim3 name(a, b)`,
    `T name{...}` and `#define NAME value` in `code`, and dim3s as `dim3_values` reads them; a
    name defined twice differently is dropped, and so is a dim3 whose value cannot be trusted.
    `whole`: `code` is whole code (a region, a file), not lines `search` found."""
    source = Source(code)
    found: dict[str, str] = {}
    dropped: set[str] = set()

    def add(name: str, value: str) -> None:
        define(found, dropped, name, value)

    for node in walk(source.root):
        if node.type == "init_declarator":
            name = node.child_by_field_name("declarator")
            value = node.child_by_field_name("value")
            if name is not None and value is not None and name.type == "identifier":
                text = source.text(value)
                if value.type == "argument_list":  # dim3 block(16, 16)
                    text = "dim3" + text
                add(source.text(name), text)
        elif node.type == "preproc_def":
            name = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if name is not None and value is not None:
                add(source.text(name), source.text(value).strip())
    dim3s, unsafe = dim3_definitions(source, whole)  # `dim3 b (N);`, `dim3 b; b.x = N;`
    for named, given in dim3s:
        add(named, given)
    return {name: value for name, value in found.items() if name not in unsafe}


def constant(expression: str, names: Mapping[str, str], depth: int = 0) -> int | None:
    """The value of an integer expression (a block size, a loop bound) when it is a constant
    this code can see; None otherwise."""
    if depth > MAX_DEPTH:
        return None
    source = Source(f"auto nvcc_opt_value = {expression};")
    declarator = next((n for n in walk(source.root) if n.type == "init_declarator"), None)
    value = None if declarator is None else declarator.child_by_field_name("value")
    if value is None or source.root.has_error:
        return None
    return _evaluate(source, value, names, depth)


def _evaluate(
    source: Source, node: tree_sitter.Node, names: Mapping[str, str], depth: int
) -> int | None:
    kind = node.type
    if kind == "number_literal":
        text = source.text(node).rstrip("uUlL")
        try:
            return int(text, 0)
        except ValueError:
            return None
    if kind == "parenthesized_expression" and node.named_child_count == 1:
        inner = node.named_children[0]
        return _evaluate(source, inner, names, depth)
    if kind == "unary_expression":
        operator = node.child_by_field_name("operator")
        argument = node.child_by_field_name("argument")
        if operator is None or argument is None or source.text(operator) not in "-+":
            return None
        value = _evaluate(source, argument, names, depth)
        if value is None:
            return None
        return -value if source.text(operator) == "-" else value
    if kind == "identifier":
        defined = names.get(source.text(node))
        return None if defined is None else constant(defined, names, depth + 1)
    if kind == "call_expression":
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        if function is None or arguments is None or source.text(function) != "dim3":
            return None
        return _product(source, arguments.named_children, names, depth)
    if kind == "initializer_list":
        return _product(source, node.named_children, names, depth)
    if kind == "binary_expression":
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        operator = node.child_by_field_name("operator")
        if left is None or right is None or operator is None:
            return None
        a, b = _evaluate(source, left, names, depth), _evaluate(source, right, names, depth)
        if a is None or b is None:
            return None
        op = source.text(operator)
        if op == "*":
            return a * b
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "<<" and 0 <= b < 64:
            return a << b
        if op == "/" and b != 0:
            return int(a / b)
    return None


def _product(
    source: Source, nodes: Iterable[tree_sitter.Node], names: Mapping[str, str], depth: int
) -> int | None:
    total = 1
    for node in nodes:
        value = _evaluate(source, node, names, depth)
        if value is None:
            return None
        total *= value
    return total


def kernel_arguments(launch: Launch, params: int) -> list[tuple[str, ...]]:
    """The argument lists this launch may give a kernel of `params` parameters: its own for
    `k<<<...>>>(...)`; for a launch helper, every run of `params` consecutive arguments after the
    block size (which run is the kernel's is not known: each counts); none when too few."""
    if not launch.through_helper:
        return [launch.args]
    count = len(launch.args)
    if params == 0 or count < params:
        return []
    return [launch.args[i : i + params] for i in range(count - params + 1)]


def aliased(launch: Launch, pointer_positions: Iterable[int], params: int = 0) -> bool:
    """Whether two pointer parameters (of a kernel of `params` parameters) may receive the same
    argument text in this launch; a launch whose arguments cannot be read counts as one."""
    positions = list(pointer_positions)
    runs = kernel_arguments(launch, params)
    return not runs or any(_twins(args, positions) for args in runs)


def _twins(args: tuple[str, ...], positions: list[int]) -> bool:
    """Whether two of the pointer arguments may point into one array: the same text, or the
    same base (`tmp` and `tmp + 1`, `&buf[k]` and `buf`, through casts)."""
    if any(position >= len(args) for position in positions):
        return True  # a launch we do not understand: assume the worst
    return overlapping(args[position] for position in positions)


def overlapping(pointers: Iterable[str]) -> bool:
    """Whether two of these pointer arguments have one base (`pointer_base`)."""
    bases = [pointer_base(p) for p in pointers]
    return len(bases) != len(set(bases))


_CAST = re.compile(r"^\(\s*(const\s+)?[A-Za-z_][\w:<>\s]*\*+\s*\)")


def pointer_base(argument: str) -> str:
    """The array an argument points into, as written: `tmp` of `tmp + 1`, `(float*)tmp + 4`,
    `&tmp[8]` and `tmp`; the whole text when it starts with no name.

    >>> [pointer_base(a) for a in ("tmp + 1", "&buf[k]", "(float*)(x) + n", "s.data + 2", "3")]
    ['tmp', 'buf', 'x', 's.data', '3']
    """
    text = "".join(argument.split())
    while True:
        stripped = _CAST.sub("", text).lstrip("&(")
        if stripped == text:
            break
        text = stripped
    found = re.match(r"[A-Za-z_]\w*(?:(?:\.|->)[A-Za-z_]\w*)*", text)
    return found.group(0) if found else text


def aliased_by_callers(
    code: str, kernel: str, pointer_positions: Iterable[int], params: int = 0
) -> bool:
    """Whether a host function of `code` passes two of its own parameters to `kernel`'s pointer
    parameters and is called in `code` with the same argument for both (a recursion such as
    `scan(scratch, scratch, ...)`): the launch's text shows two names, the data is one array."""
    source = Source(code)
    positions = list(pointer_positions)
    for function in walk(source.root):
        declarator = function.child_by_field_name("declarator")
        if function.type != "function_definition" or declarator is None:
            continue
        name = declarator.child_by_field_name("declarator")
        parameters = declarator.child_by_field_name("parameters")
        if name is None or parameters is None:
            continue
        names = [_text(source, declared_name(p)) for p in parameters.named_children]
        for launch in launches(source.text(function)):
            if launch.kernel != kernel:
                continue
            for args in kernel_arguments(launch, params or len(launch.args)):
                passed = [
                    names.index(args[i].strip())
                    for i in positions
                    if i < len(args) and args[i].strip() in names
                ]
                if _called_with_twins(source, source.text(name), passed):
                    return True
    return False


def _called_with_twins(source: Source, function: str, indices: list[int]) -> bool:
    for node in walk(source.root):
        callee = node.child_by_field_name("function") if node.type == "call_expression" else None
        arguments = node.child_by_field_name("arguments") if callee is not None else None
        if callee is None or arguments is None or source.text(callee) != function:
            continue
        texts = ["".join(source.text(a).split()) for a in arguments.named_children]
        chosen = [texts[i] for i in indices if i < len(texts)]
        if len(chosen) != len(set(chosen)):
            return True
    return False


def _text(source: Source, node: tree_sitter.Node | None) -> str:
    return "" if node is None else source.text(node)


def type_aliases(code: str, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """name -> builtin type of every `typedef T name;` and `using name = T;` in `code` whose T is
    a builtin arithmetic or CUDA vector type (`LDG_TYPES`) or an alias resolved already (from
    `known` or earlier in `code`), with `known`'s; a name aliased twice differently is dropped."""
    source = Source(code)
    found: dict[str, str] = dict(known or {})
    dropped: set[str] = set()
    for node in walk(source.root):
        target: tree_sitter.Node | None = None
        if node.type == "type_definition":
            kind = node.child_by_field_name("type")
            target = node.child_by_field_name("declarator")
        elif node.type == "alias_declaration":
            kind = node.child_by_field_name("type")
            target = node.child_by_field_name("name")
        else:
            continue
        if kind is None or target is None or target.type not in ("type_identifier", "identifier"):
            continue
        words = " ".join(w for w in source.words(kind).split() if w not in ("const", "volatile"))
        resolved = words if words in LDG_TYPES else found.get(words)
        if resolved is not None:
            define(found, dropped, source.text(target), resolved)
    return found


def macro_types(names: Mapping[str, str], types: dict[str, str]) -> dict[str, str]:
    """`types` with the macros of `names` that stand for a builtin type (`#define real double`,
    `-Dreal=double`), unless the name is an alias of another type already."""
    for name, value in names.items():
        words = " ".join(re.sub(r"//.*|/\*.*?\*/", " ", value).split())
        if words in LDG_TYPES and types.setdefault(name, words) != words:
            del types[name]
    return types


def facts_from(
    code: str,
    found: list[Launch],
    names: Mapping[str, str],
    types: Mapping[str, str] | None = None,
) -> Facts:
    """The facts of the kernels `code` defines, from the launches found (in it and elsewhere)
    and the constants known: a block size where every launch agrees on one constant, and
    no aliasing where every launch passes distinct pointers (and so do the callers in `code`);
    which arguments the helpers `code` declares cannot write through."""
    block_sizes: dict[str, int] = {}
    no_alias: set[str] = set()
    for kernel in Source(code).kernels():
        mine = [launch for launch in found if launch.kernel == kernel.name]
        if not mine:
            continue
        sizes = {constant(launch.block, names) for launch in mine}
        if len(sizes) == 1 and None not in sizes:
            (size,) = sizes
            if size is not None and size > 0:
                block_sizes[kernel.name] = size
        positions = [kernel.params.index(p.name) for p in kernel.pointers]
        params = len(kernel.params)
        if not any(
            aliased(launch, positions, params) for launch in mine
        ) and not aliased_by_callers(code, kernel.name, positions, params):
            no_alias.add(kernel.name)
    return Facts(
        block_sizes=block_sizes,
        no_alias=frozenset(no_alias),
        names=dict(names),
        types=type_aliases(code, types),
        readonly_params=readonly_params(code),
    )
