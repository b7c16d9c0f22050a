"""Importers: each turns one kind of source into problems of a problem set.

An importer is a function `(source, dest_problems_dir, options, say) -> Iterator[Problem | Skip]`
that writes each problem's app folder at `dest_problems_dir / problem.id` (complete, or not at
all: write into a temporary folder beside it and rename) and yields the Problem (split left at
its default: `problems_cli` assigns splits and applies the exclusion), or a Skip for each candidate
it leaves out, with one line saying why. A folder that already exists for an id is kept (a resumed
run): the importer yields its Problem again without rewriting it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Skip:
    """A candidate left out of the set, and why (one line); written to skipped.jsonl."""

    source: str  # hecbench, suite, apps, synthetic
    name: str  # the benchmark, app or sample
    reason: str

    def to_row(self) -> dict[str, str]:
        return {"source": self.source, "name": self.name, "reason": self.reason}
