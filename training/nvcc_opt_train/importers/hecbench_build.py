"""How a HeCBench benchmark is built, read from its CMakeLists.txt or else its Makefile, and the
standalone CMakeLists.txt the problem gets.

The CMakeLists.txt of a benchmark is one `add_hecbench_benchmark(NAME .. MODEL cuda SOURCES ..
[COMPILE_OPTIONS ..] [INCLUDE_DIRS ..] [LINK_LIBRARIES ..])` call, sometimes with `set(...)`
variables and `set_source_files_properties(... LANGUAGE CUDA)`; anything else in it is a build
the importer does not translate (a reason to skip). Architecture flags are dropped: the
architectures come from CMAKE_CUDA_ARCHITECTURES, like the suite's apps. Libraries must be the
CUDA toolkit's (through find_package(CUDAToolkit)), pthread, libm or OpenMP's runtime.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from nvcc_opt_train.importers.makefile import Makefile

KEYWORDS = frozenset(
    [
        "NAME",
        "MODEL",
        "SOURCES",
        "CATEGORIES",
        "COMPILE_OPTIONS",
        "LINK_LIBRARIES",
        "INCLUDE_DIRS",
        "TEST_REGEX",
        "TEST_ARGS",
        "TEST_TIMEOUT",
        "ENABLE_FASTMATH",
    ]
)
_TOOLKIT = {
    name.lower(): f"CUDA::{name}"
    for name in [
        "cublas",
        "cublasLt",
        "cusparse",
        "curand",
        "cufft",
        "cusolver",
        "nvrtc",
        "nvjpeg",
        "cudart",
        "cudadevrt",
        "nppc",
        "nppial",
        "nppicc",
        "nppidei",
        "nppif",
        "nppig",
        "nppim",
        "nppist",
        "nppisu",
        "nppitc",
        "npps",
        "nvml",
    ]
}
_TOOLKIT["cuda"] = "CUDA::cuda_driver"
_SYSTEM = {"pthread": "Threads::Threads", "m": "m", "gomp": "gomp", "dl": "dl", "rt": "rt"}
_HEADER_ONLY = {"nvtoolsext"}  # CUDA 13's nvtx3 needs no library
_ARCH_WITH_VALUE = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code")
_DROP_WITH_VALUE = ("-ccbin", "--compiler-bindir", "-o")
_PAIRED = ("-Xcompiler", "-Xptxas", "-Xlinker", "--default-stream", "-maxrregcount", "-x")
_DROP = re.compile(r"^(-std=.*|--std=.*|-O\d?|-g|-G|-lineinfo|-Wall|-Xcompiler=-Wall|-c|-w)$")
_CMAKE_COMMENT = re.compile(r"#[^\n]*")


class BuildSkip(Exception):
    """The benchmark's build cannot be made standalone; the message is one line."""


@dataclass
class BuildSpec:
    """What the generated CMakeLists.txt builds: all paths relative to the benchmark folder."""

    origin: str  # "CMakeLists.txt" or "Makefile"
    sources: list[str]
    options: list[str] = field(default_factory=list)  # CUDA compile options
    definitions: list[str] = field(default_factory=list)  # -D values, for every language
    include_dirs: list[str] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)  # CMake link items
    cuda_language: list[str] = field(default_factory=list)  # non-.cu sources compiled as CUDA
    openmp: bool = False
    separable: bool = False
    dropped: list[str] = field(default_factory=list)  # flags left out, for the notes
    added: list[str] = field(default_factory=list)  # flags taken from the Makefile, for the notes


def _cmake_words(text: str) -> list[str]:
    return [w[1:-1] if w.startswith('"') else w for w in re.findall(r'"[^"]*"|[^\s()]+', text)]


def _cmake_calls(text: str) -> list[tuple[str, str]]:
    """(command, argument text) of each top-level call in a CMake file."""
    text = _CMAKE_COMMENT.sub("", text)
    calls = []
    call = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
    at = 0
    while (match := call.search(text, at)) is not None:
        depth, i = 1, match.end()
        while i < len(text) and depth:
            depth += (text[i] == "(") - (text[i] == ")")
            i += 1
        calls.append((match.group(1), text[match.end() : i - 1]))
        at = i  # calls inside the arguments are not top-level calls
    return calls


