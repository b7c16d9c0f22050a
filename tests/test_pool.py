"""nvcc_opt.pool: the local pool runs calls at once (a test that fails if they ran one after
another), the serial pool runs them one after another, a call whose process is killed comes
back as a result or a failed Future and the pool goes on, specs that name no pool are refused."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

import pytest

from nvcc_opt.pool import PoolSpecError, SerialExecutor, cpu_count, open_pool, timed
from nvcc_opt.workspace.runner import Completed, ProcessRunner

N = 4


def _meet(barrier: threading.Barrier) -> int:
    """Returns only once N calls are running at the same time (else BrokenBarrierError)."""
    return barrier.wait()


def test_local_pool_runs_calls_at_once() -> None:
    barrier = threading.Barrier(N, timeout=10)
    pool = open_pool(f"local:{N}")
    try:
        futures = [pool.submit(_meet, barrier) for _ in range(N)]
        assert sorted(f.result(timeout=30) for f in futures) == list(range(N))
    finally:
        pool.shutdown()


def test_default_pool_is_local_with_a_worker_per_core() -> None:
    for spec in (None, "", "local"):
        pool = open_pool(spec)
        assert isinstance(pool, ThreadPoolExecutor) and pool._max_workers == cpu_count()
        pool.shutdown()


def test_serial_pool_runs_each_call_inline_one_after_another() -> None:
    pool = open_pool("serial")
    assert isinstance(pool, SerialExecutor)
    barrier = threading.Barrier(2, timeout=0.5)  # never met: no second call runs meanwhile
    first = pool.submit(_meet, barrier)
    assert first.done() and isinstance(first.exception(), threading.BrokenBarrierError)
    spans: list[tuple[float, float]] = []

    def work(i: int) -> int:
        start = time.monotonic()
        time.sleep(0.02)
        spans.append((start, time.monotonic()))
        return i * i

    assert list(pool.map(work, range(5))) == [0, 1, 4, 9, 16]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(work, 1)


def _run_until_killed(pidfile: Path) -> Completed:
    """A tool call whose work is a subprocess: it writes its pid, then sleeps until killed."""
    return ProcessRunner().run(
        ["sh", "-c", f"echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile} && exec sleep 120"],
        cwd=pidfile.parent,
        timeout_s=120,
        sandbox=False,  # the pid it writes is the one to kill, outside any namespace
    )


def _fails(message: str) -> None:
    raise RuntimeError(message)


@pytest.mark.parametrize("spec", ["local:2", "local:1"])
def test_a_call_whose_process_is_killed_comes_back_and_the_pool_goes_on(
    tmp_path: Path, spec: str
) -> None:
    pidfile = tmp_path / "pid"
    pool: Executor = open_pool(spec)
    try:
        killed = pool.submit(timed, _run_until_killed, pidfile)
        deadline = time.monotonic() + 30
        while not pidfile.exists():
            assert time.monotonic() < deadline, "the call never started its process"
            time.sleep(0.05)
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
        done = killed.result(timeout=30).value
        assert done.exit_status == -signal.SIGKILL and not done.ok
        failed = pool.submit(_fails, "the tool broke")
        with pytest.raises(RuntimeError, match="the tool broke"):
            failed.result(timeout=30)
        assert pool.submit(pow, 2, 10).result(timeout=30) == 1024
    finally:
        pool.shutdown()


@pytest.mark.parametrize(
    "spec, words",
    [
        ("threads", "unknown pool 'threads'"),
        ("local:0", "whole number of workers"),
        ("local:many", "whole number of workers"),
        ("serial:2", "unknown pool"),
        ("parsl:", "unknown pool"),
    ],
)
def test_a_spec_that_names_no_pool_is_one_clear_error(spec: str, words: str) -> None:
    with pytest.raises(PoolSpecError) as caught:
        open_pool(spec)
    message = str(caught.value)
    assert words in message and "\n" not in message
    assert "parsl:PATH" in message or "local:N" in message


def test_each_on_a_gpu_keeps_order_and_never_shares_a_gpu() -> None:
    """The one GPU scheduler (optimize, bench, train, the RAJAPerf protocol): results in the
    items' order, at most one job per GPU at once, all GPUs used; without GPUs, in this thread."""
    import threading
    import time

    from nvcc_opt.pool.gpu_queue import each_on_a_gpu

    busy: dict[str, int] = {}
    worst: dict[str, int] = {}
    lock = threading.Lock()

    def work(item: int, gpu: str | None) -> tuple[int, str | None]:
        assert gpu is not None
        with lock:
            busy[gpu] = busy.get(gpu, 0) + 1
            worst[gpu] = max(worst.get(gpu, 0), busy[gpu])
        time.sleep(0.02)
        with lock:
            busy[gpu] -= 1
        return item, gpu

    done = each_on_a_gpu(list(range(12)), ["0", "1", "2"], work)
    assert [item for item, _ in done] == list(range(12))
    assert worst == {"0": 1, "1": 1, "2": 1}
    here = threading.get_ident()
    assert each_on_a_gpu([1, 2], [], lambda i, g: (i, g, threading.get_ident() == here)) == [
        (1, None, True),
        (2, None, True),
    ]
