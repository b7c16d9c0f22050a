"""Reading what `nvcc-opt report` is given. Every problem is an InputError whose message is one
line naming the file: a JSON that is not a bench report, a trace that is not format v1, a LULESH
table off its schema (lulesh.py), a store that cannot be read."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nvcc_opt.agent.trace import Trace, TraceError, load_trace
from nvcc_opt.bench.merge import MergeError, load_report
from nvcc_opt.bench.results import Report
from nvcc_opt.records import Rewrite

SQLITE_HEADER = b"SQLite format 3\x00"


class InputError(ValueError):
    """One line: the file and what is wrong with it."""


@dataclass(frozen=True)
class Bench:
    path: Path
    report: Report
    raw: dict[str, Any]  # the JSON as written: fields this nvcc-opt's Report drops (category)


@dataclass(frozen=True)
class TraceFile:
    path: Path
    label: str  # the path under the traces folder, as a bench report names it
    trace: Trace


def load_bench(path: Path) -> Bench:
    try:
        report = load_report(path)
    except MergeError as exc:
        raise InputError(str(exc).replace("suite report", "bench report")) from None
    raw = json.loads(path.read_text(encoding="utf-8"))
    return Bench(path, report, raw)


def load_traces(folder: Path) -> list[TraceFile]:
    """Every `*.json` under `folder` (sorted by path), each a trace of format v1."""
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder (--traces)")
    found = []
    for path in sorted(folder.rglob("*.json")):
        try:
            trace = load_trace(path)
        except TraceError as exc:
            raise InputError(str(exc).splitlines()[0]) from None
        except (KeyError, TypeError) as exc:
            raise InputError(f"{path}: not a v1 trace (no {exc} field)") from None
        if not isinstance(trace.steps, list):
            raise InputError(f"{path}: not a v1 trace (steps is not a list)")
        found.append(TraceFile(path, path.relative_to(folder).as_posix(), trace))
    return found


def load_store(path: Path) -> list[Rewrite]:
    """Every rewrite in the store at `path`, oldest first. The store is only read: one that the
    standard-library reader cannot open as it is (an older schema, damage) is named, never
    migrated or moved aside as the commands that keep a store do."""
    from nvcc_opt.store.read import open_reader

    if not path.is_file():
        raise InputError(f"{path}: no such store (--store)")
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
        if head != SQLITE_HEADER:
            raise InputError(f"{path}: not a store (not an SQLite database)")
        reader = open_reader(path)
        if reader is None:
            raise InputError(
                f"{path}: cannot read this store as it is (an older schema, or damaged): "
                f"`nvcc-opt --store {path} status` upgrades or repairs it"
            )
        with reader:
            return reader.rewrites()
    except (sqlite3.Error, OSError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{path}: cannot read the store: {str(exc).splitlines()[0]}") from None
