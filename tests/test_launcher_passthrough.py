"""Pass-through: without an accepted rewrite the launcher is invisible (real nvcc)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import needs_nvcc, normalized, run

pytestmark = needs_nvcc

KERNEL = """\
__global__ void scale(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""
TAGGED = "// @optimize\n" + KERNEL
BROKEN = "// @optimize\n__global__ void broken(float* x) { x[0] = undefined_name; }\n"
WARNS = '#warning "from the source"\n' + TAGGED


def _compile_both(
    tmp_path: Path, exe: str, text: str, extra: list[str]
) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    (tmp_path / "k.cu").write_text(text)
    args = ["-c", "k.cu", "-arch=sm_90", "-o", "k.o", *extra]
    plain = run(["nvcc", *args], tmp_path)
    if (tmp_path / "k.o").exists():
        os.replace(tmp_path / "k.o", tmp_path / "plain.o")
    ours = run([exe, "nvcc", *args], tmp_path)
    return plain, ours


@pytest.mark.parametrize("text", [KERNEL, TAGGED], ids=["untagged", "tagged"])
@pytest.mark.parametrize("extra", [[], ["-rdc=true"]], ids=["whole", "rdc"])
def test_same_object_and_output_as_plain_nvcc(
    tmp_path: Path, exe: str, store_env: Path, text: str, extra: list[str]
) -> None:
    plain, ours = _compile_both(tmp_path, exe, text, extra)
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )
    assert normalized(tmp_path / "k.o") == normalized(tmp_path / "plain.o")


@pytest.mark.parametrize("text", [BROKEN, WARNS], ids=["error", "warning"])
def test_errors_and_warnings_pass_through_unchanged(
    tmp_path: Path, exe: str, store_env: Path, text: str
) -> None:
    plain, ours = _compile_both(tmp_path, exe, text, [])
    assert plain.stderr
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )


@pytest.mark.parametrize("args", [["--version"], ["-E", "k.cu"], ["-M", "k.cu"]])
def test_non_compile_modes_pass_straight_through(
    tmp_path: Path, exe: str, store_env: Path, args: list[str]
) -> None:
    (tmp_path / "k.cu").write_text(TAGGED)
    plain = run(["nvcc", *args], tmp_path)
    ours = run([exe, "nvcc", *args], tmp_path)
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )
    assert not store_env.exists()


def test_nested_launcher_does_not_recurse(tmp_path: Path, exe: str, store_env: Path) -> None:
    plain, _ = _compile_both(tmp_path, exe, TAGGED, [])
    nested = run([exe, exe, exe, "nvcc", "-c", "k.cu", "-arch=sm_90", "-o", "k.o"], tmp_path)
    assert nested.returncode == 0, nested.stderr
    assert normalized(tmp_path / "k.o") == normalized(tmp_path / "plain.o")


def test_missing_compiler_is_a_clear_error(tmp_path: Path, exe: str) -> None:
    done = run([exe, "no-such-nvcc", "-c", "k.cu"], tmp_path)
    assert done.returncode == 127
    assert b"no-such-nvcc" in done.stderr


def test_fast_path_imports_nothing_heavy(tmp_path: Path, exe: str, store_env: Path) -> None:
    """An untagged compile must not import sqlite3, hashlib or the launcher's slow path."""
    (tmp_path / "k.cu").write_text(KERNEL)
    done = run([exe, "true", "-c", "k.cu"], tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()}
    assert "nvcc_opt.entry" in imported
    assert not {"sqlite3", "hashlib", "nvcc_opt.launcher.main", "click"} & imported


def test_tagged_compile_records_the_region(tmp_path: Path, exe: str, store_env: Path) -> None:
    from nvcc_opt.store.api import Store

    (tmp_path / "k.cu").write_text(TAGGED)
    done = run([exe, "nvcc", "-c", "k.cu", "-arch=sm_90", "-o", "k.o"], tmp_path)
    assert done.returncode == 0, done.stderr
    with Store.open(store_env) as store:
        (region,) = store.regions()
    assert region.name == "scale"
    assert region.file == str((tmp_path / "k.cu").resolve())
    assert (region.start_line, region.end_line) == (2, 6)
    (compile_,) = region.compiles
    assert compile_.cwd == str(tmp_path)
    assert compile_.command[0] == "nvcc" and "k.cu" in compile_.command
    assert compile_.context.targets and "sm_90" in compile_.context.targets
    assert "release" in compile_.context.compiler_version


def test_ccache_behind_the_launcher_keeps_working(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    ccache = shutil.which("ccache")
    if ccache is None:
        pytest.skip("ccache not installed")
    (tmp_path / "k.cu").write_text(TAGGED)
    env = {"CCACHE_DIR": str(tmp_path / "cc"), "CCACHE_NOHASHDIR": "1"}
    for _ in range(2):
        done = run([exe, "ccache", "nvcc", "-c", "k.cu", "-arch=sm_90", "-o", "k.o"], tmp_path, env)
        assert done.returncode == 0, done.stderr
    stats = run([ccache, "--print-stats"], tmp_path, env).stdout.decode()
    counts = dict(line.split("\t", 1) for line in stats.splitlines() if "\t" in line)
    assert int(counts["direct_cache_hit"]) + int(counts.get("preprocessed_cache_hit", "0")) >= 1


def test_ccache_in_front_of_the_launcher_is_reported_once(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    ccache = shutil.which("ccache")
    if ccache is None:
        pytest.skip("ccache not installed")
    (tmp_path / "k.cu").write_text(TAGGED)
    env = {"CCACHE_DIR": str(tmp_path / "cc"), "CCACHE_RECACHE": "1"}  # never replay stderr
    cmd = [ccache, exe, "nvcc", "-c", "k.cu", "-arch=sm_90", "-o", "k.o"]
    first = run(cmd, tmp_path, env)
    second = run(cmd, tmp_path, env)
    assert first.returncode == 0 and second.returncode == 0
    assert first.stderr.count(b'CMAKE_CUDA_COMPILER_LAUNCHER="nvcc-opt;ccache"') == 1
    assert b"nvcc-opt;ccache" not in second.stderr
