from __future__ import annotations

import posixpath
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nvcc_opt.launcher.argv import (
    CompileJob,
    PassThrough,
    parse,
    split_options_text,
    with_source,
)
from nvcc_opt.launcher.option_table import ALL_OPTIONS

CWD = "/w"
SOURCES = {"a.cu": "__global__ void k() {}\n", "b.cpp": "int f() { return 1; }\n"}
SOURCES["kernel.inc"] = SOURCES["a.cu"]
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="needs nvcc")


def reader(files: dict[str, str]) -> Callable[[str], str]:
    def read(path: str) -> str:
        try:
            return files[posixpath.relpath(path, CWD)]
        except KeyError:
            raise FileNotFoundError(path) from None

    return read


@dataclass(frozen=True)
class Case:
    args: list[str]
    expect: dict[str, object]
    files: dict[str, str] = field(default_factory=dict)
    nvcc_accepts: bool = True  # False: nvcc 13 itself refuses it; only our reading is checked


def job_case(args: str, files: dict[str, str] | None = None, **expect: object) -> Case:
    return Case(args.split(), expect, files or {})


O3 = ("-c", "-O3")
JOBS = [
    job_case("-c a.cu", source="a.cu", source_index=1, language_cu=True, output=None),
    job_case("-c a.cu", key_flags=("-c",), targets=(), rdc=False, host_compiler=""),
    job_case("-c -o a.o a.cu", source_index=3, output="a.o", key_flags=("-c",)),
    job_case("-c a.cu -o=a.o", output="a.o", key_flags=("-c",)),
    job_case("-c a.cu --output-file a.o", output="a.o", key_flags=("-c",)),
    job_case("-c a.cu --output-file=a.o", output="a.o", key_flags=("-c",)),
    job_case("-c b.cpp", source="b.cpp", language_cu=False),
    job_case("-c -rdc=true a.cu", rdc=True, key_flags=("-c", "-rdc=true")),
    job_case("-c -rdc true a.cu", rdc=True, key_flags=("-c", "-rdc", "true")),
    job_case("-c --relocatable-device-code=true a.cu", rdc=True),
    job_case("-c --relocatable-device-code true a.cu", rdc=True),
    job_case("-c -rdc=false a.cu", rdc=False),
    job_case("-dc a.cu", rdc=True, key_flags=("-dc",)),
    job_case("--device-c a.cu", rdc=True),
    job_case("-dw a.cu", rdc=False),
    job_case("-c -x cu kernel.inc", source="kernel.inc", language_cu=True),
    job_case("-c --x=cu kernel.inc", language_cu=True, key_flags=("-c", "--x=cu")),
    job_case("-c -x=cu kernel.inc", language_cu=True),
    job_case("-c kernel.inc --x cu", language_cu=True, source_index=1),
    job_case("-c -x c++ a.cu", language_cu=False),
    job_case("-c -MD -MT a.o -MF a.o.d a.cu", depfile="a.o.d", dep_target="a.o", depfile_mode="MD"),
    job_case("-c -MMD -MF=a.d -MT=t a.cu", depfile="a.d", dep_target="t", depfile_mode="MMD"),
    job_case(
        "-c --generate-dependencies-with-compile --dependency-output a.d"
        " --dependency-target-name t a.cu",
        depfile="a.d",
        dep_target="t",
        depfile_mode="MD",
        key_flags=("-c",),
    ),
    job_case(
        "-c --generate-nonsystem-dependencies-with-compile --dependency-output=a.d"
        " --dependency-target-name=t --generate-dependency-targets a.cu",
        depfile="a.d",
        dep_target="t",
        depfile_mode="MMD",
        key_flags=("-c",),
    ),
    job_case("-c -MD a.cu", depfile=None, depfile_mode="MD", dep_phony=False, key_flags=("-c",)),
    job_case("-c -MD -MP a.cu", depfile=None, dep_phony=True, key_flags=("-c",)),
    job_case("-c -MD -optf o.rsp a.cu", {"o.rsp": "--generate-dependency-targets"}, dep_phony=True),
    job_case("-c -Xcompiler -fPIC a.cu", key_flags=("-c", "-Xcompiler", "-fPIC")),
    job_case("-c -Xcompiler=-fPIC,-Wall a.cu", key_flags=("-c", "-Xcompiler=-fPIC,-Wall")),
    job_case("-c --compiler-options=-fPIC a.cu", key_flags=("-c", "--compiler-options=-fPIC")),
    job_case("-c --compiler-options -O2 a.cu", key_flags=("-c", "--compiler-options", "-O2")),
    job_case("-c -Xptxas -v -Xptxas=-O3 a.cu", key_flags=("-c", "-Xptxas", "-v", "-Xptxas=-O3")),
    job_case(
        "-c -gencode arch=compute_80,code=sm_80"
        " -gencode=arch=compute_90,code=[compute_90,sm_90] a.cu",
        targets=("compute_90", "sm_80", "sm_90"),
    ),
    job_case("-c --generate-code=arch=compute_90a,code=[sm_90a] a.cu", targets=("sm_90a",)),
    job_case(
        '-c -gencode arch=compute_90,code="compute_90,sm_90" a.cu', targets=("compute_90", "sm_90")
    ),
    job_case("-c --generate-code arch=compute_80,code=compute_80 a.cu", targets=("compute_80",)),
    job_case("-c -arch=sm_90 a.cu", targets=("compute_90", "sm_90")),
    job_case("-c -arch sm_90 a.cu", targets=("compute_90", "sm_90")),
    job_case("-c --gpu-architecture=sm_90a a.cu", targets=("compute_90a", "sm_90a")),
    job_case("-c -arch=compute_90 a.cu", targets=("compute_90",)),
    job_case("-c -arch=native a.cu", targets=("native",)),
    job_case("-c -arch=all a.cu", targets=("all",)),
    job_case("-c -arch=all-major a.cu", targets=("all-major",)),
    job_case("-c -arch=sm_90 -arch=sm_80 a.cu", targets=("compute_80", "sm_80")),
    job_case("-c -arch=compute_80 -code=sm_80,compute_80 a.cu", targets=("compute_80", "sm_80")),
    job_case("-c --gpu-architecture compute_90 --gpu-code sm_90 a.cu", targets=("sm_90",)),
    job_case(
        "-c -arch=compute_90 -code=sm_90 -code=compute_90 a.cu", targets=("compute_90", "sm_90")
    ),
    job_case(
        "-c -arch=sm_90 -gencode arch=compute_80,code=sm_80 a.cu",
        targets=("compute_90", "sm_80", "sm_90"),
    ),
    job_case(
        "-c -arch=native -gencode arch=compute_80,code=sm_80 a.cu", targets=("native", "sm_80")
    ),
    job_case("-c -ccbin g++ a.cu", host_compiler="g++", key_flags=("-c", "-ccbin", "g++")),
    job_case("-c -ccbin=g++ a.cu", host_compiler="g++"),
    job_case("-c --compiler-bindir /usr/bin/g++ a.cu", host_compiler="/usr/bin/g++"),
    job_case("-c --compiler-bindir=/usr/bin/g++ a.cu", host_compiler="/usr/bin/g++"),
    job_case("-c --keep -odir out a.cu", key_flags=("-c",)),
    job_case("-c -keep -keep-dir=kk -odir=out a.cu", key_flags=("-c",)),
    job_case("-c --keep-dir kk --save-temps -t4 --threads 2 a.cu", key_flags=("-c",)),
    job_case("-c -Ifoo -I=bar -I baz a.cu", key_flags=("-c", "-Ifoo", "-I=bar", "-I", "baz")),
    job_case(
        "-c -DFOO=1 -D=BAR -D BAZ -UQ a.cu",
        key_flags=("-c", "-DFOO=1", "-D=BAR", "-D", "BAZ", "-UQ"),
    ),
    job_case("-c -O3 -O 2 -O=1 a.cu", key_flags=("-c", "-O3", "-O", "2", "-O=1")),
    job_case("-c -lineinfo -G -g a.cu", key_flags=("-c", "-lineinfo", "-G", "-g")),
    job_case("-c -std=c++17 --std c++20 a.cu", key_flags=("-c", "-std=c++17", "--std", "c++20")),
    job_case(
        "-c -include=a.h -isystem /i a.cu", key_flags=("-c", "-include=a.h", "-isystem", "/i")
    ),
    job_case(
        "-c -forward-unknown-to-host-compiler -Wall -fno-strict-aliasing a.cu",
        key_flags=("-c", "-forward-unknown-to-host-compiler", "-Wall", "-fno-strict-aliasing"),
    ),
    job_case(
        "-c --options-file o.rsp a.cu",
        {"o.rsp": '-DX=1 -I"dir with space"\n-O3\n'},
        key_flags=("-c", "-DX=1", "-Idir with space", "-O3"),
        options_files=("/w/o.rsp",),
    ),
    job_case("-c -optf o.rsp a.cu", {"o.rsp": "-O3"}, key_flags=O3, options_files=("/w/o.rsp",)),
    job_case("-c -optf=o.rsp a.cu", {"o.rsp": "-O3"}, key_flags=O3),
    job_case("-c --options-file=o.rsp a.cu", {"o.rsp": "-O3"}, key_flags=O3),
    job_case(
        "-c --options-file d/p.rsp,q.rsp a.cu",
        {"d/p.rsp": "-O3 -optf q.rsp", "q.rsp": "-G"},
        key_flags=("-c", "-O3", "-G", "-G"),
        options_files=("/w/d/p.rsp", "/w/q.rsp", "/w/q.rsp"),
    ),
    job_case(
        "-c -optf o.rsp a.cu",
        {"o.rsp": "-o out.o -MD -MF out.d -arch=sm_90 -rdc=true"},
        output="out.o",
        depfile="out.d",
        targets=("compute_90", "sm_90"),
        rdc=True,
        key_flags=("-c", "-arch=sm_90", "-rdc=true"),
    ),
]
NVCC_REFUSES = [
    Case(["-c", "-arch", "sm_80", "-code", "sm_80,compute_80", "a.cu"], {}, {}, False),
    Case(
        ["-c", "--unknown-thing=3", "a.cu"], {"key_flags": ("-c", "--unknown-thing=3")}, {}, False
    ),
]
PASS_THROUGH = [
    ("", "link (no -c)"),
    ("a.cu", "link (no -c)"),
    ("a.cu -o a.out", "link (no -c)"),
    ("-c", "no source file"),
    ("-c a.cu b.cu", "several source files"),
    ("-c a.cu b.o", "several source files"),
    ("-c -x cu -", "source from stdin"),
    ("-c a.o", "not a CUDA/C++ source: a.o"),
    ("-c a.ptx", "not a CUDA/C++ source: a.ptx"),
    ("-E a.cu", "preprocess only (-E)"),
    ("--preprocess a.cu", "preprocess only (-E)"),
    ("-M a.cu", "dependencies only (-M)"),
    ("-c -M a.cu", "dependencies only (-M)"),
    ("-MM a.cu -MF a.d", "dependencies only (-MM)"),
    ("-dlink a.o -o dl.o", "device link (-dlink)"),
    ("--device-link a.o", "device link (-dlink)"),
    ("-link a.o", "link (-link)"),
    ("-lib a.cu -o l.a", "library (-lib)"),
    ("-run a.cu", "compile and run (-run)"),
    ("-ptx a.cu", "device-only output (-ptx)"),
    ("-cubin a.cu", "device-only output (-cubin)"),
    ("--fatbin a.cu", "device-only output (-fatbin)"),
    ("--version", "version (-V)"),
    ("-V", "version (-V)"),
    ("-h", "help (-h)"),
    ("--dryrun -c a.cu", "dry run (-dryrun)"),
    ("-c a.cu -o", "missing option value: -o"),
    ("-c @args.rsp", "response file (nvcc does not read @file): @args.rsp"),
    ("-c -optf missing.rsp a.cu", "unreadable options file: missing.rsp"),
    ("-c --options-file=o.rsp,missing.rsp a.cu", "unreadable options file: missing.rsp"),
]


