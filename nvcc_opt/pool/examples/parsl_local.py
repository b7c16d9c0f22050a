"""A Parsl pool on this host: a real HighThroughputExecutor whose workers Parsl's LocalProvider
starts here (what CI runs). `nvcc-opt ... --pool parsl:nvcc_opt/pool/examples/parsl_local.py`."""

import os
import tempfile

from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.providers import LocalProvider

WORKERS = int(os.environ.get("NVCC_OPT_PARSL_WORKERS", str(os.cpu_count() or 1)))

config = Config(
    executors=[
        HighThroughputExecutor(
            label="local",
            address="127.0.0.1",
            max_workers_per_node=WORKERS,
            cores_per_worker=1e-3,  # WORKERS workers whatever the cores: calls wait on subprocesses
            heartbeat_period=2,  # a killed worker fails its call within seconds, not 30
            provider=LocalProvider(init_blocks=1, min_blocks=1, max_blocks=1),  # type: ignore[no-untyped-call]
        )
    ],
    run_dir=os.environ.get(
        "NVCC_OPT_PARSL_RUN_DIR", os.path.join(tempfile.gettempdir(), "nvcc-opt-parsl")
    ),
    strategy="none",
)
