"""The search policy's preload of a short read-only run every lane reads alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.changes import transform_changes
from nvcc_opt.search.cuda import Source
from nvcc_opt.search.preload import preload_run
from nvcc_opt.search.transforms import Facts
from tests.conftest import gpu_available, needs_nvcc
from tests.cuda_programs import assert_compiles, assert_program_passes

FILTER = """\
constexpr int kTaps = 12;

// out[i] = sum over t of taps[t] * in[i + t]
__global__ void filter(const float* in, const float* taps, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int t = 0; t < kTaps; ++t) sum += taps[t] * in[i + t];
  out[i] = sum;
}

void launch(const float* in, const float* taps, float* out, long n) {
  filter<<<(n + 255) / 256, 256>>>(in, taps, out, n);
}
"""
FACTS = Facts(block_sizes={"filter": 256}, no_alias=frozenset({"filter"}))


def test_the_run_is_read_before_the_loop_four_floats_at_a_time_where_aligned() -> None:
    new = preload_run(FILTER, FACTS)
    assert new is not None
    assert 'static_assert((kTaps) > 0 && (kTaps) <= 256, "nvcc-opt: a run of 1 to 256");' in new
    assert "float nvcc_opt_taps[(kTaps)];" in new
    assert "if ((kTaps) % 4 == 0 && reinterpret_cast<unsigned long long>(taps) % 16 == 0) {" in new
    assert (
        "const ::float4 nvcc_opt_q = reinterpret_cast<const ::float4*>(taps)[nvcc_opt_v];" in new
    )  # `::`: a float4 of the user's own cannot stand in
    assert "nvcc_opt_taps[nvcc_opt_v] = taps[nvcc_opt_v];" in new  # unaligned: as before
    assert "sum += nvcc_opt_taps[t] * in[i + t];" in new  # in[i + t] differs per lane: alone
    assert "#pragma" not in new  # nvcc unrolls short constant loops itself; none is forced
    assert "preload_run" in [c.name for c in transform_changes(FILTER, FACTS)]


def test_doubles_go_two_at_a_time_and_a_pragma_stays_with_its_loop() -> None:
    code = (
        FILTER.replace("float", "double")
        .replace("0.0f", "0.0")
        .replace("  for (int t", "  #pragma unroll 4\n  for (int t")
    )
    new = preload_run(code, FACTS)
    assert new is not None and "const ::double2 nvcc_opt_q" in new
    assert "#pragma unroll 4\n  for (int t = 0;" in new


def test_a_run_from_any_constant_start_or_offset_is_read_before_the_loop() -> None:
    shifted = FILTER.replace("taps[t]", "taps[t + 1]")
    new = preload_run(shifted, FACTS)
    assert new is not None and "nvcc_opt_taps[t] * in[i + t]" in new
    assert "reinterpret_cast<const ::float4*>((taps + (1)))[nvcc_opt_v]" in new
    centred = FILTER.replace("int t = 0; t < kTaps", "int t = -kTaps; t <= kTaps").replace(
        "taps[t]", "taps[t + kTaps]"
    )
    new = preload_run(centred, FACTS)
    assert new is not None and "float nvcc_opt_taps[((kTaps) - (-kTaps) + 1)];" in new
    assert "nvcc_opt_taps[t - (-kTaps)] * in[i + t]" in new


@pytest.mark.parametrize(
    ("facts", "code", "why"),
    [
        (Facts(), FILTER, "a launch may pass taps as out too"),
        (FACTS, FILTER.replace("sum += taps[t]", "sum += in[i] > 0 ? 0.0f : taps[t]"),
         "a read in one arm of a conditional"),
        (FACTS, FILTER.replace("sum += taps[t] * in[i + t];",
                               "{ if (in[i + t] < 0) break; sum += taps[t]; }"),
         "the loop may stop early"),
        (FACTS, FILTER.replace("taps[t]", "taps[t + i]"), "not a constant offset"),
        (FACTS, FILTER.replace("taps[t] *", "taps[t] * taps[t + 1] *"), "two offsets"),
        (FACTS, FILTER.replace("int t = 0", "unsigned t = 1"), "an unsigned counter from 1"),
        (FACTS, FILTER.replace("t < kTaps", "t < n"), "the run's length is not constant"),
        (FACTS, FILTER.replace("  for (int t", "  if (n > 4) for (int t"),
         "the loop is not in a block: the loads would run where the loop does not"),
        (FACTS, FILTER.replace("sum += taps[t] * in[i + t];", "sum += scale(taps[t]);"),
         "a call in the loop may leave it"),
        (FACTS, FILTER.replace("float sum = 0.0f;", "float sum = taps[0];"),
         "a read outside the loop"),
        (FACTS, FILTER.replace("sum += taps[t] * in[i + t];", "{ sum += taps[t]; t += 0; }"),
         "the loop variable is assigned"),
        (FACTS, FILTER.replace("const float* taps", "const int* taps"),
         "not float or double elements"),
        (FACTS, FILTER.replace("  out[i] = sum;",
                               "  for (int u = 0; u < kTaps; ++u) sum += taps[u];\n  out[i] = 0;"),
         "two loops read the run"),
        (FACTS, FILTER.replace("const float* in", "const volatile float* in"),
         "a volatile parameter"),
        (FACTS, "#define kTaps 12\n" + FILTER.replace("constexpr int kTaps = 12;\n", ""),
         "a name the region defines as a macro"),
        (FACTS, FILTER.replace("sum += taps[t] * in[i + t];",
                               "sum += (in[i + t] > 0 and taps[t] > 0.5f) ? 1.0f : 0.0f;"),
         "`and` may skip the read, as `&&` may"),
        (FACTS, "__device__ float fmaxf(float a, int b);\n" + FILTER.replace(
            "sum += taps[t] * in[i + t];", "sum += fmaxf(taps[t], 0);"),
         "a function of the file's own named like a math function"),
        (FACTS, "__device__ float g_buf[64];\n" + FILTER.replace(
            "  out[i] = sum;", "  g_buf[1] = sum;\n  out[i] = sum;"),
         "the kernel writes a global array the run could lie in"),
        (FACTS, FILTER.replace("t < kTaps", "t < 1e1f"), "a floating-point bound"),
        (FACTS, "#define w 4\n" + FILTER, "a macro renaming a field the rewrite uses"),
        (FACTS, FILTER.replace("for (int t = 0;", "for (unsigned char t = 0;"),
         "a counter that could wrap before the bound"),
    ],
)  # fmt: skip
def test_runs_it_cannot_see_are_read_the_same_are_left_alone(
    facts: Facts, code: str, why: str
) -> None:
    assert preload_run(code, facts) is None, why


def test_a_written_run_is_left_alone() -> None:
    code = FILTER.replace("const float* taps", "float* taps").replace(
        "  out[i] = sum;", "  out[i] = sum;\n  taps[0] = 1.0f;"
    )
    assert preload_run(code, FACTS) is None


@needs_nvcc
def test_the_preloaded_kernel_compiles(tmp_path: Path) -> None:
    new = preload_run(FILTER, FACTS)
    assert new is not None
    assert_compiles(new, tmp_path)


PROGRAM = """\
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
{original}
namespace preloaded {{
{rewritten}
}}
int main() {{
  const long n = 100003;
  float *in, *taps, *a, *b;
  cudaMallocManaged(&in, sizeof(float) * (n + 16));
  cudaMallocManaged(&taps, sizeof(float) * 17);
  cudaMallocManaged(&a, sizeof(float) * n);
  cudaMallocManaged(&b, sizeof(float) * n);
  unsigned s = 12345;
  for (long k = 0; k < n + 16; ++k) {{
    s = s * 1664525u + 1013904223u;
    in[k] = (s >> 8) * 1e-7f - 0.8f;
  }}
  for (int k = 0; k < 17; ++k) taps[k] = 0.1f * k - 0.7f;
  int differ = 0;
  // taps aligned (the float4 path), then taps + 1 (not 16-byte aligned: one at a time)
  for (int shift = 0; shift < 2; ++shift) {{
    launch(in, taps + shift, a, n);
    preloaded::launch(in, taps + shift, b, n);
    if (cudaDeviceSynchronize() != cudaSuccess) return 2;
    for (long k = 0; k < n; ++k) differ += std::memcmp(&a[k], &b[k], sizeof(float)) != 0;
  }}
  printf("elements differing: %d\\n", differ);
  return differ == 0 ? 0 : 1;
}}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_the_preloaded_run_gives_the_same_results_bit_for_bit_on_a_gpu(tmp_path: Path) -> None:
    rewritten = preload_run(FILTER, FACTS)
    assert rewritten is not None
    assert_program_passes(PROGRAM.format(original=FILTER, rewritten=rewritten), tmp_path)


FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize(
    "path", sorted((FIXTURES / "unsafe_preload").glob("*.cu")), ids=lambda p: p.name
)
def test_no_run_is_preloaded_where_a_review_found_it_would_change_what_is_read(
    path: Path,
) -> None:
    """A review's inputs: `and`/`or` that may skip a read; a function of the file's own named
    like a math function that leaves the thread; a global array the kernel writes; a
    floating-point bound; a macro renaming a vector field; a counter that wraps."""
    code = path.read_text()
    kernels = Source(code).kernels()
    assert preload_run(code, Facts(no_alias=frozenset(k.name for k in kernels))) is None


@needs_nvcc
@pytest.mark.parametrize(
    "path", sorted((FIXTURES / "preload_names").glob("*.cu")), ids=lambda p: p.name
)
def test_a_user_float4_or_a_clashing_name_does_not_change_the_preload(
    path: Path, tmp_path: Path
) -> None:
    """A user type named float4 (fields in another order), a local named float4, a struct
    named like the array: the rewrite uses CUDA's own vector type and fresh names, and compiles."""
    code = path.read_text()
    kernels = Source(code).kernels()
    new = preload_run(code, Facts(no_alias=frozenset(k.name for k in kernels)))
    assert new is not None and "::float4" in new
    assert_compiles(new, tmp_path)
