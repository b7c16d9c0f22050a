"""The search policy's warp shuffles: the tail of a tree reduction, a block scan."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.changes import Change, compose, transform_changes
from nvcc_opt.search.shuffle import warp_shuffle_tail
from nvcc_opt.search.shuffle_scan import warp_shuffle_scan
from nvcc_opt.search.transforms import Facts
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

REDUCE = """\
constexpr int kBlock = 256;

__global__ void block_sum(const float* in, float* partial, int n) {
  __shared__ float buf[kBlock];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = buf[0];
}

void launch(const float* in, float* partial, int n) {
  block_sum<<<(n + kBlock - 1) / kBlock, kBlock>>>(in, partial, n);
}
"""
FACTS = Facts(block_sizes={"block_sum": 256})


def test_the_tree_stops_at_a_warp_and_the_first_warp_shuffles() -> None:
    new = warp_shuffle_tail(REDUCE, FACTS)
    assert new is not None
    assert "for (int stride = blockDim.x / 2; stride > 16; stride /= 2) {" in new
    assert "float nvcc_opt_sum = buf[threadIdx.x];" in new
    assert "__shfl_down_sync(0xffffffffu, nvcc_opt_sum, nvcc_opt_step)" in new
    assert "if (threadIdx.x == 0) buf[0] = nvcc_opt_sum;" in new
    tail = new.split("if (threadIdx.x == 0) buf[0] = nvcc_opt_sum;")[1]
    assert tail.index("__syncthreads();") < tail.index("partial[blockIdx.x] = buf[0];")


def test_the_block_constant_over_two_and_a_shift_are_the_same_loop() -> None:
    for start, update in (("kBlock / 2", "stride /= 2"), ("blockDim.x >> 1", "stride >>= 1")):
        code = REDUCE.replace("blockDim.x / 2", start).replace("stride /= 2", update)
        assert warp_shuffle_tail(code, FACTS) is not None, start


@pytest.mark.parametrize(
    ("facts", "code", "why"),
    [
        (Facts(), REDUCE, "the block size is not known"),
        (Facts(block_sizes={"block_sum": 96}), REDUCE, "not a power of two"),
        (Facts(block_sizes={"block_sum": 16}), REDUCE, "smaller than a warp"),
        (FACTS, REDUCE.replace("partial[blockIdx.x] = buf[0]", "partial[blockIdx.x] = buf[1]"),
         "an element other than the first is read afterwards"),
        (FACTS, REDUCE.replace("    __syncthreads();\n  }", "    __syncthreads();\n    n++;\n  }"),
         "the loop does something else too"),
        (FACTS, REDUCE.replace("buf[threadIdx.x] += buf", "buf[threadIdx.x] = buf"),
         "not a sum"),
        (FACTS, REDUCE.replace("__shared__ float buf", "__shared__ short buf"),
         "a type the shuffle does not carry"),
        (FACTS, REDUCE.replace("kBlock / 2", "kBlock / 2").replace(
            "  for (int stride", "  for (int r = 0; r < 2; ++r)\n  for (int stride"),
         "inside another loop"),
        (Facts(block_sizes={"block_sum": 128}), REDUCE.replace("blockDim.x / 2", "kBlock / 2"),
         "a start that is not half the launched block"),
    ],
)  # fmt: skip
def test_loops_it_cannot_see_are_the_same_reduction_are_left_alone(
    facts: Facts, code: str, why: str
) -> None:
    assert warp_shuffle_tail(code, facts) is None, why


def test_the_policy_offers_it_and_it_excludes_block_reshapes() -> None:
    names = [c.name for c in transform_changes(REDUCE, FACTS)]
    assert "warp_shuffle_tail" in names
    shuffle = Change("s", "", transform="warp_shuffle_tail")
    assert compose(REDUCE, FACTS, [shuffle, Change("h", "", transform="block_half")]) is None
    alone = compose(REDUCE, FACTS, [shuffle])
    assert alone is not None and "__shfl_down_sync" in alone[0]


@needs_nvcc
def test_the_rewrite_compiles(tmp_path: Path) -> None:
    new = warp_shuffle_tail(REDUCE, FACTS)
    assert new is not None
    assert_compiles(new, tmp_path, "reduce")


PROGRAM = """\
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
{original}
namespace fast {{
{rewritten}
}}
int main() {{
  const int n = 1000003;  // the last block is partly outside
  const int blocks = (n + 255) / 256;
  float *in, *a, *b;
  cudaMallocManaged(&in, sizeof(float) * n);
  cudaMallocManaged(&a, sizeof(float) * blocks);
  cudaMallocManaged(&b, sizeof(float) * blocks);
  unsigned x = 12345;
  for (int k = 0; k < n; ++k) {{ x = x * 1664525u + 1013904223u; in[k] = (x >> 8) * 1e-7f - 0.8f; }}
  launch(in, a, n);
  fast::launch(in, b, n);
  cudaDeviceSynchronize();
  int differ = 0;
  for (int k = 0; k < blocks; ++k) differ += std::memcmp(&a[k], &b[k], sizeof(float)) != 0;
  printf("blocks differing %d of %d\\n", differ, blocks);
  return differ == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_shuffled_tail_gives_the_same_sums_bit_for_bit_on_a_gpu(tmp_path: Path) -> None:
    rewritten = warp_shuffle_tail(REDUCE, FACTS)
    assert rewritten is not None
    program = PROGRAM.format(original=REDUCE, rewritten=rewritten)
    assert_program_passes(program, tmp_path)


SCAN = """\
constexpr int kBlock = 256;

__global__ void scan_blocks(const int* in, int* out, int n) {
  __shared__ int buf[kBlock];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset *= 2) {
    int add = threadIdx.x >= offset ? buf[threadIdx.x - offset] : 0;
    __syncthreads();
    buf[threadIdx.x] += add;
    __syncthreads();
  }
  if (i < n) out[i] = buf[threadIdx.x];
}

void launch(const int* in, int* out, int n) {
  scan_blocks<<<(n + kBlock - 1) / kBlock, kBlock>>>(in, out, n);
}
"""
SCAN_FACTS = Facts(block_sizes={"scan_blocks": 256})


def test_a_block_scan_becomes_warp_scans_and_a_scan_of_the_warps_totals() -> None:
    new = warp_shuffle_scan(SCAN, SCAN_FACTS)
    assert new is not None
    assert "__shfl_up_sync(0xffffffffu, nvcc_opt_value, nvcc_opt_offset)" in new
    assert "__shared__ int nvcc_opt_warp_totals[32];" in new
    assert "nvcc_opt_value += nvcc_opt_warp_totals[threadIdx.x / 32 - 1];" in new
    assert "buf[threadIdx.x] = nvcc_opt_value;" in new
    assert "offset < blockDim.x" not in new
    assert new.count("__syncthreads();") == 4  # the fill's, and three for the whole scan
    bounded = SCAN.replace("offset < blockDim.x", "offset < kBlock")
    assert warp_shuffle_scan(bounded, SCAN_FACTS) is not None
    assert "warp_shuffle_scan" in [c.name for c in transform_changes(SCAN, SCAN_FACTS)]


@pytest.mark.parametrize(
    ("facts", "code", "why"),
    [
        (Facts(), SCAN, "the block size is not known"),
        (Facts(block_sizes={"scan_blocks": 48}), SCAN, "not whole warps"),
        (Facts(block_sizes={"scan_blocks": 2048}), SCAN, "more than 1024 threads"),
        (SCAN_FACTS, SCAN.replace("__shared__ int buf", "__shared__ float buf"),
         "floats: another order of additions gives other values"),
        (SCAN_FACTS, SCAN.replace("  __syncthreads();\n  for", "  if (i >= n) return;\n  for"),
         "a thread may have returned: the full-mask shuffle needs every lane"),
        (SCAN_FACTS, SCAN.replace("buf[threadIdx.x] += add;", "buf[threadIdx.x] = add;"),
         "not a scan"),
        (SCAN_FACTS, SCAN.replace("offset *= 2", "offset *= 3"), "not doubling"),
        (Facts(block_sizes={"scan_blocks": 128}), SCAN.replace("offset < blockDim.x",
         "offset < kBlock"), "a bound that is not the launched block"),
    ],
)  # fmt: skip
def test_scans_it_cannot_see_are_the_same_are_left_alone(facts: Facts, code: str, why: str) -> None:
    assert warp_shuffle_scan(code, facts) is None, why


ALIAS = "  float* view = buf;\n  for"
SHADOW = "  {\n  float* buf = partial;\n  for"


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (REDUCE.replace("  __syncthreads();\n  for", "  if (i >= n) return;\n  for"),
         "a thread may have returned"),
        (REDUCE.replace("  for (int stride", ALIAS.replace("  for", "  for (int stride")).replace(
            "partial[blockIdx.x] = buf[0];", "partial[blockIdx.x] = view[threadIdx.x];"),
         "a pointer to the array reads other elements afterwards"),
        (REDUCE.replace("  for (int stride", SHADOW.replace("  for", "  for (int stride")).replace(
            "  if (threadIdx.x == 0) partial", "  }\n  if (threadIdx.x == 0) partial"),
         "the loop's array is another variable of the same name"),
        (REDUCE.replace("  for (int stride", "  #pragma unroll\n  for (int stride"),
         "a pragma applies to the loop"),
        (REDUCE.replace("int i = blockIdx.x * blockDim.x + threadIdx.x;",
                        "int i = blockIdx.x * blockDim.x + threadIdx.x + threadIdx.y;"),
         "the block may be 2D"),
    ],
)  # fmt: skip
def test_reductions_that_other_code_could_see_differ_are_left_alone(code: str, why: str) -> None:
    assert warp_shuffle_tail(code, FACTS) is None, why


