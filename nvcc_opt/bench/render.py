"""The suite bench's report as files: the Markdown table (header, rows, overall numbers, what was
tried) and the JSON, written side by side under a free name; the command line a report names.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from nvcc_opt.bench.results import (
    IMPROVED_AT,
    TIMED,
    KernelRow,
    Overall,
    Report,
    Tried,
    first_line,
    what_changed,
)
from nvcc_opt.bench.summary import run_label


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
    `python -m nvcc_opt.cli.bench`, its program is written as the `nvcc-opt bench` it stands
    for)."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        return ""
    head = [Path(args[0]).name] if Path(args[0]).name == "nvcc-opt" else ["nvcc-opt", "bench"]
    return shlex.join([*head, *args[1:]])


def _by_change(counts: dict[str, int]) -> str:
    """ "3 code, 1 fast math only": code changes first; a speedup from flags alone is never
    counted as a change of the code."""
    order = ["code", "code + fast math", "flags only", "fast math only", "unknown"]
    names = sorted(counts, key=lambda k: (order.index(k) if k in order else len(order), k))
    return ", ".join(f"{counts[k]} {k}" for k in names)
