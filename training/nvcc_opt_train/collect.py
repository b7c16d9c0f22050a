"""`nvcc-opt train collect`: teacher traces over a problem set's train split, and the paper's
filter of them into an SFT dataset.

The teacher runs through `runs.run_problems` with optimize's `--parity` (the paper's random 4-6
tools, benchmark_code always; the subset seeded by the problem and the run). The filter keeps a
region's run only when optimize's independent final verification rebuilt its final answer,
found it correct and significantly faster, and stored it: status "proposed", a verified speedup
above 1 and a rewrite id in the run's store. What the model claimed (its explanation) and what
benchmark_code measured inside the loop never count. Kept traces become conversations
(`conversations.conversation`) in OUT/sft.jsonl; OUT/collect.json says what was kept, what was
dropped and why, and how the teacher used its tools.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from nvcc_opt.agent.trace import TraceError, load_trace
from nvcc_opt.bench.options import Options
from nvcc_opt.bench.results import PROPOSED
from nvcc_opt.records import CREDIT_UNAVAILABLE, credit_unavailable, unestablished
from nvcc_opt_train.conversations import conversation, write_dataset
from nvcc_opt_train.exclusion import require_exclusion
from nvcc_opt_train.problemset import ProblemSet, write_atomic
from nvcc_opt_train.runs import (
    Progress,
    RegionResult,
    RunRecord,
    read_runs,
    region_results,
    run_problems,
)

SPLIT = "train"  # the only split teacher traces may come from
KEPT = "kept"
SFT = "sft.jsonl"
SUMMARY = "collect.json"
PARITY = ("--parity",)


class CollectError(RuntimeError):
    """Collect cannot go on; the message is one line naming the file."""


def verdict(result: RegionResult) -> str:
    """KEPT, or the class of reason the filter drops a region's run: the outcome of its final
    answer (no answer, build failed, wrong final, guard, no improvement, held for review,
    error), "not stored" (proposed without a rewrite id in the store), "caveat" (its
    verification could not make a check: `records.unestablished`), "not faster", or "no trace"."""
    if result.status != PROPOSED:
        return result.outcome or "error"
    if result.rewrite_id is None:
        return "not stored"
    if unestablished(result.reasons):
        return "caveat"
    if not result.speedup > 1.0:
        return "not faster"
    if not result.trace:
        return "no trace"
    return KEPT


@dataclass(frozen=True)
class Summary:
    """What collect.json holds."""

    problem_runs: int  # (problem, run) pairs recorded
    runs: int  # region runs (a problem with two tagged regions counts twice)
    kept: int
    dropped: dict[str, int]  # reason class -> region runs
    tool_calls: dict[str, int]  # tool -> calls, over every trace
    tool_calls_kept: dict[str, int]  # tool -> calls, over the kept traces
    tools_offered: dict[str, int]  # tool -> traces it was offered in
    remaining: int  # runs not done yet (a rerun does them)
    sft: str  # the dataset's path

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tool_calls(trace: Path) -> Counter[str]:
    """How many times each tool was called in the trace at `trace`."""
    counts: Counter[str] = Counter()
    for step in load_trace(trace).steps:
        for call in step.get("calls") or ():
            counts[str(call.get("name"))] += 1
    return counts


def summarize(records: Sequence[RunRecord], out: Path, remaining: int) -> Summary:
    """The filter's counts over every recorded run (pure but for reading the kept traces)."""
    dropped: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    calls_kept: Counter[str] = Counter()
    offered: Counter[str] = Counter()
    kept = 0
    for _, result in region_results(records):
        why = verdict(result)
        if result.trace:
            counted = _read_calls(out / result.trace)
            calls += counted
            offered.update(result.tools)
            if why == KEPT:
                calls_kept += counted
        if why == KEPT:
            kept += 1
        else:
            dropped[why] += 1
    return Summary(
        problem_runs=len(records),
        runs=sum(len(r.results) for r in records),
        kept=kept,
        dropped=dict(sorted(dropped.items())),
        tool_calls=dict(sorted(calls.items())),
        tool_calls_kept=dict(sorted(calls_kept.items())),
        tools_offered=dict(sorted(offered.items())),
        remaining=remaining,
        sft=str(out / SFT),
    )


def _read_calls(path: Path) -> Counter[str]:
    try:
        return tool_calls(path)
    except TraceError as exc:
        raise CollectError(str(exc)) from exc


def write_sft(records: Sequence[RunRecord], out: Path) -> int:
    """Convert the kept runs' traces into OUT/sft.jsonl (replaced whole: it is derived from
    runs.jsonl and the traces, which are never rewritten). The number of conversations."""
    rows = []
    for _, result in region_results(records):
        if verdict(result) == KEPT:
            path = out / result.trace
            try:
                rows.append(conversation(path))
            except (TraceError, ValueError, OSError) as exc:
                raise CollectError(f"{path}: cannot convert: {exc}") from exc
    tmp = out / f".{SFT}.tmp"
    tmp.unlink(missing_ok=True)
    write_dataset(rows, tmp)
    os.replace(tmp, out / SFT)
    return len(rows)


def collect(
    problems: Path,
    options: Options,
    split: str = SPLIT,
    echo: Callable[[str], None] = lambda _: None,
) -> tuple[Summary, Progress]:
    """Run the teacher over the train split (resuming OUT), filter, write sft.jsonl and
    collect.json. ProblemSetError for a set that is not complete or lacks the exclusion record;
    CollectError for any split but train."""
    if split != SPLIT:
        raise CollectError(
            f"collect reads only the {SPLIT} split, not {split!r}: traces of evaluation "
            "problems would leak them into training"
        )
    problemset = ProblemSet.open(problems)
    require_exclusion(problemset)
    options = replace(options, optimize_args=PARITY, seed_per_app=True)
    progress = run_problems(problemset, SPLIT, options, echo)
    records = read_runs(options.out)
    write_sft(records, options.out)
    summary = summarize(records, options.out, progress.remaining)
    text = json.dumps(summary.to_dict(), indent=1, sort_keys=True) + "\n"
    write_atomic(options.out / SUMMARY, text)
    return summary, progress


def render(summary: Summary) -> str:
    """The summary as lines for the terminal."""
    lines = [
        f"runs: {summary.runs} region runs in {summary.problem_runs} problem runs",
        f"kept (verified proposed, speedup > 1): {summary.kept}",
    ]
    lines += [f"dropped, {why}: {n}" for why, n in summary.dropped.items()]
    if summary.dropped.get("caveat") and not credit_unavailable():
        lines.append(
            "  (caveat: the verification could not make a check, e.g. `unavailable: "
            "compute-sanitizer did not run`; runs.jsonl has each run's reasons. Where this "
            f"machine lacks a tool by design, {CREDIT_UNAVAILABLE}=1 credits what it lacks)"
        )
    used = ", ".join(f"{t} {n}" for t, n in summary.tool_calls.items()) or "none"
    lines.append(f"tool calls: {used}")
    if summary.remaining:
        lines.append(f"{summary.remaining} runs remain: run the same command again to continue")
    lines.append(f"written: {summary.sft}")
    return "\n".join(lines)
