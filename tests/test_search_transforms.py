"""The search policy's source transforms and launch facts, on a real tree-sitter parse."""

from __future__ import annotations

import pytest

from nvcc_opt.search.annotate import const_restrict, hoist, launch_bounds, ldg, restrict
from nvcc_opt.search.cuda import Source, squeeze
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.launches import (
    aliased,
    aliased_by_callers,
    constant,
    definitions,
    launches,
)
from nvcc_opt.search.observed_lines import search_lines
from nvcc_opt.search.unroll import unroll, unroll_runtime

ROWS = """\
__global__ void rows(int n, const float* A, const float* x, float* y, float* scratch) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
      sum += A[i * n + j] * x[j];
      scratch[j] = x[i] * A[i];
    }
    y[i] = sum;
  }
}
void launch(int n, const float* A, const float* x, float* y, float* s) {
  int block = 128;
  rows<<<(n + block - 1) / block, block>>>(n, A, x, y, s);
}
"""
ALL = Facts(block_sizes={"rows": 128}, no_alias=frozenset({"rows"}))


def test_pointer_facts_come_from_the_parse() -> None:
    (kernel,) = Source(ROWS).kernels()
    assert kernel.name == "rows" and kernel.params == ("n", "A", "x", "y", "scratch")
    by_name = {p.name: p for p in kernel.pointers}
    assert by_name["A"].read_only and by_name["A"].const and not by_name["A"].restrict
    assert by_name["x"].read_only and len(by_name["x"].reads) == 2
    assert by_name["y"].written and by_name["scratch"].written


def test_restrict_marks_every_pointer_of_kernels_whose_launches_do_not_alias() -> None:
    new = restrict(ROWS, ALL)
    assert new is not None
    assert "const float* __restrict__ A" in new and "float* __restrict__ scratch" in new
    assert restrict(ROWS, Facts()) is None  # no launch seen: no promise about aliasing


def test_const_restrict_only_on_read_only_pointers() -> None:
    new = const_restrict(ROWS.replace("const float* x", "float* x"), ALL)
    assert new is not None
    assert "const float* __restrict__ x" in new and "float* y," in new


def test_ldg_wraps_reads_never_writes() -> None:
    new = ldg(ROWS, ALL)
    assert new is not None
    assert "sum += __ldg(&A[i * n + j]) * __ldg(&x[j]);" in new
    assert "scratch[j] = __ldg(&x[i]) * __ldg(&A[i]);" in new and "__ldg(&y" not in new


def test_ldg_nests_inside_an_index() -> None:
    code = "__global__ void g(const int* idx, const float* v, float* out) {\n"
    code += "  out[0] = v[idx[3]];\n}\n"
    new = ldg(code, Facts(no_alias=frozenset({"g"})))
    assert new is not None and "out[0] = __ldg(&v[__ldg(&idx[3])]);" in new


def test_a_pointer_whose_address_escapes_counts_as_written() -> None:
    code = "__global__ void h(float* a, float* b) {\n  atomicAdd(&a[0], b[0]);\n}\n"
    by_name = {p.name: p for p in Source(code).kernels()[0].pointers}
    assert by_name["a"].written and by_name["b"].read_only


def test_hoist_reads_invariant_loads_once_before_the_loop() -> None:
    new = hoist(ROWS, ALL)
    assert new is not None
    assert "const float x_hoisted = x[i];\n    const float A_hoisted = A[i];\n    for" in new
    assert "scratch[j] = x_hoisted * A_hoisted;" in new
    assert "A[i * n + j]" in new  # depends on j: stays


