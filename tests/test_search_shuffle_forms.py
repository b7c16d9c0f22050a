"""warp_shuffle_tail on the forms real reductions take beyond the plain one: inside a loop every
thread runs alike (a reduction per digit, per column), a counter declared before the loop, the
thread index through an alias of an alias, an element type behind an alias; and the cases that
must stay refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.shuffle import warp_shuffle_tail
from nvcc_opt.search.transforms import Facts
from tests.class_kernels import CLASSES
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes


def _kernel(name: str) -> str:
    """A class kernel of tests/fixtures/search_classes/ without its header comment lines."""
    lines = (CLASSES / name).read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("// "))


# a histogram per block: one tree reduction per bin, inside a loop over the bins
BINS = _kernel("reduce_nested_per_bin.cu")
BINS_FACTS = Facts(block_sizes={"bin_counts": 256}, types={"count_t": "unsigned int"})

# one block per column at a time, columns handed out grid-stride; the counter is declared first
COLUMNS = _kernel("reduce_nested_grid_stride_columns.cu")
COLUMNS_FACTS = Facts(block_sizes={"column_norms": 256})

# a flag count with the counter declared before the loop and an unbraced body
FLAGS = _kernel("reduce_counter_declared_before.cu")
FLAGS_FACTS = Facts(block_sizes={"count_flags": 128})
REPEATED = """\
__global__ void count_flags(const int* flags, int* per_block, int n) {
  extern __shared__ int seen[];
  int j;
  for (int r = 0; r < 2; ++r) {
    seen[threadIdx.x] = flags[blockIdx.x * blockDim.x + threadIdx.x] + r;
    __syncthreads();
    for (j = blockDim.x / 2; j > 0; j >>= 1) {
      if (threadIdx.x < j) seen[threadIdx.x] += seen[threadIdx.x + j];
      __syncthreads();
    }
  }
  if (threadIdx.x == 0) per_block[blockIdx.x] = seen[0];
}
"""


@pytest.mark.parametrize(
    ("code", "facts", "loop"),
    [
        (BINS, BINS_FACTS, "for (unsigned half = blockDim.x >> 1; half > 16; half >>= 1) {"),
        (COLUMNS, COLUMNS_FACTS, "for (int step = 128; step > 16; step /= 2) {"),
        (FLAGS, FLAGS_FACTS, "for (i = blockDim.x / 2; i > 16; i >>= 1) {"),
    ],
)
def test_real_forms_of_the_tree_reduction_get_the_shuffled_tail(
    code: str, facts: Facts, loop: str
) -> None:
    new = warp_shuffle_tail(code, facts)
    assert new is not None and loop in new
    assert "__shfl_down_sync(0xffffffffu, nvcc_opt_sum, nvcc_opt_step)" in new


def test_the_element_type_is_kept_as_written() -> None:
    new = warp_shuffle_tail(BINS, BINS_FACTS)
    assert new is not None and "count_t nvcc_opt_sum = part[threadIdx.x];" in new
    assert warp_shuffle_tail(BINS, Facts(block_sizes={"bin_counts": 256})) is None  # unknown


@pytest.mark.parametrize(
    ("code", "facts", "why"),
    [
        (BINS.replace("for (int b = 0; b < BINS; ++b)", "for (int b = me % 2; b < BINS; ++b)"),
         BINS_FACTS, "threads start the outer loop at different bins"),
        (BINS.replace("b < BINS;", "b < (int)keys[0];"), BINS_FACTS, "a bound read from memory"),
        (BINS.replace("    part[me] = mine[b];", "    if (mine[b] == 0) continue;\n"
                      "    part[me] = mine[b];"), BINS_FACTS, "a thread may skip an iteration"),
        (BINS.replace("part[me] = mine[b];", "part[me] += mine[b];"), BINS_FACTS,
         "each iteration reads what the last one left in elements 1-31"),
        (BINS.replace("    part[me] = mine[b];", "    if (me < 64) part[me] = mine[b];"),
         BINS_FACTS, "not every element is written anew"),
        (BINS.replace("    part[me] = mine[b];", "    sums[0] = part[3];\n    part[me] = mine[b];"),
         BINS_FACTS, "an element is read before it is written anew"),
        (BINS.replace("for (int b = 0; b < BINS; ++b) {", "for (int b = 0; b < BINS; ++b) {\n"
                      "    b += 0;"), BINS_FACTS, "the outer counter changes in the body"),
        (BINS.replace("for (int b = 0; b < BINS; ++b) {", "int b = 0;\n  while (b++ < BINS) {"),
         BINS_FACTS, "a while loop"),
        (BINS.replace("int me = lane;", "unsigned char me = lane;"), BINS_FACTS,
         "a thread index alias of a type that cannot hold every index"),
        (COLUMNS.replace("  for (int col", "  for (int t = 0; t < 2; ++t)\n  for (int col"),
         COLUMNS_FACTS, "two loops around it"),
        (FLAGS.replace("per_block[blockIdx.x] = seen[0];", "per_block[blockIdx.x] = seen[0] + i;"),
         FLAGS_FACTS, "the counter is read after the loop (16 instead of 0 once rewritten)"),
        (FLAGS.replace("  int i = blockIdx.x", "  short i = blockIdx.x"), FLAGS_FACTS,
         "a counter type that is not an int"),
        (REPEATED, FLAGS_FACTS, "a counter declared before, inside another loop"),
    ],
)  # fmt: skip
def test_forms_that_are_not_the_same_reduction_are_left_alone(
    code: str, facts: Facts, why: str
) -> None:
    assert warp_shuffle_tail(code, facts) is None, why


@needs_nvcc
@pytest.mark.parametrize(("code", "facts"), [(BINS, BINS_FACTS), (COLUMNS, COLUMNS_FACTS),
                                             (FLAGS, FLAGS_FACTS)])  # fmt: skip
def test_the_rewrites_compile(code: str, facts: Facts, tmp_path: Path) -> None:
    new = warp_shuffle_tail(code, facts)
    assert new is not None
    assert_compiles(new, tmp_path, "forms")


PROGRAM = """\
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
{original}
namespace fast {{
{rewritten}
}}
int main() {{
  const int n = 1 << 20, blocks = 64;
  unsigned* keys;
  count_t *a, *b;
  cudaMallocManaged(&keys, sizeof(unsigned) * n);
  cudaMallocManaged(&a, sizeof(count_t) * BINS * blocks);
  cudaMallocManaged(&b, sizeof(count_t) * BINS * blocks);
  unsigned x = 12345;
  for (int k = 0; k < n; ++k) {{ x = x * 1664525u + 1013904223u; keys[k] = x >> 7; }}
  launch(keys, a, n);
  fast::launch(keys, b, n);
  cudaDeviceSynchronize();
  int differ = std::memcmp(a, b, sizeof(count_t) * BINS * blocks) != 0;
  printf("differ %d\\n", differ);
  return differ;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_a_reduction_per_bin_gives_the_same_counts_on_a_gpu(tmp_path: Path) -> None:
    rewritten = warp_shuffle_tail(BINS, BINS_FACTS)
    assert rewritten is not None
    body = rewritten.split("#define BINS 8\n", 1)[1]  # the type and macro are defined once
    assert_program_passes(PROGRAM.format(original=BINS, rewritten=body), tmp_path)


PLAIN = """\
__global__ void k(const int* in, int* out) {
  __shared__ int buf[128];
  PRE
  buf[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (i = blockDim.x / 2; i > 0; i >>= 1) {
    if (threadIdx.x < i) buf[threadIdx.x] += buf[threadIdx.x + i];
    __syncthreads();
  }
  POST
}
"""
K_FACTS = Facts(block_sizes={"k": 128})
DONE = "if (threadIdx.x == 0) out[blockIdx.x] = buf[0];"


def _plain(pre: str = "int i;", post: str = DONE, macro: str = "") -> str:
    return macro + PLAIN.replace("PRE", pre).replace("POST", post)


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (_plain("int i = 0; int* at = &i;", DONE.replace("buf[0]", "buf[0] + *at")),
         "the counter read after the loop through a pointer"),
        (_plain("int i = 0; int& same = i;", DONE.replace("buf[0]", "buf[0] + same")),
         "through a reference"),
        (_plain("int i = 0; auto now = [&] { return i; };",
                DONE.replace("buf[0]", "buf[0] + now()")), "through a lambda"),
        (_plain("int i = 0;", DONE.replace("buf[0]", "buf[0] + I_NOW"), "#define I_NOW i\n"),
         "through a macro"),
        (_plain("int i;", DONE.replace("buf[0]", "buf[0] + AT(5)"), "#define AT(j) buf[j]\n"),
         "an element other than the first read through a macro"),
        (_plain("int i, rounds = 0;\n again:", DONE + "\n  if (++rounds < 2) goto again;"),
         "a jump back runs the loop again after elements 1-31 were left different"),
    ],
)  # fmt: skip
def test_a_counter_or_element_reachable_another_way_is_refused(code: str, why: str) -> None:
    assert warp_shuffle_tail(_plain(), K_FACTS) is not None  # the plain form, `int i;` first
    assert warp_shuffle_tail(code, K_FACTS) is None, why


def test_the_outer_loop_may_hold_inner_loops_that_break_but_not_a_bound_read_from_memory() -> None:
    inner = BINS.replace(
        "    part[me] = mine[b];",
        "    count_t v = mine[b];\n    for (int r = 0; r < 4; ++r) { if (v > 9) break; v += r; }\n"
        "    part[me] = v;",
    )
    assert warp_shuffle_tail(inner, BINS_FACTS) is not None
    deref = BINS.replace("b < BINS;", "b < *bins;").replace(
        "count_t* sums, int n)", "count_t* sums, int n, const int* bins)"
    )
    assert warp_shuffle_tail(deref, BINS_FACTS) is None
