"""The run supervisor: one command, and every process it starts, ended with the run.

The runner (containment.py) starts `main(MODE [--name value]... -- ARGV)` in `python -I -S`, in
the run's own session, folder, environment and pipes; `python -I -S contain.py ...` does the same
by hand. It uses the standard library only and no site-packages: a run costs ~30 ms more (ctypes
is a third of it), measured on this project's CPU machine and on an H200 machine. MODE is

- `namespaces`: new PID and mount namespaces (and a network namespace with only loopback unless
  `--network yes`), inside a new user namespace where the plain ones are refused. The file system
  is made read-only but for the `--writable` folders, /dev and a fresh /proc; each `--readonly`
  folder is read-only even inside a writable one (the deeper folder wins). A small init (PID 1 of
  the namespace) runs the command; when the command ends the init exits, and the kernel kills
  every process left in the namespace, also those that called setsid or double-forked, which
  cannot signal or even see the supervisor.
- `subreaper`: the supervisor is the child subreaper, so every orphan of the run (setsid, double
  fork) is reparented to it; when the command ends it kills and reaps all its descendants.

Either way the command's exit status is passed through (a death by signal as a death by the same
signal). SIGTERM (the runner's timeout reaches the whole group) leaves the command `--grace`
seconds before everything is killed; SIGUSR1 kills everything at once, and the runner's death
sends SIGUSR1. At the end one report goes to the `--report` pipe, which the command never holds:
`setup ...` (what contains the run), `unprotected PATH: why` (a read-only folder left writable),
`writable PATH: why` (a mount left writable), and `done` once no process of the run is left; or
`error ...` when the command could not be started contained (exit status 125, nothing ran).
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import time

from nvcc_opt.workspace.proc_tree import PASS, kill_descendants, sweep

TYPE_CHECKING = False  # typing and signal (enum) cost more start-up than the rest of this file
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
    from typing import NoReturn
else:
    import _signal

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOSYMFOLLOW, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 256, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 18, 1 << 21, 1 << 24
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 1
# Mount flags a read-only remount keeps: in a user namespace changing them is refused (EPERM).
KEPT = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (8192, MS_NOSYMFOLLOW),  # ST_NOSYMFOLLOW
)
KERNEL_FOLDERS = ("/dev", "/proc")  # left as they are: the GPU's device nodes; /proc is new
WATCHED = {_signal.SIGCHLD, _signal.SIGTERM, _signal.SIGUSR1}
EXIT_SETUP = 125

_libc = ctypes.CDLL(None, use_errno=True)


class Options:
    """`MODE --grace S --report FD --parent PID --network yes|no [--writable P]... [--readonly
    P]... -- ARGV`; paths are absolute and resolved by the runner."""

    def __init__(self, words: list[str]) -> None:
        split = words.index("--")
        self.mode = words[0]
        self.command = words[split + 1 :]
        self.grace, self.report, self.parent, self.network = 2.0, -1, 0, False
        self.writable: list[str] = []
        self.readonly: list[str] = []
        pairs = words[1:split]
        for name, value in zip(pairs[::2], pairs[1::2], strict=True):
            if name == "--grace":
                self.grace = float(value)
            elif name == "--report":
                self.report = int(value)
            elif name == "--parent":
                self.parent = int(value)
            elif name == "--network":
                self.network = value == "yes"
            elif name in ("--writable", "--readonly"):
                getattr(self, name[2:]).append(value)
            else:
                raise ValueError(f"unknown option {name}")
        if self.mode not in ("namespaces", "subreaper") or not self.command:
            raise ValueError("usage: contain.py namespaces|subreaper [options] -- ARGV")


def _failed(what: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{what}: {os.strerror(code)}")


def _prctl(option: int, value: int) -> None:
    zero = ctypes.c_ulong(0)
    if _libc.prctl(option, ctypes.c_ulong(value), zero, zero, zero) != 0:
        raise _failed("prctl")


def _unshare(flags: int) -> None:
    if _libc.unshare(flags) != 0:
        raise _failed("unshare")


def _mount(source: str | None, target: str, kind: str | None, flags: int) -> None:
    words = [None if s is None else os.fsencode(s) for s in (source, target, kind)]
    if _libc.mount(*words, ctypes.c_ulong(flags), None) != 0:
        raise _failed(f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


def _enter_namespaces(options: Options) -> str:
    """Unshare the namespaces (in a user namespace when the plain ones are refused); what was
    set up, for the report."""
    flags = CLONE_NEWNS | CLONE_NEWPID | (0 if options.network else CLONE_NEWNET)
    user = ""
    try:
        _unshare(flags)
    except OSError as plain:
        if plain.errno not in (errno.EPERM, errno.EACCES, errno.EINVAL):
            raise
        uid, gid = os.geteuid(), os.getegid()
        try:
            _unshare(flags | CLONE_NEWUSER)
        except OSError as nested:
            why = f"{plain.strerror}; with a user namespace, {nested.strerror}"
            raise OSError(nested.errno, why) from None
        _write("/proc/self/setgroups", "deny")  # needed before an unprivileged gid_map
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        user = ", in a user namespace"
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
    kinds = "PID and mount" if options.network else "PID, mount and network"
    network = "" if options.network else _loopback_up()
    return f"{kinds} namespaces{user}{network}"


def _loopback_up() -> str:
    """Bring up `lo` in the new network namespace (as bubblewrap does); "" or what failed."""
    import _socket
    import fcntl
    import struct

    link = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        asked = fcntl.ioctl(link.fileno(), SIOCGIFFLAGS, struct.pack("16sH22x", b"lo", 0))
        flags = struct.unpack("16sH22x", asked)[1] | IFF_UP
        fcntl.ioctl(link.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags))
    except OSError as exc:
        return f" (loopback down: {exc.strerror})"
    finally:
        link.close()
    return ""


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _under_any(path: str, folders: list[str] | tuple[str, ...]) -> bool:
    return any(_under(path, folder) for folder in folders)


def _mount_points() -> list[str]:
    with open("/proc/self/mountinfo", "rb") as handle:
        return [_unescaped(line.split()[4]) for line in handle.read().splitlines()]


def _unescaped(word: bytes) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    out, i = bytearray(), 0
    while i < len(word):
        if word[i : i + 1] == b"\\" and word[i + 1 : i + 4].isdigit():
            out.append(int(word[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(word[i])
            i += 1
    return os.fsdecode(bytes(out))


def _remount_read_only(point: str) -> str:
    """ "" once the mount at `point` is read-only (this mount only: MS_BIND), else why not."""
    try:
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY
        found = os.statvfs(point).f_flag
        flags |= sum(flag for kept, flag in KEPT if found & kept)
        if found & os.ST_NOATIME:
            flags |= MS_NOATIME
        else:
            flags |= MS_RELATIME if found & os.ST_RELATIME else MS_STRICTATIME
        _mount(None, point, None, flags)
    except OSError as exc:
        return str(exc.strerror or exc)
    return ""


def _read_only(options: Options) -> list[str]:
    """Make everything read-only but the writable folders, /dev and /proc, then each readonly
    folder; report lines for what stayed writable."""
    writable = [w for w in options.writable if not _under_any(w, KERNEL_FOLDERS)]
    for folder in writable:
        _mount(folder, folder, None, MS_BIND | MS_REC)  # its own mount: the pass below skips it
    lines = []
    for point in _mount_points():
        if not _under_any(point, (*KERNEL_FOLDERS, *writable)):
            why = _remount_read_only(point)
            lines += [f"writable {point}: {why}"] if why else []
    for folder in options.readonly:
        if not os.path.lexists(folder):
            continue  # nothing to protect; its parent is read-only unless writable
        inner = [w for w in writable if _under(w, folder) and w != folder]
        try:
            _mount(folder, folder, None, MS_BIND | MS_REC)
        except OSError as exc:
            lines.append(f"unprotected {folder}: {exc.strerror}")
            continue
        for point in _mount_points():
            if _under(point, folder) and not _under_any(point, inner):
                why = _remount_read_only(point)
                lines += [f"unprotected {point}: {why}"] if why else []
    return lines


def _exec(argv: list[str]) -> NoReturn:
    """In a forked child: the command, with the signal state a fresh process has."""
    try:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, [])
        for signum in (_signal.SIGPIPE, _signal.SIGXFSZ):  # Python ignores these; exec keeps it
            _signal.signal(signum, _signal.SIG_DFL)
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"cannot run {argv[0]}: {exc.strerror or exc}\n".encode())
    os._exit(127)


def _init(options: Options, status_pipe: int) -> NoReturn:
    """PID 1 of the new namespace: reap orphans until the command ends, pass its status on,
    exit (which kills the namespace). Only SIGKILL from outside ends it sooner."""
    message = b""
    try:
        os.close(options.report)
        _prctl(PR_SET_PDEATHSIG, _signal.SIGKILL)  # the supervisor gone: the namespace with it
        _unshare(CLONE_NEWNS)  # a /proc of the new namespace, for the run only
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        command = os.fork()
        if command == 0:
            _exec(options.command)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == command:
                message = b"%d" % status
                break
    except OSError as exc:
        message = f"error {exc.strerror or exc}".encode()
    os.write(status_pipe, message)
    os._exit(0)


def _spawn_init(options: Options) -> tuple[int, int]:
    """Fork the namespace's init; (its pid, the read end of the pipe its status arrives on)."""
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reading)
        _init(options, writing)
    os.close(writing)
    return child, reading


