"""`--from hecbench`: problems from fixture trees that imitate HeCBench's layouts.

tests/fixtures/hecbench is written for these tests (no HeCBench code): a Makefile-only
benchmark (vadd), add_hecbench_benchmark ones with COMPILE_OPTIONS/INCLUDE_DIRS and three kernels
in one file, one templated with __launch_bounds__ (scale), a cub::Sum() fixed for CUDA 13
(reduce), kernels in a header its main.cu includes (histo), a benchmarks.yaml, and one
benchmark per skip: data files (reader's arguments, loader's fopen,
bigrams' DVC pointer to an archive the checkout lacks), MPI (halo), no
PASS/FAIL (quiet), a removed cudaDeviceProp field (clock), an include outside its folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.tools.catalog import launcher_path
from nvcc_opt_train.importers import Skip, cuda13
from nvcc_opt_train.importers.hecbench import HecbenchError, HecbenchOptions, import_hecbench
from nvcc_opt_train.importers.makefile import read_makefile
from nvcc_opt_train.importers.tagging import find_kernels, tag_pair, tag_single
from nvcc_opt_train.problems_cli import reason_class
from nvcc_opt_train.problemset import Problem

FIXTURE = Path(__file__).parent / "fixtures" / "hecbench"
SCALE = ("scale_kernel", "shift_kernel", "square_kernel")


def run_import(
    dest: Path, options: HecbenchOptions | None = None
) -> tuple[dict[str, Problem], list[Skip], list[str]]:
    said: list[str] = []
    items = list(import_hecbench(FIXTURE, dest, options or HecbenchOptions(), said.append))
    problems = {p.id: p for p in items if isinstance(p, Problem)}
    return problems, [s for s in items if isinstance(s, Skip)], said


@pytest.fixture(scope="module")
def imported(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, Problem], list[Skip]]:
    dest = tmp_path_factory.mktemp("problems")
    problems, skips, _ = run_import(dest)
    return dest, problems, skips


def test_one_problem_per_kernel_and_per_pair(
    imported: tuple[Path, dict[str, Problem], list[Skip]],
) -> None:
    dest, problems, _ = imported
    assert set(problems) == {
        "hecbench-vadd-vadd",
        "hecbench-reduce-square",
        *(f"hecbench-scale-{k}" for k in SCALE),
        "hecbench-scale-scale_kernel+shift_kernel",
        "hecbench-scale-shift_kernel+square_kernel",
        "hecbench-scale-scale_kernel+square_kernel",
        "hecbench-histo-clear_bins",
        "hecbench-histo-histogram",
        "hecbench-histo-clear_bins+histogram",
    }
    assert sorted(p.name for p in dest.iterdir()) == sorted(problems)
    single = problems["hecbench-scale-scale_kernel"]
    assert (single.kind, single.kernels, single.regions) == (
        "single",
        ("scale_kernel",),
        ("kernels.cu:scale_kernel",),
    )
    pair = problems["hecbench-scale-scale_kernel+shift_kernel"]
    assert (pair.kind, pair.kernels, pair.regions) == (
        "pair",
        ("scale_kernel", "shift_kernel"),
        ("kernels.cu:scale_kernel+shift_kernel",),
    )
    wide = problems["hecbench-scale-scale_kernel+square_kernel"]
    assert wide.kernels == SCALE
    assert "the region also holds kernel shift_kernel (between the two)" in wide.notes
    assert {p.source for p in problems.values()} == {"hecbench"}
    assert {p.benchmark for p in problems.values()} == {"vadd", "reduce", "scale", "histo"}


def test_every_region_is_found_by_scan_with_its_text(
    imported: tuple[Path, dict[str, Problem], list[Skip]],
) -> None:
    dest, problems, _ = imported
    for problem in problems.values():
        (region,) = problem.regions
        file, name = region.split(":")
        source = (dest / problem.id / file).read_bytes()
        result = scan(source)
        assert result.warnings == ()
        assert [r.name for r in result.regions] == [name]
        assert region_text(source, result.regions[0]) == problem.region_text
    templated = problems["hecbench-scale-scale_kernel"].region_text
    assert templated.startswith("template <typename T, int BS>\n__global__ void\n__launch_bounds__")
    pair = problems["hecbench-scale-scale_kernel+shift_kernel"].region_text
    assert pair.startswith("template <typename T, int BS>") and "x[i] += by;" in pair
    assert "square_kernel" not in pair
    tagged = (dest / "hecbench-scale-shift_kernel" / "kernels.cu").read_text()
    assert "// @optimize\n__global__ void shift_kernel(" in tagged
    untouched = (dest / "hecbench-scale-shift_kernel" / "main.cu").read_text()
    assert untouched == (FIXTURE / "src" / "scale-cuda" / "main.cu").read_text()


def test_skips_name_the_benchmark_and_one_reason(
    imported: tuple[Path, dict[str, Problem], list[Skip]],
) -> None:
    _, _, skips = imported
    reasons = {(s.name, s.reason) for s in skips}
    assert reasons == {
        ("reader", "needs data files (its default arguments name ../data/reader/input.txt)"),
        ("loader", "needs data files (fopen of a fixed name in main.cu)"),
        (
            "bigrams",
            "needs data files (data.tar.gz is kept in DVC (data.tar.gz.dvc) and is not in "
            "this checkout: dvc pull fetches it)",
        ),
        ("halo", "needs MPI (#include <mpi.h> in main.cu)"),
        ("quiet", "nothing checks its results (its sources print no PASS/FAIL)"),
        ("clock", "CUDA 13: main.cu uses cudaDeviceProp::clockRate, removed in CUDA 13"),
        ("outside", "includes outside its folder (../vadd-cuda/shared.h)"),
        ("scale", "kernel unused_kernel (main.cu) is never launched"),
    }
    assert all(s.source == "hecbench" for s in skips)


def test_a_dvc_pointer_skips_only_while_its_data_is_absent(tmp_path: Path) -> None:
    from nvcc_opt_train.importers.hecbench_checks import dvc_data

    folder = tmp_path / "bench-cuda"
    shutil.copytree(FIXTURE / "src" / "bigrams-cuda", folder)
    reason = dvc_data(folder)
    assert reason is not None and "data.tar.gz" in reason and "dvc pull" in reason
    (folder / "data.tar.gz").write_bytes(b"fetched")  # after `dvc pull`
    assert dvc_data(folder) is None
    assert dvc_data(FIXTURE / "src" / "vadd-cuda") is None  # no pointer at all


def test_nvcc_opt_toml_loads_with_run_time_and_check(
    imported: tuple[Path, dict[str, Problem], list[Skip]],
) -> None:
    dest, problems, _ = imported
    configs = {}
    for problem_id in problems:
        (dest / problem_id / "build").mkdir(exist_ok=True)
        configs[problem_id] = load(dest / problem_id)
    scale = configs["hecbench-scale-shift_kernel"]
    assert scale.run.command == ("{build}/main", "4096", "3")
    assert scale.run.timeout_s == 120
    assert (scale.time.source, scale.time.unit) == ("regex", "us")
    assert scale.time.regex is not None
    found = scale.time.regex.search("Average kernel execution time: 12.5e-1 (us)\n")
    assert found is not None and found.group(1) == "12.5e-1"
    assert [r.pattern for r in scale.check.require] == ["PASS"]
    assert [r.pattern for r in scale.check.forbid] == ["FAIL"]
    assert scale.check.numbers == ()
    vadd = configs["hecbench-vadd-vadd"]
    assert vadd.run.command == ("{build}/main", "100000", "10")
    assert vadd.run.timeout_s == 300
    assert vadd.time.unit == "us" and vadd.time.regex is not None
    assert vadd.time.regex.search("Average kernel execution time: 3.25 (us)")
    reduce = configs["hecbench-reduce-square"]
    assert reduce.run.command == ("{build}/main", "100000")
    assert reduce.time.unit == "ms" and reduce.time.regex is not None
    assert reduce.time.regex.search("Reduction time: 0.731000 (ms)")


def test_notes_say_what_was_changed_and_assumed(
    imported: tuple[Path, dict[str, Problem], list[Skip]],
) -> None:
    dest, problems, _ = imported
    vadd = problems["hecbench-vadd-vadd"]
    assert "build: CMakeLists.txt generated from its Makefile, program main, C++17" in vadd.notes
    assert "run: arguments from the Makefile's run target" in vadd.notes
    assert "CUDA 13: cudaThreadSynchronize -> cudaDeviceSynchronize in main.cu" in vadd.notes
    assert any(
        n.startswith("build: dropped -std=c++17, -Xcompiler -Wall, -arch=sm_60") for n in vadd.notes
    )
    assert any(n.startswith("time: the sources' one timing printf") for n in vadd.notes)
    reduce = problems["hecbench-reduce-square"]
    assert "CUDA 13: cub::Sum() -> cuda::std::plus<>() in main.cu" in reduce.notes
    fixed = (dest / reduce.id / "main.cu").read_text()
    assert "cub::Sum" not in fixed and fixed.startswith("#include <cuda/std/functional>\n")
    scale = problems["hecbench-scale-scale_kernel"]
    assert "time: benchmarks.yaml's regex (first match), unit us" in scale.notes
    assert json.loads(json.dumps(scale.extra)) == {
        "args": ["4096", "3"],
        "hecbench_folder": "src/scale-cuda",
        "time": "regex (us)",
    }


def test_generated_cmake_has_sources_options_and_no_arch(
    imported: tuple[Path, dict[str, Problem], list[Skip]],
) -> None:
    dest, _, _ = imported
    scale = (dest / "hecbench-scale-shift_kernel" / "CMakeLists.txt").read_text()
    assert "add_executable(main main.cu kernels.cu)" in scale
    assert "${CMAKE_CURRENT_SOURCE_DIR}/include" in scale
    assert "target_compile_definitions(main PRIVATE SCALE_BY=2)" in scale
    assert "$<$<COMPILE_LANGUAGE:CUDA>:-use_fast_math>" in scale
    vadd = (dest / "hecbench-vadd-vadd" / "CMakeLists.txt").read_text()
    assert "BLOCK=256" in vadd and "-use_fast_math" in vadd
    for text in (scale, vadd):
        assert "sm_60" not in text and "-arch" not in text
        assert "set(CMAKE_CUDA_ARCHITECTURES 90)" in text
    copied = sorted(
        p.name for p in (dest / "hecbench-scale-shift_kernel").rglob("*") if p.is_file()
    )
    assert copied == sorted(["CMakeLists.txt", "kernels.cu", "main.cu", "nvcc-opt.toml", "scale.h"])


def test_caps_and_only(tmp_path: Path) -> None:
    options = HecbenchOptions(only=("scale-cuda",), max_pairs=1, max_kernels=2)
    problems, skips, said = run_import(tmp_path, options)
    assert set(problems) == {
        "hecbench-scale-scale_kernel",
        "hecbench-scale-shift_kernel",
        "hecbench-scale-scale_kernel+shift_kernel",
    }
    assert ("scale", "over max_kernels 2: square_kernel left out") in {
        (s.name, s.reason) for s in skips
    }
    assert said[0].startswith("hecbench: 1 candidate benchmarks")
    with pytest.raises(HecbenchError, match="--only: no benchmark nope"):
        run_import(tmp_path, HecbenchOptions(only=("nope",)))
    with pytest.raises(HecbenchError, match="not a HeCBench checkout"):
        list(import_hecbench(tmp_path / "missing", tmp_path, HecbenchOptions(), print))


def test_a_folder_already_there_is_kept_and_yielded_again(tmp_path: Path) -> None:
    options = HecbenchOptions(only=("vadd",))
    first, _, _ = run_import(tmp_path, options)
    kept = tmp_path / "hecbench-vadd-vadd" / "main.cu"
    kept.write_text("// kept\n")
    again, _, _ = run_import(tmp_path, options)
    assert again == first
    assert kept.read_text() == "// kept\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_kernel_in_a_header_is_tagged_in_the_cu_that_includes_it(
    imported: tuple[Path, dict[str, Problem], list[Skip]],
) -> None:
    """The launcher substitutes regions only in the file nvcc compiles: a kernel of kernels.h
    becomes a region of main.cu in the problem's copy (the header's text in place of its
    #include), and the header stays as it was, untagged and included by no one."""
    dest, problems, _ = imported
    for problem_id, region in (
        ("hecbench-histo-histogram", "histogram"),
        ("hecbench-histo-clear_bins+histogram", "clear_bins+histogram"),
    ):
        problem = problems[problem_id]
        assert problem.regions == (f"main.cu:{region}",)
        assert "the tagged kernel's header kernels.h inlined into main.cu" in problem.notes
        app = dest / problem_id
        main = (app / "main.cu").read_bytes()
        assert b'#include "kernels.h"' not in main and b"#pragma once" not in main
        (span,) = scan(main).regions
        assert span.name == region
        assert region_text(main, span) == problem.region_text
        header = (FIXTURE / "src" / "histo-cuda" / "kernels.h").read_bytes()
        assert (app / "kernels.h").read_bytes() == header
        assert main.index(b"#include <cstdlib>") < main.index(b"__global__ void clear_bins")
        assert main.index(b"__global__ void histogram") < main.index(b"int main(")