def from_cmake(folder: Path) -> BuildSpec | None:
    """The build its CMakeLists.txt describes; None when there is no add_hecbench_benchmark."""
    path = folder / "CMakeLists.txt"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    if re.search(r"FetchContent|GIT_REPOSITORY|ExternalProject", text):
        raise BuildSkip("its CMakeLists.txt fetches code (FetchContent/GIT_REPOSITORY)")
    here = str(folder.resolve())  # absolute: a relative one would resolve inside the folder
    variables = {"CMAKE_CURRENT_LIST_DIR": here, "CMAKE_CURRENT_SOURCE_DIR": here}
    args: dict[str, list[str]] | None = None
    cuda_language: list[str] = []
    for command, body in _cmake_calls(text):
        words = [_cmake_expand(w, variables) for w in _cmake_words(body)]
        lowered = command.lower()
        if lowered == "set" and words:
            variables[words[0]] = " ".join(words[1:])
        elif lowered == "unzipfile":
            raise BuildSkip("needs data files (its CMakeLists.txt unpacks an archive)")
        elif lowered == "set_source_files_properties" and words[-2:] == ["LANGUAGE", "CUDA"]:
            cuda_language += words[: words.index("PROPERTIES")]
        elif lowered == "add_hecbench_benchmark":
            args = _keyword_args(words)
        else:
            raise BuildSkip(f"its CMakeLists.txt calls {command}(), which is not translated")
    if args is None:
        return None
    if [m.lower() for m in args.get("MODEL", [])] != ["cuda"]:
        raise BuildSkip("its add_hecbench_benchmark is not MODEL cuda")
    spec = BuildSpec("CMakeLists.txt", sources=[_inside_folder(folder, s) for s in args["SOURCES"]])
    spec.cuda_language = [_inside_folder(folder, s) for s in cuda_language]
    spec.include_dirs = [_inside_folder(folder, d) for d in args.get("INCLUDE_DIRS", [])]
    _add_flags(spec, args.get("COMPILE_OPTIONS", []), folder)
    _add_libraries(spec, args.get("LINK_LIBRARIES", []))
    return spec


# Flags without which some sources do not compile or link at all: the Makefile (HeCBench's first
# build) has them where its CMake call leaves them to HeCBench's own CMake defaults.
LANGUAGE_FLAGS = frozenset(
    {"--expt-relaxed-constexpr", "--extended-lambda", "--expt-extended-lambda", "-rdc=true", "-dc"}
)


_RDC_IN_RULES = re.compile(r"(?<!\S)(-dc|-rdc=true|--relocatable-device-code=true)(?!\S)")


def add_language_flags(spec: BuildSpec, mk: Makefile, text: str = "") -> None:
    """The Makefile's language flags added to a build read from the CMake call (relocatable
    device code for kernels that call device functions of other files, relaxed constexpr,
    extended lambdas), each noted. `text` is the Makefile itself: its compile rule may hold
    `-dc` outside CFLAGS."""
    wanted = [f for f in _split(mk.get("CFLAGS")) if f in LANGUAGE_FLAGS]
    if not spec.separable and _RDC_IN_RULES.search(text):
        wanted.append("-dc")
    for flag in dict.fromkeys(wanted):
        if flag in ("-rdc=true", "-dc"):
            spec.separable = True
        elif flag not in spec.options:
            spec.options.append(flag)
        spec.added.append(flag)


def _cmake_expand(word: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: variables.get(m.group(1), ""), word)


def _keyword_args(words: list[str]) -> dict[str, list[str]]:
    args: dict[str, list[str]] = {}
    current: list[str] = []
    for word in words:
        if word in KEYWORDS:
            current = args.setdefault(word, [])
        else:
            current.extend(word.split())
    if not args.get("SOURCES"):
        raise BuildSkip("its add_hecbench_benchmark names no SOURCES")
    return args


def _inside_folder(folder: Path, name: str) -> str:
    """`name` (relative or absolute) as a path relative to `folder`; BuildSkip if outside."""
    path = (folder / name).resolve()
    try:
        return path.relative_to(folder.resolve()).as_posix() or "."
    except ValueError:
        shown = os.path.relpath(path, folder.resolve())
        raise BuildSkip(f"includes outside its folder (its build uses {shown})") from None


def from_makefile(folder: Path, mk: Makefile) -> BuildSpec:
    """The build its Makefile describes: `source`, CFLAGS and LDFLAGS."""
    sources = mk.get("source").split()
    if not sources:
        raise BuildSkip("no add_hecbench_benchmark call and no `source =` in its Makefile")
    compiler = (mk.get("CC") or mk.get("NVCC") or "nvcc").split()[0]
    if re.search(r"\bmpi", compiler):
        raise BuildSkip("needs MPI (its Makefile compiles with an MPI wrapper)")
    if Path(compiler).name != "nvcc":
        raise BuildSkip(f"its Makefile compiles with {Path(compiler).name}, not nvcc")
    spec = BuildSpec("Makefile", sources=[_inside_folder(folder, s) for s in sources])
    _add_flags(spec, _split(mk.get("CFLAGS")), folder)
    _add_libraries(spec, _split(mk.get("LDFLAGS")))
    text = (folder / "Makefile").read_text(encoding="utf-8", errors="replace")
    if not spec.separable and _RDC_IN_RULES.search(text):
        spec.separable = True
    return spec


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _add_flags(spec: BuildSpec, flags: list[str], folder: Path) -> None:
    i = 0
    while i < len(flags):
        flag = flags[i]
        value = flags[i + 1] if i + 1 < len(flags) else ""
        i += 1
        if flag in _ARCH_WITH_VALUE or flag in _DROP_WITH_VALUE:
            spec.dropped.append(f"{flag} {value}")
            i += 1
        elif flag.startswith(tuple(f"{a}=" for a in _ARCH_WITH_VALUE)) or _DROP.match(flag):
            spec.dropped.append(flag)
        elif flag in ("-dc", "-rdc=true", "--relocatable-device-code=true", "-rdc"):
            spec.separable = True
            i += flag == "-rdc"
        elif flag.startswith("-D") or flag.startswith("-U"):
            spec.definitions.append(flag[2:] or value)
            i += not flag[2:]
        elif flag.startswith("-I"):
            spec.include_dirs.append(_inside_folder(folder, flag[2:] or value))
            i += not flag[2:]
        elif flag in _PAIRED:
            if value == "-Wall":
                spec.dropped.append(f"{flag} {value}")
            elif value == "-fopenmp":
                spec.openmp = True
            else:
                spec.options.append(f"{flag}={value}")
            i += 1
        elif flag in ("-fopenmp", "-Xcompiler=-fopenmp"):
            spec.openmp = True
        else:
            spec.options.append(flag)


