"""A call timed where it runs: wall time, and the part of it spent waiting for a GPU lease.

Submit `timed(fn, *args)` instead of `fn` to learn, per call, tool time against time spent
waiting for a GPU that another call was measuring on (`pool.submit(timed, tool, args)`). It is
a module-level function, so the Parsl pool can ship it to another node; the lease times are
those of the worker that ran the call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, ParamSpec, TypeVar

from nvcc_opt.pool.lease import lease_stats

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class Timed(Generic[T]):
    """A call's value and its times in seconds: wall time in the worker, time spent waiting for
    GPU leases and holding them (`wall_s - gpu_wait_s` is the tool's own time)."""

    value: T
    wall_s: float
    gpu_wait_s: float
    gpu_held_s: float
    leases: int


def timed(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Timed[T]:
    """Run `fn(*args, **kwargs)` and time it (its exceptions pass through)."""
    start = time.monotonic()
    with lease_stats() as stats:
        value = fn(*args, **kwargs)
    return Timed(value, time.monotonic() - start, stats.waited_s, stats.held_s, stats.leases)
