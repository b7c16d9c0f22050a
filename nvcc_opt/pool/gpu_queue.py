"""GPUs handed to jobs one job per GPU at a time: the one scheduler `optimize --gpus`, `bench
suite --gpus`, `train problems/baseline` and the RAJAPerf protocol share. A job takes a free GPU
(waiting while all are taken) and gives it back when it ends, so a GPU never idles while jobs
wait. (What a run does on its GPU takes that GPU's lease too: `lease.gpu_lease`.)"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Generic, TypeVar

G = TypeVar("G", str, str | None)
I = TypeVar("I")  # noqa: E741
R = TypeVar("R")


class GpuQueue(Generic[G]):
    """The free GPUs of `gpus` (None stands for "the caller's environment": one job at a time)."""

    def __init__(self, gpus: Iterable[G]) -> None:
        self._free: queue.Queue[G] = queue.Queue()
        for gpu in gpus:
            self._free.put(gpu)
        self.size = self._free.qsize()

    @contextmanager
    def taken(self) -> Iterator[G]:
        """A free GPU for the `with` block, given back when it ends (also on an exception)."""
        gpu = self._free.get()
        try:
            yield gpu
        finally:
            self._free.put(gpu)


def each_on_a_gpu(
    items: Sequence[I], gpus: Sequence[str], work: Callable[[I, str | None], R]
) -> list[R]:
    """`work(item, gpu)` for every item, results in the items' order: one after another with
    gpu None when `gpus` is empty, else as many at once as GPUs, each on one of its own."""
    if not gpus:
        return [work(item, None) for item in items]
    free: GpuQueue[str] = GpuQueue(gpus)

    def one(item: I) -> R:
        with free.taken() as gpu:
            return work(item, gpu)

    with ThreadPoolExecutor(max_workers=free.size) as pool:
        futures = [pool.submit(one, item) for item in items]
        try:
            return [future.result() for future in futures]
        except KeyboardInterrupt:
            pool.shutdown(cancel_futures=True)
            raise
