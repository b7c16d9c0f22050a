"""`nvcc-opt init`: click wiring for the starting nvcc-opt.toml (the work is config.starter)."""

from __future__ import annotations

from pathlib import Path

import click

from nvcc_opt.config import ConfigError, starter


@click.command("init")
@click.option(
    "--build",
    "build",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Your CMake build tree (default: the one folder here or below with CMakeCache.txt).",
)
@click.option("--force", is_flag=True, help="Replace an existing nvcc-opt.toml.")
def init(build: Path | None, force: bool) -> None:
    """Write a commented nvcc-opt.toml here for the CMake build tree found."""
    try:
        target, notes = starter.write(Path.cwd(), build, force)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"wrote {target}")
    for note in notes:
        click.echo(f"  {note}")
