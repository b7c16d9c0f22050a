"""The example application and cmake/NvccOpt.cmake, built with real CMake and nvcc."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "saxpy-stencil"
GENERATORS = ["Ninja", "Unix Makefiles"]
# Settings from the caller's environment that would change what CMake configures.
CMAKE_ENV = ("CMAKE_CUDA_COMPILER_LAUNCHER", "CMAKE_GENERATOR", "CUDAARCHS", "VIRTUAL_ENV")


def clean_env(path: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CMAKE_ENV}
    if path is not None:
        env["PATH"] = path
    return env


def run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env or clean_env())
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done


def gpu_available() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi"], capture_output=True).returncode == 0


def write_program(directory: Path, script: str) -> None:
    """A stand-in for the built program: the only edge check.py and run.sh talk to."""
    program = directory / "saxpy_stencil"
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(program.stat().st_mode | stat.S_IXUSR)


def run_check(build_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE / "check.py"), str(build_dir), *args],
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="session", params=GENERATORS)
def example_build(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("example-" + request.param.replace(" ", "-"))
    run(
        [
            "cmake",
            "-S",
            str(EXAMPLE),
            "-B",
            str(build),
            "-G",
            request.param,
            "-DCMAKE_CUDA_ARCHITECTURES=90",
        ]
    )
    run(["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2)])
    return build


@pytest.mark.slow
def test_example_builds_plain(example_build: Path) -> None:
    program = example_build / "saxpy_stencil"
    assert program.is_file() and os.access(program, os.X_OK)
    cache = (example_build / "CMakeCache.txt").read_text()
    assert "nvcc-opt" not in cache
    assert "CMAKE_CUDA_ARCHITECTURES:UNINITIALIZED=90" in cache


@pytest.mark.slow
@pytest.mark.gpu
def test_example_passes_its_check(example_build: Path) -> None:
    if not gpu_available():
        pytest.skip("no usable GPU (nvidia-smi missing or failing)")
    done = run_check(example_build)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check: PASS" in done.stdout


@pytest.mark.slow
def test_example_fails_on_cuda_error(example_build: Path) -> None:
    if gpu_available():
        pytest.skip("needs a machine without a usable GPU, so that CUDA calls fail")
    direct = subprocess.run(
        [str(example_build / "saxpy_stencil"), "--size", "1000"], capture_output=True, text=True
    )
    assert direct.returncode != 0
    assert "CUDA error" in direct.stderr
    assert run_check(example_build, "--size", "1000").returncode != 0


GOOD = "time_ms: 0.25\nchecksum: 1234.5\nweighted: 1250.5\ncheck: PASS max_rel_err=1e-07\n"


@pytest.mark.parametrize(
    ("script", "passes"),
    [
        (f"printf '{GOOD}'", True),
        (f"printf '{GOOD.replace('PASS', 'FAIL')}'; exit 1", False),
        (f"printf '{GOOD}'; exit 1", False),
        (f"printf '{GOOD}time_ms: 0.3\\n'", False),
        ("printf 'time_ms: 0.25\\ncheck: PASS max_rel_err=0\\n'", False),
        ("printf 'time_ms: fast\\nchecksum: 1\\ncheck: PASS max_rel_err=0\\n'", False),
        (f"printf '{GOOD.replace('weighted: 1250.5', '')}'", False),
    ],
)
def test_check_py_judges_program_output(tmp_path: Path, script: str, passes: bool) -> None:
    write_program(tmp_path, script)
    assert (run_check(tmp_path).returncode == 0) is passes


def test_run_sh_defaults_to_build_and_passes_options(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    write_program(tmp_path / "build", 'echo "args: $*"')
    done = subprocess.run(
        ["sh", str(EXAMPLE / "run.sh")], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.stdout == "args: \n"
    done = subprocess.run(
        ["sh", str(EXAMPLE / "run.sh"), "build", "--size", "8"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.stdout == "args: --size 8\n"


# cmake/NvccOpt.cmake, in a small project of its own. Configuring needs no nvcc-opt that works:
# a shell script stands in for it, and the one build that runs it logs its arguments.
MODULE_PROJECT = """
cmake_minimum_required(VERSION 3.18)
project(demo LANGUAGES CXX CUDA)
list(APPEND CMAKE_MODULE_PATH "{cmake_dir}")
include(NvccOpt)
add_library(plain STATIC k.cu)
add_library(cached STATIC k.cu)
set_property(TARGET cached PROPERTY CUDA_COMPILER_LAUNCHER ccache)
add_library(wrong STATIC k.cu)
set_property(TARGET wrong PROPERTY CUDA_COMPILER_LAUNCHER "ccache;nvcc-opt")
add_library(hostonly STATIC h.cpp)
add_library(headers INTERFACE)
add_subdirectory(sub)
if(MODE STREQUAL "all")
  nvcc_opt_enable_all()
