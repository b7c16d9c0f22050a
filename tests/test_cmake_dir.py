"""`pip install .` (not editable) ships NvccOpt.cmake, `nvcc-opt cmake-dir` prints its folder, and a
CMake project of one's own configures and builds with it from a shell where the virtual
environment is not active: the module names that installation's nvcc-opt by absolute path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt.cli import cli
from tests.conftest import needs_nvcc

REPO = Path(__file__).resolve().parents[1]

PROJECT = """\
cmake_minimum_required(VERSION 3.18)
project(mine LANGUAGES CUDA)
include(NvccOpt)
add_library(k STATIC k.cu)
nvcc_opt_enable(k)
get_target_property(launcher k CUDA_COMPILER_LAUNCHER)
message(STATUS "launcher k=${launcher}")
"""


def test_cmake_dir_prints_the_folder_of_the_module() -> None:
    result = CliRunner().invoke(cli, ["cmake-dir"])
    assert result.exit_code == 0, result.output
    folder = Path(result.output.strip())
    assert (folder / "NvccOpt.cmake").is_file() and folder == REPO / "nvcc_opt" / "cmake"
    # the checkout's cmake/ loads the same file
    forwarder = (REPO / "cmake" / "NvccOpt.cmake").read_text(encoding="utf-8")
    assert 'include("${CMAKE_CURRENT_LIST_DIR}/../nvcc_opt/cmake/NvccOpt.cmake")' in forwarder


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with nvcc-opt installed from this checkout, not editable; its
    dependencies come from this interpreter's site-packages through a .pth file."""
    base = tmp_path_factory.mktemp("pip")
    source = base / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for folder in ("nvcc_opt", "scripts"):
        shutil.copytree(
            REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w"]
    done = subprocess.run([*wheel, base / "dist", source], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = (base / "dist").glob("nvcc_opt-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    install = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    done = subprocess.run([*install, "--no-deps", built], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return venv


def _no_venv_env() -> dict[str, str]:
    """A shell where no nvcc-opt is on PATH and no virtual environment is active."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CMAKE_GENERATOR")}
    here = Path(sys.executable).parent
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != here
    )
    assert shutil.which("nvcc-opt", path=env["PATH"]) is None
    return env


@pytest.mark.slow
def test_a_pip_install_ships_the_module_and_names_it(installed: Path) -> None:
    (site,) = (installed / "lib").glob("python3*/site-packages")
    assert (site / "nvcc_opt" / "cmake" / "NvccOpt.cmake").is_file()
    assert not (site / "nvcc_opt" / "__editable__").exists()  # a real copy, not the checkout
    done = subprocess.run(
        [installed / "bin" / "nvcc-opt", "cmake-dir"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == site / "nvcc_opt" / "cmake"


@needs_nvcc
@pytest.mark.slow
def test_a_cmake_project_builds_through_the_installed_module(
    installed: Path, tmp_path: Path
) -> None:
    if shutil.which("ninja") is None:
        pytest.skip("needs ninja")
    (tmp_path / "CMakeLists.txt").write_text(PROJECT, encoding="utf-8")
    (tmp_path / "k.cu").write_text(
        "// @optimize\n__global__ void k(float* x) { x[0] = 1.0f; }\n", encoding="utf-8"
    )
    script = installed / "bin" / "nvcc-opt"
    module_dir = subprocess.run([script, "cmake-dir"], capture_output=True, text=True, check=True)
    env = {**_no_venv_env(), "NVCC_OPT_STORE": str(tmp_path / "store.db")}
    configure = [
        "cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
        f"-DCMAKE_MODULE_PATH={module_dir.stdout.strip()}",
    ]  # fmt: skip
    done = subprocess.run(configure, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"launcher k={script}\n" in done.stdout  # its own installation's, by absolute path
    build = ["cmake", "--build", "build", "-v"]
    done = subprocess.run(build, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{script} " in done.stdout and (tmp_path / "store.db").is_file()  # it ran
