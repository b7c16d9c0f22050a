"""`nvcc-opt recover`: rebuild the store's decisions from its journal, or rewrite its index."""

from __future__ import annotations

import click

from nvcc_opt import paths
from nvcc_opt.store import journal
from nvcc_opt.store.errors import StoreError


@click.command()
@click.option(
    "--index",
    "index_only",
    is_flag=True,
    help="Only rewrite the accepted-files index from the store (when `explain` says it is stale).",
)
@click.option(
    "--force", is_flag=True, help="Drop rewrites the store holds that its journal does not."
)
@click.pass_context
def recover(ctx: click.Context, index_only: bool, force: bool) -> None:
    """Rebuild the store's rewrites, decisions and verifications from its journal.

    Every rewrite, decision and verification is also appended to the journal beside the store
    (STORE.journal.jsonl). When a damaged store was moved aside, this brings the decisions back;
    the next build recompiles what they change.
    """
    from nvcc_opt.store import recover as recovery

    try:
        db = str(ctx.find_root().obj["store"] or paths.store_path())
        if index_only:
            files = recovery.rewrite_index(db)
            click.echo(f"{paths.accepted_index(db)}: {len(files)} files with accepted rewrites")
            return
        done = recovery.rebuild(db, force=force)
    except (StoreError, ValueError) as exc:  # ValueError: a broken nvcc-opt.toml
        raise click.ClickException(str(exc)) from exc
    if done.moved:
        click.echo(f"warning: {done.moved}", err=True)
    for line in done.skipped:
        click.echo(f"warning: {line}", err=True)
    click.echo(
        f"{db}: recovered {done.rewrites} rewrites ({done.accepted} accepted)"
        f" from {journal.path(db)}"
    )
