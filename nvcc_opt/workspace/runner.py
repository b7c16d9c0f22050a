"""The one place that starts processes.

`ProcessRunner` runs an argv list (never a shell string) in its own session, so a timeout kills
the whole process group: SIGTERM, a grace period, then SIGKILL. Whatever a command leaves running
in its group when it ends is killed too. Output is captured, capped (head and tail kept, the cut
said in the text), and decoded. With `sandbox=True` the run is contained at the highest level
that works here (see `containment.py`: bubblewrap, namespaces, a subreaper): then every process
it starts ends with it, also those that left its group (setsid, double fork), and it cannot write
the `readonly` folders; every result says in `contained`, `sandboxed` and `note` what held.
Every run, sandboxed or not, ends with its whole process group when the process that started it
dies, SIGKILL included (an unsandboxed one through `lifeline.py`'s keeper: one more inherited
descriptor, the keeper's tag).
A long run can stream its stdout line by line (`on_line`) and be ended early by a `stop` event
as a timeout ends it; an unsandboxed one can get another first signal (SIGINT, so a program
that reports what it did so far on Ctrl-C does) and a longer grace. `ScriptedRunner` is the
test fake.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from nvcc_opt.workspace import containment, process_log
from nvcc_opt.workspace.containment import Contained, Level

GRACE_S = 2.0  # between SIGTERM and SIGKILL: lets a program flush, short enough for a tool call
# A supervisor kills everything itself GRACE_S after the SIGTERM; this long after that (or
# after the SIGUSR1 an interrupted call sends) its whole group is killed regardless.
SUPERVISOR_MARGIN_S = 1.0


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]  # as asked, without the sandbox wrapper
    exit_status: int  # negative: killed by that signal; 127: could not start
    stdout: str
    stderr: str
    timed_out: bool
    wall_s: float
    sandboxed: bool  # the file system read-only but for `writable`, no network unless asked
    note: str = ""  # the containment ("contained: bubblewrap", "uncontained: ..."), a timeout
    contained: bool = False  # no process outlived the run, the `readonly` folders unwritable
    stopped: bool = False  # ended early because the caller's `stop` event was set

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out


class Runner(Protocol):
    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout_s: float,
        writable: Sequence[Path] = (),
        readonly: Sequence[Path] = (),
        network: bool = False,
        sandbox: bool = True,
        output_cap: int = 1_000_000,
    ) -> Completed:
        """Run `argv` in `cwd`. `env` is the whole environment (None: inherit this process's).
        With `sandbox` the run is contained: its processes end with it and it cannot write the
        `readonly` folders (not even inside `writable` ones); where the file system can be
        sandboxed it may write only to `writable` (TMPDIR is the last of them) and reaches no
        network unless `network`. `output_cap` bounds each of stdout and stderr."""
        ...


class ProcessRunner:
    """Runs real processes; see the module docstring for what it guarantees. `level`: the
    containment to use (default: the highest that works here, probed once per process)."""

    def __init__(self, level: Level | None = None) -> None:
        self.level = level

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout_s: float,
        writable: Sequence[Path] = (),
        readonly: Sequence[Path] = (),
        network: bool = False,
        sandbox: bool = True,
        output_cap: int = 1_000_000,
        on_line: Callable[[str], None] | None = None,
        on_err_line: Callable[[str], None] | None = None,
        stop: threading.Event | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
        grace_s: float = GRACE_S,
    ) -> Completed:
        """As `Runner.run`; besides: each stdout line (without its newline) goes to `on_line` as
        it comes, from a reader thread (each stderr line to `on_err_line`); once `stop` is set
        the run ends as at its timeout (`Completed.stopped`); the group gets `stop_signal` first
        (only SIGTERM when sandboxed: the supervisor handles that one) and SIGKILL `grace_s`
        later."""
        if sandbox and stop_signal != signal.SIGTERM:
            raise ValueError("a sandboxed run is ended with SIGTERM; its supervisor relays it")
        asked = tuple(argv)
        level = (self.level or containment.chosen()) if sandbox else None
        kind = containment.NONE if level is None else level.kind
        run = Contained(kind, asked, cwd, env, writable, readonly, network, grace_s=grace_s)
        with run:
            start = time.perf_counter()
            try:
                process = subprocess.Popen(
                    run.command,
                    cwd=cwd,
                    env=run.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    pass_fds=run.pass_fds,
                )
            except OSError as exc:
                message = f"cannot run {run.command[0]}: {exc.strerror or exc}\n"
                wall = time.perf_counter() - start
                return Completed(asked, 127, "", message, False, wall, False, "", False)
            finally:
                run.started()
            process_log.started(asked, cwd, process.pid, timeout_s)
            ending = _Ending(stop, stop_signal, grace_s)
            done = _finish(
                process,
                asked,
                start,
                timeout_s,
                output_cap,
                run.supervised,
                ending,
                (on_line, on_err_line),
            )
            process_log.ended(asked, process.pid, done.wall_s, done.exit_status, done.note)
            if level is None:
                return done
            held = run.outcome(level)
        if held.error:  # the command never ran
            done = dataclasses.replace(
                done, exit_status=127, stderr=f"cannot contain: {held.error}\n"
            )
        note = f"{done.note}; {held.note}" if done.note else held.note
        return dataclasses.replace(
            done, sandboxed=held.sandboxed, contained=held.contained, note=note
        )


@dataclass(frozen=True)
class _Ending:
    """How a run ends early: the caller's event, the first signal, the grace before SIGKILL."""

    stop: threading.Event | None = None
    signal: signal.Signals = signal.SIGTERM
    grace_s: float = GRACE_S


def _finish(
    process: subprocess.Popen[bytes],
    argv: tuple[str, ...],
    start: float,
    timeout_s: float,
    cap: int,
    supervised: bool,
    ending: _Ending,
    on_lines: tuple[Callable[[str], None] | None, Callable[[str], None] | None] = (None, None),
) -> Completed:
    assert process.stdout is not None and process.stderr is not None
    out = _Capture(process.stdout, cap, on_lines[0])
    err = _Capture(process.stderr, cap, on_lines[1])
    exited = timed_out = stopped = False
    try:
        try:
            exited = _wait_unreaped(process.pid, start + timeout_s, ending.stop)
            stopped = not exited and ending.stop is not None and ending.stop.is_set()
            timed_out = not exited and not stopped
            if not exited:
                _signal_group(process.pid, ending.signal)
                margin = SUPERVISOR_MARGIN_S if supervised else 0.0
                deadline = time.perf_counter() + ending.grace_s + margin
                exited = _wait_unreaped(process.pid, deadline)
        finally:  # also on KeyboardInterrupt: nothing outlives the call
            if supervised and not exited:  # let it kill what left the group, then kill it
                _signal_leader(process.pid, signal.SIGUSR1)
                _wait_unreaped(process.pid, time.perf_counter() + SUPERVISOR_MARGIN_S)
    finally:
        # The leader is not reaped yet, so its group id cannot have been reused by another process.
        _signal_group(process.pid, signal.SIGKILL)
        status = process.wait()
    wall = time.perf_counter() - start
    out.join()
    err.join()
    note = f"timed out after {timeout_s:g} s; process group killed" if timed_out else ""
    note = "stopped by the caller; process group killed" if stopped else note
    text = out.text(), err.text()
    return Completed(argv, status, *text, timed_out, wall, False, note, stopped=stopped)


def _wait_unreaped(pid: int, deadline: float, stop: threading.Event | None = None) -> bool:
    """Wait until `pid` exits (without reaping it), the deadline passes or `stop` is set; True
    if it exited."""
    pause = 0.001
    while True:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None:
            return True
        left = deadline - time.perf_counter()
        if left <= 0 or (stop is not None and stop.is_set()):
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.02)


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _signal_leader(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


class _Capture:
    """Reads one pipe on a thread; keeps the first and last `cap // 2` bytes, and passes each
    whole line to `on_line` as it comes (the last one at the end, newline or not)."""

    def __init__(
        self, pipe: IO[bytes], cap: int, on_line: Callable[[str], None] | None = None
    ) -> None:
        self._pipe = pipe
        self._on_line = on_line
        self._partial = bytearray()
        self._half = max(cap // 2, 1)
        self._head = bytearray()
        self._tail = bytearray()
        self._cut = 0
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with self._pipe:
            while chunk := os.read(self._pipe.fileno(), 65536):
                if self._on_line is not None:
                    self._lines(chunk)
                room = self._half - len(self._head)
                self._head += chunk[:room]
                self._tail += chunk[room:] if room > 0 else chunk
                if len(self._tail) > self._half:
                    self._cut += len(self._tail) - self._half
                    del self._tail[: len(self._tail) - self._half]
        if self._on_line is not None and self._partial:
            self._on_line(self._partial.decode(errors="replace"))

    def _lines(self, chunk: bytes) -> None:
        assert self._on_line is not None
        self._partial += chunk
        *whole, rest = self._partial.split(b"\n")
        self._partial = bytearray(rest)
        for line in whole:
            self._on_line(line.decode(errors="replace"))

    def join(self) -> None:
        # Every process of the group is dead, so the pipe reaches end of file promptly; a
        # descendant that left the group (setsid) and holds it open is not waited for.
        self._thread.join(timeout=GRACE_S)

    def text(self) -> str:
        head = self._head.decode(errors="replace")
        tail = self._tail.decode(errors="replace")
        if self._cut:
            return f"{head}\n[... {self._cut} bytes of output cut ...]\n{tail}"
        return head + tail


@dataclass(frozen=True)
class Call:
    """One call a `ScriptedRunner` received."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] | None
    timeout_s: float
    writable: tuple[Path, ...]
    network: bool
    sandbox: bool
    readonly: tuple[Path, ...] = ()


class ScriptedRunner:
    """The test fake: answers with scripted results, in order (a list) or by argv (a mapping),
    and records every call. The answer comes back with the argv actually asked for."""

    def __init__(self, answers: Sequence[Completed] | Mapping[tuple[str, ...], Completed]) -> None:
        self._by_argv: dict[tuple[str, ...], Completed] | None = None
        self._queue: list[Completed] = []
        if isinstance(answers, Mapping):
            self._by_argv = dict(answers)
        else:
            self._queue = list(answers)
        self.calls: list[Call] = []

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout_s: float,
        writable: Sequence[Path] = (),
        readonly: Sequence[Path] = (),
        network: bool = False,
        sandbox: bool = True,
        output_cap: int = 1_000_000,
    ) -> Completed:
        asked = tuple(argv)
        call = Call(asked, cwd, env, timeout_s, tuple(writable), network, sandbox, tuple(readonly))
        self.calls.append(call)
        if self._by_argv is not None:
            if asked not in self._by_argv:
                raise AssertionError(f"ScriptedRunner: no answer scripted for {asked}")
            return dataclasses.replace(self._by_argv[asked], argv=asked)
        if not self._queue:
            raise AssertionError(f"ScriptedRunner: script exhausted at {asked}")
        return dataclasses.replace(self._queue.pop(0), argv=asked)


def completed(
    exit_status: int = 0,
    stdout: str = "",
    stderr: str = "",
    *,
    timed_out: bool = False,
    contained: bool = True,
) -> Completed:
    """A scripted result (argv is filled in by `ScriptedRunner`); contained unless said."""
    return Completed((), exit_status, stdout, stderr, timed_out, 0.0, False, "", contained)
