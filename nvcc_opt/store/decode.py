"""Records from a row's column values (by column name), the one decoding of the store's TEXT
columns: `api.Store` hands it SQLAlchemy rows' columns, `read.Reader` sqlite3 rows, so both give
the same records. Standard library only."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from nvcc_opt.records import (
    CompileRecord,
    Decision,
    RegionRecord,
    Rewrite,
    RewriteState,
    Verification,
)
from nvcc_opt.store.fast import context_from_json

Columns = Mapping[str, Any]


def compile_record(c: Columns) -> CompileRecord:
    return CompileRecord(
        output=c["output"],
        command=tuple(json.loads(c["command"])),
        cwd=c["cwd"],
        context=context_from_json(c["context"]),
        last_seen=c["last_seen"],
    )


def region_record(r: Columns, compiles: Iterable[CompileRecord]) -> RegionRecord:
    return RegionRecord(
        id=r["id"],
        file=r["file"],
        name=r["name"],
        kind=r["kind"],
        start_line=r["start_line"],
        end_line=r["end_line"],
        text_hash=r["text_hash"],
        text=r["text"],
        first_seen=r["first_seen"],
        last_seen=r["last_seen"],
        compiles=tuple(compiles),
    )


def decision_record(d: Columns) -> Decision:
    return Decision(
        rewrite_id=d["rewrite_id"],
        from_state=RewriteState(d["from_state"]),
        to_state=RewriteState(d["to_state"]),
        reason=d["reason"],
        at=d["at"],
        forced=bool(d["forced"]),
    )


def verification_record(v: Columns) -> Verification:
    return Verification(
        rewrite_id=v["rewrite_id"],
        at=v["at"],
        passed=bool(v["passed"]),
        status=v["status"],
        reasons=tuple(json.loads(v["reasons"])),
        statistics=json.loads(v["statistics"]),
        context=None if v["context"] is None else context_from_json(v["context"]),
        machine=v["machine"],
    )


def rewrite_record(
    r: Columns, decisions: Iterable[Decision], verifications: Iterable[Verification]
) -> Rewrite:
    return Rewrite(
        id=r["id"],
        file=r["file"],
        region_name=r["region_name"],
        region_hash=r["region_hash"],
        code=r["code"],
        explanation=r["explanation"],
        compile_args=tuple(json.loads(r["compile_args"])),
        targets=None if r["targets"] is None else tuple(json.loads(r["targets"])),
        context=None if r["context"] is None else context_from_json(r["context"]),
        statistics=json.loads(r["statistics"]),
        model=r["model"],
        trace=json.loads(r["trace"]),
        origin=r["origin"],
        state=RewriteState(r["state"]),
        suspect=r["suspect"],
        created_at=r["created_at"],
        decisions=tuple(decisions),
        verifications=tuple(verifications),
    )
