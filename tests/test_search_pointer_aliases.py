"""Kernels whose pointer parameters are declared through a type name (`Real_ptr a`, as RAJAPerf
writes every kernel) and launched through a helper (`launch(kernel, grid, block, ...)`): the
names found and spelled out, the helpers' launches read, and the pointer transforms firing on
kernels of three shapes, each written here."""

from __future__ import annotations

import tempfile
from pathlib import Path
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
    # a qualifier of the name qualifies the pointer itself
    assert "__global__ void relax(float* next, float* const prev, int nx, int ny)" in spelled
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
        ("blend", "64", True), ("blend", "64", True),
    ]  # fmt: skip
    assert found[0].args == ("0", "s", "out", "a", "b", "w", "n")
    # cudaLaunchKernel takes the kernel's arguments as one array: not readable, so not a launch
    # that could show the pointers distinct; a call not named for launching is no launch
    spelled = expand(ELEMENTWISE, POINTERS)
    assert facts_from(spelled, [found[0], found[2]], {}, {}).no_alias == {"blend"}
    assert facts_from(spelled, found[:2], {}, {}).no_alias == frozenset()  # a passed twice
    assert found[3].args == found[4].args == ()  # the array form: its pointers cannot be told apart
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


def _restricts(code: str, **headers: str) -> bool:
    """Whether `restrict` fires with the facts the snapshot reads from the file (and the headers
    beside it)."""
    from nvcc_opt.search import snapshot

    path = Path(tempfile.mkdtemp()) / "k.cu"
    path.write_text(code)
    for name, text in headers.items():
        (path.parent / f"{name}.h").write_text(text)
    (unit,) = snapshot.file_units("t", path, path.parent)
    return BY_NAME["restrict"].apply(unit.code, unit.facts) not in (None, unit.code)


def test_what_may_alias_through_names_and_helpers_keeps_restrict_out() -> None:
    """A review's cases: each passes one buffer to two pointer parameters, or hides a pointer,
    in a way the first reading missed; each has a twin with distinct buffers that does fire."""
    qualified = (
        "typedef float *grid_t;\n__global__ void relax(grid_t next, const grid_t prev, int n)"
        " { next[0] = prev[1]; }\n"
        "void f(grid_t g, grid_t h, int n) { relax<<<1, 256>>>(g, X, n); }\n"
    )
    assert not _restricts(qualified.replace("X", "g")) and _restricts(qualified.replace("X", "h"))
    wrapped = (
        "__global__ void k(float* a, float* b, int n) { a[0] = b[0]; }\n"
        "void run(float* out, float* in, int n, cudaStream_t s)"
        " { RPlaunchCudaKernel(k, 1, 256, 0, s, out, in, n); }\n"
        "void top(float* x, float* y, int n, cudaStream_t s) { run(x, X, n, s); }\n"
    )
    assert not _restricts(wrapped.replace("X", "x")) and _restricts(wrapped.replace("X", "y"))
    trailing = (
        "__global__ void k(float* a, float* b) { a[0] = b[0]; }\n"
        "void f(float* x, float* y, cudaStream_t s) { my_launch(k, 1, 256, x, X, s); }\n"
    )
    assert not _restricts(trailing.replace("X", "x")) and _restricts(trailing.replace("X", "y"))
    array = (
        "__global__ void k(float* a, float* b) { a[0] = b[0]; }\n"
        "void f(float* x, float* y, void** args) { k<<<1, 256>>>(x, y);"
        " cudaLaunchKernel((void*)k, 1, 256, args, 0, 0); }\n"
    )
    assert not _restricts(array)  # the array's pointers cannot be told apart
    switch = (
        "__global__ void k(float* a, Real_ptr b) { a[0] = b[0]; }\n"
        "void f(float* x, Real_ptr y) { k<<<1, 256>>>(x, y); }\n"
    )
    single, double = "using Real_ptr = float*;\n", "using Real_ptr = double*;\n"
    assert _restricts(switch, single=single)
    # two headers define it differently (a precision switch): b's pointee is not known, and
    # neither is whether it points into a's data
    assert not _restricts(switch, single=single, double=double)


def test_a_struct_holding_a_pointer_keeps_restrict_out() -> None:
    """Passed by value, a struct's pointer may point into a pointer parameter's data."""
    kernel = (
        "struct Grid { FIELDS };\n"
        "__global__ void k(float* out, const float* in, Grid g) { out[0] = in[0] * g.s; }\n"
        "void f(float* x, float* y, Grid g) { k<<<1, 256>>>(x, y, g); }\n"
    )
    assert _restricts(kernel.replace("FIELDS", "float s; int n;"))
    assert not _restricts(kernel.replace("FIELDS", "float s; float* scratch;"))
    assert not _restricts(
        kernel.replace("struct Grid { FIELDS };", "typedef struct { float s; float& r; } Grid;")
    )


def test_a_launch_whose_line_holds_a_loop_header_is_read_on() -> None:
    from nvcc_opt.search.find_facts import _complete

    assert _complete("  k<<<grid, block>>>(a, b);")
    assert not _complete("for (int r = 0; r < reps; ++r) RPlaunchCudaKernel( (k<256>),")
    assert not _complete("  launch(k, grid, 256,")


def test_two_pointers_into_one_array_are_aliased_whatever_their_offsets() -> None:
    """`k<<<...>>>(tmp, tmp + 1)` passes two texts but one array: every transform that relies
    on distinct pointers (restrict, read-only loads, vectors, fusion) must see them as one."""
    from nvcc_opt.search import launches
    from nvcc_opt.search.launches import facts_from, pointer_base

    code = "__global__ void k(const float* a, float* b, int n) { b[0] = a[0]; }\n"
    for first, second, shared in [
        ("tmp", "tmp + 1", True),
        ("&buf[8]", "buf", True),
        ("(const float*)x + n", "x", True),
        ("s.data", "s.data + 4", True),
        ("x", "y", False),
        ("x + n", "y + n", False),
    ]:
        host = f"void run(float* tmp, float* buf, float* x, float* y, S s, int n) {{ k<<<1, 32>>>({first}, {second}, n); }}\n"  # noqa: E501
        found = launches.launches(host)
        facts = facts_from(code, found, {})
        assert ("k" not in facts.no_alias) == shared, (first, second)
        assert (pointer_base(first) == pointer_base(second)) == shared
