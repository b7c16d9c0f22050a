"""The grid-stride vectorized-load transform: an element-wise grid-stride loop steps over
16-byte vectors where every pointer is aligned, then over the last elements one at a time, and
runs as written otherwise; everything it cannot prove element-wise over the whole grid is
refused. The positive kernels are tests/fixtures/search_classes/vstride_*.cu
(test_search_classes.py checks that each fires and compiles); here, the rewrite's text, the
refusals one by one, what nvcc makes of it, and (on a GPU) the same bits as the original for
every alignment, length and grid."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.changes import transform_changes
from nvcc_opt.search.transforms import Facts
from nvcc_opt.search.vector_strided import vector_loads_strided
from tests.class_kernels import assert_ptx_has
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

POSITIVE = {
    "vstride_axpy_unbraced.cu": ("ld.global.v4.f32", "st.global.v4.f32"),
    "vstride_double_aliases.cu": ("ld.global.nc.v2.f64", "st.global.v2.f64"),
    "vstride_int_template_clamp.cu": ("ld.global.v4.u32", "st.global.v4.u32"),
    "vstride_compound_negate.cu": ("ld.global.v4.f32", "st.global.v4.f32"),
    "vstride_row_softmax.cu": ("ld.global.nc.v4.f32", "st.global.v4.f32"),
    "vstride_row_affine_double.cu": ("ld.global.v2.f64", "st.global.v2.f64"),
}
SCALE = """\
__global__ void scale(const float* x, float* y, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float t = a * x[i];
    y[i] = t > 0.0f ? t : -t;
  }
}
"""
ACCUMULATE = """\
__global__ void scale(const float* x, float* y, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] -= x[i] < 0.0f ? -x[i] * a : a;
}
"""
FACTS = Facts(no_alias=frozenset({"scale"}))


def test_vectors_then_the_last_elements_and_the_loop_as_written_when_unaligned() -> None:
    new = vector_loads_strided(SCALE, FACTS)
    assert new is not None
    aligned = (
        "if (reinterpret_cast<unsigned long long>(x) % 16 == 0 && "
        "reinterpret_cast<unsigned long long>(y) % 16 == 0) {"
    )
    assert aligned in new
    assert "const long long nvcc_opt_n = (long long)(n);" in new
    assert (
        "for (long long nvcc_opt_v = (long long)(blockIdx.x * blockDim.x + threadIdx.x); "
        "nvcc_opt_v < nvcc_opt_n / 4; nvcc_opt_v += (long long)(gridDim.x * blockDim.x)) {"
    ) in new
    assert "const ::float4 nvcc_opt_in_x = reinterpret_cast<const ::float4*>(x)[nvcc_opt_v];" in new
    assert "float t = a * nvcc_opt_in_x.w;" in new
    assert "nvcc_opt_out_y.w = t > 0.0f ? t : -t;" in new
    assert "reinterpret_cast<::float4*>(y)[nvcc_opt_v] = nvcc_opt_out_y;" in new
    assert "nvcc_opt_e = nvcc_opt_n / 4 * 4 + (long long)(blockIdx.x" in new  # the last ones
    assert "y[nvcc_opt_e] = t > 0.0f ? t : -t;" in new
    assert "} else {\n    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;" in new
    assert "vector_loads_strided" in [c.name for c in transform_changes(SCALE, FACTS)]


def test_a_compound_update_reads_and_writes_the_element_once() -> None:
    new = vector_loads_strided(ACCUMULATE, FACTS)
    assert new is not None
    assert "const ::float4 nvcc_opt_in_y = reinterpret_cast<const ::float4*>(y)[nvcc_opt_v];" in new
    lane = (
        "nvcc_opt_out_y.z = nvcc_opt_in_y.z - (nvcc_opt_in_x.z < 0.0f ? -nvcc_opt_in_x.z * a : a);"
    )
    assert lane in new
    assert "y[nvcc_opt_e] -= x[nvcc_opt_e] < 0.0f ? -x[nvcc_opt_e] * a : a;" in new  # the last ones
    twice = ACCUMULATE.replace("y[i] -= x[i] < 0.0f ? -x[i] * a : a;", "{ y[i] -= a; y[i] += 1; }")
    assert vector_loads_strided(twice, FACTS) is None  # two updates of one output
    after = ACCUMULATE.replace("y[i] -= x[i] < 0.0f ? -x[i] * a : a;", "{ y[i] -= a; a = y[i]; }")
    assert vector_loads_strided(after, FACTS) is None  # a read after the update


@pytest.mark.parametrize(
    ("facts", "code", "why"),
    [
        (Facts(), SCALE, "no launch seen: x could be y"),
        (FACTS, SCALE.replace("a * x[i]", "a * x[i] + x[i + 1]"),
         "the element and its neighbour: two offsets of one pointer"),
        (FACTS, SCALE.replace("  for (int i", "  if (threadIdx.x > 9) return;\n  for (int i"),
         "a thread that returned before the loop"),
        (FACTS, SCALE.replace("  for (int i", "  const int m = n - (threadIdx.x & 1);\n  for (int i"
                              ).replace("i < n;", "i < m;"),
         "a bound that differs between threads, through a name"),
        (FACTS, SCALE.replace("  for (int i", "  const int b = blockIdx.x;\n  for (int i")
         .replace("i < n;", "i < n - b;"), "a grid-stride bound that differs between blocks"),
        (FACTS, SCALE.replace("a * x[i]", "a * i"), "the index as a value"),
        (FACTS, SCALE.replace("float t = a * x[i];", "a += x[i]; float t = a;"),
         "a name carried from one element to the next"),
        (FACTS, SCALE.replace("i += gridDim.x * blockDim.x", "i += blockDim.x"),
         "a block-stride loop"),
        (FACTS, SCALE.replace("int i = blockIdx.x * blockDim.x + threadIdx.x", "int i = 0"),
         "every thread from the first element"),
        (FACTS, SCALE.replace("i += gridDim.x * blockDim.x", "i += 2 * gridDim.x * blockDim.x"),
         "a stride of two grids"),
        (FACTS, SCALE.replace("i < n;", "i <= n;"), "an inclusive bound"),
        (FACTS, SCALE.replace("float t = a * x[i];", "float t = a * x[i]; if (t > 9) break;"),
         "a jump"),
        (FACTS, SCALE.replace("float t = a * x[i];", "float t = a * x[i] + threadIdx.x;"),
         "a thread index in the body"),
        (FACTS, SCALE.replace("const float* x", "const double* x"), "two element types"),
        (FACTS, SCALE.replace("a * x[i]", "a * helper(x[i])"), "a call that is not math"),
        (FACTS, SCALE.replace("  for (int i", "  n = n / 2;\n  for (int i"),
         "the bound changed in the kernel"),
        (FACTS, SCALE.replace("  }\n}", "  }\n  y[0] = 1.0f;\n}"),
         "a pointer used outside the loop"),
        (FACTS, SCALE.replace("float", "half"), "an element type with no 16-byte vector here"),
    ],
)  # fmt: skip
def test_what_it_cannot_prove_element_wise_over_the_grid_is_refused(
    facts: Facts, code: str, why: str
) -> None:
    assert vector_loads_strided(code, facts) is None, why


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_nvcc_emits_16_byte_loads_and_stores_for_sm_90(name: str, tmp_path: Path) -> None:
    assert_ptx_has(name, vector_loads_strided, POSITIVE[name], tmp_path)


COMPARE = """\
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
{original}
namespace strided {{
{rewritten}
}}
int main() {{
  {sizes}
  float *x, *a, *b;
  cudaMallocManaged(&x, sizeof(float) * most);
  cudaMallocManaged(&a, sizeof(float) * most);
  cudaMallocManaged(&b, sizeof(float) * most);
  for (int k = 0; k < most; ++k) x[k] = 0.37f * (k % 1013) - 150.0f;
  int differ = 0, checked = 0;
  for (int offset = 0; offset < 4; ++offset)  // {offsets}
    {loops} {{
        for (int k = 0; k < most; ++k) a[k] = b[k] = -1.0f;
        {kernel}<<<{config}>>>(x + offset, a + offset, {extent}, 1.5f);
        strided::{kernel}<<<{config}>>>(x + offset, b + offset, {extent}, 1.5f);
        if (cudaDeviceSynchronize() != cudaSuccess) return 2;
        differ += std::memcmp(a, b, sizeof(float) * most) != 0;
        ++checked;
      }}
  std::printf("cases %d, differing %d\\n", checked, differ);
  return differ == 0 ? 0 : 1;
}}
"""
GRID_CASES = {
    "sizes": "const int lengths[] = {0, 1, 3, 4, 5, 7, 8, 1023, 4097, 100003};\n"
    "  const int grids[][2] = {{1, 32}, {7, 64}, {264, 256}};\n"
    "  const int most = 100003 + 8;",
    "offsets": "1-3: pointers 4, 8, 12 bytes past alignment",
    "loops": "for (int n : lengths)\n      for (auto& g : grids)",
    "kernel": "scale",
    "config": "g[0], g[1]",
    "extent": "n",
}


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("kernel", [SCALE, ACCUMULATE], ids=["assign", "compound"])
def test_the_same_bits_as_the_original_for_every_alignment_length_and_grid(
    kernel: str, tmp_path: Path
) -> None:
    rewritten = vector_loads_strided(kernel, FACTS)
    assert rewritten is not None
    program = COMPARE.format(original=kernel, rewritten=rewritten, **GRID_CASES)
    assert_program_passes(program, tmp_path)


ROWS = """\
__global__ void rows(const float* x, float* y, int cols, float a) {
  const int row = blockIdx.x;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    float t = a * x[row * cols + j];
    y[row * cols + j] = t > 1.0f ? t : -t;
  }
}
"""
ROW_CASES = {
    "sizes": "const int widths[] = {1, 3, 4, 5, 7, 8, 33, 1023, 4097};\n"
    "  const int blocks[] = {32, 96, 256};\n"
    "  const int count = 37, most = count * 4097 + 8;",  # `rows` names the kernel
    "offsets": "rows of odd widths start unaligned as well",
    "loops": "for (int cols : widths)\n      for (int block : blocks)",
    "kernel": "rows",
    "config": "count, block",
    "extent": "cols",
}
ROW_FACTS = Facts(no_alias=frozenset({"rows"}))


def test_a_block_stride_row_loop_steps_over_vectors_of_its_row() -> None:
    new = vector_loads_strided(ROWS, ROW_FACTS)
    assert new is not None
    assert "reinterpret_cast<unsigned long long>((x + (row * cols))) % 16 == 0" in new
    assert (
        "for (long long nvcc_opt_v = (long long)(threadIdx.x); nvcc_opt_v < nvcc_opt_n / 4; "
        "nvcc_opt_v += (long long)(blockDim.x)) {"
    ) in new
    assert "reinterpret_cast<const ::float4*>((x + (row * cols)))[nvcc_opt_v];" in new
    assert "y[row * cols + nvcc_opt_e] = t > 1.0f ? t : -t;" in new  # the row's last elements
    moved = ROWS.replace("const int row = blockIdx.x;", "int row = blockIdx.x; row += cols;")
    assert vector_loads_strided(moved, ROW_FACTS) is None  # the offset changes in the kernel


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_a_row_loop_gives_the_same_bits_for_every_alignment_width_and_block(
    tmp_path: Path,
) -> None:
    rewritten = vector_loads_strided(ROWS, ROW_FACTS)
    assert rewritten is not None
    program = COMPARE.format(original=ROWS, rewritten=rewritten, **ROW_CASES)
    assert_program_passes(program, tmp_path)


@pytest.mark.parametrize(
    ("before", "why"),
    [
        ("int row = blockIdx.x; row += 0 * cols;", "an offset the kernel changes"),
        ("const int row = blockIdx.x + (threadIdx.x >> 5);", "an offset that differs by thread"),
        ("const int row = blockIdx.x; const int cols2 = cols - (int)threadIdx.x;\n  cols = cols2;",
         "a bound changed in the kernel"),
    ],
)  # fmt: skip
def test_a_row_loop_whose_offset_or_bound_is_not_the_blocks_own_is_refused(
    before: str, why: str
) -> None:
    assert (
        vector_loads_strided(ROWS.replace("const int row = blockIdx.x;", before), ROW_FACTS) is None
    ), why


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize(
    ("kernel", "facts", "cases"),
    [(SCALE, FACTS, GRID_CASES), (ACCUMULATE, FACTS, GRID_CASES), (ROWS, ROW_FACTS, ROW_CASES)],
    ids=["assign", "compound", "rows"],
)
def test_the_gpu_comparison_programs_compile_here(
    kernel: str, facts: Facts, cases: dict[str, str], tmp_path: Path
) -> None:
    """The GPU tests above run only where a GPU is; their programs compile everywhere (the row
    program once named its count after the kernel, and only a GPU run would have shown it)."""
    rewritten = vector_loads_strided(kernel, facts)
    assert rewritten is not None
    assert_compiles(COMPARE.format(original=kernel, rewritten=rewritten, **cases), tmp_path)
