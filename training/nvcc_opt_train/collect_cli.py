"""`nvcc-opt train collect`: click wiring only (collect.py does the work)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nvcc_opt_train.collect import CollectError, render
from nvcc_opt_train.collect import collect as run_collect
from nvcc_opt_train.problemset import ProblemSetError
from nvcc_opt_train.runs import RunsError
from nvcc_opt_train.runs_cli import build_options, run_options, say_progress


@click.command("collect")
@click.argument("problems", type=click.Path(path_type=Path))
@run_options
@click.option("--split", default="train", show_default=True,
              help="Only train: collect refuses any other split.")  # fmt: skip
def collect(problems: Path, split: str, **given: Any) -> None:
    """Run the teacher --model over PROBLEMS' train split (random 4-6 tools per run,
    benchmark_code always) and keep, as OUT/sft.jsonl, the runs whose final answer the
    independent verification found correct and faster (never the model's own claims).
    OUT/collect.json: runs, kept, dropped by reason, tool use."""
    options = build_options(**given)
    try:
        summary, progress = run_collect(
            problems, options, split, echo=lambda line: click.echo(line, err=True)
        )
    except (ProblemSetError, CollectError, RunsError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(render(summary))
    say_progress(progress)
