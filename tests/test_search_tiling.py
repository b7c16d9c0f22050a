"""The search policy's shared-memory tiling of the one-thread-per-element matrix product."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.changes import Change, compose
from nvcc_opt.search.tiling import tile_matmul
from nvcc_opt.search.transforms import Facts
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

PRODUCT = """\
__global__ void mm(int n, int m, float alpha, const float* A, const float* B, float* C) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && j < m) {
    float sum = 1.0f;
    for (int k = 0; k < n; ++k) sum += A[i * n + k] * B[k * m + j];
    C[i * m + j] = alpha * sum;
  }
}
void launch(int n, int m, float alpha, const float* A, const float* B, float* C) {
  dim3 block(16, 16);
  dim3 grid((m + block.x - 1) / block.x, (n + block.y - 1) / block.y);
  mm<<<grid, block>>>(n, m, alpha, A, B, C);
}
"""


def test_the_product_reads_tiles_from_shared_memory() -> None:
    new = tile_matmul(PRODUCT, Facts())
    assert new is not None
    assert "__shared__ float nvcc_opt_A_tile[16][16];" in new
    assert "(i < n && nvcc_opt_ka < n) ? A[i * n + nvcc_opt_ka] : (float)0;" in new
    assert "(nvcc_opt_kb < n && j < m) ? B[nvcc_opt_kb * m + j] : (float)0;" in new
    assert new.count("__syncthreads();") == 2
    assert "if (i < n && j < m) {\n    C[i * m + j] = alpha * sum;" in new
    assert "float sum = 1.0f;" in new  # a constant start stays: the order of the sum is kept


def test_operands_in_either_order() -> None:
    swapped = PRODUCT.replace("A[i * n + k] * B[k * m + j]", "B[k * m + j] * A[i * n + k]")
    new = tile_matmul(swapped, Facts())
    assert new is not None and "nvcc_opt_A_tile[threadIdx.y][k] * nvcc_opt_B_tile[k]" in new


@pytest.mark.parametrize(
    ("case", "why"),
    [
        (PRODUCT.replace("dim3 block(16, 16);", "dim3 block(32, 8);"), "not a square block"),
        (PRODUCT.replace("dim3 block(16, 16);", "dim3 block(12, 12);"), "not a tile size"),
        (PRODUCT.replace("A[i * n + k]", "A[i * n + k + j]"), "A's index uses the column"),
        (PRODUCT.replace("float sum = 1.0f;", "float sum = C[i * m + j];"),
         "a start read from memory (threads past the edge would read it too)"),
        (PRODUCT.replace("if (i < n && j < m)", "if (i < n || j < m)"), "not both bounds"),
        (PRODUCT.replace("sum += A", "sum -= A"), "not a sum"),
        (PRODUCT.replace("  mm<<<grid, block>>>", "  mm<<<grid, dim3(16, 16)>>>"),
         "the block is not a constant of the region"),
    ],
)  # fmt: skip
def test_products_it_cannot_see_are_safe_are_left_alone(case: str, why: str) -> None:
    assert tile_matmul(case, Facts()) is None, why


def test_tiles_exclude_other_block_shapes() -> None:
    tile, wide = Change("t", "", transform="tile_matmul"), Change("w", "", transform="block_wide")
    assert compose(PRODUCT, Facts(), [tile, wide]) is None


@needs_nvcc
def test_the_tiled_product_compiles(tmp_path: Path) -> None:
    new = tile_matmul(PRODUCT, Facts())
    assert new is not None
    assert_compiles(new, tmp_path)


PROGRAM = """\
#include <cstdio>
#include <cuda_runtime.h>
{original}
namespace tiled {{
{rewritten}
}}
int main() {{
  const int n = 200, m = 123;  // neither a multiple of the tile
  float *A, *B, *C1, *C2;
  cudaMallocManaged(&A, sizeof(float) * n * n);
  cudaMallocManaged(&B, sizeof(float) * n * m);
  cudaMallocManaged(&C1, sizeof(float) * n * m);
  cudaMallocManaged(&C2, sizeof(float) * n * m);
  for (int k = 0; k < n * n; ++k) A[k] = (k % 89) * 0.013f;
  for (int k = 0; k < n * m; ++k) B[k] = (k % 71) * 0.021f;
  launch(n, m, 1.5f, A, B, C1);
  tiled::launch(n, m, 1.5f, A, B, C2);
  cudaDeviceSynchronize();
  for (int k = 0; k < n * m; ++k)
    if (C1[k] != C2[k]) {{ printf("differs at %d: %g %g\\n", k, C1[k], C2[k]); return 1; }}
  return 0;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_tiled_product_is_the_same_float_for_float_on_a_gpu(tmp_path: Path) -> None:
    rewritten = tile_matmul(PRODUCT, Facts())
    assert rewritten is not None
    assert_program_passes(PROGRAM.format(original=PRODUCT, rewritten=rewritten), tmp_path)
