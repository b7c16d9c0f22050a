"""The search policy's warp-aggregated atomics: one atomicAdd per warp onto a warp-uniform address
(nvcc_opt/search/aggregate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.aggregate import warp_aggregate
from nvcc_opt.search.changes import transform_changes
from nvcc_opt.search.transforms import Facts
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

# Counts of the values over a threshold, and their sum, per row of a batch (2D grid): one
# unsigned and one double atomic per row, under a guard that splits warps.
COUNTS = """\
__global__ void over(const double* v, double t, unsigned* count, double* sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = v[blockIdx.y * n + i];
  if (x > t) {
    atomicAdd(&count[blockIdx.y], 1u);
    atomicAdd(sum + blockIdx.y, x);
  }
}
"""


def test_each_uniform_add_sums_its_warp_first_and_keeps_its_value() -> None:
    new = warp_aggregate(COUNTS, Facts())
    assert new is not None
    assert new.count("= __activemask();") == 2
    assert "unsigned nvcc_opt_add = (unsigned)(1u);" in new
    assert "double nvcc_opt_add = (double)(x);" in new
    assert "if (nvcc_opt_lane == 0) atomicAdd(&count[blockIdx.y], nvcc_opt_add);" in new
    assert "if (nvcc_opt_lane == 0) atomicAdd(sum + blockIdx.y, nvcc_opt_add);" in new
    assert new.count("atomicAdd(") == 4  # one per warp, and the lane-by-lane fallback


def test_the_policy_offers_it_saying_it_reorders_float_sums() -> None:
    [change] = [c for c in transform_changes(COUNTS, Facts()) if c.name == "warp_aggregate"]
    assert "another order" in change.numerics


ONE = """\
__global__ void total(const float* v, float* sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(sum, v[i]);
}
"""


def test_after_an_unbraced_if_the_block_lines_up_with_its_line() -> None:
    """`if (c) atomicAdd(...)` becomes `if (c) {` with the block indented under that line, as a
    reviewer reads it, never flush at column 0."""
    new = warp_aggregate(ONE, Facts())
    assert new is not None
    lines = new.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  if (i < n) {"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "  }")
    assert all(line.startswith("    ") for line in lines[start + 1 : end])


USED = "if (i < n) { float before = atomicAdd(sum, v[i]); if (before < 0) sum[1] = 0; }"
CALLED = "__device__ int next();\n"


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (ONE.replace("atomicAdd(sum,", "atomicAdd(&sum[threadIdx.x],"), "a lane's own address"),
        (ONE.replace("atomicAdd(sum,", "atomicAdd(&sum[i / 32],"), "a local in the address"),
        (ONE.replace("if (i < n)", "n += 1;\n  if (i < n)").replace("atomicAdd(sum,",
         "atomicAdd(sum + n,"), "a parameter the kernel changes"),
        (ONE.replace("float* sum", "__half* sum").replace("float* v", "__half* v"),
         "a type shuffles do not carry here"),
        (ONE.replace("if (i < n) atomicAdd(sum, v[i]);", USED), "the result is used"),
        (ONE.replace("  if (i < n)", "  if (i == 0) v = sum;\n  if (i < n)").replace(
            "const float* v", "float* v"), "the target is read or copied elsewhere"),
        (CALLED + ONE.replace("atomicAdd(sum,", "atomicAdd(sum + next(),"),
         "a call in the address"),
        ("__device__ int g;\n" + ONE.replace("atomicAdd(sum,", "atomicAdd(sum + g,"),
         "a file-scope variable could change between lanes"),
    ],
)  # fmt: skip
def test_adds_that_are_not_one_address_per_warp_are_left_alone(code: str, why: str) -> None:
    assert warp_aggregate(code, Facts()) is None, why


BY_REFERENCE = "__device__ void pick(int& b) { b = threadIdx.x & 3; }\n"
LAMBDA = "  auto f = [&](int b) { atomicAdd(&bins[b], v[i]); };\n  f(threadIdx.x & 7);"
HIST = """\
__global__ void hist(const float* v, float* bins, int b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[b], v[i]);
}
"""


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("#define tx threadIdx.x\n" + HIST.replace("&bins[b]", "&bins[tx & 7]"),
         "a macro that names the thread index"),
        ("#define BIN (threadIdx.x % 8)\n" + HIST.replace("&bins[b]", "bins + BIN"),
         "a macro whose value is not a number"),
        (BY_REFERENCE + HIST.replace("  if (i < n)", "  pick(b);\n  if (i < n)"),
         "a parameter passed by name to a call that may take it by reference"),
        (HIST.replace("  if (i < n) atomicAdd(&bins[b], v[i]);", LAMBDA),
         "a lambda parameter of the same name"),
        (HIST.replace("  if (i < n)", "  (b) = threadIdx.x & 3;\n  if (i < n)"),
         "assigned through parentheses"),
        (HIST.replace("  if (i < n)", "  int k = 0, b = threadIdx.x & 3;\n  if (i < n)"),
         "a second declarator of a local of the same name"),
    ],
)  # fmt: skip
def test_addresses_that_only_look_uniform_are_left_alone(code: str, why: str) -> None:
    assert warp_aggregate(code, Facts()) is None, why
    assert warp_aggregate(HIST, Facts()) is not None


def test_an_int_sum_wraps_in_unsigned_arithmetic_as_the_atomics_do() -> None:
    code = HIST.replace("float* v", "int* v").replace("float* bins", "int* bins")
    new = warp_aggregate(code, Facts())
    assert new is not None
    assert "unsigned nvcc_opt_add = (unsigned)(int)(v[i]);" in new
    assert "if (nvcc_opt_lane == 0) atomicAdd(&bins[b], (int)nvcc_opt_add);" in new


def test_a_constant_found_with_search_may_name_the_address() -> None:
    code = COUNTS.replace("&count[blockIdx.y]", "&count[kSlot]").replace(
        "sum + blockIdx.y", "sum + kSlot"
    )
    assert warp_aggregate(code, Facts()) is None  # kSlot: a variable, for all it knows
    assert warp_aggregate(code, Facts(names={"kSlot": "3"})) is not None
    assert warp_aggregate(code, Facts(names={"kSlot": "threadIdx.x"})) is None


@needs_nvcc
def test_the_aggregated_kernel_compiles(tmp_path: Path) -> None:
    new = warp_aggregate(COUNTS, Facts())
    assert new is not None
    assert_compiles(new, tmp_path)


PROGRAM = """\
#include <cstdio>
#include <cmath>
#include <cuda_runtime.h>
{original}
namespace aggregated {{
{rewritten}
}}
int main() {{
  const int n = 1000003, rows = 3;
  double *v, *s1, *s2;
  unsigned *c1, *c2;
  cudaMallocManaged(&v, sizeof(double) * n * rows);
  cudaMallocManaged(&s1, sizeof(double) * rows);
  cudaMallocManaged(&s2, sizeof(double) * rows);
  cudaMallocManaged(&c1, sizeof(unsigned) * rows);
  cudaMallocManaged(&c2, sizeof(unsigned) * rows);
  for (int k = 0; k < n * rows; ++k) v[k] = ((k * 7919) % 1009) / 1009.0;
  for (int r = 0; r < rows; ++r) s1[r] = s2[r] = 0, c1[r] = c2[r] = 0;
  for (int block : {{96, 100, 256}}) {{  // whole warps, a partial last warp, 8 warps
    dim3 grid((n + block - 1) / block, rows);
    over<<<grid, block>>>(v, 0.5, c1, s1, n);
    aggregated::over<<<grid, block>>>(v, 0.5, c2, s2, n);
  }}
  cudaDeviceSynchronize();
  int wrong = 0;
  for (int r = 0; r < rows; ++r) {{
    wrong += c1[r] != c2[r];
    wrong += fabs(s1[r] - s2[r]) > 1e-9 * fabs(s1[r]);
  }}
  printf("rows that differ: %d (count %u vs %u)\\n", wrong, c1[0], c2[0]);
  return wrong == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_warp_sums_equal_the_atomics_one_by_one_on_a_gpu(tmp_path: Path) -> None:
    """Exact counts and the same double sums (to rounding) with whole warps, a partial last warp
    and warps split by the threshold's branch (any set of lanes)."""
    rewritten = warp_aggregate(COUNTS, Facts())
    assert rewritten is not None
    assert_program_passes(PROGRAM.format(original=COUNTS, rewritten=rewritten), tmp_path)


WARP_FIRST = """\
__global__ void warp_first(const float* v, float* sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  float x = i < n ? v[i] : 0.0f;
  for (int k = 16; k > 0; k /= 2) x += __shfl_down_sync(0xffffffffu, x, k);
  if (lane == 0) atomicAdd(sum, x);
}
"""


def test_an_add_one_lane_per_warp_makes_already_is_left_alone() -> None:
    """The code summed its warp already and adds from lane 0 (or thread 0): nothing to gain."""
    assert warp_aggregate(WARP_FIRST, Facts()) is None
    block_first = WARP_FIRST.replace("if (lane == 0)", "if (0 == threadIdx.x)")
    assert warp_aggregate(block_first, Facts()) is None
    braced = WARP_FIRST.replace(
        "if (lane == 0) atomicAdd(sum, x);", "if (lane == 0) {\n    atomicAdd(sum, x);\n  }"
    )
    assert warp_aggregate(braced, Facts()) is None
    every_lane = WARP_FIRST.replace("if (lane == 0) ", "")
    assert warp_aggregate(every_lane, Facts()) is not None
    other_test = WARP_FIRST.replace("if (lane == 0)", "if (x > 0.0f)")
    assert warp_aggregate(other_test, Facts()) is not None
