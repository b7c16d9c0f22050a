"""`nvcc-opt optimize` for one region: baseline, agent, independent verification, store.

Never stores a rewrite that failed verification: the model's final answer is rebuilt and
re-measured from scratch (`verify.final`), and only an "improved" verdict becomes a *proposed*
rewrite, with its trace, explanation, compile_args, statistics and the verification itself.
Anything else records "no verified improvement, original kept" (the paper's speedup 1.0).
An original that cannot be run, checked and timed here (no GPU, a failing run script, no time
in its output) raises CannotRun before the model is asked anything: nothing could be measured.
"""

from __future__ import annotations

import json
import random
import shlex
import shutil
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nvcc_opt.agent.loop import Agent, Limits
from nvcc_opt.agent.model import Model
from nvcc_opt.agent.trace import TraceWriter
from nvcc_opt.change_kind import change_kind, unchanged
from nvcc_opt.config import ProjectConfig
from nvcc_opt.store.api import Store
from nvcc_opt.submit import Answer, last_context, region_meta, verify_and_store
from nvcc_opt.toolbox.schema import Toolbox
from nvcc_opt.tools.bench import read_benchmark
from nvcc_opt.tools.catalog import open_catalog
from nvcc_opt.tools.prompt import build, choose_tools
from nvcc_opt.tools.region import Region
from nvcc_opt.verify import final
from nvcc_opt.verify.checks import RunOutput
from nvcc_opt.verify.measure import run_once
from nvcc_opt.workspace.runner import Completed, Runner

KEPT = "original kept"
PROPOSED = "proposed"


@dataclass(frozen=True)
class RegionResult:
    file: str
    region: str
    stopped: str  # how the agent stopped: final_answer, limit:turns, ...
    status: str  # PROPOSED or KEPT
    rewrite_id: int | None
    speedup: float  # verified; 1.0 when the original is kept
    reasons: tuple[str, ...]
    trace: str
    baseline_ms: float | None = None  # the run script's time before, as the prompt gave it
    wall_s: float = 0.0  # baseline, agent and final verification together
    explanation: str = ""  # the final answer's, also when the original is kept; "" without one
    change: str = ""  # change_kind of the final answer (code, fast math only, ...); "" without one

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "reasons": list(self.reasons)}


class CannotRun(RuntimeError):
    """The original could not be run or timed here: no rewrite can be judged against it."""


def baseline_ms(config: ProjectConfig, runner: Runner, build_dir: Path, gpu: str) -> float:
    """The baseline's time as the run script reports it: median of a few runs, each of which
    must pass its own checks and print a time. CannotRun, saying why, at the first that does
    not (before any model time is spent on a region nothing could be measured for)."""
    from nvcc_opt.verify.measure import Build, check

    times = []
    for _ in range(3):
        completed, output, seconds = run_once(config, runner, Build(build_dir), gpu)
        problem = _unusable(config, completed, output, seconds)
        if problem is not None:
            raise CannotRun(problem + _gpu_note())
        own = check(config, output, None)
        if not own.ok:
            raise CannotRun("it fails its own checks: " + "; ".join(own.reasons) + _gpu_note())
        assert seconds is not None
        times.append(seconds)
    return statistics.median(times) * 1e3


def _unusable(
    config: ProjectConfig, completed: Completed, output: RunOutput, seconds: float | None
) -> str | None:
    """Why one run of the original cannot serve as the baseline, or None."""
    command = shlex.join(completed.argv)
    if completed.timed_out:
        return f"`{command}` did not finish within [run] timeout_s = {config.run.timeout_s:g} s"
    if completed.exit_status != 0:
        last = _last_line(output.stderr) or _last_line(output.stdout) or "no output"
        return f"`{command}` exited with status {completed.exit_status}: {last}"
    if seconds is None:
        rules = config.time
        if rules.source == "file":
            return f"`{command}` wrote no time to [time] file {rules.file!r}"
        pattern = rules.regex.pattern if rules.regex is not None else "a number"
        return f"`{command}` printed no time: [time] regex {pattern!r} matched nothing"
    return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def no_gpu_here() -> bool:
    """No GPU driver tools on PATH: a program that needs a GPU cannot run here."""
    return shutil.which("nvidia-smi") is None


def _gpu_note() -> str:
    return " (there is no GPU here: nvidia-smi is not installed)" if no_gpu_here() else ""


