"""Preprocessor conditionals inside a region: the parser sees one branch of each group, no
transform may change a directive or a branch it did not see, and kernels whose declarations hold
`#ifdef` are no longer opaque."""

from __future__ import annotations

import pytest

from nvcc_opt.search.conditionals import preserved, view
from nvcc_opt.search.cuda import Source
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.transforms import BY_NAME

LAUNCH_BOUNDS_IN_DECLARATION = """\
__global__
#ifdef WIDE
__launch_bounds__(128, 4)
#else
__launch_bounds__(64, 8)
#endif
void scale(int n, const float* __restrict__ in, float* __restrict__ out, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * in[i];
}
"""

TYPE_BY_CONDITION = """\
#if defined(USE_DOUBLE)
typedef double real;
#elif 0
typedef int real;
#else
typedef float real;
#endif
__global__ void axpy(int n, real a, const real* x, real* y)
{
  for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += gridDim.x * blockDim.x) {
#if DEBUG_LEVEL > 2
    if (i == 0) printf("axpy\\n");
#endif
    y[i] = a * x[i] + y[i];
  }
}
"""

BODY_WITH_BRANCHES = """\
#define FAST 1
__global__ void blend(const float* p, const float* q, float* r, int n)
{
    int k = threadIdx.x + blockDim.x * blockIdx.x;
    if (k >= n) return;
#ifdef FAST
    r[k] = 0.5f * (p[k] + q[k]);
#else
    r[k] = (p[k] + q[k]) / 2.0f;
#endif
}
"""


def test_a_declaration_with_ifdef_parses_and_offsets_are_kept() -> None:
    data = LAUNCH_BOUNDS_IN_DECLARATION.encode()
    seen = view(data)
    assert len(seen.data) == len(data)
    assert seen.data.count(b"\n") == data.count(b"\n")
    assert b"__launch_bounds__(128, 4)" in seen.data  # undecided: the first branch
    assert b"__launch_bounds__(64, 8)" not in seen.data and b"#" not in seen.data
    source = Source(LAUNCH_BOUNDS_IN_DECLARATION)
    assert source.errors() == 0
    [kernel] = source.kernels()
    assert kernel.name == "scale" and kernel.launch_bounds
    assert source.text(kernel.body).startswith("{")  # node text is the original's


def test_the_region_decides_what_it_defines() -> None:
    seen = view(BODY_WITH_BRANCHES.encode()).data.decode()
    assert "0.5f * (p[k] + q[k])" in seen and "/ 2.0f" not in seen
    undefined = BODY_WITH_BRANCHES.replace("#define FAST 1", "#undef FAST")
    seen = view(undefined.encode()).data.decode()
    assert "/ 2.0f" in seen and "0.5f *" not in seen


def test_elif_zero_and_else_chains() -> None:
    seen = view(TYPE_BY_CONDITION.encode()).data.decode()
    assert "typedef double real;" in seen  # defined(USE_DOUBLE) undecided: first branch
    assert "typedef int real;" not in seen and "typedef float real;" not in seen
    assert "printf" in seen  # `DEBUG_LEVEL > 2` undecided: shown
    assert Source(TYPE_BY_CONDITION).kernels()[0].name == "axpy"


@pytest.mark.parametrize(
    "code",
    ["#endif\n__global__ void k() {}\n", "#ifdef A\n__global__ void k() {}\n", "#else\n"],
)
def test_unbalanced_conditionals_give_no_view(code: str) -> None:
    seen = view(code.encode())
    assert seen.hidden == () and seen.data == code.encode()


def test_a_change_to_a_hidden_branch_or_directive_is_not_preserved() -> None:
    before = LAUNCH_BOUNDS_IN_DECLARATION.encode()
    assert preserved(before, before.replace(b"a * in[i]", b"a * __ldg(&in[i])"))
    assert not preserved(before, before.replace(b"(64, 8)", b"(64, 16)"))  # hidden branch
    assert not preserved(before, before.replace(b"#ifdef WIDE", b"#ifndef WIDE"))
    assert not preserved(before, before.replace(b"#else\n__launch_bounds__(64, 8)\n", b""))
    doubled = before.replace(b"void scale", b"void scale2") + before  # a copied group
    assert not preserved(before, doubled)


def test_transforms_work_on_kernels_with_conditionals_and_keep_every_branch() -> None:
    facts = Facts(no_alias=frozenset({"blend", "axpy"}))
    new = BY_NAME["ldg"].apply(BODY_WITH_BRANCHES, facts)
    assert new is not None
    assert "__ldg(&p[k]) + __ldg(&q[k])" in new  # the branch the parse saw
    assert "r[k] = (p[k] + q[k]) / 2.0f;" in new  # the other, untouched
    assert new.count("#ifdef FAST") == 1 and new.count("#endif") == 1
    new = BY_NAME["const_restrict"].apply(TYPE_BY_CONDITION, facts)
    assert new is not None and "const real* __restrict__ x" in new
    assert "typedef int real;" in new and "typedef float real;" in new


def test_a_transform_result_that_drops_a_branch_is_refused() -> None:
    from nvcc_opt.search.transforms import Transform

    def drops(code: str, facts: Facts) -> str | None:
        return code.replace("#else\n    r[k] = (p[k] + q[k]) / 2.0f;\n", "")

    assert Transform("drops", "test", drops).apply(BODY_WITH_BRANCHES, Facts()) is None