# A reduction as real code writes it: dynamic shared memory, the thread index and block extent
# named once, a braced guard, a comment on every step (written here, not taken from the suite).
DYNAMIC = """\
__global__ void count_marked(const int* __restrict__ marks, int* __restrict__ per_block, int n)
{
  extern __shared__ int cache[];
  const int lid = threadIdx.x;
  const int width = blockDim.x;
  const int gid = blockIdx.x * width + lid;
  cache[lid] = (gid < n && marks[gid] != 0) ? 1 : 0;  // one flag per thread
  __syncthreads();
  for (int half = width / 2; half > 0; half /= 2) {
    if (lid < half) {
      cache[lid] += cache[lid + half];  /* fold the upper half down */
    }
    // every thread waits before the next fold
    __syncthreads();
  }
  if (lid == 0) per_block[blockIdx.x] = cache[0];
}
"""
DYNAMIC_FACTS = Facts(block_sizes={"count_marked": 128})


def test_a_reduction_in_dynamic_shared_memory_with_named_extents_and_comments() -> None:
    new = warp_shuffle_tail(DYNAMIC, DYNAMIC_FACTS)
    assert new is not None
    assert "for (int half = width / 2; half > 16; half /= 2) {" in new
    assert "int nvcc_opt_sum = cache[threadIdx.x];" in new
    assert "/* fold the upper half down */" in new  # the user's comments stay


