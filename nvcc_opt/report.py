"""`nvcc-opt status` and `nvcc-opt explain`: what the build has seen and why each region did or did
not get a rewrite. Read-only."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

from nvcc_opt.launcher.plan import plan
from nvcc_opt.records import (
    AcceptedRewrite,
    CompileContext,
    CompileRecord,
    RegionRecord,
    Rewrite,
    RewriteState,
)
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store


def context_changes(verified: CompileContext | None, now: CompileContext | None) -> list[str]:
    """Names of the context fields that differ between a verification and the latest compile."""
    if verified is None or now is None:
        return []
    changed = []
    for field in dataclasses.fields(CompileContext):
        if getattr(verified, field.name) != getattr(now, field.name):
            changed.append(field.name)
    return changed


def latest_compile(region: RegionRecord) -> CompileRecord | None:
    return max(region.compiles, key=lambda c: c.last_seen, default=None)


def status(store: Store) -> list[dict[str, Any]]:
    rows = []
    rewrites = store.rewrites()
    for region in store.regions():
        last = latest_compile(region)
        mine = [r for r in rewrites if r.file == region.file and r.region_hash == region.text_hash]
        rows.append(
            {
                "file": region.file,
                "name": region.name,
                "lines": [region.start_line, region.end_line],
                "text_hash": region.text_hash,
                "last_seen": region.last_seen,
                "compiles": [
                    {"output": c.output, "cwd": c.cwd, "command": list(c.command)}
                    for c in region.compiles
                ],
                "rewrites": [
                    {
                        "id": r.id,
                        "state": r.state.value,
                        "suspect": r.suspect,
                        "context_changed": context_changes(
                            r.context, last.context if last else None
                        ),
                    }
                    for r in mine
                ],
            }
        )
    return rows


def format_status(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no regions seen yet: build with the nvcc-opt launcher first\n"
    out = []
    for row in rows:
        first, last = row["lines"]
        out.append(f"{row['file']}:{first}-{last} {row['name']} {row['text_hash'][:12]}")
        for compile_ in row["compiles"]:
            out.append(f"  compiled in {compile_['cwd']}: {shlex.join(compile_['command'])}")
        for rewrite in row["rewrites"]:
            line = f"  rewrite #{rewrite['id']} {rewrite['state']}"
            if rewrite["suspect"]:
                line += f" (suspect: {rewrite['suspect']})"
            if rewrite["context_changed"]:
                line += f" (changed since verification: {', '.join(rewrite['context_changed'])})"
            out.append(line)
        if not row["rewrites"]:
            out.append("  no rewrites")
    return "\n".join(out) + "\n"


def _as_accepted(rewrite: Rewrite) -> AcceptedRewrite:
    return AcceptedRewrite(
        id=rewrite.id,
        region_hash=rewrite.region_hash,
        code=rewrite.code,
        compile_args=rewrite.compile_args,
        targets=rewrite.targets,
        suspect=rewrite.suspect,
    )


def explain(store: Store, file: Path) -> list[str]:
    """One line per region of the file as it is now, plus scan warnings."""
    path = file.resolve()
    source = path.read_bytes()
    result = scan(source)
    lines = [f"{file}:{w.line}: warning: {w.message}" for w in result.warnings]
    if not result.regions:
        lines.append(f"{file}: no @optimize regions")
        return lines
    rewrites = store.rewrites(file=str(path))
    accepted = [_as_accepted(r) for r in rewrites if r.state is RewriteState.ACCEPTED]
    seen = {(r.name, r.text_hash): r for r in store.regions(file=str(path))}
    for region in result.regions:
        record = seen.get((region.name, region.text_hash))
        last = latest_compile(record) if record else None
        targets = last.context.targets if last else ()
        outcome = plan([region], accepted, targets).outcomes[0]
        why = outcome.why
        if outcome.rewrite is None:
            why = _why_not(region.text_hash, region.name, rewrites, why)
        if last is None:
            why += " (not compiled through nvcc-opt yet)"
        lines.append(f"{file}:{region.start_line}-{region.end_line} {region.name}: {why}")
    return lines


def _why_not(text_hash: str, name: str, rewrites: list[Rewrite], why: str) -> str:
    same = [r for r in rewrites if r.region_hash == text_hash]
    if any(r.state is RewriteState.ACCEPTED for r in same):
        return why
    proposed = [f"#{r.id}" for r in same if r.state is RewriteState.PROPOSED]
    if proposed:
        return f"rewrite {', '.join(proposed)} proposed, not accepted (nvcc-opt review)"
    stale = [f"#{r.id}" for r in rewrites if r.region_name == name and r.region_hash != text_hash]
    if stale:
        return f"rewrite {', '.join(stale)} was made for other text of this region: not applied"
    if same:
        return "its rewrites were rejected or revoked"
    return "no rewrite in the store"
