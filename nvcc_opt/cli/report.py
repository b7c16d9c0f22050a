"""`nvcc-opt status` and `nvcc-opt explain`: click wiring for the read-only reports (report.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from nvcc_opt import report
from nvcc_opt.cli.common import open_for_reading, user_errors


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Every region the build has seen, how it was compiled, and its rewrites."""
    with open_for_reading(ctx) as store:
        found = user_errors(lambda: report.status(store))
        if as_json:
            click.echo(json.dumps({"store": str(store.path), **found}, indent=2))
        else:
            click.echo(f"store: {store.path}")
            click.echo(report.format_status(found), nl=False)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def explain(ctx: click.Context, file: Path) -> None:
    """Why each region of FILE does or does not get a rewrite."""
    with open_for_reading(ctx) as store:
        for line in user_errors(lambda: report.explain(store, file)):
            click.echo(line)
