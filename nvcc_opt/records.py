"""Frozen value types shared by every layer.

Rows never leave the store: the store returns these records. Nothing here does I/O. The types the
launcher's hot path needs live in `values.py` (no dataclasses: start-up time) and are re-exported.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from nvcc_opt.values import AcceptedRewrite, CompileContext, RegionSpan, ScanResult, ScanWarning

__all__ = [
    "ALLOWED_TRANSITIONS",
    "AcceptedRewrite",
    "CompileContext",
    "CompileRecord",
    "Decision",
    "NewRewrite",
    "RegionRecord",
    "RegionSpan",
    "Rewrite",
    "RewriteState",
    "ScanResult",
    "ScanWarning",
    "Verification",
]


class RewriteState(StrEnum):
    """proposed -> accepted | rejected; accepted -> revoked. Nothing else."""

    PROPOSED = "proposed"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REVOKED = "revoked"


ALLOWED_TRANSITIONS: dict[RewriteState, frozenset[RewriteState]] = {
    RewriteState.PROPOSED: frozenset({RewriteState.ACCEPTED, RewriteState.REJECTED}),
    RewriteState.ACCEPTED: frozenset({RewriteState.REVOKED}),
    RewriteState.REJECTED: frozenset(),
    RewriteState.REVOKED: frozenset(),
}


@dataclass(frozen=True)
class RegionRecord:
    """A region the build has seen, with its latest compile."""

    id: int
    file: str  # absolute path
    name: str
    kind: str
    start_line: int
    end_line: int
    text_hash: str
    text: str
    first_seen: str
    last_seen: str
    compiles: tuple[CompileRecord, ...] = ()


@dataclass(frozen=True)
class CompileRecord:
    """The exact command that compiled a region's translation unit, to rebuild it later."""

    output: str
    command: tuple[str, ...]
    cwd: str
    context: CompileContext
    last_seen: str


@dataclass(frozen=True)
class Decision:
    rewrite_id: int
    from_state: RewriteState
    to_state: RewriteState
    reason: str
    at: str
    forced: bool = False


# Reason lines that say what a verification could not establish on its machine. Kept with the
# reasons; accepting needs --force while the latest verification has one, even when it passed.
# - `unavailable:` this machine lacks a tool (no GPU, no compute-sanitizer, no channel library);
# - `unmeasured:` a check that did not complete for this verification (the sanitizer over the
#   first launches only, the state check not run, the baseline's channel reports missing);
# - `uncontained:` a run not contained (its processes could outlive it, or it could write what
#   it must not).
MACHINE_CAVEAT = "unavailable:"
RUN_CAVEATS = ("uncontained:", "unmeasured:")
CAVEATS = (*RUN_CAVEATS, MACHINE_CAVEAT)
# Set to 1 by an operator who knows the machine lacks a tool (a CPU-only test machine): then
# `unavailable:` lines no longer withhold credit. Never on a training machine with a GPU: a
# candidate that can write outside its build tree (the subreaper fallback) could make a tool
# look missing.
CREDIT_UNAVAILABLE = "NVCC_OPT_CREDIT_UNAVAILABLE"


def unestablished(reasons: Iterable[str]) -> tuple[str, ...]:
    """The caveat lines that withhold credit: a verification with one never credits a speedup
    where one is counted (training rewards, collect's filter, evaluations, bench reports). A
    check that could not be made is where a cheat would hide, and nobody watches a training run
    to read the notes. Every caveat, unless $NVCC_OPT_CREDIT_UNAVAILABLE is 1: then all but the
    machine's `unavailable:` lines.

    >>> unestablished(["improved", "unmeasured: compute-sanitizer took too long",
    ...                "unavailable: no GPU here"])
    ('unmeasured: compute-sanitizer took too long', 'unavailable: no GPU here')
    """
    withheld = RUN_CAVEATS if credit_unavailable() else CAVEATS
    return tuple(r for r in reasons if r.startswith(withheld))


def credit_unavailable() -> bool:
    """Whether the operator set $NVCC_OPT_CREDIT_UNAVAILABLE=1 (see CREDIT_UNAVAILABLE)."""
    return os.environ.get(CREDIT_UNAVAILABLE, "").strip() == "1"


@dataclass(frozen=True)
class Verification:
    """An independent verification of a rewrite: the verdict, its reasons and its numbers."""

    rewrite_id: int
    at: str
    passed: bool
    status: str  # "improved", "no improvement", "rejected", "held for review"
    reasons: tuple[str, ...]
    statistics: dict[str, object]
    context: CompileContext | None  # what it was verified with (compiler, flags, file, targets)
    machine: str

    @property
    def caveats(self) -> tuple[str, ...]:
        """The reason lines that start with one of CAVEATS."""
        return tuple(r for r in self.reasons if r.startswith(CAVEATS))


@dataclass(frozen=True)
class NewRewrite:
    """A rewrite as it arrives (import, later optimize), before the store gives it an id."""

    file: str  # absolute path
    region_name: str
    region_hash: str
    code: str
    explanation: str = ""
    compile_args: tuple[str, ...] = ()
    targets: tuple[str, ...] | None = None  # None: not bound to targets (never verified)
    context: CompileContext | None = None  # context it was verified with, if any
    statistics: dict[str, object] = field(default_factory=dict)
    model: str = ""
    trace: object = None
    origin: str = "import"


@dataclass(frozen=True)
class Rewrite:
    id: int
    file: str
    region_name: str
    region_hash: str
    code: str
    explanation: str
    compile_args: tuple[str, ...]
    targets: tuple[str, ...] | None
    context: CompileContext | None
    statistics: dict[str, object]
    model: str
    trace: object
    origin: str
    state: RewriteState
    suspect: str  # "" or why the last substituted compile failed
    created_at: str
    decisions: tuple[Decision, ...] = ()
    verifications: tuple[Verification, ...] = ()

    @property
    def last_verification(self) -> Verification | None:
        return self.verifications[-1] if self.verifications else None
