"""The 36 kernels of the paper's evaluation (RAJAPerf's Apps, Algorithm and Polybench groups), the
Base_CUDA tuning each one times, and the checksum tolerance each one is judged under.

Tolerances come from what the kernel computes, in double precision. RAJAPerf's checksum is a
weighted sum over the whole output, computed on the host in a fixed order, so a rewrite that
changes one element changes it. An element off by 100% moves a checksum of 10^6 elements by
about 10^-6 relative: every class below sits well under that.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    name: str
    rtol: float
    why: str


ELEMENTWISE = Tolerance(
    "elementwise",
    1e-10,
    "each output element is a fixed expression of its inputs: a rewrite may contract to FMA or "
    "reorder a few operations (a few ulps, 1e-15 relative); 1e-10 leaves five orders of "
    "magnitude for that and still sees one wrong element in 10^5",
)
REDUCTION = Tolerance(
    "reduction",
    1e-8,
    "elements are sums over a dimension (matrix products, tensor contractions, scans): tiling "
    "or splitting a sum reorders it, n*eps (about 1e-13 for n ~ 1000); 1e-8 allows that, while "
    "a dropped or doubled term moves an element by about 1/n",
)
ATOMIC_FLOAT = Tolerance(
    "atomic",
    1e-8,
    "floating-point atomics commit in a different order on every run, so even the baseline is "
    "not bit-reproducible (n*eps run to run); the same margin as a reordered reduction",
)
EXACT = Tolerance(
    "exact",
    0.0,
    "integer counts: atomics on integers commute exactly, so any difference is an error",
)


@dataclass(frozen=True)
class Kernel:
    group: str  # RAJAPerf's group: Apps, Algorithm, Polybench
    name: str  # e.g. PRESSURE (files src/<folder>/PRESSURE.hpp, PRESSURE-Cuda.cpp)
    tolerance: Tolerance
    tuning: str | None = "block_256"  # the Base_CUDA tuning timed; None: no Base_CUDA variant

    @property
    def folder(self) -> str:
        return self.group.lower()

    @property
    def full_name(self) -> str:
        """The driver's name for it (`-k`), also the region's name."""
        return f"{self.group}_{self.name}"

    @property
    def has_base_cuda(self) -> bool:
        return self.tuning is not None


def _group(group: str, kernels: dict[str, Tolerance]) -> list[Kernel]:
    return [Kernel(group, name, tolerance) for name, tolerance in kernels.items()]


E, R = ELEMENTWISE, REDUCTION
APPS = _group(
    "Apps",
    {
        "CONVECTION3DPA": R, "DEL_DOT_VEC_2D": E, "DIFFUSION3DPA": R, "EDGE3D": R, "ENERGY": E,
        "FIR": R, "LTIMES": R, "LTIMES_NOVIEW": R, "MASS3DEA": R, "MASS3DPA": R,
        "MATVEC_3D_STENCIL": R, "NODAL_ACCUMULATION_3D": ATOMIC_FLOAT, "PRESSURE": E,
        "VOL3D": E, "ZONAL_ACCUMULATION_3D": R,
    },
)  # fmt: skip
# The Algorithm group's Base_CUDA tunings, read from each setCudaTuningDefinitions (9af20b3) with
# the default block size 256 and replication 4096: the one that runs the file's own kernel (not
# cub or the CUDA library). The driver names every tuning it ran: drive.py lists them when the
# one asked for is missing, and `prepare --tuning KERNEL=NAME` picks another.
ALGORITHM = [
    Kernel("Algorithm", "ATOMIC", ATOMIC_FLOAT, "replicate_4096_global_256"),
    Kernel("Algorithm", "HISTOGRAM", EXACT, "atomic_direct_256"),
    Kernel("Algorithm", "MEMCPY", E, "block_256"),
    Kernel("Algorithm", "MEMSET", E, "block_256"),
    Kernel("Algorithm", "REDUCE_SUM", ATOMIC_FLOAT, "blkatm_occgs_256"),
    Kernel("Algorithm", "SCAN", R, "block_256"),
    Kernel("Algorithm", "SORT", E, None),
    Kernel("Algorithm", "SORTPAIRS", E, None),
]
POLYBENCH = _group(
    "Polybench",
    {
        f"POLYBENCH_{name}": tolerance
        for name, tolerance in {
            "2MM": R, "3MM": R, "ADI": E, "ATAX": R, "FDTD_2D": E, "FLOYD_WARSHALL": E,
            "GEMM": R, "GEMVER": R, "GESUMMV": R, "HEAT_3D": E, "JACOBI_1D": E, "JACOBI_2D": E,
            "MVT": R,
        }.items()
    },
)  # fmt: skip
KERNELS: tuple[Kernel, ...] = (*APPS, *ALGORITHM, *POLYBENCH)


def by_name(name: str) -> Kernel:
    """A kernel by its full name (Apps_PRESSURE) or short one (PRESSURE); KeyError naming the
    choices."""
    for kernel in KERNELS:
        if name in (kernel.full_name, kernel.name):
            return kernel
    raise KeyError(f"unknown kernel {name!r}; the kernels: {', '.join(k.name for k in KERNELS)}")
