"""The changes the search policy tries: source transforms and build flags, alone or combined."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nvcc_opt.search.observe import Analysis
from nvcc_opt.search.transforms import BY_NAME, TRANSFORMS, Facts

ARCH_SPECIFIC = {"sm_90": "-gencode=arch=compute_90a,code=sm_90a"}  # Hopper's 90a features
REGISTER_STEPS = (128, 96, 64, 48, 32)
FIRST = (
    "fuse",
    "vector_loads",
    "vector_loads_strided",
    "warp_rows_grid",
    "warp_rows",
    "tile_matmul",
    "shared_atomics",
    "warp_aggregate",
    "stage_table",
    "preload_run",
    "split_division",
    "warp_shuffle_tail",
    "warp_shuffle_scan",
    "block_warp_wide",
    "block_half",
    "block_quarter",
    "block_wide",
    "block_double",
)


@dataclass(frozen=True)
class Change:
    name: str
    what: str  # for the explanation
    transform: str | None = None  # a name in transforms.BY_NAME
    flags: tuple[str, ...] = ()
    numerics: str = ""  # how it changes the results; "" when it computes the same values
    why: str = ""  # the measured or static fact that ranked it (priorities.py); "" by default


FAST_MATH = (
    "fast math changes results: approximate division, square root and transcendental "
    "functions, denormals flushed to zero"
)


def flag_changes(target: str, analysis: Analysis | None, bounded: bool = False) -> list[Change]:
    """Build flags for the region's translation unit worth timing on this target. `bounded`:
    every kernel of the region declares `__launch_bounds__`, for which ptxas ignores
    -maxrregcount (their register cap is the bounds': `min_blocks.py` tunes it instead)."""
    found = [
        Change("fast_math", "-use_fast_math (kept only because the checks still pass)",
               flags=("-use_fast_math",), numerics=FAST_MATH),
        Change("ptxas_O3", "-Xptxas -O3", flags=("-Xptxas=-O3",)),
        Change("vectorize", "--extra-device-vectorization",
               flags=("--extra-device-vectorization",)),
    ]  # fmt: skip
    for arch, gencode in ARCH_SPECIFIC.items():
        if arch in target and arch + "a" not in target:
            found.append(Change(f"{arch}a", f"an {arch}a target ({gencode})", flags=(gencode,)))
    if (
        not bounded
        and analysis is not None
        and analysis.registers is not None
        and analysis.register_limited
    ):
        below = [n for n in REGISTER_STEPS if n < analysis.registers][:2]
        found += [
            Change(f"maxrregcount{n}", f"-maxrregcount={n}", flags=(f"-maxrregcount={n}",))
            for n in below
        ]
    return found


def transform_changes(code: str, facts: Facts) -> list[Change]:
    """Each source transform that changes this code, the structural ones first: they are the
    ones that move a kernel limited by its access pattern or its number of blocks, and the
    budget may end before the last candidate is measured."""
    ordered = sorted(
        TRANSFORMS, key=lambda t: FIRST.index(t.name) if t.name in FIRST else len(FIRST)
    )
    return [
        Change(t.name, t.change, transform=t.name, numerics=t.numerics)
        for t in ordered
        if t.apply(code, facts) is not None
    ]


def compose(code: str, facts: Facts, changes: Sequence[Change]) -> tuple[str, list[str]] | None:
    """The region's code and compile_args with `changes` applied together (transforms in their
    canonical order); None when they conflict (two -maxrregcount values, two block shapes) or
    change nothing."""
    names = {c.transform for c in changes if c.transform is not None}
    groups = [BY_NAME[name].group for name in names if BY_NAME[name].group is not None]
    if len(groups) != len(set(groups)):
        return None  # two block shapes at once
    new = code
    for transform in TRANSFORMS:
        if transform.name in names:
            new = transform.apply(new, facts) or new
    flags: list[str] = []
    for change in changes:
        flags += [f for f in change.flags if f not in flags]
    if sum(1 for f in flags if f.startswith("-maxrregcount")) > 1:
        return None
    if new == code and not flags:
        return None
    return new, flags
