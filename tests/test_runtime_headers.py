"""The channel's pure parts (nvcc_opt/runtime/*.h), compiled here with the host compiler.

Kernel names (names.h): the base name the channel reports for a demangled kernel signature is the
name the region's code uses, in every scope a kernel can live in. A kernel in an anonymous
namespace once reported an empty name, so its calls were never the region's (an honest rewrite
was rejected on the H200)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.runtime import build

DIGEST = Path(__file__).parent / "fixtures" / "runtime" / "digest_check.cpp"

CASES = {
    "k(float*, int)": "k",
    "ns::k<4>(float const*, int)": "k",
    "(anonymous namespace)::fused_update(float const*, float const*, float*, float*, int)": (
        "fused_update"
    ),
    "outer::(anonymous namespace)::inner::k(double*)": "k",
    "void ns::k<(int)4, float>(float*)": "k",
    "void k<ns::(anonymous namespace)::Tag>(ns::(anonymous namespace)::Tag*)": "k",
    "_Z3fooPf": "_Z3fooPf",  # the demangler refused it: kept whole
    "k()": "k",
}


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_base_names_of_demangled_signatures(tmp_path: Path) -> None:
    header = build.SOURCE.with_name("names.h")
    lines = [f'    std::puts(nvcc_opt::base_name("{s}").c_str());' for s in CASES]
    program = tmp_path / "names.cpp"
    program.write_text(
        f'#include <cstdio>\n#include "{header}"\nint main() {{\n' + "\n".join(lines) + "\n}\n",
        encoding="utf-8",
    )
    exe = tmp_path / "names"
    subprocess.run(["g++", "-std=c++17", "-o", str(exe), str(program)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert out.splitlines() == list(CASES.values())


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_digest_sees_every_change(tmp_path: Path) -> None:
    """tests/fixtures/runtime/digest_check.cpp: equal bytes, equal digests; one bit flipped at
    every position, one byte more, two 8-byte words swapped: a different digest."""
    exe = tmp_path / "digest"
    include = f"-I{build.SOURCE.parent}"
    subprocess.run(["g++", "-std=c++17", "-O2", include, "-o", str(exe), str(DIGEST)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert out.splitlines()[-1] == "failures 0", out[-2000:]


ELEMENTS = Path(__file__).parent / "fixtures" / "runtime" / "elements_check.cpp"


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_half_and_bfloat16_elements_convert_as_the_gpu_rounds(tmp_path: Path) -> None:
    """tests/fixtures/runtime/elements_check.cpp: every half and bfloat16 value survives a round
    trip through float; 430,000 floats (random, and every halfway point) round to the value a
    search of all half and bfloat16 values finds nearest, ties to even, as __float2half_rn
    does; the kinds of the pointee names a demangled signature holds; an element changed as
    the state check changes it is changed."""
    exe = tmp_path / "elements"
    include = f"-I{build.SOURCE.parent}"
    subprocess.run(["g++", "-std=c++17", "-O2", include, "-o", str(exe), str(ELEMENTS)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert out.splitlines()[-1] == "failures 0", out[-2000:]
