"""Timing statistics: seeded simulations of noise, drift and outliers against the decision rule."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Sequence

import pytest

from nvcc_opt.verify import stats
from nvcc_opt.verify.stats import compare, schedule, signed_rank_p, summarize

TRIALS = 200
# The rate tests exercise the decision, not the interval: 200 resamples keep them quick.
FAST_RESAMPLES = 200

Noise = Callable[[random.Random], float]


def gaussian(relative: float) -> Noise:
    return lambda rng: 1.0 + rng.gauss(0.0, relative)


def spiky(relative: float, chance: float, spike: float) -> Noise:
    """Gaussian noise plus now and then a much slower run (another process, a clock change)."""
    return lambda rng: (1.0 + rng.gauss(0.0, relative)) * (spike if rng.random() < chance else 1.0)


def timed_order(pairs: int) -> list[str]:
    return schedule(pairs, warmup=0)


def simulate(
    rng: random.Random,
    order: Sequence[str],
    *,
    ratio: float,
    noise: Noise,
    drift: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Run times in `order`: B takes `ratio` times as long as A; run k is slowed by drift * k."""
    times: dict[str, list[float]] = {"A": [], "B": []}
    for k, label in enumerate(order):
        mean = 1.0 if label == "A" else ratio
        times[label].append(mean * (1.0 + drift * k) * noise(rng))
    return times["A"], times["B"]


def verdicts(
    order: Sequence[str], *, ratio: float, noise: Noise, drift: float = 0.0, seed: int = 1
) -> Counter[str]:
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    for trial in range(TRIALS):
        a, b = simulate(rng, order, ratio=ratio, noise=noise, drift=drift)
        counts[compare(a, b, seed=trial, resamples=FAST_RESAMPLES).verdict] += 1
    return counts


def test_schedule_marks_warmups_then_alternates_which_side_goes_first() -> None:
    assert schedule(4, warmup=2) == [
        "warmup A", "warmup B", "warmup A", "warmup B",
        "A", "B", "B", "A", "A", "B", "B", "A",
    ]  # fmt: skip
    assert schedule(1, warmup=0) == ["A", "B"]
    with pytest.raises(ValueError):
        schedule(0, warmup=1)


