"""Each problem's baseline time on the GPU, appended to SET/baselines.jsonl as it is measured.

Builds run in parallel over cores (in the set's scratch folders, `SET/.check/<id>/`, where the
build check left them), runs one problem at a time per GPU. A problem is run `runs` times as
nvcc-opt runs it; every run must pass its checks and print a time; the row keeps the median, the
runs and their spread. Problems already in baselines.jsonl (measured or failed) are not measured
again, so a call cut short (a device call lasts 10 minutes) continues where it stopped;
`within_s` stops starting problems after that many seconds.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nvcc_opt.bench.suite import machine
from nvcc_opt.workspace.runner import ProcessRunner
from nvcc_opt_train.appcheck import CHECK_DIR, AppFailed, Built, build_app, build_then_run, run_app
from nvcc_opt_train.problemset import BASELINES, Problem, ProblemSet, append_jsonl


class NotStarted(AppFailed):
    """The problem was not started: the time given (`within_s`) was up."""


@dataclass(frozen=True)
class BaselineOptions:
    gpus: tuple[str, ...]
    runs: int = 5
    jobs: int = 1
    within_s: float | None = None
    cmake_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measured:
    """What one call did: rows written, problems it did not get to."""

    written: int
    remaining: int
    already: int


def measure(
    problem_set: ProblemSet, options: BaselineOptions, say: Callable[[str], None]
) -> Measured:
    """Measure every problem without a row in baselines.jsonl; one row each as it finishes."""
    started = time.monotonic()
    done = problem_set.baselines()
    todo = [p for p in problem_set.problems() if p.id not in done]
    where = machine()
    host = f"{where['host']} ({where['gpu']})"
    root = problem_set.root
    parallel = max(1, (os.cpu_count() or 1) // max(1, options.jobs))

    def late() -> bool:
        return options.within_s is not None and time.monotonic() - started > options.within_s

    def build(problem: Problem) -> Built:
        if late():
            raise NotStarted("not started")
        scratch = root / CHECK_DIR / problem.id
        return build_app(root / problem.app, scratch, options.cmake_args, parallel)

    def run(problem: Problem, built: Built, gpu: str) -> tuple[list[float], str]:
        if late():
            raise NotStarted("not started")
        return [run_app(built, gpu, ProcessRunner()) for _ in range(options.runs)], gpu

    written = remaining = 0
    for problem, outcome in build_then_run(todo, build, run, options.jobs, options.gpus):
        if isinstance(outcome, NotStarted):
            remaining += 1
            continue
        row = _row(problem, outcome, host)
        append_jsonl(root / BASELINES, row)
        written += 1
        shown = f"{row['ms']:.4g} ms (spread {row['spread']:.1%})" if row["ok"] else row["reason"]
        say(f"{problem.id}: {shown}")
    return Measured(written, remaining, len(done))


def _row(problem: Problem, outcome: object, host: str) -> dict[str, Any]:
    at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if isinstance(outcome, AppFailed) or not isinstance(outcome, tuple):
        reason = str(outcome) if isinstance(outcome, AppFailed) else "no measurement"
        return {
            "id": problem.id,
            "ok": False,
            "ms": None,
            "runs_ms": [],
            "spread": None,
            "reason": reason,
            "gpu": None,
            "machine": host,
            "at": at,
        }
    runs_ms, gpu = outcome
    median = statistics.median(runs_ms)
    return {
        "id": problem.id,
        "ok": True,
        "ms": median,
        "runs_ms": runs_ms,
        "spread": (max(runs_ms) - min(runs_ms)) / median if median > 0 else 0.0,
        "reason": "",
        "gpu": gpu,
        "machine": host,
        "at": at,
    }


def spread(rows: Sequence[dict[str, Any]]) -> tuple[float, float, float] | None:
    """(min, median, max) of the measured baselines' ms; None when none was measured.

    >>> spread([{"ok": True, "ms": 2.0}, {"ok": False, "ms": None}, {"ok": True, "ms": 4.0}])
    (2.0, 3.0, 4.0)
    """
    times = [float(r["ms"]) for r in rows if r.get("ok") and isinstance(r.get("ms"), int | float)]
    if not times:
        return None
    return min(times), statistics.median(times), max(times)
