"""The CUDA 13 incompatibilities of a RAJAPerf checkout, each a named, pure text rewrite.

Found by compiling RAJAPerf v2024.07.0 (develop 9af20b3) with its RAJA v2024.07.0 (378199a) by
nvcc 13.0 for sm_90. Each fix acts on a class of code, not on known lines: every file of the
checkout that has the construct is rewritten, and a file without it is left alone. The rewrites
still compile with CUDA 12 (C++17 and `cuda::std::plus` exist there; the location helper is
chosen by CUDART_VERSION). One fix is a configure option, not an edit (`configure_options`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".cuh")
SOURCE_FOLDERS = ("src", "tpl/RAJA/include")  # the suite and the RAJA headers it compiles


@dataclass(frozen=True)
class Fix:
    name: str
    why: str
    files: Callable[[Path], Iterator[Path]]  # the files it may touch, under the checkout
    rewrite: Callable[[str], str]  # the same text when there is nothing to fix


def _top_cmakelists(root: Path) -> Iterator[Path]:
    yield root / "CMakeLists.txt"


def _sources(root: Path) -> Iterator[Path]:
    for folder in SOURCE_FOLDERS:
        base = root / folder
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.suffix in SOURCE_SUFFIXES and path.is_file() and "-Hip" not in path.name:
                    yield path


_OLD_STANDARD = re.compile(r"(set\(\s*(?:CMAKE_CXX_STANDARD|CMAKE_CUDA_STANDARD)\s+)(?:98|11|14)\b")
_OLD_BLT_STD = re.compile(r"(set\(\s*BLT_CXX_STD\s+c\+\+)(?:98|11|14)\b")


def cxx17(text: str) -> str:
    """C++ and CUDA standards below 17 raised to 17: CCCL 3 (CUDA 13's Thrust, CUB, libcu++)
    refuses anything older."""
    return _OLD_BLT_STD.sub(r"\g<1>17", _OLD_STANDARD.sub(r"\g<1>17", text))


_CUB_SUM = re.compile(r"(?:::)?\bcub::Sum\(\)")


def cub_sum(text: str) -> str:
    """`cub::Sum()` (removed in CCCL 3) -> `::cuda::std::plus<>()`, its documented replacement."""
    if not _CUB_SUM.search(text):
        return text
    text = _CUB_SUM.sub("::cuda::std::plus<>()", text)
    return _after_includes(text, "#include <cuda/std/functional>  // nvcc-opt rajaperf: cub-sum\n")


_ADVISE = re.compile(r"\bcudaMemAdvise\s*\(")
LOCATION_HELPER = """\
// nvcc-opt rajaperf: memadvise-location (CUDA 13 takes a cudaMemLocation, not a device number)
#ifndef NVCC_OPT_RAJAPERF_MEM_LOCATION
#define NVCC_OPT_RAJAPERF_MEM_LOCATION
#include <cuda_runtime_api.h>
#if CUDART_VERSION >= 13000
static inline cudaMemLocation nvcc_opt_mem_location(int device)
{
  cudaMemLocation location{};
  location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  location.id = device == cudaCpuDeviceId ? 0 : device;
  return location;
}
#else
static inline int nvcc_opt_mem_location(int device) { return device; }
#endif
#endif
"""


def memadvise_location(text: str) -> str:
    """Every `cudaMemAdvise(ptr, len, advice, device)` gets `nvcc_opt_mem_location(device)`:
    CUDA 13 replaced the device number by a `cudaMemLocation` (host or device)."""
    out, last, changed = [], 0, False
    for match in _ADVISE.finditer(text):
        args = _arguments(text, match.end())
        if args is None or len(args) != 4:
            continue
        start, end = args[3]
        if "nvcc_opt_mem_location" in text[start:end]:
            continue
        arg = text[start:end]
        lead = arg[: len(arg) - len(arg.lstrip())]
        trail = arg[len(arg.rstrip()) :]
        out.append(text[last:start] + f"{lead}nvcc_opt_mem_location({arg.strip()}){trail}")
        last, changed = end, True
    if not changed:
        return text
    out.append(text[last:])
    return _after_includes("".join(out), LOCATION_HELPER)


def _arguments(text: str, i: int) -> list[tuple[int, int]] | None:
    """(start, end) of each top-level argument of the call whose `(` ends before `i`."""
    depth, start, found = 0, i, []
    for j in range(i, len(text)):
        c = text[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                found.append((start, j))
                return found
            depth -= 1
        elif c == "," and depth == 0:
            found.append((start, j))
            start = j + 1
    return None


def _after_includes(text: str, block: str) -> str:
    """`block` after the last `#include` of the file's head (before the first `{`) that no `#if`
    encloses but the include guard, else after the guard's `#define`, else at the top."""
    depth, base, at, offset = 0, 0, 0, 0
    guarded = _guarded(text)
    for line in text.splitlines(keepends=True):
        directive = _DIRECTIVE.match(line)
        if directive is None and "{" in re.sub(r"//.*|/\*.*?\*/", "", line):
            break
        offset += len(line)
        word = directive.group(1) if directive else ""
        if word in ("if", "ifdef", "ifndef"):
            depth += 1
        elif word == "endif":
            depth -= 1
        elif word == "define" and guarded and depth == 1 and base == 0:
            base, at = 1, offset
        elif word == "include" and depth == base:
            at = offset
    return text[:at] + block + text[at:]


_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*(\w+)")


def _guarded(text: str) -> bool:
    """Whether the first directive is `#ifndef X` and the next `#define X` (an include guard)."""
    found = re.findall(r"^[ \t]*#[ \t]*(\w+)[ \t]*(\w*)", text, re.MULTILINE)[:2]
    return len(found) == 2 and found[0][0] == "ifndef" and found[1] == ("define", found[0][1])


FIXES = (
    Fix("cxx17", cxx17.__doc__ or "", _top_cmakelists, cxx17),
    Fix("memadvise-location", memadvise_location.__doc__ or "", _sources, memadvise_location),
    Fix("cub-sum", cub_sum.__doc__ or "", _sources, cub_sum),
)
FIX_NAMES = tuple(f.name for f in FIXES)


def cub_dir(nvcc_include: Path) -> Path | None:
    """CUDA 13 moved CUB under include/cccl, where RAJA's FindCUB does not look: the folder to pass
    as CUB_DIR (a configure option; no file changes), or None when CUB is where RAJA looks."""
    if (nvcc_include / "cub" / "cub.cuh").is_file():
        return None
    moved = nvcc_include / "cccl"
    return moved if (moved / "cub" / "cub.cuh").is_file() else None


def planned(root: Path) -> list[tuple[Fix, Path, str, str]]:
    """(fix, file, text before, text after) of every change the fixes would make, in order; a
    file two fixes touch appears twice, the second starting from the first's result."""
    current: dict[Path, str] = {}
    changes = []
    for fix in FIXES:
        for path in fix.files(root):
            if not path.is_file():
                continue
            before = current.get(path)
            if before is None:
                before = path.read_text(encoding="utf-8")
            after = fix.rewrite(before)
            if after != before:
                changes.append((fix, path, before, after))
                current[path] = after
    return changes
