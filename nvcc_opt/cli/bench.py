"""`nvcc-opt bench suite`: the optimizer on every kernel of the suite, as a results table;
`nvcc-opt bench merge`: one table from the reports of several sessions' slices of the suite."""

from __future__ import annotations

from pathlib import Path

import click

from nvcc_opt.agent.backends import BACKENDS, SPEC_FORMS, split_spec
from nvcc_opt.bench.apps import SuiteError, find_apps
from nvcc_opt.bench.merge import MergeError, merge_reports
from nvcc_opt.bench.options import Options
from nvcc_opt.bench.render import command_line, render_markdown, write_report
from nvcc_opt.bench.results import Report
from nvcc_opt.bench.suite import gpu_ids, run_suite
from nvcc_opt.tools.catalog import launcher_path


@click.group("bench", context_settings={"help_option_names": ["-h", "--help"]})
def bench() -> None:
    """Benchmarks of the optimizer."""


@bench.command("suite")
@click.option(
    "--suite",
    "suite_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("benchmarks/suite"),
    show_default=True,
    help="Folder of apps (each with nvcc-opt.toml and CMakeLists.txt).",
)
@click.option(
    "--model", "spec", required=True, help="search, openai:MODEL@URL, vllm:PATH, hf:PATH, smollm2"
)
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Optimize every app this many times (seeds 1..N).")  # fmt: skip
@click.option("--only", default=None, help="Comma-separated app names (default: all).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("benchmarks/results"),
    show_default=True,
    help="Where the .json and .md results go (work trees and stores under OUT/work/).",
)
@click.option("--time", "time_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Agent wall time per region, seconds (optimize's --time).")  # fmt: skip
@click.option("--turns", type=click.IntRange(min=1), default=None,
              help="Agent turns per region (optimize's --turns).")  # fmt: skip
@click.option(
    "--cmake-arg",
    "cmake_args",
    multiple=True,
    help="Added to every configure (e.g. -DCMAKE_CUDA_ARCHITECTURES=native); repeatable.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds per optimize call before it is stopped (default: per region, --time or "
    "3600, plus 900).",
)
@click.option(
    "--gpus",
    "gpus_spec",
    default=None,
    metavar="LIST",
    help="Run apps concurrently, one per GPU, each with CUDA_VISIBLE_DEVICES set to its GPU: "
    "comma-separated device ids (0,1,2,3) or all (nvidia-smi's). Default: one app at a time.",
)
@click.option(
    "--start-within",
    "start_within_s",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Start no app run later than this many seconds after the bench began (for a time-"
    "limited machine: no run is begun that cannot finish); the apps left are listed as not "
    "started. Default: no limit.",
)
def suite(
    suite_dir: Path,
    spec: str,
    runs: int,
    only: str | None,
    out: Path,
    time_s: float | None,
    turns: int | None,
    cmake_args: tuple[str, ...],
    timeout_s: float | None,
    gpus_spec: str | None,
    start_within_s: float | None,
) -> None:
    """Optimize every kernel of the suite RUNS times, each run in a fresh build tree with a
    fresh store (yours is never touched), and write OUT/suite-DATE-MODEL.json and .md: per
    kernel the baseline, the best verified speedup, what changed, the wall time and the
    verdict; overall the share improved, the geometric mean speedup and the wrong finals.
    Interrupted (Ctrl-C), it writes the table of what finished and exits with status 130."""
    if split_spec(spec)[0] not in BACKENDS:
        forms = "\n  ".join(SPEC_FORMS)
        raise click.BadParameter(
            f"unknown model spec {spec!r}; use one of:\n  {forms}", param_hint="--model"
        )
    names = tuple(n.strip() for n in (only or "").split(",") if n.strip())
    if not suite_dir.is_dir():
        raise click.BadParameter(f"{suite_dir}: no such folder", param_hint="--suite")
    try:
        find_apps(suite_dir, names)
        gpus = gpu_ids(gpus_spec)
    except SuiteError as exc:
        raise click.ClickException(str(exc)) from exc
    options = Options(
        suite=suite_dir.resolve(),
        spec=spec,
        out=out.resolve(),
        runs=runs,
        only=names,
        time_s=time_s,
        turns=turns,
        cmake_args=cmake_args,
        timeout_s=timeout_s,
        launcher=launcher_path(),
        command_line=command_line(),
        gpus=gpus,
        start_within_s=start_within_s,
    )
    try:
        report = run_suite(options, echo=lambda message: click.echo(message, err=True))
    except SuiteError as exc:
        raise click.ClickException(str(exc)) from exc
    _write(report, options.out)
    if report.interrupted:
        raise SystemExit(130)  # 128 + SIGINT: the table is partial


@bench.command("merge")
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("benchmarks/results"),
    show_default=True,
    help="Where the merged .json and .md go.",
)
@click.option(
    "--suite",
    "suite_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The suite the reports measured: its apps with no row in any report are named as not "
    "measured (default: only the apps the reports name as not started).",
)
def merge(reports: tuple[Path, ...], out: Path, suite_dir: Path | None) -> None:
    """Merge suite REPORTS (JSON, same model spec) into OUT/suite-merged-DATE-MODEL.json and
    .md: a later file's row replaces an earlier file's for the same app and kernel; the overall
    numbers and targets are recomputed as the suite computes them; the sources are listed."""
    try:
        apps = [] if suite_dir is None else [app.name for app in find_apps(suite_dir)]
        report = merge_reports(reports, out.resolve(), command_line(), apps)
    except (MergeError, SuiteError) as exc:
        raise click.ClickException(str(exc)) from exc
    _write(report, out.resolve())


def _write(report: Report, out: Path) -> None:
    """The report's files, its Markdown on stdout, their paths on stderr."""
    json_path, md_path = write_report(report, out)
    click.echo(render_markdown(report))
    click.echo(f"written: {json_path}\nwritten: {md_path}", err=True)


if __name__ == "__main__":
    bench()
