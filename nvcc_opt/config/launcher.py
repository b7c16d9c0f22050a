"""The nvcc-opt a build should name: this installation's console script, by absolute path.

A CMake cache that names the launcher `nvcc-opt` finds it on PATH at every compile, so the build
fails in a shell where the virtual environment is not active; the script's absolute path (its
shebang names its interpreter) works from any shell.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

NAME = "nvcc-opt"


def script_path() -> str | None:
    """The absolute path of the running nvcc-opt script, else the one installed beside this
    interpreter, else the one on PATH; None when there is none."""
    me = sys.argv[0]
    if os.path.basename(me) == NAME and os.path.isfile(me):
        return os.path.realpath(me)
    beside = os.path.join(os.path.dirname(sys.executable), NAME)
    if os.path.isfile(beside):
        return beside
    found = shutil.which(NAME)
    return os.path.abspath(found) if found else None


def is_bare(entry: str) -> bool:
    """Whether a launcher list entry names nvcc-opt without a folder (found through PATH)."""
    return entry == NAME


def cmake_setting(current: str) -> str:
    """`-DCMAKE_CUDA_COMPILER_LAUNCHER=...` that builds through this nvcc-opt by absolute path,
    keeping the launchers `current` (a CMake list) has after it (ccache, ...)."""
    script = script_path() or NAME
    others = [e for e in current.split(";") if e and os.path.basename(e) != NAME]
    return shlex.quote(f"-DCMAKE_CUDA_COMPILER_LAUNCHER={';'.join([script, *others])}")
