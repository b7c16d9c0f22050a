"""How runs are contained here: a ladder, probed once per process, each level tried for real.

1. bubblewrap (`sandbox.py`) where it works;
2. else the supervisor (`contain.py`) in PID, mount and network namespaces: the file system
   read-only but for the writable folders, every process of the run killed with it;
3. else the supervisor as a child subreaper (every descendant killed and reaped after the run),
   the read-only folders protected by permissions for the run (`writeprotect.py`), which binds
   no one running as root;
4. else nothing: not Linux, or not even a subreaper.

Every level ends a run with the process that started it, SIGKILL included: bubblewrap dies with
its parent, the supervisor gets a parent-death signal, and a run under nothing (an unsandboxed
run: NONE) carries the tag of this process's keeper (`lifeline.py`), which kills it then.

`Contained` is one run under the chosen level: the command to start, its environment and the
pipe it reports on; after the run, what actually held (`outcome`). A run is *contained* when
its processes cannot outlive it and the read-only folders it was given could not be written.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from nvcc_opt.workspace import contain, lifeline, sandbox, writeprotect

BUBBLEWRAP, NAMESPACES, SUBREAPER, NONE = "bubblewrap", "namespaces", "subreaper", "none"
LADDER = (BUBBLEWRAP, NAMESPACES, SUBREAPER)
# The supervisor imports only the standard library; site-packages would cost start-up time.
_PACKAGE_ROOT = str(Path(contain.__file__).resolve().parents[2])
_START = (
    f"import sys; sys.path.append({_PACKAGE_ROOT!r}); "
    "from nvcc_opt.workspace.contain import main; main(sys.argv[1:])"
)


@dataclass(frozen=True)
class Level:
    kind: str  # one of LADDER, or NONE
    setup: str  # what contains a run, as the probe found it: "PID, mount and network namespaces"
    skipped: str  # why the levels above are not used: "no bubblewrap (not installed), ..."


@functools.cache
def chosen() -> Level:
    """The highest level that works here (probed on first use, then kept for the process)."""
    return probe(*LADDER)


def probe(*kinds: str) -> Level:
    """The first of `kinds` (in ladder order) that works here, each tried with a real run."""
    reasons: list[str] = []
    for kind in kinds:
        why, setup = _try(kind)
        if not why:
            return Level(kind, setup, ", ".join(reasons))
        reasons.append(f"no {kind} ({why})")
    return Level(NONE, "", ", ".join(reasons))


def _try(kind: str) -> tuple[str, str]:
    """(why `kind` cannot contain runs here or "", what it sets up)."""
    if sys.platform != "linux":
        return "not Linux", ""
    if kind == BUBBLEWRAP:
        return sandbox.unavailable(), "bubblewrap"
    with tempfile.TemporaryDirectory(prefix="nvcc-opt-probe-") as folder:
        argv = [sys.executable, "-I", "-S", "-c", ""]
        # without network: the strictest a run can ask for
        with Contained(kind, argv, Path(folder), None, [Path(folder)], [], False) as run:
            try:
                done = subprocess.run(
                    run.command, env=run.env, pass_fds=run.pass_fds, capture_output=True,
                    timeout=30, check=False, start_new_session=True,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"the supervisor cannot start ({exc})", ""
            finally:
                run.started()
            report = run.report()
    if report.error:
        return report.error, ""
    if done.returncode != 0 or not report.done:
        return f"the probe ended with exit status {done.returncode}: {done.stderr[-300:]!r}", ""
    return "", report.setup


@dataclass(frozen=True)
class Report:
    """What the supervisor wrote on its report pipe."""

    setup: str = ""
    error: str = ""
    unprotected: tuple[str, ...] = ()  # read-only folders (or mounts below them) left writable
    writable: tuple[str, ...] = ()  # mounts of the read-only file system left writable
    done: bool = False  # no process of the run was left


def _parse(text: str) -> Report:
    fields: dict[str, list[str]] = {"setup": [], "error": [], "unprotected": [], "writable": []}
    done = False
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "done":
            done = True
        elif word in fields:
            fields[word].append(rest)
    return Report(
        " ".join(fields["setup"]),
        " ".join(fields["error"]),
        tuple(fields["unprotected"]),
        tuple(fields["writable"]),
        done,
    )


class Contained:
    """One run under level `kind`: use as a context manager around starting and waiting.

    `command`, `env` and `pass_fds` are what to start; call `started()` once it started (or
    failed to), and `outcome()` after it ended, before leaving the `with`."""

    def __init__(
        self,
        kind: str,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str] | None,
        writable: Sequence[Path],
        readonly: Sequence[Path],
        network: bool,
        grace_s: float = 2.0,
    ) -> None:
        self.kind = kind
        self.writable = [Path(os.path.realpath(p)) for p in writable]
        self.readonly = [Path(os.path.realpath(p)) for p in readonly]
        self.network = network
        self.env = None if env is None else dict(env)
        self.pass_fds: tuple[int, ...] = ()
        self._tag: int | None = None  # NONE: the run ends with this process (lifeline.py)
        self._pipe: tuple[int, int] | None = None
        self._stack = contextlib.ExitStack()
        self._guard: writeprotect.Guard | None = None  # subreaper: the read-only folders
        self._report: Report | None = None
        self.supervised = kind in (NAMESPACES, SUBREAPER)
        self.command = list(argv)
        if kind == BUBBLEWRAP:
            self.command = sandbox.wrap(
                argv, cwd=cwd, writable=self.writable, readonly=self.readonly, network=network
            )
        elif self.supervised:
            self._missing_writable()
            self.command = self._supervisor(argv, grace_s)
            if kind == NAMESPACES and self.writable:
                # /tmp is read-only: temporary files go to the last writable folder (bwrap too)
                self.env = {
                    **(os.environ if env is None else env),
                    "TMPDIR": str(self.writable[-1]),
                }
        elif kind == NONE:
            self._tag = lifeline.tag()
            self.pass_fds = () if self._tag is None else (self._tag,)

    def _missing_writable(self) -> None:
        for folder in self.writable:
            if not folder.exists():
                raise ValueError(f"writable path {folder} does not exist")

    def _supervisor(self, argv: Sequence[str], grace_s: float) -> list[str]:
        reading, writing = os.pipe()
        self._pipe = (reading, writing)
        self.pass_fds = (writing,)
        words = [sys.executable, "-I", "-S", "-c", _START, self.kind, "--grace", f"{grace_s:g}"]
        words += ["--report", str(writing), "--parent", str(os.getpid())]
        words += ["--network", "yes" if self.network else "no"]
        for folder in self.writable:
            words += ["--writable", str(folder)]
        for folder in self.readonly:
            words += ["--readonly", str(folder)]
        return [*words, "--", *argv]

    def __enter__(self) -> Contained:
        if self.kind == SUBREAPER:
            try:
                self._guard = self._stack.enter_context(
                    writeprotect.guarded(self.readonly, keep=self.writable)
                )
            except BaseException:
                self.__exit__(None, None, None)
                raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stack.close()  # permissions back as they were, once the run is over
        self._drop_tag()
        if self._pipe is not None:
            for fd in self._pipe:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._pipe = None

    def _drop_tag(self) -> None:
        if self._tag is not None:
            with contextlib.suppress(OSError):
                os.close(self._tag)
            self._tag = None

    def started(self) -> None:
        """The run started (or could not): this process no longer needs the report's write end,
        nor its copy of the run's tag."""
        self._drop_tag()
        if self._pipe is not None and self._pipe[1] >= 0:
            os.close(self._pipe[1])
            self._pipe = (self._pipe[0], -1)

    def report(self) -> Report:
        """The supervisor's report, read once after it exited (the command never holds the
        pipe, so what is in it is complete)."""
        if self._report is None:
            self._report = Report()
            if self._pipe is not None:
                os.set_blocking(self._pipe[0], False)
                chunks = []
                with contextlib.suppress(BlockingIOError):
                    while chunk := os.read(self._pipe[0], 65536):
                        chunks.append(chunk)
                self._report = _parse(b"".join(chunks).decode(errors="replace"))
        return self._report

    def outcome(self, level: Level) -> Outcome:
        """What held for the run that ended (call inside the `with`)."""
        if self.kind == BUBBLEWRAP:
            return Outcome(True, True, "contained: bubblewrap")
        if self.kind == NONE:
            return Outcome(False, False, f"uncontained: {level.skipped}")
        report = self.report()
        if report.error:
            return Outcome(False, False, f"uncontained: {report.error}", report.error)
        if self.kind == NAMESPACES:
            return _namespaces_outcome(report, level)
        assert self._guard is not None, "outcome() inside the with"
        return _subreaper_outcome(report, self._guard, bool(self.readonly), level)


