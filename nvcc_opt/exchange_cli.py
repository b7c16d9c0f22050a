"""`nvcc-opt import` and `nvcc-opt export`: click wiring for rewrites exchanged as JSON
(transfer.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from nvcc_opt import transfer
from nvcc_opt.cli_common import open_store, user_errors
from nvcc_opt.records import RewriteState


@click.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    help="Folder that relative `file` entries are relative to (default: here).",
)
@click.pass_context
def import_(ctx: click.Context, file: Path, root: Path) -> None:
    """Add the rewrites of FILE (JSON, as `export` writes) as proposed.

    Every entry is checked first: if any is bad, nothing is stored.
    """
    with open_store(ctx) as store:
        results = user_errors(
            lambda: transfer.import_file(store, file, root.resolve()), transfer.ImportFileError
        )
    for result in results:
        if result.warning:
            click.echo(f"warning: {result.warning}", err=True)
        word = "imported" if result.created else "already present"
        rewrite = result.rewrite
        click.echo(f"#{rewrite.id} {word} ({rewrite.state.value}): {rewrite.region_name}")


@click.command()
@click.argument("output", type=click.Path(dir_okay=False, allow_dash=True), default="-")
@click.option(
    "--state",
    "states",
    type=click.Choice([s.value for s in RewriteState]),
    multiple=True,
    help="States to export (repeatable; default: accepted).",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    help="Write files below this folder relative to it (default: here).",
)
@click.pass_context
def export(ctx: click.Context, output: str, states: tuple[str, ...], root: Path) -> None:
    """Write rewrites as JSON that `import` reads (to OUTPUT, default stdout)."""
    chosen = [RewriteState(s) for s in states] or [RewriteState.ACCEPTED]
    with open_store(ctx) as store:
        data = user_errors(lambda: transfer.export(store, chosen, root.resolve()))
    text = json.dumps(data, indent=2) + "\n"
    if output == "-":
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror}") from exc
