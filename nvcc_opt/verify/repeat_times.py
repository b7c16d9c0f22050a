"""The state check's timing rule: calls whose inputs repeat may not get faster than the
original's do.

The state check (verify/state.py) changes the region's float and double data before calls 2..K
of its runs; every later call repeats the inputs of the call before it. A candidate that keeps
results across calls, even one that recomputes whenever it notices a change, does less work on
those repeated calls. The channel times each call on the GPU (calls 1..PER_CALL_TIMES one by
one, the rest as one sum), and two measures compare the candidate with the original's two runs:

- the median of calls K+1..TIMED_CALLS against the median of the changed calls 2..K: most
  repeated calls skipped;
- the mean of every call from K+1 to the run's end against the same: some repeated calls skipped
  (fewer than half), or only those late in the run.

A candidate's ratio may not fall more than REPEAT_DROP below the lower of the original's.
Both measures take the changed calls to stand for all calls, which holds only where the
original's calls are alike. Where they are not (levels of a multigrid, phases of a run), a
candidate faster on some kinds of call than others would look like one that skips work. There
the median compares only the repeated calls that take about as long as the changed ones in the
original (the same kind of call), the mean is left out, and a note says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from nvcc_opt.runtime import report

TIMED_CALLS = 64  # calls the median reads
PER_CALL_TIMES = 256  # calls the channel times one by one (channel.cpp's kMaxEpisodesTimed)
REPEAT_DROP = 0.2  # the candidate's repeated calls may not get this much faster than the original's
MIN_CALL_NS = 2000  # calls shorter than this are launch noise
ALIKE = 1.5  # the original's calls count as alike within this factor (10th to 90th percentile)


def repeat_reasons(
    record: report.State,
    again: report.State,
    cand: report.State,
    changed_until: int,
    complete: bool,
    notes: list[str],
) -> list[str]:
    """Rejection reasons (`state: ...`) of the rule, on the record run, the original's second
    run and the candidate's; `complete`: every run's GPU records all came (the mean needs
    them); what the rule could not judge goes to `notes`."""
    runs = (record, again, cand)
    measured = any(
        _median_ratio(s.call_ns, changed_until) is not None
        or _mean_ratio(s, changed_until) is not None
        for s in runs
    )
    if not measured or all(_alike(s, changed_until) for s in (record, again)):
        reasons = _median_reasons(runs, changed_until, None)
        if not reasons and complete:
            reasons = _mean_reasons(record, again, cand, changed_until)
        return reasons
    # Unlike calls: only the repeated calls about as long as the changed ones in the original
    # (the same kind of call: one level of a multigrid) are compared, by their median.
    like = _like(record, changed_until)
    notes.append(
        "state: the original's calls take unlike times on the GPU (more than "
        f"{ALIKE:g}x apart), so only its {len(like)} repeated calls up to the 64th that take "
        "about as long as its changed calls are compared with the candidate's, by their median"
    )
    return _median_reasons(runs, changed_until, like) if len(like) >= 3 else []


def _like(record: report.State, changed_until: int) -> list[int]:
    """Indices of the record's calls K+1..TIMED_CALLS within ALIKE of its changed calls' median."""
    changed = record.call_ns[1:changed_until]
    if not changed:
        return []
    base = statistics.median(changed)
    last = min(TIMED_CALLS, len(record.call_ns))
    return [
        i for i in range(changed_until, last) if base / ALIKE <= record.call_ns[i] <= base * ALIKE
    ]


def _median_reasons(
    runs: tuple[report.State, report.State, report.State],
    changed_until: int,
    like: list[int] | None,
) -> list[str]:
    record, again, cand = runs
    ratios = [_median_ratio(s.call_ns, changed_until, like) for s in (record, again)]
    mine = _median_ratio(cand.call_ns, changed_until, like)
    known = [r for r in ratios if r is not None]
    if mine is None or not known or min(known) - mine <= REPEAT_DROP:
        return []
    changed, repeated = _split(cand.call_ns, changed_until, like)
    return [
        f"state: the candidate's calls take {mine:.2f}x as long when their inputs repeat as when "
        f"they changed ({statistics.median(repeated) / 1e3:.1f} us vs "
        f"{statistics.median(changed) / 1e3:.1f} us on the GPU), the original's "
        f"{min(known):.2f}x: work is skipped on repeated inputs"
    ]


def _mean_reasons(
    record: report.State, again: report.State, cand: report.State, changed_until: int
) -> list[str]:
    ratios = [_mean_ratio(s, changed_until) for s in (record, again)]
    mine = _mean_ratio(cand, changed_until)
    known = [r for r in ratios if r is not None]
    if mine is None or not known or min(known) - mine <= REPEAT_DROP:
        return []
    late = cand.calls - changed_until
    return [
        f"state: over the {late} calls after its inputs stopped changing, the candidate's calls "
        f"take on average {mine:.2f}x as long on the GPU as when they changed, the original's "
        f"{min(known):.2f}x: work is skipped on repeated inputs, in some calls or late in the run"
    ]


def _split(
    call_ns: Sequence[int], changed_until: int, like: list[int] | None = None
) -> tuple[list[int], list[int]]:
    changed = list(call_ns[1:changed_until])  # calls 2..K: inputs changed just before
    if like is not None:  # only these of the calls K+1..
        return changed, [call_ns[i] for i in like if i < len(call_ns)]
    repeated = list(call_ns[changed_until:TIMED_CALLS])  # calls K+1..: nothing changed
    return changed, repeated


def _median_ratio(
    call_ns: Sequence[int], changed_until: int, like: list[int] | None = None
) -> float | None:
    changed, repeated = _split(call_ns, changed_until, like)
    if len(changed) < 1 or len(repeated) < 3:
        return None
    base = statistics.median(changed)
    if base < MIN_CALL_NS:
        return None
    return statistics.median(repeated) / base


def _mean_ratio(state: report.State, changed_until: int) -> float | None:
    """Mean GPU time of calls K+1..the last, over the median of calls 2..K; None where there are
    too few of either, they are too short to time, or a call's records did not all come."""
    changed = list(state.call_ns[1:changed_until])
    late_calls = state.calls - changed_until
    if not changed or late_calls < 3 or len(state.call_ns) != min(state.calls, PER_CALL_TIMES):
        return None
    base = statistics.median(changed)
    if base < MIN_CALL_NS:
        return None
    late_ns = sum(state.call_ns[changed_until:]) + state.late_ns
    return late_ns / late_calls / base


def _alike(state: report.State, changed_until: int) -> bool:
    """Whether the calls after the last change take about the same time (their 10th and 90th
    percentiles within ALIKE of each other, and the mean of those timed together, past
    PER_CALL_TIMES, within ALIKE of their median), and the changed calls about as long."""
    changed = list(state.call_ns[1:changed_until])
    repeated = list(state.call_ns[changed_until:])
    if not changed or len(repeated) < 3:
        return False
    cuts = statistics.quantiles(repeated, n=10)
    typical = statistics.median(repeated)
    middle = typical / max(statistics.median(changed), 1)
    if not (cuts[0] > 0 and cuts[-1] <= ALIKE * cuts[0] and 1 / ALIKE <= middle <= ALIKE):
        return False
    # the calls timed together, past PER_CALL_TIMES (where those before all came)
    beyond = state.calls - PER_CALL_TIMES if len(state.call_ns) == PER_CALL_TIMES else 0
    return beyond <= 0 or 1 / ALIKE <= state.late_ns / beyond / typical <= ALIKE
