"""The state check's timing rule: calls whose inputs repeat may not get faster than the
original's do.

The state check (verify/state.py) changes the region's floating-point data before calls 2..K
of its runs; every later call repeats the inputs of the call before it. A candidate that keeps
results across calls, even one that recomputes whenever it notices a change, does less work on
those repeated calls. The channel times each call on the GPU (calls 1..PER_CALL_TIMES one by
one, the rest as one sum), and two measures compare the candidate with the original's two runs:

- the median of calls K+1..TIMED_CALLS against the median of the changed calls 2..K: most
  repeated calls skipped;
- the mean of every call from K+1 to the run's end against the same: some repeated calls skipped
  (fewer than half), or only those late in the run.

A candidate's ratio may not fall more than REPEAT_DROP below the lower of the original's.

Where the region reaches no data the check changes (integers, structs), every call after
the first repeats its inputs, and a memo that computes once and then returns passes every
comparison of the copies. The one call no candidate can skip is then the first (nothing is
remembered yet in a new process), so the same two measures take call 1 as the base and calls
2.. as the repeated ones. One call is a noisy base, so there a candidate's ratio must fall below
FIRST_CALL_SHARE of the original's lower one, not REPEAT_DROP below it: a candidate that skips
most of its work on repeated calls is caught; one that skips a small part is not.
Both measures take the changed calls to stand for all calls, which holds only where the
original's calls are alike. Where they are not (levels of a multigrid, phases of a run), a
candidate faster on some kinds of call than others would look like one that skips work. There
the median compares only the repeated calls that take about as long as the changed ones in the
original (the same kind of call), the mean is left out, and a note says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from nvcc_opt.runtime import report

TIMED_CALLS = 64  # calls the median reads
PER_CALL_TIMES = 256  # calls the channel times one by one (channel.cpp's kMaxEpisodesTimed)
REPEAT_DROP = 0.2  # the candidate's repeated calls may not get this much faster than the original's
MIN_CALL_NS = 2000  # calls shorter than this are launch noise
ALIKE = 1.5  # the original's calls count as alike within this factor (10th to 90th percentile)
FIRST_CALL_SHARE = 0.5  # call 1 the only base: a candidate ratio under this share of the original's


def repeat_reasons(
    record: report.State,
    again: report.State,
    cand: report.State,
    changed_until: int,
    complete: bool,
    notes: list[str],
    changes_data: bool = True,
) -> list[str]:
    """Rejection reasons (`state: ...`) of the rule, on the record run, the original's second
    run and the candidate's; `complete`: every run's GPU records all came (the mean needs
    them); `changes_data`: the check changed the region's data before calls 2..changed_until
    (else call 1 is the base); what the rule could not judge goes to `notes`."""
    base = Base(1, changed_until) if changes_data else Base(0, 1)
    runs = (record, again, cand)
    measured = any(
        _median_ratio(s.call_ns, base) is not None or _mean_ratio(s, base) is not None for s in runs
    )
    if not measured or all(_alike(s, base) for s in (record, again)):
        reasons = _median_reasons(runs, base, None)
        if not reasons and complete:
            reasons = _mean_reasons(record, again, cand, base)
        return reasons
    # Unlike calls: only the repeated calls about as long as the base ones in the original
    # (the same kind of call: one level of a multigrid) are compared, by their median.
    like = _like(record, base)
    notes.append(
        "state: the original's calls take unlike times on the GPU (more than "
        f"{ALIKE:g}x apart), so only its {len(like)} repeated calls up to the 64th that take "
        f"about as long as its {base.name} are compared with the candidate's, by their median"
    )
    return _median_reasons(runs, base, like) if len(like) >= 3 else []


@dataclass(frozen=True)
class Base:
    """The calls (0-based, [start, end)) whose GPU time stands for a call that did all its work:
    the changed calls 2..K, or call 1 alone where the check changes nothing; calls from `end` on
    repeat their inputs."""

    start: int
    end: int

    @property
    def name(self) -> str:
        return "first call" if self.start == 0 else "changed calls"

    def limit(self, original: float) -> float:
        """The lowest ratio a candidate may show, given the original's."""
        if self.start == 0:  # call 1 alone: a noisy base
            return original * FIRST_CALL_SHARE
        return original - REPEAT_DROP


