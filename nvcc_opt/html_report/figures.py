"""The paper's four figures, drawn with matplotlib (its SVG backend, no display) as SVG text to
inline in the page. Every plotted mark group carries an id starting with `mark-`, which the
page's own script counts; each function returns the SVG and the number of points it drew.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

INSTALL = "pip install matplotlib"
FAIL_COLOR = "#d62728"
WIDTH_IN = 11.0


class PlottingMissing(RuntimeError):
    """matplotlib is not installed."""


@dataclass(frozen=True)
class Drawn:
    svg: str
    points: int


@dataclass(frozen=True)
class Series:
    """One group of values: a label and its values, failures among them flagged."""

    label: str
    values: tuple[float, ...]
    failed: tuple[bool, ...]


def require() -> None:
    """PlottingMissing, with the line that installs it, when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlottingMissing(
            f"nvcc-opt report draws its figures with matplotlib, which is not installed: {INSTALL}"
        ) from None


def _figure(height_in: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH_IN, height_in), layout="constrained")


def _svg(fig: Figure) -> str:
    """The figure as an <svg> element: no XML prolog, DOCTYPE or metadata (no external names),
    text as text (no embedded glyphs)."""
    from matplotlib import rc_context

    out = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "nvcc-opt"}):
        fig.savefig(
            out,
            format="svg",
            metadata={"Creator": None, "Date": None, "Format": None, "Type": None},
        )
    text = out.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)


def _colors(n: int) -> list[str]:
    palette = [
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#7f7f7f",
        "#bcbd22",
        "#17becf",
        "#aec7e8",
    ]
    return [palette[i % len(palette)] for i in range(n)]


def _jitter(n: int, width: float) -> list[float]:
    """Fixed offsets spreading n points across `width` (the same figure every time)."""
    if n <= 1:
        return [0.0] * n
    return [((i * 0.618034) % 1.0 - 0.5) * width for i in range(n)]


def _strip(ax: Axes, x: float, series: Series, color: str, gid: str, width: float) -> int:
    """The values as points around x: kept ones in `color`, failures as red crosses at 0."""
    offsets = _jitter(len(series.values), width)
    ok = [
        (x + o, v) for o, v, f in zip(offsets, series.values, series.failed, strict=True) if not f
    ]
    bad = [(x + o, 0.0) for o, f in zip(offsets, series.failed, strict=True) if f]
    if ok:
        ax.scatter(
            [p[0] for p in ok],
            [p[1] for p in ok],
            s=18,
            color=color,
            alpha=0.8,
            edgecolors="white",
            linewidths=0.4,
            zorder=3,
            gid=f"{gid}-ok",
        )
    if bad:
        ax.scatter(
            [p[0] for p in bad],
            [p[1] for p in bad],
            s=30,
            marker="x",
            color=FAIL_COLOR,
            zorder=4,
            gid=f"{gid}-failed",
        )
    return len(ok) + len(bad)


def speedup_distribution(categories: Sequence[str], series: Sequence[Sequence[Series]]) -> Drawn:
    """Fig. 1: per category (x), a box and the points of each model's runs; `series[i]` holds
    category i's series, one per model, in the same order everywhere."""
    fig = _figure(4.8)
    ax = fig.add_subplot()
    labels = [s.label for s in series[0]] if series else []
    colors = _colors(len(labels))
    width = min(0.5, 0.8 / max(1, len(labels)))
    points = 0
    for i, group in enumerate(series):
        for j, one in enumerate(group):
            if not one.values:
                continue
            x = i + (j - (len(group) - 1) / 2) * width
            ax.boxplot(
                [one.values],
                positions=[x],
                widths=width * 0.7,
                showfliers=False,
                patch_artist=True,
                boxprops={"facecolor": colors[j], "alpha": 0.25},
                medianprops={"color": colors[j]},
            )
            points += _strip(ax, x, one, colors[j], f"mark-fig1-{i}-{j}", width * 0.6)
    for j, label in enumerate(labels):
        ax.scatter([], [], color=colors[j], label=label)
    ax.scatter([], [], marker="x", color=FAIL_COLOR, label="failure (speedup 0)")
    ax.axhline(1.0, color="#888", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(categories)), [f"{c}" for c in categories])
    ax.set_xlim(-0.6, len(categories) - 0.4)
    ax.set_ylabel("speedup of the final answer (x)")
    ax.set_title("Speedup per run, by category and model (failures at 0)")
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    return Drawn(_svg(fig), points)


