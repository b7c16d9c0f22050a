"""Timing statistics for interleaved baseline (A) and candidate (B) runs. Stdlib only.

Order. `schedule(repeats, warmup)` lists the runs: `warmup` untimed rounds ("warmup A",
"warmup B"), then `repeats` timed pairs in ABBA order (A B, B A, A B, ...). Pair i is the i-th
timed A with the i-th timed B. Alternating which side runs first cancels a steady drift (clocks,
temperature, a neighbour's load) inside the pairs; with plain A B A B the candidate would always
run a little later and a drift alone would look like a slowdown.

Test. `p_value` is the two-sided Wilcoxon signed-rank test of the per-pair log ratios
log(B_i / A_i). Pairing removes drift between pairs (Mann-Whitney U would ignore it), ranks bound
what one outlier run can do, magnitudes still count (a sign test drops them), and log ratios make A
and B symmetric. It is exact (midranks for ties, zero differences dropped) up to 50 pairs and a
normal approximation with tie correction beyond. With 5 pairs or fewer the smallest possible p is
2 / 2**n >= 0.0625: at alpha 0.05 a verdict needs at least 6 pairs.

Speedup and interval. speedup = median(A) / median(B). [ci_low, ci_high] is the (1 - alpha)
percentile bootstrap interval of that ratio, resampling whole pairs with `random.Random(seed)`, so
a comparison is reproducible.

Decision rule (first match):
- "faster": p < alpha and speedup >= min_speedup and ci_low > 1;
- "slower": p < alpha and speedup <= 1 / min_speedup (the minimum holds both ways, so two builds
  of the same code, or a real but negligible slowdown, are "no difference");
- "no difference" otherwise; the reason says which condition failed.

Stopping early. `hopeless(baseline, candidate, min_speedup)`: after some pairs (`[run]
stop_early_after`, 4 by default) not one pair has the candidate `min_speedup` faster. Timing the
rest cannot make it "faster" unless every later pair disagrees with every earlier one, so
`measure` stops and `compare(..., planned=N)` says "not faster" (a "no improvement"). It only ever
ends a comparison without a speedup: a candidate called faster has had every pair timed. Only
exploration stops early: the final verification times every pair, so a speedup found while
exploring is never thrown away by this rule. A true speedup at or above the minimum is stopped
this way with probability at most 2**-n (each pair falls below the minimum at most half the
time); a real 5% speedup whose pair ratios vary by 2% (one standard deviation), about once in
50,000 (tests/test_verify_stats.py simulates it).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Direction = Literal["faster", "slower", "no difference", "not faster"]

EXACT_MAX_PAIRS = 50  # beyond this the exact distribution costs more than the normal one is off
RESAMPLES = 2000


@dataclass(frozen=True)
class Sample:
    times: tuple[float, ...]
    median: float
    min: float
    max: float
    spread: float  # interquartile range / median
    n: int


@dataclass(frozen=True)
class Comparison:
    baseline: Sample
    candidate: Sample
    speedup: float  # baseline median / candidate median: above 1 is faster
    ci_low: float
    ci_high: float
    p_value: float
    verdict: Direction
    reason: str


def schedule(repeats: int, warmup: int) -> list[str]:
    """The order of runs: warm-ups ("warmup A", "warmup B"), then timed pairs A B, B A, A B, ..."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats} and {warmup}")
    order = ["warmup A", "warmup B"] * warmup
    for pair in range(repeats):
        order += ["A", "B"] if pair % 2 == 0 else ["B", "A"]
    return order


def summarize(times: Sequence[float]) -> Sample:
    """Median, extremes and relative interquartile spread of positive, finite run times."""
    values = tuple(float(t) for t in times)
    if not values:
        raise ValueError("no times to summarize")
    if not all(math.isfinite(t) and t > 0 for t in values):
        raise ValueError(f"run times must be positive and finite: {values}")
    median = statistics.median(values)
    return Sample(values, median, min(values), max(values), _iqr(values) / median, len(values))