def check(case: Case) -> None:
    result = parse(case.args, reader(case.files), CWD)
    assert isinstance(result, CompileJob), result
    assert result.args == tuple(case.args)
    assert result.args[result.source_index] == result.source
    for name, value in case.expect.items():
        assert getattr(result, name) == value, name


@pytest.mark.parametrize("case", JOBS + NVCC_REFUSES, ids=lambda c: " ".join(c.args))
def test_compile_job(case: Case) -> None:
    check(case)


@pytest.mark.parametrize(("args", "reason"), PASS_THROUGH)
def test_pass_through(args: str, reason: str) -> None:
    files = {"o.rsp": "-O3"}
    assert parse(args.split(), reader(files), CWD) == PassThrough(reason)


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"o.rsp": "a.cu"}, "source in an options file: a.cu"),
        ({"o.rsp": "-optf o.rsp"}, "options files nested too deep: o.rsp"),
    ],
)
def test_options_file_pass_through(files: dict[str, str], reason: str) -> None:
    assert parse(["-c", "-optf", "o.rsp"], reader(files), CWD) == PassThrough(reason)


def test_options_file_relative_to_cwd() -> None:
    seen: list[str] = []

    def read(path: str) -> str:
        seen.append(path)
        return "-G"

    job = parse(["-c", "-optf", "../x/o.rsp", "a.cu"], read, "/b/build")
    assert seen == ["/b/x/o.rsp"]
    assert isinstance(job, CompileJob) and job.options_files == ("/b/x/o.rsp",)


