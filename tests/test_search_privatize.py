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
    assert "atomicAdd(&nvcc_opt_counters[i % kCounters], w[i]);" in new
    assert "if (i >= n) break;" in new and "return" not in new.split("void launch")[0]
    assert new.count("__syncthreads();") == 2
    assert "atomicAdd(&counters[nvcc_opt_k], nvcc_opt_counters[nvcc_opt_k]);" in new
    assert "shared_atomics" in [c.name for c in transform_changes(COUNTERS, Facts())]


@pytest.mark.parametrize(
    ("case", "why"),
    [
        (COUNTERS.replace("i % kCounters", "i % n"), "the bound is known only at run time"),
        (COUNTERS.replace("&counters[i % kCounters]", "&counters[i]"), "no bound on the index"),
        (COUNTERS.replace("if (w[i] > 0.5)", "counters[0] = 1; if (w[i] > 0.5)"),
         "another write to the counters"),
        (COUNTERS.replace("if (i >= n) return;", "for (;;) { if (i >= n) return; break; }"),
         "a return inside a loop cannot become break"),
        (COUNTERS.replace("int i =", "__syncthreads();\n  int i ="), "barriers already"),
    ],
)  # fmt: skip
def test_atomics_it_cannot_bound_are_left_alone(case: str, why: str) -> None:
    assert shared_atomics(case, Facts()) is None, why


@needs_nvcc
def test_the_privatized_kernel_compiles(tmp_path: Path) -> None:
    new = shared_atomics(COUNTERS, Facts())
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
