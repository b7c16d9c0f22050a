"""`nvcc-opt optimize` over one split of a problem set, N runs per problem, resumable.

Shared by `train collect` (teacher traces) and `train eval` (what a model does). Each run of a
problem is `nvcc-opt bench suite`'s run of an app (`bench.app_run.run_app`: a private copy of the
problem's app with the set's shared folders beside it, a fresh build tree through nvcc-opt, a
fresh store, `optimize --json --seed S` as a subprocess), queued one problem per GPU by
`bench.suite.run_jobs`. As each (problem, run) ends it is appended as one line to OUT/runs.jsonl
(`RunRecord`), its traces copied to OUT/traces/<id>-run<i>.json; a rerun skips the runs
recorded there, so a killed or time-limited run (`within_s`) continues where it stopped. A run
the user interrupted (Ctrl-C) is not recorded: the next call runs it again.

A region's `rewrite_id` is read from the run's own store: the id of the rewrite optimize's
independent final verification stored as proposed, the only evidence the filters accept.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from nvcc_opt.agent.trace import TraceError, load_trace
from nvcc_opt.bench.app_run import run_seed
from nvcc_opt.bench.options import Options
from nvcc_opt.bench.results import PROPOSED, AppRun, KernelRun, classify
from nvcc_opt.bench.suite import run_jobs
from nvcc_opt.bench.summary import stopped_by_bench
from nvcc_opt.records import RewriteState
from nvcc_opt.store.api import Store
from nvcc_opt.store.errors import StoreError
from nvcc_opt_train.problemset import (
    Problem,
    ProblemSet,
    ProblemSetError,
    append_jsonl,
    read_jsonl,
    write_atomic,
)

RUNS = "runs.jsonl"
TRACES = "traces"
SETTINGS = "runs-settings.json"
# What must match for a rerun to continue the runs of an output folder rather than mix two.
SAME_FOR_RESUME = ("problems", "split", "model", "optimize_args")


class RunsError(RuntimeError):
    """The runs cannot start or be read; the message is one line naming the file."""


@dataclass(frozen=True)
class RegionResult:
    """What one region became in one run: optimize's result, plus the trace as copied."""

    file: str
    region: str
    status: str  # proposed, original kept, error
    speedup: float  # verified by the final verification; 1.0 unless proposed
    rewrite_id: int | None  # from the run's store; None unless a rewrite was stored as proposed
    stopped: str  # how the agent stopped (final_answer, limit:turns, ...)
    reasons: tuple[str, ...]
    outcome: str  # bench.results.classify: proposed, wrong final, build failed, no answer, ...
    explanation: str = ""
    baseline_ms: float | None = None
    wall_s: float | None = None
    trace: str = ""  # relative to the output folder: traces/<id>-run<i>.json; "" without one
    trace_error: str = ""
    tools: tuple[str, ...] = ()  # the tools the run offered (the trace's meta)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> RegionResult:
        return cls(
            **{
                **row,
                "reasons": tuple(row.get("reasons") or ()),
                "tools": tuple(row.get("tools") or ()),
            }
        )


