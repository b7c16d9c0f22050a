"""`nvcc-opt status` and `nvcc-opt explain`: what the build has seen and why each region did or did
not get a rewrite. Read-only."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nvcc_opt.launcher.plan import Plan, plan
from nvcc_opt.records import (
    CompileContext,
    CompileRecord,
    RegionRecord,
    RegionSpan,
    Rewrite,
    RewriteState,
)
from nvcc_opt.regions.headers import is_header, never_substituted
from nvcc_opt.regions.scan import scan
from nvcc_opt.store import accepted

if TYPE_CHECKING:
    from nvcc_opt.store.read import Reads


def context_changes(verified: CompileContext | None, now: CompileContext | None) -> list[str]:
    """Names of the context fields that differ between a verification and the latest compile."""
    if verified is None or now is None:
        return []
    return [
        field
        for field in CompileContext.__slots__
        if getattr(verified, field) != getattr(now, field)
    ]


def latest_compile(region: RegionRecord) -> CompileRecord | None:
    return max(region.compiles, key=lambda c: c.last_seen, default=None)


def verified_context(rewrite: Rewrite) -> CompileContext | None:
    """What the rewrite was last verified with: its latest verification here, else the context
    it arrived with (an import's claim)."""
    last = rewrite.last_verification
    if last is not None and last.context is not None:
        return last.context
    return rewrite.context


def changed_since_verification(store: Reads, rewrite: Rewrite) -> list[str]:
    """Context fields in which the latest compile of the rewrite's region text differs from the
    rewrite's verification; [] when never verified or never compiled."""
    last = latest_compile_of(store, rewrite)
    return context_changes(verified_context(rewrite), last.context if last else None)


def latest_compile_of(store: Reads, rewrite: Rewrite) -> CompileRecord | None:
    """The latest compile the build made of the rewrite's region text."""
    return latest_compile_of_text(store, rewrite.file, rewrite.region_hash)


def latest_compile_of_text(store: Reads, file: str, text_hash: str) -> CompileRecord | None:
    """The latest compile the build made of this region text of `file`."""
    same = [r for r in store.regions(file) if r.text_hash == text_hash]
    compiles = [c for r in same if (c := latest_compile(r)) is not None]
    return max(compiles, key=lambda c: c.last_seen, default=None)


def _context_json(context: CompileContext | None) -> dict[str, Any] | None:
    return None if context is None else context.as_dict()


def _rewrite_row(rewrite: Rewrite, last: CompileRecord | None) -> dict[str, Any]:
    return {
        "id": rewrite.id,
        "state": rewrite.state.value,
        "suspect": rewrite.suspect,
        "targets": None if rewrite.targets is None else list(rewrite.targets),
        "verified": rewrite.last_verification is not None and rewrite.last_verification.passed,
        "last_verification": None
        if rewrite.last_verification is None
        else {
            "status": rewrite.last_verification.status,
            "at": rewrite.last_verification.at,
            "machine": rewrite.last_verification.machine,
            "reasons": list(rewrite.last_verification.reasons),
        },
        "verified_context": _context_json(verified_context(rewrite)),
        "context_changed": context_changes(
            verified_context(rewrite), last.context if last else None
        ),
    }


def _region_row(region: RegionRecord, current: bool, mine: list[Rewrite]) -> dict[str, Any]:
    last = latest_compile(region)
    return {
        "file": region.file,
        "name": region.name,
        "kind": region.kind,
        "lines": [region.start_line, region.end_line],
        "text_hash": region.text_hash,
        "first_seen": region.first_seen,
        "last_seen": region.last_seen,
        "current": current,
        "compiles": [
            {
                "output": c.output,
                "cwd": c.cwd,
                "command": list(c.command),
                "context": _context_json(c.context),
                "last_seen": c.last_seen,
            }
            for c in region.compiles
        ],
        "rewrites": [_rewrite_row(r, last) for r in mine],
    }


def status(store: Reads) -> dict[str, Any]:
    """Every region seen (`current`: its latest text) with its rewrites, and the rewrites of
    region text no build has seen."""
    rewrites = store.rewrites()
    regions = store.regions()
    newest: dict[tuple[str, str], str] = {}
    for region in regions:
        key = (region.file, region.name)
        newest[key] = max(newest.get(key, ""), region.last_seen)
    seen = {(region.file, region.text_hash) for region in regions}
    rows = [
        _region_row(
            region,
            region.last_seen == newest[(region.file, region.name)],
            [r for r in rewrites if (r.file, r.region_hash) == (region.file, region.text_hash)],
        )
        for region in regions
    ]
    unseen = [
        {
            **_rewrite_row(r, None),
            "file": r.file,
            "region": r.region_name,
            "text_hash": r.region_hash,
        }
        for r in rewrites
        if (r.file, r.region_hash) not in seen
    ]
    return {"regions": rows, "unseen_rewrites": unseen}


def _format_rewrite(rewrite: dict[str, Any]) -> str:
    line = f"rewrite #{rewrite['id']} {rewrite['state']}"
    if rewrite["suspect"]:
        line += f"; suspect: {rewrite['suspect']}"
    last = rewrite["last_verification"]
    if last is None:
        line += "; not verified here"
    elif last["status"] != "improved":
        line += f"; last verification: {last['status']}"
    if rewrite["context_changed"]:
        line += f"; changed since verification: {', '.join(rewrite['context_changed'])}"
    return line


def _format_region(row: dict[str, Any]) -> list[str]:
    first, last = row["lines"]
    head = (
        f"{row['file']}:{first}-{last} {row['name']} ({row['kind']}), text {row['text_hash'][:12]}"
    )
    if not row["current"]:
        head += f"; older text, last seen {row['last_seen']}"
    out = [head]
    for compile_ in row["compiles"]:
        out.append(f"  compiled in {compile_['cwd']}: {shlex.join(compile_['command'])}")
    out.extend(f"  {_format_rewrite(r)}" for r in row["rewrites"])
    if not row["rewrites"]:
        out.append("  no rewrites")
    return out


def format_status(report: dict[str, Any]) -> str:
    out: list[str] = []
    for row in report["regions"]:
        out.extend(_format_region(row))
    if not report["regions"]:
        out.append("no regions seen yet: build with the nvcc-opt launcher first")
    if report["unseen_rewrites"]:
        out.append("rewrites of region text no build has seen:")
    for r in report["unseen_rewrites"]:
        where = f"{r['file']} {r['region']} (text {r['text_hash'][:12]})"
        out.append(f"  {where}: {_format_rewrite(r)}")
    return "\n".join(out) + "\n"


def _latest_targets(records: list[RegionRecord]) -> list[tuple[str, ...]]:
    """The GPU targets of each object file the file was last compiled into, distinct."""
    latest: dict[str, CompileRecord] = {}
    for record in records:
        for c in record.compiles:
            if c.output not in latest or c.last_seen > latest[c.output].last_seen:
                latest[c.output] = c
    return sorted({c.context.targets for c in latest.values()})


def _ids(rewrites: list[Rewrite]) -> str:
    return ", ".join(f"#{r.id}" for r in rewrites)


def _why_not(region: RegionSpan, rewrites: list[Rewrite]) -> str:
    """Why a region with no accepted rewrite for its text gets none."""
    same = [r for r in rewrites if r.region_hash == region.text_hash]
    reasons = []
    proposed = [r for r in same if r.state is RewriteState.PROPOSED]
    if proposed:
        reasons.append(f"rewrite {_ids(proposed)} proposed, not accepted (nvcc-opt review)")
    open_states = (RewriteState.PROPOSED, RewriteState.ACCEPTED)
    other = [
        r
        for r in rewrites
        if r.region_name == region.name and r.region_hash != region.text_hash
        if r.state in open_states
    ]
    if other:
        reasons.append(f"rewrite {_ids(other)} made for other text of this region: not applied")
    closed = [f"#{r.id} {r.state.value}" for r in same if r.state not in open_states]
    if closed and not reasons:
        reasons.append("rewrite " + ", ".join(closed))
    return "; ".join(reasons) or "no rewrite for this region in the store"


def _why(decided: Plan, index: int, found: accepted.Lookup, rewrites: list[Rewrite]) -> str:
    outcome = decided.outcomes[index]
    text_hash = outcome.region.text_hash
    if found.source == accepted.FAILED:
        return f"the build cannot read the store ({found.problem}): it compiles the original"
    if any(r.region_hash == text_hash for r in found.rewrites):
        return outcome.why  # the plan knows why it applies or not (suspect, targets, flags)
    mine = [r for r in rewrites if r.state is RewriteState.ACCEPTED and r.region_hash == text_hash]
    if mine and found.source == accepted.INDEX:
        return (
            f"rewrite {_ids(mine)} accepted, but the build does not apply it: the accepted-files"
            " index does not list this file (`nvcc-opt recover --index` rewrites it)"
        )
    return _why_not(outcome.region, rewrites)


def _targets_label(targets: tuple[str, ...]) -> str:
    return ",".join(targets) or "nvcc's default target"


def explain(store: Reads, file: Path) -> list[str]:
    """One line per region of the file as it is now, plus scan warnings. OSError if unreadable.

    What a build applies comes from `accepted.lookup`, the launcher's own look-up, so this says
    what the next build does."""
    path = file.resolve()
    result = scan(path.read_bytes())
    lines = [f"{file}:{w.line}: warning: {w.message}" for w in result.warnings]
    if not result.regions:
        return [*lines, f"{file}: no @optimize regions"]
    rewrites = store.rewrites(file=str(path))
    records = store.regions(file=str(path))
    targets = _latest_targets(records)
    found = accepted.lookup(str(store.path), str(path), [r.text_hash for r in result.regions])
    # Never compiled here: the targets are unknown, so a rewrite is not held to its own.
    given = [a if targets else a.replace(targets=None) for a in found.rewrites]
    plans = [(t, plan(result.regions, given, t)) for t in targets or [()]]
    compiled = {(r.name, r.text_hash) for r in records}
    for index, region in enumerate(result.regions):
        whys = {t: _why(decided, index, found, rewrites) for t, decided in plans}
        if len(set(whys.values())) == 1:
            why = next(iter(whys.values()))
        else:
            why = "; ".join(f"for {_targets_label(t)}: {w}" for t, w in whys.items())
        if not records and is_header(file):
            why = never_substituted(file)
        elif (region.name, region.text_hash) not in compiled:
            why += " (this text not compiled through nvcc-opt yet)"
        lines.append(f"{file}:{region.start_line}-{region.end_line} {region.name}: {why}")
    return lines