def trace_speedups(series: Sequence[Series]) -> Drawn:
    """Fig. 2: benchmark_code's speedup at each call of each trace; failures as red crosses."""
    from matplotlib.ticker import MaxNLocator

    fig = _figure(4.8)
    ax = fig.add_subplot()
    colors = _colors(len(series))
    points = 0
    for i, one in enumerate(series):
        xs = list(range(1, len(one.values) + 1))
        timed = [(x, v) for x, v, f in zip(xs, one.values, one.failed, strict=True) if not f]
        bad = [x for x, f in zip(xs, one.failed, strict=True) if f]
        if timed:
            ax.plot(
                [p[0] for p in timed],
                [p[1] for p in timed],
                marker="o",
                markersize=3.5,
                linewidth=1.0,
                alpha=0.75,
                color=colors[i],
                label=one.label,
                gid=f"mark-fig2-{i}",
            )
        if bad:
            ax.scatter(
                bad,
                [0.0] * len(bad),
                marker="x",
                s=30,
                color=FAIL_COLOR,
                zorder=4,
                gid=f"mark-fig2-{i}-failed",
            )
        points += len(one.values)
    ax.scatter([], [], marker="x", color=FAIL_COLOR, label="not timed (failed)")
    ax.axhline(1.0, color="#888", linestyle="--", linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("benchmark_code call")
    ax.set_ylabel("speedup (x)")
    ax.set_title("benchmark_code speedups along each trace")
    if len(series) <= 12:
        ax.legend(loc="upper left", fontsize=7, frameon=False)
    return Drawn(_svg(fig), points)


def ablation(
    configs: Sequence[str], models: Sequence[str], cells: Sequence[Sequence[Series]]
) -> Drawn:
    """Fig. 3: per tool configuration (x), each model's mean speedup (failures 0) as a bar with
    its runs as points; `cells[i][j]` holds configuration i's runs of model j."""
    fig = _figure(4.4)
    ax = fig.add_subplot()
    colors = _colors(len(models))
    width = min(0.5, 0.8 / max(1, len(models)))
    points = 0
    for i, row in enumerate(cells):
        for j, one in enumerate(row):
            if not one.values:
                continue
            x = i + (j - (len(models) - 1) / 2) * width
            mean = sum(one.values) / len(one.values)
            ax.bar(
                [x],
                [mean],
                width=width * 0.85,
                color=colors[j],
                alpha=0.35,
                gid=f"mark-fig3-{i}-{j}-bar",
            )
            ax.annotate(
                f"{mean:.2f}x (n={len(one.values)})",
                (x + width * 0.45, mean),
                xytext=(2, 2),
                textcoords="offset points",
                ha="left",
                va="bottom",
                fontsize=7,
            )
            points += _strip(ax, x, one, colors[j], f"mark-fig3-{i}-{j}", width * 0.5)
    for j, model in enumerate(models):
        ax.bar([0], [0], width=0, color=colors[j], label=model)
    ax.axhline(1.0, color="#888", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(configs)), list(configs), rotation=15, ha="right")
    ax.set_ylabel("mean speedup (x, failures 0)")
    ax.set_title("Tool ablation: the same kernels with each tool removed")
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    return Drawn(_svg(fig), points)


def tool_counts(
    traces: Sequence[str], tools: Sequence[str], counts: Sequence[Sequence[int]]
) -> Drawn:
    """Fig. 4: per trace (a row), its calls of each tool as a stacked bar."""
    fig = _figure(1.6 + 0.24 * len(traces))
    ax = fig.add_subplot()
    colors = _colors(len(tools))
    left = [0] * len(traces)
    points = 0
    for j, tool in enumerate(tools):
        values = [row[j] for row in counts]
        if not any(values):
            continue
        ax.barh(
            range(len(traces)), values, left=left, color=colors[j], label=tool, gid=f"mark-fig4-{j}"
        )
        left = [a + b for a, b in zip(left, values, strict=True)]
        points += sum(1 for v in values if v)
    ax.set_yticks(range(len(traces)), list(traces), fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("tool calls")
    ax.set_title("Tool use per trace")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return Drawn(_svg(fig), points)


def reward_curve(steps: Sequence[int], curves: Sequence[tuple[str, Sequence[float]]]) -> Drawn:
    """GRPO: each named value (mean reward, r_perf, r_tools, ...) per training step."""
    from matplotlib.ticker import MaxNLocator

    fig = _figure(4.2)
    ax = fig.add_subplot()
    colors = _colors(len(curves))
    points = 0
    for i, (label, values) in enumerate(curves):
        ax.plot(
            list(steps),
            list(values),
            marker="o",
            markersize=3.0,
            linewidth=1.2,
            color=colors[i],
            label=label,
            gid=f"mark-grpo-{i}",
        )
        points += len(values)
    ax.axhline(0.0, color="#888", linestyle="--", linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("mean over the step's rollouts")
    ax.set_title("GRPO reward per step (r = r_perf + r_tools)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return Drawn(_svg(fig), points)
