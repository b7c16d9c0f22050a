"""The page's tables: LULESH (Table II), the kernels of the bench reports, the store's rewrites,
and the traces embedded as short accounts of their steps (anchors the tables link to)."""

from __future__ import annotations

import os
from html import escape

from nvcc_opt.agent.trace import Trace
from nvcc_opt.bench.summary import was_stopped
from nvcc_opt.html_report.figure_sections import NO_BENCH, NO_TRACES
from nvcc_opt.html_report.gathered import Gathered
from nvcc_opt.html_report.inputs import TraceFile
from nvcc_opt.html_report.lulesh import LuleshTable
from nvcc_opt.html_report.page import Section, missing, table
from nvcc_opt.html_report.runs import category_of, paper_speedup
from nvcc_opt.html_report.traces import TraceView, view
from nvcc_opt.tools.catalog import TOOL_NAMES

LULESH_SCHEMA = (
    'a JSON {"rows": [{"what": "kernel"|"application", "baseline_ms": .., "optimized_ms": .., '
    '"speedup": ..}], "gpu": .., "size": ..}'
)


def lulesh(g: Gathered) -> Section:
    title = "LULESH: kernel and application time (Table II)"
    if g.lulesh is None:
        return Section(
            "lulesh", title, missing(f"No LULESH table given (--lulesh FILE: {LULESH_SCHEMA}).")
        )
    return Section("lulesh", title, lulesh_table(g.lulesh))


def lulesh_table(t: LuleshTable) -> str:
    def ms(value: float | None) -> str:
        return "not measured" if value is None else f"{value:.3f}"

    rows = [
        [
            escape(r.what),
            ms(r.baseline_ms),
            ms(r.optimized_ms),
            "" if r.ratio is None else f"{r.ratio:.3f}x",
            escape(r.note),
        ]
        for r in t.rows
    ]
    about = ", ".join(
        x
        for x in (
            f"GPU: {t.gpu}" if t.gpu else "",
            f"size: {t.size}" if t.size != "" else "",
            t.note,
        )
        if x
    )
    head = f"<p>{escape(about)}</p>" if about else ""
    return head + table(
        ["time of", "baseline ms", "optimized ms", "speedup", "note"], rows, (1, 2, 3)
    )


class TraceLinks:
    """Anchors of the embedded traces, and relative links to trace files from the page."""

    def __init__(self, g: Gathered) -> None:
        self.g = g
        self.embedded: list[tuple[str, str, TraceView, str]] = []  # anchor, title, view, file

    def for_file(self, t: TraceFile) -> str:
        anchor = f"trace-{len(self.embedded) + 1}"
        href = os.path.relpath(t.path.resolve(), self.g.out.resolve().parent)
        self.embedded.append((anchor, t.label, view(t.label, t.trace), href))
        return anchor

    def for_object(self, title: str, data: object) -> str | None:
        """A trace kept in the store (the JSON object optimize wrote)."""
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
            return None
        trace = Trace(data.get("meta") or {}, [], data["steps"], data.get("outcome"))
        anchor = f"trace-{len(self.embedded) + 1}"
        self.embedded.append((anchor, title, view(title, trace), ""))
        return anchor


def _link(anchor: str, text: str) -> str:
    return f'<a href="#{anchor}">{escape(text)}</a>'


def _explanation(text: str) -> str:
    if not text:
        return "-"
    first, _, rest = text.strip().partition("\n")
    if not rest:
        return f"<pre>{escape(first)}</pre>"
    return f"<details><summary>{escape(first)}</summary><pre>{escape(rest)}</pre></details>"


