"""The search policy's staging of a small read-only table in shared memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.changes import transform_changes
from nvcc_opt.search.cuda import Source
from nvcc_opt.search.staging import stage_table
from nvcc_opt.search.transforms import Facts
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

TABLE = """\
constexpr int kRows = 24;
constexpr int kCols = 48;

// out[i] = sum over c of coef[(i % kRows) * kCols + c] * x[(i / kRows) * kCols + c]
__global__ void apply_table(const double* coef, const double* x, double* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  int m = i % kRows;
  long g = i / kRows;
  double sum = 0.0;
  for (int c = 0; c < kCols; ++c) sum += coef[m * kCols + c] * x[g * kCols + c];
  out[i] = sum;
}

void launch(const double* coef, const double* x, double* out, long n) {
  apply_table<<<(n + 255) / 256, 256>>>(coef, x, out, n);
}
"""
FACTS = Facts(block_sizes={"apply_table": 256}, no_alias=frozenset({"apply_table"}))


def test_the_rows_a_block_reads_are_staged_and_read_from_shared_memory() -> None:
    new = stage_table(TABLE, FACTS)
    assert new is not None
    assert "__shared__ double nvcc_opt_coef[(kRows) * ((kCols) + 1)];" in new
    assert "__shared__ int nvcc_opt_coef_rows[(kRows)];" in new
    assert "if (!(i >= n)) {" in new  # a thread marks its row only when it passes the guard
    assert "(long long)(int)(i % kRows);" in new
    assert "atomicOr(&nvcc_opt_coef_rows[nvcc_opt_r], 1);" in new
    assert "if (nvcc_opt_coef_rows[nvcc_opt_r])" in new  # only marked rows are copied
    assert (
        "(m) >= 0 && (m) < (kRows) ? nvcc_opt_coef[(m) * ((kCols) + 1) + c] : coef[m * kCols + c]"
    ) in new
    staging, kernel_rest = new.split("if (i >= n) return;")
    assert staging.count("__syncthreads();") == 3 and "__syncthreads" not in kernel_rest
    assert "x[g * kCols + c]" in kernel_rest  # x's row is the same for the warp: left alone
    assert "stage_table" in [c.name for c in transform_changes(TABLE, FACTS)]


def test_a_wrapping_guard_and_a_row_written_inline_are_the_same_kernel() -> None:
    wrapped = TABLE.replace("  if (i >= n) return;\n", "  if (i < n) {\n").replace(
        "  out[i] = sum;\n}", "  out[i] = sum;\n  }\n}"
    )
    new = stage_table(wrapped, FACTS)
    assert new is not None and "if ((i < n)) {" in new
    inline = TABLE.replace("coef[m * kCols + c]", "coef[c + kCols * (i % kRows)]")
    new = stage_table(inline, FACTS)
    assert new is not None and "nvcc_opt_coef[(i % kRows) * ((kCols) + 1) + c]" in new


@pytest.mark.parametrize(
    ("facts", "code", "why"),
    [
        (Facts(), TABLE, "a launch may pass coef as out too"),
        (FACTS, TABLE.replace("for (int c = 0; c < kCols; ++c) sum +=",
                              "for (int c = 0; c < kCols; ++c) if (x[c] > 0) sum +="),
         "a read under a condition: the rows read depend on data"),
        (FACTS, TABLE.replace("sum += coef", "sum += x[c] > 0 ? 0.0 : coef"),
         "a read in one arm of a conditional"),
        (FACTS, TABLE.replace("long g = i / kRows;", "long g = i / kRows;\n  if (g > 5) return;"),
         "a thread may leave before the loop"),
        (FACTS, TABLE.replace("sum += coef[m * kCols + c] * x[g * kCols + c];",
                              "{ if (x[c] < 0) break; sum += coef[m * kCols + c]; }"),
         "the loop may stop early"),
        (FACTS, TABLE.replace("int m = i % kRows;", "int m = (int)x[i] % kRows;"),
         "the row comes from data"),
        (FACTS, TABLE.replace("int m = i % kRows;", "int m = i % n;"), "the rows are not constant"),
        (FACTS, TABLE.replace("c < kCols; ++c", "c < n; ++c"), "the columns are not constant"),
        (FACTS, TABLE.replace("int c = 0; c < kCols", "int c = 1; c < kCols"), "not from 0"),
        (FACTS, TABLE.replace("c < kCols; ++c", "c <= kCols; ++c"), "not up to C"),
        (FACTS, TABLE.replace("double sum = 0.0;", "double sum = coef[0];"),
         "a read outside the loop"),
        (FACTS, TABLE.replace("int m = i % kRows;", "int m = i % kRows;\n  m += 1;"),
         "the row is changed"),
        (FACTS, TABLE.replace("long g = i / kRows;", "long g = i / kRows;\n  i += 1;"),
         "the index is changed"),
        (FACTS, TABLE.replace("sum += coef[m * kCols + c]", "sum += coef[m * kCols + c + 1]"),
         "not a row and a column"),
        (FACTS, TABLE.replace("sum += coef[m * kCols + c]", "sum += coef[m * (kCols + 1) + c]"),
         "a row width other than the loop's"),
        (FACTS, TABLE.replace("double sum = 0.0;", "__shared__ double t[4];\n  double sum = 0;"),
         "the kernel has shared memory of its own"),
        (FACTS, "extern __shared__ double dyn[];\n" + TABLE, "the file has dynamic shared memory"),
        (FACTS, TABLE.replace("if (i >= n) return;", "if (i >= count(n)) return;"),
         "a guard with a call"),
        (FACTS, TABLE.replace("  double sum = 0.0;\n", "  CHECK(i);\n  double sum = 0.0;\n"),
         "a macro may hide a return"),
    ],
)  # fmt: skip
def test_tables_it_cannot_see_are_read_the_same_are_left_alone(
    facts: Facts, code: str, why: str
) -> None:
    assert stage_table(code, facts) is None, why


def test_a_written_table_is_left_alone() -> None:
    code = TABLE.replace("const double* coef", "double* coef").replace(
        "  out[i] = sum;", "  out[i] = sum;\n  coef[0] = 1.0;"
    )
    assert stage_table(code, FACTS) is None


@needs_nvcc
def test_the_staged_kernel_compiles(tmp_path: Path) -> None:
    new = stage_table(TABLE, FACTS)
    assert new is not None
    assert_compiles(new, tmp_path)


PROGRAM = """\
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
{original}
namespace staged {{
{rewritten}
}}
int main() {{
  const long rows = 24, cols = 48;
  // 100003 elements: a partial last block; 20: fewer threads than rows (only some rows read);
  // 300: a block whose threads read every row, the next one a run of rows that wraps around
  const long sizes[] = {{100003, 20, 300}};
  double *coef, *x, *a, *b;
  cudaMallocManaged(&coef, sizeof(double) * rows * cols);
  cudaMallocManaged(&x, sizeof(double) * (100003 / rows + 1) * cols);
  cudaMallocManaged(&a, sizeof(double) * 100003);
  cudaMallocManaged(&b, sizeof(double) * 100003);
  unsigned s = 12345;
  for (long k = 0; k < rows * cols; ++k) {{
    s = s * 1664525u + 1013904223u;
    coef[k] = (s >> 8) * 1e-7 - 0.8;
  }}
  for (long k = 0; k < (100003 / rows + 1) * cols; ++k) {{
    s = s * 1664525u + 1013904223u;
    x[k] = (s >> 8) * 1e-7;
  }}
  int differ = 0;
  for (long n : sizes) {{
    launch(coef, x, a, n);
    staged::launch(coef, x, b, n);
    if (cudaDeviceSynchronize() != cudaSuccess) return 2;
    for (long k = 0; k < n; ++k) differ += std::memcmp(&a[k], &b[k], sizeof(double)) != 0;
  }}
  printf("elements differing: %d\\n", differ);
  return differ == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_staged_table_gives_the_same_results_bit_for_bit_on_a_gpu(tmp_path: Path) -> None:
    rewritten = stage_table(TABLE, FACTS)
    assert rewritten is not None
    assert_program_passes(PROGRAM.format(original=TABLE, rewritten=rewritten), tmp_path)


UNSAFE = Path(__file__).resolve().parent / "fixtures" / "unsafe_staging"


@pytest.mark.parametrize("path", sorted(UNSAFE.glob("*.cu")), ids=lambda p: p.name)
def test_no_table_is_staged_where_a_review_found_it_would_change_what_is_read(path: Path) -> None:
    """Two reviews' inputs (one program each): the index, row or column changed through a
    reference, a call, `&`, parentheses or another loop's update; names shadowed by references,
    enumerators, inner declarations, `using`, typedefs or structured bindings; macros that
    redefine the bounds or hide a jump; a read bound to a reference (also by an overloaded
    operator, a class cast or `decltype(auto)`); a row from state that changes, or declared with
    another or after the loop; a call that may leave the thread; dynamic shared memory at the
    launch; element types that may be const; a volatile table."""
    code = path.read_text()
    kernels = Source(code).kernels()
    facts = Facts(no_alias=frozenset(k.name for k in kernels))
    assert stage_table(code, facts) is None, path.name


@needs_nvcc
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  for (int c = 0;", "  #pragma unroll\n  for (int c = 0;"),
        ("c < kCols; ++c) sum += coef[m * kCols + c]",
         "c < (unsigned int)kCols; ++c) sum += coef[m * (unsigned int)kCols + c]"),
        ("int m = i % kRows;", "int m = (long long)i % kRows;"),
        ("int m = i % kRows;", "unsigned m = (i - -1) % kRows;"),
    ],
)  # fmt: skip
def test_what_the_review_found_sound_is_still_staged_and_compiles(
    old: str, new: str, tmp_path: Path
) -> None:
    code = TABLE.replace(old, new)
    assert code != TABLE
    staged = stage_table(code, FACTS)
    assert staged is not None and "unsignedint" not in staged and "longlong" not in staged
    assert_compiles(staged, tmp_path)
