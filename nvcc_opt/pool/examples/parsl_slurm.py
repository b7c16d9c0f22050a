"""A Parsl pool on Slurm nodes: a HighThroughputExecutor whose workers Slurm jobs start, one
manager per node (srun), as many workers per node as it has cores. Edit the marked values.

Needs a file system shared by this host and the nodes for the project and the build trees
(TMPDIR), nvcc-opt installed on the nodes (worker_init), and this host reachable from them."""

import os

from parsl.addresses import address_by_hostname
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import SrunLauncher
from parsl.providers import SlurmProvider

SHARED = os.environ.get("NVCC_OPT_SHARED", os.path.expanduser("~/nvcc-opt-shared"))  # edit
WORKER_INIT = f"""
source {os.path.expanduser("~/venvs/nvcc-opt/bin/activate")}  # edit: nvcc-opt and parsl
module load cuda/13.0  # edit: nvcc and the driver's libraries on the node
export TMPDIR={SHARED}/tmp
"""

config = Config(
    executors=[
        HighThroughputExecutor(
            label="slurm",
            address=address_by_hostname(),
            max_workers_per_node=16,  # tool calls wait on nvcc, cmake and the app
            cores_per_worker=1e-3,
            heartbeat_period=10,
            provider=SlurmProvider(
                partition="gpu",  # edit
                account="my-account",  # edit
                nodes_per_block=1,
                init_blocks=1,
                max_blocks=4,  # up to 4 nodes
                walltime="04:00:00",
                scheduler_options="#SBATCH --gpus-per-node=1",
                worker_init=WORKER_INIT,
                exclusive=True,
                launcher=SrunLauncher(),
            ),
        )
    ],
    run_dir=f"{SHARED}/runinfo",
)
