"""Saying a notice once per build: not on every compile, and not never again after the first.

A build is its driver process: the nearest ancestor of the launcher that is not a wrapper (the
`sh -c` that make and ninja run commands through, env, ccache, nvcc-opt itself), told apart from
a later process of the same number by its start time. Markers live in
`$TMPDIR/nvcc-opt-<uid>/said/`, not beside the store (a read-only store's folder takes none).
A compile run by hand from an interactive shell has no driver: it says its notices every time.
Markers older than a week are removed whenever a new one is made (only a build that had something
to say pays for that).
"""

from __future__ import annotations

import os
import time

from nvcc_opt._sha import sha256

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
WRAPPERS = frozenset(
    {
        "env",
        "nice",
        "ionice",
        "time",
        "timeout",
        "stdbuf",
        "setsid",
        "chrt",
        "taskset",
        "ccache",
        "sccache",
        "distcc",
        "icecc",
        "buildcache",
        "nvcc-opt",
    }
)
MAX_DEPTH = 32
STALE_S = 7 * 24 * 3600  # a marker this old belongs to a build long over


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(command name, parent pid, start time) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    name = text[text.find("(") + 1 : text.rfind(")")]
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return name, int(fields[1]), fields[19]


def _args(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().decode(errors="replace").split("\0")[1:-1]
    except OSError:
        return []


def _is_wrapper(name: str, pid: int) -> bool | None:
    """True: look further up; False: this is the driver; None: an interactive shell."""
    if name in WRAPPERS:
        return True
    if name in SHELLS:
        args = _args(pid)
        if "-c" in args:
            return True
        if any(not a.startswith("-") for a in args):
            return False  # a shell running a script: the script is the build
        return None
    return False


def build_driver(start: int | None = None) -> str | None:
    """`pid:start-time` of the build driver above this process, None when there is none."""
    pid = os.getppid() if start is None else start
    for _ in range(MAX_DEPTH):
        if pid <= 1:
            return None
        found = _stat(pid)
        if found is None:
            return None
        name, parent, started = found
        wrapper = _is_wrapper(name, pid)
        if wrapper is None:
            return None
        if not wrapper:
            return f"{pid}:{started}"
        pid = parent
    return None


def said_folder() -> str:
    base = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(base, f"nvcc-opt-{os.getuid()}", "said")


def first_time(message: str) -> bool:
    """True the first time this build asks about this message (then say it)."""
    driver = build_driver()
    if driver is None:
        return True
    folder = said_folder()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.stat(os.path.dirname(folder)).st_uid != os.getuid():
            return True  # someone else's folder could silence us: say it every time
        digest = sha256(f"{driver}\0{message}".encode(errors="surrogateescape")).hexdigest()
        fd = os.open(os.path.join(folder, digest[:40]), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    except OSError:
        return True
    os.close(fd)
    _sweep(folder)
    return True


def _sweep(folder: str) -> None:
    """Remove markers older than STALE_S: their builds are over."""
    oldest = time.time() - STALE_S
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.stat().st_mtime < oldest:
                        os.unlink(entry.path)
                except OSError:
                    continue
    except OSError:
        return
