"""GPU leases: a run that times or checks on a GPU holds that GPU alone.

Builds, compiles and analyses run in parallel on every core; a run of the application, of a
profiler or of a microbenchmark on a GPU takes a lease on that GPU first, so two measurements
never share a device, whichever thread, process or pool worker of this host starts them.

A lease is an exclusive `flock` on a lock file per GPU id and host in the lease folder
(`$NVCC_OPT_LEASE_DIR`, else `/tmp/nvcc-opt-leases-<user>`: /tmp itself, not $TMPDIR, so every
process of a user on this host agrees whatever TMPDIR it was given; users who share a GPU point
NVCC_OPT_LEASE_DIR at one folder all of them can write). The kernel drops a flock when its
holder's file descriptor closes, also when the holder is killed: a crashed worker's lease is
free again at once, with nothing to clean up. Lock files are never deleted (deleting one while
another process waits on it would let two holders in). `fcntl.flock` is used directly (it is
what filelock uses on Unix) because the whole-host lease below needs shared locks as well.

The GPU id is the CUDA_VISIBLE_DEVICES value of the run: "0", "1,2" (both, taken in sorted
order so two multi-GPU runs cannot deadlock), a UUID or MIG id as given (one device spelled two
ways is two ids: spell it the same way everywhere). None (CUDA_VISIBLE_DEVICES unset: the run
sees every GPU) takes the whole host: it waits for every single-GPU lease and they wait for it
(a shared lock on the host file beside each exclusive GPU lock). An empty id (no GPU visible)
takes nothing.

Time spent waiting for and holding leases is added to every `lease_stats()` collector open in
the calling context, so a caller can tell tool time from time spent waiting for a GPU.
"""

from __future__ import annotations

import fcntl
import getpass
import hashlib
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

LEASE_DIR_ENV = "NVCC_OPT_LEASE_DIR"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_WHOLE_HOST = "host"


@dataclass
class LeaseStats:
    """What the leases taken in a context cost: how many, seconds waited, seconds held."""

    leases: int = 0
    waited_s: float = 0.0
    held_s: float = 0.0
    gpus: set[str] = field(default_factory=set)

    def add(self, gpu: str, waited_s: float, held_s: float) -> None:
        self.leases += 1
        self.waited_s += waited_s
        self.held_s += held_s
        self.gpus.add(gpu)


@dataclass(frozen=True)
class Lease:
    """A lease held: the GPU id, and how long taking it waited."""

    gpu: str | None
    waited_s: float


_collectors: ContextVar[tuple[LeaseStats, ...]] = ContextVar("nvcc_opt_lease_stats", default=())
_held = threading.local()  # GPU ids this thread holds: taking one again does not wait on itself


def lease_dir() -> Path:
    """The folder of lock files: $NVCC_OPT_LEASE_DIR, else one per user under /tmp."""
    named = os.environ.get(LEASE_DIR_ENV)
    if named:
        return Path(named)
    return Path("/tmp") / f"nvcc-opt-leases-{_user()}"


def _user() -> str:
    try:
        return _SAFE.sub("_", getpass.getuser())
    except (KeyError, OSError):
        return str(os.getuid())


def device_ids(gpu: str | None) -> list[str]:
    """The devices of a CUDA_VISIBLE_DEVICES value, sorted, without blanks (pure).

    >>> device_ids("1, 0")
    ['0', '1']
    >>> device_ids("")
    []
    """
    if gpu is None:
        return []
    return sorted({part.strip() for part in gpu.split(",") if part.strip()})


def lock_path(device: str, folder: Path | None = None) -> Path:
    """The lock file of one device id on this host (the host is in the name, so a lease folder
    on a shared file system still gives each host its own GPUs)."""
    safe = _SAFE.sub("_", device)
    if safe != device:  # two ids that differ only in unsafe characters stay apart
        safe += "-" + hashlib.sha256(device.encode()).hexdigest()[:8]
    host = _SAFE.sub("_", socket.gethostname())
    return (folder or lease_dir()) / f"{host}.gpu-{safe}.lock"


def _host_path(folder: Path | None = None) -> Path:
    host = _SAFE.sub("_", socket.gethostname())
    return (folder or lease_dir()) / f"{host}.{_WHOLE_HOST}.lock"


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    """Hold `mode` (LOCK_EX or LOCK_SH) on `path` until the block ends, or the process does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _held_ids() -> set[str]:
    ids: set[str] | None = getattr(_held, "ids", None)
    if ids is None:
        ids = _held.ids = set()
    return ids


@contextmanager
def gpu_lease(gpu: str | None) -> Iterator[Lease]:
    """Hold the GPU(s) of CUDA_VISIBLE_DEVICES value `gpu` alone for the block (see the module
    docstring for None and ""). Reentrant in one thread: devices it holds are not taken again.
    Yields the lease with its wait time."""
    held = _held_ids()
    wanted = {_WHOLE_HOST} if gpu is None else set(device_ids(gpu))
    if _WHOLE_HOST in held or wanted <= held:
        yield Lease(gpu, 0.0)
        return
    if gpu is None and held:
        raise RuntimeError(
            f"a GPU lease on the whole host was asked while this thread holds GPU(s) "
            f"{', '.join(sorted(held))}: release them first"
        )
    start = time.monotonic()
    with ExitStack() as stack:
        stack.enter_context(_flock(_host_path(), fcntl.LOCK_EX if gpu is None else fcntl.LOCK_SH))
        for device in sorted(wanted - held - {_WHOLE_HOST}):
            stack.enter_context(_flock(lock_path(device), fcntl.LOCK_EX))
        taken = time.monotonic()
        mine = wanted - held
        held |= mine
        try:
            yield Lease(gpu, taken - start)
        finally:
            held -= mine
            for stats in _collectors.get():
                stats.add(",".join(sorted(wanted)), taken - start, time.monotonic() - taken)


@contextmanager
def lease_stats() -> Iterator[LeaseStats]:
    """Collect the wait and hold times of every lease taken in this context (this thread, or
    the task it runs) until the block ends; collectors nest."""
    stats = LeaseStats()
    token = _collectors.set((*_collectors.get(), stats))
    try:
        yield stats
    finally:
        _collectors.reset(token)
