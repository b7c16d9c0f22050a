"""Canned inputs for `nvcc-opt report` tests: bench reports written by the bench's own types,
traces written by the agent's TraceWriter, a real SQLite store, a LULESH table."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nvcc_opt.agent.trace import TraceWriter
from nvcc_opt.bench.results import AppRun, Kernel, KernelRun, Report, Tried
from nvcc_opt.bench.summary import rows_for, summarize
from nvcc_opt.cli import cli
from nvcc_opt.records import NewRewrite
from nvcc_opt.store.api import Store

SIX = [
    "benchmark_code",
    "microbench_code",
    "compiler_analysis",
    "file_viewer",
    "list_dir",
    "search",
]
EXPLANATION = "Search policy: __restrict__ on x (1.400x measured)\nChanges:\n- __restrict__: 1.4x"


def timed(speedup: float, verdict: str = "improved") -> str:
    """A benchmark_code observation as `tools.bench.describe` writes it."""
    return (
        f"compiled: yes\ncorrect: yes\nspeedup: {speedup:.3f}x (95% CI 1-2, p=0.01): {verdict}\n"
        f"verdict: {verdict}\n  faster"
    )


REJECTED = "compiled: no\ncorrect: no\nverdict: rejected\n  build_failed: error in kernel.cu:3"


def write_trace(path: Path, results: list[str], tools: list[str] = SIX) -> Path:
    writer = TraceWriter(path, {"model": "search", "tools": tools})
    for turn, result in enumerate(results, 1):
        writer.add_step(
            {
                "turn": turn,
                "text": f"Trying idea {turn}.",
                "calls": [
                    {
                        "id": f"c{turn}",
                        "name": "benchmark_code",
                        "arguments": {"code": "__global__ void k() {}"},
                        "result": result,
                    },
                    {
                        "id": f"d{turn}",
                        "name": "compiler_analysis",
                        "arguments": {},
                        "result": "registers: 32",
                    },
                ],
            }
        )
    writer.add_step(
        {
            "turn": len(results) + 1,
            "text": "Done.",
            "calls": [
                {"id": "s", "name": "search", "arguments": {"pattern": "x"}, "result": "2 files"}
            ],
        }
    )
    writer.set_outcome({"reason": "final_answer", "message": "answered"})
    writer.save()
    return path


def kernel_run(
    region: str,
    run: int,
    status: str,
    speedup: float,
    outcome: str,
    trace: str = "",
    reasons: tuple[str, ...] = (),
) -> KernelRun:
    tried = (
        Tried(run, "Trying __restrict__.", (), "improved", speedup, "faster"),
        Tried(run, "Trying a bad idea.", (), "rejected", 1.0, "build_failed"),
    )
    return KernelRun(
        app="RAJAPerf",
        file=f"src/{region}.cpp",
        region=region,
        run=run,
        status=status,
        speedup=speedup,
        baseline_ms=2.0,
        wall_s=60.0,
        stopped="final_answer",
        reasons=reasons,
        explanation=EXPLANATION if status == "proposed" else "",
        outcome=outcome,
        trace=trace,
        tried=tried,
    )


def bench_report(
    path: Path,
    options: dict[str, object],
    model: str = "search",
    traces: dict[str, str] | None = None,
) -> Path:
    """A report of three RAJAPerf kernels in two runs: a proposed rewrite, a kept original and a
    wrong final answer (speedup 0) among them."""
    traces = traces or {}
    regions = ["Apps_PRESSURE", "Polybench_ADI", "Algorithm_SCAN"]
    runs = []
    for n in (1, 2):
        kernels = (
            kernel_run(
                "Apps_PRESSURE",
                n,
                "proposed",
                1.4 + n / 10,
                "proposed",
                traces.get(f"Apps_PRESSURE-{n}", ""),
            ),
            kernel_run("Polybench_ADI", n, "original kept", 1.0, "no improvement"),
            kernel_run(
                "Algorithm_SCAN",
                n,
                "original kept",
                1.0,
                "wrong final",
                reasons=("numbers_differ: 3 of 10",),
            ),
        )
        runs.append(AppRun("RAJAPerf", n, kernels, None, 120.0, "/work"))
    rows = rows_for([Kernel("RAJAPerf", f"src/{r}.cpp", r) for r in regions], runs, 2)
    report = Report(
        model=model,
        date="2026-12-05",
        started_at="2026-12-05T07:00:00+0000",
        command="nvcc-opt bench suite",
        machine={"gpu": "H200"},
        options={"runs": 2, **options},
        rows=tuple(rows),
        overall=summarize(rows),
        runs=tuple(runs),
        wall_s=240.0,
    )
    path.write_text(json.dumps(report.to_dict(), indent=2), encoding="utf-8")
    return path


def store_with_rewrite(path: Path, trace: dict[str, object]) -> Path:
    with Store.open(path) as store:
        store.add_rewrite(
            NewRewrite(
                file="/src/kernel.cu",
                region_name="pressure",
                region_hash="ab" * 32,
                code="__global__ void pressure() {}",
                explanation="Fewer registers: 1.3x\nbecause",
                statistics={"speedup": 1.3},
                model="search",
                trace=trace,
                origin="optimize",
            )
        )
    return path


def lulesh_table(path: Path) -> Path:
    rows = [
        {"what": "kernel", "baseline_ms": 2.0, "optimized_ms": 1.7},
        {"what": "application", "baseline_ms": 3000.0, "optimized_ms": 2910.0, "speedup": 1.031},
    ]
    path.write_text(json.dumps({"gpu": "NVIDIA H200", "size": 120, "rows": rows}), "utf-8")
    return path


def grpo_log(path: Path) -> Path:
    """Three steps as `nvcc-opt train grpo` logs them (the keys the report reads, and others)."""
    rows = [
        {"step": n, "rollouts": 12, "reward_mean": r, "r_perf_mean": r - 0.2,
         "r_tools_mean": 0.2, "valid_answer_share": v, "tool_s": 3.0, "notes": []}
        for n, r, v in ((1, -1.5, 0.25), (2, -0.9, 0.5), (3, -0.4, 0.75))
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class Page(HTMLParser):
    """Every tag with its attributes, and the figures' ids, points and marks."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.figures: dict[str, int] = {}
        self.marks: dict[str, int] = {}
        self._figure: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.tags.append((tag, found))
        if tag == "figure":
            self._figure = found["id"]
            self.figures[found["id"]] = int(found["data-points"])
            self.marks[found["id"]] = 0
        elif self._figure and found.get("id", "").startswith("mark-"):
            self.marks[self._figure] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._figure = None

    def references(self) -> list[str]:
        """Every src, href and xlink:href value."""
        return [v for _, a in self.tags for k, v in a.items() if k in ("src", "href", "xlink:href")]

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if "id" in a}


