"""`nvcc-opt bench merge`: one report from several suite reports of the same model.

A device session is too short for the whole suite, so it runs in slices (`bench suite --only`);
merging their JSON reports gives the table a single run would have. A later file's row replaces
an earlier file's row for the same (app, kernel), but a row whose runs the bench stopped
(unfinished) never replaces a finished one; the runs kept are those behind the rows kept (an app
whose rows came from two files has the runs of both); the rows are ordered by app. Each report's
rows are summarized again from its runs first (an older report gets today's rules), and the
overall numbers and targets are recomputed with the bench's own `summarize`. The result names
its sources (file, command, start, rows kept) and is written as `suite-merged-DATE-MODEL.json`
and `.md`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from nvcc_opt.bench.render import free_stem
from nvcc_opt.bench.results import (
    REASON_CHARS,
    AppRun,
    Kernel,
    KernelRow,
    Report,
    Source,
    first_line,
)
from nvcc_opt.bench.summary import failed_runs, model_slug, rows_for, summarize

_REPORT = TypeAdapter(Report)


class MergeError(ValueError):
    """The reports cannot be merged: a file that is not a suite report, or different models."""


@dataclass(frozen=True)
class Loaded:
    path: Path
    report: Report


def load_report(path: Path) -> Report:
    """The suite report in `path` (fields a report of an older nvcc-opt lacks take their
    defaults). MergeError, naming the file, when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MergeError(f"{path}: cannot read a suite report: {exc}") from exc
    try:
        return _REPORT.validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the top level"
        why = first_line(f"{where}: {error['msg']}", REASON_CHARS)
        raise MergeError(f"{path}: not a suite report ({why})") from None


def merge_reports(
    paths: Sequence[Path], out: Path, command: str = "", suite_apps: Sequence[str] = ()
) -> Report:
    """The merged report of `paths` (in order: later rows replace earlier ones), with its stem
    under `out` chosen so that no earlier file is overwritten; its `not_run` names the apps of
    `suite_apps` and the apps the reports left out as not started that no report has a row for.
    MergeError when a file is not a suite report or the model specs differ."""
    if not paths:
        raise MergeError("no reports to merge")
    loaded = [Loaded(path, resummarized(load_report(path))) for path in paths]
    models = {item.report.model for item in loaded}
    if len(models) > 1:
        named = "; ".join(f"{item.path}: {item.report.model}" for item in loaded)
        raise MergeError(f"the reports were made with different model specs ({named})")
    chosen = merged_rows(loaded)
    rows = sorted((row for row, _ in chosen.values()), key=lambda row: row.app)
    runs = merged_runs(loaded, chosen)
    measured = {row.app for row in rows}
    left = {app for item in loaded for app in item.report.not_run} | set(suite_apps)
    model = loaded[0].report.model
    date = time.strftime("%Y-%m-%d")
    stem = free_stem(out, f"suite-merged-{date}-{model_slug(model)}")
    return Report(
        model=model,
        date=date,
        started_at=min(item.report.started_at for item in loaded),
        command=command,
        machine=_machines([item.report for item in loaded]),
        options={"runs": _runs(loaded), "out": str(out), "stem": stem},
        rows=tuple(rows),
        overall=summarize(rows, failed_runs(runs)),
        runs=tuple(runs),
        wall_s=sum(item.report.wall_s for item in loaded),
        not_run=tuple(sorted(left - measured)),
        sources=tuple(
            Source(
                str(item.path),
                item.report.command,
                item.report.started_at,
                sum(1 for _, source in chosen.values() if source is item),
            )
            for item in loaded
        ),
    )


def resummarized(report: Report) -> Report:
    """`report` with its rows summarized again from its runs by this nvcc-opt (so a report of an
    older one gets today's rules, such as unfinished rows), in the same order. A merged report
    is returned as it is: its rows came from several reports and were summarized then."""
    if report.sources:
        return report
    kernels = [Kernel(row.app, row.file, row.region) for row in report.rows]
    n_runs = int(report.options.get("runs", 1))
    by_key = {(r.app, r.region): r for r in rows_for(kernels, report.runs, n_runs)}
    return replace(report, rows=tuple(by_key[(row.app, row.region)] for row in report.rows))


def merged_rows(loaded: Sequence[Loaded]) -> dict[tuple[str, str], tuple[KernelRow, Loaded]]:
    """(app, kernel) -> its row from the last file that has one, and that file; an unfinished
    row (the bench stopped its runs) never replaces a finished one."""
    chosen: dict[tuple[str, str], tuple[KernelRow, Loaded]] = {}
    for item in loaded:
        for row in item.report.rows:
            key = (row.app, row.region)
            if row.unfinished and key in chosen and not chosen[key][0].unfinished:
                continue
            chosen[key] = (row, item)
    return chosen


def merged_runs(
    loaded: Sequence[Loaded], chosen: dict[tuple[str, str], tuple[KernelRow, Loaded]]
) -> list[AppRun]:
    """The runs behind the chosen rows: each file's runs of the apps it gave a row, in file
    order within an app (its failed runs are the ones the overall count includes). An app
    whose rows came from two files has the runs of both."""
    behind = {(row.app, id(source)) for row, source in chosen.values()}
    return sorted(
        (run for item in loaded for run in item.report.runs if (run.app, id(item)) in behind),
        key=lambda run: (run.app, run.run),
    )


def _machines(reports: Sequence[Report]) -> dict[str, str]:
    """Each machine field once per distinct value ("gpu: H200; A100" when they differ)."""
    keys = dict.fromkeys(key for report in reports for key in report.machine)
    return {
        key: "; ".join(dict.fromkeys(r.machine[key] for r in reports if key in r.machine))
        for key in keys
    }


def _runs(loaded: Sequence[Loaded]) -> str:
    """The sources' runs per app ("1", or "1, 3" when they differ)."""
    return ", ".join(dict.fromkeys(str(item.report.options.get("runs", 1)) for item in loaded))
