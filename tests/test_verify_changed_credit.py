"""What a speedup that passes the changed-inputs rule is credited (verify/changed_inputs.py,
measure.py): the share of the region's timed GPU gain that holds on the inputs the state check
changed, never more. A candidate run end to end through `measure` with nvcc-opt's channel: a
stand-in application prints its time and writes the channel report the real one would.

The hole this closes (2026-12-08): a pure shortcut for the benchmark's own input (its region as
slow as the original's on any other input) was credited its whole printed speedup when that was
within the rule's 15% noise allowance (up to 32% where the original's two state runs were 5%
apart), and in full when the region's timed GPU gain was under the rule's 10% minimum (the
ceiling was not computed at all). A training reward of +0.15 instead of -1 for a cheat."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nvcc_opt.config import load
from nvcc_opt.verify.changed_inputs import StateTimes
from nvcc_opt.verify.final import FinalChecks
from nvcc_opt.verify.kernels import RegionKernels
from nvcc_opt.verify.measure import Attach, Build, Measurement, measure
from nvcc_opt.workspace.runner import Completed, ScriptedRunner

FIXTURE = Path(__file__).parent / "fixtures" / "hostapp"
SMOOTH = RegionKernels(frozenset({"smooth"}), frozenset({"smooth"}), True)
CALLS = 401
OUTSIDE_NS = 36_000_000  # the program's other kernel, the same in both builds


class ChannelApp:
    """The application on a GPU with the channel in it: per build, the printed milliseconds, the
    region's GPU nanoseconds and the wall seconds of a run (each run a little off, as real
    runs are, the candidate's by the same amounts as the baseline's)."""

    def __init__(self, base: tuple[float, int, float], cand: tuple[float, int, float]) -> None:
        self.sides = {"base": base, "cand": cand}
        self.runs = {"base": 0, "cand": 0}

    def run(self, argv: Sequence[str], *, env: Any = None, **_: Any) -> Completed:
        side = Path(argv[0]).parent.name
        n = self.runs[side] = self.runs[side] + 1
        jitter = 1 + 0.002 * ((n * 7) % 5)
        ms, ns, wall = self.sides[side]
        out = env.get("NVCC_OPT_CHANNEL_OUT")  # the check runs carry no channel
        if out:
            (Path(out) / "channel-1.txt").write_text(
                f"kernel {CALLS} {int(ns * jitter)} smooth _Z6smoothPKfS0_Pfi\n"
                f"kernel {CALLS} {OUTSIDE_NS} sums _Z4sumsPKfPdi\nend\n",
                encoding="utf-8",
            )
        stdout = f"checksum: 1.5\ntime_ms: {ms * jitter:.6f}\n"
        return Completed(tuple(argv), 0, stdout, "", False, wall * jitter, True, "", True)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "app")
    for folder in ("build", "base", "cand"):
        (tmp_path / "app" / folder).mkdir()
    return tmp_path / "app"


def timed(root: Path, app: ChannelApp, state: StateTimes) -> Measurement:
    config = load(root)
    notes: list[str] = []
    checks = FinalChecks(config, ScriptedRunner([]), "0", notes, None, SMOOTH)
    checks.times.append(state)  # what the state check's three runs measured
    return measure(
        config,
        app,  # type: ignore[arg-type]
        Build(root / "base"),
        Build(root / "cand"),
        repeats=10,
        gpu="0",
        attach=Attach(root / "libnvcc_opt_channel.so"),
        kernels=SMOOTH,
        after_timing=checks.after_timing,
    )


def credited(m: Measurement) -> float:
    """The speedup a verdict built on `m` keeps: 1.0 unless it is called faster."""
    assert m.check.ok, m.check.reasons
    c = m.comparison
    return c.speedup if c is not None and c.verdict == "faster" else 1.0


def shortcut(gain: float) -> ChannelApp:
    """As fast as the original on any input but the benchmark's, `gain` faster on that."""
    return ChannelApp((10.0, 27_000_000, 1.0), (10.0 / gain, int(27_000_000 / gain), 1.0))