TRACE = "RAJAPerf/run-1/state/traces/20261205-070000-Apps_PRESSURE.json"


def report(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["report", *map(str, args)])


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    """Everything the report reads: a full-tools, a no-tools and an ablation bench report of
    RAJAPerf kernels, two traces (one the full report's run names), a store, a LULESH table."""
    traces = tmp_path / "traces"
    write_trace(traces / TRACE, [timed(1.2), REJECTED, timed(1.5)])
    other = write_trace(traces / "x" / "20261205-071000-Polybench_ADI.json", [timed(0.9)])
    without = ",".join(t for t in SIX if t != "compiler_analysis")
    return {
        "full": bench_report(tmp_path / "full.json", {}, traces={"Apps_PRESSURE-1": TRACE}),
        "none": bench_report(tmp_path / "none.json", {"no_tools": True}),
        "ablation": bench_report(
            tmp_path / "abl.json", {"optimize_args": ["--seed", "1", "--tools", without]}
        ),
        "traces": traces,
        "store": store_with_rewrite(tmp_path / "store.db", json.loads(other.read_text())),
        "lulesh": lulesh_table(tmp_path / "lulesh.json"),
        "grpo": grpo_log(tmp_path / "grpo_steps.jsonl"),
        "out": tmp_path / "out" / "report.html",
    }


def full_args(i: dict[str, Path]) -> list[str | Path]:
    return [
        "--bench",
        i["full"],
        "--bench",
        i["none"],
        "--bench",
        i["ablation"],
        "--traces",
        i["traces"],
        "--store",
        i["store"],
        "--lulesh",
        i["lulesh"],
        "--grpo",
        i["grpo"],
        "-o",
        i["out"],
    ]
