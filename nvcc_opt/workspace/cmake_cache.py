"""Read a user's CMakeCache.txt and turn it into the configure command of a private tree (pure).

The private tree gets the user's own cache entries (compilers, flags, build type, project options)
so it builds what the user builds; CMake's bookkeeping (INTERNAL and STATIC entries) is left to
CMake. Values that point into the user's build folder are moved into the private tree, so nothing
the private tree does (FetchContent downloads, say) writes into the user's build.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

LAUNCHER = "CMAKE_CUDA_COMPILER_LAUNCHER"
_OURS = frozenset({LAUNCHER, "CMAKE_EXPORT_COMPILE_COMMANDS"})
_BOOKKEEPING = frozenset({"INTERNAL", "STATIC"})
_ENTRY = re.compile(r'^(?:"(?P<quoted>[^"]*)"|(?P<name>[^:"]+)):(?P<type>[A-Z]+)=(?P<value>.*)$')


@dataclass(frozen=True)
class CacheEntry:
    name: str
    type: str  # BOOL, PATH, FILEPATH, STRING, UNINITIALIZED, INTERNAL, STATIC
    value: str


def parse(text: str) -> dict[str, CacheEntry]:
    entries: dict[str, CacheEntry] = {}
    for line in text.splitlines():
        found = _ENTRY.match(line)
        if found is None or line.startswith(("#", "//")):
            continue
        name = found["quoted"] if found["quoted"] is not None else found["name"]
        entries[name] = CacheEntry(name, found["type"], found["value"])
    return entries


def _value(entries: dict[str, CacheEntry], name: str) -> str:
    entry = entries.get(name)
    return entry.value if entry is not None else ""


def generator(entries: dict[str, CacheEntry]) -> str:
    return _value(entries, "CMAKE_GENERATOR")


def launcher_chain(launcher: str, users: str) -> str:
    """Our launcher first, then whatever the user had (ccache, say) without another nvcc-opt."""
    theirs = [w for w in users.split(";") if w and os.path.basename(w) not in ("nvcc-opt", "")]
    return ";".join([launcher, *(w for w in theirs if w != launcher)])


def configure_command(entries: dict[str, CacheEntry], tree: str, launcher: str) -> list[str]:
    """`cmake -S <user source> -B tree -G <generator> -D...` for a private tree.

    Raises ValueError when the cache lacks the source folder or the generator."""
    source = _value(entries, "CMAKE_HOME_DIRECTORY")
    generator = _value(entries, "CMAKE_GENERATOR")
    if not source or not generator:
        raise ValueError("CMakeCache.txt names no source folder or generator; configure it first")
    command = ["cmake", "-S", source, "-B", tree, "-G", generator]
    for option, name in (("-A", "CMAKE_GENERATOR_PLATFORM"), ("-T", "CMAKE_GENERATOR_TOOLSET")):
        if _value(entries, name):
            command += [option, _value(entries, name)]
    user_build = _value(entries, "CMAKE_CACHEFILE_DIR")
    for entry in entries.values():
        if entry.type in _BOOKKEEPING or entry.name in _OURS:
            continue
        value = _moved(entry.value, user_build, tree)
        typed = "" if entry.type == "UNINITIALIZED" else f":{entry.type}"
        command.append(f"-D{entry.name}{typed}={value}")
    chain = launcher_chain(launcher, _value(entries, LAUNCHER))
    command += [f"-D{LAUNCHER}={chain}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"]
    return command


def _moved(value: str, user_build: str, tree: str) -> str:
    if not user_build:
        return value
    if value == user_build or value.startswith(user_build.rstrip("/") + "/"):
        return tree + value[len(user_build.rstrip("/")) :]
    return value
