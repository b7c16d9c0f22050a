"""`nvcc-opt train baseline SET`: each problem's baseline measured on the GPUs (resumable)."""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import click

from nvcc_opt.bench.apps import SuiteError
from nvcc_opt.bench.suite import gpu_ids
from nvcc_opt_train import appcheck
from nvcc_opt_train.baseline import BaselineOptions, measure, spread
from nvcc_opt_train.problemset import ProblemSet, ProblemSetError


@click.command("baseline")
@click.argument("problem_set", metavar="SET", type=click.Path(path_type=Path))
@click.option(
    "--gpus",
    help="GPUs to run on, one problem each at once: 0,1 or all "
    "(default: all that nvidia-smi lists).",
)
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Runs per problem; the baseline is their median.",
)
@click.option("--jobs", type=click.IntRange(min=1), help="Builds at once (default: cores).")
@click.option(
    "--within",
    "within_s",
    type=click.FloatRange(min=0),
    help="Start no problem after this many seconds (a rerun continues).",
)
@click.option(
    "--cmake-arg",
    "cmake_args",
    multiple=True,
    help="Passed to each app's CMake configure (default: "
    "-DCMAKE_CUDA_ARCHITECTURES=native with a GPU, else 90).",
)
def baseline(
    problem_set: Path,
    gpus: str | None,
    runs: int,
    jobs: int | None,
    within_s: float | None,
    cmake_args: tuple[str, ...],
) -> None:
    """Measure each problem's baseline on the GPUs (resumable).

    Appends one row per problem of SET to SET/baselines.jsonl; problems already there are not
    measured again, so a rerun continues where a call stopped.
    """
    try:
        opened = ProblemSet.open(problem_set)
        listed = appcheck.gpus_here()
        chosen = gpu_ids(gpus) if gpus else listed
    except (ProblemSetError, SuiteError) as exc:
        raise click.ClickException(str(exc)) from exc
    if not chosen:
        raise click.ClickException(
            "no GPU here (nvidia-smi lists none): a baseline is a GPU measurement; run this on "
            "the GPU machine (or name --gpus to run the problems' run commands anyway)"
        )
    options = BaselineOptions(
        gpus=chosen,
        runs=runs,
        jobs=jobs or os.cpu_count() or 1,
        within_s=within_s,
        cmake_args=cmake_args or appcheck.default_cmake_args(bool(listed)),
    )
    try:
        done = measure(opened, options, click.echo)
    except KeyboardInterrupt:
        click.echo("interrupted: rerun the same command to measure the rest", err=True)
        raise SystemExit(130) from None
    rows = list(opened.baselines().values())
    failed = sum(1 for r in rows if not r.get("ok"))
    click.echo(
        f"measured now: {done.written} (before: {done.already}); rows: {len(rows)}, {failed} failed"
    )
    if not listed:
        click.echo("note: no GPU here (nvidia-smi lists none): these are not GPU timings")
    found = spread(rows)
    if found is not None:
        low, mid, high = found
        click.echo(f"baseline ms: min {low:.4g}, median {mid:.4g}, max {high:.4g}")
        each = [float(r["spread"]) for r in rows if r.get("ok") and r.get("spread") is not None]
        if each:
            click.echo(
                f"run-to-run spread (max-min)/median: median {statistics.median(each):.1%}, "
                f"max {max(each):.1%}"
            )
    if done.remaining:
        click.echo(
            f"remaining: {done.remaining} not started (--within {within_s or 0:g} s); run the same "
            "command again to continue"
        )
