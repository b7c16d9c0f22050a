"""The CUDA architectures a CMake build tree really compiles for, and where that was read.

CMakeCache.txt's CMAKE_CUDA_ARCHITECTURES is only the default: a target's CUDA_ARCHITECTURES
property, or a normal variable set in CMakeLists.txt, wins over it without changing the cache
(a cache that says 75 for a project built for 90). So the compile flags the generator wrote come
first: build.ninja (Ninja), the targets' flags.make (Makefiles), compile_commands.json; the
cache only when no flags name an architecture. Architectures are written as CMake writes them:
`90` (SASS and PTX), `80-real` (SASS only), `90-virtual` (PTX only), or `native`, `all`, ...
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt.config.project import read_cmake_cache

_GENCODE = ("-gencode", "--generate-code")
_ARCH = ("-arch", "--gpu-architecture")
_CODE = ("-code", "--gpu-code")
_NUMBER = re.compile(r"(?:sm|compute|lto)_(\w+)")
FLAGS_FILES_CAP = 500  # flags.make files read at most (a tree with many targets)


@dataclass(frozen=True)
class Architectures:
    """`values` in CMake's notation ("" when none was found) and `source`, what they were read
    from ("build.ninja", "CMakeFiles/k.dir/flags.make", "CMakeCache.txt", or "")."""

    values: tuple[str, ...]
    source: str

    def describe(self) -> str:
        if not self.values:
            return "not set (no compile flags and no CMAKE_CUDA_ARCHITECTURES in CMakeCache.txt)"
        return f"{', '.join(self.values)} (from {self.source})"


def read(build_dir: Path) -> Architectures:
    """What the build tree at `build_dir` compiles CUDA for; see the module's docstring."""
    for source, commands in _flag_sources(build_dir):
        found = from_arguments(word for command in commands for word in command)
        if found:
            return Architectures(found, source)
    cached = cached_value(build_dir)
    if cached:
        return Architectures(tuple(a for a in cached.split(";") if a), "CMakeCache.txt")
    return Architectures((), "")


def cached_value(build_dir: Path) -> str:
    """CMAKE_CUDA_ARCHITECTURES of the tree's CMakeCache.txt ("" when unset or unreadable)."""
    try:
        return read_cmake_cache(build_dir).get("CMAKE_CUDA_ARCHITECTURES", "").strip()
    except OSError:
        return ""


def from_arguments(args: Iterable[str]) -> tuple[str, ...]:
    """The architectures nvcc arguments name (-gencode/--generate-code, -arch, -code), in
    CMake's notation, sorted by number."""
    real: set[str] = set()
    virtual: set[str] = set()
    words: set[str] = set()
    arch: list[str] = []
    codes: list[str] = []
    for option, value in _options(args):
        if option in _GENCODE:
            fields = dict(f.split("=", 1) for f in _split_commas(value) if "=" in f)
            for code in _code_list(fields.get("code", fields.get("arch", ""))):
                _add(code, real, virtual)
        elif option in _ARCH:
            arch.append(value)
        else:
            codes.extend(_code_list(value))
    for value in arch:
        number = _NUMBER.fullmatch(value)
        if number is None:
            words.add(value)  # native, all, all-major
        elif codes:
            continue  # with -code, only the codes it lists are embedded
        elif value.startswith("sm_"):
            real.add(number[1])
            virtual.add(number[1])
        else:
            virtual.add(number[1])
    for code in codes:
        _add(code, real, virtual)
    named = [
        *(n for n in real & virtual),
        *(f"{n}-real" for n in real - virtual),
        *(f"{n}-virtual" for n in virtual - real),
    ]
    return tuple(sorted(words)) + tuple(sorted(named, key=_order))


def _options(args: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(option, value) for each architecture option, in `-o=v` or `-o v` form."""
    pending: str | None = None
    for arg in args:
        if pending is not None:
            yield pending, arg
            pending = None
            continue
        name, equals, value = arg.partition("=")
        if name in (*_GENCODE, *_ARCH, *_CODE):
            if equals:
                yield name, value
            else:
                pending = name


def _split_commas(value: str) -> list[str]:
    """`arch=compute_90,code=[compute_90,sm_90]` split at the commas outside brackets."""
    parts, depth, current = [], 0, ""
    for char in value.strip("'\""):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _code_list(value: str) -> list[str]:
    return [c for c in re.split(r"[\[\],\"' ]+", value) if c]


def _add(code: str, real: set[str], virtual: set[str]) -> None:
    number = _NUMBER.fullmatch(code)
    if number is not None:
        (virtual if code.startswith("compute_") else real).add(number[1])


def _order(name: str) -> tuple[int, str]:
    digits = re.match(r"\d+", name)
    return (int(digits[0]) if digits else 0, name)


def _flag_sources(build_dir: Path) -> Iterator[tuple[str, list[list[str]]]]:
    """(what was read, the command lines in it) from the generator's files, then the
    compilation database."""
    ninja = [build_dir / "build.ninja", *sorted((build_dir / "CMakeFiles").glob("impl-*.ninja"))]
    for path in ninja:
        yield path.name, _flag_lines(path, "FLAGS = ")
    makes = sorted(build_dir.glob("**/CMakeFiles/*.dir/flags.make"))[:FLAGS_FILES_CAP]
    if makes:
        first = makes[0].relative_to(build_dir).as_posix()
        more = f" and {len(makes) - 1} more" if len(makes) > 1 else ""
        yield first + more, [line for m in makes for line in _flag_lines(m, "CUDA_FLAGS = ")]
    yield "compile_commands.json", _database(build_dir / "compile_commands.json")


def _flag_lines(path: Path, marker: str) -> list[list[str]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [_words(line.split(marker, 1)[1]) for line in text.splitlines() if marker in line]


def _database(path: Path) -> list[list[str]]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return []
    commands: list[list[str]] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        arguments = entry.get("arguments")
        if isinstance(arguments, list):
            commands.append([str(a) for a in arguments])
        elif isinstance(entry.get("command"), str):
            commands.append(_words(entry["command"]))
    return commands


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()
