"""One pass instead of several: consecutive launches of element-wise kernels fused into one.

A first version of a multi-step update often launches one kernel per step, each reading and
writing whole arrays at its thread's index. When every step touches memory only at that index,
the steps can run one after the other inside one thread: one launch, and what a step wrote is
still in a register or the L1 cache when the next reads it (the paper's LULESH gain).

The transform fuses a run of launch statements in the region when the kernels are defined in the
region with the same parameter list, launched with the same configuration and arguments, and
each is element-wise: its index is `blockIdx.x * blockDim.x + threadIdx.x`, its guard the same
`if (i >= n) return;` or `if (i < n) {...}`, every subscript is `[i]`, and nothing else (no
barriers, shared or atomic memory, pointer arithmetic, other returns, or an array holder passed
to a function) could reach another thread's elements. The original kernels stay defined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    declared_name,
    edited,
    fresh_name,
    identifiers,
    indentation,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts, global_index_name, guarded_rest, statement_text
from nvcc_opt.search.launches import overlapping

FORBIDDEN = (
    "threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads", "__syncwarp", "__shared__",
    "atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicCAS", "atomicInc",
    "atomicDec", "atomicAnd", "atomicOr", "atomicXor",
)  # fmt: skip


CHECK = re.compile(r"(\w+\()?cudaGetLastError\(\)\)?;")


@dataclass(frozen=True)
class Step:
    """An element-wise kernel: its index declaration, guard bound and the statements after it."""

    kernel: Kernel
    index: str  # `long i = blockIdx.x * (long)blockDim.x + threadIdx.x;` as written
    row: str
    bound: str  # the guard's `n`
    rest: list[tree_sitter.Node]


def fuse(code: str, facts: Facts) -> str | None:
    source = Source(code)
    steps = {k.name: step for k in source.kernels() if (step := _step(source, k)) is not None}
    if len(steps) < 2:
        return None
    edits: list[Edit] = []
    used = identifiers(source, source.root)
    for function in walk(source.root):
        if function.type != "function_definition" or function.has_error:
            continue
        body = function.child_by_field_name("body")
        blocks = [n for n in walk(body) if n.type == "compound_statement"] if body else []
        for run in [r for block in blocks for r in _runs(source, block, steps, facts)]:
            launched = [_launched(source, s) for s in run]
            kernels = [steps[one[0]] for one in launched]
            plan = _plan(source, steps, launched)
            assert plan is not None  # _runs kept only runs with a plan
            names = [k.kernel.name for k in kernels]
            stem = "_".join(names) if len(names) == 2 else f"{names[0]}_to_{names[-1]}"
            name = fresh_name(f"fused_{stem}", used)
            used.add(name)
            declarations, arguments = plan
            edits.append(
                Edit(
                    function.start_byte,
                    function.start_byte,
                    _kernel(source, name, kernels, declarations),
                )
            )
            launch = f"{name}{_syntax(source, run[0])}({', '.join(arguments)});"
            edits.append(Edit(run[0].start_byte, run[-1].end_byte, launch.encode()))
    return edited(code, source, edits)


def _step(source: Source, kernel: Kernel) -> Step | None:
    body = [c for c in kernel.body.named_children if c.type != "comment"]
    row = global_index_name(source, body[0]) if len(body) >= 2 else None
    if row is None:
        return None
    guarded = guarded_rest(source, body, row)
    if guarded is None:
        return None
    bound, rest = guarded
    names = [source.text(n) for n in walk(kernel.body) if n.type == "identifier"]
    if sum(n in FORBIDDEN for n in names) != 3 or "__shared__" in source.text(kernel.body):
        return None
    holders = _array_holders(source, kernel)
    params = holders & set(kernel.params)
    for statement in rest:
        for node in walk(statement):
            if node.type in ("return_statement", "pointer_expression", "goto_statement"):
                return None
            if node.type == "subscript_expression" and not (
                _at_row(source, node, row) and _of_parameter(source, node, params)
            ):
                return None  # another element, or one through a local, a cast, an offset
            if node.type == "assignment_expression" and _assigns_holder(source, node, holders):
                return None  # a pointer moved: its element i is another array element
            if node.type == "call_expression" and _passes(source, node, holders):
                return None
    return Step(kernel, source.text(body[0]), row, bound, rest)


def _of_parameter(source: Source, node: tree_sitter.Node, holders: set[str]) -> bool:
    """Whether the subscripted array is a parameter's, by its name (or a member of it)."""
    base = node.child_by_field_name("argument")
    while base is not None and base.type == "field_expression":
        base = base.child_by_field_name("argument")
    return base is not None and base.type == "identifier" and source.text(base) in holders


