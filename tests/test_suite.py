"""The kernel suite (benchmarks/suite): every app is a real CMake project that builds, has tagged
regions without pragma warnings, a run script and a valid nvcc-opt.toml. Running them needs a GPU
(marked `gpu`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.regions.scan import scan
from nvcc_opt.suite_bench import shared_folders
from tests.conftest import gpu_available, needs_nvcc

SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "suite"
APPS = (
    sorted(p for p in SUITE.iterdir() if (p / "CMakeLists.txt").exists()) if SUITE.exists() else []
)


def test_the_suite_has_apps() -> None:
    assert len(APPS) >= 20


@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_app_layout_and_regions(app: Path) -> None:
    for part in ("src/main.cu", "src/kernel.cu", "run.sh", "nvcc-opt.toml"):
        assert (app / part).exists(), part
    result = scan((app / "src" / "kernel.cu").read_bytes())
    assert result.regions and not result.warnings


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_app_builds_and_its_config_loads(app: Path, tmp_path: Path) -> None:
    root = tmp_path / app.name
    shutil.copytree(app, root)
    for shared in shared_folders(SUITE):  # headers the apps include as ../common
        shutil.copytree(shared, tmp_path / shared.name)
    for cmd in (
        ["cmake", "-S", root, "-B", root / "build", "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90"],
        ["cmake", "--build", root / "build"],
    ):
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    config = load(root)
    assert config.run.command is not None and config.time.source == "regex"
    if gpu_available():
        run = subprocess.run(
            ["sh", root / "run.sh", root / "build"], capture_output=True, text=True
        )
        assert run.returncode == 0 and "check: PASS" in run.stdout, run.stdout + run.stderr
