"""The bench's processes: optimize streamed line by line, stopped at its timeout or when the bench
is interrupted (SIGINT to its group first, so it prints what it verified); configure and build
run quietly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt.bench.results import INTERRUPTED, short_reason

GRACE_S = 30.0  # after SIGINT at a timeout, before SIGKILL: optimize prints what it verified


POLL_S = 0.2  # how often a run in flight looks whether the bench was interrupted


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    stopped: bool = False  # the bench was interrupted (`stop` set) while it ran


def run_streaming(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    on_line: Callable[[str], None] = lambda _: None,
    stop: threading.Event | None = None,
) -> Ran:
    """Run argv in its own session, passing each stdout line to `on_line`. At the timeout, or
    when `stop` is set (the bench was interrupted), the group gets SIGINT (optimize then prints
    what it verified so far), SIGKILL after GRACE_S."""
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    ) as proc:
        out: list[str] = []
        err: list[str] = []
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = proc.stdout, proc.stderr

        def read_out() -> None:
            for line in stdout:
                out.append(line)
                on_line(line.rstrip("\n"))

        readers = [
            threading.Thread(target=read_out, daemon=True),
            threading.Thread(target=lambda: err.extend(stderr), daemon=True),
        ]
        for reader in readers:
            reader.start()
        why = ""
        try:
            why = _wait(proc, timeout_s, stop)
            if why:
                _signal_group(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
        finally:
            if proc.poll() is None:  # interrupted ourselves: leave nothing running
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
        for reader in readers:
            reader.join(timeout=10)
        return Ran(
            proc.returncode, "".join(out), "".join(err), why == "timeout", why == INTERRUPTED
        )


def _wait(proc: subprocess.Popen[str], timeout_s: float, stop: threading.Event | None) -> str:
    """Why proc must be stopped: "timeout", INTERRUPTED once `stop` is set; "" once it ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        if stop is not None and stop.is_set():
            return INTERRUPTED
        try:
            proc.wait(timeout=left if stop is None else min(left, POLL_S))
            return ""
        except subprocess.TimeoutExpired:
            continue


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def run_quiet(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout_s: float) -> str | None:
    """None when argv succeeded, else a short reason."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout_s:g} s"
    except OSError as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return short_reason(done.stderr + "\n" + done.stdout)