def test_with_source_replaces_only_the_source() -> None:
    args = ["-c", "-DA=a.cu", "a.cu", "-o", "a.cu.o"]
    job = parse(args, reader({}), CWD)
    assert isinstance(job, CompileJob)
    assert with_source(job, "/tmp/copy.cu") == ["-c", "-DA=a.cu", "/tmp/copy.cu", "-o", "a.cu.o"]
    assert job.args == tuple(args)


def test_table_has_each_spelling_once() -> None:
    names = [n for opt in ALL_OPTIONS for n in (opt.long, opt.short) if n]
    assert len(names) == len(set(names))
    assert all(opt.long.startswith("--") for opt in ALL_OPTIONS)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('-DA="p q" -I"with space"', ["-DA=p q", "-Iwith space"]),
        ("-DB=x\\ y\t-O3\r\n-G\n", ["-DB=x y", "-O3", "-G"]),
        ("-DC='z' -DH=#x", ["-DC='z'", "-DH=#x"]),
        ('"" -DE=a""b', ["", "-DE=ab"]),
        ("", []),
    ],
)
def test_split_options_text(text: str, words: list[str]) -> None:
    assert split_options_text(text) == words


# Exactly what CMake 3.25 passed to the launcher (FACTS.md; paths shortened), a static library
# with CUDA_ARCHITECTURES "80;90", separable compilation, PIC and an include with a space.
CMAKE_COMMON = [
    "-forward-unknown-to-host-compiler",
    "-DBAR=a b",
    "-DFOO=1",
]
CMAKE_FLAGS = [
    "-O3",
    "-DNDEBUG",
    "--generate-code=arch=compute_80,code=[compute_80,sm_80]",
    "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
    "-Xcompiler=-fPIC",
    "-Xcompiler=-Wall",
    "-MD",
    "-MT",
    "CMakeFiles/t.dir/k.cu.o",
    "-MF",
    "CMakeFiles/t.dir/k.cu.o.d",
    "-x",
    "cu",
    "-rdc=true",
    "-c",
    "/src/k.cu",
    "-o",
    "CMakeFiles/t.dir/k.cu.o",
]
NINJA = [*CMAKE_COMMON, "-I/src/inc", "-I/src/with space", *CMAKE_FLAGS]
MAKEFILES = [*CMAKE_COMMON, "--options-file", "CMakeFiles/t.dir/includes_CUDA.rsp", *CMAKE_FLAGS]
MAKEFILES_RSP = {"CMakeFiles/t.dir/includes_CUDA.rsp": '-I/src/inc -I"/src/with space"\n'}


