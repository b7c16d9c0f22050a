"""Review decisions and what a reviewer reads: the diff against the current region, the numbers.

A decision that changes what a build substitutes (accept, revoke) touches the region's stamp, so
the next incremental build recompiles exactly the translation units that hold the region.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nvcc_opt import paths, report
from nvcc_opt.records import RegionSpan, Rewrite, RewriteState
from nvcc_opt.regions.scan import region_text, scan

if TYPE_CHECKING:
    from nvcc_opt.store.api import Store

ACTIONS = {
    "accept": RewriteState.ACCEPTED,
    "reject": RewriteState.REJECTED,
    "revoke": RewriteState.REVOKED,
}


@dataclass(frozen=True)
class Decided:
    rewrite: Rewrite
    warning: str  # "" or why the next build may not notice the decision


class NeedsForce(Exception):
    """Accepting this rewrite needs --force; the message says why."""


def acceptance_problem(store: Store, rewrite: Rewrite) -> str:
    """Why accepting needs --force: never verified here, failed, passed with a caveat (runs
    not contained, not measured), or verified in another context."""
    last = rewrite.last_verification
    if last is None:
        return f"#{rewrite.id} was never verified here: run `nvcc-opt verify {rewrite.id}`"
    if not last.passed:
        why = "; ".join(last.reasons[:2]) or "no reason recorded"
        return f"#{rewrite.id}'s last verification ({last.at}) says {last.status}: {why}"
    if last.caveats:
        return (
            f"#{rewrite.id}'s last verification ({last.at}) passed, but {'; '.join(last.caveats)}"
            f" (verify it where runs are contained and measured)"
        )
    changed = report.changed_since_verification(store, rewrite)
    if changed:
        return (
            f"#{rewrite.id} was verified with another {', '.join(changed)} than the build uses"
            f" now: run `nvcc-opt verify {rewrite.id}` again"
        )
    return ""


def decide(
    store: Store, rewrite_id: int, action: str, reason: str = "", *, force: bool = False
) -> Decided:
    """Record the decision (StoreError if not allowed), then touch the stamp if builds care.

    Accepting a rewrite that is not verified here raises NeedsForce unless `force`; a forced
    acceptance is recorded as forced."""
    forced = False
    if action == "accept":
        problem = acceptance_problem(store, store.rewrite(rewrite_id))
        if problem and not force:
            raise NeedsForce(f"{problem} (or accept with --force)")
        forced = bool(problem)
    after = store.decide(rewrite_id, ACTIONS[action], reason, forced=forced)
    if RewriteState.ACCEPTED not in (after.decisions[-1].from_state, after.state):
        return Decided(after, "")  # rejecting a proposal changes nothing a build uses
    stamp = paths.stamp_path(store.path, after.file, after.region_name)
    try:
        paths.touch_stamp(stamp)
    except OSError as exc:
        return Decided(
            after, f"cannot touch {stamp} ({exc.strerror}): rebuild {after.file} by hand"
        )
    return Decided(after, "")


def current_region(rewrite: Rewrite) -> tuple[RegionSpan | None, str, str]:
    """The region as it is in the file now (span, text), and a note when it is gone or changed."""
    try:
        source = Path(rewrite.file).read_bytes()
    except OSError as exc:
        return None, "", f"cannot read {rewrite.file}: {exc.strerror}"
    regions = scan(source).regions
    for region in regions:
        if region.text_hash == rewrite.region_hash:
            return region, region_text(source, region), ""
    for region in regions:
        if region.name == rewrite.region_name:
            note = "the region's text changed since this rewrite was made: it will not apply"
            return region, region_text(source, region), note
    return None, "", f"region {rewrite.region_name!r} is no longer in {rewrite.file}"


def diff(rewrite: Rewrite) -> str:
    """A unified diff from the region as it is now to the rewrite, after any note."""
    region, text, note = current_region(rewrite)
    after = rewrite.code.splitlines(keepends=True)
    if after and not after[-1].endswith("\n"):
        after[-1] += "\n"
    where = f":{region.start_line}-{region.end_line}" if region else ""
    now = f"{rewrite.file}{where} ({rewrite.region_name}, now)"
    body = difflib.unified_diff(
        text.splitlines(keepends=True), after, now, f"rewrite #{rewrite.id}"
    )
    return (f"note: {note}\n" if note else "") + ("".join(body) or "no textual change\n")


def summary(rewrite: Rewrite) -> dict[str, object]:
    return {
        "id": rewrite.id,
        "state": rewrite.state.value,
        "file": rewrite.file,
        "region": rewrite.region_name,
        "region_hash": rewrite.region_hash,
        "compile_args": list(rewrite.compile_args),
        "targets": None if rewrite.targets is None else list(rewrite.targets),
        "suspect": rewrite.suspect,
        "caveats": list(caveats(rewrite)),
        "origin": rewrite.origin,
        "model": rewrite.model,
        "statistics": rewrite.statistics,
        "explanation": rewrite.explanation,
        "created_at": rewrite.created_at,
        "decisions": [
            {
                "from": d.from_state.value,
                "to": d.to_state.value,
                "reason": d.reason,
                "at": d.at,
                "forced": d.forced,
            }
            for d in rewrite.decisions
        ],
    }


def caveats(rewrite: Rewrite) -> tuple[str, ...]:
    """What the latest verification could not establish (its `unavailable:`, `unmeasured:`,
    `uncontained:` lines); () when never verified."""
    last = rewrite.last_verification
    return () if last is None else last.caveats


def describe(rewrite: Rewrite, changed: Sequence[str] = ()) -> str:
    """What the interactive review shows for one rewrite; `changed`: context fields that differ
    between its verification and the region's latest compile."""
    lines = [
        f"#{rewrite.id} [{rewrite.state.value}] {rewrite.file} region {rewrite.region_name!r}"
        f" ({rewrite.region_hash[:12]})",
        f"  origin: {rewrite.origin}" + (f", model {rewrite.model}" if rewrite.model else ""),
    ]
    if rewrite.compile_args:
        lines.append(f"  compile args: {' '.join(rewrite.compile_args)}")
    if rewrite.targets is not None:
        lines.append(f"  verified for: {', '.join(rewrite.targets)}")
    if changed:
        lines.append(f"  changed since verification: {', '.join(changed)}")
    if rewrite.statistics:
        lines.append(f"  numbers: {json.dumps(rewrite.statistics, sort_keys=True)}")
    if rewrite.suspect:
        lines.append(f"  SUSPECT: {rewrite.suspect}")
    lines += [f"  CAVEAT of the last verification: {c}" for c in caveats(rewrite)]
    for decision in rewrite.decisions:
        why = f": {decision.reason}" if decision.reason else ""
        lines.append(
            f"  {decision.at} {decision.from_state.value} -> {decision.to_state.value}{why}"
        )
    if rewrite.explanation:
        lines.append("  explanation: " + rewrite.explanation.strip().replace("\n", "\n    "))
    return "\n".join(lines) + "\n" + diff(rewrite)
