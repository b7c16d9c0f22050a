"""A Parsl pool inside a Flux allocation (`flux alloc -N 4`, or a batch script run by
`flux batch`): a HighThroughputExecutor whose managers `flux run` starts, one per node of the
allocation. Run the trainer inside the allocation; edit the marked values.

Needs a file system shared by the nodes for the project and the build trees (TMPDIR), and
nvcc-opt installed on them. Parsl's own FluxExecutor (each call a Flux job) is the other way:
`config = Config(executors=[FluxExecutor(label="flux")])` in place of the one below."""

import os

from parsl.addresses import address_by_hostname
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import WrappedLauncher
from parsl.providers import LocalProvider

NODES = int(os.environ.get("NVCC_OPT_FLUX_NODES", "4"))  # edit: the allocation's nodes
SHARED = os.environ.get("NVCC_OPT_SHARED", os.path.expanduser("~/nvcc-opt-shared"))  # edit

config = Config(
    executors=[
        HighThroughputExecutor(
            label="flux",
            address=address_by_hostname(),
            max_workers_per_node=16,
            cores_per_worker=1e-3,
            heartbeat_period=10,
            provider=LocalProvider(  # type: ignore[no-untyped-call]
                nodes_per_block=NODES,
                init_blocks=1,
                max_blocks=1,
                worker_init=f"export TMPDIR={SHARED}/tmp",
                launcher=WrappedLauncher(prepend=f"flux run -N {NODES} -n {NODES} --exclusive"),
            ),
        )
    ],
    run_dir=f"{SHARED}/runinfo",
)
