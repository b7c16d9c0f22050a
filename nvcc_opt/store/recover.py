"""Rebuilding a store's rewrites, decisions and verifications from its journal.

The regions and compiles the builds recorded are kept (or re-recorded by the next build); the
rewrites are replaced by the journal's, in the journal's order, in one transaction. Stamps of the
rewritten regions are touched, so the next build recompiles what the recovered decisions change.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, field

from nvcc_opt import paths
from nvcc_opt.store import connections, damage, journal, migrations
from nvcc_opt.store.errors import StoreError


@dataclass(frozen=True)
class Recovered:
    journal: str
    rewrites: int
    accepted: int
    moved: str  # "" or what happened to a damaged store found on the way
    skipped: list[str] = field(default_factory=list)  # lines of the journal not applied


def _usable(db: str) -> str:
    """Create or upgrade the store; a damaged one is moved aside first (the message, or "")."""
    if damage.is_empty_but_journaled(db):
        return damage.handle(db, "the file is empty, its journal is not")
    try:
        migrations.migrate(db)
    except migrations.MigrationError as exc:
        if exc.cause != connections.DAMAGED:
            raise
        moved = damage.handle(db, exc.reason)
        migrations.migrate(db)
        return moved
    return ""


def rebuild(db: str, *, force: bool = False) -> Recovered:
    """Replace the store's rewrites with the journal's. StoreError when there is no journal, or
    the store holds rewrites the journal lacks (unless `force`: they are dropped)."""
    log = journal.path(db)
    try:
        entries, problems = journal.read(log)
    except OSError as exc:
        raise StoreError(
            f"nvcc-opt store {db}: cannot read its journal {log} ({exc.strerror})"
        ) from exc
    moved = _usable(db)
    try:
        conn = connections.connect(db, write=True, timeout=connections.COMMAND_TIMEOUT_S)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                _check_nothing_lost(conn, db, entries, force)
                for table in ("verifications", "decisions", "rewrites"):
                    conn.execute(f"DELETE FROM {table}")
                skipped = journal.replay(conn, entries, log)
                rows = conn.execute("SELECT file, region_name, state FROM rewrites").fetchall()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"nvcc-opt store {db}: cannot recover: {exc}") from exc
    accepted = sorted({row[0] for row in rows if row[2] == "accepted"})
    _refresh_side_files(db, accepted, {(row[0], row[1]) for row in rows})
    count = sum(row[2] == "accepted" for row in rows)
    return Recovered(log, len(rows), count, moved, [*problems, *skipped])


def _check_nothing_lost(
    conn: sqlite3.Connection, db: str, entries: list[journal.Entry], force: bool
) -> None:
    keys = {e["row"]["content_key"] for e in entries if e["op"] == "rewrite"}
    held = conn.execute("SELECT id, content_key FROM rewrites ORDER BY id").fetchall()
    lost = [f"#{row[0]}" for row in held if row[1] not in keys]
    if lost and not force:
        raise StoreError(
            f"nvcc-opt store {db} holds rewrites its journal does not ({', '.join(lost)});"
            " recovering would drop them: `nvcc-opt export --state proposed --state accepted"
            " ...` first, or recover with --force"
        )


def _refresh_side_files(db: str, accepted: list[str], regions: set[tuple[str, str]]) -> None:
    paths.write_accepted_index(db, accepted)
    for file, region in sorted(regions):
        # a stamp only makes the next build notice sooner; the index is what counts
        with contextlib.suppress(OSError):
            paths.touch_stamp(paths.stamp_file(db, file, region))


def rewrite_index(db: str) -> list[str]:
    """Rewrite the accepted-files index from the store; the files it now lists."""
    try:
        conn = connections.connect(db, write=False, timeout=connections.COMMAND_TIMEOUT_S)
        try:
            rows = conn.execute("SELECT DISTINCT file FROM rewrites WHERE state = 'accepted'")
            files = sorted(row[0] for row in rows)
        finally:
            conn.close()
        paths.write_accepted_index(db, files)
    except sqlite3.Error as exc:
        raise StoreError(f"nvcc-opt store {db}: {exc}") from exc
    except OSError as exc:
        raise StoreError(f"nvcc-opt store {db}: cannot write its index ({exc})") from exc
    return files