def test_a_header_that_cannot_move_is_one_skip_per_problem_naming_why(tmp_path: Path) -> None:
    """Included by two .cu files, the header's kernels cannot move into one of them: each
    problem is skipped with a reason of its own class, saying why."""
    root = tmp_path / "hec"
    shutil.copytree(FIXTURE, root)
    bench = root / "src" / "histo-cuda"
    (bench / "extra.cu").write_text('#include "kernels.h"\nvoid extra() {}\n')
    cmake = bench / "CMakeLists.txt"
    cmake.write_text(cmake.read_text().replace("SOURCES main.cu", "SOURCES main.cu extra.cu"))
    items = list(import_hecbench(root, tmp_path / "p", HecbenchOptions(only=("histo",)), print))
    skips = [i for i in items if isinstance(i, Skip)]
    assert not [i for i in items if isinstance(i, Problem)]
    assert len(skips) == 3
    assert skips[0].reason == (
        "header not moved: single clear_bins (kernels.h): the launcher substitutes regions only"
        " in the file nvcc compiles, and included 2 times (extra.cu, main.cu), not once"
    )
    assert {reason_class(s.reason) for s in skips} == {"header not moved"}


@pytest.mark.slow
def test_a_generated_problem_configures_and_builds(tmp_path: Path) -> None:
    """Real CMake + Ninja + nvcc for sm_90 (no run: no GPU here)."""
    if not (shutil.which("cmake") and shutil.which("ninja") and shutil.which("nvcc")):
        pytest.skip("needs cmake, ninja and nvcc")
    options = HecbenchOptions(only=("scale", "reduce"), max_kernels=2, max_pairs=1)
    problems, _, _ = run_import(tmp_path, options)
    for problem_id in ("hecbench-scale-scale_kernel+shift_kernel", "hecbench-reduce-square"):
        assert problem_id in problems
        app = tmp_path / problem_id
        build = str(app / "build")
        configure = ["cmake", "-S", str(app), "-B", build, "-G", "Ninja"]
        for command in (
            [*configure, "-DCMAKE_CUDA_ARCHITECTURES=90"],
            ["cmake", "--build", build],
        ):
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert (app / "build" / "main").is_file()


