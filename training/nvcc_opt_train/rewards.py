"""The paper's GRPO reward (Nichols et al., arXiv 2510.17158, equations 2-4), as pure functions.

    r = r_perf + r_tools
    r_perf = -2                        if the final answer is incorrect (no valid final answer,
                                       a build failure, a guard's rejection, a wrong result)
           = -1                        if it is correct but not faster (t >= t_base)
           = min(10, t_base / t - 1)   otherwise
    r_tools = 0.5 * |unique tools used| / |tools offered|

`judged` turns nvcc-opt's independent final verification of a final answer (the verdict
`verify.final.verify_code` returns, the same one `nvcc-opt optimize` applies before it stores
anything) into the (correct, t_base, t) the equation takes. A model's own claims and the
benchmark_code numbers it saw never enter: a correct answer the verification did not find
significantly faster ("no improvement", "held for review") counts as t = t_base, so noise and
claims above the sanity ceiling earn no speed reward.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nvcc_opt.records import unestablished

INCORRECT = -2.0
NOT_FASTER = -1.0
CAP = 10.0
TOOL_WEIGHT = 0.5
IMPROVED = "improved"  # the only verdict status whose speedup is credited (verify.final.PASSED)


def r_perf(correct: bool, t_base: float, t: float) -> float:
    """Equation 3: the performance reward of one final answer.

    >>> r_perf(False, 1.0, 0.5)  # incorrect: whatever its time
    -2.0
    >>> r_perf(True, 1.0, 1.0)  # correct, not faster
    -1.0
    >>> r_perf(True, 1.0, 1.25)  # correct, slower
    -1.0
    >>> r_perf(True, 1.0, 0.5)  # twice as fast
    1.0
    >>> r_perf(True, 1.0, 0.01)  # 100x: capped at 10
    10.0
    """
    if not correct:
        return INCORRECT
    if not t_base > 0 or not t > 0 or t >= t_base:
        return NOT_FASTER
    return min(CAP, t_base / t - 1.0)


def r_tools(used: Iterable[str], offered: Iterable[str]) -> float:
    """Equation 4: half the share of the offered tools the rollout called at least once.
    Calls of tools that were not offered do not count.

    >>> r_tools([], ["benchmark_code", "search", "list_dir", "file_viewer"])
    0.0
    >>> r_tools(["benchmark_code", "benchmark_code", "search"], ["benchmark_code", "search",
    ...         "list_dir", "file_viewer"])
    0.25
    >>> r_tools(["benchmark_code", "made_up"], ["benchmark_code", "search"])
    0.25
    >>> r_tools(["search"], [])
    0.0
    """
    offered_set = set(offered)
    if not offered_set:
        return 0.0
    return TOOL_WEIGHT * len(set(used) & offered_set) / len(offered_set)


def reward(perf: float, tools: float) -> float:
    """Equation 2.

    >>> reward(-2.0, 0.25)
    -1.75
    """
    return perf + tools


@dataclass(frozen=True)
class Judged:
    """What the equation needs from one final verification."""

    correct: bool
    t_base: float
    t: float


def judged(
    status: str,
    baseline_s: float | None,
    candidate_s: float | None,
    reasons: Iterable[str] = (),
) -> Judged:
    """The verification's verdict (`Verdict.status`, its comparison's medians, its reasons and
    notes) as r_perf's inputs. Only "improved" credits the measured times, and only without a
    caveat (`records.unestablished`: a check the verification could not make, where a policy could
    learn to hide a cheat); "rejected" (build failure, guard, wrong result) is incorrect; any
    other status is correct but not faster.

    >>> judged("improved", 2.0, 1.0)
    Judged(correct=True, t_base=2.0, t=1.0)
    >>> judged("no improvement", 1.0, 0.99)
    Judged(correct=True, t_base=1.0, t=1.0)
    >>> judged("held for review", 1.0, 0.001)
    Judged(correct=True, t_base=1.0, t=1.0)
    >>> judged("improved", 2.0, 1.0, ["unmeasured: the runtime state check did not run"])
    Judged(correct=True, t_base=1.0, t=1.0)
    >>> judged("rejected", None, None)
    Judged(correct=False, t_base=1.0, t=1.0)
    >>> r_perf(*[getattr(judged("improved", 3.0, 1.0), f) for f in ("correct", "t_base", "t")])
    2.0
    """
    if status == "rejected":
        return Judged(False, 1.0, 1.0)
    timed = bool(baseline_s and candidate_s and baseline_s > 0 and candidate_s > 0)
    if status == IMPROVED and timed and not unestablished(reasons):
        return Judged(True, float(baseline_s or 0), float(candidate_s or 0))
    return Judged(True, 1.0, 1.0)


def judged_comparison(status: str, comparison: Any, reasons: Iterable[str] = ()) -> Judged:
    """`judged` of a verdict's comparison (`verify.stats.Comparison`, or None): t is the
    baseline's median over the *credited* speedup, every cap applied (nvcc-opt's own GPU and
    wall-time measurements, the changed inputs), never the candidate's printed median.

    >>> from types import SimpleNamespace as C
    >>> printed_4x = C(baseline=C(median=4.0), candidate=C(median=1.0), speedup=2.0)
    >>> judged_comparison("improved", printed_4x)
    Judged(correct=True, t_base=4.0, t=2.0)
    >>> judged_comparison("rejected", None)
    Judged(correct=False, t_base=1.0, t=1.0)
    """
    if comparison is None or not comparison.speedup > 0:
        return judged(status, None, None, reasons)
    base = float(comparison.baseline.median)
    return judged(status, base, base / float(comparison.speedup), reasons)


def perf_of(found: Judged | None) -> float:
    """r_perf of a rollout: None (no valid final answer) is incorrect.

    >>> perf_of(None)
    -2.0
    >>> perf_of(Judged(True, 4.0, 1.0))
    3.0
    """
    if found is None:
        return INCORRECT
    return r_perf(found.correct, found.t_base, found.t)
