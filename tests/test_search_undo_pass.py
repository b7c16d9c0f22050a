"""A pass that undoes an earlier in-place update (search/undo_pass.py), the helper declarations it
relies on (search/signatures.py), and how the policy finds those declarations with `search` and
`file_viewer` when they are outside the region."""

from __future__ import annotations

from typing import Any

from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.policy import SearchPolicy
from nvcc_opt.search.signatures import readonly_params, signature_text
from nvcc_opt.search.transforms import BY_NAME
from tests.test_search_policy import ALL_TOOLS, bench_text, drive, gpu

DROP = BY_NAME["drop_undo"].apply

# A kernel alone, as a region: its helpers are declared elsewhere in the file.
SHIFTED = """\
__global__ void step(const double* __restrict__ px, const double* __restrict__ pv,
                     double* __restrict__ out, double dt, int n)
{
  int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n) return;
  double x[4], v[4], g;
  for (int c = 0; c < 4; ++c) { x[c] = px[4 * e + c]; v[c] = pv[4 * e + c]; }
  double h = 0.5 * dt;
  for (int c = 0; c < 4; ++c) x[c] -= h * v[c];
  gradient(x, v, &g);
  out[e] = g;
  for (int c = 0; c < 4; ++c) x[c] += h * v[c];
  out[n + e] = x[0] * x[3];
}
"""
READS = {"gradient": frozenset({0, 1})}  # gradient(const double* x, const double* v, double* g)


def test_an_undo_loop_becomes_a_restore_of_values_saved_in_the_first() -> None:
    new = DROP(SHIFTED, Facts(readonly_params=READS))
    assert new is not None
    assert "double x_kept[4];" in new
    assert "{ x_kept[c] = x[c]; x[c] -= h * v[c]; }" in new
    assert "for (int c = 0; c < 4; ++c) x[c] = x_kept[c];" in new
    assert "x[c] += h * v[c]" not in new


def test_refused_when_a_helper_between_may_write_the_shifted_array() -> None:
    assert DROP(SHIFTED, Facts()) is None  # the helper's declaration unknown
    assert DROP(SHIFTED, Facts(readonly_params={"gradient": frozenset({1})})) is None


def test_refused_when_the_operand_changes_or_the_array_is_written_between() -> None:
    facts = Facts(readonly_params=READS)
    for between in ("h = dt;", "x[1] = 0.0;", "v[2] *= 2.0;", "double* p = x;", "++h;"):
        code = SHIFTED.replace("  out[e] = g;\n", f"  out[e] = g;\n  {between}\n")
        assert DROP(code, facts) is None, between
    assert DROP(SHIFTED.replace("x[c] += h * v[c]", "x[c] += dt * v[c]"), facts) is None
    assert DROP(SHIFTED.replace("x[c] += h * v[c]", "x[c] -= h * v[c]"), facts) is None
    assert DROP(SHIFTED.replace("c < 4; ++c) x[c] +=", "c < 3; ++c) x[c] +="), facts) is None


def test_refused_on_global_memory_and_shared_arrays() -> None:
    facts = Facts(readonly_params=READS)
    reads_global = SHIFTED.replace("x[c] -= h * v[c]", "x[c] -= h * pv[c]").replace(
        "x[c] += h * v[c]", "x[c] += h * pv[c]"
    )
    assert DROP(reads_global, facts) is None
    shared = SHIFTED.replace("double x[4], v[4], g;", "__shared__ double x[4];\n  double v[4], g;")
    assert DROP(shared, facts) is None


def test_declarations_say_which_arguments_a_helper_cannot_write() -> None:
    code = """\
__device__ void a(const double* const x, double* y, const double b[][8], double v, int& r,
                  const int& q, const double** pp, const double* arr[4], const double (&w)[3]);
template <typename T> __device__ T b(const T* p, T q);
__device__ void c(double* x);
__device__ void c(const double* x);
"""
    found = readonly_params(code)
    assert found["a"] == frozenset({0, 2, 3, 5, 8})
    assert found["b"] == frozenset({0, 1})
    assert found["c"] == frozenset()  # two declarations: only what both allow


def test_a_signature_over_several_lines_is_read_to_its_closing_parenthesis() -> None:
    lines = ["void f( const double* x,", "         double (*g)(int),", "         int n)", "{"]
    assert signature_text(lines) == "\n".join(lines[:3]) + ";"
    assert readonly_params(signature_text(lines))["f"] == frozenset({0, 2})
    assert signature_text(["void f(const double* x,", "  int n"]) == ""


def test_the_policy_reads_a_helpers_declaration_before_dropping_the_undo() -> None:
    viewed: list[dict[str, Any]] = []

    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "search" and "gradient" in args["pattern"]:
            return (
                "[3 matches]\nsrc/mesh.cu (3)\n   40 | gradient(x, v, &g);\n"
                "   12 | static __device__ void gradient(const double* x,\n"
                "   90 |   double q = gradient2(x);\n"
            )
        if name == "file_viewer":
            viewed.append(args)
            return "   12 | static __device__ void gradient(const double* x,\n" + (
                "   13 |                                 const double* v, double* g)\n   14 | {\n"
            )
        if name == "benchmark_code":
            return bench_text(1.2 if "x_kept" in args["code"] else 1.0)
        return gpu(name, args)

    calls, answer = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS], region=SHIFTED)
    assert [v["start"] for v in viewed if v.get("path") == "src/mesh.cu"] == [12]
    timed = [args["code"] for name, args in calls if name == "benchmark_code"]
    assert any("x_kept" in code for code in timed)
    assert "x_kept" in answer["final_code"]
    first, numerics = answer["explanation"].splitlines()[:2]
    assert first.startswith("Search policy: [code changes: results may differ in the last bits]")
    assert numerics.startswith("Numerics: values restored exactly") and "rtol" in numerics
