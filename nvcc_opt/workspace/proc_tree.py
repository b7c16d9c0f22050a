"""The processes below one, read from /proc, and a kill that never hits a reused pid. Standard
library only: the run supervisor (contain.py) and the lifeline's keeper run it in `python -I -S`.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing and signal (enum) cost start-up in the supervisor
if TYPE_CHECKING:
    import signal as _signal
else:
    import _signal

PASS = 0.05  # seconds between kills while a killed process is still dying


def stat(pid: int) -> list[bytes]:
    """The fields of /proc/PID/stat after the command name (state first); [] when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def descendants(root: int) -> list[tuple[int, bytes]]:
    """(pid, start time) of every process below `root`, from one scan of /proc."""
    children: dict[int, list[tuple[int, bytes]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := stat(int(name))):
            children.setdefault(int(fields[1]), []).append((int(name), fields[19]))
    found, queue = [], [root]
    while queue:
        for pid, started in children.get(queue.pop(), []):
            found.append((pid, started))
            queue.append(pid)
    return found


def kill(pid: int, started: bytes) -> None:
    """SIGKILL `pid` if it is still the process scanned (a pidfd pins it against pid reuse)."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfd here (Linux before 5.3): a plain kill, with its small race
        handle = -1
    try:
        fields = stat(pid)
        if fields and fields[19] == started and handle >= 0:
            _signal.pidfd_send_signal(handle, _signal.SIGKILL)
        elif fields and fields[19] == started:
            os.kill(pid, _signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        if handle >= 0:
            os.close(handle)


def kill_descendants() -> None:
    """SIGKILL every process below this one (one scan)."""
    for pid, started in descendants(os.getpid()):
        kill(pid, started)


def sweep() -> None:
    """Kill and reap every descendant until none is left: killing a parent hands its children
    to this subreaper, and a process may fork between a scan and its kill."""
    while True:
        kill_descendants()
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.002)
