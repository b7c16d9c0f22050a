"""Reading the store with the standard library only, for the commands that only show it.

`status` and `review --list` are what a user runs most; through `api.Store` they paid for
importing SQLAlchemy (about two thirds of their start-up). `Reader` answers the same two
questions as `Store.regions` and `Store.rewrites`, with the same records in the same order
(both decode rows with decode.py; a test compares them on one store), reading only the rows the
question needs. It opens only a store that is already at the latest schema
and healthy; anything else (no file yet, an old schema, damage, a lock it cannot wait out) makes
`open_reader` return None, and the command opens `api.Store`, which migrates, moves damage aside
and says why, as before.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from nvcc_opt.records import (
    CompileRecord,
    Decision,
    RegionRecord,
    Rewrite,
    RewriteState,
    Verification,
)
from nvcc_opt.store import connections, decode, migrations


class Reads(Protocol):
    """What the showing commands ask of a store: `api.Store` and `Reader` both answer it."""

    path: Path

    def regions(self, file: str | None = None) -> list[RegionRecord]: ...

    def rewrites(
        self,
        *,
        file: str | None = None,
        region_hash: str | None = None,
        states: Iterable[RewriteState] | None = None,
    ) -> list[Rewrite]: ...


class Reader:
    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection
        self._db.row_factory = sqlite3.Row  # columns by name, as decode.py takes them

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def regions(self, file: str | None = None) -> list[RegionRecord]:
        """As `Store.regions`: by file and line, each with its compiles by output."""
        where, args = ("WHERE file = ?", [os.path.abspath(file)]) if file is not None else ("", [])
        with _transaction(self._db):
            rows = self._db.execute(
                f"SELECT * FROM regions {where} ORDER BY file, start_line, id", args
            ).fetchall()
            compiles: dict[int, list[CompileRecord]] = {}
            for c in self._db.execute(
                f"SELECT * FROM compiles WHERE region_id IN (SELECT id FROM regions {where})"
                " ORDER BY output, id",
                args,
            ):
                compiles.setdefault(c["region_id"], []).append(decode.compile_record(c))
        return [decode.region_record(r, compiles.get(r["id"], ())) for r in rows]

    def rewrites(
        self,
        *,
        file: str | None = None,
        region_hash: str | None = None,
        states: Iterable[RewriteState] | None = None,
    ) -> list[Rewrite]:
        """As `Store.rewrites`: those matching every filter given, oldest first."""
        clauses: list[str] = []
        args: list[str] = []
        if file is not None:
            clauses.append("file = ?")
            args.append(os.path.abspath(file))
        if region_hash is not None:
            clauses.append("region_hash = ?")
            args.append(region_hash)
        if states is not None:
            wanted = [s.value for s in states]
            clauses.append(f"state IN ({', '.join('?' for _ in wanted)})" if wanted else "0")
            args += wanted
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        chosen = f"WHERE rewrite_id IN (SELECT id FROM rewrites {where}) ORDER BY id"
        with _transaction(self._db):
            rows = self._db.execute(f"SELECT * FROM rewrites {where} ORDER BY id", args).fetchall()
            decisions: dict[int, list[Decision]] = {}
            for d in self._db.execute(f"SELECT * FROM decisions {chosen}", args):
                decisions.setdefault(d["rewrite_id"], []).append(decode.decision_record(d))
            verifications: dict[int, list[Verification]] = {}
            for v in self._db.execute(f"SELECT * FROM verifications {chosen}", args):
                verifications.setdefault(v["rewrite_id"], []).append(decode.verification_record(v))
        return [
            decode.rewrite_record(r, decisions.get(r["id"], ()), verifications.get(r["id"], ()))
            for r in rows
        ]


class _transaction:
    """One read transaction around a question's queries, so they see one state of the store."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, *exc: object) -> None:
        self._db.execute("COMMIT")


def open_reader(path: str | os.PathLike[str]) -> Reader | None:
    """A reader of the store at `path`, or None where `api.Store` must open it (see above)."""
    db = Path(path).absolute()  # as Store.open names it
    if not db.is_file() or db.stat().st_size == 0:
        return None
    try:
        conn = connections.connect(str(db), write=False, timeout=migrations.BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return None
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version != migrations.LATEST_VERSION:
            conn.close()
            return None
    except sqlite3.Error:
        conn.close()
        return None
    return Reader(db, conn)
