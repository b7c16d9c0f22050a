"""The allowlist's exports rule on real nvcc preprocessing: a name the candidate declares at
namespace scope more often than the original (a new one, another overload, a specialization)
must not be one the code outside the region uses, or the candidate could change what that code
calls without touching it: a new non-const overload of the program's own `verify` beats the
const one, a specialization of the program's tolerance template loosens it, an operator on the
program's type redefines its comparison. Fresh names, types and operators on the region's own
types pass, as does an honest change of the kernel's own signature."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.verify.allowlist import check_candidate
from nvcc_opt.verify.preprocess import Preprocessed, preprocess
from nvcc_opt.verify.region_code import RegionCode
from nvcc_opt.verify.region_exports import exports
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import needs_nvcc

pytestmark = needs_nvcc

APP = """\
#include <cmath>
#include <cstdio>

struct Pair { float a, b; };
__host__ __device__ inline bool operator<(const Pair& x, const Pair& y) { return x.a < y.a; }

template <typename T> struct Tol { static constexpr double value = 1e-6; };
template <typename T> bool close_enough(T a, T b) { return std::fabs(a - b) <= Tol<T>::value; }

inline bool verify(const float* got, const float* want, int n)
{
    for (int i = 0; i < n; ++i)
        if (!close_enough(got[i], want[i])) return false;
    return true;
}

static int before_only = 3;

template <typename T> struct Checker { static const int slack; };
template <typename T> const int Checker<T>::slack = 0;
template <typename T> int slack_of() { return Checker<T>::slack; }