# The changed inputs: the candidate as slow as the original (within 0.2%); the original's own
# two runs 0.25% apart, or 4% (a shared GPU, still under the 5% that makes them unmeasured).
NO_GAIN = StateTimes(27_000_000, 27_067_500, 27_050_000, CALLS, True)
NO_GAIN_NOISY = StateTimes(27_000_000, 28_080_000, 27_050_000, CALLS, True)


@pytest.mark.parametrize(
    ("gain", "state"),
    [(1.14, NO_GAIN), (1.08, NO_GAIN), (1.05, NO_GAIN), (1.25, NO_GAIN_NOISY)],
    ids=["within-the-noise-allowance", "under-the-minimum-gain", "small", "noisy-original"],
)
def test_a_pure_shortcut_for_the_benchmarks_input_earns_no_credit(
    root: Path, gain: float, state: StateTimes
) -> None:
    measured = timed(root, shortcut(gain), state)
    assert credited(measured) < 1.02, measured.comparison
    assert any("on the inputs nvcc-opt changed" in n for n in measured.notes), measured.notes


def test_an_honest_gain_keeps_its_credit(root: Path) -> None:
    honest = ChannelApp((10.0, 27_000_000, 1.0), (5.0, 13_500_000, 0.9))
    state = StateTimes(27_000_000, 27_067_500, 13_520_000, CALLS, True)  # 2x there too
    assert credited(timed(root, honest, state)) == pytest.approx(2.0, rel=0.01)


def test_launch_gaps_saved_show_in_the_wall_time_and_keep_their_credit(root: Path) -> None:
    """A fusion: the region's kernels only 1.05x faster on the GPU, on any input; the program
    1.3x faster by the launches it no longer makes (nvcc-opt's wall time shows it)."""
    fused = ChannelApp((10.0, 27_000_000, 1.3), (10.0 / 1.3, int(27_000_000 / 1.05), 1.0))
    state = StateTimes(27_000_000, 27_067_500, int(27_000_000 / 1.05), CALLS, True)
    assert credited(timed(root, fused, state)) == pytest.approx(1.3, rel=0.01)


def test_a_real_gain_with_a_shortcut_on_top_keeps_less_than_its_real_part(root: Path) -> None:
    """2x on any input, 4x on the benchmark's: half the region's timed gain is the shortcut, so
    half the printed speedup is kept (a cheat is not paid for its honest part in full)."""
    both = ChannelApp((10.0, 27_000_000, 1.0), (2.5, 6_750_000, 0.8))
    state = StateTimes(27_000_000, 27_067_500, 13_500_000, CALLS, True)
    assert credited(timed(root, both, state)) == pytest.approx(2.0, rel=0.01)


def test_the_credited_comparisons_medians_say_what_is_kept(root: Path) -> None:
    """Training's reward reads the verdict's comparison by its medians (t_base / t, grpo_env):
    a cap that lowered only `speedup` left them at the printed 4x, so a capped cheat was paid
    for the whole shortcut (until 2026-12-08). The candidate's times in a capped comparison are
    the credited ones; the printed figure stays in the note."""
    both = ChannelApp((10.0, 27_000_000, 1.0), (2.5, 6_750_000, 0.8))
    state = StateTimes(27_000_000, 27_067_500, 13_500_000, CALLS, True)
    c = timed(root, both, state).comparison
    assert c is not None and c.verdict == "faster"
    assert c.baseline.median / c.candidate.median == pytest.approx(c.speedup) == pytest.approx(2.0)
    assert max(c.candidate.times) / min(c.candidate.times) == pytest.approx(1.008)  # as measured


def test_the_own_measurements_cap_sets_the_medians_too() -> None:
    from nvcc_opt.verify.credited import capped
    from nvcc_opt.verify.stats import compare

    printed = compare([4.0 + i / 100 for i in range(12)], [1.0 + i / 200 for i in range(12)])
    kept, said = capped(printed, 1.5)
    assert kept.speedup == 1.5 and said
    assert kept.baseline == printed.baseline
    assert kept.baseline.median / kept.candidate.median == pytest.approx(1.5)
    assert kept.candidate.spread == pytest.approx(printed.candidate.spread)
