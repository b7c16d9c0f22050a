"""Warp shuffles for a block's shared-memory reduction and scan.

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

`warp_shuffle_scan`: a Hillis-Steele inclusive scan of a shared array, with two barriers per
step,

    for (int o = 1; o < blockDim.x; o *= 2) {
      int add = threadIdx.x >= o ? buf[threadIdx.x - o] : 0;
      __syncthreads();
      buf[threadIdx.x] += add;
      __syncthreads();
    }

becomes a scan within each warp by `__shfl_up_sync`, a scan of the warps' totals by the first
warp, and each warp adding the totals before it: three barriers in all (and 32 more elements
of static shared memory, which a kernel near its limit could miss: benchmark_code would see
the launch fail). Integer element types
only, so the different order of the additions gives the same values; a block size found in the
launches that is whole warps (at most 1024 threads).

Both need every thread of a 1D block to reach the loop (a shuffle over the full mask needs all
32 lanes): a kernel with a `return` before it, the loop inside another loop, or any use of the
y or z thread index or block extent is left alone; so is a loop under a `#pragma`, and a shared
array whose name is also a parameter or another declaration, or that is used other than by
indexing it (a pointer to it could read the elements the rewrite leaves different).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    Source,
    declared_name,
    edited,
    extern_shared,
    fresh_name,
    identifiers,
    indentation,
    operator_type,
    preceding_pragma,
    squeeze,
    walk,
)
from nvcc_opt.search.launches import constant, definitions

if TYPE_CHECKING:
    from nvcc_opt.search.transforms import Facts

WARP = 32
INTEGERS = {"int", "unsigned", "unsigned int", "long long", "unsigned long long"}
SHUFFLED = {"float", "double", *INTEGERS}
VALUE = "nvcc_opt_sum"
LANE_STEP = "nvcc_opt_step"
FULL = "0xffffffffu"


def warp_shuffle_tail(code: str, facts: Facts) -> str | None:
    return _each_loop(code, facts, _warps_power_of_two, _tail_at)


def warp_shuffle_scan(code: str, facts: Facts) -> str | None:
    return _each_loop(code, facts, _whole_warps, _scan_at)


def _warps_power_of_two(size: int) -> bool:
    return size >= WARP and not size & (size - 1)


def _whole_warps(size: int) -> bool:
    return not size % WARP and WARP <= size <= WARP * WARP


def _tail_at(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, size: int, names: dict[str, str]
) -> bytes | None:
    found = _tree_loop(source, kernel, loop, size, names)
    if found is None:
        return None
    used = identifiers(source, kernel.node)
    return _rewrite(source, loop, found, fresh_name(VALUE, used), fresh_name(LANE_STEP, used))


def _scan_at(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, size: int, names: dict[str, str]
) -> bytes | None:
    found = _scan_loop(source, kernel, loop, size, names)
    return None if found is None else _scan(source, loop, found, identifiers(source, kernel.node))


LoopRewrite = Callable[[Source, Kernel, tree_sitter.Node, int, dict[str, str]], "bytes | None"]


def _each_loop(
    code: str, facts: Facts, fits: Callable[[int], bool], rewrite: LoopRewrite
) -> str | None:
    """`code` with every `for` loop of a kernel whose block size is known and `fits` replaced
    by what `rewrite` makes of it (None: left as it is)."""
    source = Source(code)
    names = {**facts.names, **definitions(code)}
    edits = []
    for kernel in source.kernels():
        size = facts.block_sizes.get(kernel.name)
        if size is None or not fits(size):
            continue
        for loop in (n for n in walk(kernel.body) if n.type == "for_statement"):
            new = rewrite(source, kernel, loop, size, names)
            if new is not None:
                edits.append(Edit(loop.start_byte, loop.end_byte, new))
    return edited(code, source, edits)


def _squeeze(source: Source, node: tree_sitter.Node | None) -> str:
    return "" if node is None else squeeze(source.text(node))


def _tree_loop(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, size: int, names: dict[str, str]
) -> tuple[str, str, str] | None:
    """(stride variable, shared array, its element type) when `loop` is the tree reduction,
    outside any other loop of the kernel."""
    if not _outside_fits(source, kernel, loop):
        return None
    counter = _int_counter(source, loop)
    if counter is None:
        return None
    stride, value = counter
    if _squeeze(source, value) not in ("blockDim.x/2", "blockDim.x>>1") and (
        _kernel_constant(source, kernel, value, names) != size // 2
    ):
        return None
    if _squeeze(source, loop.child_by_field_name("condition")) != f"{stride}>0":
        return None
    if _squeeze(source, loop.child_by_field_name("update")) not in (
        f"{stride}/=2",
        f"{stride}>>=1",
    ):
        return None
    body = loop.child_by_field_name("body")
    statements = [] if body is None else body.named_children
    if len(statements) != 2 or _squeeze(source, statements[1]) != "__syncthreads();":
        return None
    guard = statements[0]
    if guard.type != "if_statement" or guard.child_by_field_name("alternative") is not None:
        return None
    if _squeeze(source, guard.child_by_field_name("condition")) != f"(threadIdx.x<{stride})":
        return None
    add = _squeeze(source, guard.child_by_field_name("consequence"))
    array = add.split("[", 1)[0]
    if not array.isidentifier():
        return None
    if add not in (
        f"{array}[threadIdx.x]+={array}[threadIdx.x+{stride}];",
        f"{{{array}[threadIdx.x]+={array}[threadIdx.x+{stride}];}}",
    ):
        return None
    element = _shared_type(source, kernel, array)
    if element is None or not _reads_only_first(source, kernel, loop, array):
        return None
    return stride, array, element


def _int_counter(source: Source, loop: tree_sitter.Node) -> tuple[str, tree_sitter.Node] | None:
    """(name, initial value) of a loop `for (int name = value; ...)`."""
    init = loop.child_by_field_name("initializer")
    declarator = None if init is None else init.child_by_field_name("declarator")
    if init is None or declarator is None or declarator.type != "init_declarator":
        return None
    value = declarator.child_by_field_name("value")
    if value is None or _squeeze(source, init.child_by_field_name("type")) != "int":
        return None
    return _squeeze(source, declarator.child_by_field_name("declarator")), value


def _returns_before(node: tree_sitter.Node, kernel: Kernel) -> bool:
    return any(
        n.type == "return_statement" and n.start_byte < node.start_byte for n in walk(kernel.body)
    )


def _in_loop(node: tree_sitter.Node, kernel: Kernel) -> bool:
    parent = node.parent
    while parent is not None and parent != kernel.body:
        if parent.type in ("for_statement", "while_statement", "do_statement"):
            return True
        parent = parent.parent
    return False


def _outside_fits(source: Source, kernel: Kernel, loop: tree_sitter.Node) -> bool:
    """What both rewrites need around the loop: every thread of a 1D block reaches it (no
    `return` before it, no enclosing loop, no y or z thread index or extent in the kernel) and
    no `#pragma` (an unroll) applies to it."""
    if _in_loop(loop, kernel) or _returns_before(loop, kernel) or preceding_pragma(loop):
        return False
    text = "".join(source.text(kernel.body).split())
    return not any(f"{b}.{a}" in text for b in ("threadIdx", "blockDim") for a in ("y", "z"))


def _shared_type(
    source: Source, kernel: Kernel, array: str, carried: set[str] = SHUFFLED
) -> str | None:
    """The element type of `__shared__ T array[...]` declared in the kernel, if it is one of
    `carried`, and if that array is the only thing of this name in the kernel (no parameter,
    no other declaration shadowing it) and is only ever indexed (no pointer to it escapes)."""
    if not _only_indexed(source, kernel, array):
        return None
    for node in walk(kernel.body):
        if node.type != "declaration":
            continue
        qualifiers = [source.text(c) for c in node.children if c.type == "type_qualifier"]
        declared = [c for c in node.named_children if c.type == "array_declarator"]
        if "__shared__" not in qualifiers or len(declared) != 1:
            continue
        name = declared[0].child_by_field_name("declarator")
        if name is None or source.text(name) != array:
            continue
        element = source.words(node.child_by_field_name("type") or node)
        return element if element in carried else None
    return None


def _only_indexed(source: Source, kernel: Kernel, array: str) -> bool:
    declarations = 0
    for node in walk(kernel.node):
        if node.type != "identifier" or source.text(node) != array:
            continue
        parent = node.parent
        if parent is not None and parent.type == "array_declarator":
            declarations += 1
        elif parent is None or parent.type != "subscript_expression" or parent.children[0] != node:
            return False  # a parameter, a pointer declared to it, the name passed or copied
        elif parent.parent is not None and parent.parent.type == "pointer_expression":
            return False  # `&buf[0]`: a pointer into it
    return declarations == 1 and not extern_shared(source)


def _kernel_constant(
    source: Source, kernel: Kernel, node: tree_sitter.Node, names: dict[str, str]
) -> int | None:
    """The value of `node`, when it uses no name the kernel declares (a parameter or a local
    of the same name as a constant elsewhere is not that constant)."""
    if identifiers(source, node) & _declared_in(source, kernel):
        return None
    return constant(source.text(node), names)


def _declared_in(source: Source, kernel: Kernel) -> set[str]:
    found = set(kernel.params)
    for node in walk(kernel.body):
        target = (
            declared_name(node)
            if node.type in ("init_declarator", "declaration", "array_declarator")
            else None
        )
        if target is not None:
            found.add(source.text(target))
    return found


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
        if _squeeze(source, index) not in ("0", "[0]"):
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
    head = source.text(loop)[: body.start_byte - loop.start_byte]
    condition = loop.child_by_field_name("condition")
    assert condition is not None
    head = head.replace(source.text(condition), f"{stride} > {WARP // 2}", 1)
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


def _scan_loop(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, size: int, names: dict[str, str]
) -> tuple[str, str] | None:
    """(shared array, its integer element type) when `loop` is the Hillis-Steele scan."""
    if not _outside_fits(source, kernel, loop):
        return None
    counter = _int_counter(source, loop)
    if counter is None or _squeeze(source, counter[1]) != "1":
        return None
    offset = counter[0]
    condition = loop.child_by_field_name("condition")
    bound = condition.child_by_field_name("right") if condition is not None else None
    if condition is None or bound is None or operator_type(condition) != "<":
        return None
    if _squeeze(source, condition.child_by_field_name("left")) != offset:
        return None
    if (
        _squeeze(source, bound) != "blockDim.x"
        and _kernel_constant(source, kernel, bound, names) != size
    ):
        return None
    if _squeeze(source, loop.child_by_field_name("update")) not in (
        f"{offset}*=2",
        f"{offset}<<=1",
    ):
        return None
    body = loop.child_by_field_name("body")
    steps = [] if body is None else body.named_children
    if len(steps) != 4 or steps[0].type != "declaration":
        return None
    if not all(_squeeze(source, steps[i]) == "__syncthreads();" for i in (1, 3)):
        return None
    taken = steps[0].child_by_field_name("declarator")
    if taken is None or taken.type != "init_declarator" or len(steps[0].named_children) != 2:
        return None
    add = _squeeze(source, taken.child_by_field_name("declarator"))
    read = _squeeze(source, taken.child_by_field_name("value"))
    array = read.split("?", 1)[-1].split("[", 1)[0]
    if not array.isidentifier():
        return None
    if read != f"threadIdx.x>={offset}?{array}[threadIdx.x-{offset}]:0":
        return None
    if _squeeze(source, steps[2]) != f"{array}[threadIdx.x]+={add};":
        return None
    element = _shared_type(source, kernel, array, INTEGERS)
    if element is None or _squeeze(source, steps[0].child_by_field_name("type")) != (
        element.replace(" ", "")
    ):
        return None  # an `add` of another type would round each partial sum to its own
    return array, element


def _scan(source: Source, loop: tree_sitter.Node, found: tuple[str, str], used: set[str]) -> bytes:
    array, element = found
    v, u, w, o, lane, warps = (
        fresh_name(f"nvcc_opt_{stem}", used)
        for stem in ("value", "up", "warp_total", "offset", "lane", "warp_totals")
    )
    pad = indentation(source, loop).decode()
    steps = f"for (int {o} = 1; {o} < {WARP}; {o} *= 2)"
    lines = [
        "{  // a scan within each warp by shuffles, then of the warps' totals",
        f"  {element} {v} = {array}[threadIdx.x];",
        f"  const int {lane} = threadIdx.x % {WARP};",
        f"  {steps} {{",
        f"    {element} {u} = __shfl_up_sync({FULL}, {v}, {o});",
        f"    if ({lane} >= {o}) {v} += {u};",
        "  }",
        f"  __shared__ {element} {warps}[{WARP}];",
        f"  if ({lane} == {WARP - 1}) {warps}[threadIdx.x / {WARP}] = {v};",
        "  __syncthreads();",
        f"  if (threadIdx.x < {WARP}) {{",
        f"    {element} {w} = threadIdx.x < blockDim.x / {WARP} ? {warps}[threadIdx.x] : 0;",
        f"    {steps} {{",
        f"      {element} {u} = __shfl_up_sync({FULL}, {w}, {o});",
        f"      if ({lane} >= {o}) {w} += {u};",
        "    }",
        f"    {warps}[threadIdx.x] = {w};",
        "  }",
        "  __syncthreads();",
        f"  if (threadIdx.x >= {WARP}) {v} += {warps}[threadIdx.x / {WARP} - 1];",
        f"  {array}[threadIdx.x] = {v};",
        "  __syncthreads();",
        "}",
    ]
    return ("\n".join(lines[:1] + [pad + line for line in lines[1:]])).encode()