def _like(record: report.State, base: Base) -> list[int]:
    """Indices of the record's calls from base.end to TIMED_CALLS within ALIKE of its base
    calls' median."""
    based = record.call_ns[base.start : base.end]
    if not based:
        return []
    typical = statistics.median(based)
    last = min(TIMED_CALLS, len(record.call_ns))
    return [
        i for i in range(base.end, last) if typical / ALIKE <= record.call_ns[i] <= typical * ALIKE
    ]


def _median_reasons(
    runs: tuple[report.State, report.State, report.State],
    base: Base,
    like: list[int] | None,
) -> list[str]:
    record, again, cand = runs
    ratios = [_median_ratio(s.call_ns, base, like) for s in (record, again)]
    mine = _median_ratio(cand.call_ns, base, like)
    known = [r for r in ratios if r is not None]
    if mine is None or not known or mine >= base.limit(min(known)):
        return []
    based, repeated = _split(cand.call_ns, base, like)
    when = "they changed" if base.start else "they were first computed (call 1)"
    return [
        f"state: the candidate's calls take {mine:.2f}x as long when their inputs repeat as when "
        f"{when} ({statistics.median(repeated) / 1e3:.1f} us vs "
        f"{statistics.median(based) / 1e3:.1f} us on the GPU), the original's "
        f"{min(known):.2f}x: work is skipped on repeated inputs"
    ]


def _mean_reasons(
    record: report.State, again: report.State, cand: report.State, base: Base
) -> list[str]:
    ratios = [_mean_ratio(s, base) for s in (record, again)]
    mine = _mean_ratio(cand, base)
    known = [r for r in ratios if r is not None]
    if mine is None or not known or mine >= base.limit(min(known)):
        return []
    late = cand.calls - base.end
    after = "its inputs stopped changing" if base.start else "its first"
    when = "they changed" if base.start else "first computed"
    return [
        f"state: over the {late} calls after {after}, the candidate's calls "
        f"take on average {mine:.2f}x as long on the GPU as when {when}, the original's "
        f"{min(known):.2f}x: work is skipped on repeated inputs, in some calls or late in the run"
    ]


def _split(
    call_ns: Sequence[int], base: Base, like: list[int] | None = None
) -> tuple[list[int], list[int]]:
    based = list(call_ns[base.start : base.end])  # calls that did all their work
    if like is not None:  # only these of the repeated calls
        return based, [call_ns[i] for i in like if i < len(call_ns)]
    return based, list(call_ns[base.end : TIMED_CALLS])  # nothing changed before these


def _median_ratio(
    call_ns: Sequence[int], base: Base, like: list[int] | None = None
) -> float | None:
    based, repeated = _split(call_ns, base, like)
    if len(based) < 1 or len(repeated) < 3:
        return None
    typical = statistics.median(based)
    if typical < MIN_CALL_NS:
        return None
    return statistics.median(repeated) / typical


def _mean_ratio(state: report.State, base: Base) -> float | None:
    """Mean GPU time of the calls from base.end to the last, over the median of the base calls;
    None where there are too few of either, they are too short to time, or a call's records
    did not all come."""
    based = list(state.call_ns[base.start : base.end])
    late_calls = state.calls - base.end
    if not based or late_calls < 3 or len(state.call_ns) != min(state.calls, PER_CALL_TIMES):
        return None
    typical = statistics.median(based)
    if typical < MIN_CALL_NS:
        return None
    late_ns = sum(state.call_ns[base.end :]) + state.late_ns
    return late_ns / late_calls / typical


def _alike(state: report.State, base: Base) -> bool:
    """Whether the repeated calls take about the same time (their 10th and 90th percentiles
    within ALIKE of each other, and the mean of those timed together, past PER_CALL_TIMES,
    within ALIKE of their median), and the base calls about as long."""
    based = list(state.call_ns[base.start : base.end])
    repeated = list(state.call_ns[base.end :])
    if not based or len(repeated) < 3:
        return False
    cuts = statistics.quantiles(repeated, n=10)
    typical = statistics.median(repeated)
    middle = typical / max(statistics.median(based), 1)
    if not (cuts[0] > 0 and cuts[-1] <= ALIKE * cuts[0] and 1 / ALIKE <= middle <= ALIKE):
        return False
    # the calls timed together, past PER_CALL_TIMES (where those before all came)
    beyond = state.calls - PER_CALL_TIMES if len(state.call_ns) == PER_CALL_TIMES else 0
    return beyond <= 0 or 1 / ALIKE <= state.late_ns / beyond / typical <= ALIKE