def test_unroll_only_constant_trip_counts() -> None:
    code = (
        "#define R 3\n__global__ void s(const float* in, float* out, int n) {\n"
        "  float acc = 0.0f;\n  for (int k = -R; k <= R; ++k) acc += in[k + R];\n"
        "  for (int k = 0; k < n; ++k) acc += in[k];\n"
        "  for (int k = 0; k < 1000; ++k) acc += in[k];\n  out[0] = acc;\n}\n"
    )
    new = unroll(code, Facts())
    assert new is not None
    assert new.count("#pragma unroll") == 1
    assert "  #pragma unroll\n  for (int k = -R; k <= R; ++k)" in new
    runtime = unroll_runtime(code, Facts())
    assert runtime is not None and "  #pragma unroll 4\n  for (int k = 0; k < n; ++k)" in runtime


def test_loops_that_already_have_a_pragma_are_left_alone() -> None:
    code = "__global__ void s(float* o) {\n  #pragma unroll 2\n"
    code += "  for (int k = 0; k < 4; ++k) o[k] = 0;\n}\n"
    assert unroll(code, Facts()) is None


def test_launch_bounds_from_the_block_size() -> None:
    new = launch_bounds(ROWS, ALL)
    assert new is not None and "__global__ void __launch_bounds__(128) rows(" in new
    assert launch_bounds(new, ALL) is None


def test_launches_and_block_sizes() -> None:
    (launch,) = launches(ROWS)
    assert launch.kernel == "rows" and launch.args == ("n", "A", "x", "y", "s")
    assert constant(launch.block, definitions(ROWS)) == 128
    names = {"BX": "16", "kBlock": "dim3(BX, 8)"}
    assert constant("kBlock", names) == 128
    assert constant("dim3(32, 4, 2)", {}) == 256 and constant("n", {}) is None
    assert definitions("constexpr int kB = 256;\n#define W 4\ndim3 t(16, 16);") == {
        "kB": "256",
        "W": "4",
        "t": "dim3(16, 16)",
    }


def test_aliasing_is_read_from_the_launch_arguments() -> None:
    (same,) = launches("void f(float* p, int n) { k<<<1, 32>>>(n, p, p); }")
    assert aliased(same, [1, 2])
    (apart,) = launches("void f(float* p, float* q, int n) { k<<<1, 32>>>(n, p, q); }")
    assert not aliased(apart, [1, 2])


def test_search_observation_lines() -> None:
    observation = (
        "[2 matches]\nsrc/a.cu (2)\n   10 | constexpr int kB = 256;\n   22 |   k<<<g, kB>>>(x);"
    )
    assert search_lines(observation) == ["constexpr int kB = 256;", "  k<<<g, kB>>>(x);"]


@pytest.mark.parametrize("transform", [restrict, const_restrict, ldg, hoist, unroll, launch_bounds])
def test_code_the_grammar_cannot_parse_is_left_alone(transform: object) -> None:
    broken = ROWS.replace("y[i] = sum;", "y[i] = sum +;")
    assert transform(broken, ALL) is None  # type: ignore[operator]


def test_a_host_function_called_with_one_array_twice_aliases_its_launch() -> None:
    recursive = """\
__global__ void step(const int* in, int* out, int n) { out[0] = in[0] + n; }
void run(const int* in, int* out, int* scratch, int n) {
  step<<<1, 32>>>(in, out, n);
  if (n > 1) run(scratch, scratch, scratch + 1, n / 2);
}
"""
    assert aliased_by_callers(recursive, "step", [0, 1])
    assert not aliased_by_callers(recursive.replace("run(scratch, scratch,", "run(in, scratch,"),
                                  "step", [0, 1])  # fmt: skip
    assert not aliased_by_callers(recursive, "other", [0, 1])


def test_forms_are_compared_without_comments_but_with_their_strings() -> None:
    """Real code comments its steps; a comment never makes two statements differ, and a `//`
    inside a string is not a comment (the text after it is still compared)."""
    assert squeeze("s[t] += s[t + h];  // fold\n") == squeeze("s[t]+=s[t+h];")
    assert squeeze("a /* first */ + b") == "a+b"
    assert squeeze('printf("x // y"); n += 1;') == 'printf("x//y");n+=1;'
    assert squeeze("c = '/'; // done") == "c='/';"