@pytest.mark.slow
def test_a_kernel_from_a_header_is_recorded_by_a_build_through_the_launcher(
    tmp_path: Path,
) -> None:
    """What `collect` ended with "the build recorded no region" before: the problem's region,
    moved out of kernels.h, is seen by a real CMake + Ninja + nvcc build through nvcc-opt."""
    if not (shutil.which("cmake") and shutil.which("ninja") and shutil.which("nvcc")):
        pytest.skip("needs cmake, ninja and nvcc")
    problems, _, _ = run_import(tmp_path / "set", HecbenchOptions(only=("histo",)))
    app = tmp_path / "set" / "hecbench-histo-histogram"
    assert problems["hecbench-histo-histogram"].regions == ("main.cu:histogram",)
    env = {**os.environ, "NVCC_OPT_STORE": str(tmp_path / "store.db")}
    build = str(tmp_path / "build")
    for command in (
        ["cmake", "-S", str(app), "-B", build, "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
         f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher_path()}"],
        ["cmake", "--build", build],
        [launcher_path(), "status"],
    ):  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{app / 'main.cu'}:" in done.stdout and " histogram (function)" in done.stdout


def test_kernels_found_and_tagged_in_awkward_sources() -> None:
    src = (
        b"\xef\xbb\xbftemplate <class real>\r\n__global__ void\r\nLAUNCH_BOUNDS (128, 4)\r\n"
        b"rate_kernel(real *x) { x[0] = 1; }\r\n"
        b"__global__ void declared_only(int *x);\r\n"
        b"#if 0\r\n__global__ void switched_off(int *x) { }\r\n#endif\r\n"
        b"// __global__ void in_a_comment(int *x) { }\r\n"
        b"template <> __global__ void special<int>(int *x) { }\r\n"
        b"__global__ void Ns::qualified(int *x) { x[0] = 2; }\r\n"
    )
    kernels, problems = find_kernels("k.cu", src)
    assert [(k.name, k.start_line, k.end_line) for k in kernels] == [
        ("rate_kernel", 1, 4),
        ("Ns::qualified", 11, 11),
    ]
    assert problems == [
        "a kernel in k.cu line 10: an explicit specialization (name<...>(...)) is not tagged"
    ]
    first = tag_single(src, kernels[0])
    assert not isinstance(first, str)
    assert first.source.startswith(b"\xef\xbb\xbf// @optimize\r\ntemplate <class real>\r\n")
    pair = tag_pair(src, kernels[0], kernels[1])
    assert not isinstance(pair, str)
    assert pair.region == "rate_kernel+Ns::qualified"
    assert pair.source.endswith(b"x[0] = 2; }\r\n// @optimize end\r\n")


