"""`nvcc-opt train eval`: what a model does on problems it never trained on, measured.

The model runs through `runs.run_problems` over a problem set's eval split; the numbers come
from what the runs left, never from what the model said:

- well-formed turns: of all model turns (the traces' steps), those whose reply held at least
  one tool call and no malformed one (the loop parsed its calls with no problems);
- valid final answers: runs whose agent stopped with a final answer the loop accepted
  (outcome reason `final_answer`), whatever its verification then said;
- verified improvements: runs whose final answer optimize's independent verification stored
  as proposed with a speedup >= 1.05;
- geometric-mean speedup, a failure counted as 1.0: what a user gets (the original is kept);
- mean speedup, a failure counted as 0 (the paper's Fig. 1): a final answer that did not
  build, was wrong, hit a guard, or none at all counts 0; a correct one that was not faster
  counts 1.0 (the original is kept);
- tool calls per trace: the mean number of calls of each tool over the runs' traces.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from nvcc_opt.agent.trace import Trace, TraceError, load_trace
from nvcc_opt.bench.options import Options
from nvcc_opt.bench.results import IMPROVED_AT, PROPOSED, credited, geomean
from nvcc_opt_train.problemset import SPLITS, ProblemSet, write_atomic
from nvcc_opt_train.runs import (
    Progress,
    RegionResult,
    RunRecord,
    read_runs,
    region_results,
    run_problems,
)

EVAL_JSON = "eval.json"
EVAL_MD = "eval.md"
FINAL_ANSWER = "final_answer"  # agent.loop.Submitted.reason
CORRECT_NOT_FASTER = frozenset({"no improvement", "held for review"})  # classify()'s outcomes


class EvalError(RuntimeError):
    """The evaluation cannot be made or read; the message is one line naming the file."""


# --- pure: one turn, one run ---------------------------------------------------------------


def well_formed(step: dict[str, Any]) -> bool:
    """A turn whose reply made at least one tool call and no malformed one."""
    return bool(step.get("calls")) and not step.get("problems")


def turn_counts(trace: Trace | None) -> tuple[int, int]:
    """(turns, well-formed turns) of one trace; (0, 0) for a run with none."""
    if trace is None:
        return 0, 0
    return len(trace.steps), sum(1 for step in trace.steps if well_formed(step))


def valid_final(trace: Trace | None, result: RegionResult) -> bool:
    """The run ended with a final answer the loop accepted (its trace's outcome, else optimize's
    `stopped`)."""
    if trace is not None and isinstance(trace.outcome, dict):
        return trace.outcome.get("reason") == FINAL_ANSWER
    return result.stopped == FINAL_ANSWER


def verified(result: RegionResult) -> bool:
    """The final verification stored the answer as proposed (a rewrite id in the run's store),
    with no caveat (a check it could not make: then the speedup is not established)."""
    return credited(result.status, result.reasons) and result.rewrite_id is not None


def user_speedup(result: RegionResult) -> float:
    """The verified speedup; 1.0 for anything else (the original is kept)."""
    return result.speedup if verified(result) else 1.0


def paper_speedup(result: RegionResult) -> float:
    """The paper's Fig. 1 convention: the verified speedup; 1.0 for a correct answer that was
    not faster; 0.0 for a failure (no answer, build failed, wrong, guard, error)."""
    if verified(result):
        return result.speedup
    if result.status == PROPOSED and result.rewrite_id is not None:
        return 1.0  # stored, but a check did not complete: correct as far as checked
    return 1.0 if result.outcome in CORRECT_NOT_FASTER else 0.0


def tool_calls(trace: Trace | None) -> Counter[str]:
    """Calls per tool in one trace."""
    counts: Counter[str] = Counter()
    for step in trace.steps if trace is not None else ():
        for call in step.get("calls") or ():
            counts[str(call.get("name"))] += 1
    return counts


# --- pure: one model ------------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """One model's numbers over one split (eval.json)."""

    model: str
    problems: str
    split: str
    held_out: bool  # False when measured on the train split
    problem_runs: int
    runs: int  # region runs
    turns: int
    well_formed_turns: int
    final_answers: int
    improved: int  # verified speedup >= 1.05
    geomean_speedup: float  # failures = 1.0
    mean_speedup_failures_zero: float  # the paper's Fig. 1
    tool_calls_per_trace: dict[str, float]
    traces: int
    outcomes: dict[str, int] = field(default_factory=dict)
    remaining: int = 0  # runs not done yet (a rerun does them)
    # the problem runs counted, "ID run N", sorted (empty in an eval.json written before them)
    measured: list[str] = field(default_factory=list)

    @property
    def share_well_formed(self) -> float:
        return self.well_formed_turns / self.turns if self.turns else 0.0

    @property
    def share_final(self) -> float:
        return self.final_answers / self.runs if self.runs else 0.0

    @property
    def share_improved(self) -> float:
        return self.improved / self.runs if self.runs else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            share_well_formed=self.share_well_formed,
            share_final=self.share_final,
            share_improved=self.share_improved,
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> Evaluation:
        names = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except TypeError as exc:
            raise EvalError(f"{where}: not an evaluation ({exc})") from exc


def evaluate(
    runs: Sequence[tuple[RegionResult, Trace | None]],
    *,
    model: str,
    problems: str,
    split: str,
    problem_runs: int,
    remaining: int = 0,
    measured: Sequence[str] = (),
) -> Evaluation:
    """The numbers of one model from its region runs and their traces (None: no trace);
    `measured` names the problem runs they come from."""
    turns = well = finals = improved = traces = 0
    calls: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    for result, trace in runs:
        t, w = turn_counts(trace)
        turns, well = turns + t, well + w
        finals += valid_final(trace, result)
        improved += verified(result) and result.speedup >= IMPROVED_AT
        outcomes[result.outcome or result.status] += 1
        if trace is not None:
            traces += 1
            calls += tool_calls(trace)
    per_trace = {name: n / traces for name, n in sorted(calls.items())} if traces else {}
    return Evaluation(
        model=model,
        problems=problems,
        split=split,
        held_out=split == "eval",
        problem_runs=problem_runs,
        runs=len(runs),
        turns=turns,
        well_formed_turns=well,
        final_answers=finals,
        improved=improved,
        geomean_speedup=geomean([user_speedup(r) for r, _ in runs]),
        mean_speedup_failures_zero=(
            statistics.fmean(paper_speedup(r) for r, _ in runs) if runs else 0.0
        ),
        tool_calls_per_trace=per_trace,
        traces=traces,
        outcomes=dict(sorted(outcomes.items())),
        remaining=remaining,
        measured=sorted(measured),
    )


# --- reading the runs, writing the files ----------------------------------------------------


def with_traces(records: Sequence[RunRecord], out: Path) -> list[tuple[RegionResult, Trace | None]]:
    """Each region run with its trace read from OUT (None where the run left none). EvalError
    naming the file for a trace that is recorded but missing or not a v1 trace."""
    found = []
    for _, result in region_results(records):
        trace = None
        if result.trace:
            try:
                trace = load_trace(out / result.trace)
            except TraceError as exc:
                raise EvalError(str(exc)) from exc
        found.append((result, trace))
    return found


HEADER = (
    "| model | split | runs | well-formed tool-call turns | valid final answers "
    "| verified >= 5% | geomean speedup (failure = 1.0, original kept) "
    "| mean speedup (failure = 0, paper Fig. 1) | tool calls per trace |"
)
RULE = "|---|---|---:|---:|---:|---:|---:|---:|---|"


def table_row(e: Evaluation) -> str:
    split = e.split if e.held_out else f"{e.split} (NOT held out)"
    calls = ", ".join(f"{t} {n:.2f}" for t, n in e.tool_calls_per_trace.items()) or "none"
    cells = [
        e.model.replace("|", "\\|"),
        split,
        str(e.runs),
        f"{e.share_well_formed:.1%} ({e.well_formed_turns}/{e.turns})",
        f"{e.share_final:.1%} ({e.final_answers}/{e.runs})",
        f"{e.share_improved:.1%} ({e.improved}/{e.runs})",
        f"{e.geomean_speedup:.3f}x",
        f"{e.mean_speedup_failures_zero:.3f}x",
        calls,
    ]
    return "| " + " | ".join(cells) + " |"


def render_table(evaluations: Sequence[Evaluation]) -> str:
    return "\n".join([HEADER, RULE, *(table_row(e) for e in evaluations)]) + "\n"


def comparison_notes(evaluations: Sequence[Evaluation], shown: int = 4) -> list[str]:
    """Why rows of one table may not compare as they stand, one line each (none when every row
    measured the same problem runs of one problem set, all done): another problem set or split,
    runs not done, problem runs one row has and another lacks."""
    notes = []
    sets = {(e.problems, e.split) for e in evaluations}
    if len(sets) > 1:
        where = "; ".join(f"{e.model}: {e.problems} ({e.split})" for e in evaluations)
        notes.append(f"the rows come from different problem sets or splits: {where}")
    for e in evaluations:
        if e.remaining:
            notes.append(f"{e.model}: {e.remaining} runs not done; its numbers cover the others")
        if not e.measured:
            notes.append(
                f"{e.model}: its eval.json does not list its problem runs (written by "
                "an earlier nvcc-opt); that it measured the same ones is not checked"
            )
    counted = [e for e in evaluations if e.measured]
    union = sorted({m for e in counted for m in e.measured})
    for e in counted:
        lacks = [m for m in union if m not in set(e.measured)]
        if lacks:
            more = f" and {len(lacks) - shown} more" if len(lacks) > shown else ""
            notes.append(
                f"{e.model}: {len(e.measured)} of the {len(union)} problem runs of the "
                f"table; lacks {', '.join(lacks[:shown])}{more}"
            )
    return notes


def render_comparison(evaluations: Sequence[Evaluation]) -> str:
    """The table of `--compare`, then what keeps its rows from comparing as they stand."""
    notes = comparison_notes(evaluations)
    if not notes:
        return render_table(evaluations)
    lines = ["", "**The rows do not measure the same runs:**", *(f"- {n}" for n in notes)]
    return render_table(evaluations) + "\n".join(lines) + "\n"


def render_markdown(e: Evaluation) -> str:
    lines = [f"# Evaluation of {e.model}", "", f"Problems: {e.problems}, split {e.split}."]
    if not e.held_out:
        lines.append(
            "**These problems are the train split: the numbers are not held out** (a model "
            "trained on them has seen them)."
        )
    lines += ["", render_table([e])]
    lines.append(
        "A turn that gives the final answer calls no tool, so even a flawless run stays below "
        "100% well-formed tool-call turns."
    )
    outcomes = ", ".join(f"{k} {n}" for k, n in e.outcomes.items()) or "none"
    lines.append(
        f"Outcomes of the {e.runs} region runs ({e.problem_runs} problem runs): {outcomes}."
    )
    if e.remaining:
        lines.append(f"{e.remaining} runs are not done yet: the numbers cover the others.")
    return "\n".join(lines) + "\n"


def read_evaluation(folder: Path) -> Evaluation:
    path = folder / EVAL_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise EvalError(f"{path}: no evaluation here (run nvcc-opt train eval first)") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalError(f"{path}: cannot read: {exc}") from exc
    if not isinstance(data, dict):
        raise EvalError(f"{path}: not an evaluation (not a JSON object)")
    return Evaluation.from_dict(data, str(path))


def run_eval(
    problems: Path,
    options: Options,
    split: str = "eval",
    echo: Callable[[str], None] = lambda _: None,
) -> tuple[Evaluation, Progress]:
    """Run the model over `split` of the set (resuming OUT), then write OUT/eval.json and
    OUT/eval.md. EvalError when the eval split is empty (never a silent fall-back to train)."""
    problemset = ProblemSet.open(problems)
    if split not in SPLITS:
        raise EvalError(f"unknown split {split!r}; a problem set has {', '.join(SPLITS)}")
    if split == "eval" and not problemset.problems("eval"):
        raise EvalError(
            f"{problemset.root}: the eval split has no problems; `--split train` measures "
            "problems a trained model has seen (the numbers are then not held out)"
        )
    if split != "eval":
        echo(f"warning: measuring the {split} split: these numbers are NOT held out")
    progress = run_problems(problemset, split, options, echo)
    records = read_runs(options.out)
    evaluation = evaluate(
        with_traces(records, options.out),
        model=options.spec,
        problems=str(problemset.root),
        split=split,
        problem_runs=len(records),
        remaining=progress.remaining,
        measured=[f"{r.id} run {r.run}" for r in records],
    )
    out = options.out
    write_atomic(out / EVAL_JSON, json.dumps(evaluation.to_dict(), indent=1, sort_keys=True))
    write_atomic(out / EVAL_MD, render_markdown(evaluation))
    return evaluation, progress
