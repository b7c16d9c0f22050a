"""The bench's processes, through the one process runner (`workspace.runner.ProcessRunner`):
optimize streamed line by line and stopped at its timeout or when the bench is interrupted,
SIGINT to its group first (so it prints what it verified), SIGKILL `GRACE_S` later; configure
and build quietly, stopped the same way. None is sandboxed here: optimize contains the
application's runs itself, and the build is the suite's own.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from nvcc_opt.bench.results import short_reason
from nvcc_opt.workspace.runner import Completed, ProcessRunner

GRACE_S = 30.0  # after SIGINT at a timeout, before SIGKILL: optimize prints what it verified
OUTPUT_CAP = 64 << 20  # optimize's JSON comes last: never cut it


def run_streaming(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    on_line: Callable[[str], None] = lambda _: None,
    on_err_line: Callable[[str], None] = lambda _: None,
    stop: threading.Event | None = None,
) -> Completed:
    """Run argv in its own session, passing each stdout line to `on_line` (each stderr line to
    `on_err_line`). At the timeout, or when `stop` is set (the bench was interrupted:
    `Completed.stopped`), the group gets SIGINT, SIGKILL after GRACE_S."""
    return ProcessRunner().run(
        argv,
        cwd=cwd,
        env=env,
        timeout_s=timeout_s,
        sandbox=False,
        output_cap=OUTPUT_CAP,
        on_line=on_line,
        on_err_line=on_err_line,
        stop=stop,
        stop_signal=signal.SIGINT,
        grace_s=GRACE_S,
    )


def run_quiet(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    stop: threading.Event | None = None,
) -> str | None:
    """None when argv succeeded, else a short reason (a stopped run's is "stopped")."""
    done = ProcessRunner().run(
        argv,
        cwd=cwd,
        env=env,
        timeout_s=timeout_s,
        sandbox=False,
        stop=stop,
        stop_signal=signal.SIGINT,
    )
    if done.stopped:
        return "stopped"
    if done.timed_out:
        return f"timed out after {timeout_s:g} s"
    if done.ok:
        return None
    return short_reason(done.stderr + "\n" + done.stdout)
