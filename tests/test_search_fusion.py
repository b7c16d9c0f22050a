"""The search policy's fusion of consecutive element-wise launches."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.changes import transform_changes
from nvcc_opt.search.fusion import fuse
from nvcc_opt.search.transforms import Facts
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

STEPS = """\
struct Arrays { const double* a; double* b; double* c; };
__device__ double half(double v) { return 0.5 * v; }
__global__ void first(Arrays s, long n, double k) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = s.a[i] * k;
  s.b[i] = v;
}
__global__ void second(Arrays s, long n, double k) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) {
    double v = half(s.b[i]) + k;
    s.c[i] = v;
  }
}
__global__ void third(Arrays s, long n, double k) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  s.b[i] = s.c[i] - s.a[i];
}
void launch(Arrays s, long n, double k) {
  const int block = 256;
  long grid = (n + block - 1) / block;
  first<<<grid, block>>>(s, n, k);
  second<<<grid, block>>>(s, n, k);
  third<<<grid, block>>>(s, n, k);
}
"""


def test_element_wise_steps_run_in_one_pass() -> None:
    new = fuse(STEPS, Facts())
    assert new is not None
    assert "__global__ void fused_first_to_third(Arrays s, long n, double k) {" in new
    body = new[new.index("fused_first_to_third(Arrays") : new.index("void launch")]
    assert body.index("s.b[i] = v;") < body.index("half(s.b[i])") < body.index("s.b[i] = s.c[i]")
    assert body.count("if (i >= n) return;") == 1 and body.count("double v") == 2  # own scopes
    launch = new[new.index("void launch") :]
    assert "fused_first_to_third<<<grid, block>>>(s, n, k);" in launch
    assert "second<<<" not in launch and "__global__ void second(" in new  # originals stay
    assert transform_changes(STEPS, Facts())[0].name == "fuse"


@pytest.mark.parametrize(
    ("case", "why"),
    [
        (STEPS.replace("half(s.b[i])", "half(s.b[i + 1])"), "a neighbour's element"),
        (STEPS.replace("half(s.b[i])", "half(s.b[0])"), "a fixed element"),
        (STEPS.replace("second<<<grid, block>>>(s, n, k)", "second<<<grid, block>>>(s, n, 2.0)"),
         "different arguments"),
        (STEPS.replace("second<<<grid, block>>>", "second<<<grid, 128>>>"), "another shape"),
        (STEPS.replace("double v = half(s.b[i]) + k;", "double v = 0; atomicAdd(&s.c[0], 1.0);"),
         "an atomic"),
        (STEPS.replace("__device__ double half(double v)", "__device__ double half(Arrays v)")
         .replace("half(s.b[i])", "half(s)"), "an array holder passed on"),
        (STEPS.replace("s.b[i] = v;\n}", "s.b[i] = v;\n  if (v < 0) return;\n}"), "another return"),
    ],
)  # fmt: skip
def test_steps_that_could_reach_other_elements_are_not_fused(case: str, why: str) -> None:
    new = fuse(case, Facts())
    assert new is None or "fused_first_to_third" not in new, why


def test_a_statement_between_launches_splits_the_run() -> None:
    split = STEPS.replace("  second<<<", "  cudaDeviceSynchronize();\n  second<<<")
    new = fuse(split, Facts())
    assert new is not None and "fused_second_third<<<grid, block>>>" in new
    assert "  first<<<grid, block>>>(s, n, k);" in new


def test_a_comment_between_launches_keeps_them_one_run() -> None:
    commented = STEPS.replace("  second<<<", "  // then the half step\n  second<<<")
    new = fuse(commented, Facts())
    assert new is not None and "fused_first_to_third<<<grid, block>>>(s, n, k);" in new


@needs_nvcc
def test_the_fused_kernel_compiles(tmp_path: Path) -> None:
    new = fuse(STEPS, Facts())
    assert new is not None
    assert_compiles(new, tmp_path)


PROGRAM = """\
#include <cstdio>
#include <cuda_runtime.h>
{original}
namespace fused {{
{rewritten}
}}
int main() {{
  const long n = 100003;
  double *a, *b1, *c1, *b2, *c2;
  for (double** p : {{&a, &b1, &c1, &b2, &c2}}) cudaMallocManaged(p, sizeof(double) * n);
  for (long k = 0; k < n; ++k) a[k] = (k % 101) * 0.25;
  launch(Arrays{{a, b1, c1}}, n, 3.0);
  fused::launch(fused::Arrays{{a, b2, c2}}, n, 3.0);
  cudaDeviceSynchronize();
  for (long k = 0; k < n; ++k)
    if (b1[k] != b2[k] || c1[k] != c2[k]) {{ printf("differs at %ld\\n", k); return 1; }}
  return 0;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_fused_pass_computes_what_the_steps_do_on_a_gpu(tmp_path: Path) -> None:
    rewritten = fuse(STEPS, Facts())
    assert rewritten is not None
    assert_program_passes(PROGRAM.format(original=STEPS, rewritten=rewritten), tmp_path)
