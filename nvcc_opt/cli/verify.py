"""`nvcc-opt verify [ID...]`: the full, independent verification of stored rewrites, here."""

from __future__ import annotations

from pathlib import Path

import click

from nvcc_opt import report
from nvcc_opt.cli.common import open_store
from nvcc_opt.config import ConfigError, find_root, load
from nvcc_opt.records import Rewrite, RewriteState
from nvcc_opt.store.api import Store, StoreError
from nvcc_opt.submit import TraceAnswerError, answer_of_trace, verify_and_store
from nvcc_opt.toolbox.schema import ToolError
from nvcc_opt.tools.catalog import launcher_path
from nvcc_opt.tools.region import Region, RegionNotFound
from nvcc_opt.verify import final
from nvcc_opt.workspace.runner import ProcessRunner
from nvcc_opt.workspace.tree import TreeError


def needs_verification(store: Store, rewrite: Rewrite) -> bool:
    """Never verified here, or verified in a context the build no longer uses."""
    return rewrite.last_verification is None or bool(
        report.changed_since_verification(store, rewrite)
    )


@click.command("verify")
@click.argument("ids", type=int, nargs=-1)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Project root holding nvcc-opt.toml (default: found above each rewrite's file).",
)
@click.option(
    "--answer",
    "traces",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="TRACE",
    help="Verify the final answer of an `optimize` trace instead (a run whose own final "
    "verification did not finish), storing it as proposed only if it passes. Repeatable.",
)
@click.pass_context
def verify(
    ctx: click.Context, ids: tuple[int, ...], root: Path | None, traces: tuple[Path, ...]
) -> None:
    """Verify rewrites on this machine and record the verdicts (default: every proposed or
    accepted rewrite never verified here, or whose compiler, flags, file or targets changed).

    Fresh private builds, the run script's full checks, more paired runs than exploring, fresh
    inputs, compute-sanitizer where installed. `review` shows the verdict and accepts only a
    passing one without --force."""
    runner = ProcessRunner()
    if traces:
        if ids:
            raise click.UsageError("give rewrite IDS or --answer TRACE, not both")
        with open_store(ctx) as store:
            unverified = [t for t in traces if not _verify_answer(store, t, root, runner)]
        if unverified:
            ctx.exit(1)
        return
    with open_store(ctx) as store:
        try:
            chosen = [store.rewrite(i) for i in ids] or [
                r
                for r in store.rewrites(states=[RewriteState.PROPOSED, RewriteState.ACCEPTED])
                if needs_verification(store, r)
            ]
        except StoreError as exc:
            raise click.ClickException(str(exc)) from exc
        if not chosen:
            click.echo("nothing to verify")
        where = final.machine(runner) if chosen else ""
        failed = False
        for rewrite in chosen:
            failed |= not _verify_one(store, rewrite, root, runner, where)
    if failed:
        ctx.exit(1)


def _verify_one(
    store: Store, rewrite: Rewrite, root: Path | None, runner: ProcessRunner, where: str
) -> bool:
    click.echo(f"#{rewrite.id} {rewrite.file} {rewrite.region_name}: verifying ...")
    try:
        project = root or find_root(Path(rewrite.file).parent) or Path.cwd()
        config = load(project)
        region = Region.find(Path(rewrite.file), rewrite.region_hash)
        verdict, notes = final.verify_code(
            config,
            region,
            rewrite.code,
            list(rewrite.compile_args),
            runner=runner,
            launcher=launcher_path(),
        )
    except (ConfigError, RegionNotFound, TreeError, ToolError, OSError) as exc:
        click.echo(f"#{rewrite.id}: cannot verify: {exc}", err=True)
        return False
    last = report.latest_compile_of(store, rewrite)
    context = last.context if last else None
    store.add_verification(final.record(rewrite.id, verdict, context, where, notes))
    click.echo(f"#{rewrite.id}: {verdict.status}")
    for line in (*verdict.reasons, *notes):
        click.echo(f"  {line}")
    return verdict.status in final.PASSED


def _verify_answer(store: Store, trace: Path, root: Path | None, runner: ProcessRunner) -> bool:
    """The final verification of one trace's final answer; stored as proposed if it passes."""
    try:
        region, answer = answer_of_trace(trace)
    except TraceAnswerError as exc:
        click.echo(f"cannot verify: {exc}", err=True)
        return False
    where = f"{region.file}:{region.span.start_line}: {region.name}"
    click.echo(f"{where}: verifying the final answer of {trace} ...")
    try:
        config = load(root or find_root(region.file.parent) or Path.cwd())
        submitted = verify_and_store(
            store, config, region, answer, runner=runner, launcher=launcher_path()
        )
    except (ConfigError, TreeError, ToolError, OSError) as exc:
        click.echo(f"{where}: cannot verify: {exc}", err=True)
        return False
    verdict = submitted.verdict
    if submitted.rewrite_id is not None:
        click.echo(
            f"{where}: {verdict.status}: proposed rewrite #{submitted.rewrite_id} (nvcc-opt review)"
        )
    else:
        click.echo(f"{where}: {verdict.status}: nothing stored")
    for line in (*verdict.reasons, *submitted.notes):
        click.echo(f"  {line}")
    return submitted.stored
