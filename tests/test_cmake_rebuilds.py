"""Real CMake (Ninja and Unix Makefiles) through the launcher: a second build is a no-op, and a
review decision recompiles exactly the translation unit that holds the region."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import needs_nvcc, normalized

pytestmark = [needs_nvcc, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "saxpy-stencil"
# Ninja 1.12+ dates an output by its command's start: the PyPI `ninja` (a dev dependency) is
# newer than Debian's, so both behaviours are tested.
PIP_NINJA = Path(sys.executable).parent / "ninja"
GENERATORS = [
    ("Ninja", None),
    pytest.param(
        "Ninja",
        str(PIP_NINJA),
        id="Ninja-pypi",
        marks=pytest.mark.skipif(not PIP_NINJA.exists(), reason="pip's ninja not installed"),
    ),
    ("Unix Makefiles", None),
]


def _cli(exe: str, *args: str, cwd: Path) -> str:
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _objects(build: Path) -> dict[str, int]:
    return {
        str(p.relative_to(build)): p.stat().st_mtime_ns
        for p in build.rglob("*.o")
        if p.is_file() and ".nvcc-opt" not in p.parts
    }


def _build(build: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["cmake", "--build", str(build), "-j", "2"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _recompiled(build: Path) -> list[str]:
    before = _objects(build)
    _build(build)
    after = _objects(build)
    return sorted(Path(k).name for k in after if before.get(k) != after[k])


def _configure(
    src: Path, build: Path, generator: str, launcher: str, make: str | None = None
) -> None:
    program = [f"-DCMAKE_MAKE_PROGRAM={make}"] if make else []
    done = subprocess.run(
        [
            "cmake",
            *program,
            "-S",
            str(src),
            "-B",
            str(build),
            "-G",
            generator,
            "-DCMAKE_CUDA_ARCHITECTURES=90",
            f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher}",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    return src


@pytest.mark.parametrize(("generator", "make"), GENERATORS)
def test_decisions_recompile_exactly_the_affected_unit(
    project: Path, tmp_path: Path, exe: str, store_env: Path, generator: str, make: str | None
) -> None:
    build = tmp_path / "build"
    _configure(project, build, generator, exe, make)
    _build(build)
    assert "stencil.cu.o" in {Path(k).name for k in _objects(build)}
    assert _recompiled(build) == [], "a second build is a no-op"

    status = json.loads(_cli(exe, "status", "--json", cwd=project))
    names = sorted(r["name"] for r in status["regions"])
    assert names == ["pair", "smooth_kernel"]

    out = _cli(exe, "import", str(project / "rewrites.json"), "--root", str(project), cwd=project)
    rewrite_id = out.split()[0].lstrip("#")
    assert _recompiled(build) == [], "a proposed rewrite changes nothing"

    _cli(exe, "review", "--force", "--accept", rewrite_id, "--reason", "test", cwd=project)
    assert _recompiled(build) == ["stencil.cu.o"]
    assert _recompiled(build) == []
    copy = next(build.rglob(".nvcc-opt/stencil.cu.o/stencil.cu"))
    assert "__restrict__" in copy.read_text()

    _cli(exe, "review", "--revoke", rewrite_id, "--reason", "test", cwd=project)
    assert _recompiled(build) == ["stencil.cu.o"]
    assert _recompiled(build) == []


def test_launcher_object_equals_plain_build_without_rewrites(
    project: Path, tmp_path: Path, exe: str, store_env: Path
) -> None:
    plain, ours = tmp_path / "plain", tmp_path / "ours"
    for build, launcher in ((plain, ""), (ours, exe)):
        _configure(project, build, "Ninja", launcher)
        _build(build)
    for name, _ in _objects(plain).items():
        assert normalized(plain / name) == normalized(ours / name), name


def test_compiler_checks_through_environment_launcher(
    project: Path, tmp_path: Path, exe: str, store_env: Path
) -> None:
    """CMAKE_CUDA_COMPILER_LAUNCHER in the environment also wraps CMake's own test compiles."""
    results = []
    for name, env_launcher in (("plain", None), ("ours", exe)):
        env = dict(os.environ)
        env.pop("CMAKE_CUDA_COMPILER_LAUNCHER", None)
        if env_launcher:
            env["CMAKE_CUDA_COMPILER_LAUNCHER"] = env_launcher
        build = tmp_path / name
        done = subprocess.run(
            ["cmake", "-S", str(project), "-B", str(build), "-G", "Ninja"],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        cache = (build / "CMakeCache.txt").read_text()
        results.append(
            sorted(
                line
                for line in cache.splitlines()
                if line.startswith(("CMAKE_CUDA_COMPILER:", "CMAKE_CUDA_ARCHITECTURES"))
            )
        )
        info = next(build.rglob("CMakeCUDACompiler.cmake")).read_text()
        results.append(
            sorted(x for x in info.splitlines() if "COMPILER_VERSION" in x or "_ID " in x)
        )
    assert results[0] == results[2] and results[1] == results[3]
