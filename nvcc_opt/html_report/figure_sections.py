"""The page's four figure sections from what was gathered; a figure without data is a note that
says what is missing."""

from __future__ import annotations

from nvcc_opt.bench.summary import was_stopped
from nvcc_opt.html_report import figures
from nvcc_opt.html_report.gathered import Gathered, is_ablation
from nvcc_opt.html_report.page import Section, figure, missing
from nvcc_opt.html_report.runs import ALL_KERNELS, RunSpeedup
from nvcc_opt.html_report.traces import Point, points_from_tried, view
from nvcc_opt.tools.catalog import TOOL_NAMES

NO_BENCH = "No bench reports given (--bench REPORT.json, as `nvcc-opt bench suite` writes)."
NO_TRACES = "No traces given (--traces DIR: a folder of trace files, e.g. traces.tar.gz unpacked)."


def _series_label(run: RunSpeedup) -> str:
    return run.model if run.tools == "all tools" else f"{run.model} ({run.tools})"


def fig1(g: Gathered) -> Section:
    title = "Fig. 1: speedup distribution"
    runs = [r for r in g.runs() if not is_ablation(r.tools)]
    if not runs:
        return Section(
            "fig1",
            title,
            missing(NO_BENCH if not g.benches else "The bench reports hold no finished run."),
        )
    categories = sorted({r.category for r in runs}, key=lambda c: (c == ALL_KERNELS, c))
    labels = list(dict.fromkeys(_series_label(r) for r in runs))
    grid = [
        [
            figures.Series(label, tuple(r.speedup for r in cell), tuple(r.failed for r in cell))
            for label in labels
            for cell in [[r for r in runs if r.category == c and _series_label(r) == label]]
        ]
        for c in categories
    ]
    drawn = figures.speedup_distribution(categories, grid)
    failed = sum(r.failed for r in runs)
    caption = (
        f"{len(runs)} runs of {len({(r.app, r.region) for r in runs})} kernels; {failed} failed "
        "(incorrect, did not build, or the run failed: drawn at 0); a kept original is 1.0."
    )
    return Section("fig1", title, figure("fig1-plot", drawn.svg, drawn.points, caption))


def fig2(g: Gathered) -> Section:
    title = "Fig. 2: benchmark_code speedups along each trace"
    series: list[figures.Series] = []
    source = ""
    if g.traces:
        source = f"from {len(g.traces)} traces under {g.traces_dir}"
        for t in g.traces:
            points = view(t.label, t.trace).points
            if points:
                series.append(_points_series(t.path.stem, points))
    else:
        source = "from the bench reports' record of each run's benchmark_code calls"
        for bench in g.benches:
            for app_run in bench.report.runs:
                for k in app_run.kernels:
                    if k.tried and not was_stopped(k):
                        label = f"{k.region} run {k.run}"
                        series.append(_points_series(label, points_from_tried(k.tried)))
    if not series:
        why = (
            (NO_TRACES + " " + NO_BENCH)
            if not g.traces and not g.benches
            else ("No benchmark_code call in the traces or bench reports given.")
        )
        return Section("fig2", title, missing(why))
    drawn = figures.trace_speedups(series)
    caption = f"{len(series)} traces, {drawn.points} benchmark_code calls ({source})."
    return Section("fig2", title, figure("fig2-plot", drawn.svg, drawn.points, caption))


def _points_series(label: str, points: tuple[Point, ...]) -> figures.Series:
    return figures.Series(label, tuple(p.speedup for p in points), tuple(p.failed for p in points))


def fig3(g: Gathered) -> Section:
    title = "Fig. 3: tool ablation"
    runs = g.runs()
    if not any(is_ablation(r.tools) for r in runs):
        why = (
            "No ablation runs: no bench report offered fewer tools than the six (reports name "
            "their tools in options.tools, --tools in options.optimize_args or their command, "
            "or their traces' meta.tools)."
        )
        return Section("fig3", title, missing(NO_BENCH if not g.benches else why))
    order = ["all tools", *(f"without {t}" for t in TOOL_NAMES)]
    present = {r.tools for r in runs}
    configs = [c for c in order if c in present]
    configs += sorted(present - set(order) - {"no tools"}) + (
        ["no tools"] if "no tools" in present else []
    )
    models = list(dict.fromkeys(r.model for r in runs))
    cells = [
        [
            figures.Series(m, tuple(r.speedup for r in cell), tuple(r.failed for r in cell))
            for m in models
            for cell in [[r for r in runs if r.tools == c and r.model == m]]
        ]
        for c in configs
    ]
    drawn = figures.ablation(configs, models, cells)
    caption = (
        "Mean speedup of the final answers (failures 0) per tool configuration; each point a "
        f"run ({drawn.points} runs)."
    )
    return Section("fig3", title, figure("fig3-plot", drawn.svg, drawn.points, caption))


def fig4(g: Gathered) -> Section:
    title = "Fig. 4: tool use per trace"
    if not g.traces:
        why = NO_TRACES if g.traces is None else f"No trace files under {g.traces_dir}."
        return Section("fig4", title, missing(why))
    views = [view(t.label, t.trace) for t in g.traces]
    views = [v for v in views if v.counts]
    if not views:
        return Section("fig4", title, missing("The traces hold no tool call."))
    names = [*TOOL_NAMES, *sorted({n for v in views for n in v.counts} - set(TOOL_NAMES))]
    counts = [[v.counts.get(n, 0) for n in names] for v in views]
    drawn = figures.tool_counts([v.label.rsplit("/", 1)[-1] for v in views], names, counts)
    total = sum(map(sum, counts))
    caption = f"{total} tool calls in {len(views)} traces."
    return Section("fig4", title, figure("fig4-plot", drawn.svg, drawn.points, caption))


def grpo(g: Gathered) -> Section:
    title = "GRPO: reward per step"
    if not g.grpo:
        return Section(
            "grpo", title, missing("No GRPO step log given (--grpo OUT/grpo_steps.jsonl).")
        )
    steps = [s.step for s in g.grpo]
    drawn = figures.reward_curve(
        steps,
        [
            ("reward (mean)", [s.reward_mean for s in g.grpo]),
            ("r_perf (mean)", [s.r_perf_mean for s in g.grpo]),
            ("r_tools (mean)", [s.r_tools_mean for s in g.grpo]),
            ("valid final answers (share)", [s.valid_answer_share for s in g.grpo]),
        ],
    )
    last = g.grpo[-1]
    caption = (
        f"{len(steps)} steps from {g.grpo_path}; last step {last.step}: reward "
        f"{last.reward_mean:.3f} (r_perf {last.r_perf_mean:.3f}, r_tools {last.r_tools_mean:.3f}) "
        f"over {last.rollouts} rollouts. r_perf: -2 incorrect, -1 not faster, "
        "min(10, t_base/t - 1) verified faster."
    )
    return Section("grpo", title, figure("grpo-plot", drawn.svg, drawn.points, caption))
