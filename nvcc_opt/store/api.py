"""The store's one interface: frozen records in and out, rows never leave this module."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from sqlalchemy import Connection, Engine, create_engine, event, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, selectinload
from sqlalchemy.pool import ConnectionPoolEntry, QueuePool

from nvcc_opt import paths
from nvcc_opt.records import (
    ALLOWED_TRANSITIONS,
    NewRewrite,
    RegionRecord,
    Rewrite,
    RewriteState,
    Verification,
)
from nvcc_opt.store import connections, damage, decode, journal, migrations
from nvcc_opt.store.errors import InvalidTransition, NotFound, StoreDamaged, StoreError
from nvcc_opt.store.fast import context_to_json, dumps, now
from nvcc_opt.store.schema import DecisionRow, RegionRow, RewriteRow, VerificationRow

__all__ = ["InvalidTransition", "NotFound", "Store", "StoreDamaged", "StoreError"]

_HEX_PREFIX = re.compile(r"[0-9a-f]{8,64}")
_WITH_DECISIONS = (selectinload(RewriteRow.decisions), selectinload(RewriteRow.verifications))


class Store:
    """Regions the build has seen, their compiles, rewrites and the review decisions on them.

    Contract:
    - Every method is one transaction: it sees a consistent snapshot and its writes land whole
      or not at all. A `Store` may be shared by threads, and any number of processes (builds,
      `nvcc-opt` commands) may use the same file at once; writers wait for each other (busy
      timeout), never corrupt or lose data.
    - Methods return frozen records from `nvcc_opt.records`: snapshots, never live rows, so
      changing the database later never changes a record already returned.
    - A rewrite starts PROPOSED and moves only along `records.ALLOWED_TRANSITIONS`
      (proposed -> accepted | rejected, accepted -> revoked); every move is kept as a `Decision`.
      At most one rewrite of a region (file, region hash) is ACCEPTED at a time.
    - Every failure is a `StoreError` (or a subclass) whose message names the database file.
    """

    def __init__(self, path: Path, engine: Engine) -> None:
        """Use `Store.open`."""
        self.path = path
        self._engine = engine

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Store:
        """Open the store at `path`, creating its folder and migrating it as needed.

        A store at the latest schema is only read on opening, so a read-only store opens (its
        writing methods then fail, saying so). A damaged store is moved aside: StoreDamaged says
        where and how to recover."""
        db = Path(path).absolute()
        if damage.is_empty_but_journaled(str(db)):
            raise StoreDamaged(damage.handle(str(db), "the file is empty, its journal is not"))
        try:
            migrations.migrate(db)
        except migrations.MigrationError as exc:
            if exc.cause == connections.DAMAGED:
                raise StoreDamaged(damage.handle(str(db), exc.reason)) from exc
            raise
        # one thread at a time per connection ("sqlite://" alone: a pool that broke 16 threads)
        engine = create_engine(
            "sqlite://",
            creator=lambda: connections.connect(
                str(db), write=True, timeout=migrations.BUSY_TIMEOUT_S, pooled=True
            ),
            poolclass=QueuePool,
            pool_size=8,
            max_overflow=-1,  # never a wait for a connection: SQLite's own locks serialize
        )
        event.listen(engine, "connect", _on_connect)
        event.listen(engine, "begin", _on_begin)
        store = cls(db, engine)
        if not os.path.exists(paths.accepted_index(db)):
            # without an index the launcher asks the database: slower, never wrong
            with contextlib.suppress(StoreError):
                store.write_accepted_index()
        return store

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _session(self, *, write: bool = False) -> Iterator[Session]:
        """The one place that commits, rolls back and makes database errors readable."""
        try:
            with Session(self._engine) as session, session.begin():
                # Writers take the write lock up front: a read transaction that later tries to
                # write can fail at once under concurrency instead of waiting its turn.
                session.connection(execution_options={"nvcc_opt_write": write})
                yield session
        except SQLAlchemyError as exc:
            reason = getattr(exc, "orig", None) or exc
            cause = connections.cause(reason)
            if cause == connections.DAMAGED:
                raise StoreDamaged(damage.handle(str(self.path), str(reason))) from exc
            if cause == connections.READ_ONLY:
                raise StoreError(
                    f"nvcc-opt store {self.path} is read-only here ({reason}): it can be read,"
                    " not changed"
                ) from exc
            raise StoreError(f"nvcc-opt store {self.path}: {reason}") from exc

    def _journal(self, session: Session, entries: list[journal.Entry]) -> None:
        """Append to the journal inside the writing transaction (under its lock, so in the
        database's order); a journal that is new starts with a snapshot of every rewrite."""
        log = journal.path(self.path)
        try:
            if not journal.has_entries(log):
                session.flush()
                raw = session.connection().connection.driver_connection
                assert isinstance(raw, sqlite3.Connection)
                entries = journal.snapshot(raw)
            journal.append(log, entries)
        except OSError as exc:
            raise StoreError(
                f"nvcc-opt store {self.path}: cannot write its journal {log} ({exc.strerror});"
                " nothing was changed"
            ) from exc

    def regions(self, file: str | None = None) -> list[RegionRecord]:
        """Regions (of one file, or all), each with its latest compiles, by file and line."""
        query = select(RegionRow).options(selectinload(RegionRow.compiles))
        if file is not None:
            query = query.where(RegionRow.file == os.path.abspath(file))
        query = query.order_by(RegionRow.file, RegionRow.start_line, RegionRow.id)
        with self._session() as session:
            return [_region_record(row) for row in session.scalars(query)]

    def find_region(self, file: str, name_or_hash: str) -> list[RegionRecord]:
        """Versions of a region of `file` by name, else by text hash or a unique prefix of it
        (at least 8 hex digits); most recently seen first. No match: an empty list."""
        base = (
            select(RegionRow)
            .options(selectinload(RegionRow.compiles))
            .where(RegionRow.file == os.path.abspath(file))
            .order_by(RegionRow.last_seen.desc(), RegionRow.id.desc())
        )
        with self._session() as session:
            rows = list(session.scalars(base.where(RegionRow.name == name_or_hash)))
            if not rows and _HEX_PREFIX.fullmatch(name_or_hash):
                rows = list(
                    session.scalars(base.where(RegionRow.text_hash.startswith(name_or_hash)))
                )
                self._check_unique_prefix(name_or_hash, rows)
            return [_region_record(row) for row in rows]

    def _check_unique_prefix(self, prefix: str, rows: list[RegionRow]) -> None:
        hashes = sorted({row.text_hash for row in rows})
        if len(hashes) > 1:
            shown = ", ".join(h[:12] for h in hashes)
            raise StoreError(
                f"nvcc-opt store {self.path}: hash prefix {prefix} is ambiguous ({shown});"
                " give more digits"
            )

    def add_rewrite(self, new: NewRewrite) -> tuple[Rewrite, bool]:
        """Store `new` as PROPOSED: (rewrite, True). The same content again: (existing, False)."""
        return self.add_rewrites([new])[0]

    def add_rewrites(self, news: Sequence[NewRewrite]) -> list[tuple[Rewrite, bool]]:
        """`add_rewrite` for several, in one transaction: all are stored, or none."""
        try:
            rows = [_new_rewrite_row(new, content_key(new)) for new in news]
        except (TypeError, ValueError) as exc:
            raise StoreError(f"nvcc-opt store {self.path}: cannot store rewrite: {exc}") from exc
        results: list[tuple[Rewrite, bool]] = []
        added: list[journal.Entry] = []
        with self._session(write=True) as session:
            for row in rows:
                existing = session.scalars(
                    select(RewriteRow)
                    .options(*_WITH_DECISIONS)
                    .where(RewriteRow.content_key == row.content_key)
                ).one_or_none()
                if existing is not None:
                    results.append((_rewrite_record(existing), False))
                    continue
                session.add(row)
                session.flush()
                results.append((_rewrite_record(row), True))
                added.append(journal.rewrite_entry(row.id, _columns(row)))
            self._journal(session, added)
        return results

    def rewrite(self, rewrite_id: int) -> Rewrite:
        with self._session() as session:
            return _rewrite_record(self._rewrite_row(session, rewrite_id))

    def rewrites(
        self,
        *,
        file: str | None = None,
        region_hash: str | None = None,
        states: Iterable[RewriteState] | None = None,
    ) -> list[Rewrite]:
        """Rewrites matching every filter given, oldest first."""
        query = select(RewriteRow).options(*_WITH_DECISIONS).order_by(RewriteRow.id)
        if file is not None:
            query = query.where(RewriteRow.file == os.path.abspath(file))
        if region_hash is not None:
            query = query.where(RewriteRow.region_hash == region_hash)
        if states is not None:
            query = query.where(RewriteRow.state.in_([s.value for s in states]))
        with self._session() as session:
            return [_rewrite_record(row) for row in session.scalars(query)]

    def decide(
        self, rewrite_id: int, to_state: RewriteState, reason: str = "", *, forced: bool = False
    ) -> Rewrite:
        """Move a rewrite to `to_state` and record the decision, in one transaction.

        `forced` records that the reviewer overrode a warning (changed context, a guard); it
        never allows a transition that `ALLOWED_TRANSITIONS` forbids.
        """
        with self._session(write=True) as session:
            row = self._rewrite_row(session, rewrite_id)
            from_state = RewriteState(row.state)
            if to_state not in ALLOWED_TRANSITIONS[from_state]:
                raise InvalidTransition(
                    f"nvcc-opt store {self.path}: rewrite #{rewrite_id} cannot go from"
                    f" {from_state.value} to {to_state.value}"
                )
            if to_state is RewriteState.ACCEPTED:
                self._check_none_accepted(session, row)
            row.state = to_state.value
            decision = DecisionRow(
                from_state=from_state.value,
                to_state=to_state.value,
                reason=reason,
                at=now(),
                forced=forced,
            )
            row.decisions.append(decision)
            session.flush()
            record = _rewrite_record(row)
            self._journal(session, [journal.decision_entry(row.content_key, _columns(decision))])
        self.write_accepted_index()
        return record

    def write_accepted_index(self) -> None:
        """Rewrite the file list the launcher reads before it opens the database: a compile of a
        file with no accepted rewrite never pays for SQLite."""
        with self._session() as session:
            files = session.scalars(
                select(RewriteRow.file).where(RewriteRow.state == RewriteState.ACCEPTED.value)
            ).all()
        try:
            paths.write_accepted_index(self.path, files)
        except OSError as exc:
            try:  # without an index the launcher asks the database: slower, never wrong
                os.unlink(paths.accepted_index(self.path))
            except FileNotFoundError:
                pass
            except OSError:
                raise StoreError(f"nvcc-opt store {self.path}: stale index: {exc}") from exc

    def _check_none_accepted(self, session: Session, row: RewriteRow) -> None:
        other = session.scalars(
            select(RewriteRow.id).where(
                RewriteRow.file == row.file,
                RewriteRow.region_hash == row.region_hash,
                RewriteRow.state == RewriteState.ACCEPTED.value,
                RewriteRow.id != row.id,
            )
        ).first()
        if other is not None:
            raise InvalidTransition(
                f"nvcc-opt store {self.path}: rewrite #{other} of region"
                f" {row.region_name} ({row.region_hash[:12]}) is already accepted;"
                f" revoke #{other} first"
            )

    def add_verification(self, verification: Verification) -> Rewrite:
        """Keep an independent verification of a rewrite; return the rewrite with it."""
        try:
            row = VerificationRow(
                rewrite_id=verification.rewrite_id,
                at=verification.at or now(),
                passed=verification.passed,
                status=verification.status,
                reasons=dumps(list(verification.reasons)),
                statistics=dumps(verification.statistics),
                context=None
                if verification.context is None
                else context_to_json(verification.context),
                machine=verification.machine,
            )
        except (TypeError, ValueError) as exc:
            raise StoreError(
                f"nvcc-opt store {self.path}: cannot store verification: {exc}"
            ) from exc
        with self._session(write=True) as session:
            rewrite = self._rewrite_row(session, verification.rewrite_id)
            session.add(row)
            session.flush()
            session.refresh(rewrite)
            entry = journal.verification_entry(rewrite.content_key, _columns(row))
            self._journal(session, [entry])
            return _rewrite_record(rewrite)

    def clear_suspect(self, rewrite_id: int) -> None:
        """Forget that a substituted compile of this rewrite failed."""
        with self._session(write=True) as session:
            self._rewrite_row(session, rewrite_id).suspect = ""

    def _rewrite_row(self, session: Session, rewrite_id: int) -> RewriteRow:
        row = session.scalars(
            select(RewriteRow).options(*_WITH_DECISIONS).where(RewriteRow.id == rewrite_id)
        ).one_or_none()
        if row is None:
            raise NotFound(f"nvcc-opt store {self.path}: no rewrite #{rewrite_id}")
        return row


def _on_connect(dbapi_conn: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
    # Autocommit at the driver, so that `_on_begin` decides how each transaction starts.
    dbapi_conn.isolation_level = None
    dbapi_conn.execute("PRAGMA foreign_keys=ON")


def _columns(row: object) -> dict[str, object]:
    """A mapped row's column values, as the journal keeps them."""
    columns = type(row).__table__.columns  # type: ignore[attr-defined]
    return {column.name: getattr(row, column.name) for column in columns}


def _on_begin(conn: Connection) -> None:
    write = conn.get_execution_options().get("nvcc_opt_write", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def content_key(new: NewRewrite) -> str:
    """What makes two rewrites the same: file, region hash, code, compile args, targets."""
    parts = [new.file, new.region_hash, new.code, list(new.compile_args), new.targets]
    return hashlib.sha256(dumps(parts).encode()).hexdigest()


def _new_rewrite_row(new: NewRewrite, key: str) -> RewriteRow:
    return RewriteRow(
        file=new.file,
        region_name=new.region_name,
        region_hash=new.region_hash,
        code=new.code,
        explanation=new.explanation,
        compile_args=dumps(list(new.compile_args)),
        targets=None if new.targets is None else dumps(list(new.targets)),
        context=None if new.context is None else context_to_json(new.context),
        statistics=json.dumps(new.statistics),
        model=new.model,
        trace=json.dumps(new.trace),
        origin=new.origin,
        state=RewriteState.PROPOSED.value,
        suspect="",
        created_at=now(),
        content_key=key,
        decisions=[],
    )


def _region_record(row: RegionRow) -> RegionRecord:
    compiles = [decode.compile_record(_columns(c)) for c in row.compiles]
    return decode.region_record(_columns(row), compiles)


def _rewrite_record(row: RewriteRow) -> Rewrite:
    return decode.rewrite_record(
        _columns(row),
        [decode.decision_record(_columns(d)) for d in row.decisions],
        [decode.verification_record(_columns(v)) for v in row.verifications],
    )