def test_cuda13_fixes_only_what_is_mechanical() -> None:
    src = b"#include <cub/cub.cuh>\nauto op = cub::Max();\n// cub::Min() in a comment\n"
    fixed, notes = cuda13.fix(src)
    assert fixed == (
        b"#include <cuda/functional>\n#include <cub/cub.cuh>\nauto op = cuda::maximum<>();\n"
        b"// cub::Min() in a comment\n"
    )
    assert notes == ["cub::Max() -> cuda::maximum<>()"]
    assert cuda13.blocker(b"int v = __shfl_down(x, 1);") == (
        "uses __shfl_down without _sync, removed since CUDA 9"
    )
    assert (
        cuda13.blocker(b"#define __shfl(v, d) __shfl_sync(~0u, v, d)\nint a = __shfl(x, 0);")
        is None
    )
    assert cuda13.blocker(b"#ifdef USE_ROCM\nint a = __shfl(x, 0);\n#endif\n") is None
    assert (
        cuda13.blocker(b"texture<float, 1> tex;") == "uses texture references, removed in CUDA 12"
    )


def test_makefile_reader_follows_conditionals_and_substitutions(tmp_path: Path) -> None:
    (tmp_path / "a.cu").write_text("")
    (tmp_path / "b.cu").write_text("")
    (tmp_path / "Makefile").write_text(
        "OPTIMIZE = yes\nDEBUG = no\nsource = $(wildcard *.cu)\nobj = $(source:.cu=.o)\n"
        "CFLAGS := $(EXTRA_CFLAGS) -std=c++17 \\\n  -arch=$(ARCH)\n"
        "ifeq ($(DEBUG),yes)\n  CFLAGS += -g\nelse ifeq ($(OPTIMIZE),yes)\n  CFLAGS += -O3\n"
        "endif\nrun: main\n\t$(LAUNCHER) ./main 7 $(obj)\n"
    )
    mk = read_makefile(tmp_path / "Makefile")
    assert mk.get("source") == "a.cu b.cu"
    assert mk.get("CFLAGS") == "-std=c++17    -arch= -O3"
    assert mk.recipe("run") == ["./main 7 a.o b.o"]


