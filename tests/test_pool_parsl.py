"""The Parsl pool: real calls on a real HighThroughputExecutor whose workers Parsl's
LocalProvider starts on this host (the shipped example config), at once; a worker killed
mid-call fails that call and the pool goes on; what cannot be pickled and bad config files are
one clear error naming the file."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Executor
from pathlib import Path

import pytest

from nvcc_opt.pool import PoolError, open_pool, timed
from nvcc_opt.pool.parsl_pool import INSTALL, load_config

EXAMPLE = Path(__file__).resolve().parents[1] / "nvcc_opt" / "pool" / "examples" / "parsl_local.py"
WORKERS = 4
needs_parsl = pytest.mark.skipif(
    importlib.util.find_spec("parsl") is None,
    reason="Parsl is not installed (pip install 'nvcc-opt[pool]'): the Parsl pool is optional",
)


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Executor]:
    run_dir = tmp_path_factory.mktemp("parsl-runinfo")
    os.environ["NVCC_OPT_PARSL_RUN_DIR"] = str(run_dir)
    os.environ["NVCC_OPT_PARSL_WORKERS"] = str(WORKERS)
    try:
        opened = open_pool(f"parsl:{EXAMPLE}")
    finally:
        del os.environ["NVCC_OPT_PARSL_RUN_DIR"], os.environ["NVCC_OPT_PARSL_WORKERS"]
    yield opened
    opened.shutdown()


def rendezvous(folder: str, me: int, count: int) -> tuple[int, int]:
    """Returns (me, the worker's pid) once `count` calls are running at the same time, each
    in its own worker; raises if they never are (they ran one after another)."""
    Path(folder, str(me)).write_text(str(os.getpid()))
    deadline = time.monotonic() + 20
    while len(list(Path(folder).iterdir())) < count:
        if time.monotonic() > deadline:
            raise TimeoutError("the other calls never ran at the same time as this one")
        time.sleep(0.05)
    return me, os.getpid()


def kill_own_worker() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@needs_parsl
@pytest.mark.slow  # the pool's start (a real interchange and workers) takes seconds
def test_parsl_pool_runs_real_calls_at_once(pool: Executor, tmp_path: Path) -> None:
    futures = [pool.submit(rendezvous, str(tmp_path), i, WORKERS) for i in range(WORKERS)]
    results = [f.result(timeout=60) for f in futures]
    assert sorted(me for me, _ in results) == list(range(WORKERS))
    assert len({pid for _, pid in results}) == WORKERS  # other processes, not this one
    assert os.getpid() not in {pid for _, pid in results}
    done = pool.submit(timed, pow, 3, 4).result(timeout=60)
    assert done.value == 81 and done.gpu_wait_s == 0.0


@needs_parsl
@pytest.mark.slow  # the pool's start (a real interchange and workers) takes seconds
def test_a_worker_killed_mid_call_fails_that_call_and_the_pool_goes_on(pool: Executor) -> None:
    lost = pool.submit(kill_own_worker)
    with pytest.raises(Exception) as caught:
        lost.result(timeout=60)
    assert "WorkerLost" in type(caught.value).__name__ or "worker" in str(caught.value).lower()
    assert list(pool.map(pow, [2, 2], [3, 5], timeout=60)) == [8, 32]


@needs_parsl
@pytest.mark.slow  # the pool's start (a real interchange and workers) takes seconds
def test_a_call_that_cannot_be_pickled_is_refused_at_submit(pool: Executor) -> None:
    with pytest.raises(PoolError) as caught:
        pool.submit(sorted, (i for i in range(3)))
    message = str(caught.value)
    assert "cannot be pickled" in message and "sorted" in message and "\n" not in message


@needs_parsl
@pytest.mark.parametrize(
    "text, words",
    [
        ("x = 1\n", "`config` must be a parsl.config.Config, found nothing"),
        ("config = 3\n", "found int"),
        ("import os\nconfig = (\n", ":2: "),
        ("import os\n\nconfig = os.nope\n", ":3: AttributeError"),
    ],
)
def test_a_bad_config_file_is_one_line_naming_it(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "cluster.py"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PoolError) as caught:
        open_pool(f"parsl:{path}")
    message = str(caught.value)
    assert message.startswith(str(path)) and words in message and "\n" not in message


def test_a_missing_config_file_and_a_missing_parsl_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere.py"
    if importlib.util.find_spec("parsl") is not None:
        with pytest.raises(PoolError, match=f"^{missing}: no such Parsl config file"):
            load_config(missing)
    monkeypatch.setitem(sys.modules, "parsl.config", None)  # import fails as if not installed
    with pytest.raises(PoolError) as caught:
        open_pool(f"parsl:{EXAMPLE}")
    assert str(caught.value) == INSTALL and "pip install" in INSTALL


@needs_parsl
@pytest.mark.parametrize(
    "name, provider", [("parsl_slurm", "SlurmProvider"), ("parsl_flux", "LocalProvider")]
)
def test_the_documented_cluster_configs_are_configs(name: str, provider: str) -> None:
    """The Slurm and Flux examples of PARSL.md load (no cluster here to start them on)."""
    config = load_config(EXAMPLE.with_name(f"{name}.py"))
    (executor,) = config.executors
    assert type(executor).__name__ == "HighThroughputExecutor"
    assert type(executor.provider).__name__ == provider
