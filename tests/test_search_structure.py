"""The search policy's structural transforms: block shapes and a warp per row."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.blocks import (
    block_double,
    block_half,
    block_quarter,
    block_warp_wide,
    block_wide,
    grids_from_blocks,
)
from nvcc_opt.search.changes import Change, compose, transform_changes
from nvcc_opt.search.transforms import Facts
from nvcc_opt.search.warp_rows import warp_rows, warp_rows_grid
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

ROWS = """\
__global__ void rows(int n, float alpha, const float* A, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    float bias = x[i];
    for (int j = 0; j < n; ++j) {
      sum += A[i * n + j] * x[j];
    }
    y[i] = alpha * sum + bias;
  }
}
void launch(int n, float alpha, const float* A, const float* x, float* y) {
  const int block = 256;
  int grid = (n + block - 1) / block;
  rows<<<grid, block>>>(n, alpha, A, x, y);
}
"""
FACTS = Facts(block_sizes={"rows": 256}, no_alias=frozenset({"rows"}))

EARLY_RETURN = """\
__global__ void early(long n, const double* A, double* y) {
  long i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i >= n) return;
  double acc = y[i], other = 1.0;
  for (long j = 1; j <= n - 1; j++) acc += A[i * n + j] * 2.0;
  y[i] = acc * other;
}
"""

GRID_2D = """\
__global__ void stencil(int n, const float* in, float* out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < n && y < n) out[y * n + x] = in[y * n + x] * 0.5f;
}
__global__ void scale(int n, float* v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= 2.0f;
}
void launch(int n, const float* in, float* out) {
  dim3 block2d(16, 16);
  dim3 grid2d((n + block2d.x - 1) / block2d.x, (n + block2d.y - 1) / block2d.y);
  stencil<<<grid2d, block2d>>>(n, in, out);
  int block = 128;
  scale<<<(n + block - 1) / block, block>>>(n, out);
}
"""


def test_a_warp_takes_each_row_and_sums_with_shuffles() -> None:
    new = warp_rows(ROWS, FACTS)
    assert new is not None
    assert "int i = blockIdx.x * blockDim.x + nvcc_opt_row;" in new
    assert "for (int j = nvcc_opt_lane; j < n; j += 32)" in new
    assert "sum += __shfl_down_sync(0xffffffffu, sum, nvcc_opt_offset);" in new
    assert "if (nvcc_opt_lane == 0) {\n        y[i] = alpha * sum + bias;" in new
    assert "bias += __shfl" not in new  # only what the loop adds to is summed across lanes
    assert new.endswith(ROWS[ROWS.index("\nvoid launch") :])  # the launch is unchanged


def test_an_early_return_and_a_non_zero_start_go_to_lane_zero_only() -> None:
    new = warp_rows(EARLY_RETURN, Facts(block_sizes={"early": 128}))
    assert new is not None
    assert "if (i >= n) return;" in new
    assert "double acc = nvcc_opt_lane == 0 ? (y[i]) : (double)0, other = 1.0;" in new
    assert (
        "for (long j = (1) + nvcc_opt_lane; j <= n - 1; j += 32) acc += A[i * n + j] * 2.0;" in new
    )


@pytest.mark.parametrize(
    ("case", "why"),
    [
        (ROWS.replace("sum += A[i * n + j] * x[j];", "sum += A[i * n + j] * x[j]; y[j] = 0;"),
         "the loop stores"),
        (ROWS.replace("A[i * n + j] * x[j]", "A[j * n + i] * x[j]"), "reads run down a column"),
        (ROWS.replace("A[i * n + j] * x[j]", "A[i * n + j] * sum"), "an addend reads the sum"),
        (ROWS.replace("A[i * n + j] * x[j]", "f(A[i * n + j])"), "a call in the loop"),
        (ROWS.replace("if (i < n) {", "__syncthreads();\n  if (i < n) {"), "a barrier"),
        (ROWS.replace("sum += A", "sum *= A"), "not a sum"),
    ],
)  # fmt: skip
def test_row_loops_it_cannot_see_are_safe_are_left_alone(case: str, why: str) -> None:
    assert warp_rows(case, FACTS) is None, why


def test_a_warp_per_row_across_the_grid_multiplies_the_launch() -> None:
    new = warp_rows_grid(ROWS, FACTS)
    assert new is not None
    assert "int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;" in new
    assert "rows<<<(grid) * 32, block>>>(n, alpha, A, x, y);" in new
    assert "nvcc_opt_row" not in new  # no loop over the block's rows
    dim3 = ROWS.replace(
        "int grid = (n + block - 1) / block;", "dim3 grid((n + block - 1) / block);"
    )
    assert warp_rows_grid(dim3, FACTS) is None  # a dim3 grid is not multiplied
    both = [Change("r", "", transform="warp_rows"), Change("g", "", transform="warp_rows_grid")]
    assert compose(ROWS, FACTS, both) is None


def test_warp_rows_needs_whole_warps_per_block() -> None:
    assert warp_rows(ROWS, Facts()) is None  # block size unknown
    assert warp_rows(ROWS, Facts(block_sizes={"rows": 48})) is None


def test_block_sizes_change_with_their_grids() -> None:
    assert "const int block = 128;" in (block_half(ROWS, FACTS) or "")
    assert "const int block = 64;" in (block_quarter(ROWS, FACTS) or "")
    assert "const int block = 512;" in (block_double(ROWS, FACTS) or "")
    assert block_wide(ROWS, FACTS) is None  # a 1D block has no width to trade


def test_2d_blocks_trade_height_for_width_and_1d_blocks_stay() -> None:
    wide = block_wide(GRID_2D, Facts())
    assert wide is not None and "dim3 block2d(32, 8);" in wide and "int block = 128;" in wide
    half = block_half(GRID_2D, Facts())
    assert half is not None and "dim3 block2d(16, 8);" in half and "int block = 64;" in half
    assert "dim3 block2d(32, 4);" in (block_quarter(GRID_2D, Facts()) or "")
    assert "dim3 block2d(32, 16);" in (block_double(GRID_2D, Facts()) or "")


@pytest.mark.parametrize(
    ("case", "why"),
    [
        (ROWS.replace("rows<<<grid, block>>>", "rows<<<(n + 127) / 128, block>>>"),
         "the grid does not follow the block"),
        (ROWS.replace("rows<<<grid, block>>>", "rows<<<(n + 255) / 256 + 1, block>>>"),
         "a literal grid that is not a rounded-up division"),
        (ROWS.replace("__global__ void rows", "__global__ void __launch_bounds__(256) rows"),
         "the kernel promises its block size"),
        (ROWS.replace("int i = ", "__shared__ float tile[256];\n  int i = "),
         "a shared array sized apart from the block"),
        (ROWS.replace("int grid =", "block = 64;\n  int grid ="), "the size is assigned later"),
        (ROWS.replace("rows<<<grid, block>>>", "rows<<<grid, 256>>>"), "a literal in the launch"),
    ],
)  # fmt: skip
def test_block_sizes_it_cannot_follow_are_left_alone(case: str, why: str) -> None:
    assert block_half(case, FACTS) is None, why


def test_a_shared_array_sized_by_the_block_constant_follows_it() -> None:
    code = ROWS.replace("int i = ", "__shared__ float tile[block];\n  int i = ").replace(
        "const int block = 256;\n", ""
    )
    code = "constexpr int block = 256;\n" + code
    assert "constexpr int block = 128;" in (block_half(code, FACTS) or "")


def test_block_shapes_exclude_each_other_and_launch_bounds() -> None:
    names = [c.name for c in transform_changes(ROWS, FACTS)]
    assert names[:5] == [
        "warp_rows_grid",
        "warp_rows",
        "block_half",
        "block_quarter",
        "block_double",
    ]
    half, bounds = (
        Change("h", "", transform="block_half"),
        Change("b", "", transform="launch_bounds"),
    )
    assert compose(ROWS, FACTS, [half, bounds]) is None
    assert compose(ROWS, FACTS, [half, Change("q", "", transform="block_quarter")]) is None
    together = compose(ROWS, FACTS, [half, Change("w", "", transform="warp_rows")])
    assert together is not None and "block = 128" in together[0] and "nvcc_opt_lane" in together[0]


CUBE = """\
__global__ void sweep(int n, const float* src, float* dst) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int i = blockIdx.z * blockDim.z + threadIdx.z;
  if (i < n && j < n && k < n) dst[(i * n + j) * n + k] = 2.0f * src[(i * n + j) * n + k];
}

