"""Where an SFT dataset's conversations came from: only from a train split of a problem set.

`nvcc-opt train collect` writes OUT/sft.jsonl beside OUT/runs-settings.json (the problem set and
split its runs were made over) and OUT/runs.jsonl (each run's problem and trace).
`check_source` follows a dataset back along them: the settings name a complete problem set made
with the evaluation-kernel exclusion, their split is train, and every conversation's trace is a
recorded run of a problem in that set's train split. So an evaluation problem's trace never
reaches training by accident; `nvcc-opt train sft --unchecked-source` is the deliberate way
around it (a dataset merged or written by hand).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nvcc_opt_train.exclusion import require_exclusion
from nvcc_opt_train.problemset import ProblemSet, ProblemSetError
from nvcc_opt_train.runs import RUNS, SETTINGS, TRACES, RunsError, read_runs, region_results

TRAIN = "train"
OVERRIDE = "--unchecked-source"


class ProvenanceError(ValueError):
    """A dataset whose source cannot be shown to be a train split; one line naming the file."""


def check_source(dataset: Path, rows: list[dict[str, Any]]) -> Path:
    """The root of the problem set whose train split every row of `dataset` came from;
    ProvenanceError naming the file (and row) otherwise."""
    folder = dataset.absolute().parent
    settings = _settings(dataset, folder / SETTINGS)
    if settings.get("split") != TRAIN:
        raise ProvenanceError(
            f"{folder / SETTINGS}: these runs are of the {settings.get('split')!r} split, not "
            f"{TRAIN}: training on them would leak evaluation problems ({OVERRIDE} to insist)"
        )
    try:
        problemset = ProblemSet.open(Path(str(settings.get("problems"))))
        require_exclusion(problemset)
        train_ids = {p.id for p in problemset.problems(TRAIN)}
        records = read_runs(folder)
    except (ProblemSetError, RunsError) as exc:
        raise ProvenanceError(f"{dataset}: its source cannot be checked: {exc}") from exc
    problem_of = {r.trace: record.id for record, r in region_results(records) if r.trace}
    for number, row in enumerate(rows, 1):
        trace = _trace_of(row)
        problem = problem_of.get(trace) if trace else None
        if problem is None:
            raise ProvenanceError(
                f"{dataset}:{number}: its trace ({trace or 'none named'}) is not a run recorded "
                f"in {folder / RUNS} ({OVERRIDE} to train on it anyway)"
            )
        if problem not in train_ids:
            raise ProvenanceError(
                f"{dataset}:{number}: problem {problem} is not in the {TRAIN} split of "
                f"{problemset.root}: it may be an evaluation problem ({OVERRIDE} to insist)"
            )
    return problemset.root


def _settings(dataset: Path, path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ProvenanceError(
            f"{dataset}: no {SETTINGS} beside it names the problem set its traces came from "
            f"(train on the sft.jsonl of a `nvcc-opt train collect` folder, or pass {OVERRIDE})"
        )
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProvenanceError(f"{path}: cannot read: {exc}") from exc
    if not isinstance(settings, dict):
        raise ProvenanceError(f"{path}: not the settings of a collect run (not an object)")
    return settings


def _trace_of(row: dict[str, Any]) -> str:
    """The row's trace as runs.jsonl names it (traces/NAME.json, relative to the collect
    folder), so a collect folder that was moved or copied still checks; "" without one."""
    try:
        meta = json.loads(row["meta"])
    except (KeyError, TypeError, json.JSONDecodeError):
        return ""
    trace = meta.get("trace") if isinstance(meta, dict) else None
    if not isinstance(trace, str) or Path(trace).parent.name != TRACES:
        return ""
    return f"{TRACES}/{Path(trace).name}"
