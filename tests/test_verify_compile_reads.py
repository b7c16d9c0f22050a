"""The code may not read where or when it is compiled (verify/preprocess.py, the allowlist's rule
7): the build's copy of the region's file, the allowlist's and the object line's each give the
compiler another name and run at another second, so code that reads the name or the time can
compile to the original under every check and to a cheat in the build. Measured, not listed:
every predefined macro that shows the file's name, the date or the time is refused, by what the
preprocessed text holds. `__FILE__`, `__FILE_NAME__` and `__LINE__` are the build's in every
compile (`#line`), and stay allowed. Real nvcc, the example's compile commands."""

from __future__ import annotations

import pytest

from tests.test_verify_allowlist import Example, example, region_text_of  # noqa: F401

KERNEL = """
__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{{
    const char* seen = {value};
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || seen[0] == 0) {{
        return;
    }}
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {{
        int j = min(max(i + k, 0), n - 1);
        acc += weights[k + kRadius] * in[j];
    }}
    out[i] = acc;
}}
"""
NAME = "the name of the file being compiled"
TIME = "the date and time of the compile"


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ("__BASE_FILE__", NAME),
        ("__DATE__", TIME),
        ("__TIME__", TIME),
        ("__TIMESTAMP__", TIME),
        ("__DATE__ + 4", TIME),
    ],
)
def test_code_that_reads_its_compile_is_refused(example: Example, value: str, what: str) -> None:  # noqa: F811
    reasons = example.judge("smooth_kernel", KERNEL.format(value=value))
    assert any(f"reads {what}" in r and "at line 4 of" in r for r in reasons), reasons


@pytest.mark.parametrize("value", ['"99:00:00"', "__FILE__", "__FILE_NAME__", '"" + __LINE__ % 1'])
def test_the_file_and_line_the_build_sees_are_allowed(example: Example, value: str) -> None:  # noqa: F811
    assert example.judge("smooth_kernel", KERNEL.format(value=value)) == []


def test_the_original_is_read_as_any_candidate_is(example: Example) -> None:  # noqa: F811
    assert example.original("smooth_kernel").reads == ()
    preprocessed = example.preprocess("smooth_kernel", KERNEL.format(value="__BASE_FILE__"))
    assert [what for what, _ in preprocessed.reads] == [NAME]
