"""`nvcc-opt import`: click wiring for `transfer.import_bundle`."""

from __future__ import annotations

from pathlib import Path

import click

from nvcc_opt import transfer
from nvcc_opt.cli.common import open_store
from nvcc_opt.store.api import StoreError


@click.command(name="import")
# a plain path: the reader says in one line what is wrong with it (missing, a directory, ...)
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    help="Folder that relative `file` entries are relative to (default: here).",
)
@click.option(
    "--reopen",
    is_flag=True,
    help="Propose again the rewrites of FILE that are here as revoked or rejected; their "
    "history is kept, with a decision that says they were imported again from FILE.",
)
@click.pass_context
def import_command(ctx: click.Context, file: Path, root: Path, reopen: bool) -> None:
    """Add the rewrites of FILE (JSON, as `export` writes) as proposed.

    Every entry is checked first: if any is bad, nothing is stored. A rewrite that is here
    already as revoked or rejected is an error, unless --reopen.
    """
    try:
        parsed = transfer.parse_bundle(file)  # before the store opens: a bad file changes nothing
        with open_store(ctx) as store:
            results = transfer.import_bundle(store, parsed, root.resolve(), reopen=reopen)
    except (StoreError, transfer.ImportFileError) as exc:
        raise click.ClickException(str(exc)) from exc
    for result in results:
        if result.warning:
            click.echo(f"warning: {result.warning}", err=True)
        rewrite = result.rewrite
        click.echo(f"#{rewrite.id} {result.outcome} ({rewrite.state.value}): {rewrite.region_name}")
