"""`nvcc-opt train problems OUT --from KIND [SOURCE]`: make a problem set.

importer -> exclusion (always) -> build/run check -> splits -> skipped.jsonl -> finish. The set is
marked complete only at the end, so a run stopped by Ctrl-C or a kill leaves a half-written set
that the same command resumes (imported apps and check results are kept); a complete set is
refused, nothing is overwritten.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from nvcc_opt.bench.apps import SuiteError
from nvcc_opt.bench.suite import gpu_ids
from nvcc_opt_train import appcheck, splits
from nvcc_opt_train.exclusion import Exclusion, ExclusionError
from nvcc_opt_train.importers import Skip
from nvcc_opt_train.problemset import (
    PROBLEMS,
    SKIPPED,
    SPLITS,
    Problem,
    ProblemSet,
    ProblemSetError,
    write_atomic,
)

KINDS = ("hecbench", "suite", "apps", "synthetic")
Imported = Iterator[Problem | Skip]


@click.command("problems")
@click.argument("out", type=click.Path(path_type=Path))
@click.argument("source", required=False, type=click.Path(path_type=Path))
@click.option(
    "--from",
    "kind",
    type=click.Choice(KINDS),
    required=True,
    help="What to import: a HeCBench checkout, nvcc-opt's suite, a folder of apps "
    "(SOURCE), or synthetic kernels a model writes (--model, --count, --corpus).",
)
@click.option("--model", help="synthetic: the model spec that writes the kernels.")
@click.option("--count", type=click.IntRange(min=1), help="synthetic: how many to generate.")
@click.option(
    "--corpus",
    type=click.Path(path_type=Path),
    help="synthetic: the folder of inspiration snippets.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="synthetic: the seed.")
@click.option(
    "--check",
    "level",
    type=click.Choice(appcheck.LEVELS),
    help="Keep problems that build (build) and also run once passing their checks "
    "(run). Default: run where nvidia-smi lists a GPU, else build.",
)
@click.option("--jobs", type=click.IntRange(min=1), help="Builds at once (default: cores).")
@click.option(
    "--gpus",
    help="GPUs for the run check, one run each at once: 0,1 or all "
    "(default: all that nvidia-smi lists).",
)
@click.option(
    "--max-run-s",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="A problem whose run takes longer is skipped: benchmark_code runs it dozens of times.",
)
@click.option(
    "--cmake-arg",
    "cmake_args",
    multiple=True,
    help="Passed to each app's CMake configure (default: "
    "-DCMAKE_CUDA_ARCHITECTURES=native with a GPU, else 90).",
)
@click.option(
    "--eval-share",
    type=click.FloatRange(0.0, 1.0),
    default=splits.DEFAULT_EVAL_SHARE,
    show_default=True,
    help="The share of benchmarks in the eval split (by a stable hash).",
)
@click.option(
    "--split",
    "split_mode",
    type=click.Choice(splits.MODES),
    default="auto",
    show_default=True,
    help="Put every problem in one split, or split by hash.",
)
@click.option(
    "--exclude-from",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Also keep out kernels named or written like those in this folder "
    "(repeatable; e.g. a RAJAPerf checkout, benchmarks/suite).",
)
@click.option(
    "--only",
    multiple=True,
    help="Benchmark or app names to import: comma-separated, or the option repeated.",
)
def problems(
    out: Path,
    source: Path | None,
    kind: str,
    model: str | None,
    count: int | None,
    corpus: Path | None,
    seed: int,
    level: str | None,
    jobs: int | None,
    gpus: str | None,
    max_run_s: float,
    cmake_args: tuple[str, ...],
    eval_share: float,
    split_mode: str,
    exclude_from: tuple[Path, ...],
    only: tuple[str, ...],
) -> None:
    """Make a problem set (HeCBench, the suite, a folder of apps, or synthetic kernels).

    OUT is a new folder, or a half-written set (a killed run) to resume with the same options.
    SOURCE is the folder --from hecbench, suite or apps imports. Evaluation kernels (RAJAPerf's,
    LULESH's, and those of each --exclude-from folder) are always kept out of training.
    """
    started = time.monotonic()
    names = tuple(n.strip() for given in only for n in given.split(",") if n.strip())
    described = _source(kind, source, model, count, corpus, seed, names)
    try:
        exclusion = Exclusion.load(exclude_from)
        gpus_listed = appcheck.gpus_here()
        chosen = gpu_ids(gpus) if gpus else gpus_listed
    except (ExclusionError, SuiteError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    level = level or ("run" if gpus_listed else "build")
    options = appcheck.CheckOptions(
        level=level,
        jobs=jobs or os.cpu_count() or 1,
        gpus=chosen,
        cmake_args=cmake_args or appcheck.default_cmake_args(bool(gpus_listed)),
        max_run_s=max_run_s,
    )
    fresh = not out.exists() or (out.is_dir() and not any(out.iterdir()))
    try:
        problem_set = ProblemSet.begin(out, [described])
    except ProblemSetError as exc:
        raise click.ClickException(str(exc)) from exc
    dest = out / PROBLEMS
    try:
        imported = _imported(_importer(kind, source, dest, described, click.echo), out, fresh)
        kept, skips = _filter(imported, exclusion, split_mode == "eval")
        checked: list[Problem] = []
        for problem, why in appcheck.check_problems(out, kept, options, click.echo):
            if why is None:
                checked.append(problem)
            else:
                skips.append(Skip(problem.source, problem.benchmark, why))
    except KeyboardInterrupt:
        click.echo(f"interrupted: {out} is half-written; run the same command to resume", err=True)
        raise SystemExit(130) from None
    except (ValueError, OSError) as exc:
        left = f" ({out} is half-written: rerun the same command)" if out.exists() else ""
        raise click.ClickException(f"{exc}{left}") from exc
    order = {p.id: i for i, p in enumerate(kept)}
    final = splits.assign(sorted(checked, key=lambda p: order[p.id]), split_mode, eval_share)
    write_atomic(out / SKIPPED, "".join(_line(s.to_row()) for s in skips))
    candidates = sum(1 for item in imported if isinstance(item, Problem))
    record = _record(options, bool(gpus_listed), exclusion, candidates, split_mode, eval_share)
    summary = summarize(imported, final, skips, time.monotonic() - started)
    problem_set.finish(final, {**record, "summary": summary})
    _print_summary(out, summary, options, bool(gpus_listed))


def _imported(items: Imported, out: Path, fresh: bool) -> list[Problem | Skip]:
    """Everything the importer yields. When it fails before yielding anything in a set this run
    created (a wrong path, an unknown --only name), the set is removed again: it holds nothing
    but its manifest, and a rerun with corrected options should not find it in the way."""
    found: list[Problem | Skip] = []
    try:
        for item in items:
            found.append(item)
    except (ValueError, OSError):
        if fresh and not found:
            shutil.rmtree(out, ignore_errors=True)
        raise
    return found


def _source(
    kind: str,
    source: Path | None,
    model: str | None,
    count: int | None,
    corpus: Path | None,
    seed: int,
    only: tuple[str, ...],
) -> dict[str, Any]:
    """What the set is made from (a resumed run must name the same); UsageError when an option
    the kind needs is missing."""
    if kind == "synthetic":
        if not model or not count or corpus is None:
            raise click.UsageError("--from synthetic needs --model SPEC, --count N, --corpus DIR")
        return {"from": kind, "model": model, "count": count, "corpus": _abs(corpus), "seed": seed}
    if source is None:
        raise click.UsageError(f"--from {kind} needs the folder to import: --from {kind} PATH")
    return {"from": kind, "path": _abs(source), "only": list(only)}


def _abs(path: Path) -> str:
    return str(path.expanduser().resolve())


def _importer(
    kind: str,
    source: Path | None,
    dest: Path,
    described: dict[str, Any],
    say: Callable[[str], None],
) -> Imported:
    """The chosen importer, imported when chosen (HeCBench's and the synthetic one are heavier)."""
    only = tuple(described.get("only", ()))
    if kind == "hecbench":
        from nvcc_opt_train.importers.hecbench import HecbenchOptions, import_hecbench

        assert source is not None
        return import_hecbench(source, dest, HecbenchOptions(only=only), say)
    if kind == "synthetic":
        from nvcc_opt_train.importers.synthetic import SyntheticOptions, import_synthetic

        corpus = Path(described["corpus"])
        options = SyntheticOptions(
            model=described["model"], count=described["count"], seed=described["seed"]
        )
        return import_synthetic(corpus, dest, options, say)
    from nvcc_opt_train.importers.apps import AppsOptions, import_apps, import_suite

    assert source is not None
    chosen = import_suite if kind == "suite" else import_apps
    return chosen(source, dest, AppsOptions(only=only), say)


def _filter(
    imported: list[Problem | Skip], exclusion: Exclusion, eval_only: bool
) -> tuple[list[Problem], list[Skip]]:
    """The problems the exclusion lets through, and the skips (the importer's and its own). A
    set made only for evaluation (--split eval) keeps evaluation kernels, with a note."""
    kept: list[Problem] = []
    skips: list[Skip] = []
    for item in imported:
        if isinstance(item, Skip):
            skips.append(item)
            continue
        why = exclusion.match(item)
        if why is None:
            kept.append(item)
        elif eval_only:
            kept.append(replace(item, notes=(*item.notes, why)))
        else:
            skips.append(Skip(item.source, item.benchmark, f"{why} [{item.id}]"))
    return kept, skips


def _record(
    options: appcheck.CheckOptions,
    gpu_here: bool,
    exclusion: Exclusion,
    candidates: int,
    split_mode: str,
    eval_share: float,
) -> dict[str, Any]:
    return {
        "check": {
            "level": options.level,
            "ran": options.level == "run",
            "gpu_here": gpu_here,
            "gpus": list(options.gpus),
            "cmake_args": list(options.cmake_args),
        },
        "exclusion": exclusion.record(candidates),
        "split": {"mode": split_mode, "eval_share": eval_share, "by": "sha256(source, benchmark)"},
    }


def _line(row: dict[str, str]) -> str:
    return json.dumps(row, sort_keys=True) + "\n"


def reason_class(reason: str) -> str:
    """The kind of a skip reason: its words before the first colon (`build failed`, `excluded`,
    `run`), or `other` when there is no short one.

    >>> reason_class("build failed: src/k.cu(3): error: x"), reason_class("needs MPI")
    ('build failed', 'other')
    """
    head, colon, _ = reason.partition(":")
    return head.strip() if colon and 0 < len(head.split()) <= 4 else "other"


def summarize(
    imported: list[Problem | Skip], final: list[Problem], skips: list[Skip], seconds: float
) -> dict[str, Any]:
    """The counts the manifest keeps under "summary" and the command prints."""
    per_split = Counter(p.split for p in final)
    names = {
        (item.source, item.benchmark if isinstance(item, Problem) else item.name)
        for item in imported
    }
    return {
        "candidates": len(imported),
        "benchmarks": len(names),
        "benchmarks_kept": len({(p.source, p.benchmark) for p in final}),
        "problems": {name: per_split[name] for name in SPLITS},
        "skipped": len(skips),
        "skipped_by_class": dict(Counter(reason_class(s.reason) for s in skips).most_common()),
        "seconds": round(seconds, 1),
    }


def _print_summary(
    out: Path, summary: dict[str, Any], options: appcheck.CheckOptions, gpu_here: bool
) -> None:
    counts = summary["problems"]
    click.echo(f"{out}: complete")
    click.echo(
        f"candidates: {summary['candidates']} from {summary['benchmarks']} benchmarks; problems: "
        f"{sum(counts.values())} (train {counts['train']}, eval {counts['eval']}) from "
        f"{summary['benchmarks_kept']} benchmarks"
    )
    if summary["skipped"]:
        kinds = ", ".join(f"{n} {c}" for c, n in summary["skipped_by_class"].items())
        click.echo(f"skipped: {summary['skipped']}: {kinds}")
    if options.level == "run":
        where = ",".join(options.gpus) if options.gpus else "0"
        note = "" if gpu_here else " (no GPU here: nvidia-smi lists none)"
        click.echo(f"check: build and run (GPUs {where}){note}")
    elif options.level == "build":
        why = "no GPU here" if not gpu_here else "--check build"
        click.echo(f"check: build only; not run: {why}")
    else:
        click.echo("check: none; not built, not run (--check none)")
    click.echo(f"time: {summary['seconds']:.1f} s")
