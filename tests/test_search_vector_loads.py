"""The vectorized-load transform: element-wise kernels read and written 16 bytes at a time where
aligned, with a scalar tail; everything it cannot prove element-wise is refused. The positive
kernels are tests/fixtures/search_classes/vector_*.cu (test_search_classes.py checks that each
fires and compiles); here, what nvcc makes of them and the refusals one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search.transforms import Facts
from nvcc_opt.search.vector_loads import vector_loads
from tests.class_kernels import assert_ptx_has
from tests.conftest import needs_nvcc

POSITIVE = {
    "vector_saxpy_return.cu": ("ld.global.v4.f32", "st.global.v4.f32"),
    "vector_squared_diff_double.cu": ("ld.global.v2.f64", "st.global.v2.f64"),
    "vector_split_sign_bounds.cu": ("ld.global.nc.v4.f32", "st.global.v4.f32"),
    "vector_int_counts.cu": ("ld.global.v4.u32", "st.global.v4.u32"),
}
ADD = """\
__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""
FACTS = Facts(block_sizes={"add": 256}, no_alias=frozenset({"add"}))


def test_the_vector_path_and_the_scalar_tail() -> None:
    new = vector_loads(ADD, FACTS)
    assert new is not None
    assert "const ::float4 nvcc_opt_in_a = reinterpret_cast<const ::float4*>(a)[i];" in new
    assert "reinterpret_cast<::float4*>(c)[i] = nvcc_opt_out_c;" in new
    assert "nvcc_opt_out_c.w = nvcc_opt_in_a.w + nvcc_opt_in_b.w;" in new
    assert "reinterpret_cast<unsigned long long>(a) % 16 == 0" in new  # checked at run time
    assert "nvcc_opt_first + 4 <= (long long)(n) && nvcc_opt_first + 4 <= nvcc_opt_threads" in new
    assert "if (nvcc_opt_e < (long long)(n) && nvcc_opt_e < nvcc_opt_threads) {" in new
    assert "c[nvcc_opt_e] = a[nvcc_opt_e] + b[nvcc_opt_e];" in new
    assert "if (i < n)" not in new  # the guard is the two paths' bounds now


def test_a_compound_update_of_the_element_is_its_read_and_its_write() -> None:
    code = ADD.replace("c[i] = a[i] + b[i];", "c[i] *= -a[i] + b[i];").replace(
        "float* c", "float* __restrict__ c"
    )
    new = vector_loads(code, FACTS)
    assert new is not None
    assert "const ::float4 nvcc_opt_in_c = reinterpret_cast<const ::float4*>(c)[i];" in new
    assert "nvcc_opt_out_c.y = nvcc_opt_in_c.y * (-nvcc_opt_in_a.y + nvcc_opt_in_b.y);" in new
    assert "c[nvcc_opt_e] *= -a[nvcc_opt_e] + b[nvcc_opt_e];" in new


@pytest.mark.parametrize(
    ("facts", "code", "why"),
    [
        (Facts(), ADD, "no launch seen: a could be c"),
        (FACTS, ADD.replace("a[i] + b[i]", "a[i + 1] + b[i]"), "a neighbour's element"),
        (FACTS, ADD.replace("a[i] + b[i]", "a[i] + i"), "the index as a value"),
        (FACTS, ADD.replace("c[i] = a[i] + b[i];", "{ c[i] = a[i]; c[i] += b[i]; }"),
         "a second update of an output"),
        (FACTS, ADD.replace("c[i] = a[i] + b[i];", "{ c[i] = a[i]; float t = c[i]; }"),
         "a read after the write"),
        (FACTS, ADD.replace("const float* b", "const double* b"), "two element types"),
        (FACTS, ADD.replace("a[i] + b[i]", "a[i] + helper(b[i])"), "a call that is not math"),
        (FACTS, ADD.replace("a[i] + b[i]", "a[i] + b[threadIdx.x]"), "another index"),
        (FACTS, ADD.replace("c[i] = a[i] + b[i];",
                            "for (int k = 0; k < 3; ++k) c[i] = a[i] + b[i];"), "a loop"),
        (FACTS, ADD.replace("float", "half"), "an element type with no 16-byte vector here"),
        (FACTS, ADD.replace("if (i < n) c[i]", "c[i]"), "no guard"),
        (FACTS, ADD.replace("i < n", "i < n - threadIdx.x"), "a bound that differs by thread"),
        (FACTS, ADD.replace("i < n", "i < n - (int)blockIdx.x"), "a bound that differs by block"),
    ],
)  # fmt: skip
def test_what_it_cannot_prove_element_wise_is_refused(facts: Facts, code: str, why: str) -> None:
    assert vector_loads(code, facts) is None, why


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_nvcc_emits_16_byte_loads_and_stores_for_sm_90(name: str, tmp_path: Path) -> None:
    assert_ptx_has(name, vector_loads, POSITIVE[name], tmp_path)
