"""Read what the report is given and write the page (the only I/O of the package besides
inputs.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from html import escape
from pathlib import Path

from nvcc_opt.html_report import figure_sections, figures, table_sections
from nvcc_opt.html_report.gathered import Gathered
from nvcc_opt.html_report.grpo_log import load_grpo
from nvcc_opt.html_report.inputs import load_bench, load_store, load_traces
from nvcc_opt.html_report.lulesh import load_lulesh
from nvcc_opt.html_report.page import render

TITLE = "nvcc-opt report"


def gather(
    out: Path,
    benches: Sequence[Path] = (),
    traces: Path | None = None,
    store: Path | None = None,
    lulesh: Path | None = None,
    grpo: Path | None = None,
) -> Gathered:
    """Every input read; InputError (one line naming the file) at the first bad one."""
    return Gathered(
        out=out,
        benches=[load_bench(p) for p in benches],
        traces=load_traces(traces) if traces is not None else None,
        traces_dir=traces,
        rewrites=load_store(store) if store is not None else None,
        store=store,
        lulesh=load_lulesh(lulesh) if lulesh is not None else None,
        lulesh_path=lulesh,
        grpo=load_grpo(grpo) if grpo is not None else None,
        grpo_path=grpo,
    )


def html(g: Gathered) -> str:
    figures.require()
    links = table_sections.TraceLinks(g)
    sections = [
        figure_sections.fig1(g),
        figure_sections.fig2(g),
        figure_sections.fig3(g),
        figure_sections.fig4(g),
        figure_sections.grpo(g),
        table_sections.lulesh(g),
        table_sections.kernels(g, links),
        table_sections.rewrites(g, links),
    ]
    sections.append(table_sections.embedded(g, links))
    given = [
        f"bench report {b.path} ({b.report.model}, {len(b.report.rows)} kernels)" for b in g.benches
    ]
    if g.traces is not None:
        given.append(f"{len(g.traces)} traces under {g.traces_dir}")
    if g.store is not None:
        given.append(f"store {g.store} ({len(g.rewrites or [])} rewrites)")
    if g.lulesh_path is not None:
        given.append(f"LULESH table {g.lulesh_path}")
    if g.grpo_path is not None:
        given.append(f"GRPO step log {g.grpo_path} ({len(g.grpo or [])} steps)")
    items = "".join(f"<li>{escape(s)}</li>" for s in given) or "<li>nothing</li>"
    intro = f"<p>Written {escape(time.strftime('%Y-%m-%d %H:%M %Z'))} from:</p><ul>{items}</ul>"
    return render(TITLE, intro, sections)


def write(g: Gathered, out: Path) -> None:
    text = html(g)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
