"""Reading the store with the standard library only, for the commands that only show it.

`status` and `review --list` are what a user runs most; through `api.Store` they paid for
importing SQLAlchemy (about two thirds of their start-up). `Reader` answers the same two
questions as `Store.regions` and `Store.rewrites`, with the same records in the same order (a
test compares them on one store). It opens only a store that is already at the latest schema
and healthy; anything else (no file yet, an old schema, damage, a lock it cannot wait out) makes
`open_reader` return None, and the command opens `api.Store`, which migrates, moves damage aside
and says why, as before.
"""

from __future__ import annotations

import json
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
from nvcc_opt.store import connections, migrations
from nvcc_opt.store.fast import context_from_json


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


_REWRITE = (
    "id, file, region_name, region_hash, code, explanation, compile_args, targets, context,"
    " statistics, model, trace, origin, state, suspect, created_at"
)
_DECISION = "rewrite_id, from_state, to_state, reason, at, forced"
_VERIFICATION = "rewrite_id, at, passed, status, reasons, statistics, context, machine"


class Reader:
    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

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
                "SELECT id, file, name, kind, start_line, end_line, text_hash, text, first_seen,"
                f" last_seen FROM regions {where} ORDER BY file, start_line, id",
                args,
            ).fetchall()
            compiles: dict[int, list[CompileRecord]] = {}
            for region_id, output, command, cwd, context, last_seen in self._db.execute(
                "SELECT region_id, output, command, cwd, context, last_seen FROM compiles"
                " ORDER BY output, id"
            ):
                compiles.setdefault(region_id, []).append(
                    CompileRecord(
                        output=output,
                        command=tuple(json.loads(command)),
                        cwd=cwd,
                        context=context_from_json(context),
                        last_seen=last_seen,
                    )
                )
        return [
            RegionRecord(
                id=r[0],
                file=r[1],
                name=r[2],
                kind=r[3],
                start_line=r[4],
                end_line=r[5],
                text_hash=r[6],
                text=r[7],
                first_seen=r[8],
                last_seen=r[9],
                compiles=tuple(compiles.get(r[0], ())),
            )
            for r in rows
        ]

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
        with _transaction(self._db):
            rows = self._db.execute(
                f"SELECT {_REWRITE} FROM rewrites {where} ORDER BY id", args
            ).fetchall()
            decisions: dict[int, list[Decision]] = {}
            for d in self._db.execute(f"SELECT {_DECISION} FROM decisions ORDER BY id"):
                decisions.setdefault(d[0], []).append(
                    Decision(
                        rewrite_id=d[0],
                        from_state=RewriteState(d[1]),
                        to_state=RewriteState(d[2]),
                        reason=d[3],
                        at=d[4],
                        forced=bool(d[5]),
                    )
                )
            verifications: dict[int, list[Verification]] = {}
            for v in self._db.execute(f"SELECT {_VERIFICATION} FROM verifications ORDER BY id"):
                verifications.setdefault(v[0], []).append(
                    Verification(
                        rewrite_id=v[0],
                        at=v[1],
                        passed=bool(v[2]),
                        status=v[3],
                        reasons=tuple(json.loads(v[4])),
                        statistics=json.loads(v[5]),
                        context=None if v[6] is None else context_from_json(v[6]),
                        machine=v[7],
                    )
                )
        return [
            Rewrite(
                id=r[0],
                file=r[1],
                region_name=r[2],
                region_hash=r[3],
                code=r[4],
                explanation=r[5],
                compile_args=tuple(json.loads(r[6])),
                targets=None if r[7] is None else tuple(json.loads(r[7])),
                context=None if r[8] is None else context_from_json(r[8]),
                statistics=json.loads(r[9]),
                model=r[10],
                trace=json.loads(r[11]),
                origin=r[12],
                state=RewriteState(r[13]),
                suspect=r[14],
                created_at=r[15],
                decisions=tuple(decisions.get(r[0], ())),
                verifications=tuple(verifications.get(r[0], ())),
            )
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
