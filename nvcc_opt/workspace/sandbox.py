"""Bubblewrap (`bwrap`, Debian package `bubblewrap`) around a run: the whole file system read-only
except the writable folders (and read-only again for read-only folders inside them), no network
unless asked, its own process namespace (every process of the run dies with it), device nodes
kept so the GPU stays usable. /tmp stays visible, read-only:
a private tmpfs there would hide a project or interpreter that lives under /tmp; TMPDIR points
at the last writable folder (the run's scratch folder) instead.

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


def _base(network: bool) -> list[str]:
    words = ["--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    words += ["--unshare-pid", "--die-with-parent"]
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


def wrap(
    argv: Sequence[str],
    *,
    cwd: Path,
    writable: Sequence[Path],
    network: bool,
    readonly: Sequence[Path] = (),
) -> list[str]:
    """`argv` under bwrap. Call only when `unavailable()` is ""; writable folders must exist.
    A read-only folder inside a writable one is bound read-only again (the deeper one wins)."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "call wrap() only where unavailable() is empty"
    folders = [Path(os.path.realpath(p)) for p in writable]
    for folder in folders:
        if not folder.exists():
            raise ValueError(f"writable path {folder} does not exist")
    words = [bwrap, *_base(network)]
    here = Path(os.path.realpath(cwd))
    protected = [Path(os.path.realpath(p)) for p in readonly]
    binds = [(f, "--bind") for f in folders] + [(p, "--ro-bind") for p in protected if p.exists()]
    # Shallower first: a later bind hides what an earlier one bound below its path. At the
    # same path read-only comes last and wins.
    for path, option in sorted(binds, key=lambda b: (len(b[0].parts), b[1] == "--ro-bind")):
        words += [option, str(path), str(path)]
    if folders:
        words += ["--setenv", "TMPDIR", str(folders[-1])]
    return [*words, "--chdir", str(here), "--", *argv]
