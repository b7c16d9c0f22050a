"""GRPO rollouts against nvcc-opt's own tools: one environment per rollout (trl's
`environment_factory`), wrapping the Toolbox `nvcc-opt optimize` builds for the rollout's problem.

A problem is prepared once per training run (`prepare`): its app copied under the run's work
folder (with the problem set's shared folders beside it, as `bench suite` does), configured with
nvcc-opt as the CUDA compiler launcher and built, under the project's own [build] timeout_s. A
problem that fails to prepare stays in the data: its tools answer with the reason and its
rollouts get r_perf = -2, so a broken or hanging build never stops training.

Each rollout gets `open_catalog` for its problem (a Benchmark with its own private build trees,
the same guards and verdicts as optimize) on `reset`, and only the tools its row offers: trl
exposes an environment's public methods as its tools and renders one schema per environment
name, so there is one environment class per tool subset (`environment_class`), each with
methods for exactly those tools, declared with the tool's own signature and docstring.

A tool method does not run its tool: it submits `Toolbox.call` to the rollout pool (an
`Executor`) and returns a placeholder; `Rollouts.resolve` waits for and fills the placeholders
(see `grpo.ToolPoolGRPOTrainer`, which calls it once all rollouts' calls of a turn are
submitted). So the calls of every pending rollout run together.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import shutil
import threading
import time
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvcc_opt.agent.answer import FinalAnswer
from nvcc_opt.bench.app_run import bench_env
from nvcc_opt.bench.apps import shared_folders
from nvcc_opt.change_kind import unchanged
from nvcc_opt.config import ConfigError, ProjectConfig, load
from nvcc_opt.tools.catalog import _DECLARED, Catalog, open_catalog
from nvcc_opt.tools.region import Region
from nvcc_opt.verify import final
from nvcc_opt.workspace.runner import ProcessRunner, Runner
from nvcc_opt_train.appcheck import project_config
from nvcc_opt_train.rewards import Judged, judged_comparison

PENDING = "\x00nvcc-opt-pending:"
ERROR = "error: "


@dataclass(frozen=True)
class Prepared:
    """A problem ready for rollouts: its built copy, its region, or why it is not."""

    id: str
    region_ref: str  # "FILE:NAME" relative to the app
    root: Path
    config: ProjectConfig | None = None
    region: Region | None = None
    error: str | None = None  # why it could not be prepared; its rollouts get -2


def prepare(
    app: Path, region_ref: str, work: Path, launcher: str, cmake_args: tuple[str, ...]
) -> Prepared:
    """Copy `app` (and the shared folders beside it) under `work`, configure and build it through
    `launcher`; a Prepared with `error` set (one line) when any step fails or times out."""
    root = work / "problems" / app.name
    problem = app.name
    try:
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(app, root, symlinks=True, ignore=shutil.ignore_patterns("build"))
        for shared in shared_folders(app.parent):
            if shared.resolve() != app.resolve() and not (work / "problems" / shared.name).exists():
                shutil.copytree(shared, work / "problems" / shared.name, symlinks=True)
        config = project_config(root)  # its build folder does not exist yet
    except (OSError, ConfigError) as exc:
        return Prepared(problem, region_ref, root, error=f"prepare: {str(exc).splitlines()[0]}")
    env = bench_env(work / "state" / "store.db")
    steps = []
    if (root / "CMakeLists.txt").is_file():
        steps.append(("configure", [
            "cmake", "-S", str(root), "-B", str(config.build_dir), "-G", "Ninja",
            f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher}", *cmake_args,
        ]))  # fmt: skip
    steps.append(("build", config.render_build(config.build_dir)))
    for what, argv in steps:
        done = ProcessRunner().run(
            argv, cwd=root, env=env, timeout_s=config.build.timeout_s, sandbox=False
        )
        if done.timed_out:
            return Prepared(problem, region_ref, root, config, error=f"{what}: did not finish "
                            f"within [build] timeout_s = {config.build.timeout_s:g} s")  # fmt: skip
        if done.exit_status != 0:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return Prepared(problem, region_ref, root, config, error=f"{what} failed: {last[0]}")
    file, _, name = region_ref.rpartition(":")
    try:
        config = load(root)  # now with its build tree, as optimize loads it
        region = Region.find(root / file, name)
    except Exception as exc:  # RegionNotFound and friends: the problem is unusable, say why
        return Prepared(problem, region_ref, root, config, error=f"region {region_ref}: {exc}")
    return Prepared(problem, region_ref, root, config, region)


@dataclass
class RolloutState:
    """What one rollout did: its calls (name, seconds), and its final answer's judgement."""

    problem: str = ""
    offered: tuple[str, ...] = ()
    calls: list[tuple[str, float]] = field(default_factory=list)
    note: str = ""  # why the verification could not judge (for the step log)
    context_full: bool = False  # ended where inference would elide old tool results


