"""The search policy's per-block privatization of atomic adds onto a few counters."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.changes import transform_changes
from nvcc_opt.search.privatize import shared_atomics
from nvcc_opt.search.transforms import Facts
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

COUNTERS = """\
constexpr int kCounters = 64;
__global__ void tally(const double* w, double* counters, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (w[i] > 0.5) atomicAdd(&counters[i % kCounters], w[i]);
}
void launch(const double* w, double* counters, int n) {
  cudaMemset(counters, 0, sizeof(double) * kCounters);
  tally<<<(n + 255) / 256, 256>>>(w, counters, n);
}
"""


def test_atomics_go_to_a_shared_copy_added_once_per_block() -> None:
    new = shared_atomics(COUNTERS, Facts())
    assert new is not None
    assert "__shared__ double nvcc_opt_counters[kCounters];" in new
    assert (
        "const long long nvcc_opt_at = (long long)(i % kCounters); if (nvcc_opt_at >= 0 && "
        "nvcc_opt_at < kCounters) atomicAdd(&nvcc_opt_counters[nvcc_opt_at], w[i]); "
        "else atomicAdd(&counters[nvcc_opt_at], w[i]);"
    ) in new  # a negative remainder (a negative signed i) goes to counters as before
    assert "if (i >= n) break;" in new and "return" not in new.split("void launch")[0]
    assert new.count("__syncthreads();") == 2
    assert "atomicAdd(&counters[nvcc_opt_k], nvcc_opt_counters[nvcc_opt_k]);" in new
    assert "shared_atomics" in [c.name for c in transform_changes(COUNTERS, Facts())]


HISTOGRAM = """\
constexpr int kBins = 256;
__global__ void histogram_kernel(const int* values, unsigned int* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[values[i]], 1u);
}
void launch(const int* values, unsigned int* bins, int n) {
  cudaMemsetAsync(bins, 0, sizeof(unsigned int) * kBins);
  histogram_kernel<<<(n + 255) / 256, 256>>>(values, bins, n);
}
"""
GUARDED = (
    "{ const long long nvcc_opt_at = (long long)(values[i]); "
    "if (nvcc_opt_at >= 0 && nvcc_opt_at < 1024) atomicAdd(&nvcc_opt_bins[nvcc_opt_at], 1u); "
    "else atomicAdd(&bins[nvcc_opt_at], 1u); }"
)


def test_every_thread_of_a_2d_block_clears_and_flushes_its_own_share_once() -> None:
    new = shared_atomics(HISTOGRAM, Facts())
    assert new is not None
    flat = "(int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
    each = f"for (int nvcc_opt_k = {flat}; nvcc_opt_k < (1024); "
    assert new.count(each + "nvcc_opt_k += (int)(blockDim.x * blockDim.y * blockDim.z))") == 2


def test_a_literal_bound_too_large_for_shared_memory_takes_the_guarded_copy() -> None:
    new = shared_atomics(COUNTERS.replace("i % kCounters", "i % 1048576"), Facts())
    assert new is not None and "nvcc_opt_counters[1024];" in new and "nvcc_opt_at < 1024" in new
    small = shared_atomics(COUNTERS.replace("i % kCounters", "i % 512"), Facts())
    assert small is not None and "nvcc_opt_counters[512];" in small and "nvcc_opt_at < 512" in small


def test_a_histogram_gets_a_shared_copy_whose_adds_check_their_index() -> None:
    new = shared_atomics(HISTOGRAM, Facts())
    assert new is not None
    assert "__shared__ unsigned int nvcc_opt_bins[1024];" in new
    assert f"if (i < n) {GUARDED}" in new  # the index read once; outside the copy: as before
    assert "if (nvcc_opt_bins[nvcc_opt_k] != (unsigned int)0)" in new  # only counters it added
    assert "atomicAdd(&bins[nvcc_opt_k], nvcc_opt_bins[nvcc_opt_k]);" in new
    assert "void launch" in new and new.endswith(HISTOGRAM.split("}\n", 2)[2])
    runtime_bound = shared_atomics(COUNTERS.replace("i % kCounters", "i % n"), Facts())
    assert runtime_bound is not None and "nvcc_opt_at < 1024" in runtime_bound


@pytest.mark.parametrize(
    ("case", "why"),
    [
        (COUNTERS.replace("if (w[i] > 0.5)", "counters[0] = 1; if (w[i] > 0.5)"),
         "another write to the counters"),
        (COUNTERS.replace("if (w[i] > 0.5) atomicAdd", "double seen = atomicAdd").replace(
            "w[i]);\n}", "w[i]);\n  if (seen > 1e9) return;\n}"),
         "the add's result is used: a private add would return the block's count"),
        (HISTOGRAM.replace("], 1u)", "], bins[0])"), "the counters are read"),
        (
            "#define CHECK(c) if (!(c)) return\n"
            + COUNTERS.replace("if (i >= n) return;", "CHECK(i < n);"),
            "a return inside a macro: that thread would skip the flush",
        ),
        (COUNTERS.replace("if (i >= n) return;", "if (i >= n) GUARD_EXIT();"),
         "an upper-case call may be a macro that returns"),
        (COUNTERS.replace("if (i >= n) return;", "auto f = [&]() { return; }; f();"),
         "a return inside a lambda is not the kernel's"),
        (COUNTERS.replace("if (i >= n) return;", "for (;;) { if (i >= n) return; break; }"),
         "a return inside a loop cannot become break"),
        (COUNTERS.replace("int i =", "__syncthreads();\n  int i ="), "barriers already"),
    ],
)  # fmt: skip
def test_atomics_it_cannot_bound_are_left_alone(case: str, why: str) -> None:
    assert shared_atomics(case, Facts()) is None, why


@needs_nvcc
@pytest.mark.parametrize("program", [COUNTERS, HISTOGRAM], ids=["counters", "histogram"])
def test_the_privatized_kernel_compiles(tmp_path: Path, program: str) -> None:
    new = shared_atomics(program, Facts())
    assert new is not None
    assert_compiles(new, tmp_path)


PROGRAM = """\
#include <cstdio>
#include <cmath>
#include <cuda_runtime.h>
{original}
namespace private_copy {{
{rewritten}
}}
int main() {{
  const int n = 1000003;
  double *w, *c1, *c2;
  cudaMallocManaged(&w, sizeof(double) * n);
  cudaMallocManaged(&c1, sizeof(double) * kCounters);
  cudaMallocManaged(&c2, sizeof(double) * kCounters);
  for (int k = 0; k < n; ++k) w[k] = (k % 1009) / 1009.0;
  launch(w, c1, n);
  private_copy::launch(w, c2, n);
  cudaDeviceSynchronize();
  int wrong = 0;
  for (int k = 0; k < kCounters; ++k) wrong += fabs(c1[k] - c2[k]) > 1e-9 * fabs(c1[k]);
  printf("counters that differ: %d\\n", wrong);
  return wrong == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_private_sums_equal_the_global_ones_on_a_gpu(tmp_path: Path) -> None:
    rewritten = shared_atomics(COUNTERS, Facts())
    assert rewritten is not None
    assert_program_passes(PROGRAM.format(original=COUNTERS, rewritten=rewritten), tmp_path)


HISTOGRAM_PROGRAM = """\
#include <cstdio>
#include <cuda_runtime.h>
{original}
namespace private_copy {{
{rewritten}
}}
int main() {{
  const int n = 1000003;
  int* values;
  unsigned int *b1, *b2;
  cudaMallocManaged(&values, sizeof(int) * n);
  cudaMallocManaged(&b1, sizeof(unsigned int) * 2048);
  cudaMallocManaged(&b2, sizeof(unsigned int) * 2048);
  // peaked in the middle bins, and every 97th value past the shared copy's 1024 counters
  for (int k = 0; k < n; ++k) values[k] = k % 97 == 0 ? 1024 + k % 1000 : (k % 256 + k % 253) / 2;
  for (int k = 0; k < 2048; ++k) b1[k] = b2[k] = 0;
  histogram_kernel<<<(n + 255) / 256, 256>>>(values, b1, n);
  private_copy::histogram_kernel<<<(n + 255) / 256, 256>>>(values, b2, n);
  // a 2D block (64 x 4): each value counted 4 times by both, each counter flushed once
  histogram_kernel<<<(n + 63) / 64, dim3(64, 4)>>>(values, b1, n);
  private_copy::histogram_kernel<<<(n + 63) / 64, dim3(64, 4)>>>(values, b2, n);
  cudaDeviceSynchronize();
  int wrong = 0;
  for (int k = 0; k < 2048; ++k) wrong += b1[k] != b2[k];
  printf("bins that differ: %d\\n", wrong);
  return wrong == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_private_histogram_equals_the_global_one_on_a_gpu(tmp_path: Path) -> None:
    """Exact counts, with indices inside and outside the shared copy."""
    rewritten = shared_atomics(HISTOGRAM, Facts())
    assert rewritten is not None
    program = HISTOGRAM_PROGRAM.format(original=HISTOGRAM, rewritten=rewritten)
    assert_program_passes(program, tmp_path)
