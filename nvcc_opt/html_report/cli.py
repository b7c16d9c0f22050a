"""`nvcc-opt report`: click wiring for the HTML report (build.py)."""

from __future__ import annotations

from pathlib import Path

import click

from nvcc_opt.html_report.build import gather, write
from nvcc_opt.html_report.figures import PlottingMissing
from nvcc_opt.html_report.inputs import InputError


@click.command("report")
@click.option(
    "--bench",
    "benches",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A bench report (JSON of `nvcc-opt bench suite` or `bench merge`); repeatable.",
)
@click.option(
    "--traces",
    type=click.Path(path_type=Path),
    default=None,
    help="A folder of trace files (searched recursively), e.g. traces.tar.gz unpacked.",
)
@click.option(
    "--store",
    "store",
    type=click.Path(path_type=Path),
    default=None,
    help="A store whose rewrites (explanations, traces) the report lists.",
)
@click.option(
    "--lulesh",
    type=click.Path(path_type=Path),
    default=None,
    help="LULESH table JSON, as `python -m integration.lulesh table` writes it (schema "
    '"nvcc-opt-lulesh-table/1"), or {"rows": [{"what": "kernel"|"application", '
    '"baseline_ms": .., "optimized_ms": .., "speedup": ..}], "gpu": .., "size": ..}.',
)
@click.option(
    "--grpo",
    type=click.Path(path_type=Path),
    default=None,
    help="A GRPO step log (OUT/grpo_steps.jsonl of `nvcc-opt train grpo`): the reward curve.",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="The HTML file to write.",
)
def report(
    benches: tuple[Path, ...],
    traces: Path | None,
    store: Path | None,
    lulesh: Path | None,
    grpo: Path | None,
    out: Path,
) -> None:
    """Write one self-contained HTML report of bench reports, traces, a store and LULESH.

    The paper's figures (speedups per category and model, benchmark_code along each trace, tool
    ablation, tool use), the LULESH table, and per kernel the rewrite's explanation with its
    trace; a piece not given is a section saying so. The page opens offline (no external
    files) and checks itself: <body data-report-ok="true"> when every figure has data."""
    try:
        gathered = gather(out, benches, traces, store, lulesh, grpo)
        write(gathered, out)
    except (InputError, PlottingMissing) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {out}")
