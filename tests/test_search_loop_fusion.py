"""In-kernel loop fusion (search/loop_fusion.py): kernels written for these tests, of different
structure, where fusing same-range loops is provably safe, and the cases it must refuse."""

from __future__ import annotations

import pytest

from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.transforms import BY_NAME

FUSE = BY_NAME["fuse_loops"].apply

# 1. gather into local arrays, braced and unbraced bodies, pragmas, index renamed
GATHER = """\
__global__ void corners(const int* __restrict__ conn, const double* __restrict__ px,
                        const double* __restrict__ py, double* __restrict__ out, int n)
{
  int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) {
    int node[4];
    double lx[4], ly[4];
    #pragma unroll
    for (int c = 0; c < 4; ++c) {
      int g = conn[4 * e + c];
      node[c] = g;
    }
    // the x coordinates
    #pragma unroll
    for (int q = 0; q < 4; ++q)
      lx[q] = px[node[q]];
    #pragma unroll
    for (int c = 0; c < 4; ++c) ly[c] = py[node[c]];
    out[e] = lx[0] * ly[1] - lx[1] * ly[0];
  }
}
"""

# 2. a grid-stride kernel with two passes over a row held in registers (2D index, floats)
ROWS = """\
#define W 8
__global__ void normalize(float* __restrict__ img, int rows)
{
    for (int r = threadIdx.y + blockIdx.y * blockDim.y; r < rows; r += blockDim.y * gridDim.y) {
        float v[W];
        float w[W];
        for (unsigned i = 0; i < W; i++) v[i] = img[r * W + i];
        for (unsigned i = 0; i < W; i++) { w[i] = sqrtf(fabsf(v[i])) + 1.0f; }
        for (unsigned i = 0; i < W; i++) img[r * W + i] = v[i] / w[i];
    }
}
"""

# 3. a template kernel with __launch_bounds__ and a scalar each loop keeps to itself
TEMPLATED = """\
template <typename T, int N>
__global__ void __launch_bounds__(128) moments(const T* __restrict__ a, T* __restrict__ m1,
                                               T* __restrict__ m2, int n)
{
  const int t = threadIdx.x + blockDim.x * blockIdx.x;
  if (t >= n) return;
  T s[N], q[N];
  for (int k = 0; k < N; k += 1) s[k] = a[t * N + k];
  for (int k = 0; k < N; k += 1) q[k] = s[k] * s[k];
  m1[t] = s[0];
  m2[t] = q[0];
}
"""


def test_fuses_a_gather_chain_into_one_loop() -> None:
    new = FUSE(GATHER, Facts())
    assert new is not None
    assert new.count("for (") == 1
    assert "lx[c] = px[node[c]];" in new and "ly[c] = py[node[c]];" in new  # q renamed to c
    assert "// the x coordinates" in new
    assert new.count("#pragma unroll") == 1
    body = new[new.index("for (") :]
    assert body.index("node[c] = g;") < body.index("lx[c]") < body.index("ly[c]")


def test_fuses_three_passes_over_a_row() -> None:
    new = FUSE(ROWS, Facts())
    assert new is not None and new.count("for (unsigned i") == 1
    assert new.index("v[i] = img[") < new.index("w[i] = sqrtf") < new.index("img[r * W + i] = v")


def test_fuses_in_a_template_with_launch_bounds() -> None:
    new = FUSE(TEMPLATED, Facts())
    assert new is not None and new.count("for (int k") == 1
    assert "__launch_bounds__(128)" in new


def test_locals_of_the_same_name_keep_their_own_braces() -> None:
    code = """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b, float* __restrict__ c)
{
  float t[4];
  for (int i = 0; i < 4; ++i) { float v = a[i]; t[i] = v * v; }
  for (int i = 0; i < 4; ++i) { float v = t[i]; b[i] = v + 1.0f; }
  c[0] = t[0];
}
"""
    new = FUSE(code, Facts())
    assert new is not None and new.count("for (") == 1
    assert new.count("float v =") == 2 and new.count("{") >= 4


