"""A short read-only run every lane reads alike, loaded before its loop 16 bytes at a time.

In `for (int t = 0; t < K; ++t) sum += coeff[t] * in[i + t];` every thread of a warp reads
the same `coeff[t]`: K scalar loads per thread, each one load instruction and one L1 wavefront
for the warp. Read before the loop into a register array, as `float4` (or `double2`) where the
pointer is 16-byte aligned (checked at run time; else one element at a time as before), the
same K values cost K/4 (K/2) loads.

It applies where every use of a read-only pointer parameter P (float or double elements; one no
launch aliases) is a read `P[t + c]` (one compile-time c for all, or none), as a value, evaluated
on every iteration of one loop `for (int t = S; t < E; ++t)` (or `t <= E`; S and E compile-time
constants, S other than 0 only with a signed counter: `for (int j = -R; j <= R; ++j)` reads
P[c - R .. c + R]) that stands in a block (so the loads go right before it, under the same
conditions), K a compile-time constant, the loop's body neither leaving it nor calling anything
but math functions, and t used only as a value. The loop then reads exactly P[0..K), which is
what the loads before it read (the vector path only where K is a multiple of the vector width);
each read gives the value the original read. The kernel-wide refusals are staging.py's (also:
no `and`/`or`/`?:` around a read, no function of the file's own named like a math function, no
write through a name the kernel neither takes nor declares, a counter of int width or more).
The vector type is written `::float4` (a user type of that name cannot stand in), and no macro
may rename its fields. A `static_assert` keeps K within 1 to 256: a run outside that fails to
compile (loudly, which benchmark_code reports) instead of filling a thread's stack. No unroll
is forced: nvcc unrolls such short constant loops itself, which keeps the array in registers.
Not seen: more registers per thread can make a launch of 1024-thread blocks fail; that failure
is loud too. The review's inputs: tests/fixtures/unsafe_preload/ and preload_names/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import (
    Edit,
    Kernel,
    PointerParam,
    Source,
    edited,
    fresh_name,
    indentation,
    modified,
    preceding_pragma,
    walk,
)
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.read_patterns import (
    bare,
    candidate_kernels,
    compile_time,
    counted_loop,
    declarations,
    defined_macros,
    every_iteration,
    math_call,
    taken_names,
    value_reads,
)

VECTOR = {"float": ("::float4", 4), "double": ("::double2", 2)}
EMITTED = {"x", "y", "z", "w", "float4", "double2", "reinterpret_cast"}  # no macro may rename
FLOATING = re.compile(r"\b\d*\.\d*|\b\d+[eE]|\d[fF]\b")  # a literal that is not an integer
LONGEST = 256  # elements: longer runs are a compile-time error rather than a launch failure
FIELDS = ("x", "y", "z", "w")


def preload_run(code: str, facts: Facts) -> str | None:
    source = Source(code)
    if defined_macros(source) & EMITTED:
        return None
    used = taken_names(source)
    edits: list[Edit] = []
    for kernel in candidate_kernels(source, facts):
        local = modified(source, kernel.body) | set(kernel.params)
        taken: set[int] = set()
        for pointer in kernel.pointers:
            if not pointer.read_only or facts.scalar(pointer.element) not in VECTOR:
                continue
            if declarations(source, kernel.body, pointer.name):
                continue
            run = _run(source, kernel, pointer, local)
            if run is None or run.loop.start_byte in taken:
                continue  # one run per loop: two preloads would edit the same spot
            taken.add(run.loop.start_byte)
            edits += _edits(source, pointer, run, used, facts.scalar(pointer.element))
    return edited(code, source, edits)


@dataclass(frozen=True)
class Run:
    """The loop, the number of elements it reads (as written), the first element's index, how a
    read's index maps into the preloaded array, and the reads."""

    loop: tree_sitter.Node
    count: str
    first: str
    variable: str  # the loop's counter t
    start: str  # the loop's start: a read `P[t + c]` becomes `held[t - start]`
    reads: list[tree_sitter.Node]


