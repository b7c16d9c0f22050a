"""The registry of source transforms: the only module that imports every transform module.

A transform takes the region's code and the facts found about its launches and returns the new
code, or None when it has nothing to change. It never makes the parse worse: a result with more
parse errors than its input is dropped. Whether a change is correct and faster is for
benchmark_code to say; the transforms only avoid changes they can see are wrong (`__restrict__`
or `__ldg` on pointers that a launch passes twice, or that the kernel writes through).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from nvcc_opt.search import (
    aggregate,
    annotate,
    bank_padding,
    blocks,
    division,
    fusion,
    loop_fusion,
    min_blocks,
    preload,
    privatize,
    shuffle,
    shuffle_scan,
    staging,
    tiling,
    undo_pass,
    unroll,
    vector_loads,
    vector_strided,
    warp_rows,
)
from nvcc_opt.search.conditionals import preserved
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.pointer_aliases import expand

__all__ = ["BY_NAME", "TRANSFORMS", "Facts", "Transform"]


@dataclass(frozen=True)
class Transform:
    name: str
    change: str  # what it does, for the explanation
    apply: Callable[[str, Facts], str | None]
    group: str | None = None  # transforms of one group exclude each other (the block shape)
    host_side: bool = False  # changes host code (launches), which the kernels' SASS cannot show
    numerics: str = ""  # how it may change the results; "" when it computes the same values

    def __post_init__(self) -> None:
        object.__setattr__(self, "apply", _keeping_conditionals(self.apply))


def _keeping_conditionals(
    rewrite: Callable[[str, Facts], str | None],
) -> Callable[[str, Facts], str | None]:
    """`rewrite` on the region with its pointer type names spelled out (pointer_aliases.py),
    with any result that changes nothing else, or changes a preprocessor directive or a branch
    the parse did not see (conditionals.preserved), dropped, whichever way the transform built
    it."""

    @functools.wraps(rewrite)
    def apply(code: str, facts: Facts) -> str | None:
        spelled = expand(code, facts.pointer_aliases)
        new = rewrite(spelled, facts)
        if new is None or new == spelled:
            return None
        if not preserved(code.encode("utf-8"), new.encode("utf-8")):
            return None
        return new

    return apply


# A row's terms summed by 32 lanes, then combined by a shuffle tree: another order than the
# one thread's running sum of the original.
ROW_SUMS = (
    "each row's float and double terms added in another order (32 partial sums combined by a"
    " shuffle tree), so results may differ from the original's in the last bits"
)

# Atomic adds grouped (per warp, per block) before they reach memory.
ATOMIC_SUMS = (
    "float and double sums added in another order (an atomic sum's order changes from run to run"
    " too)"
)

TRANSFORMS: tuple[Transform, ...] = (
    Transform(
        "fuse",
        "consecutive launches of element-wise kernels fused into one pass",
        fusion.fuse,
        host_side=True,
    ),
    Transform(
        "fuse_loops",
        "consecutive loops over the same range inside a kernel fused into one (each index runs"
        " both bodies in order; only where no body writes what the other touches at another"
        " index)",
        loop_fusion.fuse_loops,
    ),
    Transform(
        "drop_undo",
        "a loop that undoes an earlier in-place update of local arrays replaced by restoring the"
        " values saved before it (the arithmetic done once; the values restored exactly, so"
        " results may differ in the last bits)",
        undo_pass.drop_undo,
        numerics="values restored exactly where the original recomputed them, so results may"
        " differ from the original's in the last bits",
    ),
    Transform(
        "vector_loads",
        "consecutive elements per thread, loaded and stored 16 bytes at a time where aligned"
        " (float4, int4, double2; the same values, a quarter of the memory instructions for"
        " floats)",
        vector_loads.vector_loads,
    ),
    Transform(
        "vector_loads_strided",
        "the grid-stride loop over vectors of consecutive elements, loaded and stored 16 bytes"
        " at a time where aligned (float4, int4, double2; the same values, a quarter of the"
        " memory instructions for floats)",
        vector_strided.vector_loads_strided,
    ),
    Transform(
        "warp_rows",
        "a warp per row for the row-per-thread reduction (lanes read the row together, then a"
        " shuffle sum)",
        warp_rows.warp_rows,
        group="rows",
        numerics=ROW_SUMS,
    ),
    Transform(
        "warp_rows_grid",
        "a warp per row for the row-per-thread reduction, with 32 times the blocks",
        warp_rows.warp_rows_grid,
        group="rows",
        host_side=True,
        numerics=ROW_SUMS,
    ),
    Transform(
        "const_restrict",
        "const __restrict__ on read-only pointer parameters",
        annotate.const_restrict,
    ),
    Transform("restrict", "__restrict__ on every pointer parameter", annotate.restrict),
    Transform("hoist", "loop-invariant loads hoisted out of their loops", annotate.hoist),
    Transform("ldg", "__ldg() for loads of read-only data", annotate.ldg),
    Transform("unroll", "#pragma unroll on loops with a constant trip count", unroll.unroll),
    Transform(
        "unroll_runtime",
        f"#pragma unroll {unroll.RUNTIME_UNROLL} on innermost loops with a run-time trip count",
        unroll.unroll_runtime,
    ),
    Transform(
        "launch_bounds",
        "__launch_bounds__ matching the launch's block size",
        annotate.launch_bounds,
        group="block",
    ),
    Transform(
        "min_blocks_half",
        "half the minimum blocks per SM of the kernel's own __launch_bounds__ (twice the"
        " registers a thread may use: fewer spills)",
        min_blocks.min_blocks_half,
        group="min_blocks",
    ),
    Transform(
        "min_blocks_double",
        "twice the minimum blocks per SM of the kernel's own __launch_bounds__ (half the"
        " registers: more warps per SM)",
        min_blocks.min_blocks_double,
        group="min_blocks",
    ),
    Transform(
        "shared_atomics",
        "atomic adds onto a few counters privatized per block in shared memory",
        privatize.shared_atomics,
        numerics=ATOMIC_SUMS,
    ),
    Transform(
        "warp_aggregate",
        "atomic adds onto one address summed within each warp first (one atomic per warp)",
        aggregate.warp_aggregate,
        numerics=ATOMIC_SUMS,
    ),
    Transform(
        "warp_shuffle_tail",
        "the last warp of the shared-memory tree reduction done with shuffles (the same sums,"
        " five barriers fewer)",
        shuffle.warp_shuffle_tail,
        group="block",
    ),
    Transform(
        "warp_shuffle_scan",
        "the block's shared-memory scan done within warps by shuffles (integers: the same"
        " values; 3 barriers in all instead of 2 per step)",
        shuffle_scan.warp_shuffle_scan,
        group="block",
    ),
    Transform(
        "stage_table",
        "the rows of a small read-only table each lane reads staged per block in shared memory"
        " (the same values; one or two wavefronts per load instead of one line per lane)",
        staging.stage_table,
    ),
    Transform(
        "preload_run",
        "a short read-only run every lane reads alike loaded before its loop, 16 bytes at a time"
        " where aligned (the same values; a quarter of the loads for floats)",
        preload.preload_run,
    ),
    Transform(
        "pad_shared",
        "one more column on a shared tile a warp walks down a column of (the same values; a"
        " column spread over every bank instead of a few, so its accesses are not serialized)",
        bank_padding.pad_shared,
    ),
    Transform(
        "split_division",
        "a division by a product split in two, its first half the division the kernel already"
        " does (the same values; one 64-bit division fewer)",
        division.split_division,
    ),
    Transform(
        "tile_matmul",
        "shared-memory tiles for the one-thread-per-element matrix product",
        tiling.tile_matmul,
        group="block",
    ),
    Transform(
        "block_half", "half the threads per block", blocks.block_half, "block", host_side=True
    ),
    Transform(
        "block_quarter",
        "a quarter of the threads per block (a 2D block twice as wide)",
        blocks.block_quarter,
        group="block",
        host_side=True,
    ),
    Transform(
        "block_double",
        "twice the threads per block",
        blocks.block_double,
        "block",
        host_side=True,
    ),
    Transform(
        "block_warp_wide",
        "a block 32 threads wide (whole 128-byte rows per warp), the same number of threads",
        blocks.block_warp_wide,
        group="block",
        host_side=True,
    ),
    Transform(
        "block_wide",
        "a 2D block twice as wide and half as tall",
        blocks.block_wide,
        group="block",
        host_side=True,
    ),
)
BY_NAME = {t.name: t for t in TRANSFORMS}