@dataclass(frozen=True)
class Outcome:
    sandboxed: bool
    contained: bool
    note: str
    error: str = ""  # the supervisor could not start the command contained (it never ran)


def _namespaces_outcome(report: Report, level: Level) -> Outcome:
    # Without the report the supervisor was killed, and its init with it: the kernel still
    # killed every process of the namespace.
    problems = []
    if report.unprotected:
        problems.append(f"read-only folder left writable: {'; '.join(report.unprotected)}")
    if report.writable:
        problems.append(f"mounts left writable: {'; '.join(report.writable)}")
    setup = report.setup or level.setup
    contained = not report.unprotected
    words = ["contained" if contained else "uncontained", f": {setup}"]
    words += [f"; {p}" for p in problems]
    return Outcome(not report.writable and contained, contained, "".join(words))


def _subreaper_outcome(
    report: Report, guard: writeprotect.Guard, asked_readonly: bool, level: Level
) -> Outcome:
    problems = [] if report.done else ["the supervisor was killed: descendants may survive"]
    written = guard.written()
    if written:
        more = f" and {len(written) - 1} more" if len(written) > 1 else ""
        problems.append(f"the run wrote a read-only folder: {written[0]}{more}")
    if not asked_readonly:
        kept = ""
    elif guard.protection:
        kept = f"; read-only folders checked for writes, not protected ({guard.protection})"
    else:
        kept = "; read-only folders protected by permissions"
    head = "; ".join(["uncontained: subreaper", *problems]) if problems else "contained: subreaper"
    why = f" ({level.skipped})" if level.skipped else ""
    return Outcome(False, not problems, f"{head}{kept}; no file system or network sandbox{why}")
