"""What a trace shows in the report (pure): benchmark_code's speedups in call order (Fig. 2),
the calls per tool (Fig. 4), and a short account of its steps to embed in the page."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from nvcc_opt.agent.trace import Trace
from nvcc_opt.bench.results import TIMED, Tried
from nvcc_opt.tools.bench import read_benchmark

TEXT_CHARS = 240
ARGS_CHARS = 200
MAX_STEPS = 80


@dataclass(frozen=True)
class Point:
    """One benchmark_code call: its speedup, or a failure (not timed: rejected, build error)."""

    speedup: float
    failed: bool
    verdict: str


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str
    result: str


@dataclass(frozen=True)
class Step:
    turn: int
    text: str
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class TraceView:
    """One trace as the report shows it; `label` names it (its path under --traces)."""

    label: str
    model: str
    tools: tuple[str, ...]
    points: tuple[Point, ...]
    counts: dict[str, int]
    steps: tuple[Step, ...]
    outcome: str


def view(label: str, trace: Trace) -> TraceView:
    """The trace's figures' data and its steps (the first MAX_STEPS), whatever its calls hold."""
    counts: Counter[str] = Counter()
    points = []
    steps = []
    for number, step in enumerate(trace.steps, 1):
        calls = [c for c in step.get("calls") or () if isinstance(c, dict)]
        for call in calls:
            name = str(call.get("name") or "?")
            counts[name] += 1
            if name == "benchmark_code":
                points.append(_point(call.get("result")))
        if number <= MAX_STEPS:
            steps.append(
                Step(
                    int(step.get("turn") or number),
                    _short(step.get("text"), TEXT_CHARS),
                    tuple(_call(c) for c in calls),
                )
            )
    meta = trace.meta if isinstance(trace.meta, dict) else {}
    offered = meta.get("tools")
    tools = offered if isinstance(offered, list) else []
    outcome = trace.outcome if isinstance(trace.outcome, dict) else {}
    return TraceView(
        label=label,
        model=str(meta.get("model") or ""),
        tools=tuple(str(t) for t in tools),
        points=tuple(points),
        counts=dict(counts),
        steps=tuple(steps),
        outcome=_short(f"{outcome.get('reason', '')}: {outcome.get('message', '')}", TEXT_CHARS)
        if outcome
        else "no outcome (the run did not end)",
    )


def points_from_tried(tried: tuple[Tried, ...]) -> tuple[Point, ...]:
    """A bench report's record of one run's benchmark_code calls, as Fig. 2's points (for runs
    whose trace is not at hand)."""
    return tuple(Point(t.speedup, t.verdict not in TIMED, t.verdict) for t in tried)


def _point(result: Any) -> Point:
    if not isinstance(result, str):
        return Point(0.0, True, "unfinished")
    measured = read_benchmark(result)
    if measured.verdict in TIMED:
        return Point(measured.speedup, False, measured.verdict)
    return Point(0.0, True, measured.verdict)


def _call(call: dict[str, Any]) -> Call:
    arguments = call.get("arguments")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
    result = call.get("result")
    if not isinstance(result, str):
        result = f"error: {call.get('error')}" if call.get("error") else "(no result)"
    return Call(str(call.get("name") or "?"), _short(text, ARGS_CHARS), _short(result, TEXT_CHARS))


def _short(value: Any, limit: int) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
