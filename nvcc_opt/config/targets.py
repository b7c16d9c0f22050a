"""`nvcc-opt init`: which targets of the build tree compile the tagged CUDA sources, read through
CMake's File API (nvcc_opt.cmake_api).

The reply comes from the tree itself: when it has none yet, the query is written into the build
tree (`.cmake/api/v1/query/client-nvcc-opt/`) and the tree is configured once more (`cmake
BUILD`: what any `cmake -B` does again; no source file is touched). Any failure is one note line:
init's other findings never depend on it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from nvcc_opt.cmake_api import CMakeApiError, CodeModel, read_reply, write_query

PRAGMA = b"@optimize"
RECONFIGURE_TIMEOUT_S = 600.0


def code_model(build_dir: Path) -> tuple[CodeModel, bool]:
    """The tree's code model, and whether init had to configure the tree again to get it."""
    try:
        return read_reply(build_dir), False
    except CMakeApiError:
        pass
    write_query(build_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("CMAKE_GENERATOR", "CUDAARCHS")}
    try:
        done = subprocess.run(
            ["cmake", str(build_dir)],
            capture_output=True,
            text=True,
            env=env,
            timeout=RECONFIGURE_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CMakeApiError(f"cmake {build_dir}: {exc}") from exc
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CMakeApiError(f"cmake {build_dir} failed: {last[0]}")
    return read_reply(build_dir), True


def tagged_lines(build_dir: Path, root: Path) -> list[str]:
    """One line per tagged CUDA source the tree compiles, with its target; or a note why not."""
    try:
        model, reconfigured = code_model(build_dir)
    except CMakeApiError as exc:
        return [f"note: targets not read through CMake's File API: {exc}"]
    lines = []
    if reconfigured:
        lines.append(
            f"targets: read through CMake's File API (configured {_rel(build_dir, root)}"
            " once more to get its reply)"
        )
    for source in model.cuda_sources():
        try:
            tagged = PRAGMA in source.read_bytes()
        except OSError:
            continue
        if tagged:
            target = model.target_for_source(source)
            name = target.name if target is not None else "?"
            lines.append(f"tagged: {_rel(source, root)} (target {name})")
    if not any(line.startswith("tagged: ") for line in lines):
        lines.append("note: no CUDA source this tree compiles has an `// @optimize` tag yet")
    return lines


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