@dataclass
class Rollouts:
    """What every environment of a training run shares: the problems, the pool, the
    placeholders of calls in flight, and the launcher private trees build through."""

    problems: Mapping[str, Prepared]
    executor: Executor
    launcher: str
    runner: Runner = field(default_factory=ProcessRunner)
    gpus: tuple[str, ...] = ()  # the tool runs' GPUs, one per rollout in turn; (): the problem's
    _pending: dict[str, Future[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _turns: itertools.count[int] = field(default_factory=itertools.count)

    def config_for(self, config: ProjectConfig) -> ProjectConfig:
        """The problem's configuration with the next of `gpus` as its only device (its runs take
        that GPU's lease), or as it is without `gpus`."""
        if not self.gpus:
            return config
        with self._lock:
            gpu = self.gpus[next(self._turns) % len(self.gpus)]
        return config.model_copy(update={"gpu": config.gpu.model_copy(update={"devices": (gpu,)})})

    def submit(self, call: Callable[[], str]) -> str:
        """Start `call` on the pool; the placeholder that stands for its result until resolved."""
        future = self.executor.submit(call)
        with self._lock:
            key = f"{PENDING}{next(self._ids)}"
            self._pending[key] = future
        return key

    def resolve(self, messages: list[dict[str, Any]]) -> float:
        """Replace each placeholder content in `messages` (in place) by its call's result; the
        seconds spent waiting."""
        began = time.monotonic()
        for message in messages:
            content = message.get("content")
            if isinstance(content, str) and content.startswith(PENDING):
                with self._lock:
                    future = self._pending.pop(content)
                message["content"] = _result(future)
        return time.monotonic() - began

    def drain(self) -> None:
        """Wait for every call still in flight (none should be, after a turn)."""
        with self._lock:
            futures, self._pending = list(self._pending.values()), {}
        for future in futures:
            _result(future)


def _result(future: Future[str]) -> str:
    try:
        return future.result()
    except Exception as exc:  # a worker that died: the model sees why, training goes on
        return f"{ERROR}the tool call failed in the pool ({type(exc).__name__}: {exc}); try again"


class RolloutEnv:
    """One rollout's tools. Subclasses made by `environment_class` add one method per tool."""

    shared: Rollouts
    offered: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._catalog: Catalog | None = None
        self._problem: Prepared | None = None
        self._config: ProjectConfig | None = None  # the problem's, on this rollout's GPU
        self.state = RolloutState()

    def reset(self, **row: Any) -> None:
        """A new rollout of the row's problem: fresh tools (and private trees) for it."""
        self._close()
        self._problem = self.shared.problems[str(row["problem"])]
        self.state = RolloutState(problem=self._problem.id, offered=self.offered)
        problem = self._problem
        if problem.error is None and problem.config is not None and problem.region is not None:
            self._config = self.shared.config_for(problem.config)
            self._catalog = open_catalog(
                problem.root,
                problem.region,
                config=self._config,
                runner=self.shared.runner,
                launcher=self.shared.launcher,
                label=f"grpo-{id(self)}",
                extra=self.offered,
            )

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        began = time.monotonic()
        try:
            if self._catalog is None:
                problem = self._problem
                why = problem.error if problem is not None else "no problem was set (reset)"
                return f"{ERROR}this problem cannot be built or run here: {why}"
            return self._catalog.toolbox.call(name, arguments)
        finally:
            self.state.calls.append((name, time.monotonic() - began))

    def _judge(self, answer: FinalAnswer | None) -> Judged | None:
        """The independent final verification of the rollout's final answer (None: none)."""
        problem = self._problem
        if answer is None or problem is None:
            return None
        if problem.error is not None or problem.config is None or problem.region is None:
            self.state.note = f"not verified: {problem.error}"
            return Judged(False, 1.0, 1.0)
        if unchanged(problem.region.text, answer.final_code, answer.compile_args):
            return Judged(True, 1.0, 1.0)  # as optimize: the original, nothing to verify
        verdict, notes = final.verify_code(
            self._config or problem.config,
            problem.region,
            answer.final_code,
            list(answer.compile_args),
            runner=self.shared.runner,
            launcher=self.shared.launcher,
        )
        reasons = (*verdict.reasons, *notes)
        self.state.note = "; ".join(reasons)[:300]
        return judged_comparison(verdict.status, verdict.comparison, reasons)

    def _tool_counts(self) -> Counter[str]:
        return Counter(name for name, _ in self.state.calls)

    def _close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None


def _tool_method(name: str) -> Callable[..., str]:
    declared = _DECLARED[name]

    def method(self: RolloutEnv, **arguments: Any) -> str:
        return self.shared.submit(functools.partial(self._call, name, arguments))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = declared.__doc__
    method.__signature__ = inspect.signature(declared)  # type: ignore[attr-defined]
    method.__annotations__ = typing.get_type_hints(declared)
    return method


def environment_class(tools: tuple[str, ...], shared: Rollouts) -> type[RolloutEnv]:
    """An environment class whose public methods are exactly `tools` (the subset offered)."""
    methods: dict[str, Any] = {name: _tool_method(name) for name in tools}
    name = "Env_" + "_".join(t.split("_")[0] for t in tools)
    return type(name, (RolloutEnv,), {**methods, "offered": tuple(tools), "shared": shared})


def subset_key(tools: tuple[str, ...]) -> str:
    """The environment name of a tool subset (the rows' `environment` column)."""
    return "+".join(tools)
