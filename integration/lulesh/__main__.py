"""`python -m integration.lulesh`: check, tag, untag, prepare, table (click wiring only)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from integration.lulesh import checkout, tagging
from integration.lulesh.pipeline import Options, prepare, run_table
from integration.lulesh.project import Problem, StepError
from integration.lulesh.table import markdown
from nvcc_opt.workspace.runner import ProcessRunner

_LULESH = click.argument("lulesh", type=click.Path(path_type=Path))


def _found(path: Path) -> checkout.Checkout:
    try:
        return checkout.find(path)
    except checkout.CheckoutError as exc:
        raise click.ClickException(str(exc)) from None


F = TypeVar("F", bound=Callable[..., Any])


def _launcher(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    found = shutil.which(value or "nvcc-opt")
    if found is None:
        raise click.BadParameter(f"{value or 'nvcc-opt'} is not an executable on PATH")
    return os.path.abspath(found)


def _problem(func: F) -> F:
    for option in reversed([
        click.option("--work", type=click.Path(path_type=Path), default=Path("lulesh-nvcc-opt"),
                     show_default=True, help="Work folder (sources copy, build, store)."),
        click.option("--size", type=int, default=45, show_default=True,
                     help="LULESH -s (the paper: 120)."),
        click.option("--iters", type=int, default=-1, show_default=True,
                     help="LULESH -i; -1 runs to its stop time."),
        click.option("--timeout", type=float, default=600.0, show_default=True,
                     help="Seconds before a run is stopped (a failure)."),
        click.option("--launcher", default=None, callback=_launcher,
                     help="The nvcc-opt command, the CUDA compiler launcher [default: nvcc-opt"
                     " on PATH, made absolute]."),
        click.option("--arch", default="90", show_default=True, help="CUDA architectures."),
        click.option("--gpu", default="0", show_default=True,
                     help="CUDA_VISIBLE_DEVICES of every run (one GPU for all of them)."),
    ]):  # fmt: skip
        func = option(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """LULESH 2.0.2-dev cuda/src with nvcc-opt (the paper's Table II)."""


@main.command("check")
@_LULESH
def check_cmd(lulesh: Path) -> None:
    """Say whether LULESH is a checkout this integration works on."""
    found = _found(lulesh)
    click.echo(f"{found.src}: LULESH 2.0.2-dev CUDA layout, commit {found.commit or 'unknown'}")


@main.command("tag")
@_LULESH
def tag_cmd(lulesh: Path) -> None:
    """Tag the kernel in the checkout itself (two marked lines; `untag` removes them)."""
    _edit(_found(lulesh).kernel_file, tagging.tag)


@main.command("untag")
@_LULESH
def untag_cmd(lulesh: Path) -> None:
    """Remove the tag `tag` added to the checkout."""
    _edit(_found(lulesh).kernel_file, tagging.untag)


def _edit(path: Path, change: Callable[[str], str]) -> None:
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    try:
        new = change(text)
    except tagging.TagError as exc:
        raise click.ClickException(f"{path}: {exc}") from None
    if new == text:
        click.echo(f"{path}: unchanged")
        return
    path.write_bytes(new.encode("utf-8", errors="surrogateescape"))
    click.echo(f"{path}: {'tagged' if tagging.is_tagged(new) else 'untagged'}")


@main.command("prepare")
@_LULESH
@_problem
def prepare_cmd(lulesh: Path, work: Path, size: int, iters: int, timeout: float,
                launcher: str, arch: str, gpu: str) -> None:  # fmt: skip
    """Copy and tag cuda/src into WORK, write WORK/nvcc-opt.toml, configure and build."""
    problem = Problem(size, iters, timeout, gpu)
    opts = Options(lulesh, work.resolve(), "", problem, launcher=launcher, arch=arch)
    try:
        _, binary = prepare(ProcessRunner(), opts)
    except (checkout.CheckoutError, StepError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"built {binary}; nvcc-opt project: {opts.work / 'nvcc-opt.toml'}")


@main.command("table")
@_LULESH
@_problem
@click.option("--model", required=True, help="nvcc-opt optimize --model SPEC (e.g. search).")
@click.option("--pairs", type=int, default=5, show_default=True, help="Interleaved rounds.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="OUT.json and OUT.md [default: WORK/lulesh-table].",
)
@click.option(
    "--optimize-arg",
    "optimize_args",
    multiple=True,
    help="Passed to nvcc-opt optimize (repeat), e.g. --optimize-arg=--turns=20.",
)
@click.option(
    "--force-accept",
    is_flag=True,
    help="nvcc-opt review --accept --force: accept what review would refuse (runs not"
    " contained, say); recorded with the decision.",
)
def table_cmd(lulesh: Path, work: Path, size: int, iters: int, timeout: float, launcher: str,
              arch: str, gpu: str, model: str, pairs: int, out: Path | None,
              optimize_args: tuple[str, ...], force_accept: bool) -> None:  # fmt: skip
    """Build, baseline, optimize, accept, rebuild; kernel and application time, interleaved."""
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu  # our runs; nvcc-opt's from [gpu] devices
    opts = Options(lulesh, work.resolve(), model, Problem(size, iters, timeout, gpu), pairs, out,
                   launcher, arch, optimize_args, force_accept)  # fmt: skip
    try:
        result = run_table(ProcessRunner(), opts, lambda m: click.echo(m, err=True))
    except (checkout.CheckoutError, StepError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(markdown(result))
    click.echo(json.dumps({"json": str((out or opts.work / "lulesh-table").with_suffix(".json"))}))


if __name__ == "__main__":
    sys.exit(main())