@pytest.mark.parametrize(("args", "files"), [(NINJA, {}), (MAKEFILES, MAKEFILES_RSP)])
def test_cmake_command_lines(args: list[str], files: dict[str, str]) -> None:
    job = parse(args, reader(files), CWD)
    assert isinstance(job, CompileJob)
    assert (job.source, job.source_index) == ("/src/k.cu", len(args) - 3)
    assert job.output == job.dep_target == "CMakeFiles/t.dir/k.cu.o"
    assert (job.depfile, job.depfile_mode) == ("CMakeFiles/t.dir/k.cu.o.d", "MD")
    assert job.targets == ("compute_80", "compute_90", "sm_80", "sm_90")
    assert job.rdc and job.language_cu and job.host_compiler == ""
    assert job.key_flags == (
        *CMAKE_COMMON,
        "-I/src/inc",
        "-I/src/with space",
        *CMAKE_FLAGS[:6],
        "-x",
        "cu",
        "-rdc=true",
        "-c",
    )
    assert job.options_files == (("/w/CMakeFiles/t.dir/includes_CUDA.rsp",) if files else ())


def nvcc_dryrun(
    args: list[str], files: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    for name, text in {**SOURCES, **files}.items():
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
        (cwd / name).write_text(text)
    assert NVCC is not None
    return subprocess.run([NVCC, "--dryrun", *args], cwd=cwd, capture_output=True, text=True)


@needs_nvcc
@pytest.mark.parametrize("case", JOBS, ids=lambda c: " ".join(c.args))
def test_nvcc_accepts_the_forms(case: Case, tmp_path: Path) -> None:
    done = nvcc_dryrun(case.args, case.files, tmp_path)
    assert done.returncode == 0, done.stderr


@needs_nvcc
@pytest.mark.parametrize("case", NVCC_REFUSES, ids=lambda c: " ".join(c.args))
def test_nvcc_refuses_the_forms(case: Case, tmp_path: Path) -> None:
    assert nvcc_dryrun(case.args, case.files, tmp_path).returncode != 0


@needs_nvcc
@pytest.mark.parametrize("form", ["-oa.o", "-MFa.d", "-archsm_90", "-xcu", "--o=a.o", "@o.rsp"])
def test_nvcc_refuses_glued_forms_we_do_not_read(form: str, tmp_path: Path) -> None:
    assert nvcc_dryrun(["-c", "a.cu", form], {"o.rsp": "-O3"}, tmp_path).returncode != 0


@needs_nvcc
def test_options_file_words_match_nvcc(tmp_path: Path) -> None:
    text = "-DA=\"p q\" -DB=x\\ y -DC='z'\r\n-DD=#x\n"
    (tmp_path / "p.cpp").write_text("A|B|C|D\n")
    (tmp_path / "o.rsp").write_text(text)
    done = subprocess.run(
        [str(NVCC), "-E", "-x", "c++", "p.cpp", "-optf", "o.rsp"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "p q|x y|'z'|#x"
    assert split_options_text(text) == ["-DA=p q", "-DB=x y", "-DC='z'", "-DD=#x"]
