"""Warp shuffles for a block's shared-memory tree reduction (the scan: `shuffle_scan.py`).

`warp_shuffle_tail`: the last warp of a shared-memory tree reduction done with shuffles.

A first-version block reduction halves a shared array until one value is left, with a barrier
after every step:

    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
      __syncthreads();
    }

Its last five steps (s = 16 ... 1) all happen inside the first warp, yet each pays a barrier of
the whole block and a shared-memory round trip. The rewrite stops the loop at s = 32 and lets
the first warp finish in registers with `__shfl_down_sync`; lane 0 stores the result in
`buf[0]`, and one barrier follows, so every thread sees what it saw before. Each step adds the
same two values in the same order as the original (lane t: own value + lane t + s), so the total
is the same bit for bit.

It applies only where that is certain: a 1D block whose size is known and a power of two of at
least 32 (from the launches in the region or found by `search`), a loop of exactly that shape
(`s = blockDim.x / 2` or the block size over 2, `s > 0`, `s /= 2` or `s >>= 1`, the guarded `+=`
and the barrier, nothing else) on a `__shared__` array of a type shuffles carry, whose later
reads in the kernel are all of element 0 (the rewrite leaves elements 1-31 at different values).

Both need every thread of a 1D block to reach the loop (a shuffle over the full mask needs all
32 lanes): a kernel with a `return` before it, the loop inside another loop, or any use of the
y or z thread index or block extent is left alone; so is a loop under a `#pragma`, and a shared
array whose name is also a parameter or another declaration, or that is used other than by
indexing it (a pointer to it could read the elements the rewrite leaves different).
"""

from __future__ import annotations

import tree_sitter

from nvcc_opt.search.cuda import (
    Kernel,
    Source,
    declared_name,
    fresh_name,
    identifiers,
    indentation,
    walk,
)
from nvcc_opt.search.kernel_facts import (
    WARP,
    Facts,
    assignment,
    builtin_aliases,
    statements,
    thread_aliases,
)
from nvcc_opt.search.shuffle_shapes import (
    COUNTERS,
    each_loop,
    int_counter,
    kernel_constant,
    named_in_macro,
    outside_fits,
    shared_type,
    squeezed,
)
from nvcc_opt.search.uniform_loops import enclosing_loops

VALUE = "nvcc_opt_sum"
LANE_STEP = "nvcc_opt_step"


def warp_shuffle_tail(code: str, facts: Facts) -> str | None:
    return each_loop(code, facts, _warps_power_of_two, _tail_at)


def _warps_power_of_two(size: int) -> bool:
    return size >= WARP and not size & (size - 1)


def _tail_at(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, size: int, known: Facts
) -> bytes | None:
    found = _tree_loop(source, kernel, loop, size, known)
    if found is None:
        return None
    used = identifiers(source, kernel.node)
    return _rewrite(source, loop, found, fresh_name(VALUE, used), fresh_name(LANE_STEP, used))


def _tree_loop(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, size: int, known: Facts
) -> tuple[str, str, str] | None:
    """(stride variable, shared array, its element type) when `loop` is the tree reduction,
    outside any other loop of the kernel."""
    if not outside_fits(source, kernel, loop, nested=True):
        return None
    counter = int_counter(source, loop) or _declared_before(source, kernel, loop)
    if counter is None:
        return None
    stride, value = counter
    extents = builtin_aliases(source, kernel, "blockDim.x")  # `local_size = blockDim.x`
    halves = {f"{e}/2" for e in extents} | {f"{e}>>1" for e in extents}
    if squeezed(source, value) not in halves and (
        kernel_constant(source, kernel, value, known.names) != size // 2
    ):
        return None
    ends = (f"{stride}>0", f"{stride}>=1", f"{stride}!=0", f"0<{stride}", f"{stride}")
    if squeezed(source, loop.child_by_field_name("condition")) not in ends:
        return None
    if squeezed(source, loop.child_by_field_name("update")) not in (
        f"{stride}/=2",
        f"{stride}>>=1",
        f"{stride}={stride}/2",
        f"{stride}={stride}>>1",
    ):
        return None
    body = loop.child_by_field_name("body")
    steps = [] if body is None else statements(body)
    if len(steps) != 2 or squeezed(source, steps[1]) != "__syncthreads();":
        return None
    guard = steps[0]
    if guard.type != "if_statement" or guard.child_by_field_name("alternative") is not None:
        return None
    threads = thread_aliases(source, kernel)
    condition = squeezed(source, guard.child_by_field_name("condition"))
    thread = next((t for t in threads if condition in (f"({t}<{stride})", f"({stride}>{t})")), None)
    add = squeezed(source, guard.child_by_field_name("consequence")).removeprefix("{")
    array = add.split("[", 1)[0]
    if thread is None or not array.isidentifier():
        return None
    mine, other = (
        f"{array}[{thread}]",
        (f"{array}[{thread}+{stride}]", f"{array}[{stride}+{thread}]"),
    )
    sums = {f"{mine}+={o};" for o in other} | {f"{mine}={mine}+{o};" for o in other}
    if add.removesuffix("}") not in sums:
        return None
    element = shared_type(source, kernel, array, types=known.types)
    if element is None or not _reads_only_first(source, kernel, loop, array):
        return None
    around = enclosing_loops(loop, kernel)
    if around and not _written_first(source, around[0], loop, array, threads):
        return None
    return stride, array, element


