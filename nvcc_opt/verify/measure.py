"""Running the project's own run script on two builds, checked and timed the same way.

Correct before timed: `measure` runs each build once, checks the candidate's output against the
baseline's, and only then times them, paired (A B, B A, ...) after warm-up, stopping early once
the candidate cannot be called faster (`[run] stop_early_after`, see verify/stats.py). Runs are
contained (workspace/runner.py: their processes end with them; the build trees are read-only).

With the channel attached (`Attach`), every run also carries nvcc-opt's own measurement of it
(runtime/channel.cpp: GPU time and launches per kernel), and the timed runs must agree with it
(verify/corroborate.py); printed patterns are counted against the baseline's output
(verify/checks.py). Every run holds its GPU alone (nvcc_opt/pool/lease.py), so runs started by
other threads or processes of this host (a tool pool) never share the GPU with a measurement.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt.config import ProjectConfig
from nvcc_opt.pool.lease import gpu_lease
from nvcc_opt.runtime import report
from nvcc_opt.runtime.build import environment
from nvcc_opt.verify.checks import CheckResult, RunOutput, check_run
from nvcc_opt.verify.corroborate import Observed, channel_reasons, owned_speedup
from nvcc_opt.verify.credited import CHANGED, capped, credited_speedup
from nvcc_opt.verify.kernels import RegionKernels
from nvcc_opt.verify.stats import Comparison, compare, hopeless, schedule
from nvcc_opt.workspace.runner import Completed, Runner

# A timed run may take this many times the slowest check run of the same call before it is
# taken for hung and stopped (never longer than [run] timeout_s, never less than HANG_FLOOR_S):
# a run of 2 s that hangs costs a minute, not the whole [run] timeout, and it is said.
HANG_FACTOR = 10.0
HANG_FLOOR_S = 60.0


class MeasureError(RuntimeError):
    """A run could not be timed (no time in its output, the time file missing, it hung)."""


class RunHung(MeasureError):
    """A timed run did not end within `hang_limit`: not a setting the user could fix."""


@dataclass(frozen=True)
class Build:
    """A built application: the folder that `{build}` names, what its runs may write, and what
    they may not (the private trees, the project: workspace/runner.py protects them)."""

    build_dir: Path
    writable: tuple[Path, ...] = ()
    readonly: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Attach:
    """nvcc-opt's channel in a run: the built library, and a state-check file or None."""

    library: Path
    state: Path | None = None


@dataclass(frozen=True)
class Run:
    completed: Completed
    output: RunOutput
    seconds: float | None  # the [time] source's figure
    observed: Observed  # what nvcc-opt itself saw: wall time, the channel's report


@dataclass(frozen=True)
class Measurement:
    baseline_output: RunOutput
    check: CheckResult
    comparison: Comparison | None  # None when the candidate was not correct: never timed
    runs: int
    sandbox_note: str  # "" when sandboxed, else why not
    notes: tuple[str, ...] = ()  # what could not be measured (no channel, ...)


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
    run = observed_run(config, runner, build, gpu, args)
    return run.completed, run.output, run.seconds


def observed_run(
    config: ProjectConfig,
    runner: Runner,
    build: Build,
    gpu: str,
    args: tuple[str, ...] = (),
    attach: Attach | None = None,
    timeout_s: float | None = None,
) -> Run:
    """One run, with nvcc-opt's channel in it when `attach` is given. The channel writes into a
    folder of nvcc-opt's own with an unguessable name, not into the run's {work} folder.
    `timeout_s`: a shorter limit than [run] timeout_s."""
    with _scratch() as work, _scratch() as channel:
        argv = [*config.render_run(build.build_dir, gpu, work), *args]
        extra = {} if attach is None else environment(attach.library, channel, attach.state)
        with gpu_lease(gpu):  # no other run on this GPU meanwhile, from any process here
            done = runner.run(
                argv,
                cwd=config.run_cwd(build.build_dir, gpu, work),
                env={**os.environ, **config.run_env(build.build_dir, gpu, work), **extra},
                timeout_s=min(config.run.timeout_s, timeout_s or config.run.timeout_s),
                writable=(*build.writable, channel, work),  # TMPDIR: the last; the tree: no
                readonly=build.readonly,
            )
        files = {}
        for name in config.check.files:
            path = config.output_path(name, build.build_dir, gpu, work)
            if path.is_file():
                files[name] = path.read_bytes()
        output = RunOutput(
            done.exit_status, done.stdout, done.stderr, files, done.timed_out, done.wall_s
        )
        seconds = _time_of(config, done, build, gpu, work) if done.ok else None
        seen = report.read(channel) if attach is not None else None
    return Run(done, output, seconds, Observed(done.wall_s, seen))


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
        counted=counted_patterns(config),
    )


