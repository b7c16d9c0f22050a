"""Whether a speedup holds on inputs the candidate has never seen. Pure.

Every timed run repeats the program's own input, and so does every other run of the final
verification except the runtime state check's. A candidate can keep a shortcut for exactly that
input (a memo it trusts only when a value it knows the benchmark's input holds is there, a table of
the benchmark's answers) and compute honestly on anything else: every output check passes, the
state check's changed calls included, and the timed runs show a gain the application will never see
on its real data. No reading of the source finds every such test; a measurement does.

The state check's runs time each region call on the GPU (the channel's CUPTI records). After its
K checked calls the program goes on from the inputs the channel changed, with a salt drawn for
each verification, so no candidate can know them in advance: there every call computes on data the
candidate has not seen, in the program's own flow (no copies between calls). Call for call, the
candidate's region GPU time against the original's (the mean of its two runs) gives the speedup on
changed inputs; the timed runs' region GPU time gives it on the program's own. An honest rewrite
does the same work on both, so the two agree within noise. The rule: when the timed runs call the
region at least MIN_GAIN faster, the changed inputs must show at least HOLD_SHARE of that gain,
unless the two are within NOISE of each other. Both allowances widen with the noise the original
itself shows between its two state runs (SPREAD times their relative difference): a GPU that other
work shares moves every call's time, and the original's own runs measure by how much.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_GAIN = 0.05  # timed-run region speedups below 1 + this are not judged (noise)
HOLD_SHARE = 0.5  # of the timed runs' gain the changed inputs must show
NOISE = 0.10  # two speedups within this ratio of each other agree
SPREAD = 3  # allowances widen by this many times the original's own run-to-run difference
MIN_CALLS = 3  # changed-input calls needed for a judgement
MIN_CALL_NS = 2000  # calls shorter than this on average are launch noise


@dataclass(frozen=True)
class CallTimes:
    """The region's GPU nanoseconds per call in the state check's three runs (calls 1, 2, ...)
    and the number of checked calls K, after which the program runs on from changed inputs."""

    record: tuple[int, ...]
    again: tuple[int, ...]
    candidate: tuple[int, ...]
    checked: int


def changed_speedup(times: CallTimes) -> tuple[float | None, int, float]:
    """(the region's GPU speedup over the calls after the checked ones, how many calls it
    covers, the original's relative difference between its two runs over the same calls); the
    speedup is None when fewer than MIN_CALLS such calls ran or they are too short to time."""
    n = min(len(times.record), len(times.again), len(times.candidate))
    record: list[int] = []
    again: list[int] = []
    cand: list[int] = []
    for i in range(times.checked, n):  # call i + 1: inputs changed before call 2..K, not since
        a, b, c = times.record[i], times.again[i], times.candidate[i]
        if a and b and c:
            record.append(a)
            again.append(b)
            cand.append(c)
    base = (sum(record) + sum(again)) / 2
    if len(cand) < MIN_CALLS or base < MIN_CALL_NS * len(cand):
        return None, len(cand), 0.0
    spread = abs(sum(record) - sum(again)) / min(sum(record), sum(again))
    return base / sum(cand), len(cand), spread


def changed_input_reasons(
    timed_base_ns: Sequence[int], timed_cand_ns: Sequence[int], times: CallTimes | None
) -> tuple[list[str], list[str]]:
    """(rejection reasons, notes), from the timed runs' region GPU time per run and the state
    check's call times (None: the state check did not run; its own note says why).

    >>> t = CallTimes((10_000,) * 40, (10_000,) * 40, (9_000,) * 40, 3)
    >>> changed_input_reasons([400_000] * 5, [360_000] * 5, t)
    ([], [])
    >>> memo = CallTimes((10_000,) * 40, (10_000,) * 40, (10_000,) * 40, 3)
    >>> reasons, _ = changed_input_reasons([400_000] * 5, [100_000] * 5, memo)
    >>> reasons[0].split(":")[0], "4.00x" in reasons[0], "1.00x" in reasons[0]
    ('state', True, True)
    """
    if times is None or not timed_base_ns or not timed_cand_ns:
        return [], []
    base, cand = statistics.median(timed_base_ns), statistics.median(timed_cand_ns)
    if base <= 0 or cand <= 0:
        return [], []
    timed = base / cand
    if timed < 1 + MIN_GAIN:
        return [], []
    changed, calls, spread = changed_speedup(times)
    if changed is None:
        return [], [
            f"unmeasured: whether the region's {timed:.2f}x GPU speedup holds on changed inputs "
            f"({calls} timed calls after the state check's {times.checked}; {MIN_CALLS} needed)"
        ]
    widen = 1 + SPREAD * spread
    if changed * widen - 1 >= (timed - 1) * HOLD_SHARE or timed / changed <= (1 + NOISE) * widen:
        return [], []
    return [
        f"state: the region's GPU time is {timed:.2f}x faster in the timed runs, on the "
        f"program's own input, but {changed:.2f}x on inputs changed by nvcc-opt ({calls} calls "
        "after the checked ones): the candidate's speed depends on recognizing the benchmark's "
        "input"
    ], []