def compare(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    min_speedup: float = 1.02,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = RESAMPLES,
    planned: int | None = None,
) -> Comparison:
    """Compare paired run times (`baseline[i]` and `candidate[i]` timed next to each other).
    `planned`: the pairs a measurement meant to time, when it stopped early (`hopeless`)."""
    base, cand = summarize(baseline), summarize(candidate)
    if base.n != cand.n:
        raise ValueError(f"runs come in pairs: {base.n} baseline vs {cand.n} candidate times")
    speedup = base.median / cand.median
    low, high = _bootstrap_ratio(base.times, cand.times, alpha, resamples, random.Random(seed))
    p = signed_rank_p([math.log(b / a) for a, b in zip(base.times, cand.times, strict=True)])
    summary = (
        f"speedup {speedup:.3f}x, {1 - alpha:.0%} CI {low:.3f}-{high:.3f}, "
        f"p={p:.3g}, {base.n} pairs"
    )
    verdict, why = _decide(speedup, low, p, base.n, min_speedup=min_speedup, alpha=alpha)
    if planned is not None and base.n < planned:
        verdict, least = "not faster", f"{min_speedup:.3f}x"
        why = f"not faster: stopped after {base.n} of {planned} pairs, none {least} faster"
    return Comparison(base, cand, speedup, low, high, p, verdict, f"{why} ({summary})")


def hopeless(baseline: Sequence[float], candidate: Sequence[float], min_speedup: float) -> bool:
    """No pair so far has the candidate `min_speedup` faster (see "Stopping early")."""
    pairs = list(zip(baseline, candidate, strict=True))
    if not pairs or any(b <= 0 for _, b in pairs):
        return False  # no pair yet, or a time `summarize` will refuse with its own error
    return all(a / b < min_speedup for a, b in pairs)


def signed_rank_p(differences: Sequence[float]) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test that `differences` center on zero."""
    nonzero = [d for d in differences if d != 0.0]
    if not nonzero:
        return 1.0
    ranks = _doubled_midranks([abs(d) for d in nonzero])
    w_plus = sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0)
    if len(ranks) <= EXACT_MAX_PAIRS:
        return _exact_p(ranks, w_plus)
    return _normal_p(ranks, w_plus)


def _decide(
    speedup: float, ci_low: float, p: float, pairs: int, *, min_speedup: float, alpha: float
) -> tuple[Direction, str]:
    smallest_p = min(1.0, 2.0 / (1 << pairs))
    if smallest_p >= alpha:
        return "no difference", (
            f"no difference: {pairs} pairs cannot show one at alpha {alpha:g} "
            f"(the smallest possible p is {smallest_p:.3g}); time more pairs"
        )
    if p >= alpha:
        return "no difference", "no difference: within the run-to-run noise"
    if speedup <= 1.0 / min_speedup:
        return "slower", "slower: beyond the run-to-run noise and the minimum"
    if speedup < 1.0:
        return "no difference", f"no difference: slower by less than the {min_speedup:.3f}x minimum"
    if speedup < min_speedup:
        return "no difference", f"no difference: below the {min_speedup:.3f}x minimum"
    if ci_low <= 1.0:
        return "no difference", "no difference: the interval reaches 1"
    return "faster", "faster: beyond the noise and the minimum"


def _iqr(values: tuple[float, ...]) -> float:
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


def _bootstrap_ratio(
    base: tuple[float, ...],
    cand: tuple[float, ...],
    alpha: float,
    resamples: int,
    rng: random.Random,
) -> tuple[float, float]:
    pairs = range(len(base))
    ratios = []
    for _ in range(resamples):
        pick = rng.choices(pairs, k=len(base))
        ratios.append(
            statistics.median([base[i] for i in pick]) / statistics.median([cand[i] for i in pick])
        )
    ratios.sort()
    tail = int(alpha / 2 * resamples)
    return ratios[tail], ratios[resamples - 1 - tail]


def _doubled_midranks(values: list[float]) -> list[int]:
    """Ranks of `values` from 1, tied values sharing their mean rank; doubled to stay integers."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = start + end + 2  # twice the mean of ranks start+1 .. end+1
        start = end + 1
    return ranks


def _exact_p(ranks: list[int], w_plus: int) -> float:
    total = sum(ranks)
    ways = [1] + [0] * total  # ways[s]: sign assignments whose positive ranks sum to s
    for r in ranks:
        for s in range(total, r - 1, -1):
            ways[s] += ways[s - r]
    tail = min(sum(ways[: w_plus + 1]), sum(ways[w_plus:]))
    return min(1.0, 2 * tail / (1 << len(ranks)))


def _normal_p(ranks: list[int], w_plus: int) -> float:
    mean = sum(ranks) / 2
    sd = math.sqrt(sum(r * r for r in ranks)) / 2
    z = max(0.0, abs(w_plus - mean) - 1) / sd  # continuity correction: half a rank, doubled
    return min(1.0, math.erfc(z / math.sqrt(2)))
