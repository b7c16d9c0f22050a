"""The record of every change `prepare` made to a checkout, and its undoing.

Everything lives in `<checkout>/.nvcc-opt-rajaperf/`: `ledger.json` (each change: the file, the
fix or tag that made it, the sha256 of the text before and after) and `originals/<sha256>` (the
bytes before each change). `revert` undoes the changes newest first, and only where the file is
still exactly what the change left: a file edited since is kept, named, and its original stays
in `originals/`. When everything is undone the folder is removed, so the tree is byte-identical
to what it was (files `prepare` created are removed the same way); what nvcc-opt itself wrote
there (the store, traces) is kept and named.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

FOLDER = ".nvcc-opt-rajaperf"
LEDGER = "ledger.json"
CREATED = "created"  # the `before` of a file prepare created


@dataclass(frozen=True)
class Change:
    file: str  # relative to the checkout
    kind: str  # "fix" or "tag" or "file"
    name: str  # the fix's name, the kernel tagged, or what the file is
    before: str  # sha256 of the bytes before, or CREATED
    after: str  # sha256 of the bytes after


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Ledger:
    """The changes made to `root`, loaded from and saved to its ledger file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / FOLDER
        self.changes: list[Change] = []
        self.info: dict[str, str] = {}
        path = self.folder / LEDGER
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            self.changes = [Change(**c) for c in data.get("changes", [])]
            self.info = dict(data.get("info", {}))

    def save(self) -> None:
        self.folder.mkdir(exist_ok=True)
        data = {"info": self.info, "changes": [asdict(c) for c in self.changes]}
        temp = self.folder / (LEDGER + ".tmp")
        temp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(temp, self.folder / LEDGER)

    def write(self, path: Path, text: str, kind: str, name: str) -> Change:
        """Write `text` to `path` (inside the checkout), keeping what was there; recorded."""
        relative = path.resolve().relative_to(self.root.resolve()).as_posix()
        new = text.encode("utf-8")
        if path.exists():
            old = path.read_bytes()
            before = sha(old)
            self._keep(before, old)
        else:
            before = CREATED
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(path.name + ".nvcc-opt-tmp")
        temp.write_bytes(new)
        if before != CREATED:
            os.chmod(temp, path.stat().st_mode)
        os.replace(temp, path)
        change = Change(relative, kind, name, before, sha(new))
        self.changes.append(change)
        self.save()
        return change

    def _keep(self, digest: str, data: bytes) -> None:
        originals = self.folder / "originals"
        originals.mkdir(parents=True, exist_ok=True)
        target = originals / digest
        if not target.exists():
            target.write_bytes(data)

    def revert(self, only: Callable[[Change], bool] | None = None) -> list[str]:
        """Undo the changes (those `only` selects), newest first; returns one line per file that
        could not be undone (edited since prepare), whose original is kept. With nothing left to
        undo, the ledger and the originals are removed."""
        kept: list[str] = []
        blocked: set[str] = set()
        undone: list[Change] = []
        for change in reversed(self.changes):
            if only is not None and not only(change):
                continue
            path = self.root / change.file
            current = sha(path.read_bytes()) if path.exists() else CREATED
            if change.file in blocked:
                continue
            if current == change.after:
                if change.before == CREATED:
                    path.unlink()
                else:
                    data = (self.folder / "originals" / change.before).read_bytes()
                    mode = path.stat().st_mode
                    path.write_bytes(data)
                    os.chmod(path, mode)
            elif current != change.before:
                blocked.add(change.file)
                kept.append(
                    f"{change.file}: changed since prepare ({change.kind} {change.name}); kept as"
                    f" it is, the original is {FOLDER}/originals/{change.before}"
                )
                continue
            undone.append(change)
        self.changes = [c for c in self.changes if c not in undone]
        if self.changes:
            self.save()
            return kept
        leftovers = _clean(self.folder)
        if leftovers:
            kept.append(
                f"{FOLDER}/: kept, it holds what nvcc-opt wrote there ({', '.join(leftovers[:3])}"
                f"{', ...' if len(leftovers) > 3 else ''}): remove it yourself when done"
            )
        return kept

    def touched(self, kind: str | None = None) -> list[Change]:
        return [c for c in self.changes if kind is None or c.kind == kind]


def _clean(folder: Path) -> list[str]:
    """The ledger and the originals removed, then every empty folder; what else remains."""
    if not folder.exists():
        return []
    (folder / LEDGER).unlink(missing_ok=True)
    originals = folder / "originals"
    if originals.is_dir():
        for path in originals.iterdir():
            path.unlink()
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    if not any(folder.iterdir()):
        folder.rmdir()
        return []
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