else()
  nvcc_opt_enable(plain cached wrong no_such_target)
endif()
foreach(t plain cached wrong hostonly deep)
  get_target_property(launcher ${{t}} CUDA_COMPILER_LAUNCHER)
  message(STATUS "launcher ${{t}}=${{launcher}}")
endforeach()
"""


@pytest.fixture
def module_project(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "CMakeLists.txt").write_text(MODULE_PROJECT.format(cmake_dir=REPO / "cmake"))
    (source / "sub" / "CMakeLists.txt").write_text("add_library(deep STATIC ../k.cu)\n")
    (source / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    (source / "h.cpp").write_text("int h() { return 1; }\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "nvcc-opt"
    launcher.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "launcher.log"}\nexec "$@"\n')
    launcher.chmod(0o755)
    return source


def configure_module(source: Path, *args: str, with_nvcc_opt: bool = True) -> tuple[str, str]:
    """Configure the module project; returns (launchers as `name=value` lines, stderr)."""
    # A PATH with the build tools but without any nvcc-opt installed on this machine (links, so
    # that a virtual environment holding ninja or cmake next to nvcc-opt does not leak it in).
    tools_dir = source.parent / "tools"
    tools_dir.mkdir(exist_ok=True)
    for name in ("cmake", "ninja"):
        found = shutil.which(name)
        if found is not None and not (tools_dir / name).exists():
            (tools_dir / name).symlink_to(found)
    nvcc = shutil.which("nvcc")
    dirs = [str(tools_dir)] + ([str(Path(nvcc).parent)] if nvcc else []) + ["/usr/bin", "/bin"]
    if with_nvcc_opt:
        dirs.insert(0, str(source.parent / "bin"))
    done = run(
        [
            "cmake",
            "-S",
            str(source),
            "-B",
            str(source.parent / "build"),
            "-G",
            "Ninja",
            "-DCMAKE_CUDA_ARCHITECTURES=90",
            *args,
        ],
        env=clean_env(os.pathsep.join(dirs)),
    )
    lines = [
        line.split("launcher ", 1)[1] for line in done.stdout.splitlines() if "launcher " in line
    ]
    return "\n".join(lines), done.stderr


@pytest.mark.slow
def test_enable_puts_nvcc_opt_first(module_project: Path) -> None:
    launchers, stderr = configure_module(module_project)
    nvcc_opt = module_project.parent / "bin" / "nvcc-opt"
    assert launchers.splitlines() == [
        f"plain={nvcc_opt}",
        f"cached={nvcc_opt};ccache",
        f"wrong={nvcc_opt};ccache",
        "hostonly=launcher-NOTFOUND",
        "deep=launcher-NOTFOUND",
    ]
    assert "nvcc_opt_enable(no_such_target): no such target" in stderr


@pytest.mark.slow
def test_enable_all_covers_cuda_targets_of_the_tree(module_project: Path) -> None:
    launchers, _ = configure_module(module_project, "-DMODE=all")
    nvcc_opt = module_project.parent / "bin" / "nvcc-opt"
    assert launchers.splitlines() == [
        f"plain={nvcc_opt}",
        f"cached={nvcc_opt};ccache",
        f"wrong={nvcc_opt};ccache",
        "hostonly=launcher-NOTFOUND",
        f"deep={nvcc_opt}",
    ]


@pytest.mark.slow
def test_missing_nvcc_opt_warns_and_changes_nothing(module_project: Path) -> None:
    launchers, stderr = configure_module(module_project, with_nvcc_opt=False)
    assert launchers.splitlines()[:3] == [
        "plain=launcher-NOTFOUND",
        "cached=ccache",
        "wrong=ccache;nvcc-opt",
    ]
    assert "nvcc-opt: executable not found" in stderr


@pytest.mark.slow
def test_launcher_order_in_cache_variable_warns(module_project: Path) -> None:
    _, stderr = configure_module(module_project, "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache;nvcc-opt")
    assert "Put nvcc-opt first" in " ".join(stderr.split())


@pytest.mark.slow
def test_enabled_target_compiles_through_nvcc_opt(module_project: Path) -> None:
    configure_module(module_project)
    run(["cmake", "--build", str(module_project.parent / "build"), "--target", "plain"])
    calls = (module_project.parent / "launcher.log").read_text().splitlines()
    assert len(calls) == 1
    assert calls[0].split()[0].endswith("nvcc")
    assert str(module_project / "k.cu") in calls[0].split()
