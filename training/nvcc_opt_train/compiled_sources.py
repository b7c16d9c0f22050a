"""Which of an app's files its build compiles with nvcc: where the launcher can see a region.

The launcher substitutes regions only in the file nvcc compiles (README, "Regions"). A problem
whose region is in a file the build never hands to nvcc (a header, a .cu the CMakeLists does not
list, a .cpp built by the host compiler) can never be optimized: every `collect`, `eval` or GRPO
run of it ends with "the build recorded no region". The check's CMake build exports
compile_commands.json, and a problem whose region file is not among its nvcc compiles is
skipped, whatever the reason it is not.
"""

from __future__ import annotations

import os
from pathlib import Path

from nvcc_opt.workspace.unit import read_entries

EXPORT = "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"
NVCC = "nvcc"


def nvcc_sources(build_dir: Path, app: Path) -> frozenset[str] | None:
    """The app-relative paths (posix) of the files compile_commands.json in `build_dir` compiles
    with nvcc; None when there is no readable compile_commands.json (a build CMake did not
    configure), so nothing can be said."""
    try:
        entries = read_entries(build_dir / "compile_commands.json")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    root = os.path.realpath(app)
    found = set()
    for entry in entries:
        if not any(Path(word).name == NVCC for word in entry.words[:3]):
            continue  # the host compiler's: the launcher never sees it
        if os.path.commonpath([root, entry.source]) == root:
            found.add(Path(os.path.relpath(entry.source, root)).as_posix())
    return frozenset(found)


def not_compiled(regions: tuple[str, ...], compiled: frozenset[str] | None) -> str | None:
    """Why a problem with `regions` (FILE:NAME) cannot be optimized, or None."""
    if compiled is None:
        return None
    missing = sorted({r.rpartition(":")[0] for r in regions} - compiled)
    if not missing:
        return None
    return (
        f"region not compiled: the build compiles no {', '.join(missing)} with nvcc, and the "
        "launcher substitutes regions only in the files nvcc compiles"
    )