@dataclass(frozen=True)
class RunRecord:
    """One finished run of one problem: one line of runs.jsonl."""

    id: str
    run: int
    seed: int
    error: str | None  # the app's failure (configure, build, timeout), None when optimize ended
    wall_s: float
    gpu: str | None
    results: tuple[RegionResult, ...] = field(default=())

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["results"] = [asdict(r) for r in self.results]
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any], where: str) -> RunRecord:
        try:
            return cls(
                id=str(row["id"]),
                run=int(row["run"]),
                seed=int(row["seed"]),
                error=row.get("error"),
                wall_s=float(row["wall_s"]),
                gpu=row.get("gpu"),
                results=tuple(RegionResult.from_row(r) for r in row["results"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RunsError(f"{where}: not a run record ({type(exc).__name__}: {exc})") from exc


@dataclass(frozen=True)
class Progress:
    """Where a call of `run_problems` left the runs."""

    total: int  # (problem, run) pairs asked for
    done_before: int  # already in runs.jsonl when the call began
    finished: int  # recorded by this call
    remaining: int  # not started (within_s, Ctrl-C) or interrupted: a rerun does them
    interrupted: bool


def read_runs(out: Path) -> list[RunRecord]:
    """The runs recorded in OUT/runs.jsonl, in the order they finished."""
    path = out / RUNS
    try:
        rows = list(read_jsonl(path))
    except ProblemSetError as exc:
        raise RunsError(str(exc)) from exc
    return [RunRecord.from_row(row, f"{path}:{number}") for number, row in rows]


def region_results(records: Sequence[RunRecord]) -> Iterator[tuple[RunRecord, RegionResult]]:
    """Every region of every recorded run, with its run."""
    for record in records:
        for result in record.results:
            yield record, result


def settings(problemset: ProblemSet, split: str, options: Options) -> dict[str, Any]:
    """What the runs in OUT were made with (OUT/runs-settings.json)."""
    return {
        "problems": str(problemset.root.resolve()),
        "split": split,
        "model": options.spec,
        "optimize_args": list(options.optimize_args),
        "runs": options.runs,
        "time_s": options.time_s,
        "turns": options.turns,
        "cmake_args": list(options.cmake_args),
        "command": options.command_line,
    }


def check_settings(out: Path, settings: dict[str, Any]) -> None:
    """Record the settings of the runs in OUT, or check that a rerun matches them: a folder of
    one model's runs over one set is never mixed with another's (RunsError, nothing touched)."""
    path = out / SETTINGS
    if out.exists() and not out.is_dir():
        raise RunsError(f"{out}: exists and is not a folder; use a new --out folder")
    if not path.exists():
        if (out / RUNS).exists():
            raise RunsError(f"{out / RUNS}: runs without {SETTINGS}; use a new --out folder")
        if out.is_dir() and any(out.iterdir()):
            raise RunsError(
                f"{out}: not empty and not the output of runs over a problem set (no "
                f"{SETTINGS}); use a new --out folder (nothing is overwritten)"
            )
        write_atomic(path, json.dumps(settings, indent=1, sort_keys=True) + "\n")
        return
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunsError(f"{path}: cannot read: {exc}") from exc
    for key in SAME_FOR_RESUME:
        if before.get(key) != settings.get(key):
            raise RunsError(
                f"{path}: these runs were made with {key} = {before.get(key)!r}, not "
                f"{settings.get(key)!r}; continue them with the same options or use a new --out"
            )


def run_problems(
    problemset: ProblemSet,
    split: str,
    options: Options,
    echo: Callable[[str], None] = lambda _: None,
) -> Progress:
    """Run optimize `options.runs` times over every problem of `split` not yet recorded in
    `options.out`, one problem per GPU of `options.gpus` at once (or one at a time), and record
    each run as it ends (`options.out` is the output folder; `options.suite` is set to the set's
    problems folder). RunsError when OUT holds runs made with other settings."""
    out = options.out
    problems = problemset.problems(split)
    if not problems:
        raise RunsError(f"{problemset.root}: the {split} split has no problems")
    check_settings(out, settings(problemset, split, options))
    by_app = {problemset.app_dir(p).resolve(): p for p in problems}
    done = {(r.id, r.run) for r in read_runs(out)}
    jobs = [
        (problemset.app_dir(p).resolve(), run)
        for run in range(1, options.runs + 1)
        for p in by_benchmark_turns(problems)
        if (p.id, run) not in done
    ]
    options = replace(options, suite=(problemset.root / "problems").resolve())
    finished = 0

    def record(app: Path, run: int, ran: AppRun) -> None:
        nonlocal finished
        if stopped_by_bench(ran.error):
            return  # interrupted: not a result; the next call runs it again
        problem = by_app[app]
        append_jsonl(out / RUNS, run_record(problem, run, ran, options, out).to_row())
        finished += 1

    total = len(problems) * options.runs
    echo(f"{total - len(jobs)} of {total} runs already recorded in {out / RUNS}")
    _, interrupted = run_jobs(jobs, options, out / "work", _locked(echo), record)
    return Progress(total, total - len(jobs), finished, len(jobs) - finished, interrupted)


def by_benchmark_turns(problems: Sequence[Problem]) -> list[Problem]:
    """The problems in turns over their benchmarks: the first problem of each benchmark, then
    the second of each, and so on (each benchmark's own order kept), so that a call stopped by
    --within has covered as many benchmarks as it could, not every A, B and A+B of the first.

    >>> from nvcc_opt_train.problemset import Problem
    >>> ps = [Problem(i, "hecbench", b, (), ()) for i, b in
    ...       [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")]]
    >>> [p.id for p in by_benchmark_turns(ps)]
    ['a1', 'b1', 'c1', 'a2', 'c2', 'a3']
    """
    groups: dict[str, list[Problem]] = {}
    for problem in problems:
        groups.setdefault(problem.benchmark, []).append(problem)
    turns = max((len(g) for g in groups.values()), default=0)
    return [g[i] for i in range(turns) for g in groups.values() if i < len(g)]


def run_record(problem: Problem, run: int, ran: AppRun, options: Options, out: Path) -> RunRecord:
    """The line of runs.jsonl for one run: each region's result (every region of the problem,
    an unreached one as an error), its trace copied into OUT/traces, its stored rewrite id."""
    work = Path(ran.work)
    ids = proposed_ids(work / "state" / "store.db", work / problem.id)
    reached = {k.region for k in ran.kernels}
    kernels = list(ran.kernels)
    for where in problem.regions:
        file, _, name = where.rpartition(":")
        if name not in reached:
            why = ran.error or "optimize did not reach this region"
            kernels.append(KernelRun(problem.id, file, name, run, "error", reasons=(why,)))
    several = len(kernels) > 1
    results = []
    for k in kernels:
        stem = f"{problem.id}-run{run}" + (f"-{k.region}" if several else "")
        trace, trace_error, tools = copy_trace(
            Path(ran.work).parent.parent / k.trace if k.trace else None, out, stem
        )
        results.append(
            RegionResult(
                file=k.file,
                region=k.region,
                status=k.status,
                speedup=k.speedup,
                rewrite_id=ids.get((k.file, k.region)) if k.status == PROPOSED else None,
                stopped=k.stopped,
                reasons=k.reasons,
                outcome=k.outcome or classify(k.status, k.reasons),
                explanation=k.explanation,
                baseline_ms=k.baseline_ms,
                wall_s=k.wall_s,
                trace=trace,
                trace_error=k.trace_error or trace_error,
                tools=tools,
            )
        )
    seed = run_seed(options, problem.id, run)
    return RunRecord(problem.id, run, seed, ran.error, ran.wall_s, ran.gpu, tuple(results))


def copy_trace(source: Path | None, out: Path, stem: str) -> tuple[str, str, tuple[str, ...]]:
    """(the copy's path relative to `out`, why there is none, the tools its meta names)."""
    if source is None:
        return "", "no trace (the agent did not start)", ()
    target = out / TRACES / f"{stem}.json"
    try:
        tools = tuple(str(t) for t in load_trace(source).meta.get("tools") or ())
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    except (TraceError, OSError, AttributeError) as exc:
        return "", f"trace not kept: {exc}", ()
    return target.relative_to(out).as_posix(), "", tools


def proposed_ids(store_path: Path, root: Path) -> dict[tuple[str, str], int]:
    """(file relative to the app's copy, region name) -> id of the rewrite the run's store holds
    as proposed (the last one of a region). Empty when there is no store or it cannot be read:
    then nothing counts as verified."""
    if not store_path.is_file():
        return {}
    try:
        with Store.open(store_path) as store:
            rewrites = store.rewrites(states=[RewriteState.PROPOSED])
    except StoreError:
        return {}
    found = {}
    for rewrite in rewrites:
        try:
            file = Path(rewrite.file).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        found[(file, rewrite.region_name)] = rewrite.id
    return found


def _locked(echo: Callable[[str], None]) -> Callable[[str], None]:
    """`echo` for several worker threads: one whole line at a time."""
    lock = threading.Lock()

    def say(message: str) -> None:
        with lock:
            echo(message)

    return say
