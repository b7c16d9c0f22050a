"""Starting the compiler from the launcher with `os.posix_spawnp`.

`subprocess` costs over 10 ms of start-up on every compile of a tagged file; the launcher needs
three things only: run a command with our stdout and stderr, run one with its output in files, and
read a short output (`nvcc --version`) from a pipe while the compile runs.
"""

from __future__ import annotations

import os
import select


class Spawned:
    """A started process; `wait()` gives an exit status the way a shell reports it."""

    __slots__ = ("pid", "pipe")

    def __init__(self, pid: int, pipe: int | None = None) -> None:
        self.pid = pid
        self.pipe = pipe

    def wait(self) -> int:
        while True:
            try:
                _, status = os.waitpid(self.pid, 0)
            except KeyboardInterrupt:
                continue  # the compiler got the same SIGINT; report how it ended
            code = os.waitstatus_to_exitcode(status)
            return 128 - code if code < 0 else code  # killed by a signal: 128 + its number

    def read(self, timeout_s: float, limit: int = 1 << 16) -> bytes:
        """What the process wrote to its pipe until it closed it (or the timeout: then killed)."""
        assert self.pipe is not None
        chunks: list[bytes] = []
        size = 0
        try:
            while size < limit:
                ready, _, _ = select.select([self.pipe], [], [], timeout_s)
                if not ready:
                    os.kill(self.pid, 9)  # SIGKILL (the signal module imports enum)
                    break
                chunk = os.read(self.pipe, 4096)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(self.pipe)
            self.wait()
        return b"".join(chunks)


def start(
    argv: list[str],
    env: dict[str, str],
    *,
    stdout: str | None = None,
    stderr: str | None = None,
    pipe: bool = False,
) -> Spawned:
    """Start `argv` (PATH searched). `stdout`/`stderr`: files to write them to; `pipe`: stdout
    to a pipe for `read()`, stderr discarded. Raises OSError when it cannot start."""
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = []
    read_end = None
    if pipe:
        read_end, write_end = os.pipe()
        actions += [
            (os.POSIX_SPAWN_DUP2, write_end, 1),
            (os.POSIX_SPAWN_CLOSE, read_end),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ]
    for fd, path in ((1, stdout), (2, stderr)):
        if path is not None:
            actions.append(
                (os.POSIX_SPAWN_OPEN, fd, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            )
    try:
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions)
    except BaseException:
        if read_end is not None:
            os.close(read_end)
        raise
    finally:
        if pipe:
            os.close(write_end)
    return Spawned(pid, read_end)


def call(argv: list[str], env: dict[str, str]) -> int:
    return start(argv, env).wait()