def _run(source: Source, kernel: Kernel, pointer: PointerParam, local: set[str]) -> Run | None:
    """The run when every use of P is `P[t + c]` (one c, or none) in one counted loop."""
    reads = value_reads(source, kernel, pointer)
    if not reads:
        return None
    offsets = set()
    loop = every_iteration(reads[0])
    header = None if loop is None else counted_loop(source, kernel, loop)
    if loop is None or header is None:
        return None
    variable, start, bound, operator = header
    for read in reads:
        indices = read.child_by_field_name("indices")
        if every_iteration(read) != loop or indices is None or len(indices.named_children) != 1:
            return None
        offset = _offset(source, bare(indices.named_children[0]), variable)
        if offset is None:
            return None
        offsets.add(offset)
    body = loop.child_by_field_name("body")
    if loop.parent is None or loop.parent.type != "compound_statement" or body is None:
        return None
    calls = [n for n in walk(body) if n.type == "call_expression"]
    if not all(math_call(source, n) for n in calls) or len(offsets) != 1:
        return None
    (offset,) = offsets
    if not all(compile_time(x, local) and not FLOATING.search(x) for x in (start, bound, offset)):
        return None
    count = bound if start == "0" and operator == "<" else f"({bound}) - ({start})"
    if operator == "<=":
        count += " + 1"
    first = _sum(start, offset)
    return Run(loop, count, first, variable, start, reads)


def _offset(source: Source, index: tree_sitter.Node, variable: str) -> str | None:
    """c for an index `t`, `t + c`, `c + t` or `t - c` ("0" for `t`); None for anything else."""
    if source.text(index) == variable:
        return "0"
    if index.type != "binary_expression":
        return None
    left, right = index.child_by_field_name("left"), index.child_by_field_name("right")
    operator = index.child_by_field_name("operator")
    if left is None or right is None or operator is None:
        return None
    sign = source.text(operator)
    if source.text(bare(left)) == variable and sign in ("+", "-"):
        other = source.text(right)
        return other if sign == "+" else f"-({other})"
    if source.text(bare(right)) == variable and sign == "+":
        return source.text(left)
    return None


def _sum(start: str, offset: str) -> str:
    if offset == "0":
        return start
    return offset if start == "0" else f"({start}) + ({offset})"


def _edits(
    source: Source, pointer: PointerParam, run: Run, used: set[str], scalar: str
) -> list[Edit]:
    name, kind, loop = pointer.name, pointer.element, run.loop
    vector, width = VECTOR[scalar]
    held, v, q = (fresh_name(f"nvcc_opt_{stem}", used) for stem in (name, "v", "q"))
    used |= {held, v, q}
    count = f"({run.count})"
    base = name if run.first == "0" else f"({name} + ({run.first}))"
    span = f"0..{run.count}" if run.first == "0" else f"{run.first}..{run.first} + {run.count}"
    pad = indentation(source, loop).decode()
    pragma = preceding_pragma(loop)
    at = loop if pragma is None else pragma
    fields = " ".join(f"{held}[{width} * {v} + {n}] = {q}.{FIELDS[n]};" for n in range(width))
    lines = [
        f"// {name}[{span}) read before the loop, {width} at a time where {name} is 16-byte"
        " aligned",
        f'static_assert({count} > 0 && {count} <= {LONGEST}, "nvcc-opt: a run of 1 to {LONGEST}");',
        f"{kind} {held}[{count}];",
        f"if ({count} % {width} == 0 && reinterpret_cast<unsigned long long>({base}) % 16 == 0) {{",
        f"  for (int {v} = 0; {v} < {count} / {width}; ++{v}) {{",
        f"    const {vector} {q} = reinterpret_cast<const {vector}*>({base})[{v}];",
        f"    {fields}",
        "  }",
        "} else {",
        f"  for (int {v} = 0; {v} < {count}; ++{v}) {held}[{v}] = {base}[{v}];",
        "}",
    ]
    text = "\n".join(lines[:1] + [pad + line for line in lines[1:]])
    edits = [Edit(at.start_byte, at.start_byte, (text + "\n" + pad).encode())]
    index = run.variable if run.start == "0" else f"{run.variable} - ({run.start})"
    for read in run.reads:
        edits.append(Edit(read.start_byte, read.end_byte, f"{held}[{index}]".encode()))
    return edits
