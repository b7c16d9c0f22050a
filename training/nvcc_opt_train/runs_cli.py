"""The command-line options `train collect` and `train eval` share (defined once), and how a
run over a problem set ends on the terminal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nvcc_opt.agent.backends import BACKENDS, SPEC_FORMS, split_spec
from nvcc_opt.bench.apps import SuiteError
from nvcc_opt.bench.options import Options
from nvcc_opt.bench.render import command_line
from nvcc_opt.bench.suite import gpu_ids
from nvcc_opt.tools.catalog import launcher_path
from nvcc_opt_train.model_spec import ModelSpecError, check_model
from nvcc_opt_train.runs import Progress

F = TypeVar("F", bound=Callable[..., Any])


def run_options(command: F) -> F:
    """The options of a run over a problem set, shared by collect and eval."""
    decorators = [
        click.option("--model", "spec", default=None,
                     help="search, openai:MODEL@URL, vllm:PATH, hf:PATH, smollm2"),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Output folder: runs.jsonl, traces/, work/ (a rerun continues it)."),
        click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Runs per problem."),
        click.option("--gpus", "gpus_spec", default=None, metavar="LIST",
                     help="One problem per GPU at once: 0,1,2,3 or all. Default: one at a time."),
        click.option("--time", "time_s", type=click.FloatRange(min=0, min_open=True),
                     default=None, help="Agent wall time per region, seconds (optimize's)."),
        click.option("--turns", type=click.IntRange(min=1), default=None,
                     help="Agent turns per region (optimize's --turns)."),
        click.option("--within", "within_s", type=click.FloatRange(min=0), default=None,
                     metavar="SECONDS",
                     help="Start no run later than this; the rest remain for the next call."),
        click.option("--cmake-arg", "cmake_args", multiple=True,
                     help="Added to every configure (e.g. -DCMAKE_CUDA_ARCHITECTURES=90)."),
        click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True),
                     default=None, help="Seconds per optimize call before it is stopped."),
    ]  # fmt: skip
    for decorate in reversed(decorators):
        command = decorate(command)
    return command


def build_options(
    spec: str | None,
    out: Path | None,
    runs: int,
    gpus_spec: str | None,
    time_s: float | None,
    turns: int | None,
    within_s: float | None,
    cmake_args: tuple[str, ...],
    timeout_s: float | None,
) -> Options:
    """the bench's Options from the shared options; click errors for a missing, unknown or
    unusable model spec (`check_model`: before any work), a missing --out and bad --gpus."""
    if spec is None:
        raise click.UsageError("Missing option '--model'.")
    if out is None:
        raise click.UsageError("Missing option '--out'.")
    if split_spec(spec)[0] not in BACKENDS:
        forms = "\n  ".join(SPEC_FORMS)
        raise click.BadParameter(
            f"unknown model spec {spec!r}; use one of:\n  {forms}", param_hint="--model"
        )
    try:
        check_model(spec)
    except ModelSpecError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        gpus = gpu_ids(gpus_spec)
    except SuiteError as exc:
        raise click.ClickException(str(exc)) from exc
    return Options(
        suite=Path("."),  # run_problems sets the problem set's folder
        spec=spec,
        out=out.resolve(),
        runs=runs,
        time_s=time_s,
        turns=turns,
        cmake_args=cmake_args,
        timeout_s=timeout_s,
        launcher=launcher_path(),
        command_line=command_line_of(),
        gpus=gpus,
        start_within_s=within_s,
    )


def command_line_of() -> str:
    """The command as typed, written from `nvcc-opt train` on."""
    return command_line().replace("nvcc-opt bench", "nvcc-opt train", 1)


def say_progress(progress: Progress) -> None:
    """The end of a run: how many remain, and exit 130 when it was interrupted."""
    if progress.remaining:
        click.echo(
            f"{progress.remaining} of {progress.total} runs not done: run the same command "
            "again to continue",
            err=True,
        )
    if progress.interrupted:
        raise SystemExit(130)
