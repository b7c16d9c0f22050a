"""Whether nvcc-opt's own measurements back what a candidate's runs printed. Pure.

The time a run prints and its PASS line come from the program, and the candidate's code is part
of the program: it can print a time line of its own, exit early after printing what the checks
want, or move its work where the printed time does not look. The channel (runtime/channel.cpp)
is not part of the program: it reads the GPU's timestamps of every kernel and counts launches.
Each rule compares the candidate's timed runs with the baseline's of the same measurement, and a
broken rule is a rejection with a reason starting `channel:`:

- Every run reports: a baseline run ended with a complete channel report from each CUDA process,
  so every candidate run must too (a process that ended without exit(), or that disabled the
  channel, gives none).
- Launches outside the region: the code outside the region is the same in both builds, so every
  kernel that is not the region's must run as often in a candidate run as in the baseline's (a
  slack of 1% or 2 launches for programs whose iteration counts follow rounding). A candidate that
  exits early, or skips the program's own work, launches fewer; one that launches a kernel the
  region does not define launches one the baseline never did. For a region of kernels only, its
  own kernels count the same way (the program outside launches them).
- The region still runs on the GPU: when the baseline's region kernels took GPU time, the
  candidate's must take some.
- A printed speedup must show in an owned measurement: when the printed times call the candidate
  faster by S, the region's GPU time or the whole run's wall time (both measured by nvcc-opt) must
  show at least a quarter of that gain: (S_owned - 1) >= (S - 1) / 4. Amdahl's law makes the
  region's GPU speedup at least the printed one when the region is what got faster; the quarter
  leaves room for launch gaps a fused kernel saves, which no kernel duration shows. The region's
  GPU time is charged with the GPU time of copies and memsets beyond the most any baseline run
  spent on them (no kernel name says whose they are: work moved from the region's kernels into
  copies would otherwise look gone), and it is no measurement where the baseline's region took
  none (a report with no GPU time at all is `unmeasured:`).
- Nothing moved out of the timed window: a candidate's runs may not take longer in wall time than
  the baseline's by more than max(10%, three spreads) plus 50 ms (work moved to the host, or
  outside what the printed time covers).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from nvcc_opt.runtime.report import Report
from nvcc_opt.verify.kernels import RegionKernels
from nvcc_opt.verify.stats import Comparison

GAIN_SHARE = 0.25  # of the printed gain an owned measurement must show
WALL_SLACK = 0.10
WALL_SLACK_S = 0.05
COUNT_SLACK = 0.01
COUNT_SLACK_MIN = 2


@dataclass(frozen=True)
class Observed:
    """What nvcc-opt itself saw of one run."""

    wall_s: float
    channel: Report | None  # None: the run had no channel


def channel_reasons(
    baseline: Sequence[Observed],
    candidate: Sequence[Observed],
    kernels: RegionKernels,
    printed: Comparison | None,
    *,
    printed_is_wall: bool,
) -> tuple[list[str], list[str]]:
    """(rejection reasons, notes) for the candidate's timed runs against the baseline's."""
    base = [o.channel for o in baseline if o.channel is not None]
    cand = [o.channel for o in candidate if o.channel is not None]
    if not base or len(base) < len(baseline) or not all(r.complete for r in base):
        why = next((n for r in base for n in r.notes), "no channel report from the baseline's runs")
        return [], [f"unmeasured: nvcc-opt's own GPU measurement did not run ({why})"]
    reasons: list[str] = []
    broken = sum(1 for o in candidate if o.channel is None or not o.channel.complete)
    if broken:
        reasons.append(
            f"channel: {broken} of {len(candidate)} candidate runs ended without nvcc-opt's "
            "channel report (the process did not exit normally, or the channel was disabled)"
        )
        return reasons, []
    if not any(r.gpu_ns() for r in base):
        why = next((n for r in base for n in r.notes), "no kernel records from the baseline's runs")
        return [], [f"unmeasured: nvcc-opt's own GPU measurement recorded no GPU time ({why})"]
    processes = {len(r.processes) for r in base}
    if any(len(r.processes) not in processes for r in cand):
        reasons.append(
            f"channel: the candidate's runs started {sorted({len(r.processes) for r in cand})} "
            f"CUDA processes, the baseline's {sorted(processes)}"
        )
    reasons += _launch_reasons(base, cand, kernels)
    reasons += _region_reasons(base, cand, kernels, baseline, candidate, printed, printed_is_wall)
    return reasons, []


def _launch_reasons(base: list[Report], cand: list[Report], kernels: RegionKernels) -> list[str]:
    counted_a = _outside(base, kernels.original, kernels)
    counted_b = _outside(cand, kernels.candidate, kernels)
    reasons = []
    for name in sorted(set().union(*counted_a, *counted_b)):
        low = min(c.get(name, 0) for c in counted_a)
        high = max(c.get(name, 0) for c in counted_a)
        slack = max(COUNT_SLACK_MIN, round(COUNT_SLACK * high)) if high else 0
        off = [
            c.get(name, 0) for c in counted_b if not low - slack <= c.get(name, 0) <= high + slack
        ]
        if off:
            what = "the region's kernel" if name in kernels.original else "kernel"
            seen = f"{low}" if low == high else f"{low} to {high}"
            reasons.append(
                f"channel: {what} {name} ran {off[0]} times in a candidate run, {seen} times in "
                "the baseline's (the code that launches it is the same in both)"
            )
    return reasons


def _outside(
    reports: list[Report], region: frozenset[str], kernels: RegionKernels
) -> list[dict[str, int]]:
    """Per run, launches of the kernels that must not change: those outside the region, and the
    region's own when the program outside launches them."""
    counted = []
    for report in reports:
        launches = report.launches()
        keep = {
            name: n
            for name, n in launches.items()
            if name not in region or kernels.each_launch_a_call
        }
        counted.append(keep)
    return counted