def _declared_before(
    source: Source, kernel: Kernel, loop: tree_sitter.Node
) -> tuple[str, tree_sitter.Node] | None:
    """(name, initial value) of `for (s = value; ...)` whose counter is an integer local of the
    kernel, declared once (`int s;` or with a value), outside any loop, and not named after the
    loop, which leaves it at 16, not 0, once rewritten: nor reachable there otherwise (its
    address taken, a reference bound to it, a lambda naming it, a macro naming it)."""
    found = assignment(source, loop.child_by_field_name("initializer"))
    if found is None or found[1] != "=" or enclosing_loops(loop, kernel):
        return None
    name, _, value = found
    counter = source.text(name)
    if name.type != "identifier" or counter in kernel.params:
        return None
    types = [
        squeezed(source, n.child_by_field_name("type"))
        for n in walk(kernel.body)
        if n.type == "declaration" and counter in _names_declared(source, n)
    ]
    if len(types) != 1 or types[0] not in COUNTERS or named_in_macro(source, counter):
        return None
    for node in walk(kernel.body):
        if node.type != "identifier" or source.text(node) != counter:
            continue
        if node.start_byte >= loop.end_byte or _escapes(node):
            return None
    return counter, value


def _names_declared(source: Source, declaration: tree_sitter.Node) -> set[str]:
    """The names a declaration declares: `int s;` (a bare name) and `int s = 0, t[4];`."""
    names = set()
    for child in declaration.named_children:
        name = child if child.type == "identifier" else declared_name(child)
        if name is not None and child != declaration.child_by_field_name("type"):
            names.add(source.text(name))
    return names


def _escapes(mention: tree_sitter.Node) -> bool:
    """Whether the counter is reachable by another name here: `&s`, `int& r = s`, a lambda."""
    parent = mention.parent
    if parent is not None and parent.type == "pointer_expression":
        return True
    if parent is not None and parent.type == "init_declarator":
        declarator = parent.child_by_field_name("declarator")
        if declarator is not None and declarator.type == "reference_declarator":
            return True
    while parent is not None:
        if parent.type == "lambda_expression":
            return True
        parent = parent.parent
    return False


def _written_first(
    source: Source,
    around: tree_sitter.Node,
    loop: tree_sitter.Node,
    array: str,
    threads: set[str],
) -> bool:
    """Inside a loop every thread runs alike: whether each iteration gives every thread's element
    of `array` a new value before anything reads it (`array[tid] = value;`, unguarded, the first
    statement of the loop's body to name `array`), so that elements 1-31, which the rewrite
    leaves different, are never read in the next iteration."""
    body = around.child_by_field_name("body")
    steps = [] if body is None else statements(body)
    if loop not in steps:
        return False
    for step in steps[: steps.index(loop)]:
        if array not in identifiers(source, step):
            continue
        found = assignment(source, step)
        if found is None or found[1] != "=":
            return False
        left, _, right = found
        written = {f"{array}[{t}]" for t in threads}
        return squeezed(source, left) in written and array not in identifiers(source, right)
    return False


def _reads_only_first(source: Source, kernel: Kernel, loop: tree_sitter.Node, array: str) -> bool:
    """Whether every use of `array` after the loop is `array[0]`."""
    for node in walk(kernel.body):
        if node.start_byte < loop.end_byte or node.type != "identifier":
            continue
        if source.text(node) != array:
            continue
        parent = node.parent
        if parent is None or parent.type != "subscript_expression":
            return False
        index = parent.child_by_field_name("indices") or parent.child_by_field_name("index")
        if squeezed(source, index) not in ("0", "[0]"):
            return False
    return True


def _rewrite(
    source: Source,
    loop: tree_sitter.Node,
    found: tuple[str, str, str],
    value: str,
    step: str,
) -> bytes:
    stride, array, element = found
    pad = indentation(source, loop).decode()
    body = loop.child_by_field_name("body")
    assert body is not None
    condition = loop.child_by_field_name("condition")
    assert condition is not None
    # the condition's own bytes, not the first text like it (a comment may hold the same words)
    data = source.data
    head = (
        data[loop.start_byte : condition.start_byte]
        + f"{stride} > {WARP // 2}".encode()
        + data[condition.end_byte : body.start_byte]
    ).decode("utf-8", "replace")
    lines = [
        f"{head}{source.text(body)}",
        f"{pad}if (threadIdx.x < {WARP}) {{  // the last warp: shuffles, no barriers",
        f"{pad}  {element} {value} = {array}[threadIdx.x];",
        f"{pad}  for (int {step} = {WARP // 2}; {step} > 0; {step} /= 2)",
        f"{pad}    {value} += __shfl_down_sync(0xffffffffu, {value}, {step});",
        f"{pad}  if (threadIdx.x == 0) {array}[0] = {value};",
        f"{pad}}}",
        f"{pad}__syncthreads();",
    ]
    return "\n".join(lines).encode()