def _assigns_holder(source: Source, node: tree_sitter.Node, holders: set[str]) -> bool:
    left = node.child_by_field_name("left")
    return left is not None and left.type == "identifier" and source.text(left) in holders


def _at_row(source: Source, node: tree_sitter.Node, row: str) -> bool:
    indices = node.child_by_field_name("indices")
    return indices is not None and "".join(source.text(indices).split()) == f"[{row}]"


def _array_holders(source: Source, kernel: Kernel) -> set[str]:
    """Parameters that lead to arrays: pointers, and structs whose members are subscripted."""
    holders = {p.name for p in kernel.pointers}
    for node in walk(kernel.body):
        if node.type == "subscript_expression":
            base = node.child_by_field_name("argument")
            while base is not None and base.type == "field_expression":
                base = base.child_by_field_name("argument")
            if base is not None and base.type == "identifier":
                holders.add(source.text(base))
    return holders


def _passes(source: Source, call: tree_sitter.Node, holders: set[str]) -> bool:
    """Whether a call gets an array holder itself (it could read any element through it)."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return False
    for argument in arguments.named_children:
        while argument.type == "field_expression":
            inner = argument.child_by_field_name("argument")
            if inner is None:
                break
            argument = inner
        if argument.type == "identifier" and source.text(argument) in holders:
            return True
    return False


def _launched(source: Source, statement: tree_sitter.Node) -> tuple[str, ...]:
    """(kernel, configuration, arguments) of a launch statement, each as written."""
    call = statement.named_children[0] if statement.named_children else None
    if statement.type != "expression_statement" or call is None or call.type != "call_expression":
        return ()
    syntax = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
    function = call.child_by_field_name("function")
    arguments = call.child_by_field_name("arguments")
    if syntax is None or function is None or arguments is None or function.type != "identifier":
        return ()
    squeeze = "".join
    return (
        source.text(function),
        squeeze(source.text(syntax).split()),
        squeeze(source.text(arguments).split()),
    )


def _runs(
    source: Source, body: tree_sitter.Node, steps: dict[str, Step], facts: Facts
) -> list[list[tree_sitter.Node]]:
    """Maximal runs (two or more) of launches that can be fused: consecutive, or apart only by
    error checks (`CHECK(cudaGetLastError());`), which the fused launch's own check covers."""
    runs: list[list[tree_sitter.Node]] = []
    current: list[tree_sitter.Node] = []
    for statement in [*body.named_children, None]:
        if statement is not None and statement.type == "comment":
            continue  # a comment between two launches keeps them consecutive
        if current and statement is not None and _error_check(source, statement):
            continue
        launched = _launched(source, statement) if statement is not None else ()
        fits = bool(launched) and _fits(source, steps, current, launched, facts)
        if current and not fits:
            if len(current) > 1:
                runs.append(current)
            current = []
        if statement is not None and launched and launched[0] in steps:
            current.append(statement)
    return runs


def _error_check(source: Source, statement: tree_sitter.Node) -> bool:
    return statement.type == "expression_statement" and bool(
        CHECK.fullmatch("".join(source.text(statement).split()))
    )


def _fits(
    source: Source,
    steps: dict[str, Step],
    current: list[tree_sitter.Node],
    launched: tuple[str, ...],
    facts: Facts,
) -> bool:
    head = _launched(source, current[0]) if current else ()
    if not head or launched[0] not in steps or launched[1] != head[1]:
        return False
    one, other = steps[head[0]], steps[launched[0]]
    same = "".join
    shape = (
        one.row == other.row
        and same(one.bound.split()) == same(other.bound.split())
        # both are the global x index (any order of its terms), declared with the same type
        and same(one.index.split("=")[0].split()) == same(other.index.split("=")[0].split())
    )
    run = [_launched(source, s) for s in current] + [launched]
    if not shape or _plan(source, steps, run) is None:
        return False
    if all(one[2] == head[2] and _same_parameters(source, steps, one[0], head[0]) for one in run):
        # one parameter list, one set of arguments: nothing aliases anew, but two pointer
        # arguments of that set may point into one array (`tmp, tmp + 1`): then kernel k + 1
        # reads at i what kernel k writes at i + 1. (Members of one struct argument are taken
        # as they are in the original: each element i is touched at i only.)
        return not overlapping(_pointer_arguments(source, steps[head[0]], head))
    # Other arguments per kernel: as `__restrict__` does, rely on every launch passing distinct
    # pointers (facts.no_alias), each a plain name, so step k reads element i of what it names.
    pointers = [p for one in run for p in _pointer_arguments(source, steps[one[0]], one)]
    return all(one[0] in facts.no_alias for one in run) and all(p.isidentifier() for p in pointers)


