"""Numbered schema migrations, recorded in `PRAGMA user_version`.

Each migration is frozen history written as explicit DDL (never `metadata.create_all`, which
always describes the newest schema), so a store of any age can be brought up to date step by
step. Standard library only: the launcher may create a store on a first compile without
importing SQLAlchemy. `schema.py` must describe the result; a test compares the two.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from nvcc_opt.store import connections
from nvcc_opt.store.errors import StoreError

BUSY_TIMEOUT_S = connections.COMMAND_TIMEOUT_S
WAL_RETRY_S = 0.01


def _m1_create_tables(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE regions (
            id INTEGER NOT NULL PRIMARY KEY,
            file TEXT NOT NULL,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            text_hash TEXT NOT NULL,
            text TEXT NOT NULL,
            first_seen TEXT NOT NULL,
            last_seen TEXT NOT NULL,
            CONSTRAINT uq_regions_file_name_hash UNIQUE (file, name, text_hash)
        )"""
    )
    conn.execute(
        """CREATE TABLE compiles (
            id INTEGER NOT NULL PRIMARY KEY,
            region_id INTEGER NOT NULL REFERENCES regions (id) ON DELETE CASCADE,
            output TEXT NOT NULL,
            command TEXT NOT NULL,
            cwd TEXT NOT NULL,
            context TEXT NOT NULL,
            last_seen TEXT NOT NULL,
            CONSTRAINT uq_compiles_region_output UNIQUE (region_id, output)
        )"""
    )
    conn.execute(
        """CREATE TABLE rewrites (
            id INTEGER NOT NULL PRIMARY KEY,
            file TEXT NOT NULL,
            region_name TEXT NOT NULL,
            region_hash TEXT NOT NULL,
            code TEXT NOT NULL,
            explanation TEXT NOT NULL,
            compile_args TEXT NOT NULL,
            targets TEXT,
            context TEXT,
            statistics TEXT NOT NULL,
            model TEXT NOT NULL,
            trace TEXT NOT NULL,
            origin TEXT NOT NULL,
            state TEXT NOT NULL,
            suspect TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            content_key TEXT NOT NULL,
            CONSTRAINT uq_rewrites_content_key UNIQUE (content_key)
        )"""
    )
    conn.execute("CREATE INDEX ix_rewrites_file_hash ON rewrites (file, region_hash)")
    conn.execute(
        """CREATE TABLE decisions (
            id INTEGER NOT NULL PRIMARY KEY,
            rewrite_id INTEGER NOT NULL REFERENCES rewrites (id) ON DELETE CASCADE,
            from_state TEXT NOT NULL,
            to_state TEXT NOT NULL,
            reason TEXT NOT NULL,
            at TEXT NOT NULL,
            forced BOOLEAN NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX ix_decisions_rewrite_id ON decisions (rewrite_id)")


def _m2_verifications(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE verifications (
            id INTEGER NOT NULL PRIMARY KEY,
            rewrite_id INTEGER NOT NULL REFERENCES rewrites (id) ON DELETE CASCADE,
            at TEXT NOT NULL,
            passed BOOLEAN NOT NULL,
            status TEXT NOT NULL,
            reasons TEXT NOT NULL,
            statistics TEXT NOT NULL,
            context TEXT,
            machine TEXT NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX ix_verifications_rewrite_id ON verifications (rewrite_id)")


# Migration N is MIGRATIONS[N - 1]. Append only; never edit one that has shipped.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _m1_create_tables,
    _m2_verifications,
)
LATEST_VERSION = len(MIGRATIONS)


class MigrationError(StoreError):
    """The store could not be created or upgraded; `cause` as in `connections.cause`."""

    def __init__(self, message: str, reason: str, cause: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.cause = cause


def _connect(path: str | os.PathLike[str], timeout: float) -> sqlite3.Connection:
    """A connection in autocommit mode (we issue BEGIN ourselves), WAL, with a busy timeout.

    Several processes opening a brand-new store at once (the first parallel build) race to turn
    it to WAL, and SQLite can answer "database is locked" at once there, without waiting out the
    busy timeout (seen in CI with 16 processes): that answer is retried until the timeout."""
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return conn
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                conn.close()
                raise
            time.sleep(WAL_RETRY_S)


def _current_version(db: Path, timeout: float) -> int | None:
    """The version of an existing, non-empty store, read without writing; None otherwise."""
    try:
        if db.stat().st_size == 0:
            return None
    except FileNotFoundError:
        return None
    conn = connections.connect(str(db), write=False, timeout=timeout)
    try:
        return _version(conn)
    finally:
        conn.close()


def migrate(path: str | os.PathLike[str], timeout: float | None = None) -> int:
    """Create or upgrade the store at `path`; return its schema version (always the latest).

    A store at the latest version is only read, so a read-only store opens. Safe when several
    processes open a new store at once: each step runs under an exclusive lock and re-reads the
    version after taking it. `timeout`: the longest wait for a lock (default BUSY_TIMEOUT_S).
    """
    db = Path(path)
    wait = BUSY_TIMEOUT_S if timeout is None else timeout
    version: int | None = None
    try:
        version = _current_version(db, wait)
        if version is not None:
            _check_not_newer(version, db)
            if version == LATEST_VERSION:
                return version
        db.parent.mkdir(parents=True, exist_ok=True)
        conn = _connect(db, wait)
        try:
            return _upgrade(conn, db)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        cause = connections.cause(exc)
        if cause == connections.READ_ONLY and version:
            message = (
                f"nvcc-opt store {db}: schema version {version} is older than this nvcc-opt's"
                f" {LATEST_VERSION} and cannot be upgraded here ({exc}); run any nvcc-opt"
                " command as a user who can write it, or use the nvcc-opt that wrote it"
            )
        else:
            message = f"nvcc-opt store {db}: cannot migrate: {exc}"
        raise MigrationError(message, str(exc), cause) from exc
    except OSError as exc:
        raise StoreError(f"nvcc-opt store {db}: cannot create: {exc}") from exc


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def _check_not_newer(version: int, db: Path) -> None:
    if version > LATEST_VERSION:
        raise StoreError(
            f"nvcc-opt store {db}: schema version {version} was written by a newer nvcc-opt "
            f"(this one knows up to {LATEST_VERSION}); upgrade nvcc-opt"
        )


def _upgrade(conn: sqlite3.Connection, db: Path) -> int:
    version = _version(conn)
    _check_not_newer(version, db)
    while version < LATEST_VERSION:
        conn.execute("BEGIN EXCLUSIVE")
        try:
            # Another process may have migrated while we waited for the lock.
            version = _version(conn)
            _check_not_newer(version, db)
            if version < LATEST_VERSION:
                MIGRATIONS[version](conn)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return version
