"""Everything the report was given, read once, and the joins between them: each bench report's
tool set and runs, and each run's trace found under --traces."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nvcc_opt.html_report.grpo_log import GrpoStep
from nvcc_opt.html_report.inputs import Bench, TraceFile
from nvcc_opt.html_report.lulesh import LuleshTable
from nvcc_opt.html_report.runs import (
    RunSpeedup,
    ToolSet,
    row_categories,
    run_speedups,
    tools_from_options,
    tools_from_traces,
)
from nvcc_opt.records import Rewrite
from nvcc_opt.tools.catalog import TOOL_NAMES

DEFAULT_TOOLS = ToolSet(frozenset(TOOL_NAMES), "not named: optimize's default, the paper's six")


@dataclass
class Gathered:
    """The inputs; a piece not given is None (its section says so)."""

    out: Path
    benches: list[Bench] = field(default_factory=list)
    traces: list[TraceFile] | None = None
    traces_dir: Path | None = None
    rewrites: list[Rewrite] | None = None
    store: Path | None = None
    lulesh: LuleshTable | None = None
    lulesh_path: Path | None = None
    grpo: list[GrpoStep] | None = None
    grpo_path: Path | None = None

    def find_trace(self, relative: str) -> TraceFile | None:
        """The trace a bench report names (relative to its work folder): at that path under
        --traces, else the one trace with the same file name."""
        if not relative or self.traces is None:
            return None
        for t in self.traces:
            if t.label == relative:
                return t
        name = Path(relative).name
        same = [t for t in self.traces if t.path.name == name]
        return same[0] if len(same) == 1 else None

    def tool_set(self, bench: Bench) -> ToolSet:
        named = tools_from_options(bench.report.options, bench.report.command)
        if named is not None:
            return named
        offered = []
        for app_run in bench.report.runs:
            for k in app_run.kernels:
                found = self.find_trace(k.trace)
                if found is not None and isinstance(found.trace.meta.get("tools"), list):
                    offered.append([str(t) for t in found.trace.meta["tools"]])
        return tools_from_traces(offered) or DEFAULT_TOOLS

    def runs(self) -> list[RunSpeedup]:
        """Every finished run of every bench report, with its report's tool set."""
        found = []
        for bench in self.benches:
            label = self.tool_set(bench).label(TOOL_NAMES)
            found += run_speedups(bench.report, label, row_categories(bench.raw))
        return found


def is_ablation(label: str) -> bool:
    """A tool set smaller than the six but not empty: a run of the ablation (Fig. 3)."""
    return label.startswith(("without ", "tools: "))
