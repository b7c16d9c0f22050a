"""pad_shared: one more column on a shared tile that a warp walks down a column of. The class
kernels (`tests/fixtures/search_classes/pad_*.cu`) say where it fires and where it is refused;
these tests check what the rewrite is, what nvcc makes of it and, on a GPU, that it computes the
same bits as the original."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.bank_padding import pad_shared
from nvcc_opt.search.changes import transform_changes
from nvcc_opt.search.observe import Profile
from nvcc_opt.search.priorities import ordered
from nvcc_opt.search.transforms import Facts
from tests.class_kernels import assert_ptx_has
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_program_passes

TRANSPOSE = """\
__global__ void transpose(float* out, const float* in, int w, int h) {
  __shared__ float tile[32][32];
  const int lane = threadIdx.x;
  int x = blockIdx.x * 32 + lane, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < w && y + j < h) tile[threadIdx.y + j][lane] = in[(y + j) * w + x];
  __syncthreads();
  x = blockIdx.y * 32 + lane;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < h && y + j < w) out[(y + j) * h + x] = tile[lane][threadIdx.y + j];
}
"""


def test_the_column_count_grows_by_one_and_nothing_else_changes() -> None:
    new = pad_shared(TRANSPOSE, Facts())
    assert new == TRANSPOSE.replace("tile[32][32]", "tile[32][32 + 1]")


def test_an_expression_column_count_is_parenthesized() -> None:
    code = TRANSPOSE.replace("tile[32][32]", "tile[32][16 << 1]")
    new = pad_shared(code, Facts())
    assert new is not None and "tile[32][(16 << 1) + 1]" in new


def test_a_column_count_it_cannot_evaluate_is_left_alone_until_found() -> None:
    code = TRANSPOSE.replace("tile[32][32]", "tile[32][WIDTH]")
    assert pad_shared(code, Facts()) is None
    assert pad_shared(code, Facts(names={"WIDTH": "32"})) is not None
    assert pad_shared(code, Facts(names={"WIDTH": "31"})) is None  # odd rows: no conflict


def test_a_typedef_element_is_sized_through_the_types_found() -> None:
    code = TRANSPOSE.replace("__shared__ float", "__shared__ real_t")
    assert pad_shared(code, Facts()) is None  # its size is unknown
    assert pad_shared(code, Facts(types={"real_t": "double"})) is not None
    assert pad_shared(code, Facts(types={"real_t": "short"})) is None  # 2 bytes share a word


def test_a_second_declaration_of_the_name_refuses_it() -> None:
    code = TRANSPOSE.replace(
        "__syncthreads();", "__syncthreads();\n  { float tile = 0; (void)tile; }"
    )
    assert pad_shared(code, Facts()) is None


def test_shared_memory_stalls_rank_it_first() -> None:
    found = [c for c in transform_changes(TRANSPOSE, Facts()) if c.name in {"pad_shared", "ldg"}]
    profile = Profile("transpose", "latency", 20.0, 30.0, 60.0, None, (("mio_throttle", 0.4),), 256)
    first = ordered(found, TRANSPOSE, None, profile)[0]
    assert first.name == "pad_shared" and "bank conflicts" in first.why


@needs_nvcc
@pytest.mark.slow
def test_nvcc_lays_the_tile_out_one_word_wider(tmp_path: Path) -> None:
    assert_ptx_has("pad_transpose_macro.cu", pad_shared, ["tile[4224]"], tmp_path)  # 32 * 33 * 4
    assert_ptx_has("pad_row_sums_double.cu", pad_shared, ["s[2176]"], tmp_path)  # 16 * 17 * 8
    assert_ptx_has("pad_per_thread_slots.cu", pad_shared, ["part[5120]"], tmp_path)  # 256 * 5 * 4


COMPARE = """\
#include <cstdio>
#include <cstring>
{original}
#define transpose transpose_padded
{padded}
#undef transpose
int main() {{
  const int sizes[][2] = {{{{1, 1}}, {{32, 32}}, {{33, 7}}, {{100, 257}}, {{1024, 96}}}};
  for (const auto& s : sizes) {{
    int w = s[0], h = s[1];
    size_t bytes = sizeof(float) * w * h;
    float *in, *a, *b;
    cudaMallocManaged(&in, bytes); cudaMallocManaged(&a, bytes); cudaMallocManaged(&b, bytes);
    for (int i = 0; i < w * h; ++i) in[i] = 0.5f * i - 3.0f;
    dim3 grid((w + 31) / 32, (h + 31) / 32), block(32, 8);
    transpose<<<grid, block>>>(a, in, w, h);
    transpose_padded<<<grid, block>>>(b, in, w, h);
    if (cudaDeviceSynchronize() != cudaSuccess) return 2;
    if (memcmp(a, b, bytes) != 0) {{ printf("differs at %dx%d\\n", w, h); return 1; }}
    cudaFree(in); cudaFree(a); cudaFree(b);
  }}
  return 0;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_padded_transpose_gives_the_same_bits(tmp_path: Path) -> None:
    padded = pad_shared(TRANSPOSE, Facts())
    assert padded is not None
    assert_program_passes(COMPARE.format(original=TRANSPOSE, padded=padded), tmp_path)
