"""`nvcc-opt export`: click wiring for rewrites written as JSON (transfer.py); `import` is
cli/transfer.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from nvcc_opt import transfer
from nvcc_opt.cli.common import open_store, user_errors
from nvcc_opt.records import RewriteState


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
