"""Running the project's own run script on two builds, checked and timed the same way.

Correct before timed: `measure` runs each build once, checks the candidate's output against the
baseline's, and only then times them, paired (A B, B A, ...) after warm-up, stopping early once
the candidate cannot be called faster (`[run] stop_early_after`, see verify/stats.py). Runs are
sandboxed where bubblewrap works (writes only inside their tree and a scratch folder, no
network).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt.config import ProjectConfig
from nvcc_opt.verify.checks import CheckResult, RunOutput, check_run
from nvcc_opt.verify.stats import Comparison, compare, hopeless, schedule
from nvcc_opt.workspace.runner import Completed, Runner


class MeasureError(RuntimeError):
    """A run could not be timed (no time in its output, the time file missing)."""


@dataclass(frozen=True)
class Build:
    """A built application: the folder that `{build}` names, and what may be written."""

    build_dir: Path
    writable: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Measurement:
    baseline_output: RunOutput
    check: CheckResult
    comparison: Comparison | None  # None when the candidate was not correct: never timed
    runs: int
    sandbox_note: str  # "" when sandboxed, else why not


@contextmanager
def _scratch() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="nvcc-opt-run-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_once(
    config: ProjectConfig, runner: Runner, build: Build, gpu: str, args: tuple[str, ...] = ()
) -> tuple[Completed, RunOutput, float | None]:
    """One run: the process result, what the checks read, and its time in seconds (or None)."""
    with _scratch() as work:
        argv = [*config.render_run(build.build_dir, gpu, work), *args]
        done = runner.run(
            argv,
            cwd=config.run_cwd(build.build_dir, gpu, work),
            env={**os.environ, **config.run_env(build.build_dir, gpu, work)},
            timeout_s=config.run.timeout_s,
            writable=(*build.writable, build.build_dir, work),
        )
        files = {}
        for name in config.check.files:
            path = config.output_path(name, build.build_dir, gpu, work)
            if path.is_file():
                files[name] = path.read_bytes()
        output = RunOutput(done.exit_status, done.stdout, done.stderr, files, done.timed_out)
        seconds = _time_of(config, done, build, gpu, work) if done.ok else None
    return done, output, seconds


def _time_of(
    config: ProjectConfig, done: Completed, build: Build, gpu: str, work: Path
) -> float | None:
    time = config.time
    if time.source == "wall":
        return done.wall_s
    if time.source == "regex":
        text = f"{done.stdout}\n{done.stderr}"
    else:
        assert time.file is not None
        path = config.output_path(time.file, build.build_dir, gpu, work)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    if time.regex is None:
        return _number(text.strip())
    match = time.regex.search(text)
    return time.seconds(float(match.group(1))) if match else None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def check(config: ProjectConfig, output: RunOutput, baseline: RunOutput | None) -> CheckResult:
    rules = config.check
    return check_run(
        output,
        exit_status=rules.exit_status,
        require=[p.pattern for p in rules.require],
        forbid=[p.pattern for p in rules.forbid],
        numbers=_alternatives([p.pattern for p in rules.numbers]),
        files=list(rules.files),
        rtol=rules.rtol,
        atol=rules.atol,
        baseline=baseline,
    )


def _alternatives(patterns: list[str]) -> str | None:
    if not patterns:
        return None
    if len(patterns) == 1:
        return patterns[0]
    return "|".join(f"(?:{p})" for p in patterns)


def measure(
    config: ProjectConfig,
    runner: Runner,
    baseline: Build,
    candidate: Build,
    *,
    repeats: int,
    gpu: str,
    args: tuple[str, ...] = (),
    baseline_output: RunOutput | None = None,
    more_checks: Callable[[], list[str]] | None = None,
    stop_early: bool = True,
) -> Measurement:
    """Check the candidate against the baseline, then `more_checks` (fresh inputs, sanitizer:
    reasons it is wrong), then time both, paired."""
    note = ""
    if baseline_output is None:
        done, baseline_output, _ = run_once(config, runner, baseline, gpu, args)
        note = done.note
        own = check(config, baseline_output, None)
        if not own.ok:
            raise MeasureError("the baseline itself fails its checks: " + "; ".join(own.reasons))
    done, output, _ = run_once(config, runner, candidate, gpu, args)
    note = note or done.note
    verdict = check(config, output, baseline_output)
    if verdict.ok and more_checks is not None:
        problems = more_checks()
        if problems:
            verdict = CheckResult(False, tuple(problems))
    if not verdict.ok:
        return Measurement(baseline_output, verdict, None, 0, note)
    times: dict[str, list[float]] = {"A": [], "B": []}
    min_speedup = config.verify.min_speedup
    stop_after = config.run.stop_early_after if stop_early else 0
    for step in schedule(repeats, config.run.warmup):
        which = step[-1]
        build = baseline if which == "A" else candidate
        done, output, seconds = run_once(config, runner, build, gpu, args)
        if which == "B" and not step.startswith("warmup"):
            again = check(config, output, baseline_output)
            if not again.ok:  # correct once is not enough: every timed run must be
                return Measurement(baseline_output, again, None, 0, note)
        if seconds is None:
            raise MeasureError(_no_time(config, done))
        if not step.startswith("warmup"):
            times[which].append(seconds)
        pairs = len(times["B"])
        if (
            stop_after
            and pairs >= stop_after
            and len(times["A"]) == pairs < repeats
            and hopeless(times["A"], times["B"], min_speedup)
        ):
            break  # it cannot be called faster: the rest of the pairs would be wasted
    comparison = compare(times["A"], times["B"], min_speedup=min_speedup, planned=repeats)
    return Measurement(baseline_output, verdict, comparison, len(times["B"]), note)


def _no_time(config: ProjectConfig, done: Completed) -> str:
    if not done.ok:
        return f"a run failed (exit status {done.exit_status}): {done.stderr.strip()[-500:]}"
    source = config.time
    if source.source == "regex" and source.regex is not None:
        return f"no match for the [time] regex {source.regex.pattern!r} in the run's output"
    return f"no time in {source.file!r} after the run"
