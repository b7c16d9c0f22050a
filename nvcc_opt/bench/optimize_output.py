"""What one `nvcc-opt optimize --json` run left: its JSON list and "cannot optimize" lines, read
into KernelRuns, each with what its trace says benchmark_code measured for every candidate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nvcc_opt.agent.trace import TraceError, load_trace
from nvcc_opt.bench.results import (
    REASON_CHARS,
    KernelRun,
    Tried,
    classify,
    credited,
    first_line,
    short_reason,
)
from nvcc_opt.tools.bench import Measured, read_benchmark

_CANNOT = re.compile(r"^\[(?P<region>[^\]\s]+)(?: gpu [^\]]*)?\] cannot optimize: (?P<why>.*)$")


def parse_optimize_output(
    stdout: str, stderr: str = ""
) -> tuple[list[dict[str, Any]] | None, dict[str, str]]:
    """(the JSON list on stdout or None, region -> why it could not be optimized, from the
    progress lines: on stderr, or before the JSON where one stream holds both)."""
    cannot: dict[str, str] = {}
    lines = stdout.splitlines()
    for line in [*stderr.splitlines(), *lines]:
        found = _CANNOT.match(line)
        if found:
            cannot[found["region"]] = found["why"]
    for i, line in enumerate(lines):
        if line in ("[", "[]"):
            try:
                data = json.loads("\n".join(lines[i:]))
            except json.JSONDecodeError:
                continue
            if isinstance(data, list) and all(isinstance(d, dict) for d in data):
                return data, cannot
    return None, cannot


def optimize_failure(stderr: str, stdout: str = "") -> str:
    """Why an optimize run failed, in one line: its closing `Error: ...` line (the progress
    lines before it may name errors of single tool calls), else the first error it printed."""
    closing = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    if closing:
        return first_line(closing[-1], REASON_CHARS)
    return short_reason(stderr + "\n" + stdout)


def relative_to(path: str, root: Path) -> str:
    """`path` relative to `root` when it lies under it (resolved), else as given."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


def kernel_runs(
    app: str, run: int, results: Sequence[dict[str, Any]], root: Path, base: Path
) -> list[KernelRun]:
    """optimize's RegionResult dicts as KernelRuns, each with what its trace says was tried (the
    trace's path written relative to the report's work folder `base`, as traces.tar.gz holds
    it)."""
    found = []
    for d in results:
        status = str(d.get("status", ""))
        reasons = tuple(str(r) for r in d.get("reasons") or ())
        baseline = d.get("baseline_ms")
        wall = d.get("wall_s")
        trace = str(d.get("trace") or "")
        tried, unreadable = read_tried(Path(trace), run) if trace else ((), "no trace path")
        found.append(
            KernelRun(
                app=app,
                file=relative_to(str(d.get("file", "")), root),
                region=str(d.get("region", "")),
                run=run,
                status=status,
                speedup=float(d.get("speedup") or 1.0) if credited(status, reasons) else 1.0,
                baseline_ms=float(baseline) if isinstance(baseline, int | float) else None,
                wall_s=float(wall) if isinstance(wall, int | float) else None,
                stopped=str(d.get("stopped", "")),
                reasons=reasons,
                explanation=str(d.get("explanation") or ""),
                change=str(d.get("change") or ""),
                outcome=classify(status, reasons),
                trace=relative_to(trace, base) if trace else "",
                tried=tried,
                trace_error=unreadable,
            )
        )
    return found


def read_tried(path: Path, run: int) -> tuple[tuple[Tried, ...], str]:
    """Every benchmark_code call in the trace at `path`, in order, and "" ; or nothing and why
    the trace cannot be read (a report says so rather than failing)."""
    try:
        steps = load_trace(path).steps
        tried = tuple(
            _tried(step, call, run)
            for step in steps
            for call in step.get("calls") or ()
            if call.get("name") == "benchmark_code"
        )
    except TraceError as exc:
        return (), first_line(str(exc), REASON_CHARS)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return (), first_line(
            f"{path}: malformed trace ({type(exc).__name__}: {exc})", REASON_CHARS
        )
    return tried, ""


def _tried(step: dict[str, Any], call: dict[str, Any], run: int) -> Tried:
    """One benchmark_code call: the text the model sent with it, its compile_args, and the
    observation read back by benchmark_code's own reader."""
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = None
    flags = arguments.get("compile_args") if isinstance(arguments, dict) else None
    result = call.get("result")
    measured = (
        read_benchmark(result)
        if isinstance(result, str)
        else Measured("unfinished", 1.0, "the call did not return (the run was stopped)")
    )
    return Tried(
        run=run,
        what=first_line(str(step.get("text") or "")),
        compile_args=tuple(str(f) for f in flags) if isinstance(flags, list) else (),
        verdict=measured.verdict,
        speedup=measured.speedup,
        why=measured.why,
    )
