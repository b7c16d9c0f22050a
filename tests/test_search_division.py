"""The search policy's split of a division by a product into the division the kernel does."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nvcc_opt.search.changes import transform_changes
from nvcc_opt.search.division import split_division
from nvcc_opt.search.transforms import Facts
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

CELLS = """\
// One thread per cell: its coordinates from the flat index, then the average of its corners.
__global__ void cells(const double* node, double* cell, int n) {
  long z = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (z >= (long)n * n * n) return;
  int i = z % n;
  int j = (z / n) % n;
  int k = z / ((long)n * n);
  long np = n + 1;
  long base = i + np * (j + np * k);
  cell[z] = 0.5 * (node[base] + node[base + np * np + np + 1]);
}

void launch(const double* node, double* cell, int n) {
  long total = (long)n * n * n;
  cells<<<(total + 255) / 256, 256>>>(node, cell, n);
}
"""


def test_the_product_is_split_so_the_first_division_is_the_one_already_there() -> None:
    new = split_division(CELLS, Facts())
    assert new is not None
    assert "int k = ((z / (long)n) / n);" in new  # `z / n` is j's division: n goes first
    assert new.replace("((z / (long)n) / n)", "z / ((long)n * n)") == CELLS  # nothing else
    assert "split_division" in [c.name for c in transform_changes(CELLS, Facts())]


def test_the_factor_the_kernel_divides_by_goes_first_whichever_side_it_is_on() -> None:
    code = CELLS.replace("(long)n * n)", "m * (long)n)").replace("int n)", "int n, int m)")
    new = split_division(code, Facts())
    assert new is not None and "int k = ((z / (long)n) / m);" in new


def test_the_first_factor_is_one_whose_division_is_as_wide_as_the_result() -> None:
    """int e / (int a * long b): e / a would divide in int (INT_MIN / -1 overflows there) while
    the original divides in long, so b goes first, and only where the kernel divides by b."""
    code = """\