def optimize_region(
    *,
    store: Store,
    config: ProjectConfig,
    region: Region,
    model: Model,
    runner: Runner,
    launcher: str,
    trace_path: Path,
    tools: list[str] | None = None,
    parity: bool = False,
    limits: Limits | None = None,
    seed: int = 0,
    label: str = "explore",
    progress: Callable[[str], None] = lambda _: None,
) -> RegionResult:
    started = time.monotonic()
    limits = limits or Limits()
    chosen = choose_tools(tools, parity=parity, rng=random.Random(seed))
    with open_catalog(
        config.root,
        region,
        config=config,
        runner=runner,
        launcher=launcher,
        label=label,
        extra=chosen,
    ) as catalog:
        assert catalog.bench is not None
        progress("building and timing the baseline")
        build_dir = catalog.bench.baseline().build_dir
        gpu = config.gpu.devices[0]
        base_ms = baseline_ms(config, runner, build_dir, gpu)
        progress(
            f"baseline {base_ms:.4g} ms (median of 3 runs; built and timed in "
            f"{_clock(time.monotonic() - started)})"
        )
        prompt = build(
            region,
            project_root=config.source_root,
            baseline_ms=base_ms,
            gpu=final.machine(runner).split(" / ", 1)[-1],
            compile_target=_target(store, region),
            tools=chosen,
        )
        trace = TraceWriter(trace_path, {"region": region_meta(region)})
        deadline = time.monotonic() + limits.wall_s
        toolbox = Reporting(catalog.toolbox, progress, deadline)
        agent = Agent(model, toolbox, chosen, limits, trace)
        outcome = agent.run(prompt.system, prompt.user)
    answer = outcome.answer

    def result(
        reasons: tuple[str, ...], rewrite_id: int | None = None, speedup: float = 1.0
    ) -> RegionResult:
        status = KEPT if rewrite_id is None else PROPOSED
        return RegionResult(
            str(region.file), region.name, outcome.reason, status, rewrite_id, speedup, reasons,
            str(trace_path), base_ms, time.monotonic() - started,
            answer.explanation if answer is not None else "",
            change_kind(region.text, answer.final_code, answer.compile_args)
            if answer is not None else "",
        )  # fmt: skip

    if answer is None:
        progress(f"agent stopped ({outcome.reason}) without a final answer")
        return result((f"no final answer: {outcome.reason}",))
    if unchanged(region.text, answer.final_code, answer.compile_args):
        return result(("the final answer is the region unchanged: nothing to verify",))
    progress(f"agent stopped ({outcome.reason}); verifying its answer independently")
    submitted = verify_and_store(
        store,
        config,
        region,
        Answer(
            answer.final_code,
            answer.explanation,
            tuple(answer.compile_args),
            model.name,
            json.loads(trace_path.read_text(encoding="utf-8")),
            "optimize",
        ),
        runner=runner,
        launcher=launcher,
    )
    verdict = submitted.verdict
    reasons = (*verdict.reasons, *submitted.notes)
    if submitted.rewrite_id is None or verdict.comparison is None:
        return result(reasons)
    return result(reasons, submitted.rewrite_id, verdict.comparison.speedup)


SLOW_CALL_S = 5.0  # a tool call at least this long says when it is done (compiles on a large file)


class Reporting(Toolbox):
    """The same tools, saying which is in flight, the best speedup benchmark_code found and the
    time left before the agent's wall-time limit."""

    def __init__(
        self, toolbox: Toolbox, progress: Callable[[str], None], deadline: float | None = None
    ) -> None:
        super().__init__(toolbox.tools.values())
        self.progress = progress
        self.deadline = deadline
        self.calls = 0
        self.best = 1.0

    def call(self, name: str, args_json: str | Mapping[str, Any]) -> str:
        self.calls += 1
        left = ""
        if self.deadline is not None:
            left = f", {_clock(max(0.0, self.deadline - time.monotonic()))} left"
        self.progress(f"tool call {self.calls}: {name} (best so far {self.best:.3f}x{left})")
        began = time.monotonic()
        observation = super().call(name, args_json)
        took = _clock(time.monotonic() - began)
        if name == "benchmark_code":
            measured = read_benchmark(observation)
            if measured.improved:
                self.best = max(self.best, measured.speedup)
            said = f"{measured.verdict}, {measured.speedup:.3f}x"
            if measured.verdict not in ("improved", "no improvement") and measured.why:
                said = f"{measured.verdict}: {measured.why[:120]}"
            self.progress(f"tool call {self.calls}: {said} (took {took})")
        elif time.monotonic() - began >= SLOW_CALL_S:
            self.progress(f"tool call {self.calls}: {name} took {took}")
        return observation


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _target(store: Store, region: Region) -> str:
    context = last_context(store, region)
    if context is not None and context.targets:
        return ",".join(context.targets)
    return "unknown (build through nvcc-opt first)"
