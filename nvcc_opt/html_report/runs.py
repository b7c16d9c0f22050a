"""What the bench reports say, as the paper counts it (pure): one speedup per finished run of a
kernel, failures at 0, each with its kernel's category and the tools the run was offered.

The paper's rule (`bench.results.paper_speedup`): a final answer that is missing, incorrect,
refused by a guard or does not build, and a run that failed, is speedup 0; a kept original is
1.0; a proposed rewrite is its verified speedup. A run the bench stopped (Ctrl-C,
`bench.summary.was_stopped`) measured nothing and is left out.

A kernel's category is the row's `category` where a report has one, else the RAJAPerf group
its region name starts with (`Apps_PRESSURE` -> Apps), else "all kernels".

The tools a report's runs were offered, first found of: `options.no_tools` (none),
`options.tools`, `--tools` or `--parity` in `options.optimize_args` or the report's command,
the `meta.tools` every one of its traces agrees on; else optimize's default, the paper's six.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nvcc_opt.bench.results import PROPOSED, KernelRun, Report
from nvcc_opt.bench.results import paper_speedup as paper_number
from nvcc_opt.bench.summary import was_stopped

RAJAPERF_GROUP = re.compile(r"^(Apps|Algorithm|Polybench|Basic|Lcals|Stream|Comm)_\w+$")
ALL_KERNELS = "all kernels"


@dataclass(frozen=True)
class ToolSet:
    """The tools offered: `names` (None: drawn at random per run, --parity) and where that was
    read."""

    names: frozenset[str] | None
    source: str

    def label(self, full: Sequence[str]) -> str:
        if self.names is None:
            return "random 4-6 tools (--parity)"
        if not self.names:
            return "no tools"
        if self.names == frozenset(full):
            return "all tools"
        missing = [t for t in full if t not in self.names]
        extra = sorted(self.names - set(full))
        if len(missing) == 1 and not extra:
            return f"without {missing[0]}"
        return "tools: " + ", ".join(sorted(self.names))


@dataclass(frozen=True)
class RunSpeedup:
    model: str
    tools: str  # ToolSet.label
    category: str
    app: str
    region: str
    run: int
    speedup: float  # the paper's: failures 0
    failed: bool
    outcome: str
    trace: str  # relative to the report's work folder, "" when none


def paper_speedup(run: KernelRun) -> tuple[float, bool]:
    """The paper's number for one run (`bench.results.paper_speedup`) and whether it is a
    failure."""
    value = paper_number(run)
    return value, run.status != PROPOSED and value == 0.0


def category_of(region: str, row_category: str | None = None) -> str:
    if row_category:
        return row_category
    found = RAJAPERF_GROUP.match(region)
    return found.group(1) if found else ALL_KERNELS


def run_speedups(
    report: Report, tools: str, categories: Mapping[tuple[str, str], str]
) -> list[RunSpeedup]:
    """Every finished kernel run of `report`, in the report's order."""
    found = []
    for app_run in report.runs:
        for k in app_run.kernels:
            if was_stopped(k):
                continue
            value, failed = paper_speedup(k)
            found.append(
                RunSpeedup(
                    model=report.model,
                    tools=tools,
                    category=category_of(k.region, categories.get((k.app, k.region))),
                    app=k.app,
                    region=k.region,
                    run=k.run,
                    speedup=value,
                    failed=failed,
                    outcome=k.outcome or k.status,
                    trace=k.trace,
                )
            )
    return found


def row_categories(raw: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """(app, region) -> the `category` a report's raw JSON gives a row, where it gives one."""
    found = {}
    for row in raw.get("rows") or ():
        if isinstance(row, dict) and isinstance(row.get("category"), str):
            found[(str(row.get("app")), str(row.get("region")))] = row["category"]
    return found


def tools_from_options(options: Mapping[str, Any], command: str) -> ToolSet | None:
    """The tools a report's options or command name, or None when they name none."""
    if options.get("no_tools") is True:
        return ToolSet(frozenset(), "options.no_tools")
    named = options.get("tools")
    if isinstance(named, str):
        named = named.split(",")
    if isinstance(named, list) and all(isinstance(t, str) for t in named):
        return ToolSet(frozenset(t.strip() for t in named if t.strip()), "options.tools")
    args = options.get("optimize_args")
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        found = _tools_in_args(args, "options.optimize_args")
        if found is not None:
            return found
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return _tools_in_args(words, "the report's command")


def _tools_in_args(args: Sequence[str], where: str) -> ToolSet | None:
    for i, word in enumerate(args):
        if word == "--parity":
            return ToolSet(None, where)
        if word == "--no-tools":
            return ToolSet(frozenset(), where)
        value = None
        if word == "--tools" and i + 1 < len(args):
            value = args[i + 1]
        elif word.startswith("--tools="):
            value = word.split("=", 1)[1]
        if value is not None:
            return ToolSet(frozenset(t.strip() for t in value.split(",") if t.strip()), where)
    return None


def tools_from_traces(offered: Sequence[Sequence[str]]) -> ToolSet | None:
    """The tool set every trace of a report was offered, or None when there are none or they
    differ (several sets in one report: --parity)."""
    sets = {frozenset(names) for names in offered}
    if not sets:
        return None
    if len(sets) > 1:
        return ToolSet(None, "its traces' meta.tools (they differ)")
    return ToolSet(sets.pop(), "its traces' meta.tools")
