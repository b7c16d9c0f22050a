"""The suite bench's results: what a run of a kernel became, the table's rows, the overall numbers
and targets, and the JSON and Markdown files (pure but for `write_report`).

A kernel is one tagged region of an app (found by scanning its .cu files, so a region that was
never optimized still counts). Its best verified speedup is the best proposed rewrite's over the
runs; a kept original (or an error) counts as 1.0. "Improved" means a proposed rewrite at least
`IMPROVED_AT` faster: only a significant speedup is ever proposed (see verify/stats.py). A "wrong
final" is a final answer the independent verification rejected as incorrect (`WRONG_CODES`): a
build failure, a guard or "no improvement" is not wrong. Each run also keeps its evidence: the
final answer's explanation and what benchmark_code measured for every candidate (`Tried`), read
from the run's trace by the bench (`suite_bench`); `suite_merge` joins reports of several
sessions with the same `summarize`.

A run the bench stopped (Ctrl-C, its time limit) before a rewrite was proposed measured nothing
about the policy: such a kernel's row is "unfinished" and the overall numbers leave it out (they
say how many), so a slice cut short does not count as a kernel the policy failed on.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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
    sources: tuple[Source, ...] = ()  # a merged report's (`suite_merge`); none for a bench
    interrupted: bool = False  # Ctrl-C: the runs in flight were stopped, later ones not started
    not_run: tuple[str, ...] = ()  # apps left out because none of their runs started

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- pure: classification and summary ------------------------------------------------------


def reason_code(reason: str) -> str:
    """The word a reason starts with ("fresh_inputs --seed 9: ..." -> "fresh_inputs")."""
    found = _CODE.match(reason)
    return found.group(1) if found else ""


def is_wrong(reasons: Iterable[str]) -> bool:
    """Whether the verification rejected the final answer as incorrect."""
    return any(reason_code(r) in WRONG_CODES for r in reasons)


def classify(status: str, reasons: Sequence[str]) -> str:
    """What became of one final answer: proposed, wrong final, guard, build failed, held for
    review, no answer, no improvement, or error."""
    if status == PROPOSED:
        return "proposed"
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


def paper_speedup(run: KernelRun) -> float:
    """The paper's number for one run (Fig. 1: failures at 0)."""
    if run.status == PROPOSED:
        return run.speedup
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
    """The first line naming an error (with the next line when it ends in ":", as CMake's
    "CMake Error at CMakeLists.txt:3 (message):" does), else the last line of a log."""
    lines = [s.strip() for s in log.splitlines() if s.strip()]
    if not lines:
        return "(no output)"
    at = next((i for i, s in enumerate(lines) if "error" in s.lower()), None)
    if at is None:
        return first_line(lines[-1], limit)
    line = lines[at]
    if line.endswith(":") and at + 1 < len(lines):
        line += " " + lines[at + 1]
    return first_line(line, limit)


def summarize_kernel(kernel: Kernel, runs: Sequence[KernelRun], n_runs: int) -> KernelRow:
    """One row of the table from this kernel's results over the runs (the runs the bench stopped
    left out, unless no other run finished: then the row is unfinished)."""
    finished = [r for r in runs if not was_stopped(r)]
    if not finished and runs:
        return _unfinished_row(kernel, runs, n_runs)
    stopped = len(runs) - len(finished)
    runs = finished
    done = [r for r in runs if r.status != "error"]
    failed = [r for r in runs if r.status == "error"]
    proposed = [r for r in done if r.status == PROPOSED]
    best = max(proposed, key=lambda r: r.speedup, default=None)
    speedup = best.speedup if best is not None else 1.0
    improved = speedup >= IMPROVED_AT
    wrong = sum(1 for r in done if r.outcome == "wrong final")
    walls = [r.wall_s for r in done if r.wall_s is not None]
    baselines = [r.baseline_ms for r in runs if r.baseline_ms is not None]
    answered = [best, *runs] if best is not None else list(runs)
    if improved:
        verdict = "improved"
    elif best is not None:
        verdict = f"proposed, below {IMPROVED_AT - 1:.0%}"
    elif done:
        verdict = "kept: " + ", ".join(dict.fromkeys(_outcome(r) for r in done))
    else:
        why = failed[0].reasons[0] if failed and failed[0].reasons else "not run"
        verdict = f"error: {why}"
    if wrong and "wrong final" not in verdict:
        verdict += f" ({wrong} wrong final{'s' if wrong > 1 else ''})"
    if failed and done:
        why = failed[0].reasons[0] if failed[0].reasons else "failed"
        verdict += f" ({len(failed)} of {n_runs} runs failed: {why})"
    if stopped:
        verdict += f" ({len(runs)} of {len(runs) + stopped} runs counted: the others were stopped)"
    return KernelRow(
        app=kernel.app,
        file=kernel.file,
        region=kernel.region,
        baseline_ms=statistics.median(baselines) if baselines else None,
        best_speedup=speedup,
        improved=improved,
        changed=_changed(best) if best is not None else "",
        wall_s=statistics.median(walls) if walls else None,
        verdict=verdict,
        runs=n_runs,
        proposed=len(proposed),
        wrong_finals=wrong,
        errors=len(failed),
        explanation=next((r.explanation for r in answered if r.explanation), ""),
        change=best.change if best is not None else "",
        tried=tuple(t for r in runs for t in r.tried),
        trace_errors=tuple(
            f"{run_label(r.run, n_runs)}trace unreadable: {r.trace_error}"
            for r in runs
            if r.trace_error
        ),
    )


