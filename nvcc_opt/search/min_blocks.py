"""The minimum blocks per SM of a kernel's own `__launch_bounds__(T, M)`, halved or doubled.

A kernel that declares launch bounds has its registers capped by them: ptxas gives each thread
at most 65536 / (T * M) registers (rounded down to its allocation unit), and ignores
`-maxrregcount` for it (nvcc 13.0, measured: a `__launch_bounds__(64, 8)` kernel keeps its 128
registers under -maxrregcount=32 and =200). So for such kernels the register cap is tuned here,
in the source, in the two directions the measurements call for (`priorities.py`):
- `min_blocks_half`: M / 2 blocks per SM, twice the registers a thread may use: for a kernel
  that spills under its cap (local-memory loads and stores become register reads);
- `min_blocks_double`: 2 M blocks per SM, half the registers: more warps to hide latency, where
  registers limit occupancy and nothing spills. Only where T is a number and T * 2M stays within
  the 2048 threads and 32 blocks an SM of sm_70..sm_90 holds.

Only a literal M is changed (a template parameter or macro is the program's own choice); a
bound in a preprocessor branch the parse does not see stays as it is (`conditionals.preserved`).
Both change only the machine code of the kernel: compiler_analysis shows whether they do.
"""

from __future__ import annotations

import re

from nvcc_opt.search.cuda import Edit, Source, edited
from nvcc_opt.search.kernel_facts import Facts

MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
_INTEGER = re.compile(r"([1-9]\d*)[uUlL]*")


def min_blocks_half(code: str, facts: Facts) -> str | None:
    del facts  # the bounds are the kernel's own
    return _rescaled(code, halve=True)


def min_blocks_double(code: str, facts: Facts) -> str | None:
    del facts
    return _rescaled(code, halve=False)


def _rescaled(code: str, *, halve: bool) -> str | None:
    source = Source(code)
    edits = []
    for kernel in source.kernels():
        bounds = next((c for c in kernel.node.children if c.type == "launch_bounds"), None)
        if bounds is None:
            continue
        args = [c for c in bounds.named_children if c.type != "comment"]
        if len(args) != 2:
            continue  # no minimum blocks, or a cluster bound beside it
        threads = _integer(source.text(args[0]))
        blocks = _integer(source.text(args[1]))
        if blocks is None:
            continue
        if halve:
            new = blocks // 2
            if new < 1:
                continue
        else:
            new = blocks * 2
            if threads is None or new > MAX_BLOCKS_PER_SM or threads * new > MAX_THREADS_PER_SM:
                continue
        edits.append(Edit(args[1].start_byte, args[1].end_byte, str(new).encode()))
    return edited(code, source, edits)


def _integer(text: str) -> int | None:
    match = _INTEGER.fullmatch(text.strip())
    return int(match.group(1)) if match else None
