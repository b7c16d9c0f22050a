"""The serial pool: every call runs inline, in `submit`, one after another (trl's own way of
running the tool calls of a batch), so that a comparison changes nothing but the pool."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class SerialExecutor(Executor):
    """An Executor whose `submit` runs the call before it returns: the Future it gives back is
    done, holding the result or the exception (KeyboardInterrupt and SystemExit still stop
    the caller)."""

    def __init__(self) -> None:
        self._shut = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        if self._shut:
            raise RuntimeError("cannot submit to a pool after shutdown")
        future: Future[T] = Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shut = True
