"""`nvcc-opt review`: interactive, or scripted with --list/--accept/--reject/--revoke."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from nvcc_opt import report
from nvcc_opt import review as decisions
from nvcc_opt.cli.common import open_for_reading, open_store
from nvcc_opt.records import Rewrite, RewriteState
from nvcc_opt.store.errors import StoreError

if TYPE_CHECKING:
    from nvcc_opt.store.api import Store
    from nvcc_opt.store.read import Reads

PROMPT = {
    RewriteState.PROPOSED: ("[a]ccept, [r]eject, [s]kip, [q]uit", {"a": "accept", "r": "reject"}),
    RewriteState.ACCEPTED: ("re[v]oke, [s]kip, [q]uit", {"v": "revoke"}),
}


@click.command()
@click.option("--list", "list_", is_flag=True, help="List rewrites and their states.")
@click.option("--json", "as_json", is_flag=True, help="List as JSON (implies --list).")
@click.option("--all", "all_", is_flag=True, help="Include rejected and revoked rewrites.")
@click.option("--accept", type=int, multiple=True, metavar="ID", help="Accept a proposed rewrite.")
@click.option("--reject", type=int, multiple=True, metavar="ID", help="Reject a proposed rewrite.")
@click.option("--revoke", type=int, multiple=True, metavar="ID", help="Revoke an accepted rewrite.")
@click.option("--reason", default="", help="Why: kept with each decision.")
@click.option(
    "--force",
    is_flag=True,
    help="Accept even what was never verified here, failed its last verification, passed it "
    "with runs not contained or not measured, or was verified in another context; recorded "
    "with the decision.",
)
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
    force: bool,
) -> None:
    """Accept, reject or revoke rewrites; without options, step through them interactively.

    Decisions given as options run in the order accepts, rejects, revokes, and stop at the first
    that is not allowed. Accepting needs a passing `nvcc-opt verify` in the build's current
    context whose runs were all contained and measured, or --force. Accepting or revoking
    touches the region's stamp: the next build recompiles exactly the translation units that
    hold it.
    """
    actions = [("accept", i) for i in accept] + [("reject", i) for i in reject]
    actions += [("revoke", i) for i in revoke]
    if (list_ or as_json) and not actions:  # only shows: no SQLAlchemy where the store is sound
        with open_for_reading(ctx) as reader:
            _list(reader, as_json, all_)
        return
    with open_store(ctx) as store:
        for action, rewrite_id in actions:
            _decide(store, rewrite_id, action, reason, force)
        if list_ or as_json:
            _list(store, as_json, all_)
        elif not actions:
            _interactive(store, all_, reason)


def _shown(store: Reads, all_: bool) -> list[Rewrite]:
    if all_:
        return store.rewrites()
    return store.rewrites(states=[RewriteState.PROPOSED, RewriteState.ACCEPTED])


def _line(r: Rewrite) -> str:
    flags = f" [{' '.join(r.compile_args)}]" if r.compile_args else ""
    suspect = " SUSPECT" if r.suspect else ""
    # the caveats' own words, upper-cased: UNCONTAINED, UNMEASURED
    marks = "".join(f" {c.split(':', 1)[0].upper()}" for c in decisions.caveats(r))
    return f"#{r.id} {r.state.value:<8} {r.file} {r.region_name}{flags}{suspect}{marks}"


def _list(store: Reads, as_json: bool, all_: bool) -> None:
    rewrites = _shown(store, all_)
    if as_json:
        click.echo(json.dumps([decisions.summary(r) for r in rewrites], indent=2))
        return
    if not rewrites:
        click.echo("no rewrites")
    for r in rewrites:
        click.echo(_line(r))


def _decide(store: Store, rewrite_id: int, action: str, reason: str, force: bool) -> None:
    """One decision; a refused one is a ClickException (exit code 1, its message)."""
    try:
        done = decisions.decide(store, rewrite_id, action, reason, force=force)
    except (StoreError, decisions.NeedsForce) as exc:
        raise click.ClickException(str(exc)) from exc
    rewrite = done.rewrite
    click.echo(f"#{rewrite.id} {rewrite.state.value}: {rewrite.file} {rewrite.region_name}")
    if done.warning:
        click.echo(f"warning: {done.warning}", err=True)


def _interactive(store: Store, all_: bool, reason: str) -> None:
    rewrites = [r for r in _shown(store, all_) if r.state in PROMPT]
    if not rewrites:
        click.echo("nothing to review")
        return
    for rewrite in rewrites:
        click.echo(_line(rewrite))
    for rewrite in rewrites:
        changed = report.changed_since_verification(store, rewrite)
        click.echo("\n" + decisions.describe(rewrite, changed), nl=False)
        question, keys = PROMPT[rewrite.state]
        choices = click.Choice([*keys, "s", "q"])
        choice = click.prompt(question, type=choices, default="s", show_choices=False)
        if choice == "q":
            return
        if choice in keys:
            why = click.prompt("reason", default=reason, show_default=False)
            problem = (
                decisions.acceptance_problem(store, rewrite) if keys[choice] == "accept" else ""
            )
            force = bool(problem) and click.confirm(f"{problem}. Accept anyway?", default=False)
            try:
                _decide(store, rewrite.id, keys[choice], why, force)
            except click.ClickException as exc:
                click.echo(f"error: {exc.message}", err=True)