def _same_parameters(source: Source, steps: dict[str, Step], a: str, b: str) -> bool:
    same = "".join
    one, other = steps[a].kernel, steps[b].kernel
    return same(_parameters(source, one).split()) == same(_parameters(source, other).split())


def _pointer_arguments(source: Source, step: Step, launched: tuple[str, ...]) -> list[str]:
    pointers = {p.name for p in step.kernel.pointers}
    pairs = zip(_declarations(source, step.kernel), _arguments(launched[2]), strict=False)
    return [argument for (name, _), argument in pairs if name in pointers]


def _plan(
    source: Source, steps: dict[str, Step], run: list[tuple[str, ...]]
) -> tuple[list[str], list[str]] | None:
    """The fused kernel's parameter declarations and the launch's arguments: each kernel's
    parameters in turn, one of a name shared by several kernels when every launch passes it the
    same argument (the declaration without `const` where they differ only by it); None when a
    shared name gets different arguments or types."""
    merged: dict[str, tuple[str, str]] = {}
    for launched in run:
        declarations = _declarations(source, steps[launched[0]].kernel)
        arguments = _arguments(launched[2])
        if len(declarations) != len(arguments):
            return None
        for (name, declaration), argument in zip(declarations, arguments, strict=True):
            if name not in merged:
                merged[name] = (declaration, argument)
                continue
            known, passed = merged[name]
            if passed != argument or _unconst(known) != _unconst(declaration):
                return None
            if "const" in known.split():  # the one the kernel writes through
                merged[name] = (declaration, argument)
    return [d for d, _ in merged.values()], [a for _, a in merged.values()]


def _unconst(declaration: str) -> str:
    return "".join(w for w in declaration.replace("*", " * ").split() if w != "const")


def _declarations(source: Source, kernel: Kernel) -> list[tuple[str, str]]:
    declarator = kernel.node.child_by_field_name("declarator")
    parameters = None if declarator is None else declarator.child_by_field_name("parameters")
    found = []
    for parameter in [] if parameters is None else parameters.named_children:
        name = declared_name(parameter)
        if parameter.type == "parameter_declaration" and name is not None:
            found.append((source.text(name), " ".join(source.text(parameter).split())))
    return found


def _arguments(text: str) -> list[str]:
    """`(a,b+1,f(c,d))` (squeezed) -> ["a", "b+1", "f(c,d)"]."""
    inner, depth, start, found = text[1:-1], 0, 0, []
    for i, c in enumerate(inner):
        depth += (c in "([{") - (c in ")]}")
        if c == "," and depth == 0:
            found.append(inner[start:i])
            start = i + 1
    return [*found, inner[start:]] if inner else []


def _syntax(source: Source, statement: tree_sitter.Node) -> str:
    call = statement.named_children[0]
    return next(source.text(c) for c in call.children if c.type == "kernel_call_syntax")


def _parameters(source: Source, kernel: Kernel) -> str:
    declarator = kernel.node.child_by_field_name("declarator")
    parameters = None if declarator is None else declarator.child_by_field_name("parameters")
    return "" if parameters is None else source.text(parameters)


def _kernel(source: Source, name: str, steps: list[Step], declarations: list[str]) -> bytes:
    first = steps[0]
    unit = indentation(source, first.rest[0]).decode() or "  "
    lines = [
        f"// {', '.join(s.kernel.name for s in steps)} in one pass (same threads, same index)",
        f"__global__ void {name}({', '.join(declarations)}) {{",
        unit + first.index,
        f"{unit}if ({first.row} >= {first.bound}) return;",
    ]
    for step in steps:
        lines.append(f"{unit}{{  // {step.kernel.name}")
        for statement in step.rest:
            text = statement_text(source, statement)
            lines.append("\n".join(unit * 2 + line if line else "" for line in text.split("\n")))
        lines.append(unit + "}")
    lines += ["}", "", ""]
    return "\n".join(lines).encode()