def stopped_by_bench(error: str | None) -> bool:
    """Whether an app run's error (or a kernel run's first reason) says the bench stopped it
    (Ctrl-C: "interrupted", "interrupted before it started"), not that it failed."""
    return error is not None and error.startswith(INTERRUPTED)


def was_stopped(run: KernelRun) -> bool:
    """The bench stopped this run (Ctrl-C) before it proposed anything: in the middle of
    optimize, or before optimize reached the region."""
    if run.status == PROPOSED:
        return False
    if run.status == "error":
        return bool(run.reasons) and stopped_by_bench(run.reasons[0])
    return run.stopped == INTERRUPTED


def _unfinished_row(kernel: Kernel, runs: Sequence[KernelRun], n_runs: int) -> KernelRow:
    baselines = [r.baseline_ms for r in runs if r.baseline_ms is not None]
    return KernelRow(
        app=kernel.app,
        file=kernel.file,
        region=kernel.region,
        baseline_ms=statistics.median(baselines) if baselines else None,
        best_speedup=1.0,
        improved=False,
        changed="",
        wall_s=None,
        verdict="unfinished: the bench was stopped before this kernel's runs ended (not counted)",
        runs=n_runs,
        proposed=0,
        wrong_finals=0,
        errors=0,
        tried=tuple(t for r in runs for t in r.tried),
        unfinished=True,
    )


def run_label(run: int, n_runs: int) -> str:
    """The prefix naming the run ("run 2: ") where a kernel has several, else nothing."""
    return f"run {run}: " if n_runs > 1 else ""


def _outcome(run: KernelRun) -> str:
    """The outcome, with the reason's code where it says what was wrong ("wrong final
    (numbers_differ)")."""
    if run.outcome == "no answer" and run.stopped:
        return f"no answer ({run.stopped})"
    if run.outcome not in ("wrong final", "guard", "build failed"):
        return run.outcome
    codes = [reason_code(r) for r in run.reasons]
    code = next((c for c in codes if c in WRONG_CODES or c.startswith("guard_")), "")
    return f"{run.outcome} ({code})" if code and code != run.outcome else run.outcome


def failed_runs(runs: Sequence[AppRun]) -> int:
    """App runs that failed (configure, build, optimize), not counting those the bench stopped."""
    return sum(1 for r in runs if r.error is not None and not stopped_by_bench(r.error))


def summarize(rows: Sequence[KernelRow], failed_runs: int = 0) -> Overall:
    """The share improved, the geometric mean speedup (kept = 1.0), wrong finals, the median
    wall time per kernel, and whether the targets are met, over the rows that finished."""
    unfinished = sum(1 for r in rows if r.unfinished)
    rows = [r for r in rows if not r.unfinished]
    improved = sum(1 for r in rows if r.improved)
    share = improved / len(rows) if rows else 0.0
    walls = [r.wall_s for r in rows if r.wall_s is not None]
    median_wall = statistics.median(walls) if walls else None
    wrong = sum(r.wrong_finals for r in rows)
    targets = {
        f"improved share >= {TARGET_SHARE:.0%}": bool(rows) and share >= TARGET_SHARE,
        f"median wall time per kernel <= {TARGET_WALL_S:g} s": (
            median_wall is not None and median_wall <= TARGET_WALL_S
        ),
        "no wrong finals": wrong == 0,
    }
    return Overall(
        kernels=len(rows),
        improved=improved,
        share_improved=share,
        geomean_speedup=geomean([r.best_speedup for r in rows]),
        wrong_finals=wrong,
        median_wall_s=median_wall,
        failed_runs=failed_runs,
        targets=targets,
        unfinished=unfinished,
        improved_by=dict(Counter(r.change or "unknown" for r in rows if r.improved)),
    )