__global__ void k(int e, int a, long b, long* out) {
  out[0] = e % a;
  out[1] = e % b;
  out[2] = e / (a * b);
}
"""
    new = split_division(code, Facts())
    assert new is not None and "out[2] = ((e / b) / a);" in new
    assert split_division(code.replace("  out[1] = e % b;\n", ""), Facts()) is None


def test_no_division_in_a_call_argument_is_split_even_in_its_own_parentheses() -> None:
    """A macro could stringify its argument (`#x`): the split would change the text."""
    code = CELLS.replace("int k = z / ((long)n * n);", "int k = f((z / ((long)n * n)));")
    assert split_division(code, Facts()) is None
    assert split_division(code.replace("f((z", "f(1 + (z"), Facts()) is None


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (CELLS.replace("int i = z % n;\n  int j = (z / n) % n;\n", "int i = 0, j = 0;\n"),
         "no division by n to share: two divisions would replace one"),
        (CELLS.replace("int n)", "unsigned n)"), "an unsigned factor: n * n may wrap"),
        (CELLS.replace("long z =", "unsigned long z =").replace("(long)n * n * n", "0"),
         "an unsigned dividend"),
        (CELLS.replace("(long)n * n)", "(unsigned long)n * n)"), "a cast to an unsigned type"),
        (CELLS.replace("(long)n * n)", "n * size)"), "a name the kernel does not declare"),
        (CELLS.replace("(long)n * n)", "n * 0x10)"), "a hexadecimal literal may be unsigned"),
        (CELLS.replace("(long)n * n)", "n * 16u)"), "an unsigned literal"),
        (CELLS.replace("(long)n * n)", "n * n++)"), "an operand with a side effect"),
        (CELLS.replace("int k = z / ((long)n * n);", "int k = f(z / ((long)n * n));"),
         "a bare part of a call's argument: a macro could regroup it"),
        (CELLS.replace("(long)n * n)", "n * f(n))"), "a call"),
        (CELLS.replace("(long)n * n)", "n * (n + 1))"), "a sum"),
        (CELLS.replace("double* cell, int n", "double* cell, T n")
         .replace("__global__", "template <typename T>\n__global__"), "a template type"),
        (CELLS.replace("long z =", "auto z ="), "a type the parse cannot see"),
        (CELLS.replace("  int k =", "  { int n = 3; }\n  int k ="), "n declared twice"),
        (CELLS.replace("int k = z / ((long)n * n);", "int k = z / ((long)n * w);\n  int w = 2;"),
         "a factor declared after the division"),
        (CELLS.replace("int k = z / ((long)n * n);",
                       "{ int w = 2; }\n  int k = z / ((long)n * w);"),
         "a factor whose declaration's scope has ended (w is another one here)"),
        ("#define n 4\n" + CELLS.replace("int n)", "int m)"), "a macro"),
        (CELLS.replace("int k = z / ((long)n * n);", "int k = z / ((long)n * n * n);"),
         "a product of three"),
    ],
)  # fmt: skip
def test_no_division_is_split_where_the_value_or_the_gain_is_not_sure(code: str, why: str) -> None:
    assert split_division(code, Facts()) is None, why


@needs_nvcc
def test_the_split_kernel_compiles_with_one_64_bit_division_fewer(tmp_path: Path) -> None:
    new = split_division(CELLS, Facts())
    assert new is not None
    assert_compiles(new, tmp_path)
    counts = []
    for name, code in (("before", CELLS), ("after", new)):
        source = tmp_path / f"{name}.cu"
        source.write_text(code)
        ptx = tmp_path / f"{name}.ptx"
        subprocess.run(
            ["nvcc", "-arch=sm_90", "-ptx", "-o", str(ptx), str(source)],
            check=True,
            capture_output=True,
        )
        text = ptx.read_text()
        counts.append(sum(text.count(f"{op}.{t}64") for op in ("div", "rem") for t in "su"))
    assert counts == [3, 2]


HOST_CHECK = """\
#include <cstdio>
#include <initializer_list>
#define __global__
{original}
namespace split {{
{rewritten}
}}
int main() {{
  long out[3], got[3];
  int differ = 0, checked = 0;
  const int ns[] = {{1, 2, 3, 7, 64, 1000, 46341, -1, -3, -64}};
  const int ms[] = {{1, 5, 9, -1, -7, 3000}};
  for (int n : ns)
    for (int m : ms)
      for (long z = -5000; z <= 5000; z += 7) {{
        for (long zz : {{z, z * 1000003L, z * 2147483647L}}) {{
          parts(zz, n, m, out);
          split::parts(zz, n, m, got);
          for (int c = 0; c < 3; ++c) differ += out[c] != got[c];
          ++checked;
        }}
      }}
  std::printf("checked %d, differing %d\\n", checked, differ);
  return differ == 0 && checked > 0 ? 0 : 1;
}}
"""
PARTS = """\
__global__ void parts(long z, int n, int m, long* out) {
  out[0] = z % n;
  out[1] = (z / n) % m;
  out[2] = z / ((long)n * m);
}
"""


def test_the_split_gives_the_same_quotients_for_any_signs(tmp_path: Path) -> None:
    """Compiled for the host (the same C++ division rules as the device): negative dividends
    and factors of either sign give the same quotient both ways."""
    rewritten = split_division(PARTS, Facts())
    assert rewritten is not None and "out[2] = ((z / (long)n) / m);" in rewritten
    source = tmp_path / "check.cpp"
    source.write_text(HOST_CHECK.format(original=PARTS, rewritten=rewritten))
    binary = tmp_path / "check"
    subprocess.run(["g++", "-O2", "-o", str(binary), str(source)], check=True)
    run = subprocess.run([str(binary)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


PROGRAM = """\
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
{original}
namespace split {{
{rewritten}
}}
int main() {{
  const int n = 61;
  const long nodes = (long)(n + 1) * (n + 1) * (n + 1), cells_ = (long)n * n * n;
  double *node, *a, *b;
  cudaMallocManaged(&node, sizeof(double) * nodes);
  cudaMallocManaged(&a, sizeof(double) * cells_);
  cudaMallocManaged(&b, sizeof(double) * cells_);
  for (long k = 0; k < nodes; ++k) node[k] = 0.001 * (k % 997) - 0.3;
  launch(node, a, n);
  split::launch(node, b, n);
  if (cudaDeviceSynchronize() != cudaSuccess) return 2;
  int differ = 0;
  for (long k = 0; k < cells_; ++k) differ += std::memcmp(&a[k], &b[k], sizeof(double)) != 0;
  printf("elements differing: %d\\n", differ);
  return differ == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_split_kernel_gives_the_same_results_bit_for_bit_on_a_gpu(tmp_path: Path) -> None:
    rewritten = split_division(CELLS, Facts())
    assert rewritten is not None
    assert_program_passes(PROGRAM.format(original=CELLS, rewritten=rewritten), tmp_path)


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "unsafe_division"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.cu")), ids=lambda p: p.name)
def test_no_division_is_split_where_a_review_found_a_name_or_type_is_not_what_it_looks(
    path: Path,
) -> None:
    """Three reviews' inputs: an unsigned name hiding the signed one (a range-for variable, a
    lambda's capture or parameter, an enumerator, a structured binding, a `using`, a field, a
    reference, `U(n) = u;`, a line splice or a universal character name spelling the same name
    two ways), a typedef, template parameter, enum, struct or macro (`#define const unsigned`,
    one the parse misses behind a splice, a comment or `%:`) renaming an integer type, a macro
    regrouping or stringifying its argument, a literal too large for a signed type, a first
    factor narrower than the result, a split that overflows in a `static_assert` (also through
    a `const` local or a lambda), a macro binding an operator to the dividend, a macro statement
    declaring a name."""
    assert split_division(path.read_text(), Facts()) is None
