"""The tool pool: every tool call of training (and of other batch work) is submitted to one
`concurrent.futures.Executor` and awaited, so the calls of many rollouts run at once, while
runs that time or check on a GPU take that GPU alone (`gpu_lease`).

    pool = open_pool("local")          # or "serial", "local:8", "parsl:cluster.py"
    future = pool.submit(timed, toolbox.call, "benchmark_code", {"code": text})
    done = future.result()             # Timed: .value, .wall_s, .gpu_wait_s, ...
    pool.shutdown()

Parsl is imported only by a "parsl:" pool.
"""

from nvcc_opt.pool.lease import Lease, LeaseStats, gpu_lease, lease_dir, lease_stats
from nvcc_opt.pool.parsl_pool import PoolError
from nvcc_opt.pool.serial import SerialExecutor
from nvcc_opt.pool.spec import PoolSpecError, cpu_count, open_pool
from nvcc_opt.pool.timed import Timed, timed

__all__ = [
    "Lease",
    "LeaseStats",
    "PoolError",
    "PoolSpecError",
    "SerialExecutor",
    "Timed",
    "cpu_count",
    "gpu_lease",
    "lease_dir",
    "lease_stats",
    "open_pool",
    "timed",
]