def same_output(config: ProjectConfig, output: RunOutput, expected: RunOutput) -> CheckResult:
    """Whether a run printed what `expected` printed, when neither need pass its own checks (the
    runs of the state check change the program's data on purpose): the same exit status, every
    counted pattern as often, the numbers and files within tolerance."""
    rules = config.check
    result = check_run(
        output,
        exit_status=False,
        numbers=_alternatives([p.pattern for p in rules.numbers]),
        files=list(rules.files),
        rtol=rules.rtol,
        atol=rules.atol,
        baseline=expected,
        counted=counted_patterns(config),
    )
    if output.exit_status == expected.exit_status:
        return result
    status = f"exit_status: {output.exit_status}, the baseline's {expected.exit_status}"
    return CheckResult(False, (status, *result.reasons))


def counted_patterns(config: ProjectConfig) -> list[str]:
    """The printed lines whose number must not change: required and forbidden patterns and, when
    the time is read from the output, the time line."""
    patterns = [p.pattern for p in (*config.check.require, *config.check.forbid)]
    if config.time.source == "regex" and config.time.regex is not None:
        patterns.append(config.time.regex.pattern)
    return patterns


def _alternatives(patterns: list[str]) -> str | None:
    """One regex matching any of `patterns`, in output order. A pattern's leading global flags
    (`(?m)^x = (\\S+)$`) become flags of its own group, where Python allows them; a global flag
    group anywhere but at the start of the whole regex is an error.

    >>> import re
    >>> re.findall(_alternatives([r"(?m)^a = (\\d+)$", r"b (\\d+)"]), "a = 1\\nb 2\\n")
    [('1', ''), ('', '2')]
    """
    if not patterns:
        return None
    if len(patterns) == 1:
        return patterns[0]
    return "|".join(_scoped(p) for p in patterns)


_GLOBAL_FLAGS = re.compile(r"\A\(\?([aiLmsux]+)\)")


def _scoped(pattern: str) -> str:
    flags = _GLOBAL_FLAGS.match(pattern)
    if flags is None:
        return f"(?:{pattern})"
    return f"(?{flags.group(1)}:{pattern[flags.end() :]})"


