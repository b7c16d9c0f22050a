"""Bubblewrap (`bwrap`, Debian package `bubblewrap`) around a run: the whole file system read-only
except the given folders and a private /tmp, no network unless asked, its own process namespace
(every process of the run dies with it), device nodes kept so the GPU stays usable.

Whether bwrap works is probed once per process with the same options a run gets: containers often
forbid the namespaces it needs, and then runs go unsandboxed and every result says why.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

TMP = Path("/tmp")


def _base(network: bool) -> list[str]:
    words = ["--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    words += ["--tmpfs", str(TMP), "--unshare-pid", "--die-with-parent"]
    return words if network else [*words, "--unshare-net"]


@functools.cache
def unavailable() -> str:
    """Why runs cannot be sandboxed here, or "" when they can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap not installed"
    try:
        probe = subprocess.run(
            [bwrap, *_base(network=False), "true"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot start ({exc})"
    if probe.returncode != 0:
        first = (probe.stderr.strip().splitlines() or ["no message"])[0]
        return f"bwrap cannot create its namespaces here ({first})"
    return ""


def _within(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def wrap(argv: Sequence[str], *, cwd: Path, writable: Sequence[Path], network: bool) -> list[str]:
    """`argv` under bwrap. Call only when `unavailable()` is ""; writable folders must exist."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "call wrap() only where unavailable() is empty"
    folders = [Path(os.path.realpath(p)) for p in writable]
    for folder in folders:
        if not folder.exists():
            raise ValueError(f"writable path {folder} does not exist")
    words = [bwrap, *_base(network)]
    here = Path(os.path.realpath(cwd))
    # The private /tmp hides the real one; keep the working folder visible (read-only) there.
    if TMP in here.parents and not _within(here, folders):
        words += ["--ro-bind", str(here), str(here)]
    for folder in folders:
        words += ["--bind", str(folder), str(folder)]
    return [*words, "--chdir", str(here), "--", *argv]
