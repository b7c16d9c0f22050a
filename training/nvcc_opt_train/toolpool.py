"""The executor tool calls and final verifications of GRPO rollouts run on: one place to swap.

`open_executor(spec)` is nvcc-opt's tool pool (`nvcc_opt.pool.open_pool`): "serial" runs each
call inline (trl's own way), "local" / "local:N" on N threads of this process (default: one per
core), where every run that times or checks on a GPU takes that GPU's lease, so concurrent
calls never share a GPU measurement. A rollout's tools keep their state in this process (a
Benchmark's private trees and history), so calls cannot travel to other hosts yet: a "parsl:"
pool is refused here in one line rather than failing call by call.
"""

from __future__ import annotations

from concurrent.futures import Executor

from nvcc_opt.pool import PoolError, PoolSpecError, open_pool

__all__ = ["PoolError", "PoolSpecError", "open_executor"]


def open_executor(spec: str) -> Executor:
    """The executor for `--pool SPEC`: "serial" | "local" | "local:N"."""
    if spec.strip().startswith("parsl:"):
        raise PoolSpecError(
            f"--pool {spec}: GRPO rollouts keep their tools' state in the trainer's process, so "
            "their calls cannot go to a Parsl pool yet; use local or local:N"
        )
    return open_pool(spec)
