"""The Parsl pool: tool calls run by Parsl on the executors of a config the user writes (a
HighThroughputExecutor with a Slurm, Flux, PBS or local provider; see PARSL.md).

Calls travel to workers serialized, the way Parsl serializes them (pickle, else dill): each
call's function and arguments are serialized once at `submit`, so one that cannot be is a clear
error there and then, not a failed task later. The build trees a call names must be on a file
system the workers share. A worker that dies mid-call fails that call's Future (Parsl's
WorkerLost or ManagerLost); the pool goes on with the rest.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import shutil
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from functools import partial
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

INSTALL = "the parsl pool needs Parsl: pip install 'nvcc-opt[pool]' (or: pip install parsl)"


class PoolError(Exception):
    """A pool that cannot be opened or a call that cannot be sent: one line that says why."""


def _invoke(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)


def load_config(path: Path) -> Any:
    """The `config` a Parsl config file defines, or PoolError naming the file (and line)."""
    try:
        from parsl.config import Config
    except ImportError as exc:
        raise PoolError(INSTALL) from exc
    if not path.is_file():
        raise PoolError(f"{path}: no such Parsl config file (a Python file defining `config`)")
    try:
        namespace = runpy.run_path(str(path))
    except SyntaxError as exc:
        raise PoolError(f"{path}:{exc.lineno}: {exc.msg}") from exc
    except Exception as exc:
        line = next(
            (f.lineno for f in reversed(traceback.extract_tb(exc.__traceback__))
             if Path(f.filename) == path),
            None,
        )  # fmt: skip
        where = f"{path}:{line}" if line else str(path)
        raise PoolError(f"{where}: {type(exc).__name__}: {exc}") from exc
    config = namespace.get("config")
    if not isinstance(config, Config):
        found = "nothing" if config is None else type(config).__name__
        raise PoolError(f"{path}: `config` must be a parsl.config.Config, found {found}")
    return config


def _copy(future: Future[Any], task: Future[Any]) -> None:
    """The outcome of Parsl's task into the Future the caller holds: a plain Future, so that
    `cancel` (which Parsl's own futures refuse) works for a call not yet done, as Executor.map
    expects when it stops early."""
    if future.cancelled():
        return
    with contextlib.suppress(InvalidStateError):  # cancelled meanwhile
        exc = task.exception()
        if exc is None:
            future.set_result(task.result())
        else:
            future.set_exception(exc)


def _scripts_on_path() -> None:
    """Parsl starts its interchange and local workers by script name (interchange.py,
    process_worker_pool.py), installed beside this interpreter: a venv used without activating
    it lacks them on PATH. Remote workers get theirs from the provider's `worker_init`."""
    scripts = Path(sys.executable).parent
    if shutil.which("interchange.py") is None and (scripts / "interchange.py").is_file():
        os.environ["PATH"] = os.pathsep.join([str(scripts), os.environ.get("PATH", "")])


class ParslPool(Executor):
    """An Executor whose calls Parsl runs, on the executors of the config file at `path`."""

    def __init__(self, path: Path) -> None:
        config = load_config(path)
        from parsl.app.app import python_app
        from parsl.dataflow.dflow import DataFlowKernel
        from parsl.serialize import serialize

        _scripts_on_path()
        self.path = path
        self._serialize = serialize
        self._dfk = DataFlowKernel(config)
        self._app = python_app(_invoke, data_flow_kernel=self._dfk)
        self._futures: list[Future[Any]] = []
        self._shut = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        if self._shut:
            raise RuntimeError("cannot submit to a pool after shutdown")
        self._check_serializable(fn, args, kwargs)
        future: Future[T] = Future()
        self._app(fn, args, kwargs).add_done_callback(partial(_copy, future))
        self._futures = [f for f in self._futures if not f.done()]
        self._futures.append(future)
        return future

    def _check_serializable(self, fn: object, args: object, kwargs: object) -> None:
        name = getattr(fn, "__qualname__", type(fn).__name__)
        for what, value in (("function", fn), ("arguments", (args, kwargs))):
            try:
                self._serialize(value)
            except Exception as exc:
                raise PoolError(
                    f"the parsl pool cannot send a call of {name} to a worker: its {what} cannot "
                    f"be pickled ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); "
                    "submit a module-level function with plain-data arguments (paths, strings, "
                    "numbers), or use the local pool"
                ) from exc

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._shut:
            return
        self._shut = True
        if cancel_futures:
            for future in self._futures:
                future.cancel()
        if wait:
            for future in self._futures:
                if not future.cancelled():
                    future.exception()  # waits; a failed call is its caller's to read
        self._dfk.cleanup()
