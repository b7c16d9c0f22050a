"""The executor tool calls and final verifications of GRPO rollouts run on: one place to swap.

`open_executor(spec)` is `nvcc_opt.pool.open_pool(spec)` where that package exists (the tool
pool: local processes with per-GPU leases, or Parsl); until it does, "serial" runs each call
inline and "local" / "local:N" run them on N threads (default: the CPU count). Threads suit the
work: a tool call is mostly waiting on subprocesses (nvcc, cmake, the run script), and the tools
keep per-rollout state (a Benchmark's trees and history) in this process.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
_LOCAL = re.compile(r"local(?::([1-9][0-9]*))?")


class PoolSpecError(ValueError):
    """A --pool value this installation cannot open; one line."""


class InlineExecutor(Executor):
    """Runs each call at submit time, in the caller's thread ("serial": trl's own way)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the caller sees it from result(), as with any executor
            future.set_exception(exc)
        return future


def open_executor(spec: str) -> Executor:
    """The executor for `--pool SPEC`: "serial" | "local" | "local:N" | "parsl:PATH"."""
    if importlib.util.find_spec("nvcc_opt.pool") is not None:
        pool = importlib.import_module("nvcc_opt.pool")
        opened: Executor = pool.open_pool(spec)
        return opened
    if spec == "serial":
        return InlineExecutor()
    match = _LOCAL.fullmatch(spec)
    if match is not None:
        workers = int(match.group(1) or os.cpu_count() or 1)
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nvcc-opt-tool")
    if spec.startswith("parsl:"):
        raise PoolSpecError(
            f"--pool {spec}: the Parsl backend needs nvcc_opt.pool, which this installation lacks"
        )
    raise PoolSpecError(f"--pool {spec!r}: expected serial, local, local:N or parsl:PATH")
