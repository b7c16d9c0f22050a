"""nvcc-opt's own measurements against what the candidate's runs printed (verify/corroborate.py):
forged time lines, early exits, skipped outside work and work moved off the GPU are rejected;
honest runs, including a fused kernel whose launch gaps no kernel duration shows, are not."""

from __future__ import annotations

from nvcc_opt.runtime.report import Kernel, Process, Report
from nvcc_opt.verify.corroborate import Observed, channel_reasons, owned_speedup
from nvcc_opt.verify.credited import capped
from nvcc_opt.verify.kernels import RegionKernels
from nvcc_opt.verify.stats import compare

PAIR = RegionKernels(frozenset({"axpy", "rescale"}), frozenset({"fused"}), False)
SMOOTH = RegionKernels(frozenset({"smooth"}), frozenset({"smooth"}), True)


def run(wall: float, complete: bool = True, **kernels: tuple[int, int]) -> Observed:
    """A run: wall seconds, and per kernel (launches, GPU ns)."""
    listed = tuple(Kernel(n, ns, name, f"_Z{name}") for name, (n, ns) in kernels.items())
    return Observed(wall, Report((Process("channel-1.txt", complete, listed),)))


def baseline(n: int = 8) -> list[Observed]:
    return [
        run(
            1.0 + 0.001 * i,
            axpy=(401, 26_000_000),
            rescale=(401, 23_000_000),
            sums=(401, 36_000_000),
        )
        for i in range(n)
    ]


def printed(speedup: float, n: int = 8) -> object:
    a = [0.287 + 0.0001 * i for i in range(n)]
    return compare(a, [x / speedup for x in a], min_speedup=1.02)


def reasons(cand: list[Observed], speedup: float, kernels: RegionKernels = PAIR) -> list[str]:
    base = baseline(len(cand)) if kernels is PAIR else smooth_base(len(cand))
    found, notes = channel_reasons(base, cand, kernels, printed(speedup), printed_is_wall=False)  # type: ignore[arg-type]
    assert not notes
    return found


def smooth_base(n: int) -> list[Observed]:
    return [run(1.0, smooth=(401, 27_000_000), sums=(401, 36_000_000)) for _ in range(n)]


def test_an_honest_fused_kernel_passes() -> None:
    cand = [run(0.99, fused=(401, 30_000_000), sums=(401, 36_000_000)) for _ in range(8)]
    assert reasons(cand, 1.2) == []


def test_launch_gaps_saved_by_fusion_need_only_a_quarter_of_the_printed_gain() -> None:
    # printed 1.40x; the region's GPU time 49 ms -> 40 ms is 1.22x: more than 1 + 0.40 / 4
    cand = [run(1.0, fused=(401, 40_000_000), sums=(401, 36_000_000)) for _ in range(8)]
    assert reasons(cand, 1.4) == []


def test_a_forged_time_line_is_not_backed_by_the_gpu() -> None:
    cand = [run(1.0, fused=(401, 49_000_000), sums=(401, 36_000_000)) for _ in range(8)]
    (found,) = reasons(cand, 1.8)
    assert found.startswith("channel: the printed times say 1.800x faster")
    assert "region GPU time 1.000x" in found


def test_an_early_exit_skips_outside_launches() -> None:
    cand = [run(0.5, fused=(1, 100_000), sums=(0, 0)) for _ in range(8)]
    found = reasons(cand, 1.0)
    assert any("kernel sums ran 0 times in a candidate run, 401 times" in r for r in found)


def test_the_last_outside_launch_may_differ_by_the_slack_only() -> None:
    ok = [run(1.0, fused=(401, 45_000_000), sums=(400, 36_000_000)) for _ in range(8)]
    assert reasons(ok, 1.0) == []
    short = [run(1.0, fused=(401, 45_000_000), sums=(390, 36_000_000)) for _ in range(8)]
    assert any("sums ran 390 times" in r for r in reasons(short, 1.0))


def test_a_kernel_the_baseline_never_launched() -> None:
    cand = [
        run(1.0, fused=(401, 45_000_000), sums=(401, 36_000_000), other=(1, 10)) for _ in range(8)
    ]
    assert any(
        "kernel other ran 1 times in a candidate run, 0 times" in r for r in reasons(cand, 1.0)
    )


def test_a_region_of_kernels_only_keeps_its_launch_count() -> None:
    cand = [run(1.0, smooth=(2, 100_000), sums=(401, 36_000_000)) for _ in range(8)]
    assert any("the region's kernel smooth ran 2 times" in r for r in reasons(cand, 1.0, SMOOTH))


def test_work_moved_off_the_gpu() -> None:
    no_kernel = [run(1.0, sums=(401, 36_000_000)) for _ in range(8)]
    assert any("launched none of its region's kernels" in r for r in reasons(no_kernel, 2.0))
    on_host = [run(9.0, fused=(401, 1_000), sums=(401, 36_000_000)) for _ in range(8)]
    assert any("take 9.000 s against" in r for r in reasons(on_host, 2.0))


