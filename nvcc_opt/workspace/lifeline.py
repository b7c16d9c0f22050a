"""Unsandboxed runs end with the process that started them, also when it is SIGKILLed.

A sandboxed run has a supervisor that ends with its caller, and every process of the run with it
(`contain.py`; bubblewrap's --die-with-parent). An unsandboxed one (a CMake configure or build, a
compile, a tool) has none: were its caller killed, the run would go on as orphans, writing its
build folder while a rerun configures the same one. So a process that runs commands unsandboxed
has one *keeper* (`python -I -S`, started with its first such run, in a session of its own). The
keeper gets the parent-death signal the supervisor gets, with contain.py's `prctl`; once its
caller is gone it kills every process of those runs, with proc_tree.py's pid-reuse-safe kill.

Which processes those are needs no bookkeeping per run: each run inherits one end of the
keeper's pipe, its *tag* (one more open file descriptor, which nothing reads or writes). The
keeper kills every process that holds the tag, the process group of each that leads one (a run's
group: the runner starts each run in its own session) and every process below those, until no
process holds the tag any more: the keeper's end of the pipe reads end of file. A run holds the
tag from its first instruction, so none escapes between its start and a registration; a process
that closes the tag and leaves its run's group (setsid) is not found. A run costs a `dup` and a
`waitpid` (is the keeper still there); the keeper costs one interpreter start-up per process,
and a scan of /proc only when its caller dies with runs going. Not Linux: no keeper, no tag.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import time

from nvcc_opt.workspace import contain, proc_tree

TYPE_CHECKING = False  # as in contain.py: the keeper starts with as few imports as it can
if TYPE_CHECKING:
    import signal as _signal
else:
    import _signal

SWEEP_S = 5.0  # after the caller's death: how long to go on killing what still holds the tag
_START = (
    "import sys; sys.path.append({root!r}); "
    "from nvcc_opt.workspace.lifeline import keep; keep(sys.argv[1:])"
)


class _Keeper:
    __slots__ = ("pid", "tag")

    def __init__(self, pid: int, tag: int) -> None:
        self.pid = pid
        self.tag = tag  # the pipe's write end; the keeper reads the other

    def alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:  # reaped by someone else
            return False


_lock = _thread.allocate_lock()
_keeper: _Keeper | None = None
_unavailable = sys.platform != "linux"  # or the keeper could not be started: not tried again


def tag() -> int | None:
    """A new descriptor of the tag for one run to inherit (`pass_fds`; the caller closes it once
    the run started), a keeper started or restarted first; None where there is no keeper."""
    global _keeper, _unavailable
    if _unavailable:
        return None
    with _lock:
        if _keeper is None or not _keeper.alive():
            if _keeper is not None:
                os.close(_keeper.tag)
            _keeper = _spawn()
            _unavailable = _keeper is None
        return None if _keeper is None else os.dup(_keeper.tag)


def _spawn() -> _Keeper | None:
    """Start the keeper: in its own session (a Ctrl-C to the caller's group does not reach it),
    the pipe's read end as its standard input, no other descriptor of this process."""
    reading, writing = os.pipe()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    argv = [sys.executable, "-I", "-S", "-c", _START.format(root=root), str(os.getpid())]
    actions = [
        (os.POSIX_SPAWN_DUP2, reading, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, 1, 2),
        *[(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable()],
    ]
    try:
        pid = os.posix_spawn(
            sys.executable, argv, os.environ, file_actions=actions, setsid=True, setsigmask=()
        )
    except (OSError, ValueError):
        os.close(writing)
        return None
    finally:
        os.close(reading)
    return _Keeper(pid, writing)


def _inheritable() -> list[int]:
    """This process's descriptors above 2 that a program it starts would inherit."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found = []
    for name in names:
        try:
            if int(name) > 2 and os.get_inheritable(int(name)):
                found.append(int(name))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return found


def _forget() -> None:
    """In a forked child: the keeper is the parent's, and the child does not hold the tag."""
    global _keeper, _lock
    _lock = _thread.allocate_lock()
    if _keeper is not None:
        with contextlib.suppress(OSError):
            os.close(_keeper.tag)
        _keeper = None


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget)


def keep(words: list[str]) -> None:
    """The keeper: `python -I -S -c START CALLER_PID`, the pipe's read end as standard input.
    Waits for its caller's death, then kills what holds the tag until nothing does."""
    caller = int(words[0])
    os.chdir("/")  # holds no folder of the caller's
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGUSR1})
    contain._prctl(contain.PR_SET_PDEATHSIG, _signal.SIGUSR1)  # the caller gone: end its runs
    while os.getppid() == caller:  # also sent when the caller's thread that started this ends
        _signal.sigwaitinfo({_signal.SIGUSR1})
    os.set_blocking(0, False)
    link = f"pipe:[{os.fstat(0).st_ino}]"
    deadline = time.monotonic() + SWEEP_S
    while _held() and time.monotonic() < deadline:
        _kill_holders(link)
        time.sleep(proc_tree.PASS)


def _held() -> bool:
    """Whether any process still holds the tag: then its other end is not at end of file."""
    try:
        return os.read(0, 4096) != b""  # (something written to it: held, and read away)
    except BlockingIOError:
        return True


def _holders(link: str) -> list[int]:
    """The processes with a descriptor that is the tag (`link`: its /proc/PID/fd/N link)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():  # this one holds the other end
            continue
        folder = f"/proc/{name}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:  # gone, or not ours
            continue
        for fd in fds:
            try:
                if os.readlink(f"{folder}/{fd}") == link:
                    found.append(int(name))
                    break
            except OSError:
                continue
    return found


def _kill_holders(link: str) -> None:
    """SIGKILL every process holding the tag, the group each leads, every process below those
    (found before any is killed: a killed parent's children are handed on)."""
    holders = [(pid, fields) for pid in _holders(link) if (fields := proc_tree.stat(pid))]
    leaders = [(pid, fields[19]) for pid, fields in holders if int(fields[2]) == pid]
    below = [found for pid, _ in leaders for found in proc_tree.descendants(pid)]
    for pid, started in leaders:
        if proc_tree.stat(pid)[19:20] == [started]:  # still that process: its group, at once
            with contextlib.suppress(OSError):
                os.killpg(pid, _signal.SIGKILL)
    for pid, fields in holders:
        proc_tree.kill(pid, fields[19])
    for pid, started in below:
        proc_tree.kill(pid, started)
