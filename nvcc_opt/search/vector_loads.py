"""Vectorized loads and stores for element-wise kernels: each thread handles W consecutive
elements, read and written 16 bytes at a time (`float4`, `int4`, `double2`) where aligned.

In `int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i];` each
thread moves one 4-byte element per array: one load instruction per element. Thread i takes
elements [W*i, W*i + W) instead: when all W are in range and every pointer is 16-byte aligned
(checked at run time: a kernel parameter from cudaMalloc is 256-byte aligned, a pointer offset
into an array may not be), one vector load per input array and one vector store per output,
the body computed per element on the loaded values; else (the tail, or a misaligned pointer)
the elements one at a time, as before. The index W*i is a multiple of W and the threads are
contiguous, so the vector at position i is exactly those elements.

The same elements are computed as before, with the same values: an element e is computed when
e < n and e < the launch's thread count along x (gridDim.x * blockDim.x), which is when the
original computed it; its statements run as written with `e` for `i`. It applies where the
kernel is `index; guard; rest` (`if (i < n) {rest}` or `if (i >= n) return; rest`), i is used
in the rest only as the whole index of `P[i]` for pointer parameters of one element type
(float, int or double), each such pointer is read as a value or written once by a top-level
`P[i] = ...;` with no read of it after that statement, the rest holds no loop, no jump, no
thread or block index and calls only math functions (and the bound n none either: it must be
the same for every thread), and every launch found passes distinct
pointers (so a write through one cannot change what another reads). The kernel-wide refusals
are staging.py's. Threads past n/W now exit at once: fewer threads do the same work, which
benchmark_code times.
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import Edit, Kernel, Source, fresh_name, indentation
from nvcc_opt.search.element_access import (
    BOUND,
    VECTOR,
    Access,
    access,
    element_wise,
    rewrite_kernels,
    uniform,
)
from nvcc_opt.search.element_vectors import copy, scalar, vectors
from nvcc_opt.search.kernel_facts import Facts, global_index_name, guarded_rest, statements


@dataclass(frozen=True)
class Plan:
    index: str  # i
    bound: str  # n as written
    rest: list[tree_sitter.Node]  # the statements the guard lets run
    access: Access  # the rest's reads and writes of P[i]
    replaced: tree_sitter.Node  # the first node replaced (the guard)


def vector_loads(code: str, facts: Facts) -> str | None:
    return rewrite_kernels(code, facts, _plan, _edit)


def _plan(source: Source, kernel: Kernel, facts: Facts) -> Plan | None:
    body = statements(kernel.body)
    index = global_index_name(source, body[0]) if len(body) >= 2 else None
    guarded = None if index is None else guarded_rest(source, body, index)
    if index is None or guarded is None or not guarded[1] or not BOUND.fullmatch(guarded[0]):
        return None
    bound, rest = guarded
    if not uniform(source, kernel, body[1], bound, {"blockDim", "gridDim"}):
        return None  # a bound that differs between threads: the rewrite deals elements anew
    if not element_wise(source, rest):
        return None
    found = access(source, kernel, facts, index, rest)
    return None if found is None else Plan(index, bound, rest, found, body[1])


def _edit(source: Source, plan: Plan, used: set[str]) -> Edit:
    width = VECTOR[plan.access.element][1]
    total, first, k, e = (fresh_name(f"nvcc_opt_{s}", used) for s in ("threads", "first", "k", "e"))
    used |= {total, first, k, e}
    vec = vectors(plan.access, used)
    pad = indentation(source, plan.replaced).decode()
    bound = f"(long long)({plan.bound})"
    lines = [
        f"// nvcc-opt: {width} consecutive elements per thread, loaded and stored 16 bytes at a"
        " time where all are in range and aligned, else one at a time",
        f"const long long {total} = (long long)gridDim.x * blockDim.x;",
        f"const long long {first} = (long long)({plan.index}) * {width};",
        f"if ({first} + {width} <= {bound} && {first} + {width} <= {total} && {vec.aligned}) {{",
        *("  " + line for line in vec.loads(plan.index)),
        *vec.lanes(source, plan.rest, 2),
        *("  " + line for line in vec.stores(plan.index)),
        "} else {",
        f"  for (int {k} = 0; {k} < {width}; ++{k}) {{",
        f"    const long long {e} = {first} + {k};",
        f"    if ({e} < {bound} && {e} < {total}) {{",
        *copy(source, plan.rest, scalar(plan.access, e), 6),
        "    }",
        "  }",
        "}",
    ]
    text = "\n".join(lines[:1] + [pad + line for line in lines[1:]])
    end = plan.rest[-1].end_byte
    if plan.rest[0].start_byte < plan.replaced.end_byte:  # `if (i < n) {rest}`: the whole if
        end = plan.replaced.end_byte
    return Edit(plan.replaced.start_byte, end, text.encode())