def test_a_broken_benchmarks_yaml_is_one_line_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "hec"
    shutil.copytree(FIXTURE / "src" / "vadd-cuda", root / "src" / "vadd-cuda")
    (root / "benchmarks.yaml").write_text("vadd:\n  test: [unclosed\n")
    with pytest.raises(HecbenchError, match=r"benchmarks\.yaml:\d+: not readable YAML") as err:
        list(import_hecbench(root, tmp_path / "out", HecbenchOptions(), print))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_a_pair_across_an_if_block_is_not_tagged() -> None:
    src = (
        b"#ifdef FAST\n__global__ void a(int *x) { x[0] = 1; }\n#endif\n"
        b"__global__ void b(int *x) { x[0] = 2; }\n"
    )
    first, second = find_kernels("k.cu", src)[0]
    assert not isinstance(tag_single(src, first), str)
    assert tag_pair(src, first, second) == "the region would cut an #if ... #endif block in two"


def _bench(root: Path, name: str, cmake: str, makefile: str, sources: dict[str, str]) -> None:
    folder = root / "src" / f"{name}-cuda"
    folder.mkdir(parents=True)
    (folder / "CMakeLists.txt").write_text(cmake)
    (folder / "Makefile").write_text(makefile)
    for file, text in sources.items():
        (folder / file).write_text(text)


