"""The suite bench's results: what a run of a kernel became, the table's rows, the overall numbers
and targets (summarized in `summary.py`; the JSON and Markdown files are `render.py`'s).

A kernel is one tagged region of an app (found by scanning its .cu files, so a region that was
never optimized still counts). Its best verified speedup is the best proposed rewrite's over the
runs; a kept original (or an error) counts as 1.0. "Improved" means a proposed rewrite at least
`IMPROVED_AT` faster: only a significant speedup is ever proposed (see verify/stats.py). A "wrong
final" is a final answer the independent verification rejected as incorrect (`WRONG_CODES`): a
build failure, a guard or "no improvement" is not wrong. Each run also keeps its evidence: the
final answer's explanation and what benchmark_code measured for every candidate (`Tried`), read
from the run's trace by the bench (`suite.py`); `merge.py` joins reports of several
sessions with the same `summarize`.

A run the bench stopped (Ctrl-C, its time limit) before a rewrite was proposed measured nothing
about the policy: such a kernel's row is "unfinished" and the overall numbers leave it out (they
say how many), so a slice cut short does not count as a kernel the policy failed on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from nvcc_opt.records import unestablished

IMPROVED_AT = 1.05


TARGET_SHARE = 0.60


TARGET_WALL_S = 300.0


PROPOSED = "proposed"  # RegionResult.status values (nvcc_opt.optimize; not imported: heavy)


KEPT = "original kept"


INTERRUPTED = "interrupted"  # an app run's error, or a run's stop reason, when the bench stopped it


# Reason codes (the word before ":") that mean the final answer was incorrect: verify/checks.py's
# check failures, then verify/final.py's fresh inputs and sanitizer findings.
WRONG_CODES = frozenset(
    {
        "timed_out", "exit_status", "missing", "forbidden", "numbers_none", "numbers_count",
        "numbers_differ", "nonfinite", "zeros", "file_missing", "file_text_differs",
        "file_differs", "check_failed", "fresh_inputs", "sanitizer_memcheck",
        "sanitizer_racecheck",
    }
)  # fmt: skip


APP_ROW = "(app)"  # the row of an app without a tagged region found


REASON_CHARS = 160


CHANGED_CHARS = 120


TIMED = ("improved", "no improvement")  # benchmark_code verdicts that come with a speedup


_CODE = re.compile(r"^\s*([A-Za-z_]+)")


@dataclass(frozen=True)
class Kernel:
    """One tagged region of an app; `file` is relative to the app folder."""

    app: str
    file: str
    region: str


@dataclass(frozen=True)
class Tried:
    """One benchmark_code call of a run, read back from its trace: what the model said with it
    (one line), its compile_args, and benchmark_code's verdict, speedup and first reason."""

    run: int
    what: str
    compile_args: tuple[str, ...]
    verdict: str  # improved, no improvement, rejected, held for review, error, unfinished
    speedup: float  # 1.0 when not timed
    why: str


@dataclass(frozen=True)
class KernelRun:
    """One region's result in one run: optimize's RegionResult (its final answer's explanation
    included) and what its trace says was tried."""

    app: str
    file: str
    region: str
    run: int
    status: str  # PROPOSED, KEPT or "error"
    speedup: float = 1.0
    baseline_ms: float | None = None
    wall_s: float | None = None
    stopped: str = ""
    reasons: tuple[str, ...] = ()
    explanation: str = ""  # the final answer's, whatever became of it
    outcome: str = ""  # classify()
    trace: str = ""  # relative to the report's work folder (as traces.tar.gz holds it)
    tried: tuple[Tried, ...] = ()
    trace_error: str = ""  # why the trace could not be read; "" when it was
    change: str = ""  # change_kind of the final answer; "" without one or in older reports


@dataclass(frozen=True)
class AppRun:
    app: str
    run: int
    kernels: tuple[KernelRun, ...]
    error: str | None  # "configure failed: ...", None when optimize ran to the end
    wall_s: float
    work: str
    gpu: str | None = None  # the CUDA_VISIBLE_DEVICES it ran with (--gpus); None: inherited


@dataclass(frozen=True)
class KernelRow:
    app: str
    file: str
    region: str
    baseline_ms: float | None
    best_speedup: float
    improved: bool
    changed: str
    wall_s: float | None  # median over the runs that reached the region
    verdict: str
    runs: int
    proposed: int
    wrong_finals: int
    errors: int
    explanation: str = ""  # the best proposed run's final answer, else the first run's
    tried: tuple[Tried, ...] = ()  # every run's candidates, run by run
    trace_errors: tuple[str, ...] = ()  # "trace unreadable: why" per run whose trace was not read
    unfinished: bool = False  # every run was stopped by the bench before it proposed anything
    change: str = ""  # change_kind of the best proposed run's answer ("" if none or unknown)


@dataclass(frozen=True)
class Overall:
    kernels: int
    improved: int
    share_improved: float
    geomean_speedup: float
    wrong_finals: int
    median_wall_s: float | None
    failed_runs: int
    targets: dict[str, bool]
    unfinished: int = 0  # rows left out of the numbers above: their runs were all stopped
    # the improved rows by what their best rewrite changes (change_kind); older reports: unknown
    improved_by: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Source:
    """A report that a merged report was made from, and how many of its rows were kept."""

    file: str
    command: str
    started_at: str
    rows_kept: int


