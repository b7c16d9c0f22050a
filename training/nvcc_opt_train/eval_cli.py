"""`nvcc-opt train eval`: click wiring only (evaluate.py does the work)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from nvcc_opt.tools.catalog import ALL_TOOL_NAMES
from nvcc_opt_train.evaluate import (
    EvalError,
    read_evaluation,
    render_comparison,
    render_table,
    run_eval,
)
from nvcc_opt_train.problemset import ProblemSetError
from nvcc_opt_train.runs import RunsError
from nvcc_opt_train.runs_cli import build_options, run_options, say_progress


@click.command("eval")
@click.argument("folders", nargs=-1, type=click.Path(path_type=Path))
@click.option("--problems", type=click.Path(path_type=Path), default=None,
              help="The problem set (its eval split by default).")  # fmt: skip
@click.option(
    "--split",
    type=click.Choice(["eval", "train"]),
    default="eval",
    show_default=True,
    help="train only when asked for by name: its numbers are then not held out.",
)
@click.option("--tools", default=None,
              help=f"Comma-separated tools offered (optimize's --tools; default the paper's six; "
                   f"of {','.join(ALL_TOOL_NAMES)}).")  # fmt: skip
@click.option(
    "--compare",
    is_flag=True,
    help="One Markdown table of the evaluations in FOLDERS (their eval.json).",
)
@run_options
def eval_command(
    folders: tuple[Path, ...],
    problems: Path | None,
    split: str,
    tools: str | None,
    compare: bool,
    **given: Any,
) -> None:
    """Run --model over the eval split of --problems (N runs each) and write OUT/eval.json and
    OUT/eval.md: well-formed tool-call turns, valid final answers, verified improvements >= 5%,
    geometric-mean speedup (failures 1.0) and mean speedup (failures 0, the paper's), tool calls
    per trace. With --compare DIR..., one table of earlier evaluations, a row per model."""
    if compare:
        if not folders:
            raise click.UsageError("--compare needs the evaluation folders to compare")
        try:
            click.echo(render_comparison([read_evaluation(f) for f in folders]), nl=False)
        except EvalError as exc:
            raise click.ClickException(str(exc)) from exc
        return
    if folders:
        raise click.UsageError(
            f"unexpected argument {str(folders[0])!r} (folders go with --compare)"
        )
    if problems is None:
        raise click.UsageError("Missing option '--problems'.")
    options = build_options(**given)
    if tools:
        options = replace(options, optimize_args=("--tools", tools))
    try:
        evaluation, progress = run_eval(
            problems, options, split, echo=lambda line: click.echo(line, err=True)
        )
    except (ProblemSetError, EvalError, RunsError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(render_table([evaluation]), nl=False)
    say_progress(progress)
