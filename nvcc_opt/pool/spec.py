"""`open_pool`: a pool from its spec, as a command line or a config names it."""

from __future__ import annotations

import os
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

from nvcc_opt.pool.parsl_pool import ParslPool, PoolError
from nvcc_opt.pool.serial import SerialExecutor

DEFAULT = "local"
FORMS = '"serial", "local", "local:N" (N workers) or "parsl:PATH" (a Parsl config file)'


class PoolSpecError(PoolError, ValueError):
    """A pool spec that names no pool."""


def cpu_count() -> int:
    """The cores this process may run on (a container's or a job's share, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def open_pool(spec: str | None = None) -> Executor:
    """The pool `spec` names; None or "" is "local".

    - "serial": each call runs inline in `submit`, one after another (trl's own way).
    - "local": threads on this host, one per core; tool calls spend their time in subprocesses
      (nvcc, cmake, the application), so threads are enough, and GPU runs take GPU leases.
    - "local:N": the same with N workers.
    - "parsl:PATH": Parsl runs the calls, on the executors of the `config` (a
      parsl.config.Config) that the Python file PATH defines, e.g. a HighThroughputExecutor
      with a Slurm or Flux provider (see nvcc_opt/pool/PARSL.md); calls must be picklable.

    Raises PoolSpecError for a spec of no such form, PoolError when a Parsl pool cannot open
    (Parsl missing, a bad config file: one line naming the file)."""
    text = (spec or DEFAULT).strip()
    kind, _, arg = text.partition(":")
    if kind == "serial" and not arg:
        return SerialExecutor()
    if kind == "local":
        return ThreadPoolExecutor(_workers(text, arg), thread_name_prefix="nvcc-opt-pool")
    if kind == "parsl" and arg.strip():
        return ParslPool(Path(arg.strip()).expanduser().resolve())
    raise PoolSpecError(f"unknown pool {text!r}: use {FORMS}")


def _workers(text: str, arg: str) -> int:
    if not arg:
        return cpu_count()
    if arg.strip().isdigit() and int(arg) > 0:
        return int(arg)
    raise PoolSpecError(f"pool {text!r}: N in local:N must be a whole number of workers, >= 1")
