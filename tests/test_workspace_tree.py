"""Private build trees with real CMake (Ninja, Make) and nvcc; error trimming; cache reading."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from nvcc_opt.launcher import candidate
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.workspace import cmake_cache
from nvcc_opt.workspace.runner import ProcessRunner
from nvcc_opt.workspace.tree import BuildResult, CopiedTree, PrivateTree, trim_errors
from tests.conftest import needs_nvcc

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "saxpy-stencil"
UNDEFINED = "undefined_thing"

NVCC_ERRORS = """\
[1/3] Building CUDA object k.o
FAILED: k.o
nvcc -c /src/e.cu -o k.o
/src/e.cu(2): error: identifier "undefined_a" is undefined
  __attribute__((global)) void k(int* p) { p[0] = undefined_a; }
                                                  ^

/src/e.cu(2): error: identifier "undefined_a" is undefined
  __attribute__((global)) void k(int* p) { p[0] = undefined_a; }
                                                  ^

/src/e.cu(3): warning #177-D: variable "v" was declared but never referenced
  int v;
      ^

/src/e.cu(7): error: too many arguments in function call
  void h(int* p) { k<<<1,1>>>(p, 3); }
                                 ^

3 errors detected in the compilation of "/tree/.nvcc-opt/k.o/e.cu".
ninja: build stopped: subcommand failed.
"""

GCC_AND_LINK_ERRORS = """\
g.cpp: In function 'int f()':
g.cpp:1:18: error: 'nope' was not declared in this scope
    1 | int f() { return nope; }
      |                  ^~~~
g.cpp:1:5: note: declared here
make[2]: *** [CMakeFiles/x.dir/build.make:76: g.o] Error 1
/usr/bin/ld: /tmp/cc.o: in function `main':
m.cpp:(.text+0x5): undefined reference to `g()'
collect2: error: ld returned 1 exit status
ptxas error   : Entry function '_Z1kPf' uses too much shared data (0x61a80 bytes, 0xc000 max)
"""


def test_trim_keeps_first_distinct_errors_with_context_and_region_lines() -> None:
    trimmed = trim_errors(NVCC_ERRORS, source=Path("/src/e.cu"), region_lines=(2, 5), limit=5)
    assert trimmed.splitlines() == [
        '/src/e.cu(2): error: identifier "undefined_a" is undefined (region line 1)',
        "  __attribute__((global)) void k(int* p) { p[0] = undefined_a; }",
        "                                                  ^",
        "/src/e.cu(7): error: too many arguments in function call",
        "  void h(int* p) { k<<<1,1>>>(p, 3); }",
        "                                 ^",
    ]


def test_trim_says_how_many_errors_were_cut() -> None:
    trimmed = trim_errors(NVCC_ERRORS, source=None, region_lines=None, limit=1)
    assert trimmed.splitlines()[0].endswith('"undefined_a" is undefined')
    assert trimmed.splitlines()[-1] == "[1 more errors not shown]"


def test_trim_reads_gcc_linker_and_ptxas_errors() -> None:
    trimmed = trim_errors(GCC_AND_LINK_ERRORS, source=Path("/p/g.cpp"), region_lines=(1, 1))
    assert trimmed.splitlines() == [
        "g.cpp:1:18: error: 'nope' was not declared in this scope (region line 1)",
        "    1 | int f() { return nope; }",
        "      |                  ^~~~",
        "g.cpp:1:5: note: declared here (region line 1)",
        "m.cpp:(.text+0x5): undefined reference to `g()'",
        "collect2: error: ld returned 1 exit status",
        "ptxas error   : Entry function '_Z1kPf' uses too much shared data (0x61a80 bytes, 0xc000"
        " max)",
    ]


def test_trim_without_error_lines_gives_the_last_lines() -> None:
    output = "\n".join(f"line {i}" for i in range(50)) + "\n\n"
    assert trim_errors(output, source=None, region_lines=None) == "\n".join(
        f"line {i}" for i in range(30, 50)
    )


CACHE = """\
# This is the CMakeCache file.
//Build type
CMAKE_BUILD_TYPE:STRING=Release
CMAKE_CUDA_COMPILER:FILEPATH=/usr/local/bin/nvcc
CMAKE_CUDA_ARCHITECTURES:UNINITIALIZED=90
CMAKE_CUDA_COMPILER_LAUNCHER:UNINITIALIZED=/old/bin/nvcc-opt;ccache
"ODD:NAME":STRING=a;b
DEPS_DIR:PATH=/home/u/build/_deps
OTHER_DIR:PATH=/home/u/build-other
CMAKE_CACHEFILE_DIR:INTERNAL=/home/u/build
CMAKE_HOME_DIRECTORY:INTERNAL=/home/u/src
CMAKE_GENERATOR:INTERNAL=Ninja
CMAKE_GENERATOR_PLATFORM:INTERNAL=
proj_BINARY_DIR:STATIC=/home/u/build
"""


def test_configure_command_keeps_the_users_entries_and_chains_the_launcher() -> None:
    entries = cmake_cache.parse(CACHE)
    command = cmake_cache.configure_command(entries, "/t", "/venv/bin/nvcc-opt")
    assert command == [
        "cmake",
        *("-S", "/home/u/src", "-B", "/t", "-G", "Ninja"),
        "-DCMAKE_BUILD_TYPE:STRING=Release",
        "-DCMAKE_CUDA_COMPILER:FILEPATH=/usr/local/bin/nvcc",
        "-DCMAKE_CUDA_ARCHITECTURES=90",
        "-DODD:NAME:STRING=a;b",
        "-DDEPS_DIR:PATH=/t/_deps",
        "-DOTHER_DIR:PATH=/home/u/build-other",
        "-DCMAKE_CUDA_COMPILER_LAUNCHER=/venv/bin/nvcc-opt;ccache",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
    ]


def test_configure_command_needs_a_configured_cache() -> None:
    with pytest.raises(ValueError, match="configure it first"):
        cmake_cache.configure_command(cmake_cache.parse("A:STRING=1\n"), "/t", "nvcc-opt")


# Real builds from here on.


def _digest(folder: Path) -> dict[str, str]:
    """Every file under `folder` by relative path, with the sha256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _names(result: BuildResult) -> list[str]:
    return [Path(p).name for p in result.recompiled]


