"""Whether a speedup holds on inputs the candidate has never seen. Pure.

Every timed run repeats the program's own input, and so does every other run of the final
verification except the runtime state check's. A candidate can keep a shortcut for exactly that
input (a memo it trusts only when a value it knows the benchmark's input holds is there, a table of
the benchmark's answers) and compute honestly on anything else: every output check passes, the
state check's changed calls included, and the timed runs show a gain the application will never see
on its real data. No reading of the source finds every such test; a measurement does.

The state check's three runs (the original twice, the candidate once) go through the same calls as
a timed run, but with the region's floating-point data changed before each of calls 2..K (salted
per check, so no candidate can know the changed values in advance), and every later call goes on
from there. nvcc-opt's channel measures the region's GPU time of each whole run. So the candidate's
total against the original's (the mean of its two runs) is its speedup on changed inputs, over the
same calls as the timed runs' speedup on the program's own: an honest rewrite does the same work on
both, and a gain that lives in the first call or in late calls shows on both sides alike.

The rule, for a candidate the timed runs call faster: when the region's GPU time in the timed runs
is at least MIN_GAIN faster, the state runs must show at least HOLD_SHARE of that gain, unless the
two are within NOISE of each other. HOLD_SHARE is low because data-dependent work (iteration
counts, fast paths) may shift on changed values; a shortcut for one input shows almost no gain at
all there. Both allowances widen with the noise the original shows between its own two state runs
(SPREAD times their relative difference): a GPU that other work shares moves every time.

What is credited is measured, never allowed for: of the printed time saved, the share of the
region's timed GPU time saved that is saved on the changed inputs too (`changed_input_share`:
the candidate against the faster of the original's two state runs, between 0 and 1), whatever
the size of the timed gain. The rule's allowances keep an honest rewrite from being rejected
for noise; they are no credit. A pure shortcut for the benchmark's input within them (up to 15%,
32% where the original's runs were 5% apart) or under MIN_GAIN was credited in full until
2026-12-08; its share is now about 0, so it keeps about nothing. A real gain with a shortcut on
top keeps about its real part, and an honest rewrite loses about the state run's own noise, in
proportion to the time it saves (a region that is a small part of the run loses a small part).
The faster of the original's two runs: the record run follows a candidate run, and a candidate
that left the GPU slower for the next process would otherwise raise its own share.

Where the original's two state runs are more than MAX_SPREAD apart, the rule's allowances would
be wide enough to pass a candidate with no gain at all on changed inputs: a candidate the rule
does not reject is then `unmeasured:` (a caveat: review asks for --force, and the speedup is
credited nowhere), not passed.

Not judged (a note says why): the region made one call per run (nothing after a change), the state
check changed nothing (the region reaches no float, double, half or bfloat16 data: integer and
struct data are never changed), or the region's GPU time is too short to compare.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_GAIN = 0.10  # timed-run region speedups below 1 + this are not judged
HOLD_SHARE = 0.25  # of the timed runs' gain the changed inputs must show
NOISE = 0.15  # two speedups within this ratio of each other agree
SPREAD = 3  # allowances widen by this many times the original's own run-to-run difference
MAX_SPREAD = 0.05  # the original's two state runs further apart than this: unmeasured, not passed
MIN_CALL_NS = 2000  # calls shorter than this on average are launch noise
NOTE = "changed inputs"  # the notes' prefix: a limit of the check, not an unmeasured check


@dataclass(frozen=True)
class StateTimes:
    """What the state check's three runs measured: the region's GPU nanoseconds in each whole
    run, its calls per run, and whether the check changed any input at all."""

    record_ns: int
    again_ns: int
    candidate_ns: int
    calls: int
    changed: bool


def changed_input_reasons(
    timed_base_ns: Sequence[int], timed_cand_ns: Sequence[int], times: StateTimes | None
) -> tuple[list[str], list[str]]:
    """(rejection reasons, notes), from the timed runs' region GPU time per run and the state
    check's (None: it did not run; its own note says why). Call it only for a candidate the
    timed runs call faster.

    >>> honest = StateTimes(4_000_000, 4_010_000, 2_100_000, 401, True)
    >>> changed_input_reasons([4_000_000] * 5, [2_000_000] * 5, honest)
    ([], [])
    >>> memo = StateTimes(4_000_000, 4_010_000, 3_990_000, 401, True)
    >>> reasons, _ = changed_input_reasons([4_000_000] * 5, [1_000_000] * 5, memo)
    >>> reasons[0].split(":")[0], "4.00x" in reasons[0], "1.00x" in reasons[0]
    ('state', True, True)
    """
    timed = _timed(timed_base_ns, timed_cand_ns) if times is not None else None
    if times is None or timed is None:
        return [], []
    unjudged = _unjudged(times)
    if unjudged:
        return [], [f"{NOTE}: whether the region's {timed:.2f}x GPU speedup holds on inputs "
                    f"other than the program's own was not measured ({unjudged})"]  # fmt: skip
    changed, widen = _changed(times)
    if changed * widen - 1 >= (timed - 1) * HOLD_SHARE or timed / changed <= (1 + NOISE) * widen:
        noisy = _too_noisy(times)
        return [], [noisy] if noisy else []
    return [
        f"state: the region's GPU time is {timed:.2f}x faster in the timed runs, on the "
        f"program's own input, but {changed:.2f}x over the same {times.calls} calls with the "
        "inputs nvcc-opt changed: the candidate's speed depends on recognizing the benchmark's "
        "input"
    ], []


def changed_input_share(
    timed_base_ns: Sequence[int], timed_cand_ns: Sequence[int], times: StateTimes | None
) -> float | None:
    """The share of the region's timed GPU time saved that is saved on the changed inputs too
    (the candidate against the faster of the original's two state runs), between 0 and 1, with
    no allowance for noise: what of a printed gain a candidate that passed
    `changed_input_reasons` may be credited (`credited.credited_speedup` applies it to the
    printed times). None where the state check could not measure it (`_unjudged`) or the
    region's GPU time is not lower in the timed runs (nothing of the printed gain is the region's
    to judge; nvcc-opt's own measurements bound that).

    In time saved, not in speedup ratios, so that a region that is a small part of the program
    loses only what it loses: a 3x region that is 15% of the run, 2.85x on changed inputs, keeps
    97% of the time it saves, and the program's 1.111x becomes 1.108x, not 1.056x.

    >>> both = StateTimes(4_000_000, 4_000_000, 2_000_000, 401, True)  # 2x honest, 4x timed
    >>> round(changed_input_share([4_000_000] * 5, [1_000_000] * 5, both), 4)  # 2 of 3 ms saved
    0.6667
    >>> changed_input_share([4_000_000] * 5, [2_000_000] * 5, both)  # honest: all of it holds
    1.0
    >>> changed_input_share([1_080_000] * 5, [1_000_000] * 5, StateTimes(
    ...     1_000_000, 1_000_000, 1_000_000, 401, True))  # a pure 8% shortcut: none holds
    0.0
    """
    if times is None or not timed_base_ns or not timed_cand_ns or _unjudged(times):
        return None
    base, cand = statistics.median(timed_base_ns), statistics.median(timed_cand_ns)
    if base <= 0 or cand <= 0 or cand >= base or times.candidate_ns <= 0:
        return None
    fastest = min(times.record_ns, times.again_ns)  # see the module's docstring
    saved = 1 - times.candidate_ns / fastest
    return round(min(1.0, max(0.0, saved / (1 - cand / base))), 6)


def _timed(timed_base_ns: Sequence[int], timed_cand_ns: Sequence[int]) -> float | None:
    """The timed runs' region GPU speedup where it is at least 1 + MIN_GAIN, else None."""
    if not timed_base_ns or not timed_cand_ns:
        return None
    base, cand = statistics.median(timed_base_ns), statistics.median(timed_cand_ns)
    if base <= 0 or cand <= 0 or base / cand < 1 + MIN_GAIN:
        return None
    return base / cand


def _changed(times: StateTimes) -> tuple[float, float]:
    """The region's speedup on the changed inputs, and how much the original's own spread
    between its two state runs widens the allowances."""
    original = (times.record_ns + times.again_ns) / 2
    return original / times.candidate_ns, 1 + SPREAD * _spread(times)


def _spread(times: StateTimes) -> float:
    """How far apart the original's two state runs are, relative to the faster."""
    low, high = sorted((times.record_ns, times.again_ns))
    return high / low - 1


def _too_noisy(times: StateTimes) -> str:
    """The `unmeasured:` caveat where the original's two state runs are too far apart to judge
    the candidate by (MAX_SPREAD), else ""."""
    low, high = sorted((times.record_ns, times.again_ns))
    if low <= 0 or _spread(times) <= MAX_SPREAD:
        return ""
    return (
        "unmeasured: whether the region's GPU speedup holds on inputs other than the program's "
        f"own could not be judged: the original's own two state runs took {low / 1e6:.3f} ms "
        f"and {high / 1e6:.3f} ms of region GPU time on the same changed inputs, more than "
        f"{MAX_SPREAD:.0%} apart"
    )


def _unjudged(times: StateTimes) -> str:
    if times.calls < 2:
        return "the region made one call per run: no call ran after a change"
    if not times.changed:
        return (
            "the state check changed no input: the region reaches no float, double, half or "
            "bfloat16 data through pointer parameters of those types"
        )
    if min(times.record_ns, times.again_ns, times.candidate_ns) <= 0:
        return "a state run measured no GPU time for the region"
    if times.record_ns < MIN_CALL_NS * times.calls:
        return "the region's calls are too short to compare"
    return ""
