"""A damaged store is moved aside, never silently replaced by an empty one.

Damaged: SQLite calls it corrupt or not a database, or the file is empty while its journal records
rewrites (truncated). The file (with its write-ahead log and shared memory) moves to
`<store>.damaged-<UTC time>`; the decisions come back with `nvcc-opt recover`, from the journal.
Standard library only: the launcher may find the damage.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time

from nvcc_opt.store import connections, journal

SIDE_FILES = ("", "-wal", "-shm")


def is_empty_but_journaled(db: str) -> bool:
    """An existing empty database file while the journal records rewrites: it was truncated."""
    try:
        empty = os.path.getsize(db) == 0
    except OSError:
        return False
    return empty and journal.has_entries(journal.path(db))


def _still_damaged(db: str) -> bool:
    """Checked again under the lock: another process may have moved or recovered it already."""
    if not os.path.exists(db):
        return False
    if is_empty_but_journaled(db):
        return True
    try:
        conn = connections.connect(db, write=False, timeout=connections.COMPILE_TIMEOUT_S)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return connections.cause(exc) == connections.DAMAGED
    return rows != [("ok",)]


def set_aside(db: str) -> str | None:
    """Move the damaged store aside; its new name, or None when it is no longer damaged.

    OSError when it cannot be moved (a folder this user cannot write)."""
    import fcntl

    with open(f"{db}.damage-lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _still_damaged(db):
            return None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        moved = f"{db}.damaged-{stamp}"
        suffix = 1
        while os.path.exists(moved):
            suffix += 1
            moved = f"{db}.damaged-{stamp}-{suffix}"
        for side in SIDE_FILES:
            with contextlib.suppress(FileNotFoundError):
                os.rename(f"{db}{side}", f"{moved}{side}")
        return moved


def message(db: str, reason: str, moved: str | None) -> str:
    """What to tell the user: what happened, where the file is, how to get the decisions back."""
    if moved is None:
        return f"store {db} looked damaged ({reason}) but was repaired meanwhile"
    log = journal.path(db)
    back = (
        f"`nvcc-opt recover` restores its rewrites and decisions from {log}"
        if journal.has_entries(log)
        else f"no journal ({log}) to restore its decisions from"
    )
    return f"store {db} is damaged ({reason}); moved it to {moved}; {back}"


def handle(db: str, reason: str) -> str:
    """Set the damaged store aside and say what happened (never raises)."""
    try:
        return message(db, reason, set_aside(db))
    except OSError as exc:
        return f"store {db} is damaged ({reason}) and could not be moved aside ({exc})"
