"""The decisions journal: every rewrite, decision and verification the store takes, appended as
JSON lines to `<store>.journal.jsonl`, so a damaged store can be rebuilt (`nvcc-opt recover`).

The store appends inside the transaction that writes the database, under its write lock, so the
journal's order is the database's. A journal that does not exist yet while the store holds
rewrites starts with a snapshot of them. Entries hold the database's column values as stored:
    {"v": 1, "op": "rewrite", "id": 3, "row": {...rewrites columns, without state...}}
    {"v": 1, "op": "decision", "key": <content_key>, "row": {...decisions columns...}}
    {"v": 1, "op": "verification", "key": <content_key>, "row": {...verifications columns...}}
Standard library only.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from typing import Any

VERSION = 1
REWRITE_COLUMNS = (
    "file",
    "region_name",
    "region_hash",
    "code",
    "explanation",
    "compile_args",
    "targets",
    "context",
    "statistics",
    "model",
    "trace",
    "origin",
    "created_at",
    "content_key",
)
DECISION_COLUMNS = ("from_state", "to_state", "reason", "at", "forced")
VERIFICATION_COLUMNS = ("at", "passed", "status", "reasons", "statistics", "context", "machine")

Entry = dict[str, Any]


def path(db: str | os.PathLike[str]) -> str:
    return f"{os.fspath(db)}.journal.jsonl"


def has_entries(journal: str) -> bool:
    try:
        return os.path.getsize(journal) > 0
    except OSError:
        return False


def rewrite_entry(rewrite_id: int, row: dict[str, Any]) -> Entry:
    return {"v": VERSION, "op": "rewrite", "id": rewrite_id, "row": _pick(row, REWRITE_COLUMNS)}


def decision_entry(key: str, row: dict[str, Any]) -> Entry:
    return {"v": VERSION, "op": "decision", "key": key, "row": _pick(row, DECISION_COLUMNS)}


def verification_entry(key: str, row: dict[str, Any]) -> Entry:
    return {
        "v": VERSION,
        "op": "verification",
        "key": key,
        "row": _pick(row, VERIFICATION_COLUMNS),
    }


def _pick(row: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    return {column: row[column] for column in columns}


def append(journal: str, entries: Sequence[Entry]) -> None:
    """Append whole lines in one write, and sync: a decision is kept once this returns."""
    if not entries:
        return
    data = "".join(json.dumps(e, sort_keys=True, ensure_ascii=True) + "\n" for e in entries)
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)


def read(journal: str) -> tuple[list[Entry], list[str]]:
    """The entries, and one problem per line that is not an entry (a line cut by a crash)."""
    entries: list[Entry] = []
    problems: list[str] = []
    with open(journal, encoding="ascii", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict) or entry.get("op") not in _APPLY:
                    raise ValueError("not a journal entry")
                if entry.get("v") != VERSION:
                    raise ValueError(f"journal version {entry.get('v')}, this nvcc-opt reads 1")
            except ValueError as exc:
                problems.append(f"{journal}:{number}: skipped: {exc}")
                continue
            entry["line"] = number
            entries.append(entry)
    return entries, problems


def snapshot(conn: sqlite3.Connection) -> list[Entry]:
    """Entries that rebuild every rewrite the database holds, with its decisions, verifications."""
    conn.row_factory = sqlite3.Row
    try:
        entries: list[Entry] = []
        for rewrite in conn.execute("SELECT * FROM rewrites ORDER BY id").fetchall():
            key = rewrite["content_key"]
            entries.append(rewrite_entry(rewrite["id"], dict(rewrite)))
            tables = (("decisions", decision_entry), ("verifications", verification_entry))
            for table, make in tables:
                rows = conn.execute(
                    f"SELECT * FROM {table} WHERE rewrite_id = ? ORDER BY id", (rewrite["id"],)
                )
                entries.extend(make(key, dict(row)) for row in rows)
        return entries
    finally:
        conn.row_factory = None


def replay(conn: sqlite3.Connection, entries: Sequence[Entry], journal: str) -> list[str]:
    """Insert the journal's rewrites, decisions and verifications into an open transaction of a
    database without rewrites; what could not be applied, one line each."""
    skipped: list[str] = []
    for entry in entries:
        why = _APPLY[entry["op"]](conn, entry)
        if why:
            skipped.append(f"{journal}:{entry['line']}: skipped: {why}")
    return skipped


def _rewrite_id(conn: sqlite3.Connection, key: str) -> tuple[int, str] | None:
    row = conn.execute("SELECT id, state FROM rewrites WHERE content_key = ?", (key,)).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def _apply_rewrite(conn: sqlite3.Connection, entry: Entry) -> str:
    row = entry["row"]
    if _rewrite_id(conn, row["content_key"]) is not None:
        return ""  # the same rewrite again (a snapshot after a lost journal): nothing to do
    taken = conn.execute("SELECT 1 FROM rewrites WHERE id = ?", (entry["id"],)).fetchone()
    columns = list(REWRITE_COLUMNS) + ["state", "suspect"] + ([] if taken else ["id"])
    values = [row[c] for c in REWRITE_COLUMNS] + ["proposed", ""] + ([] if taken else [entry["id"]])
    marks = ", ".join("?" * len(columns))
    conn.execute(f"INSERT INTO rewrites ({', '.join(columns)}) VALUES ({marks})", values)
    return ""


def _apply_decision(conn: sqlite3.Connection, entry: Entry) -> str:
    row = entry["row"]
    found = _rewrite_id(conn, entry["key"])
    if found is None:
        return "a decision on a rewrite the journal never added"
    rewrite_id, state = found
    if state != row["from_state"]:
        return f"rewrite #{rewrite_id} is {state}, the decision moves it from {row['from_state']}"
    if row["to_state"] == "accepted":
        other = conn.execute(
            "SELECT o.id FROM rewrites o JOIN rewrites r ON r.id = ? WHERE o.file = r.file"
            " AND o.region_hash = r.region_hash AND o.state = 'accepted'",
            (rewrite_id,),
        ).fetchone()
        if other is not None:
            return f"rewrite #{other[0]} of the same region is accepted already"
    conn.execute("UPDATE rewrites SET state = ? WHERE id = ?", (row["to_state"], rewrite_id))
    _insert(conn, "decisions", rewrite_id, row, DECISION_COLUMNS)
    return ""


def _apply_verification(conn: sqlite3.Connection, entry: Entry) -> str:
    found = _rewrite_id(conn, entry["key"])
    if found is None:
        return "a verification of a rewrite the journal never added"
    _insert(conn, "verifications", found[0], entry["row"], VERIFICATION_COLUMNS)
    return ""


def _insert(
    conn: sqlite3.Connection,
    table: str,
    rewrite_id: int,
    row: dict[str, Any],
    columns: Sequence[str],
) -> None:
    names = ", ".join(["rewrite_id", *columns])
    marks = ", ".join("?" * (len(columns) + 1))
    values = [rewrite_id, *(row[c] for c in columns)]
    conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", values)


_APPLY = {
    "rewrite": _apply_rewrite,
    "decision": _apply_decision,
    "verification": _apply_verification,
}