def _add_libraries(spec: BuildSpec, items: list[str]) -> None:
    for item in items:
        if item.startswith("-L") or item in ("-g",) or _DROP.match(item):
            continue
        if item == "-fopenmp":
            spec.openmp = True
            continue
        name = item[2:] if item.startswith("-l") else item
        name = name.removeprefix("CUDA::")
        key = name.lower()
        if key in _HEADER_ONLY:
            continue
        if key in ("mpi", "nccl") or key.startswith("mpi"):
            raise BuildSkip(f"needs {name.upper()} (links {item})")
        target = _TOOLKIT.get(key) or _SYSTEM.get(key)
        if target is None:
            raise BuildSkip(f"links {item}, which is not a CUDA toolkit library")
        if target not in spec.libraries:
            spec.libraries.append(target)


def render_cmake(spec: BuildSpec, project: str) -> str:
    """A standalone CMakeLists.txt building `main` from the benchmark's sources."""
    languages = "C CXX CUDA" if any(s.endswith(".c") for s in spec.sources) else "CXX CUDA"
    lines = [
        "# Generated by nvcc-opt train problems --from hecbench.",
        "cmake_minimum_required(VERSION 3.18)",
        "",
        "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})",
        "  set(CMAKE_CUDA_ARCHITECTURES 90)",
        "endif()",
        "",
        f"project({project} LANGUAGES {languages})",
        "",
        "set(CMAKE_CXX_STANDARD 17)",
        "set(CMAKE_CXX_STANDARD_REQUIRED ON)",
        "set(CMAKE_CUDA_STANDARD 17)",
        "set(CMAKE_CUDA_STANDARD_REQUIRED ON)",
        "if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)",
        '  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)',
        "endif()",
        "# As HeCBench's Makefiles build: -O3 with asserts kept (no -DNDEBUG).",
        'set(CMAKE_CUDA_FLAGS_RELEASE "-O3")',
        'set(CMAKE_CXX_FLAGS_RELEASE "-O3")',
        'set(CMAKE_C_FLAGS_RELEASE "-O3")',
        "",
    ]
    if spec.cuda_language:
        files = " ".join(_quote(s) for s in spec.cuda_language)
        lines.append(f"set_source_files_properties({files} PROPERTIES LANGUAGE CUDA)")
    lines.append(f"add_executable(main {' '.join(_quote(s) for s in spec.sources)})")
    dirs = ["${CMAKE_CURRENT_SOURCE_DIR}"] + [
        f"${{CMAKE_CURRENT_SOURCE_DIR}}/{d}" for d in spec.include_dirs if d != "."
    ]
    lines.append(f"target_include_directories(main PRIVATE {' '.join(_quote(d) for d in dirs)})")
    if spec.definitions:
        defs = " ".join(_quote(d) for d in spec.definitions)
        lines.append(f"target_compile_definitions(main PRIVATE {defs})")
    options = [f"$<$<COMPILE_LANGUAGE:CUDA>:{o}>" for o in spec.options]
    if spec.openmp:
        options += ["$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fopenmp>"]
        options += ["$<$<COMPILE_LANGUAGE:CXX,C>:-fopenmp>"]
        if "gomp" not in spec.libraries:
            spec.libraries.append("gomp")
    if options:
        lines.append(f"target_compile_options(main PRIVATE {' '.join(_quote(o) for o in options)})")
    if spec.separable:
        lines.append("set_target_properties(main PROPERTIES CUDA_SEPARABLE_COMPILATION ON)")
    if any(lib.startswith("CUDA::") for lib in spec.libraries):
        lines.append("find_package(CUDAToolkit REQUIRED)")
    if "Threads::Threads" in spec.libraries:
        lines.append("find_package(Threads REQUIRED)")
    if spec.libraries:
        lines.append(f"target_link_libraries(main PRIVATE {' '.join(spec.libraries)})")
    return "\n".join(lines) + "\n"


def _quote(word: str) -> str:
    bare = word.replace("${CMAKE_CURRENT_SOURCE_DIR}", "")
    return f'"{word}"' if re.search(r'[\s;"()#]', bare) else word
