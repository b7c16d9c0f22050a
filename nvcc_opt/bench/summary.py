"""The suite bench's rows and overall numbers: each kernel's row summarized from its runs (a
kernel whose runs the bench stopped is `unfinished`), and `summarize`, the overall numbers and
targets over the rows that finished; pure.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence

from nvcc_opt.bench.results import (
    APP_ROW,
    IMPROVED_AT,
    INTERRUPTED,
    PROPOSED,
    TARGET_SHARE,
    TARGET_WALL_S,
    WRONG_CODES,
    AppRun,
    Kernel,
    KernelRow,
    KernelRun,
    Overall,
    credited,
    geomean,
    reason_code,
    what_changed,
)


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
    proposed = [r for r in done if credited(r.status, r.reasons)]
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


def _changed(run: KernelRun) -> str:
    """The best run's explanation in one line, marked when its speedup comes from flags alone."""
    text = what_changed(run.explanation)
    return f"[{run.change}] {text}" if run.change in ("fast math only", "flags only") else text
