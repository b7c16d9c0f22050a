"""The kernel suite (benchmarks/suite): every app is a real CMake project that builds, has tagged
regions without pragma warnings, a run script and a valid nvcc-opt.toml. Running them needs a GPU
(marked `gpu`: each app at its default size and at its fresh-input arguments)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.bench.apps import shared_folders
from nvcc_opt.config import load
from nvcc_opt.regions.scan import scan
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


def _build(app: Path, tmp_path: Path) -> Path:
    """A copy of `app` (with the suite's shared headers beside it), configured and built."""
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
    return root


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_app_builds_and_its_config_loads(app: Path, tmp_path: Path) -> None:
    config = load(_build(app, tmp_path))
    assert config.run.command is not None and config.time.source == "regex"


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_app_runs_and_passes_its_check_on_a_gpu(app: Path, tmp_path: Path) -> None:
    """Before a bench spends GPU time on it: the app runs at its default size, passes its own
    check and prints the time the bench reads (and again at its fresh-input arguments)."""
    root = _build(app, tmp_path)
    config = load(root)
    for extra in ((), *config.verify.fresh_inputs):
        run = subprocess.run(
            ["sh", root / "run.sh", root / "build", *extra], capture_output=True, text=True
        )
        out = run.stdout + run.stderr
        assert run.returncode == 0 and "check: PASS" in run.stdout, (extra, out)
        assert config.time.regex is not None and config.time.regex.search(out), (extra, out)
