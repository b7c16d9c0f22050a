"""`NVCC_OPT_LOG=FILE`: where the time goes, as ccache's log file tells it.

Every process nvcc-opt starts through `ProcessRunner` (builds, the application's runs, nvcc,
ptxas, cuobjdump, ncu, the sanitizer) adds a line to FILE when it starts and one when it ends,
with the clock time, its pid, its duration and exit status, so that a session stopped midway
still says what was in flight and since when. The variable is inherited, so nvcc-opt processes
that a logged one starts (pool workers, the train commands' workers) log to the same file; the
compiler launcher does not (a build is one logged process, its compiles are its own). Lines are
appended with one write each (O_APPEND), so concurrent processes never interleave within a line.
A log that cannot be written is skipped without a word: the log never changes what a build or a
tool does.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

LOG_ENV = "NVCC_OPT_LOG"
SHOWN = 240  # characters of a command line in the log


def log_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The log file the environment names, or None."""
    value = (os.environ if env is None else env).get(LOG_ENV, "").strip()
    return Path(value) if value else None


def started(argv: Sequence[str], cwd: Path, pid: int, timeout_s: float) -> None:
    _write(f"pid {pid} start (timeout {timeout_s:g} s, in {cwd}): {_shown(argv)}")


def ended(argv: Sequence[str], pid: int, wall_s: float, exit_status: int, note: str) -> None:
    how = f"exit {exit_status}" + (f", {note}" if note else "")
    _write(f"pid {pid} end after {wall_s:.2f} s, {how}: {_shown(argv)}")


def _shown(argv: Sequence[str]) -> str:
    text = shlex.join(argv)
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _write(message: str) -> None:
    path = log_path()
    if path is None:
        return
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
    line = f"{stamp} [{os.getpid()}] {message}".replace("\n", " ") + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        os.write(fd, line.encode("utf-8", "replace"))
    except OSError:
        pass
    finally:
        os.close(fd)