def kernels(g: Gathered, links: TraceLinks) -> Section:
    title = "Kernels: the bench reports' results"
    if not g.benches:
        return Section("kernels", title, missing(NO_BENCH))
    rows = []
    for bench in g.benches:
        r = bench.report
        tools = g.tool_set(bench).label(TOOL_NAMES)
        model = r.model if tools == "all tools" else f"{r.model} ({tools})"
        by_kernel: dict[tuple[str, str], list[str]] = {}
        traces: dict[tuple[str, str], list[str]] = {}
        for app_run in r.runs:
            for k in app_run.kernels:
                if was_stopped(k):
                    continue
                value, failed = paper_speedup(k)
                cell = (
                    f'<span class="failed">0 ({escape(k.outcome)})</span>'
                    if failed
                    else f"{value:.2f}"
                )
                by_kernel.setdefault((k.app, k.region), []).append(cell)
                traces.setdefault((k.app, k.region), []).append(
                    _trace_cell(g, links, k.trace, k.run)
                )
        for row in r.rows:
            key = (row.app, row.region)
            rows.append(
                [
                    escape(model),
                    escape(row.app),
                    escape(row.region),
                    escape(category_of(row.region)),
                    f"{row.best_speedup:.3f}x",
                    ", ".join(by_kernel.get(key, [])) or "-",
                    escape(row.verdict),
                    _explanation(row.explanation),
                    "<br>".join(traces.get(key, [])) or "-",
                ]
            )
    headers = [
        "model",
        "app",
        "kernel",
        "category",
        "best",
        "runs (paper: failures 0)",
        "verdict",
        "explanation",
        "traces",
    ]
    return Section("kernels", title, table(headers, rows, numeric=(4,), wide=(7,)))


def _trace_cell(g: Gathered, links: TraceLinks, relative: str, run: int) -> str:
    if not relative:
        return f"run {run}: no trace"
    found = g.find_trace(relative)
    if found is None:
        where = "no --traces given" if g.traces is None else f"not under {g.traces_dir}"
        return f"run {run}: {escape(relative.rsplit('/', 1)[-1])} ({where})"
    return _link(links.for_file(found), f"run {run}")


def rewrites(g: Gathered, links: TraceLinks) -> Section:
    title = "Rewrites in the store"
    if g.rewrites is None:
        return Section("rewrites", title, missing("No store given (--store PATH)."))
    if not g.rewrites:
        return Section("rewrites", title, missing(f"The store {g.store} holds no rewrite."))
    rows = []
    for w in g.rewrites:
        speedup = w.statistics.get("speedup")
        anchor = links.for_object(f"rewrite {w.id}: {w.region_name}", w.trace)
        rows.append(
            [
                str(w.id),
                escape(f"{os.path.basename(w.file)}: {w.region_name}"),
                escape(w.state.value),
                escape(w.model or w.origin),
                f"{speedup:.3f}x" if isinstance(speedup, int | float) else "-",
                _explanation(w.explanation),
                _link(anchor, "trace") if anchor else "no trace kept",
            ]
        )
    headers = ["id", "kernel", "state", "model", "speedup", "explanation", "trace"]
    return Section("rewrites", title, table(headers, rows, numeric=(0, 4), wide=(5,)))


def embedded(g: Gathered, links: TraceLinks) -> Section:
    title = "Traces"
    if not links.embedded:
        why = (
            NO_TRACES
            if g.traces is None and g.rewrites is None
            else "No trace is linked from the tables."
        )
        return Section("traces", title, missing(why))
    parts = []
    for anchor, name, v, href in links.embedded:
        file = f' (<a href="{escape(href)}">file</a>)' if href else ""
        steps = "".join(
            f"<div><b>turn {s.turn}</b>: {escape(s.text) or '(no text)'}"
            + "".join(
                f'<div class="call">{escape(c.name)}({escape(c.arguments)}) &rarr; '
                f"{escape(c.result)}</div>"
                for c in s.calls
            )
            + "</div>"
            for s in v.steps
        )
        parts.append(
            f'<details class="trace" id="{anchor}"><summary>{escape(name)}{file}: '
            f"{escape(v.model)}, {len(v.steps)} steps shown; outcome {escape(v.outcome)}</summary>"
            f"{steps}</details>"
        )
    return Section("traces", title, "".join(parts))