def test_summarize_reports_median_extremes_and_relative_spread() -> None:
    sample = summarize([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (sample.median, sample.min, sample.max, sample.n) == (3.0, 1.0, 5.0, 5)
    assert sample.times == (4.0, 1.0, 3.0, 2.0, 5.0)
    assert sample.spread == pytest.approx((4.0 - 2.0) / 3.0)
    assert summarize([2.0]).spread == 0.0


@pytest.mark.parametrize("times", [[], [1.0, 0.0], [1.0, float("nan")], [float("inf")], [-1.0]])
def test_summarize_refuses_times_that_are_not_positive_and_finite(times: list[float]) -> None:
    with pytest.raises(ValueError):
        summarize(times)


def test_compare_needs_pairs() -> None:
    with pytest.raises(ValueError, match="pairs"):
        compare([1.0, 1.0, 1.0], [1.0, 1.0])


def _brute_force_p(differences: Sequence[float]) -> float:
    """Every sign assignment of the ranks, counted: the definition of the exact test."""
    nonzero = [d for d in differences if d != 0]
    magnitudes = sorted(abs(d) for d in nonzero)
    ranks = [
        sum(i + 1 for i, m in enumerate(magnitudes) if m == abs(d)) / magnitudes.count(abs(d))
        for d in nonzero
    ]
    observed = sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0)
    sums = [
        sum(itertools.compress(ranks, signs))
        for signs in itertools.product([0, 1], repeat=len(ranks))
    ]
    tail = min(sum(s <= observed for s in sums), sum(s >= observed for s in sums))
    return min(1.0, 2 * tail / len(sums))


@pytest.mark.parametrize(
    "differences",
    [
        [1, 2, 3, 4, 5],
        [0.3, -1.2, 2.5, 0.7, 1.1, -0.2, 3.0],
        [1, -1, 2, 2, -3, 3, 3, 0, 4],  # ties and a zero
        [0.01 * k * (-1) ** (k % 3 == 0) for k in range(1, 13)],
    ],
)
def test_signed_rank_p_is_exact_for_small_samples(differences: list[float]) -> None:
    assert signed_rank_p(differences) == pytest.approx(_brute_force_p(differences))


@pytest.mark.parametrize("shift", [0.0, 0.2, 0.4])
def test_signed_rank_p_normal_approximation_agrees_with_the_exact_test(
    shift: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    differences = [rng.gauss(shift, 1.0) for _ in range(50)]
    exact = signed_rank_p(differences)
    monkeypatch.setattr(stats, "EXACT_MAX_PAIRS", 0)
    assert signed_rank_p(differences) == pytest.approx(exact, rel=0.05, abs=0.002)


def test_signed_rank_p_of_no_differences_is_one() -> None:
    assert signed_rank_p([0.0, 0.0, 0.0]) == 1.0


@pytest.mark.parametrize("pairs", [5, 10, 15])
@pytest.mark.parametrize("noise", [gaussian(0.005), spiky(0.02, 0.05, 1.3)])
def test_identical_code_shows_no_difference(pairs: int, noise: Noise) -> None:
    counts = verdicts(timed_order(pairs), ratio=1.0, noise=noise)
    assert counts["no difference"] >= 0.95 * TRIALS, counts


def test_five_pairs_can_never_show_a_difference() -> None:
    result = compare([1.0, 1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0, 2.0])
    assert result.verdict == "no difference"
    assert "5 pairs cannot show one" in result.reason and "0.0625" in result.reason


def test_three_percent_slowdown_is_detected() -> None:
    counts = verdicts(timed_order(15), ratio=1.03, noise=gaussian(0.005))
    assert counts["slower"] >= 0.95 * TRIALS, counts


def _stopped(pairs: int, ratio: float, noise: Noise, seed: int = 3) -> int:
    """In how many of TRIALS comparisons the first `pairs` pairs are `hopeless`."""
    rng = random.Random(seed)
    stopped = 0
    for _ in range(TRIALS * 10):
        a, b = simulate(rng, timed_order(pairs), ratio=ratio, noise=noise)
        stopped += stats.hopeless(a, b, 1.02)
    return stopped


def test_stopping_early_ends_equal_and_slower_candidates_never_a_real_speedup() -> None:
    assert _stopped(4, 1.0, gaussian(0.005)) >= 0.95 * TRIALS * 10  # the same code: stopped
    assert _stopped(4, 1.5, gaussian(0.02)) == TRIALS * 10  # half the speed: always stopped
    assert _stopped(4, 1 / 1.05, gaussian(0.01)) == 0  # a real 5% speedup: never in 2000
    assert _stopped(4, 1 / 1.10, gaussian(0.05)) <= 0.01 * TRIALS * 10  # 10% under 5% noise
    assert not stats.hopeless([], [], 1.02)
    assert stats.hopeless([1.0, 1.0], [1.0, 0.99], 1.02)
    assert not stats.hopeless([1.0, 1.0], [1.0, 0.98], 1.02), "one pair 1.0204x faster is hope"


def test_a_comparison_stopped_early_is_not_faster_and_says_why() -> None:
    a, b = [1.0, 1.01, 0.99, 1.0], [2.0, 2.02, 1.98, 2.0]
    result = compare(a, b, planned=10)
    assert result.verdict == "not faster" and result.speedup == pytest.approx(0.5)
    assert result.reason.startswith("not faster: stopped after 4 of 10 pairs, none 1.020x")
    assert "4 pairs)" in result.reason
    full = compare(a * 2, b * 2, planned=8)  # every planned pair timed: the usual rule
    assert full.verdict == "slower"


def test_five_percent_speedup_is_faster() -> None:
    rng = random.Random(5)
    a, b = simulate(rng, timed_order(15), ratio=1 / 1.05, noise=gaussian(0.005))
    result = compare(a, b)
    assert result.verdict == "faster", result.reason
    assert 1.0 < result.ci_low < 1.05 < result.ci_high
    assert result.speedup == pytest.approx(1.05, rel=0.01)
    assert result.p_value < 0.001
    assert result.reason.startswith("faster: ") and "15 pairs" in result.reason


def test_one_percent_speedup_is_below_the_two_percent_minimum() -> None:
    rng = random.Random(6)
    a, b = simulate(rng, timed_order(15), ratio=1 / 1.01, noise=gaussian(0.002))
    result = compare(a, b)
    assert result.p_value < 0.05
    assert result.verdict == "no difference"
    assert "below the 1.020x minimum" in result.reason
    assert compare(a, b, min_speedup=1.005).verdict == "faster"


def test_significant_speedup_whose_interval_reaches_one_is_no_difference() -> None:
    # A bimodal workload: resampled medians jump between the modes, so the interval is wide.
    a = [1.002, 2.01, 0.995, 1.961, 1.985, 1.007, 0.998, 1.004, 1.986, 2.01]
    b = [1.0, 1.989, 0.963, 1.938, 2.02, 1.0, 0.976, 1.0, 1.98, 2.003]
    result = compare(a, b, min_speedup=1.01)
    assert result.p_value < 0.05 and result.speedup >= 1.01
    assert result.ci_low <= 1.0
    assert result.verdict == "no difference" and "interval reaches 1" in result.reason


def test_comparison_is_reproducible_from_its_seed() -> None:
    rng = random.Random(7)
    a, b = simulate(rng, timed_order(10), ratio=1.0, noise=gaussian(0.01))
    assert compare(a, b, seed=4) == compare(a, b, seed=4)
    assert compare(a, b, seed=4).ci_low != compare(a, b, seed=5).ci_low


def test_drift_alone_creates_no_verdict_when_pairs_alternate() -> None:
    # 3% slower per run, six times the noise and beyond the 2% minimum between neighbours.
    def drifting(order: Sequence[str]) -> Counter[str]:
        return verdicts(order, ratio=1.0, noise=gaussian(0.005), drift=0.03)

    assert drifting(timed_order(15))["no difference"] >= 0.95 * TRIALS
    # The same drift fools plain A B A B (B always runs later) and, worse, A...A B...B.
    assert drifting(["A", "B"] * 15)["slower"] > TRIALS / 2
    assert drifting(["A"] * 15 + ["B"] * 15)["slower"] == TRIALS


def test_pairing_finds_a_slowdown_smaller_than_the_drift_spread() -> None:
    rng = random.Random(8)
    a, b = simulate(rng, timed_order(15), ratio=1.03, noise=gaussian(0.005), drift=0.005)
    result = compare(a, b)
    assert result.baseline.spread > 0.03 and result.candidate.spread > 0.03
    assert result.verdict == "slower", result.reason


@pytest.mark.parametrize("side", ["A", "B"])
def test_one_run_ten_times_slower_does_not_flip_a_speedup(side: str) -> None:
    for seed in range(20):
        rng = random.Random(seed)
        a, b = simulate(rng, timed_order(15), ratio=1 / 1.05, noise=gaussian(0.005))
        (a if side == "A" else b)[seed % 15] *= 10
        assert compare(a, b, resamples=FAST_RESAMPLES).verdict == "faster", (seed, side)


def test_one_run_ten_times_slower_counts_no_more_than_any_slower_run() -> None:
    rng = random.Random(9)
    a, b = simulate(rng, timed_order(15), ratio=1.0, noise=gaussian(0.005))
    worst = max(range(15), key=lambda i: b[i] / a[i])
    b[worst] *= 10
    outlier = compare(a, b)
    b[worst] /= 9  # still the pair with the largest slowdown, now only a little larger
    assert outlier.p_value == compare(a, b).p_value
    assert outlier.verdict == compare(a, b).verdict == "no difference"


def test_identical_code_with_one_outlier_per_comparison_shows_no_difference() -> None:
    rng = random.Random(10)
    counts: Counter[str] = Counter()
    for trial in range(TRIALS):
        a, b = simulate(rng, timed_order(15), ratio=1.0, noise=gaussian(0.005))
        rng.choice([a, b])[rng.randrange(15)] *= 10
        counts[compare(a, b, seed=trial, resamples=FAST_RESAMPLES).verdict] += 1
    assert counts["no difference"] >= 0.95 * TRIALS, counts
