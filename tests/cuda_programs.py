"""Compile CUDA code with the real nvcc, and run a checking program on a GPU: the search
policy's rewrites must compile, and compute what the code they replace computes."""

from __future__ import annotations

import subprocess
from pathlib import Path


def assert_compiles(code: str, folder: Path, name: str = "code") -> None:
    source = folder / f"{name}.cu"
    source.write_text(code)
    done = subprocess.run(
        ["nvcc", "-arch=sm_90", "-c", str(source), "-o", str(folder / f"{name}.o")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def assert_program_passes(program: str, folder: Path) -> None:
    """Build `program` (its main returns 0 when the rewrite agrees with the original) and run it."""
    source, binary = folder / "check.cu", folder / "check"
    source.write_text(program)
    subprocess.run(["nvcc", "-arch=sm_90", "-o", str(binary), str(source)], check=True)
    done = subprocess.run([binary], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def ptx_of(code: str, folder: Path, name: str = "code") -> str:
    """The PTX nvcc makes of `code` for sm_90 (C++17); fails the test when it does not compile."""
    source, ptx = folder / f"{name}.cu", folder / f"{name}.ptx"
    source.write_text(code)
    done = subprocess.run(
        ["nvcc", "-arch=sm_90", "-std=c++17", "-ptx", str(source), "-o", str(ptx)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return ptx.read_text()
