"""Warp shuffles for a block's shared-memory scan.

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

The refusals that both warp-shuffle rewrites share are in `shuffle.py`'s docstring.
"""

from __future__ import annotations

import tree_sitter

from nvcc_opt.search.cuda import (
    Kernel,
    Source,
    fresh_name,
    identifiers,
    indentation,
    operator_type,
)
from nvcc_opt.search.kernel_facts import WARP, Facts, statements, thread_aliases
from nvcc_opt.search.shuffle_shapes import (
    INTEGERS,
    each_loop,
    int_counter,
    kernel_constant,
    outside_fits,
    shared_type,
    squeezed,
)

FULL = "0xffffffffu"


def warp_shuffle_scan(code: str, facts: Facts) -> str | None:
    return each_loop(code, facts, _whole_warps, _scan_at)


def _whole_warps(size: int) -> bool:
    return not size % WARP and WARP <= size <= WARP * WARP


def _scan_at(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, size: int, known: Facts
) -> bytes | None:
    found = _scan_loop(source, kernel, loop, size, known)
    return None if found is None else _scan(source, loop, found, identifiers(source, kernel.node))


def _scan_loop(
    source: Source, kernel: Kernel, loop: tree_sitter.Node, size: int, known: Facts
) -> tuple[str, str] | None:
    """(shared array, its integer element type) when `loop` is the Hillis-Steele scan."""
    if not outside_fits(source, kernel, loop):
        return None
    counter = int_counter(source, loop)
    if counter is None or squeezed(source, counter[1]) != "1":
        return None
    offset = counter[0]
    condition = loop.child_by_field_name("condition")
    bound = condition.child_by_field_name("right") if condition is not None else None
    if condition is None or bound is None or operator_type(condition) != "<":
        return None
    if squeezed(source, condition.child_by_field_name("left")) != offset:
        return None
    if (
        squeezed(source, bound) != "blockDim.x"
        and kernel_constant(source, kernel, bound, known.names) != size
    ):
        return None
    if squeezed(source, loop.child_by_field_name("update")) not in (
        f"{offset}*=2",
        f"{offset}<<=1",
        f"{offset}={offset}*2",
        f"{offset}={offset}<<1",
    ):
        return None
    body = loop.child_by_field_name("body")
    steps = [] if body is None else statements(body)
    if len(steps) != 4 or steps[0].type != "declaration":
        return None
    if not all(squeezed(source, steps[i]) == "__syncthreads();" for i in (1, 3)):
        return None
    taken = steps[0].child_by_field_name("declarator")
    if taken is None or taken.type != "init_declarator" or len(steps[0].named_children) != 2:
        return None
    add = squeezed(source, taken.child_by_field_name("declarator"))
    read = squeezed(source, taken.child_by_field_name("value"))
    array = read.split("?", 1)[-1].split("[", 1)[0]
    if not array.isidentifier():
        return None
    threads = thread_aliases(source, kernel)
    thread = next((t for t in threads if read == f"{t}>={offset}?{array}[{t}-{offset}]:0"), None)
    if thread is None:
        return None
    if squeezed(source, steps[2]) not in (
        f"{array}[{thread}]+={add};",
        f"{array}[{thread}]={array}[{thread}]+{add};",
    ):
        return None
    element = shared_type(source, kernel, array, INTEGERS, known.types)
    if element is None or squeezed(source, steps[0].child_by_field_name("type")) != (
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
