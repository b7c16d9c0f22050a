"""A problem set: a folder of runnable optimization problems plus an index `datasets` loads.

Layout (format "nvcc-opt/problemset", version 1):

    SET/problemset.json       what made it, whether it is complete, the exclusion it applied
    SET/problems/<id>/        one app per problem: nvcc-opt.toml, CMakeLists.txt, tagged sources
    SET/problems/<shared>/    folders the apps share (no nvcc-opt.toml), e.g. the suite's common/
    SET/train.jsonl           one row per problem of the train split (`Problem.to_row`)
    SET/eval.jsonl            one row per problem of the eval split
    SET/skipped.jsonl         one row per candidate left out: {"source", "name", "reason"}
    SET/baselines.jsonl       appended by `nvcc-opt train baseline`, one row per problem measured

`datasets.load_dataset("json", data_files={"train": "SET/train.jsonl", "eval": "SET/eval.jsonl"})`
reads the index as it is. A run that writes a set marks it incomplete first and complete last, so
a set a killed run left half-written is refused by every reader with one line, and the writer
resumes it (`begin` with the same sources) rather than starting over.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "nvcc-opt/problemset"
VERSION = 1
MANIFEST = "problemset.json"
PROBLEMS = "problems"
SPLITS = ("train", "eval")
SKIPPED = "skipped.jsonl"
BASELINES = "baselines.jsonl"


class ProblemSetError(ValueError):
    """A folder that is not a problem set this version can use; the message is one line."""


@dataclass(frozen=True)
class Problem:
    """One optimization problem: an app folder with tagged regions, and where it came from."""

    id: str  # unique in the set; the app's folder is problems/<id>
    source: str  # hecbench, suite, apps, synthetic
    benchmark: str  # the benchmark or app it was made from (a split never divides one)
    regions: tuple[str, ...]  # "FILE:NAME" relative to the app folder
    kernels: tuple[str, ...]  # the __global__ functions inside the regions
    kind: str = "single"  # single (one kernel), pair (A+B in one region), app (as tagged)
    split: str = "train"
    region_text: str = ""  # the regions' text, for the similarity check of the exclusion
    notes: tuple[str, ...] = ()  # what the importer changed or assumed, one line each
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def app(self) -> str:
        return f"{PROBLEMS}/{self.id}"

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["app"] = self.app
        row["regions"], row["kernels"], row["notes"] = (
            list(self.regions),
            list(self.kernels),
            list(self.notes),
        )
        row["extra"] = json.dumps(self.extra, sort_keys=True)  # one column type for datasets
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any], where: str) -> Problem:
        try:
            extra = row.get("extra") or "{}"
            return cls(
                id=str(row["id"]),
                source=str(row["source"]),
                benchmark=str(row["benchmark"]),
                regions=tuple(str(r) for r in row["regions"]),
                kernels=tuple(str(k) for k in row["kernels"]),
                kind=str(row.get("kind", "single")),
                split=str(row.get("split", "train")),
                region_text=str(row.get("region_text", "")),
                notes=tuple(str(n) for n in row.get("notes", ())),
                extra=json.loads(extra) if isinstance(extra, str) else dict(extra),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProblemSetError(f"{where}: not a problem row ({exc})") from exc


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep a shared set from its readers
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) of a JSON-lines file; ProblemSetError naming file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemSetError(f"{path}: cannot read: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProblemSetError(f"{path}:{number}: not JSON: {exc.msg}") from exc
        if not isinstance(row, dict):
            raise ProblemSetError(f"{path}:{number}: a row must be a JSON object")
        yield number, row


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    """Add one row as one write of one line (a killed run leaves whole lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(row, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


class ProblemSet:
    """An existing, complete problem set (`open`), or one being written (`begin` ... `finish`)."""

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        self.manifest = manifest

    # --- reading ------------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path) -> ProblemSet:
        """A complete set; ProblemSetError (one line) for anything else."""
        manifest = _read_manifest(root)
        if not manifest.get("complete"):
            raise ProblemSetError(
                f"{root}: half-written problem set (the `nvcc-opt train problems` run that "
                "wrote it did not finish): run that command again to finish it, or remove it"
            )
        return cls(root, manifest)

    def problems(self, split: str | None = None) -> list[Problem]:
        """The problems of one split (or of both, train first), in the index's order."""
        if split is not None and split not in SPLITS:
            raise ProblemSetError(f"unknown split {split!r}; a problem set has {', '.join(SPLITS)}")
        found = []
        for name in (split,) if split else SPLITS:
            index = self.root / f"{name}.jsonl"
            for number, row in read_jsonl(index):
                found.append(Problem.from_row(row, f"{index}:{number}"))
        return found

    def app_dir(self, problem: Problem) -> Path:
        return self.root / problem.app

    def skipped(self) -> list[dict[str, Any]]:
        return [row for _, row in read_jsonl(self.root / SKIPPED)]

    def baselines(self) -> dict[str, dict[str, Any]]:
        """The latest baseline row per problem id."""
        return {str(row.get("id")): row for _, row in read_jsonl(self.root / BASELINES)}

    # --- writing ------------------------------------------------------------------------

    @classmethod
    def begin(cls, root: Path, sources: list[dict[str, Any]]) -> ProblemSet:
        """Start writing a set at `root`, or resume a half-written one made from the same
        `sources`. ProblemSetError when `root` holds anything else: nothing is overwritten."""
        if root.exists() and not root.is_dir():
            raise ProblemSetError(f"{root}: exists and is not a folder")
        if root.is_dir() and any(root.iterdir()):
            manifest = _read_manifest(root)
            if manifest.get("complete"):
                raise ProblemSetError(
                    f"{root}: already a complete problem set; write to a new folder "
                    "(nothing is overwritten)"
                )
            if manifest.get("sources") != sources:
                raise ProblemSetError(
                    f"{root}: a half-written problem set made from other sources; resume it with "
                    "the same options, or write to a new folder"
                )
            return cls(root, manifest)
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "complete": False,
            "sources": sources,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        root.mkdir(parents=True, exist_ok=True)
        write_atomic(root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        return cls(root, manifest)

    def finish(self, problems: Iterable[Problem], extra: dict[str, Any]) -> None:
        """Write both splits' index and mark the set complete (the last write)."""
        rows: dict[str, list[str]] = {name: [] for name in SPLITS}
        ids: set[str] = set()
        for problem in problems:
            if problem.split not in rows:
                raise ProblemSetError(f"problem {problem.id}: unknown split {problem.split!r}")
            if problem.id in ids:
                raise ProblemSetError(f"problem {problem.id}: the id is used twice")
            ids.add(problem.id)
            rows[problem.split].append(json.dumps(problem.to_row(), sort_keys=True))
        for name, lines in rows.items():
            write_atomic(self.root / f"{name}.jsonl", "".join(f"{line}\n" for line in lines))
        counts = {name: len(lines) for name, lines in rows.items()}
        self.manifest.update(extra, complete=True, counts=counts)
        text = json.dumps(self.manifest, indent=1, sort_keys=True) + "\n"
        write_atomic(self.root / MANIFEST, text)


def _read_manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST
    if not root.is_dir():
        raise ProblemSetError(f"{root}: no such problem set folder")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProblemSetError(f"{root}: not a problem set (no {MANIFEST})") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProblemSetError(f"{path}: not a problem set manifest: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ProblemSetError(f"{path}: not a problem set manifest (format is not {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise ProblemSetError(
            f"{path}: problem set version {manifest.get('version')!r}; this nvcc-opt reads "
            f"version {VERSION}"
        )
    return manifest