@dataclass(frozen=True)
class Report:
    model: str
    date: str
    started_at: str
    command: str
    machine: dict[str, str]
    options: dict[str, Any]
    rows: tuple[KernelRow, ...]
    overall: Overall
    runs: tuple[AppRun, ...] = field(default=())
    wall_s: float = 0.0
    sources: tuple[Source, ...] = ()  # a merged report's (`merge.py`); none for a bench
    interrupted: bool = False  # Ctrl-C: the runs in flight were stopped, later ones not started
    not_run: tuple[str, ...] = ()  # apps left out because none of their runs started

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reason_code(reason: str) -> str:
    """The word a reason starts with ("fresh_inputs --seed 9: ..." -> "fresh_inputs")."""
    found = _CODE.match(reason)
    return found.group(1) if found else ""


def is_wrong(reasons: Iterable[str]) -> bool:
    """Whether the verification rejected the final answer as incorrect."""
    return any(reason_code(r) in WRONG_CODES for r in reasons)


def classify(status: str, reasons: Sequence[str]) -> str:
    """What became of one final answer: proposed, wrong final, guard, build failed, held for
    review, no answer, no improvement, or error. A proposed rewrite whose verification has a
    caveat (`records.unestablished`: a check it could not make) is held for review: its speedup is
    not established, and accepting it needs --force."""
    if status == PROPOSED:
        return "held for review" if unestablished(reasons) else "proposed"
    if status != KEPT:
        return "error"
    codes = [reason_code(r) for r in reasons]
    if is_wrong(reasons):
        return "wrong final"
    if any(c.startswith("guard_") for c in codes):
        return "guard"
    if "build_failed" in codes:
        return "build failed"
    if "ceiling" in codes:
        return "held for review"
    if any(r.startswith("no final answer") for r in reasons):
        return "no answer"
    return "no improvement"


# What the paper counts as speedup 0 (a failure): no valid answer, one that does not build, is
# refused by a guard or is wrong, and a run that failed. A correct answer that was not faster
# (the original kept) is 1.0; a proposed rewrite its verified speedup.
PAPER_FAILURES = frozenset({"wrong final", "build failed", "guard", "no answer", "error"})


def credited(status: str, reasons: Iterable[str]) -> bool:
    """Whether a run's verified speedup counts: proposed, with no caveat."""
    return status == PROPOSED and not unestablished(reasons)


def paper_speedup(run: KernelRun) -> float:
    """The paper's number for one run (Fig. 1: failures at 0)."""
    if credited(run.status, run.reasons):
        return run.speedup
    if run.status == PROPOSED:
        return 1.0  # correct as far as it was checked; its speedup not established
    if run.status != KEPT or run.outcome in PAPER_FAILURES:
        return 0.0
    return 1.0


def geomean(values: Sequence[float]) -> float:
    """Geometric mean; 1.0 for none (nothing improved, nothing lost)."""
    if not values:
        return 1.0
    if any(v <= 0 for v in values):
        raise ValueError("geometric mean of a non-positive value")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def first_line(text: str, limit: int = CHANGED_CHARS) -> str:
    """The first non-blank line, trimmed to `limit` characters with an ellipsis."""
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


POLICY_PREFIX = "Search policy: "


OLD_POLICY_HEAD = re.compile(r"^(\d+\.\d+x measured by benchmark_code) with these changes:$")


def what_changed(explanation: str, limit: int = CHANGED_CHARS) -> str:
    """The table's "what changed" cell: the answer's first line, which names the changes (the
    search policy's "Search policy: A + B (1.4x measured ...)" loses its prefix, as the whole
    report is the policy's). An answer of an older policy, whose first line was only "Search
    policy: 1.4x measured by benchmark_code with these changes:", gets the names from its
    bullets, so merged reports of older sessions say what changed too."""
    lines = [s.strip() for s in explanation.splitlines() if s.strip()]
    if not lines:
        return ""
    head = lines[0].removeprefix(POLICY_PREFIX)
    old = OLD_POLICY_HEAD.match(head)
    if old:
        names = []
        for line in lines[1:]:
            if not line.startswith("- "):
                break
            names.append(line[2:].split(":", 1)[0].strip())
        if names:
            head = f"{' + '.join(names)} ({old.group(1)})"
    return first_line(head, limit)


def short_reason(log: str, limit: int = REASON_CHARS) -> str:
    """A Python traceback's exception line; else the first line naming an error (with the next
    line when it ends in ":", as CMake's "CMake Error at CMakeLists.txt:3 (message):" does),
    else the last line of a log."""
    raw = [s for s in log.splitlines() if s.strip()]
    lines = [s.strip() for s in raw]
    if not lines:
        return "(no output)"
    if "Traceback (most recent call last):" in lines:  # its source lines may say "error" too
        start = lines.index("Traceback (most recent call last):")
        ends = [s for s in raw[start + 1 :] if not s[0].isspace() and not s.startswith("^")]
        if ends:
            return first_line(ends[0].strip(), limit)
    at = next((i for i, s in enumerate(lines) if "error" in s.lower()), None)
    if at is None:
        return first_line(lines[-1], limit)
    line = lines[at]
    if line.endswith(":") and at + 1 < len(lines):
        line += " " + lines[at + 1]
    return first_line(line, limit)