MAIN = (
    "#include <cstdio>\n__global__ void k(float* x) { x[threadIdx.x] = 1; }\n"
    "int main() { float* x; cudaMalloc(&x, 4); k<<<1, 1>>>(x); cudaDeviceSynchronize();\n"
    '  printf("PASS\\n"); return 0; }\n'
)


def test_the_makefiles_language_flags_join_a_build_read_from_its_cmake_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--expt-relaxed-constexpr in CFLAGS and -dc in the compile rule (HeCBench's own CMake adds
    relocatable device code to every benchmark; its CMake calls do not name it): kept."""
    root = tmp_path / "hec"
    makefile = (
        "CC = nvcc\nARCH = sm_60\nprogram = main\nsource = main.cu\n"
        "CFLAGS := -std=c++17 -arch=$(ARCH) --expt-relaxed-constexpr\n"
        "%.o: %.cu Makefile\n\t$(CC) $(CFLAGS) -dc $< -o $@\nrun: $(program)\n\t./$(program) 3\n"
    )
    cmake = "add_hecbench_benchmark(\n  NAME flags\n  MODEL cuda\n  SOURCES main.cu\n)\n"
    _bench(root, "flags", cmake, makefile, {"main.cu": MAIN})
    monkeypatch.chdir(tmp_path)  # a relative checkout path, as a user types it
    items = list(import_hecbench(Path("hec"), tmp_path / "p", HecbenchOptions(), lambda _: None))
    (made,) = [p for p in items if isinstance(p, Problem)]
    generated = (tmp_path / "p" / made.id / "CMakeLists.txt").read_text()
    assert "--expt-relaxed-constexpr" in generated
    assert "CUDA_SEPARABLE_COMPILATION ON" in generated
    assert any("from its Makefile" in note for note in made.notes)


def test_include_dirs_outside_the_folder_are_skipped_from_a_relative_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "hec"
    cmake = (
        'set(INC_DIR "${CMAKE_CURRENT_LIST_DIR}/../other-cuda")\n'
        "add_hecbench_benchmark(\n  NAME near\n  MODEL cuda\n  SOURCES main.cu\n"
        "  INCLUDE_DIRS ${INC_DIR}\n)\n"
    )
    makefile = "CC = nvcc\nprogram = main\nsource = main.cu\nrun: $(program)\n\t./$(program)\n"
    _bench(root, "near", cmake, makefile, {"main.cu": MAIN})
    monkeypatch.chdir(tmp_path)
    items = list(import_hecbench(Path("hec"), tmp_path / "p", HecbenchOptions(), lambda _: None))
    assert [i.reason for i in items if isinstance(i, Skip)] == [
        "includes outside its folder (its build uses ../other-cuda)"
    ]