def _candidate(path: Path, source: Path, region: str, marker: str, broken: bool = False) -> Path:
    """A candidate for `region`: its own text plus a marker global that lands in the object."""
    data = source.read_bytes()
    span = next(r for r in scan(data).regions if r.name == region)
    code = f'extern "C" const char nvcc_opt_marker[] = "{marker}";\n' + region_text(data, span)
    if broken:
        code = code.replace("int i =", f"int i = {UNDEFINED} +", 1)
    candidate.write(str(path), str(source), span.text_hash, code, [])
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    return src


def _user_build(project: Path, build: Path, generator: str, launcher: str, *options: str) -> Path:
    command = ["cmake", "-S", str(project), "-B", str(build), "-G", generator, *options]
    command += ["-DCMAKE_CUDA_ARCHITECTURES=90", f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher}"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return build


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("generator", ["Ninja", "Unix Makefiles"])
def test_candidates_rebuild_exactly_their_object_and_touch_nothing_of_the_user(
    project: Path, tmp_path: Path, exe: str, store_env: Path, generator: str
) -> None:
    user = _user_build(project, tmp_path / "user", generator, exe)
    before = (_digest(project), _digest(user))
    stencil = project / "src" / "stencil.cu"
    runner, trees = ProcessRunner(), tmp_path / "trees"
    tree = PrivateTree.create(user, "one", runner=runner, launcher=exe, root=trees)
    base = tree.build(candidate_file=None, timeout_s=600)
    assert base.ok, base.completed.stdout + base.completed.stderr
    assert "stencil.cu.o" in _names(base) and base.errors == ""
    obj = tree.path / next(p for p in base.recompiled if p.endswith("stencil.cu.o"))

    program = tree.path / "saxpy_stencil"
    linked = program.stat().st_mtime_ns
    good = _candidate(tmp_path / "good.json", stencil, "smooth_kernel", "CANDIDATE-ONE")
    built = tree.build(candidate_file=good, timeout_s=600)
    assert built.ok, built.completed.stdout + built.completed.stderr
    assert _names(built) == ["stencil.cu.o"] and b"CANDIDATE-ONE" in obj.read_bytes()
    assert program.stat().st_mtime_ns != linked and b"CANDIDATE-ONE" in program.read_bytes()
    assert tree.build(candidate_file=good, timeout_s=600).recompiled == ()

    bad = _candidate(tmp_path / "bad.json", stencil, "smooth_kernel", "X", broken=True)
    failed = tree.build(candidate_file=bad, timeout_s=600)
    assert not failed.ok and failed.completed.exit_status != 0
    first = failed.errors.splitlines()[0]
    assert first.startswith(f"{stencil}(8): error: ") and UNDEFINED in first
    assert first.endswith("(region line 4)") and ".nvcc-opt" not in failed.errors

    back = tree.build(candidate_file=None, timeout_s=600)
    assert back.ok and _names(back) == ["stencil.cu.o"]
    assert b"nvcc_opt_marker" not in obj.read_bytes()

    configured = (tree.path / "CMakeCache.txt").stat().st_mtime_ns
    again = PrivateTree.create(user, "one", runner=runner, launcher=exe, root=trees)
    assert again.path == tree.path
    assert (tree.path / "CMakeCache.txt").stat().st_mtime_ns == configured
    assert (_digest(project), _digest(user)) == before

    _user_build(project, user, generator, exe, "-DSMOOTH_RADIUS=3")
    PrivateTree.create(user, "one", runner=runner, launcher=exe, root=trees)
    assert "SMOOTH_RADIUS:STRING=3" in (tree.path / "CMakeCache.txt").read_text()


