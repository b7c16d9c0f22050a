"""Adding imported rewrites, and bringing back one that a team revoked or rejected.

A review decision is final: `records.ALLOWED_TRANSITIONS` has no way out of revoked or
rejected. Importing the same rewrite again (same content key) with a reopen reason is the one
way back: the same row becomes proposed again, with a decision from its state to proposed that
keeps the reason, after the decisions it already had. Without a reason, such an import changes
nothing and raises `Closed`, which names each rewrite.

This module works inside `Store`'s transaction helper, beside `api.py`, so that the whole import
(new rewrites and reopened ones) lands in one transaction or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import select

from nvcc_opt.records import NewRewrite, Rewrite, RewriteState
from nvcc_opt.store import journal
from nvcc_opt.store.api import (
    _WITH_DECISIONS,
    Store,
    _columns,
    _new_rewrite_row,
    _rewrite_record,
    content_key,
)
from nvcc_opt.store.errors import StoreError
from nvcc_opt.store.fast import now
from nvcc_opt.store.schema import DecisionRow, RewriteRow

REOPENABLE = frozenset({RewriteState.REVOKED, RewriteState.REJECTED})


class Outcome(StrEnum):
    IMPORTED = "imported"
    PRESENT = "already present"
    REOPENED = "reopened"


@dataclass(frozen=True)
class Added:
    rewrite: Rewrite
    outcome: Outcome


class Closed(StoreError):
    """Rewrites already here as revoked or rejected, by their index in the input; nothing was
    stored."""

    def __init__(self, message: str, closed: dict[int, Rewrite]) -> None:
        super().__init__(message)
        self.closed = closed


def add_or_reopen(store: Store, news: Sequence[NewRewrite], reopen: str | None) -> list[Added]:
    """Store each of `news` as proposed; one already here stays as it is, except one that is
    revoked or rejected: proposed again with the decision reason `reopen`, or, when `reopen` is
    None, `Closed` and nothing stored. One transaction."""
    try:
        rows = [_new_rewrite_row(new, content_key(new)) for new in news]
    except (TypeError, ValueError) as exc:
        raise StoreError(f"nvcc-opt store {store.path}: cannot store rewrite: {exc}") from exc
    added: list[Added] = []
    closed: dict[int, Rewrite] = {}
    entries: list[journal.Entry] = []  # the journal's copy, written inside the transaction
    with store._session(write=True) as session:
        for index, row in enumerate(rows):
            existing = session.scalars(
                select(RewriteRow)
                .options(*_WITH_DECISIONS)
                .where(RewriteRow.content_key == row.content_key)
            ).one_or_none()
            if existing is None:
                session.add(row)
                session.flush()
                added.append(Added(_rewrite_record(row), Outcome.IMPORTED))
                entries.append(journal.rewrite_entry(row.id, _columns(row)))
            elif RewriteState(existing.state) not in REOPENABLE:
                added.append(Added(_rewrite_record(existing), Outcome.PRESENT))
            elif reopen is None:
                closed[index] = _rewrite_record(existing)
            else:
                decision = _propose_again(existing, reopen)
                session.flush()
                added.append(Added(_rewrite_record(existing), Outcome.REOPENED))
                entries.append(journal.decision_entry(existing.content_key, _columns(decision)))
        if closed:  # leaving the transaction by an exception rolls every change back
            raise Closed(f"nvcc-opt store {store.path}: revoked or rejected rewrites", closed)
        store._journal(session, entries)
    return added


def _propose_again(row: RewriteRow, reason: str) -> DecisionRow:
    decision = DecisionRow(
        from_state=row.state,
        to_state=RewriteState.PROPOSED.value,
        reason=reason,
        at=now(),
        forced=False,
    )
    row.decisions.append(decision)
    row.state = RewriteState.PROPOSED.value
    return decision