NEGATIVE = {
    "a scalar carried from one loop to the other": """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b)
{
  float sum = 0.0f;
  for (int i = 0; i < 8; ++i) sum += a[i];
  for (int i = 0; i < 8; ++i) b[i] = a[i] / sum;
}
""",
    "the second loop reads another index of what the first writes": """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b)
{
  float t[9];
  for (int i = 0; i < 8; ++i) t[i + 1] = a[i];
  for (int i = 0; i < 8; ++i) b[i] = t[i] + t[i + 1];
}
""",
    "pointers that may alias": """\
__global__ void k(float* a, float* b)
{
  for (int i = 0; i < 8; ++i) a[i] = 2.0f * a[i];
  for (int i = 0; i < 8; ++i) b[i] = a[i] + b[i];
}
""",
    "different ranges": """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b, float* __restrict__ c)
{
  for (int i = 0; i < 8; ++i) b[i] = a[i];
  for (int i = 0; i < 4; ++i) c[i] = a[i];
}
""",
    "a barrier in a body": """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b)
{
  __shared__ float s[8];
  for (int i = 0; i < 8; ++i) { s[i] = a[i]; __syncthreads(); }
  for (int i = 0; i < 8; ++i) b[i] = s[i];
}
""",
    "a call that is not pure math": """\
__device__ float f(float* p, int i);
__global__ void k(float* __restrict__ a, float* __restrict__ b)
{
  for (int i = 0; i < 8; ++i) a[i] = f(b, i);
  for (int i = 0; i < 8; ++i) b[i] = a[i];
}
""",
    "a body that changes the bound": """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b, int n)
{
  for (int i = 0; i < n; ++i) { b[i] = a[i]; if (a[i] < 0.0f) n = i; }
  for (int i = 0; i < n; ++i) b[i] += 1.0f;
}
""",
    "an index declared outside the loop": """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b)
{
  int i;
  for (i = 0; i < 8; ++i) b[i] = a[i];
  for (i = 0; i < 8; ++i) b[i] += 1.0f;
}
""",
    "a break": """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b)
{
  for (int i = 0; i < 8; ++i) { if (a[i] < 0.0f) break; b[i] = a[i]; }
  for (int i = 0; i < 8; ++i) b[i] += 1.0f;
}
""",
    "a statement between the loops": """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b, float* __restrict__ c)
{
  for (int i = 0; i < 8; ++i) b[i] = a[i];
  c[0] = b[3];
  for (int i = 0; i < 8; ++i) c[i + 1] = a[i];
}
""",
    "a write through a pointer made in the kernel": """\
__global__ void k(float* __restrict__ a, float* __restrict__ b)
{
  float* p = a + 1;
  for (int i = 0; i < 8; ++i) p[i] = b[i];
  for (int i = 0; i < 8; ++i) b[i] = a[i];
}
""",
}


@pytest.mark.parametrize("why", sorted(NEGATIVE))
def test_refuses(why: str) -> None:
    assert FUSE(NEGATIVE[why], Facts()) is None, why


def test_refuses_a_row_offset_the_bodies_change() -> None:
    code = """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b, int w)
{
  int row = blockIdx.x;
  for (int i = 0; i < 8; ++i) { b[row * w + i] = a[i]; row += 0; }
  for (int i = 0; i < 8; ++i) b[row * w + i] += 1.0f;
}
"""
    assert FUSE(code, Facts()) is None


def test_refuses_an_index_that_is_not_one_to_one() -> None:
    code = """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b)
{
  float t[8];
  for (int i = 0; i < 8; ++i) t[i % 4] = a[i];
  for (int i = 0; i < 8; ++i) b[i] = t[i % 4];
}
"""
    assert FUSE(code, Facts()) is None


def test_keeps_preprocessor_branches_inside_the_bodies() -> None:
    code = """\
__global__ void k(const float* __restrict__ a, float* __restrict__ b, float* __restrict__ c)
{
  for (int i = 0; i < 8; ++i) {
#ifdef SCALE
    b[i] = 2.0f * a[i];
#else
    b[i] = a[i];
#endif
  }
  for (int i = 0; i < 8; ++i) c[i] = b[i] + 1.0f;
}
"""
    new = FUSE(code, Facts())
    assert new is not None and new.count("for (") == 1
    assert "#ifdef SCALE" in new and "#else\n    b[i] = a[i];\n#endif" in new