def _spawn_command(options: Options) -> int:
    supervisor = os.getpid()
    child = os.fork()
    if child == 0:
        _prctl(PR_SET_PDEATHSIG, _signal.SIGKILL)
        if os.getppid() != supervisor:
            os._exit(EXIT_SETUP)
        _exec(options.command)
    return child


def _reaped(child: int, reaper: bool) -> int | None:
    """`child`'s wait status once it ended; a subreaper reaps the orphans it inherits too."""
    if not reaper:
        pid, status = os.waitpid(child, os.WNOHANG)
        return status if pid else None
    found = None
    try:
        while True:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return found
            if pid == child:
                found = status
    except ChildProcessError:
        return found


def _supervise(child: int, kill_all: Callable[[], None], reaper: bool, grace: float) -> int:
    """Wait for `child`, killing everything `grace` seconds after a SIGTERM or at a SIGUSR1."""
    deadline: float | None = None
    while (status := _reaped(child, reaper)) is None:
        left = 1.0 if deadline is None else max(deadline - time.monotonic(), 0.0)
        got = _signal.sigtimedwait(WATCHED, left)
        signo = 0 if got is None else got.si_signo
        if signo == _signal.SIGTERM and deadline is None:
            deadline = time.monotonic() + grace
        if signo == _signal.SIGUSR1 or (deadline is not None and time.monotonic() >= deadline):
            kill_all()
            deadline = time.monotonic() + PASS  # again, should it still be there then
    return status