def rows_for(kernels: Sequence[Kernel], runs: Sequence[AppRun], n_runs: int) -> list[KernelRow]:
    """A row per kernel (the scanned ones first, in order, then any a run named that the scan
    did not find); an app run that failed counts as an error for each of its kernels it did not
    reach."""
    order = list(kernels)
    for app_run in runs:
        for k in app_run.kernels:
            key = Kernel(k.app, k.file, k.region)
            if key not in order:
                order.append(key)
        if not any(key.app == app_run.app for key in order):  # nothing tagged was found
            order.append(Kernel(app_run.app, "", APP_ROW))
    by_kernel: dict[Kernel, list[KernelRun]] = {k: [] for k in order}
    for app_run in runs:
        reached = set()
        for k in app_run.kernels:
            key = Kernel(k.app, k.file, k.region)
            by_kernel[key].append(k)
            reached.add(key)
        for key in order:
            if key.app == app_run.app and key not in reached:
                why = app_run.error or "not optimized: the build did not record this region"
                by_kernel[key].append(KernelRun(key.app, key.file, key.region, app_run.run,
                                                "error", reasons=(why,)))  # fmt: skip
    return [summarize_kernel(k, by_kernel[k], n_runs) for k in order]


def model_slug(spec: str) -> str:
    """A file-name-safe name for a model spec, without its URL ("openai:org/M@http://..." ->
    "openai-M")."""
    head = spec.split("@", 1)[0].split("?", 1)[0]
    kind, _, rest = head.partition(":")
    rest = rest.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{kind}-{rest}" if rest else kind).strip("-.")
    return slug or "model"


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _num(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def render_markdown(report: Report) -> str:
    """The table, the overall numbers, and per kernel what was tried, as Markdown."""
    return "\n".join(
        [*_header(report), *_table(report.rows), *_overall(report.overall), *_tried(report.rows)]
    )


def _header(report: Report) -> list[str]:
    lines = [
        f"# nvcc-opt bench suite: {report.model}",
        "",
        f"- date: {report.started_at}",
        f"- command: `{report.command}`",
        f"- machine: {', '.join(f'{k}: {v}' for k, v in report.machine.items())}",
        f"- runs per app: {report.options.get('runs', 1)}; total wall time {report.wall_s:.0f} s",
    ]
    if report.sources:
        lines.append(
            f"- merged from {len(report.sources)} reports (a later one's rows replace an "
            "earlier one's for the same app and kernel):"
        )
        lines += [
            f"  - `{s.file}` ({s.started_at}, {s.rows_kept} rows kept): `{s.command}`"
            for s in report.sources
        ]
    lines += _gpu_lines(report)
    if report.sources and report.not_run:
        lines.append("- not measured in any of these reports: " + ", ".join(report.not_run))
    elif report.interrupted:
        lines.append(
            "- interrupted: the runs in flight were stopped (their rows say so); apps not run: "
            + (", ".join(report.not_run) or "none")
        )
    elif report.not_run:
        within = report.options.get("start_within_s")
        lines.append(
            f"- not started (their turn came after --start-within {within:g} s): "
            if isinstance(within, int | float)
            else "- not started: "
        )
        lines[-1] += ", ".join(report.not_run)
    return [*lines, ""]


def _gpu_lines(report: Report) -> list[str]:
    """The GPU of each app run, on one line, where the bench ran apps on several (--gpus)."""
    placed = [r for r in report.runs if r.gpu is not None]
    if not placed:
        return []
    several = any(r.run > 1 for r in report.runs)
    where = ", ".join(f"{r.app}{f' run {r.run}' if several else ''}: {r.gpu}" for r in placed)
    return [f"- GPUs (one app at a time each): {where}"]


def _table(rows: Sequence[KernelRow]) -> list[str]:
    lines = [
        "| app | kernel | baseline ms | best speedup | improved | what changed | wall s "
        "| verdict |",
        "|---|---|---:|---:|---|---|---:|---|",
    ]
    for r in rows:
        cells = [
            r.app, r.region, _num(r.baseline_ms, 3), _num(r.best_speedup, 3, "x"),
            "yes" if r.improved else "no", r.changed, _num(r.wall_s, 1), r.verdict,
        ]  # fmt: skip
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def _overall(o: Overall) -> list[str]:
    met = ", ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in o.targets.items())
    return [
        "",
        f"**Overall**: {o.improved} of {o.kernels} kernels improved by >= "
        f"{IMPROVED_AT - 1:.0%} with significance ({o.share_improved:.1%}); geometric mean "
        f"speedup {o.geomean_speedup:.3f}x (original kept = 1.0); wrong finals: "
        f"{o.wrong_finals}; median wall time per kernel: {_num(o.median_wall_s, 1, ' s')}; "
        f"failed app runs: {o.failed_runs}."
        + (f" Improved by what changed: {_by_change(o.improved_by)}." if o.improved_by else "")
        + (
            f" Not counted: {o.unfinished} kernel{'s' if o.unfinished > 1 else ''} whose runs "
            "the bench stopped before they ended."
            if o.unfinished
            else ""
        ),
        "",
        f"Targets: {met}.",
        "",
    ]


def _tried(rows: Sequence[KernelRow]) -> list[str]:
    """Per kernel: what the final answer changed (its first line, without a limit), then one
    line per benchmark_code call (what, speedup, verdict) and one per trace that could not be
    read."""
    lines = ["## What was tried", ""]
    for r in rows:
        lines += [f"### {r.app} / {r.region}", ""]
        if r.explanation:
            lines.append(f"Final answer: {what_changed(r.explanation, limit=10_000)}")
            lines.append("")
        lines += [f"- {tried_line(t, r.runs)}" for t in r.tried]
        lines += [f"- {why}" for why in r.trace_errors]
        if not r.tried and not r.trace_errors:
            lines.append("- no benchmark_code call recorded")
        lines.append("")
    return lines


def tried_line(tried: Tried, n_runs: int = 1) -> str:
    """One candidate as a line ("Trying X alone. [-flag]: 1.043x, improved"), with the first
    reason where it was not timed."""
    flags = f" [{' '.join(tried.compile_args)}]" if tried.compile_args else ""
    if tried.verdict in TIMED:
        result = f"{tried.speedup:.3f}x, {tried.verdict}"
    else:
        result = f"-, {tried.verdict}" + (f" ({first_line(tried.why)})" if tried.why else "")
    return f"{run_label(tried.run, n_runs)}{tried.what or '(no text)'}{flags}: {result}"


def free_stem(out: Path, name: str) -> str:
    """`name`, or `name-2`, `-3`... so that an earlier report of the same day is never
    overwritten."""
    stem, n = name, 1
    while (out / f"{stem}.json").exists() or (out / f"{stem}.md").exists():
        n += 1
        stem = f"{name}-{n}"
    return stem


def write_report(report: Report, out: Path) -> tuple[Path, Path]:
    """`<out>/<stem>.json` and `.md`; returns their paths."""
    stem = str(report.options.get("stem") or free_stem(out, f"suite-{report.date}"))
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    json_path.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(report), encoding="utf-8")
    return json_path, md_path


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed, from `nvcc-opt` on (run any other way, e.g. `python -c` or
    `python -m nvcc_opt.bench_cli`, its program is written as the `nvcc-opt bench` it stands
    for)."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        return ""
    head = [Path(args[0]).name] if Path(args[0]).name == "nvcc-opt" else ["nvcc-opt", "bench"]
    return shlex.join([*head, *args[1:]])


def _changed(run: KernelRun) -> str:
    """The best run's explanation in one line, marked when its speedup comes from flags alone."""
    text = what_changed(run.explanation)
    return f"[{run.change}] {text}" if run.change in ("fast math only", "flags only") else text


def _by_change(counts: dict[str, int]) -> str:
    """ "3 code, 1 fast math only": code changes first; a speedup from flags alone is never
    counted as a change of the code."""
    order = ["code", "code + fast math", "flags only", "fast math only", "unknown"]
    names = sorted(counts, key=lambda k: (order.index(k) if k in order else len(order), k))
    return ", ".join(f"{counts[k]} {k}" for k in names)