// @optimize begin scale
bool report(const float* y, int n);
__global__ void scale(float* y, const float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
// @optimize end

const int limit = 4;
bool report(const float* y, int n) { return n > 0 && y != nullptr; }

int main()
{
    float x[4] = {1, 2, 3, 4}, y[4] = {0, 0, 0, 0}, want[4] = {2, 4, 6, 8};
    Pair p{1, 2}, q{2, 1};
    scale<<<1, 4>>>(y, x, 2.0f, limit);
    std::printf("%d %d %d\\n", verify(y, want, limit) ? 1 : 0, p < q ? 1 : 0, before_only);
    return report(y, limit) ? slack_of<int>() : 1;
}
"""

KERNEL = """\
__global__ void scale(float* y, const float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""


class App:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.source = folder / "app.cu"
        self.source.write_text(APP, encoding="utf-8")
        self.data = self.source.read_bytes()
        self.span = next(r for r in scan(self.data).regions if r.name == "scale")
        self.words = ["nvcc", "-arch=sm_90", "-c", str(self.source), "-o", "app.o"]
        self.original = self.preprocess(region_text(self.data, self.span))

    def preprocess(self, code: str) -> Preprocessed:
        return preprocess(
            self.words, self.folder, self.data.decode(), self.span, code, runner=ProcessRunner()
        )

    def judge(self, code: str) -> list[str]:
        return check_candidate(self.original, self.preprocess(textwrap.dedent(code)))


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> App:
    return App(tmp_path_factory.mktemp("exports"))


def _exports_reasons(reasons: list[str]) -> list[str]:
    return [r for r in reasons if "code outside the region" in r or "name lookup" in r]


HIJACKS = {
    "a non-const overload of the program's verify": (
        KERNEL + "bool verify(float* got, float* want, int n) { return true; }\n",
        "declares function verify, a name the code outside the region also uses (",
    ),
    "a specialization of the program's tolerance": (
        KERNEL + "template <> struct Tol<float> { static constexpr double value = 1e30; };\n",
        "declares specialization Tol,",
    ),
    "a specialization of the program's comparison": (
        KERNEL + "template <> bool close_enough<float>(float a, float b) { return true; }\n",
        "declares specialization close_enough,",
    ),
    "an operator on the program's type": (
        KERNEL + "__host__ __device__ inline bool operator<(Pair& x, Pair& y) { return true; }\n",
        "declares operator< at namespace scope on types it does not define (Pair)",
    ),
    "a second overload of the kernel the program launches": (
        KERNEL + "__global__ void scale(float* y, float* x, float a, int n) { }\n",
        "declares function scale,",
    ),
    "a using-directive": (
        "using namespace std;\n" + KERNEL,
        "`using namespace std` at namespace scope",
    ),
    "an operator on an alias of the program's type": (
        KERNEL + "typedef Pair FreshP;\nbool operator<(FreshP& a, FreshP& b) { return false; }\n",
        "declares operator< at namespace scope on types it does not define (FreshP)",
    ),
    "a specialization of a static member of the program's template": (
        KERNEL + "template <> const int Checker<int>::slack = 5;\n",
        "declares specialization Checker,",
    ),
    "the region's prototype replaced by another overload's definition": (
        KERNEL + "bool report(float* y, int n) { return true; }\n",
        "declares function report,",
    ),
    "a variable the code after the region names": (
        "static const int limit_shadow = 1;\nnamespace { const int limit = 0; }\n" + KERNEL,
        "declares variable limit,",
    ),
}


@pytest.mark.parametrize("case", sorted(HIJACKS))
def test_a_declaration_that_reaches_outside_code_is_refused(app: App, case: str) -> None:
    code, expected = HIJACKS[case]
    reasons = app.judge(code)
    assert any(expected in r for r in reasons), reasons


def test_the_refusal_names_where_the_outside_code_uses_it(app: App) -> None:
    reasons = app.judge(HIJACKS["a non-const overload of the program's verify"][0])
    [reason] = [r for r in reasons if "verify" in r]
    assert "app.cu:" in reason and reason.endswith("at line 6 of the candidate")


HONEST = {
    "the kernel's own signature changed (read-only, restrict)": """\
        __global__ void scale(float* __restrict__ y, const float* __restrict__ x, float a, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = a * __ldg(&x[i]);
        }
        """,
    "fresh helpers, a fresh type with its operator, a fresh enum": """\
        enum ScaleMode { kScaleDirect, kScaleHalf };
        struct Span2 { int lo, hi; };
        __device__ inline Span2 operator+(Span2 s, int d) { return Span2{s.lo + d, s.hi + d}; }
        __device__ inline float scaled_value(float v, float a) { return a * v; }
        template <int Unroll> __device__ inline int first_index() { return Unroll * 0; }
        __global__ void scale(float* y, const float* x, float a, int n)
        {
            Span2 s = Span2{0, 0} + int(blockIdx.x * blockDim.x + threadIdx.x);
            int i = s.lo + first_index<kScaleDirect>();
            if (i < n) y[i] = scaled_value(x[i], a);
        }
        """,
    "operators on CUDA vector types, a prototype of the kernel": """\
        __device__ inline float4 operator*(float4 v, float s)
        {
            return make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
        }
        __device__ inline float2 operator+(const float2& a, const float2& b)
        {
            return make_float2(a.x + b.x, a.y + b.y);
        }
        __global__ void scale(float* y, const float* x, float a, int n);
        __global__ void scale(float* y, const float* x, float a, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (4 * i + 3 < n) {
                float4 v = reinterpret_cast<const float4*>(x)[i] * a;
                reinterpret_cast<float4*>(y)[i] = v;
            }
        }
        """,
    "the kernel as a template with a specialization of its own": """\
        template <int Unroll = 1>
        __global__ void scale(float* y, const float* x, float a, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = a * x[i];
        }
        template <>
        __global__ void scale<4>(float* y, const float* x, float a, int n)
        {
            int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
            for (int k = 0; k < 4; ++k) if (i + k < n) y[i + k] = a * x[i + k];
        }
        """,
    "a constant named like a parameter of a function before the region": """\
        constexpr int got = 256;
        __global__ void scale(float* y, const float* x, float a, int n)
        {
            int i = blockIdx.x * got + threadIdx.x - blockIdx.x * (got - blockDim.x);
            if (i < n) y[i] = a * x[i];
        }
        """,
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_declarations_outside_code_cannot_see_pass(app: App, case: str) -> None:
    assert _exports_reasons(app.judge(HONEST[case])) == []


def test_exports_reads_each_kind_of_namespace_scope_declaration(app: App) -> None:
    code = (
        textwrap.dedent("""\
        namespace { enum Color { kRed, kBlue }; }
        enum class Scoped { kOne };
        typedef float real_t;
        using index_t = int;
        template <> struct Tol<double> { static constexpr double value = 0; };
        struct Own { __device__ int get() const; };
        __device__ int Own::get() const { return 1; }
        extern "C" { __device__ int plain_c(int v) { return v; } }
        __device__ bool operator==(Own, Own) { return true; }
        """)
        + KERNEL
    )
    side = app.preprocess(code).sides[0]
    found = {(e.name, e.kind) for e in exports(RegionCode(side))}
    assert found == {
        ("Color", "class"), ("kRed", "enumerator"), ("kBlue", "enumerator"), ("Scoped", "class"),
        ("real_t", "type"), ("index_t", "type"), ("Tol", "specialization"), ("Own", "class"),
        ("plain_c", "function"), ("operator==", "function"), ("scale", "function"),
    }  # fmt: skip