def _status_from_init(init_status: int, pipe: int) -> tuple[int, str]:
    """The command's wait status as the init passed it on (or the init's own, when it was
    killed first), and an error the init met."""
    text = os.read(pipe, 4096).decode(errors="replace")
    os.close(pipe)
    if text.startswith("error "):
        return init_status, text[6:]
    return (int(text) if text else init_status), ""


def _exit_like(status: int) -> NoReturn:
    """End as the command ended: the same exit code, or death by the same signal."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        _prctl(PR_SET_DUMPABLE, 0)  # no core file of the supervisor for the command's crash
        if signum != _signal.SIGKILL:  # its action cannot be changed, nor needs to be
            _signal.signal(signum, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal that cannot kill (the command could not die of it)
    os._exit(os.waitstatus_to_exitcode(status))


def main(words: list[str]) -> NoReturn:
    options = Options(words)
    report = options.report
    os.set_inheritable(report, False)
    _prctl(PR_SET_PDEATHSIG, _signal.SIGUSR1)  # the runner gone: end the run
    if os.getppid() != options.parent:
        os._exit(EXIT_SETUP)
    _signal.pthread_sigmask(_signal.SIG_BLOCK, WATCHED)
    lines: list[str] = []
    init_pipe = -1
    try:
        if options.mode == "namespaces":
            lines.append("setup " + _enter_namespaces(options))
            lines += _read_only(options)
            os.chdir(os.getcwd())  # onto the new mounts: the old folder is the one below them
            child, init_pipe = _spawn_init(options)
        else:
            _prctl(PR_SET_CHILD_SUBREAPER, 1)
            lines.append("setup subreaper")
            child = _spawn_command(options)
    except OSError as exc:
        os.write(report, f"error {exc.strerror or exc}\n".encode())
        os._exit(EXIT_SETUP)
    _prctl(PR_SET_DUMPABLE, 0)  # the run's processes cannot ptrace this one or open its pipes
    reaper = options.mode == "subreaper"
    kill_all = kill_descendants if reaper else lambda: os.kill(child, _signal.SIGKILL)
    status = _supervise(child, kill_all, reaper, options.grace)
    if reaper:
        sweep()
    else:
        status, error = _status_from_init(status, init_pipe)
        if error:
            os.write(report, f"error {error}\n".encode())
            os._exit(EXIT_SETUP)
    os.write(report, "".join(f"{line}\n" for line in [*lines, "done"]).encode())
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
