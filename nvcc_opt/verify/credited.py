"""The speedup a verification credits: never above what nvcc-opt measured itself.

The printed times are the program's word. Two of nvcc-opt's own measurements bound what is
kept: the region's GPU time and the runs' wall time in the timed runs (`OWN`,
verify/corroborate.py), and the region's speedup on the inputs the state check changed
(`CHANGED`, verify/changed_inputs.py: of the printed time saved, the share of the region's timed
GPU time saved that is saved there too, `credited_speedup`), so a gain that lives only on the
benchmark's own input is not credited. Pure.
"""

from __future__ import annotations

import dataclasses

from nvcc_opt.verify.stats import Comparison, Direction, Sample

OWN = (
    "nvcc-opt's own measurements (the region's GPU time, the runs' wall time)",
    "nvcc-opt's own measurement",
)
CHANGED = (
    "the share of the region's timed GPU time saved that is saved on the inputs nvcc-opt changed "
    "(the state check's runs) allows",
    "the share that holds on changed inputs",
)


def credited_speedup(printed: float, share: float) -> float:
    """The speedup kept when only `share` of the printed time saved is credited: the candidate's
    time is the baseline's less that share of the time it saved.

    >>> credited_speedup(4.0, 2 / 3)  # a real 2x with a shortcut to 4x: 2x kept
    2.0
    >>> round(credited_speedup(1.111, 0.9737), 3)  # a 3x region that is 15% of the run
    1.108
    >>> credited_speedup(1.14, 0.0)  # a pure shortcut
    1.0
    """
    if printed <= 1.0:
        return printed
    return round(1.0 / (1.0 - (1.0 - 1.0 / printed) * share), 9)


def capped(
    comparison: Comparison,
    most: float | None,
    min_speedup: float = 1.0,
    by: tuple[str, str] = OWN,
) -> tuple[Comparison, tuple[str, ...]]:
    """`comparison` with its speedup and interval no higher than `most` (what `by` measured:
    its long and short names), and the note saying so; unchanged when it is not above it. The
    candidate's times are the credited ones too (the printed ones slowed by the cap), so that
    whoever reads the medians (training's reward: t_base / t) reads the speedup kept; the
    printed figure stays in the note."""
    if most is None or comparison.verdict != "faster" or comparison.speedup <= most:
        return comparison, ()
    verdict: Direction = "faster" if most > 1.0 and most >= min_speedup else "not faster"
    kept = dataclasses.replace(
        comparison,
        candidate=_slowed(comparison.candidate, comparison.speedup / most),
        speedup=most,
        ci_low=min(comparison.ci_low, most),
        ci_high=min(comparison.ci_high, most),
        verdict=verdict,
        reason=f"{comparison.reason}; capped at {by[1]}",
    )
    return kept, (
        f"speedup: the printed times say {comparison.speedup:.3f}x, {by[0]} at most "
        f"{most:.3f}x: {most:.3f}x kept",
    )


def _slowed(sample: Sample, factor: float) -> Sample:
    """`sample` with every time `factor` times as long (its spread, relative, unchanged)."""
    return dataclasses.replace(
        sample,
        times=tuple(t * factor for t in sample.times),
        median=sample.median * factor,
        min=sample.min * factor,
        max=sample.max * factor,
    )
