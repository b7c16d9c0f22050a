"""The search policy's answer text: what changed and its measured effect (the first line, which
reports show as "what changed"), the numerics it relies on, why each change was tried, what was
tried and not kept, and what the budget did not reach."""

from __future__ import annotations

from nvcc_opt.search.changes import Change
from nvcc_opt.tools.bench import Measured

CHECKS = (
    "The speedup is kept only because the project's checks still pass: the numbers and files "
    "of [check] compared with the original's under its rtol and atol, and the final "
    "verification's state check under [verify] state_rtol; looser tolerances let more through."
)
DEFAULT_WHY = "no measurement singled it out: the default order (structural changes first)"


def effect(measured: Measured) -> str:
    if measured.verdict in ("improved", "no improvement"):
        return f"{measured.speedup:.3f}x, {measured.verdict}"
    return f"{measured.verdict}: {measured.why}" if measured.why else measured.verdict


def _kind(kept: list[Change]) -> str:
    """What the first line says first when results change: with code changes, or without."""
    if not any(c.numerics for c in kept):
        return ""
    if not any(c.numerics and c.transform is None for c in kept):
        return "[code changes: results may differ in the last bits] "
    if any(c.transform is not None for c in kept):
        return "[code changes + fast math: results change] "
    return "[fast math, no code change: results change] "


def explain(
    kept: list[Change],
    alone: dict[str, tuple[Change, Measured]],
    notes: list[str],
    best: float,
    tried: list[Change],
) -> str:
    lines = []
    if kept:
        names = " + ".join(c.what for c in kept)
        lines.append(
            f"Search policy: {_kind(kept)}{names} ({best:.3f}x measured by benchmark_code)"
        )
        lines += [f"Numerics: {c.numerics}. {CHECKS}" for c in kept if c.numerics]
        lines.append("Changes:")
        lines += [f"- {c.what}: {effect(alone[c.name][1])} alone" for c in kept]
    else:
        lines.append("Search policy: no change was measured faster; the region is unchanged.")
    others = [pair for name, pair in alone.items() if name not in {c.name for c in kept}]
    if others:
        lines.append("Tried and not kept:")
        lines += [f"- {change.what}: {effect(measured)}" for change, measured in others]
    lines += [f"- {note}" for note in notes]
    if tried:
        lines.append("Why each was tried, in this order:")
        lines += [f"- {c.what}: {c.why or DEFAULT_WHY}" for c in tried]
    return "\n".join(lines)