void launch(int n, const float* src, float* dst) {
  dim3 block(8, 8, 8);
  dim3 grid((n + 7) / 8, (n + 8 - 1) / 8, (n + 7) / 8);
  sweep<<<grid, block>>>(n, src, dst);
}
"""


def test_a_grid_written_in_literals_follows_a_block_reshape() -> None:
    """A first version often writes the grid's rounding with the block's numbers: the same
    grid is written from the block, then every block shape applies."""
    same = grids_from_blocks(CUBE)
    assert (
        same is not None
        and (
            "dim3 grid((n + (int)block.x - 1) / (int)block.x, (n + (int)block.y - 1) /"
            " (int)block.y, (n + (int)block.z - 1) / (int)block.z);"
        )
        in same
    )  # int arithmetic as before: block.x is unsigned
    assert "dim3 block(8, 8, 8);" in same  # only the grid is rewritten
    wide = block_warp_wide(CUBE, Facts())
    assert wide is not None and "dim3 block(32, 8, 2);" in wide and "/ (int)block.z" in wide
    assert "dim3 block(8, 4, 8);" in (block_half(CUBE, Facts()) or "")
    names = [c.name for c in transform_changes(CUBE, Facts())]
    assert names[:2] == ["block_warp_wide", "block_half"]
    scalar = ROWS.replace("rows<<<grid, block>>>", "rows<<<(n + 255) / 256, block>>>")
    assert "rows<<<(n + block - 1) / block, block>>>" in (grids_from_blocks(scalar) or "")
    assert "const int block = 128;" in (block_half(scalar, FACTS) or "")


def test_grids_that_are_not_the_blocks_rounding_stay() -> None:
    assert grids_from_blocks(ROWS) is None  # already written from the block
    assert grids_from_blocks(CUBE.replace("(n + 8 - 1) / 8", "(n + 15) / 16")) is None
    assert grids_from_blocks(CUBE.replace("(n + 8 - 1) / 8", "n")) is None
    assert block_half(CUBE.replace("(n + 8 - 1) / 8", "n"), Facts()) is None
    assert grids_from_blocks(CUBE.replace("  sweep<<<", "  grid.x = 4;\n  sweep<<<")) is None


SCALE = """\
__global__ void scale(int n, float* v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= 2.0f;
}