@needs_nvcc
@pytest.mark.slow
def test_two_trees_build_different_candidates_side_by_side(
    project: Path, tmp_path: Path, exe: str, store_env: Path
) -> None:
    user = _user_build(project, tmp_path / "user", "Ninja", exe)
    stencil = project / "src" / "stencil.cu"
    target = "CMakeFiles/saxpy_kernels.dir/src/stencil.cu.o"
    results: dict[str, tuple[PrivateTree, BuildResult]] = {}

    def build(label: str) -> None:
        tree = PrivateTree.create(
            user, label, runner=ProcessRunner(), launcher=exe, root=tmp_path / "trees"
        )
        marker = _candidate(tmp_path / f"{label}.json", stencil, "smooth_kernel", f"TREE-{label}")
        results[label] = tree, tree.build(candidate_file=marker, targets=[target], timeout_s=600)

    threads = [threading.Thread(target=build, args=(label,)) for label in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for label, other in (("a", "b"), ("b", "a")):
        tree, result = results[label]
        assert result.ok and result.recompiled == (target,), result.completed.stdout
        data = (tree.path / target).read_bytes()
        assert f"TREE-{label}".encode() in data and f"TREE-{other}".encode() not in data


KERNEL = """\
#include "scale.h"

// @optimize
__global__ void scale(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= FACTOR;
}
"""


@needs_nvcc
@pytest.mark.slow
def test_copied_tree_builds_a_plain_makefile_project(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    plain = tmp_path / "plain"
    (plain / ".git").mkdir(parents=True)
    (plain / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (plain / "k.cu").write_text(KERNEL)
    (plain / "scale.h").write_text("#define FACTOR 2.0f\n")
    (plain / "Makefile").write_text("k.o: k.cu scale.h\n\t$(NVCC) -arch=sm_90 -c k.cu -o k.o\n")
    (plain / "big.bin").write_bytes(b"\0" * 5000)
    before = _digest(plain)
    command = ["make", f"NVCC={exe} nvcc"]
    tree = CopiedTree.create(
        plain, "c", command, runner=ProcessRunner(), root=tmp_path / "trees", size_cap=4096
    )
    assert sorted(p.name for p in tree.path.iterdir()) == ["Makefile", "k.cu", "scale.h"]
    assert tree.source_path(plain / "k.cu") == tree.path / "k.cu"

    base = tree.build(candidate_file=None, timeout_s=300)
    assert base.ok and base.recompiled == ("k.o",), base.completed.stderr
    good = _candidate(tmp_path / "good.json", plain / "k.cu", "scale", "COPIED")
    built = tree.build(candidate_file=good, timeout_s=300)
    assert built.ok and built.recompiled == ("k.o",), built.completed.stderr
    assert b"COPIED" in (tree.path / "k.o").read_bytes()

    bad = _candidate(tmp_path / "bad.json", plain / "k.cu", "scale", "X", broken=True)
    failed = tree.build(candidate_file=bad, timeout_s=300)
    assert not failed.ok
    assert failed.errors.splitlines()[0].startswith("k.cu(7): error: ")
    assert failed.errors.splitlines()[0].endswith("(region line 4)")
    assert _digest(plain) == before
