"""The final verification's compute-sanitizer options on a real GPU: `--kernel-name kns=NAME`
watches only the kernels named, and `--launch-count N` only their first N launches (counted over
the named kernels alone). verify/final.py relies on both; a misspelt option would make every run
under the sanitizer fail, which the scripted tests in test_verify_sanitizer.py cannot see.

The program launches `fine` once and `stray` 12 times; `stray` writes one element past its
buffer from its 10th launch on."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.verify import final
from nvcc_opt.verify.measure import Build
from nvcc_opt.workspace.runner import Completed, ProcessRunner
from tests.conftest import gpu_available, needs_nvcc

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU"),
    pytest.mark.skipif(shutil.which("compute-sanitizer") is None, reason="no compute-sanitizer"),
    needs_nvcc,
]

APP = r"""
#include <cstdio>
__global__ void fine(float* p, int n) { int i = threadIdx.x; if (i < n) p[i] = 1.0f; }
__global__ void stray(float* p, int n, int launch) {
  int i = threadIdx.x;
  if (i < n) p[i] += 1.0f;
  if (i == 0 && launch >= 9) p[n] = 2.0f;  // one past the end, from the 10th launch on
}
int main() {
  const int n = 32;
  float* p = nullptr;
  cudaMalloc(&p, n * sizeof(float));
  fine<<<1, n>>>(p, n);
  for (int launch = 0; launch < 12; ++launch) stray<<<1, n>>>(p, n, launch);
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("done: %s\n", cudaGetErrorString(e));
  cudaFree(p);
  return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sanitized")
    (root / "build").mkdir()
    (root / "app.cu").write_text(APP, encoding="utf-8")
    subprocess.run(
        ["nvcc", "-arch=native", "-o", str(root / "build" / "app"), str(root / "app.cu")],
        check=True,
        capture_output=True,
    )
    (root / "nvcc-opt.toml").write_text(
        '[build]\ndir = "build"\ncommand = ["true"]\n\n[run]\ncommand = ["{build}/app"]\n'
        "timeout_s = 60\n",
        encoding="utf-8",
    )
    return root


def watched(root: Path, *extra: str) -> Completed:
    sanitizer = shutil.which("compute-sanitizer")
    assert sanitizer is not None
    return final._under_sanitizer(
        load(root), ProcessRunner(), Build(root / "build"), "0", sanitizer, "memcheck",
        list(extra), 120.0,
    )  # fmt: skip


def test_every_kernel_watched_finds_the_stray_write(built: Path) -> None:
    done = watched(built)
    assert done.exit_status == final.SANITIZER_EXIT, done.stdout + done.stderr
    assert "Invalid __global__ write" in done.stdout


def test_a_kernel_filter_leaves_the_other_kernels_unwatched(built: Path) -> None:
    done = watched(built, "--kernel-name", "kns=fine")
    assert done.exit_status == 0, done.stdout + done.stderr
    done = watched(built, "--kernel-name", "kns=fine", "--kernel-name", "kns=stray")
    assert done.exit_status == final.SANITIZER_EXIT, done.stdout + done.stderr


def test_a_launch_count_checks_only_the_first_launches_of_the_named_kernels(built: Path) -> None:
    """8 launches of `stray` (the launch of `fine` before them does not count) end before its
    10th, so nothing is found; 10 reach it."""
    done = watched(built, "--kernel-name", "kns=stray", "--launch-count", "8")
    assert done.exit_status == 0, done.stdout + done.stderr
    done = watched(built, "--kernel-name", "kns=stray", "--launch-count", "10")
    assert done.exit_status == final.SANITIZER_EXIT, done.stdout + done.stderr