# rejection reasons, and the share of its printed speedup the candidate may be credited (None:
# not measured; verify/changed_inputs.py)
AfterTiming = Callable[[Sequence[Observed], Sequence[Observed]], tuple[list[str], float | None]]


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
    attach: Attach | None = None,
    kernels: RegionKernels | None = None,
    after_timing: AfterTiming | None = None,
) -> Measurement:
    """Check the candidate against the baseline, then `more_checks` (fresh inputs, sanitizer:
    reasons it is wrong), then time both, paired; with `attach` and `kernels`, every timed run
    carries the channel and the candidate's must agree with it (verify/corroborate.py), and
    `after_timing` judges the timed runs' own measurements (the final verification's) and
    bounds the speedup kept (verify/credited.py)."""
    note = ""
    held: list[Completed] = []
    if baseline_output is None:
        done, baseline_output, _ = run_once(config, runner, baseline, gpu, args)
        note = done.note
        held.append(done)
        own = check(config, baseline_output, None)
        if not own.ok:
            raise MeasureError("the baseline itself fails its checks: " + "; ".join(own.reasons))
    done, output, _ = run_once(config, runner, candidate, gpu, args)
    note = note or done.note
    held.append(done)
    verdict = check(config, output, baseline_output)
    if verdict.ok and more_checks is not None:
        problems = more_checks()
        if problems:
            verdict = CheckResult(False, tuple(problems))
    if not verdict.ok:
        return Measurement(baseline_output, verdict, None, 0, note)
    times: dict[str, list[float]] = {"A": [], "B": []}
    seen: dict[str, list[Observed]] = {"A": [], "B": []}
    min_speedup = config.verify.min_speedup
    stop_after = config.run.stop_early_after if stop_early else 0
    limit = hang_limit(config.run.timeout_s, [baseline_output.wall_s, *(d.wall_s for d in held)])
    for step in schedule(repeats, config.run.warmup):
        which = step[-1]
        build = baseline if which == "A" else candidate
        run = observed_run(config, runner, build, gpu, args, attach, limit)
        held.append(run.completed)
        if run.completed.timed_out:
            raise RunHung(_hung(which, limit, held, attach is not None))
        if which == "B" and not step.startswith("warmup"):
            again = check(config, run.output, baseline_output)
            if not again.ok:  # correct once is not enough: every timed run must be
                return Measurement(baseline_output, again, None, 0, note)
        if run.seconds is None:
            raise MeasureError(_no_time(config, run.completed))
        if not step.startswith("warmup"):
            times[which].append(run.seconds)
            seen[which].append(run.observed)
        pairs = len(times["B"])
        if (
            stop_after
            and pairs >= stop_after
            and len(times["A"]) == pairs < repeats
            and hopeless(times["A"], times["B"], min_speedup)
        ):
            break  # it cannot be called faster: the rest of the pairs would be wasted
    comparison = compare(times["A"], times["B"], min_speedup=min_speedup, planned=repeats)
    notes = uncontained(held)
    if attach is None or kernels is None:
        return Measurement(baseline_output, verdict, comparison, len(times["B"]), note, notes)
    reasons, unmeasured = channel_reasons(
        seen["A"], seen["B"], kernels, comparison, printed_is_wall=config.time.source == "wall"
    )
    faster = comparison is not None and comparison.verdict == "faster"
    share = None
    if not reasons and after_timing is not None and faster:  # only a speedup can be fake
        reasons, share = after_timing(seen["A"], seen["B"])
    if reasons:
        return Measurement(baseline_output, CheckResult(False, tuple(reasons)), None, 0, note)
    if comparison is not None and not unmeasured and config.time.source != "wall":
        owned = owned_speedup(seen["A"], seen["B"], kernels)
        comparison, said = capped(comparison, owned, min_speedup)
        notes = (*notes, *said)
    if comparison is not None and share is not None:
        most = credited_speedup(comparison.speedup, share)
        comparison, said = capped(comparison, most, min_speedup, by=CHANGED)
        notes = (*notes, *said)
    return Measurement(
        baseline_output, verdict, comparison, len(times["B"]), note, (*notes, *unmeasured)
    )


def uncontained(runs: Sequence[Completed]) -> tuple[str, ...]:
    """The `uncontained:` note of the first run that was not contained, if any."""
    for done in runs:
        if not done.contained and "uncontained:" in done.note:
            return (done.note[done.note.index("uncontained:") :],)
    return ()


def hang_limit(timeout_s: float, check_walls: Sequence[float]) -> float:
    """How long a timed run may take: HANG_FACTOR times the slowest check run, at least
    HANG_FLOOR_S, at most [run] timeout_s.

    >>> hang_limit(600.0, [2.2, 1.9])
    60.0
    >>> hang_limit(600.0, [31.0])
    310.0
    >>> hang_limit(300.0, [100.0])
    300.0
    """
    slowest = max(check_walls, default=timeout_s)
    return min(timeout_s, max(HANG_FLOOR_S, HANG_FACTOR * slowest))


def _hung(which: str, limit: float, held: Sequence[Completed], channel: bool) -> str:
    whose = "the baseline's" if which == "A" else "the candidate's"
    before = max((d.wall_s for d in held[:-1]), default=0.0)
    with_channel = " with nvcc-opt's channel in it" if channel else ""
    return (
        f"a timed run of {whose} build{with_channel} did not end within {limit:.0f} s (the runs "
        f"before it took at most {before:.1f} s): it hung or slowed down by far; nothing was timed"
    )


def _no_time(config: ProjectConfig, done: Completed) -> str:
    if not done.ok:
        return f"a run failed (exit status {done.exit_status}): {done.stderr.strip()[-500:]}"
    source = config.time
    if source.source == "regex" and source.regex is not None:
        return f"no match for the [time] regex {source.regex.pattern!r} in the run's output"
    return f"no time in {source.file!r} after the run"