def test_a_candidate_run_without_its_report() -> None:
    cand = [run(1.0, fused=(401, 45_000_000), sums=(401, 36_000_000)) for _ in range(7)]
    cand.append(run(1.0, False, fused=(401, 45_000_000)))
    (found,) = reasons(cand, 1.1)
    assert found.startswith("channel: 1 of 8 candidate runs ended without")
    missing = cand[:7] + [Observed(1.0, None)]
    assert reasons(missing, 1.1)[0].startswith("channel: 1 of 8")


def test_no_channel_in_the_baseline_is_a_note_not_a_verdict() -> None:
    base = [Observed(1.0, Report()) for _ in range(6)]
    cand = [Observed(1.0, Report()) for _ in range(6)]
    found, notes = channel_reasons(base, cand, PAIR, None, printed_is_wall=False)
    assert found == [] and notes[0].startswith("unmeasured:")


def test_the_kept_speedup_is_never_above_what_nvcc_opt_measured_itself() -> None:
    """Printed 1.40x passes corroboration (the region's GPU time shows 1.225x, more than a quarter
    of the gain), but the verdict keeps 1.225x: a gain only the program's clock shows is never
    reported, stored or rewarded."""
    cand = [run(1.0, fused=(401, 40_000_000), sums=(401, 36_000_000)) for _ in range(8)]
    owned = owned_speedup(baseline(8), cand, PAIR)
    assert owned is not None and abs(owned - 49 / 40) < 1e-9
    comparison = printed(1.4)
    kept, said = capped(comparison, owned, 1.02)  # type: ignore[arg-type]
    assert kept.speedup == owned and kept.ci_high <= owned and kept.verdict == "faster"
    assert said and "1.400x" in said[0] and "1.225x kept" in said[0]


def test_a_printed_gain_nvcc_opt_does_not_see_at_all_is_not_faster() -> None:
    kept, _ = capped(printed(1.3), 0.99, 1.02)  # type: ignore[arg-type]
    assert kept.verdict == "not faster" and kept.speedup == 0.99


def test_an_honest_gain_below_the_owned_one_is_kept_as_printed() -> None:
    cand = [run(0.99, fused=(401, 30_000_000), sums=(401, 36_000_000)) for _ in range(8)]
    comparison = printed(1.2)
    kept, said = capped(comparison, owned_speedup(baseline(8), cand, PAIR), 1.02)  # type: ignore[arg-type]
    assert kept is comparison and said == ()


def test_no_owned_speedup_without_every_report() -> None:
    cand = [run(0.99, complete=False, fused=(401, 30_000_000))] * 8
    assert owned_speedup(baseline(8), cand, PAIR) is None


def copying(wall: float, copy_ns: int, **kernels: tuple[int, int]) -> Observed:
    """A run whose GPU also spent `copy_ns` in memory copies and memsets."""
    listed = tuple(Kernel(n, ns, name, f"_Z{name}") for name, (n, ns) in kernels.items())
    return Observed(
        wall,
        Report((Process("channel-1.txt", True, listed, copy_ns // 2, copy_ns - copy_ns // 2),)),
    )


def test_work_moved_from_the_regions_kernels_into_copies_is_charged_to_the_region() -> None:
    """No kernel name says whose a copy or memset is: a region whose kernels shrank because their
    work went into copies (a device-to-device copy, a memset instead of a computed result) showed
    its printed gain in the region's GPU time, and was credited up to 40x."""
    base = [
        copying(1.0, 1_000_000 + i, smooth=(401, 40_000_000), sums=(401, 36_000_000))
        for i in range(8)
    ]
    moved = [
        copying(1.0, 40_000_000, smooth=(401, 1_000_000), sums=(401, 36_000_000)) for _ in range(8)
    ]
    found, _ = channel_reasons(base, moved, SMOOTH, printed(2.0), printed_is_wall=False)  # type: ignore[arg-type]
    assert any("region GPU time 1.0" in r for r in found), found
    assert owned_speedup(base, moved, SMOOTH) is not None
    assert owned_speedup(base, moved, SMOOTH) < 1.1  # type: ignore[operator]
    # the baseline's own copies, as many and as long, cost an honest candidate nothing
    honest = [
        copying(1.0, 1_000_000, smooth=(401, 20_000_000), sums=(401, 36_000_000)) for _ in range(8)
    ]
    assert channel_reasons(base, honest, SMOOTH, printed(1.8), printed_is_wall=False) == ([], [])  # type: ignore[arg-type]
    assert owned_speedup(base, honest, SMOOTH) == 2.0


def test_runs_with_no_gpu_time_at_all_are_unmeasured_not_corroborated() -> None:
    """CUPTI's activity records off (the channel's "no GPU timestamps"), or no kernel recorded:
    the region's GPU ratio was 0/0, read as infinitely faster, and any printed gain passed."""
    silent = Report((Process("channel-1.txt", True, (), notes=("no GPU timestamps",)),))
    base = [Observed(1.0, silent) for _ in range(8)]
    cand = [Observed(1.0, silent) for _ in range(8)]
    found, notes = channel_reasons(base, cand, SMOOTH, printed(3.0), printed_is_wall=False)  # type: ignore[arg-type]
    assert found == [] and len(notes) == 1
    assert notes[0].startswith("unmeasured: ") and "no GPU timestamps" in notes[0]
