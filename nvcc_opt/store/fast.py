"""The launcher's store access: the standard library's sqlite3 only, a few ms per compile.

Every failure (locked past the busy timeout, corrupt, unreadable, a schema from another
nvcc-opt) is a `FastStoreError` naming the database, so the launcher can fail open and say why.
A missing database is not a failure: it holds no rewrites, and the first compile creates it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from nvcc_opt.store.errors import StoreError
from nvcc_opt.values import AcceptedRewrite, CompileContext, RegionSpan

SCHEMA_VERSION = 2  # must equal migrations.LATEST_VERSION (a test checks)
# The oldest schema whose columns the fast path reads: a launcher never refuses a store that an
# older nvcc-opt wrote only because a later migration added a table it does not read.
READS_FROM = 1
BUSY_TIMEOUT_S = 30.0  # long enough that a -j64 build never gives up waiting for a lock


class FastStoreError(Exception):
    """The store could not be used; the launcher passes the compile through unchanged."""


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


def _uri(db: str, mode: str) -> str:
    # By hand rather than pathlib's as_uri: pathlib and urllib cost milliseconds to import.
    path = os.path.abspath(db)
    for char, escape in (("%", "%25"), ("?", "%3f"), ("#", "%23")):
        path = path.replace(char, escape)
    return f"file:{path}?mode={mode}"


@contextmanager
def _connection(db: str, mode: str) -> Iterator[sqlite3.Connection]:
    """A connection that turns every sqlite3 error into a FastStoreError naming the db."""
    try:
        conn = sqlite3.connect(
            _uri(db, mode),
            uri=True,
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,
        )
        try:
            yield conn
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise FastStoreError(f"nvcc-opt store {db}: {exc}") from exc


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _require_version(conn: sqlite3.Connection, db: str) -> None:
    version = _version(conn)
    if not READS_FROM <= version <= SCHEMA_VERSION:
        raise FastStoreError(
            f"nvcc-opt store {db}: schema version {version}, this nvcc-opt reads {SCHEMA_VERSION}"
        )


def accepted_for(db_path: str, file: str, hashes: Sequence[str]) -> list[AcceptedRewrite]:
    """Accepted rewrites of `file` whose region hash is one of `hashes` (read-only)."""
    if not hashes or not os.path.exists(db_path):
        return []
    marks = ",".join("?" * len(hashes))
    with _connection(db_path, "ro") as conn:
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


def mark_suspect(db_path: str, rewrite_id: int, reason: str) -> bool:
    """Flag an accepted rewrite whose substituted compile failed.

    True when it was not already suspect, so the launcher says so once, not on every build.
    """
    if not os.path.exists(db_path):
        return False
    with _connection(db_path, "rw") as conn:
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
) -> None:
    """Remember the regions of `file` (span, text) and the command that compiled them to `output`.

    Relative `file` and `output` are taken relative to `cwd`. A rebuild that changes nothing only
    reads. A missing or older store is created or migrated first (the one case that imports the
    migrations module).
    """
    if not regions:
        return
    file = os.path.normpath(os.path.join(cwd, file))
    output = os.path.normpath(os.path.join(cwd, output))
    compile_row = (dumps(list(command)), cwd, context_to_json(context))
    if not os.path.exists(db_path):
        _create(db_path)
        from nvcc_opt import paths

        if not os.path.exists(paths.accepted_index(db_path)):
            paths.write_accepted_index(db_path, [])  # a new store accepts nothing yet
    with _connection(db_path, "rw") as conn:
        if _version(conn) < SCHEMA_VERSION:
            _create(db_path)
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


def _create(db: str) -> None:
    """Create or upgrade the store: rare, so the migrations module is imported only here."""
    from nvcc_opt.store import migrations

    try:
        migrations.migrate(db)
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
