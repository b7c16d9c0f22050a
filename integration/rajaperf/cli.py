"""`python -m integration.rajaperf COMMAND`: prepare, status, unprepare, protocol (click wiring)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from integration.rajaperf import build as building
from integration.rajaperf.kernels import KERNELS
from integration.rajaperf.ledger import Ledger
from integration.rajaperf.prepare import prepare, tagged_kernels, unprepare
from integration.rajaperf.protocol import Options, ProtocolError, run_protocol
from integration.rajaperf.version import VersionError
from nvcc_opt.bench.apps import SuiteError
from nvcc_opt.bench.render import write_report
from nvcc_opt.bench.suite import gpu_ids

Checkout = click.Path(exists=True, file_okay=False, path_type=Path)


@click.group()
def main() -> None:
    """Run the paper's RAJAPerf evaluation on your own RAJAPerf checkout."""


@main.command("prepare")
@click.argument("checkout", type=Checkout)
@click.option(
    "--build",
    "build_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Build tree [default: CHECKOUT/build-nvcc-opt].",
)
@click.option(
    "--configure/--no-configure",
    default=True,
    show_default=True,
    help="Run CMake (CUDA, sm_90, Ninja, nvcc-opt as launcher).",
)
@click.option(
    "--build-all/--no-build-all",
    default=True,
    show_default=True,
    help="Compile each tagged kernel, then build raja-perf.exe.",
)
@click.option(
    "--tuning",
    multiple=True,
    metavar="KERNEL=NAME",
    help="Time another Base_CUDA tuning of KERNEL.",
)
@click.option("--launcher", default=None, help="The launcher [default: this nvcc-opt].")
@click.option("--nvcc", default="nvcc", show_default=True)
@click.option("--force", is_flag=True, help="Prepare a version this integration does not know.")
def prepare_cmd(
    checkout: Path, build_dir: Path | None, configure: bool, build_all: bool,
    tuning: tuple[str, ...], launcher: str | None, nvcc: str, force: bool,
) -> None:  # fmt: skip
    """Fix CUDA 13 incompatibilities, tag the Base_CUDA kernels, write each kernel's
    nvcc-opt.toml, configure and build. Every change is recorded; `unprepare` undoes it."""
    build = build_dir or checkout / "build-nvcc-opt"
    tunings = {}
    for item in tuning:
        name, eq, value = item.partition("=")
        if not eq or not value:
            raise click.BadParameter(f"{item!r}: write KERNEL=NAME", param_hint="--tuning")
        tunings[name] = value
    try:
        done = prepare(checkout, build, force=force, tunings=tunings)
    except (VersionError, RuntimeError) as exc:
        raise click.ClickException(str(exc)) from None
    for line in done.lines():
        click.echo(line)
    if not configure:
        return
    if launcher is None:
        from nvcc_opt.config.launcher import script_path

        launcher = script_path() or "nvcc-opt"
    try:
        building.configure(checkout.resolve(), build.resolve(), launcher, nvcc)
        click.echo(f"configured {build}")
        if build_all:
            kernels = tagged_kernels(checkout)
            failed = building.check_kernels(
                checkout.resolve(), build.resolve(), kernels, click.echo
            )
            click.echo(f"{len(kernels) - len(failed)} of {len(kernels)} tagged kernels build")
            if kernels and len(failed) == len(kernels):
                raise building.BuildError(
                    "no tagged kernel built: the build tree, not the kernels, is the likely "
                    "cause (the first: " + next(iter(failed.values())) + ")"
                )
            building.build_all(build.resolve())
            click.echo(f"built {build}/bin/raja-perf.exe")
    except building.BuildError as exc:
        why = f"{exc} (the checkout stays prepared; unprepare undoes it)"
        raise click.ClickException(why) from None


@main.command("status")
@click.argument("checkout", type=Checkout)
def status_cmd(checkout: Path) -> None:
    """What prepare changed in CHECKOUT (each file, and the fix or tag that changed it)."""
    ledger = Ledger(checkout.resolve())
    if not ledger.changes:
        click.echo(f"{checkout}: not prepared")
        return
    for change in ledger.changes:
        click.echo(f"{change.kind:4} {change.name}: {change.file}")
    tagged = {k.full_name for k in tagged_kernels(checkout)}
    missing = [k.full_name for k in KERNELS if k.full_name not in tagged]
    click.echo(f"{len(tagged)} of {len(KERNELS)} kernels tagged; not: {', '.join(missing)}")


@main.command("unprepare")
@click.argument("checkout", type=Checkout)
def unprepare_cmd(checkout: Path) -> None:
    """Undo everything prepare changed (files edited since are kept and named)."""
    try:
        kept = unprepare(checkout)
    except VersionError as exc:
        raise click.ClickException(str(exc)) from None
    for line in kept:
        click.echo(line, err=True)
    click.echo(f"{checkout}: {'partly ' if kept else ''}restored")
    if kept:
        sys.exit(1)


@main.command("protocol")
@click.argument("checkout", type=Checkout)
@click.option("--model", "spec", required=True, help="Passed to nvcc-opt optimize --model.")
@click.option("--runs", type=click.IntRange(min=1), default=5, show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("rajaperf-results"),
    show_default=True,
)
@click.option("--only", multiple=True, metavar="KERNEL", help="Only these kernels.")
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=3600.0,
    show_default=True,
    help="Seconds per optimize call; past it the run is a failure.",
)
@click.option(
    "--optimize-arg",
    "optimize_args",
    multiple=True,
    help="Added to every optimize call (e.g. --time=1800).",
)
@click.option("--no-tools", is_flag=True, help="The paper's baseline: one answer, no tools.")
@click.option(
    "--gpus",
    default=None,
    help="Comma-separated GPUs (CUDA_VISIBLE_DEVICES values) or `all`: one kernel run per GPU"
    " at once, each optimize given its GPU [default: one run at a time].",
)
def protocol_cmd(
    checkout: Path, spec: str, runs: int, out: Path, only: tuple[str, ...], timeout_s: float,
    optimize_args: tuple[str, ...], no_tools: bool, gpus: str | None,
) -> None:  # fmt: skip
    """Optimize every tagged kernel RUNS times; resumable; writes a bench report."""
    try:
        chosen = gpu_ids(gpus)
    except SuiteError as exc:
        raise click.ClickException(str(exc)) from None
    options = Options(checkout.resolve(), spec, out.resolve(), runs, only, timeout_s,
                      optimize_args, no_tools, gpus=chosen)  # fmt: skip
    try:
        report = run_protocol(options, click.echo)
    except ProtocolError as exc:
        raise click.ClickException(str(exc)) from None
    json_path, md_path = write_report(report, options.out)
    click.echo(f"report: {json_path} {md_path}")