def test_the_condition_changed_is_the_loops_own_not_its_words_in_a_comment() -> None:
    code = DYNAMIC.replace("half = width / 2;", "half = width / 2 /* while half > 0 */;")
    new = warp_shuffle_tail(code, DYNAMIC_FACTS)
    assert new is not None
    assert "/* while half > 0 */; half > 16; half /= 2)" in new


SECOND = "  extern __shared__ int cache[];\n  extern __shared__ int spare[];"
READ_SPARE = "  per_block[gid % 7] += spare[lid];\n  if (lid == 0) per_block"
HELPER = "__device__ int peek(int i) { extern __shared__ int other[]; return other[i]; }\n"


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (DYNAMIC.replace("  extern __shared__ int cache[];", SECOND).replace(
            "  if (lid == 0) per_block", READ_SPARE),
         "a second extern shared array in the kernel is the same memory"),
        ("extern __shared__ int scratch[];\n" + DYNAMIC,
         "an extern shared array at file scope is the same memory"),
        (HELPER + DYNAMIC,
         "a helper's extern shared array is the same memory"),
        (DYNAMIC.replace("const int width = blockDim.x;", "int width = blockDim.x;\n  width -= 0;"),
         "the extent's name is changed"),
    ],
)  # fmt: skip
def test_dynamic_shared_memory_that_another_name_may_reach_is_left_alone(
    code: str, why: str
) -> None:
    assert warp_shuffle_tail(code, DYNAMIC_FACTS) is None, why


@needs_nvcc
def test_the_dynamic_shared_rewrite_compiles(tmp_path: Path) -> None:
    new = warp_shuffle_tail(DYNAMIC, DYNAMIC_FACTS)
    assert new is not None
    assert_compiles(new, tmp_path)


def test_a_scan_whose_add_rounds_to_another_type_is_left_alone() -> None:
    """`int add` of a `long long` array cuts each partial sum to 32 bits: not the same sums."""
    wide = SCAN.replace("__shared__ int buf", "__shared__ long long buf")
    assert warp_shuffle_scan(wide, SCAN_FACTS) is None
    same = wide.replace("int add =", "long long add =")
    assert warp_shuffle_scan(same, SCAN_FACTS) is not None


@needs_nvcc
def test_the_scan_rewrite_compiles(tmp_path: Path) -> None:
    new = warp_shuffle_scan(SCAN, SCAN_FACTS)
    assert new is not None
    assert_compiles(new, tmp_path, "scan")


SCAN_PROGRAM = """\
#include <cstdio>
#include <cuda_runtime.h>
{original}
namespace fast {{
{rewritten}
}}
int main() {{
  const int n = 100003;  // the last block is partly outside
  int *in, *a, *b;
  cudaMallocManaged(&in, sizeof(int) * n);
  cudaMallocManaged(&a, sizeof(int) * n);
  cudaMallocManaged(&b, sizeof(int) * n);
  unsigned x = 777;
  for (int k = 0; k < n; ++k) {{ x = x * 1664525u + 1013904223u; in[k] = (int)(x >> 12) - 500000; }}
  launch(in, a, n);
  fast::launch(in, b, n);
  cudaDeviceSynchronize();
  int differ = 0;
  for (int k = 0; k < n; ++k) differ += a[k] != b[k];
  printf("elements differing %d of %d\\n", differ, n);
  return differ == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_warp_scan_gives_the_same_prefix_sums_on_a_gpu(tmp_path: Path) -> None:
    rewritten = warp_shuffle_scan(SCAN, SCAN_FACTS)
    assert rewritten is not None
    assert_program_passes(SCAN_PROGRAM.format(original=SCAN, rewritten=rewritten), tmp_path)