def _region_reasons(
    base: list[Report],
    cand: list[Report],
    kernels: RegionKernels,
    baseline: Sequence[Observed],
    candidate: Sequence[Observed],
    printed: Comparison | None,
    printed_is_wall: bool,
) -> list[str]:
    gpu_a = [r.gpu_ns(kernels.original) for r in base]
    gpu_b = [r.gpu_ns(kernels.candidate) for r in cand]
    reasons = []
    if statistics.median(gpu_a) > 0 and min(gpu_b) == 0:
        reasons.append(
            "channel: a candidate run launched none of its region's kernels on the GPU, where "
            "the baseline's region took GPU time"
        )
        return reasons
    wall_a = [o.wall_s for o in baseline]
    wall_b = [o.wall_s for o in candidate]
    if printed is not None and printed.verdict == "faster" and not printed_is_wall:
        owned = {
            "region GPU time": _region_ratio(base, cand, kernels),
            "wall time": _ratio(wall_a, wall_b),
        }
        needed = 1 + (printed.speedup - 1) * GAIN_SHARE
        if max(owned.values()) < needed:
            shown = ", ".join(f"{k} {v:.3f}x" for k, v in owned.items())
            reasons.append(
                f"channel: the printed times say {printed.speedup:.3f}x faster, nvcc-opt's own "
                f"measurements do not ({shown}; at least {needed:.3f}x expected)"
            )
    limit = _wall_limit(wall_a)
    if statistics.median(wall_b) > limit:
        reasons.append(
            f"channel: the candidate's runs take {statistics.median(wall_b):.3f} s against "
            f"{statistics.median(wall_a):.3f} s for the baseline's (work moved out of what the "
            "printed time covers)"
        )
    return reasons


def owned_speedup(
    baseline: Sequence[Observed], candidate: Sequence[Observed], kernels: RegionKernels
) -> float | None:
    """The larger of the two speedups nvcc-opt measured itself (the region's GPU time, the
    runs' wall time), or None without a complete channel report from every run. The speedup a
    verdict keeps is never above it (`credited.capped`): a printed gain the program's own
    clock shows and nvcc-opt's do not is not reported, even where it is within GAIN_SHARE."""
    base = [o.channel for o in baseline]
    cand = [o.channel for o in candidate]
    if not base or not cand or any(r is None or not r.complete for r in (*base, *cand)):
        return None
    wall = _ratio([o.wall_s for o in baseline], [o.wall_s for o in candidate])
    return max(_region_ratio([r for r in base if r], [r for r in cand if r], kernels), wall)


def _region_ratio(base: Sequence[Report], cand: Sequence[Report], kernels: RegionKernels) -> float:
    """The region's GPU speedup, the candidate charged with copy and memset time beyond the most
    of any baseline run; 0.0 (no measurement) where the baseline's region took no GPU time."""
    gpu_a = statistics.median(r.gpu_ns(kernels.original) for r in base)
    if gpu_a <= 0:
        return 0.0
    moved = statistics.median(r.copy_ns() for r in cand) - max(r.copy_ns() for r in base)
    gpu_b = statistics.median(r.gpu_ns(kernels.candidate) for r in cand) + max(0, moved)
    return gpu_a / gpu_b if gpu_b > 0 else float("inf")


def _ratio(a: Sequence[float], b: Sequence[float]) -> float:
    mb = statistics.median(b)
    return statistics.median(a) / mb if mb > 0 else float("inf")


def _wall_limit(wall: Sequence[float]) -> float:
    median = statistics.median(wall)
    if len(wall) >= 4:
        q = statistics.quantiles(wall, n=4)
        spread = (q[2] - q[0]) / median if median > 0 else 0.0
    else:
        spread = 0.0
    return median * (1 + max(WALL_SLACK, 3 * spread)) + WALL_SLACK_S
