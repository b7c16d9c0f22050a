"""Click wiring only: each command parses options and calls the module that does the work."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from nvcc_opt import report, transfer
from nvcc_opt.bench_cli import bench
from nvcc_opt.cli_common import open_store as _open
from nvcc_opt.config_cli import init
from nvcc_opt.mcp_cli import mcp
from nvcc_opt.optimize_cli import optimize
from nvcc_opt.records import RewriteState
from nvcc_opt.recover_cli import recover
from nvcc_opt.review_cli import review
from nvcc_opt.store.api import StoreError
from nvcc_opt.tools.cli import tool_command
from nvcc_opt.verify_cli import verify

T = TypeVar("T")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nvcc-opt")
@click.option(
    "--store",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Store database (default: $NVCC_OPT_STORE, `store` in nvcc-opt.toml, "
    "~/.local/share/nvcc-opt/store.db).",
)
@click.pass_context
def cli(ctx: click.Context, store: Path | None) -> None:
    """Substitute reviewed kernel rewrites at compile time.

    As a compiler launcher: nvcc-opt nvcc ARGS... (CMAKE_CUDA_COMPILER_LAUNCHER=nvcc-opt).
    """
    ctx.ensure_object(dict)
    ctx.obj["store"] = store


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Every region the build has seen, how it was compiled, and its rewrites."""
    with _open(ctx) as store:
        found = _read(lambda: report.status(store))
        if as_json:
            click.echo(json.dumps({"store": str(store.path), **found}, indent=2))
        else:
            click.echo(f"store: {store.path}")
            click.echo(report.format_status(found), nl=False)


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def explain(ctx: click.Context, file: Path) -> None:
    """Why each region of FILE does or does not get a rewrite."""
    with _open(ctx) as store:
        for line in _read(lambda: report.explain(store, file)):
            click.echo(line)


@cli.command(name="import")
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
    with _open(ctx) as store:
        results = _read(lambda: transfer.import_file(store, file, root.resolve()))
    for result in results:
        if result.warning:
            click.echo(f"warning: {result.warning}", err=True)
        word = "imported" if result.created else "already present"
        rewrite = result.rewrite
        click.echo(f"#{rewrite.id} {word} ({rewrite.state.value}): {rewrite.region_name}")


@cli.command()
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
    with _open(ctx) as store:
        data = _read(lambda: transfer.export(store, chosen, root.resolve()))
    text = json.dumps(data, indent=2) + "\n"
    if output == "-":
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror}") from exc


def _read(work: Callable[[], T]) -> T:
    """Run a command's work; what a user can fix becomes a message and exit code 1."""
    try:
        return work()
    except (StoreError, transfer.ImportFileError) as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"{exc.filename}: {exc.strerror}") from exc


cli.add_command(review)
cli.add_command(tool_command)
cli.add_command(init)
cli.add_command(verify)
cli.add_command(optimize)
cli.add_command(mcp)
cli.add_command(bench)
cli.add_command(recover)
