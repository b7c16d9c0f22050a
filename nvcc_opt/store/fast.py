"""The launcher's store access: the standard library's sqlite3 only, a few ms per compile.

Every failure (locked past the compile path's short wait, damaged, unreadable, a schema from
another nvcc-opt) is a `FastStoreError` naming the database and its cause, so the launcher can
compile the original and say why. A damaged database is moved aside first (`damage`). A missing
database is not a failure: it holds no rewrites, and the first compile creates it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from nvcc_opt.store import connections
from nvcc_opt.store.errors import StoreError
from nvcc_opt.values import AcceptedRewrite, CompileContext, RegionSpan

SCHEMA_VERSION = 2  # must equal migrations.LATEST_VERSION (a test checks)
# The oldest schema whose columns the fast path reads: a launcher never refuses a store that an
# older nvcc-opt wrote only because a later migration added a table it does not read.
READS_FROM = 1
TIMEOUT_S = connections.COMPILE_TIMEOUT_S
# A parallel build's compiles wait for each other's writes up to this long, as long as the store
# shows progress; a lock held by an idle process is given up after one TIMEOUT_S.
CONTENDED_S = 10.0
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds on every compile
    from typing import NoReturn, TypeVar

    T = TypeVar("T")


class FastStoreError(Exception):
    """The store could not be used; the launcher passes the compile through unchanged.

    `cause`: one of `connections.LOCKED`, `DAMAGED`, `READ_ONLY`, `OTHER`."""

    def __init__(self, message: str, cause: str = connections.OTHER) -> None:
        super().__init__(message)
        self.cause = cause


def now() -> str:
    """The store's timestamp format: ISO-8601 UTC with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def dumps(value: object) -> str:
    """Canonical JSON, so that equal values compare equal as stored text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def context_to_json(context: CompileContext) -> str:
    return dumps(context.as_dict())


def context_from_json(text: str) -> CompileContext:
    data = json.loads(text)
    return CompileContext(
        compiler_version=data.get("compiler_version", ""),
        host_compiler=data.get("host_compiler", ""),
        flags=tuple(data.get("flags", ())),
        nvcc_env=tuple((str(k), str(v)) for k, v in data.get("nvcc_env", ())),
        file_hash=data.get("file_hash", ""),
        targets=tuple(data.get("targets", ())),
    )


@contextmanager
def _connection(db: str, *, write: bool, timeout: float) -> Iterator[sqlite3.Connection]:
    """A connection that turns every sqlite3 error into a FastStoreError naming the db; a
    damaged db is moved aside and the error says where."""
    try:
        conn = connections.connect(db, write=write, timeout=timeout)
        try:
            yield conn
        finally:
            conn.close()
    except sqlite3.Error as exc:
        _raise(db, str(exc), connections.cause(exc), exc)


def _raise(db: str, reason: str, cause: str, exc: BaseException | None = None) -> NoReturn:
    if cause == connections.DAMAGED:
        from nvcc_opt.store import damage

        raise FastStoreError(damage.handle(db, reason), cause) from exc
    raise FastStoreError(f"nvcc-opt store {db}: {reason}", cause) from exc


def _patiently(db: str, timeout: float, work: Callable[[], T]) -> T:
    """Run `work`, again while the store is locked but busy (other processes commit: a parallel
    build); give up when a lock stays held a whole `timeout` with nothing happening."""
    deadline = time.monotonic() + CONTENDED_S
    seen = connections.activity(db)
    while True:
        started = time.monotonic()
        try:
            return work()
        except FastStoreError as exc:
            if exc.cause != connections.LOCKED or time.monotonic() > deadline:
                raise
            if time.monotonic() - started < timeout / 2:
                time.sleep(0.005)  # SQLite answered "busy" without waiting: try again
                continue
            now = connections.activity(db)
            if now == seen:
                raise
            seen = now


def _check_not_truncated(db: str) -> None:
    from nvcc_opt.store import damage

    if damage.is_empty_but_journaled(db):
        _raise(db, "the file is empty, its journal is not", connections.DAMAGED)


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _require_version(conn: sqlite3.Connection, db: str) -> None:
    version = _version(conn)
    if not READS_FROM <= version <= SCHEMA_VERSION:
        raise FastStoreError(
            f"nvcc-opt store {db}: schema version {version}, this nvcc-opt reads {SCHEMA_VERSION}"
        )


def accepted_for(
    db_path: str, file: str, hashes: Sequence[str], timeout: float = TIMEOUT_S
) -> list[AcceptedRewrite]:
    """Accepted rewrites of `file` whose region hash is one of `hashes` (read-only).

    Use `accepted.lookup`, which the launcher and `explain` share, rather than this."""
    return _patiently(db_path, timeout, lambda: _accepted_for(db_path, file, hashes, timeout))


def _accepted_for(
    db_path: str, file: str, hashes: Sequence[str], timeout: float
) -> list[AcceptedRewrite]:
    if not hashes or not os.path.exists(db_path):
        return []
    _check_not_truncated(db_path)
    marks = ",".join("?" * len(hashes))
    with _connection(db_path, write=False, timeout=timeout) as conn:
        if _version(conn) == 0:
            return []  # created, not yet migrated: it holds nothing
        _require_version(conn, db_path)
        rows = conn.execute(
            "SELECT id, region_hash, code, compile_args, targets, suspect FROM rewrites"
            f" WHERE file = ? AND state = ? AND region_hash IN ({marks}) ORDER BY id",
            (file, "accepted", *hashes),
        ).fetchall()
    return [
        AcceptedRewrite(
            id=row[0],
            region_hash=row[1],
            code=row[2],
            compile_args=tuple(json.loads(row[3])),
            targets=None if row[4] is None else tuple(json.loads(row[4])),
            suspect=row[5],
        )
        for row in rows
    ]


def mark_suspect(db_path: str, rewrite_id: int, reason: str, timeout: float = TIMEOUT_S) -> bool:
    """Flag an accepted rewrite whose substituted compile failed.

    True when it was not already suspect, so the launcher says so once, not on every build.
    """
    return _patiently(db_path, timeout, lambda: _mark_suspect(db_path, rewrite_id, reason, timeout))


def _mark_suspect(db_path: str, rewrite_id: int, reason: str, timeout: float) -> bool:
    if not os.path.exists(db_path):
        return False
    with _connection(db_path, write=True, timeout=timeout) as conn:
        _require_version(conn, db_path)
        cursor = conn.execute(
            "UPDATE rewrites SET suspect = ? WHERE id = ? AND suspect = ''",
            (reason or "a substituted compile failed", rewrite_id),
        )
        return cursor.rowcount > 0


def record_compile(
    db_path: str,
    file: str,
    regions: Sequence[tuple[RegionSpan, str]],
    output: str,
    command: Sequence[str],
    cwd: str,
    context: CompileContext,
    timeout: float = TIMEOUT_S,
) -> None:
    """Remember the regions of `file` (span, text) and the command that compiled them to `output`.

    Relative `file` and `output` are taken relative to `cwd`. A rebuild that changes nothing only
    reads. A missing or older store is created or migrated first (the one case that imports the
    migrations module).
    """
    if not regions:
        return

    def work() -> None:
        _record(db_path, file, regions, output, command, cwd, context, timeout)

    _patiently(db_path, timeout, work)


def _record(
    db_path: str,
    file: str,
    regions: Sequence[tuple[RegionSpan, str]],
    output: str,
    command: Sequence[str],
    cwd: str,
    context: CompileContext,
    timeout: float,
) -> None:
    file = os.path.normpath(os.path.join(cwd, file))
    output = os.path.normpath(os.path.join(cwd, output))
    compile_row = (dumps(list(command)), cwd, context_to_json(context))
    _check_not_truncated(db_path)
    if not os.path.exists(db_path):
        _create(db_path, timeout)
        from nvcc_opt import paths

        if not os.path.exists(paths.accepted_index(db_path)):
            paths.write_accepted_index(db_path, [])  # a new store accepts nothing yet
    with _connection(db_path, write=True, timeout=timeout) as conn:
        if _version(conn) < SCHEMA_VERSION:
            _create(db_path, timeout)
        _require_version(conn, db_path)
        if _unchanged(conn, file, regions, output, compile_row):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            stamp = now()
            for span, text in regions:
                region_id = _upsert_region(conn, file, span, text, stamp)
                _upsert_compile(conn, region_id, output, compile_row, stamp)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _create(db: str, timeout: float) -> None:
    """Create or upgrade the store: rare, so the migrations module is imported only here."""
    from nvcc_opt.store import migrations

    try:
        migrations.migrate(db, timeout=timeout)
    except migrations.MigrationError as exc:
        _raise(db, exc.reason, exc.cause, exc)
    except StoreError as exc:
        raise FastStoreError(str(exc)) from exc


def _unchanged(
    conn: sqlite3.Connection,
    file: str,
    regions: Sequence[tuple[RegionSpan, str]],
    output: str,
    compile_row: tuple[str, str, str],
) -> bool:
    for span, _text in regions:
        row = conn.execute(
            "SELECT r.kind, r.start_line, r.end_line, c.command, c.cwd, c.context"
            " FROM regions r JOIN compiles c ON c.region_id = r.id AND c.output = ?"
            " WHERE r.file = ? AND r.name = ? AND r.text_hash = ?",
            (output, file, span.name, span.text_hash),
        ).fetchone()
        if row != (span.kind, span.start_line, span.end_line, *compile_row):
            return False
    return True


def _upsert_region(
    conn: sqlite3.Connection, file: str, span: RegionSpan, text: str, stamp: str
) -> int:
    conn.execute(
        "INSERT INTO regions (file, name, kind, start_line, end_line, text_hash, text,"
        " first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (file, name, text_hash) DO UPDATE SET kind = excluded.kind,"
        " start_line = excluded.start_line, end_line = excluded.end_line,"
        " last_seen = excluded.last_seen",
        (file, span.name, span.kind, span.start_line, span.end_line, span.text_hash, text)
        + (stamp, stamp),
    )
    row = conn.execute(
        "SELECT id FROM regions WHERE file = ? AND name = ? AND text_hash = ?",
        (file, span.name, span.text_hash),
    ).fetchone()
    return int(row[0])


def _upsert_compile(
    conn: sqlite3.Connection,
    region_id: int,
    output: str,
    compile_row: tuple[str, str, str],
    stamp: str,
) -> None:
    conn.execute(
        "INSERT INTO compiles (region_id, output, command, cwd, context, last_seen)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (region_id, output) DO UPDATE SET"
        " command = excluded.command, cwd = excluded.cwd, context = excluded.context,"
        " last_seen = excluded.last_seen",
        (region_id, output, *compile_row, stamp),
    )
