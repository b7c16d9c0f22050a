"""Kernels whose pointer parameters are declared through a type name (`Real_ptr a`, as RAJAPerf
writes every kernel) and launched through a helper (`launch(kernel, grid, block, ...)`): the
names found and spelled out, the helpers' launches read, and the pointer transforms firing on
kernels of three shapes, each written here."""

from __future__ import annotations

from typing import Any

from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.launches import facts_from, launches
from nvcc_opt.search.pointer_aliases import alias_parameters, expand, pointer_aliases
from nvcc_opt.search.policy import SearchPolicy
from nvcc_opt.search.transforms import BY_NAME
from tests.test_search_policy import ALL_TOOLS, drive, gpu

HEADER = """\
using Real_type = double;
using Real_ptr = Real_type*;
typedef float *grid_t;
typedef int **table_t;
using Index = long;
"""
POINTERS = {"Real_ptr": "Real_type", "grid_t": "float"}

# Three shapes: one element per thread; a 2D five-point stencil; a templated grid-stride loop.
ELEMENTWISE = """\
__global__ void blend(Real_ptr out, Real_ptr a, Real_ptr b, Real_type w, Index n)
{
  Index i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = w * a[i] + (1.0 - w) * b[i];
  }
}
"""
STENCIL = """\
__global__ void relax(grid_t next, grid_t prev, int nx, int ny)
{
  int x = threadIdx.x + blockIdx.x * blockDim.x;
  int y = threadIdx.y + blockIdx.y * blockDim.y;
  if (x > 0 && y > 0 && x < nx - 1 && y < ny - 1)
    next[y * nx + x] = 0.25f * (prev[y * nx + x - 1] + prev[y * nx + x + 1]
                              + prev[(y - 1) * nx + x] + prev[(y + 1) * nx + x]);
}
"""
STRIDED = """\
template <int threads>
__launch_bounds__(threads)
__global__ void accumulate(Real_ptr total, Real_ptr part, Index n)
{
  for (Index i = blockIdx.x * threads + threadIdx.x; i < n; i += gridDim.x * threads) {
    total[i] += part[i];
  }
}
"""
KERNELS = {"blend": ELEMENTWISE, "relax": STENCIL, "accumulate": STRIDED}


def test_pointer_type_names_are_read_from_using_and_typedef() -> None:
    assert pointer_aliases(HEADER) == POINTERS  # int** is two levels: left alone
    assert pointer_aliases("using P = float*;\nusing P = double*;\n") == {}  # a precision switch
    assert pointer_aliases("using Q = P;", {"P": "float"}) == {"P": "float"}
    assert alias_parameters(ELEMENTWISE) == {"Real_ptr", "Real_type", "Index"}


def test_spelling_out_changes_only_bare_kernel_parameters() -> None:
    code = HEADER + "void host(Real_ptr p);\n" + STENCIL.replace("grid_t prev", "const grid_t prev")
    spelled = expand(code, POINTERS)
    assert "__global__ void relax(float* next, const grid_t prev, int nx, int ny)" in spelled
    assert "void host(Real_ptr p);" in spelled and "typedef float *grid_t;" in spelled
    assert expand(code, {}) == code


def test_the_pointer_transforms_fire_on_each_shape_once_the_names_are_known() -> None:
    for name, code in KERNELS.items():
        known = Facts(no_alias=frozenset({name}), pointer_aliases=POINTERS)
        blind = Facts(no_alias=frozenset({name}))
        for transform in ("const_restrict", "restrict"):
            assert BY_NAME[transform].apply(code, blind) is None, (name, transform)
            new = BY_NAME[transform].apply(code, known)
            assert new is not None and "__restrict__" in new, (name, transform)
        spelled = BY_NAME["const_restrict"].apply(code, known)
        assert spelled is not None
        read = {"blend": "a", "relax": "prev", "accumulate": "part"}[name]
        pointee = POINTERS["grid_t" if name == "relax" else "Real_ptr"]
        assert f"const {pointee}* __restrict__ {read}" in spelled


def test_without_distinct_pointers_at_every_launch_restrict_is_refused() -> None:
    facts = Facts(pointer_aliases=POINTERS)  # no launch showed the pointers distinct
    for code in KERNELS.values():
        assert BY_NAME["restrict"].apply(code, facts) is None


def test_launch_helpers_are_read_as_launches() -> None:
    host = """\
void run(Real_ptr out, Real_ptr a, Real_ptr b, Real_type w, Index n, cudaStream_t s)
{
  RPlaunchCudaKernel( (blend<256>), grid, 256, 0, s, out, a, b, w, n );
  hipLaunchKernelGGL(blend, dim3(grid), dim3(128), 0, s, out, a, a, w, n);
  my::launch_on(blend, grid, kThreads, out, b, a, w, n);
  cudaLaunchKernel((void*)blend, grid, 64, args, 0, s);
  cudaLaunchKernel(blend, grid, 64, args, 0, s);
  cudaFuncSetAttribute(blend, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024);
  record(blend, grid, 32);
}
"""
    found = launches(host)
    assert [(f.kernel, f.block, f.through_helper) for f in found] == [
        ("blend", "256", True), ("blend", "dim3(128)", True), ("blend", "kThreads", True),
        ("blend", "64", True),
    ]  # fmt: skip
    assert found[0].args == ("0", "s", "out", "a", "b", "w", "n")
    # cudaLaunchKernel takes the kernel's arguments as one array: not readable, so not a launch
    # that could show the pointers distinct; a call not named for launching is no launch
    spelled = expand(ELEMENTWISE, POINTERS)
    assert facts_from(spelled, [found[0], found[2]], {}, {}).no_alias == {"blend"}
    assert facts_from(spelled, found[:2], {}, {}).no_alias == frozenset()  # a passed twice
    assert found[3].args == ()  # the array form: its pointers cannot be told apart
    assert facts_from(spelled, [found[0], found[3]], {}, {}).no_alias == frozenset()


def test_the_policy_finds_the_names_and_the_helper_launch() -> None:
    """RAJAPerf's form end to end through the policy's tools: the type name's definition and the
    launch's helper call found with `search` and `file_viewer`, then const __restrict__ timed."""
    region = ELEMENTWISE
    asked: list[str] = []

    def tools(name: str, args: dict[str, Any]) -> str:
        pattern = str(args.get("pattern", ""))
        if name == "search" and "Real_ptr" in pattern:
            asked.append(pattern)
            return "[1 match]\nsrc/common/types.hpp (1)\n   12 | using Real_ptr = Real_type*;"
        if name == "search" and "blend" in pattern:
            return "[1 match]\nsrc/run.cpp (1)\n   40 |   RPlaunchCudaKernel( (blend<256>),"
        if name == "file_viewer":
            return (
                "src/run.cpp lines 40-42 of 90\n   40 |   RPlaunchCudaKernel( (blend<256>),\n"
                "   41 |       grid, 256, 0, stream,\n   42 |       out, a, b, w, n );"
            )
        if name == "search":
            return "[no matches]"
        return gpu(name, args)

    calls, _ = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS], region=region)
    assert len(asked) == 1
    timed = [args["code"] for name, args in calls if name == "benchmark_code"]
    assert any("const Real_type* __restrict__ a" in code for code in timed), timed
