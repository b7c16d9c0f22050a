"""`nvcc-opt review`: interactive, or scripted with --list/--accept/--reject/--revoke."""

from __future__ import annotations

import json

import click

from nvcc_opt import review as decisions
from nvcc_opt.cli_common import open_store
from nvcc_opt.records import Rewrite, RewriteState
from nvcc_opt.store.api import Store, StoreError

PROMPT = {
    RewriteState.PROPOSED: ("[a]ccept, [r]eject, [s]kip, [q]uit", {"a": "accept", "r": "reject"}),
    RewriteState.ACCEPTED: ("re[v]oke, [s]kip, [q]uit", {"v": "revoke"}),
}


@click.command()
@click.option("--list", "list_", is_flag=True, help="List rewrites and their states.")
@click.option("--json", "as_json", is_flag=True, help="With --list: machine-readable.")
@click.option("--all", "all_", is_flag=True, help="Include rejected and revoked rewrites.")
@click.option("--accept", "accept", type=int, multiple=True, metavar="ID")
@click.option("--reject", "reject", type=int, multiple=True, metavar="ID")
@click.option("--revoke", "revoke", type=int, multiple=True, metavar="ID")
@click.option("--reason", default="", help="Why: kept with the decision.")
@click.pass_context
def review(
    ctx: click.Context,
    list_: bool,
    as_json: bool,
    all_: bool,
    accept: tuple[int, ...],
    reject: tuple[int, ...],
    revoke: tuple[int, ...],
    reason: str,
) -> None:
    """Accept, reject or revoke rewrites; without options, step through them interactively.

    Accepting or revoking touches the region's stamp: the next build recompiles exactly the
    translation units that hold it.
    """
    with open_store(ctx) as store:
        actions = [("accept", i) for i in accept] + [("reject", i) for i in reject]
        actions += [("revoke", i) for i in revoke]
        if actions:
            for action, rewrite_id in actions:
                _decide(store, rewrite_id, action, reason)
        elif list_:
            _list(store, as_json, all_)
        else:
            _interactive(store, all_)


def _shown(store: Store, all_: bool) -> list[Rewrite]:
    if all_:
        return store.rewrites()
    return store.rewrites(states=[RewriteState.PROPOSED, RewriteState.ACCEPTED])


def _list(store: Store, as_json: bool, all_: bool) -> None:
    rewrites = _shown(store, all_)
    if as_json:
        click.echo(json.dumps([decisions.summary(r) for r in rewrites], indent=2))
        return
    if not rewrites:
        click.echo("no rewrites")
    for r in rewrites:
        flags = f" [{' '.join(r.compile_args)}]" if r.compile_args else ""
        suspect = " SUSPECT" if r.suspect else ""
        click.echo(f"#{r.id} {r.state.value:<8} {r.file} {r.region_name}{flags}{suspect}")


def _decide(store: Store, rewrite_id: int, action: str, reason: str) -> None:
    try:
        rewrite = decisions.decide(store, rewrite_id, action, reason)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"#{rewrite.id} {rewrite.state.value}: {rewrite.file} {rewrite.region_name}")


def _interactive(store: Store, all_: bool) -> None:
    rewrites = [r for r in _shown(store, all_) if r.state in PROMPT]
    if not rewrites:
        click.echo("nothing to review")
        return
    for rewrite in rewrites:
        click.echo(decisions.describe(rewrite))
        question, keys = PROMPT[rewrite.state]
        choice = click.prompt(question, type=click.Choice([*keys, "s", "q"]), default="s")
        if choice == "q":
            return
        if choice in keys:
            reason = click.prompt("reason", default="", show_default=False)
            _decide(store, rewrite.id, keys[choice], reason)
