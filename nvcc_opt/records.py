"""Frozen value types shared by every layer.

Rows never leave the store: the store returns these records. Nothing here does I/O, and nothing
here may import anything heavier than the standard library (the launcher imports this module).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


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
class RegionSpan:
    """One `@optimize` region found in a source file (pure scan result, no I/O).

    Lines are 1-based and inclusive; offsets are byte offsets into the file: `start_offset` is the
    first byte of line `start_line`, `end_offset` is one past the last byte of line `end_line`
    (its line terminator included). `text_hash` is the sha256 hex digest of the region's bytes
    with CRLF normalised to LF.
    """

    name: str
    kind: str  # "function" (pragma above a definition) or "block" (begin/end)
    pragma_line: int
    start_line: int
    end_line: int
    start_offset: int
    end_offset: int
    text_hash: str


@dataclass(frozen=True)
class ScanWarning:
    """A malformed or unmatched pragma: reported as file:line, never fatal."""

    line: int
    message: str


@dataclass(frozen=True)
class ScanResult:
    regions: tuple[RegionSpan, ...]
    warnings: tuple[ScanWarning, ...]


@dataclass(frozen=True)
class CompileContext:
    """What a compile (or a verification) was done with; shown when it changes."""

    compiler_version: str = ""  # last lines of `nvcc --version`
    host_compiler: str = ""  # -ccbin value, or "" for nvcc's default
    flags: tuple[str, ...] = ()  # the compile's flags, without source/output/depfile names
    nvcc_env: tuple[tuple[str, str], ...] = ()  # NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS
    file_hash: str = ""  # sha256 of the whole source file
    targets: tuple[str, ...] = ()  # normalised GPU targets, e.g. ("sm_90",)


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


@dataclass(frozen=True)
class AcceptedRewrite:
    """What the launcher needs to substitute one region (read by the fast path)."""

    id: int
    region_hash: str
    code: str
    compile_args: tuple[str, ...]
    targets: tuple[str, ...] | None
    suspect: str = ""  # non-empty: an earlier substituted compile failed; the launcher skips it
