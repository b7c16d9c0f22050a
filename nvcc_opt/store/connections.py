"""Opening the store's SQLite file: bounded waits, read-only stores, errors sorted by cause.

Standard library only (the launcher opens the store on its compile path). A store this user may
read but not write (another user's, an immutable folder) is opened read-only; where SQLite cannot
make its shared-memory file there and no write-ahead log is pending, `immutable=1` reads the
database file alone, which is then the whole truth.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3

# The compile path never waits longer than this for a lock held by another process: a held lock
# costs a build at most this per tagged compile, then the original is compiled and the build says
# why. Commands (review, import, ...) wait long enough that parallel builds never fail them.
COMPILE_TIMEOUT_S = 0.25
COMMAND_TIMEOUT_S = 30.0

LOCKED = "locked"
DAMAGED = "damaged"
READ_ONLY = "read-only"
OTHER = "other"


def uri(db: str, mode: str, *, immutable: bool = False) -> str:
    # By hand rather than pathlib's as_uri: pathlib and urllib cost milliseconds to import.
    path = os.path.abspath(db)
    for char, escape in (("%", "%25"), ("?", "%3f"), ("#", "%23")):
        path = path.replace(char, escape)
    return f"file:{path}?mode={mode}" + ("&immutable=1" if immutable else "")


def cause(exc: BaseException) -> str:
    """LOCKED, DAMAGED, READ_ONLY or OTHER: what a sqlite3 error means for the store."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return LOCKED
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text:
        return DAMAGED
    if "not a database" in text:
        return DAMAGED
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")) or "readonly" in text:
        return READ_ONLY
    return OTHER


def _pending_log(db: str) -> bool:
    try:
        return os.path.getsize(f"{db}-wal") > 0
    except OSError:
        return False


def connect(db: str, *, write: bool, timeout: float, pooled: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (callers BEGIN themselves) that has read the header.

    `write`: read-write, or read-only where this user cannot write (writes then fail as
    READ_ONLY); else read-only. `pooled`: handed from thread to thread by a pool that lends it
    to one thread at a time (api.Store's), so sqlite3's same-thread check is off. The database
    must exist. sqlite3.Error on failure."""
    import sqlite3  # here: a compile whose file the index rules out never loads it

    same = not pooled
    conn = sqlite3.connect(
        uri(db, "rw" if write else "ro"),
        uri=True,
        timeout=timeout,
        isolation_level=None,
        check_same_thread=same,
    )
    try:
        conn.execute("PRAGMA user_version").fetchone()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if cause(exc) != READ_ONLY or _pending_log(db):
            raise
    conn = sqlite3.connect(
        uri(db, "ro", immutable=True),
        uri=True,
        timeout=timeout,
        isolation_level=None,
        check_same_thread=same,
    )
    try:
        conn.execute("PRAGMA user_version").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def writable(db: str) -> bool:
    """Whether this user may write the database and make its side files beside it."""
    folder = os.path.dirname(os.path.abspath(db))
    return os.access(db, os.W_OK) and os.access(folder, os.W_OK | os.X_OK)


def activity(db: str) -> tuple[int, ...]:
    """What changes whenever any process commits to the store (its write-ahead log, or the
    file): equal readings a lock wait apart mean the lock is held with nothing happening."""
    reading: list[int] = []
    for name in (f"{db}-wal", db):
        try:
            found = os.stat(name)
            reading += [found.st_size, found.st_mtime_ns, found.st_ino]
        except OSError:
            reading += [-1, -1, -1]
    return tuple(reading)