void launch(int n, float* v) {
  int block = 256;
  scale<<<(n + 255) / 256, block>>>(n, v);
}
"""
MATVEC = """\
__global__ void mv(int n, float* v) {
  int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row < n && threadIdx.x == 0) v[row] *= 2.0f;
}

void launch(int n, float* v) {
  dim3 block(8, 8);
  mv<<<(n + 7) / 8, block>>>(n, v);
}
"""

OTHER = """\
void other(int n, float* v, int block);
void other(int n, float* v, int block) { scale<<<(n + 255) / 256, block>>>(n, v); }
"""


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (MATVEC, "the kernel counts rows with another axis's extent than the grid's"),
        (SCALE.replace("int i = blockIdx.x * blockDim.x", "int i = blockIdx.x * 256"),
         "the kernel still holds the old extent"),
        (SCALE.replace("scale<<<(n + 255) / 256, block>>>(n, v);",
                       "scale<<<(n + 255) / 256, block>>>(n, v);\n  use((n + 255) / 256);"),
         "host code repeats the old count of blocks"),
        (SCALE.replace("scale<<<(n + 255) / 256, block>>>(n, v);",
                       "int grid = (n + 255) / 256;\n  scale<<<grid, block>>>(n, v);\n"
                       "  scale<<<grid, 256>>>(n, v);"),
         "another launch with this grid has a literal block"),
        (OTHER + SCALE, "the block there is another function's parameter"),
        (CUBE.replace("  dim3 block(8, 8, 8);\n", "").replace("  sweep<<<",
                      "  dim3 block(8, 8, 8);\n  sweep<<<"),
         "the grid is declared before the block"),
        (SCALE.replace("int block = 256;", "unsigned block = 256;"), "neither dim3 nor int"),
        (SCALE.replace("(n + 255) / 256", "(n + 0377) / 0400"), "octal literals"),
    ],
)  # fmt: skip
def test_grids_whose_old_extent_something_else_still_holds_stay(code: str, why: str) -> None:
    assert grids_from_blocks(code) is None, why
    assert block_half(code, Facts()) is None, why


def test_int_blocks_in_any_initializer_form_give_an_int_grid() -> None:
    assert "scale<<<(n + block - 1) / block, block>>>" in (grids_from_blocks(SCALE) or "")
    for form in ("int block{256};", "int block(256);", "constexpr int block = 256;"):
        new = grids_from_blocks(SCALE.replace("int block = 256;", form))
        assert new is not None and "(n + block - 1) / block" in new, form
    dim3 = grids_from_blocks(SCALE.replace("int block = 256;", "dim3 block = 256;"))
    assert dim3 is not None and "(n + (int)block.x - 1) / (int)block.x" in dim3


def test_a_warp_wide_block_keeps_its_threads_and_a_2d_block_is_left_to_block_wide() -> None:
    assert block_warp_wide(GRID_2D, Facts()) is None  # (16, 16) -> (32, 8) is block_wide's
    wide = block_warp_wide(GRID_2D.replace("block2d(16, 16)", "block2d(4, 64)"), Facts())
    assert wide is not None and "dim3 block2d(32, 8);" in wide
    assert block_warp_wide(ROWS, FACTS) is None  # a 1D block is as wide as it gets


@needs_nvcc
def test_warp_rows_and_block_shapes_compile(tmp_path: Path) -> None:
    for name, code in {
        "rows": warp_rows(ROWS, FACTS),
        "early": warp_rows(EARLY_RETURN, Facts(block_sizes={"early": 128})),
        "grid": block_wide(GRID_2D, Facts()),
        "per_warp": warp_rows_grid(ROWS, FACTS),
        "cube": block_warp_wide(CUBE, Facts()),
    }.items():
        assert code is not None
        assert_compiles(code, tmp_path, name)


PROGRAM = """\
#include <cstdio>
#include <cmath>
#include <cuda_runtime.h>
{original}
namespace fast {{
{rewritten}
}}
int main() {{
  const int n = 1000;  // not a multiple of the block: the last block's rows are partly absent
  float *A, *x, *y1, *y2;
  cudaMallocManaged(&A, sizeof(float) * n * n);
  cudaMallocManaged(&x, sizeof(float) * n);
  cudaMallocManaged(&y1, sizeof(float) * n);
  cudaMallocManaged(&y2, sizeof(float) * n);
  for (int k = 0; k < n * n; ++k) A[k] = (k % 97) * 0.01f;
  for (int k = 0; k < n; ++k) x[k] = (k % 13) * 0.1f;
  launch(n, 1.5f, A, x, y1);
  fast::launch(n, 1.5f, A, x, y2);
  cudaDeviceSynchronize();
  double worst = 0;
  for (int k = 0; k < n; ++k) worst = fmax(worst, fabs(y1[k] - y2[k]) / fabs(y1[k]));
  printf("worst %g\\n", worst);
  return worst < 1e-5 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("transform", [warp_rows, warp_rows_grid])
def test_warp_rows_computes_what_the_original_does_on_a_gpu(
    tmp_path: Path, transform: object
) -> None:
    rewritten = transform(ROWS, FACTS)  # type: ignore[operator]
    assert rewritten is not None
    assert_program_passes(PROGRAM.format(original=ROWS, rewritten=rewritten), tmp_path)


CUBE_PROGRAM = """\
#include <cstdio>
#include <cuda_runtime.h>
{original}
namespace fast {{
{rewritten}
}}
int main() {{
  const int n = 37;  // a multiple of neither block: the edge blocks are partly outside
  float *src, *a, *b;
  cudaMallocManaged(&src, sizeof(float) * n * n * n);
  cudaMallocManaged(&a, sizeof(float) * n * n * n);
  cudaMallocManaged(&b, sizeof(float) * n * n * n);
  for (int k = 0; k < n * n * n; ++k) {{ src[k] = k % 101; a[k] = -1; b[k] = -2; }}
  launch(n, src, a);
  fast::launch(n, src, b);
  cudaDeviceSynchronize();
  int wrong = 0;
  for (int k = 0; k < n * n * n; ++k) wrong += a[k] != b[k] || a[k] != 2.0f * src[k];
  printf("wrong %d\\n", wrong);
  return wrong == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_a_reshaped_3d_block_with_its_rewritten_grid_covers_every_cell_on_a_gpu(
    tmp_path: Path,
) -> None:
    rewritten = block_warp_wide(CUBE, Facts())
    assert rewritten is not None
    assert_program_passes(CUBE_PROGRAM.format(original=CUBE, rewritten=rewritten), tmp_path)


def test_a_grid_shared_with_a_launch_of_a_literal_block_keeps_its_block() -> None:
    """`b<<<grid, 256>>>` with the grid computed from `block`: resizing `block` would change
    the grid under b's fixed block, so b would cover another range."""
    code = ROWS.replace(
        "rows<<<grid, block>>>(n, alpha, A, x, y);",
        "rows<<<grid, block>>>(n, alpha, A, x, y);\n  rows<<<grid, 256>>>(n, alpha, A, x, y);",
    )
    assert code != ROWS
    assert block_double(code, FACTS) is None and block_half(code, FACTS) is None
