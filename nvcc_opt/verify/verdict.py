"""The verdict on one candidate, as the tools and `verify` report it. Pure.

Correct before timed: a candidate that failed to build, failed or skipped its correctness check, or
was stopped by a guard is "rejected" and carries no comparison, even when the caller timed it.
A speed is only ever reported for a correct candidate. Then, in order:
- no comparison: "no improvement" (correct, but nothing shows it faster);
- "faster" above `ceiling`: "held for review": a claim that large is more often a broken harness
  or skipped work than a real speedup, so a person looks before anything trusts it;
- "faster": "improved";
- "slower" or "no difference": "no improvement", with the comparison's reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from nvcc_opt.verify.checks import CheckResult
from nvcc_opt.verify.stats import Comparison

Status = Literal["rejected", "no improvement", "improved", "held for review"]

BUILD_ERROR_CHARS = 200  # the tool shows the whole log; the verdict names its first error


@dataclass(frozen=True)
class Verdict:
    compiled: bool
    correct: bool
    comparison: Comparison | None
    status: Status
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: tuples become lists, the comparison a nested dict or None."""
        return asdict(self, dict_factory=_lists_for_tuples)


def decide(
    compiled: bool,
    build_errors: str,
    check: CheckResult | None,
    comparison: Comparison | None,
    *,
    ceiling: float = 10.0,
    guard_reasons: Sequence[str] = (),
) -> Verdict:
    """Combine the build, the correctness check, the guards and the timing into one verdict."""
    correct = compiled and check is not None and check.ok
    if compiled and check is None and guard_reasons:  # refused before any check could run
        rejections = list(guard_reasons)  # (an "unchecked" first would hide why)
    else:
        rejections = [*_build_reasons(compiled, build_errors, check), *guard_reasons]
    if rejections:
        return Verdict(compiled, correct, None, "rejected", tuple(rejections))
    if comparison is None:
        return Verdict(True, True, None, "no improvement", ("untimed: no comparison was made",))
    if comparison.verdict == "faster" and comparison.speedup > ceiling:
        held = (
            f"ceiling: {comparison.speedup:.2f}x is above the {ceiling:g}x sanity ceiling; "
            "a person must review it"
        )
        return Verdict(True, True, comparison, "held for review", (held, comparison.reason))
    status: Status = "improved" if comparison.verdict == "faster" else "no improvement"
    return Verdict(True, True, comparison, status, (comparison.reason,))


def _build_reasons(compiled: bool, build_errors: str, check: CheckResult | None) -> list[str]:
    if not compiled:
        return [f"build_failed: {_first_error(build_errors)}"]
    if check is None:
        return ["unchecked: no correctness check ran"]
    if check.ok:
        return []
    return list(check.reasons) or ["check_failed: no reason given"]


def _first_error(log: str) -> str:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    first = (errors or lines or ["(no compiler output)"])[0]
    return first[:BUILD_ERROR_CHARS]


def _lists_for_tuples(items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, tuple) else value for key, value in items}
