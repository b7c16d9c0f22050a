"""A speedup must hold on inputs the candidate has never seen (verify/changed_inputs.py): a
candidate fast only on the benchmark's own input (a memo it trusts when it recognizes that input)
is rejected; honest rewrites, whose gain shows over the same calls with changed inputs, are not,
whichever calls hold the gain; what the state check cannot vary is a note, not a verdict. Also
the wiring: the state runs' totals reach `FinalChecks.after_timing`."""

from __future__ import annotations

from pathlib import Path

from nvcc_opt.config import load
from nvcc_opt.runtime.report import Allocation, Kernel, Process, Report, State
from nvcc_opt.verify.changed_inputs import (
    StateTimes,
    changed_input_reasons,
    changed_input_share,
)
from nvcc_opt.verify.checks import RunOutput
from nvcc_opt.verify.corroborate import Observed
from nvcc_opt.verify.final import FinalChecks
from nvcc_opt.verify.kernels import RegionKernels
from nvcc_opt.verify.measure import Run
from nvcc_opt.verify.state import StateRuns, _settings, state_times
from nvcc_opt.workspace.runner import ScriptedRunner, completed

EXAMPLE = Path(__file__).parent.parent / "examples" / "saxpy-stencil"
SMOOTH = RegionKernels(frozenset({"smooth"}), frozenset({"smooth"}), True)
PAIR = RegionKernels(frozenset({"axpy", "rescale"}), frozenset({"fused"}), False)


def state(base_ns: int, cand_ns: int, calls: int = 401, spread: float = 0.0025) -> StateTimes:
    return StateTimes(base_ns, int(base_ns * (1 + spread)), cand_ns, calls, True)


def judged(timed_base: int, timed_cand: int, t: StateTimes | None) -> tuple[list[str], list[str]]:
    return changed_input_reasons([timed_base] * 9, [timed_cand] * 9, t)


def test_an_honest_gain_holds_on_changed_inputs() -> None:
    assert judged(4_000_000, 2_000_000, state(4_000_000, 2_050_000)) == ([], [])


def test_a_gain_only_on_the_benchmarks_own_input_is_rejected() -> None:
    reasons, notes = judged(4_000_000, 1_000_000, state(4_000_000, 3_950_000))
    assert notes == []
    assert len(reasons) == 1 and reasons[0].startswith("state: ")
    assert "4.00x" in reasons[0] and "1.01x" in reasons[0] and "recognizing" in reasons[0]


def test_a_table_of_the_first_calls_answer_is_caught_with_three_calls() -> None:
    """A baked-in answer for the benchmark's input makes call 1 nearly free in every run: in the
    state runs too (call 1 is the program's own input), but calls 2 and 3 run on changed data."""
    timed = (3_000_000, 300_000)  # 10x: all three calls answered from the table
    caught, _ = judged(*timed, state(3_000_000, 2_100_000, calls=3))  # only call 1 from it
    assert caught


def test_a_quarter_of_the_gain_on_changed_inputs_is_enough_and_less_is_not() -> None:
    # timed 3.0x: changed inputs must show at least 1.5x (a quarter of the gain, widened by the
    # original's 0.25% spread)
    assert judged(3_000_000, 1_000_000, state(3_000_000, 1_950_000))[0] == []  # 1.54x
    assert judged(3_000_000, 1_000_000, state(3_000_000, 2_150_000))[0] != []  # 1.40x


def test_small_gains_are_judged_only_beyond_the_noise() -> None:
    assert judged(1_080_000, 1_000_000, state(1_000_000, 1_010_000)) == ([], [])  # below 10%
    assert judged(1_150_000, 1_000_000, state(1_000_000, 1_000_000)) == ([], [])  # within 15%
    assert judged(1_300_000, 1_000_000, state(1_000_000, 1_000_000))[0] != []


def test_a_gain_in_the_first_call_shows_on_both_sides() -> None:
    """Call 1 is the program's own input in the state runs too: a rewrite whose gain is all in a
    heavy first call (50 ms -> 25 ms, then 100 light calls unchanged) is not rejected."""
    base, cand = 50_000_000 + 100 * 100_000, 25_000_000 + 100 * 100_000
    assert judged(base, cand, state(base, cand, calls=101)) == ([], [])


def test_the_allowances_widen_with_the_originals_own_noise() -> None:
    quiet = state(10_000_000, 8_000_000)  # 1.25x on changed inputs, the original's runs close
    assert judged(3_000_000, 1_000_000, quiet)[0] != []
    shared = state(10_000_000, 8_000_000, spread=0.15)
    assert judged(3_000_000, 1_000_000, shared)[0] == []
    memo = state(10_000_000, 10_700_000, spread=0.15)  # 4x timed, 1x changed: caught however noisy
    assert judged(4_000_000, 1_000_000, memo)[0] != []


def test_what_the_state_check_cannot_vary_is_a_note() -> None:
    for times, said in (
        (state(4_000_000, 4_000_000, calls=1), "one call per run"),
        (StateTimes(4_000_000, 4_000_000, 4_000_000, 401, False), "no float, double, half"),
        (state(400_000, 400_000), "too short"),
        (state(4_000_000, 0), "no GPU time"),
    ):
        reasons, notes = judged(4_000_000, 1_000_000, times)
        assert reasons == [] and len(notes) == 1, times
        assert notes[0].startswith("changed inputs: ") and said in notes[0], notes


def test_no_state_check_no_judgement() -> None:
    assert judged(4_000_000, 1_000_000, None) == ([], [])


def observed(ns: int, kernel: str = "smooth", complete: bool = True) -> Observed:
    kernels = (Kernel(401, ns, kernel, f"_Z{len(kernel)}{kernel}PKfPf"),)
    return Observed(1.0, Report((Process("channel-1.txt", complete, kernels),)))


def _config(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "build").mkdir(exist_ok=True)
    (tmp_path / "nvcc-opt.toml").write_text((EXAMPLE / "nvcc-opt.toml").read_text())
    return load(tmp_path)


def test_final_checks_judge_the_timed_runs_against_the_state_runs(tmp_path: Path) -> None:
    notes: list[str] = []
    checks = FinalChecks(_config(tmp_path), ScriptedRunner([]), "0", notes, None, SMOOTH)
    base = [observed(4_000_000) for _ in range(5)]
    memo = [observed(1_000_000) for _ in range(5)]
    assert checks.after_timing(base, memo) == ([], None)  # no state check: nothing to judge by
    checks.times.append(state(4_000_000, 4_000_000))
    reasons, ceiling = checks.after_timing(base, memo)
    assert reasons[0].startswith("state: ") and ceiling is None
    assert checks.after_timing(base, [observed(1_000_000, complete=False)] * 5) == ([], None)
    checks.times.append(state(4_000_000, 1_000_000))
    reasons, share = checks.after_timing(base, memo)  # 4x timed, 4x changed: passes ...
    assert reasons == [] and share == 1.0  # ... and keeps its 4x
    checks.times.append(state(4_000_000, 2_000_000))
    reasons, share = checks.after_timing(base, memo)  # 4x timed, 2x changed: passes the rule
    assert reasons == [] and share == 0.666667  # 2 of the 3 ms the region saves are saved there
    checks.times.append(state(4_000_000, 4_000_000, calls=1))
    assert checks.after_timing(base, memo) == ([], None) and notes[0].startswith("changed inputs")


def state_run(report: Report, allocations: tuple[Allocation, ...] = ()) -> Run:
    """A state run whose channel report holds `report`'s kernels and a state section."""
    process = report.processes[0]
    written = {(call, a.index): ("0a", "0b") for call in (1, 2, 3) for a in allocations}
    section = State(401, allocations, (), written, (), (), ())
    with_state = Report((Process(process.name, process.complete, process.kernels, state=section),))
    return Run(completed(0, ""), RunOutput(0, "", "", {}), None, Observed(1.0, with_state))


def test_the_state_runs_totals_are_read_with_each_sides_kernel_names() -> None:
    floats = (Allocation(0, "7f00", 4096, "float", "axpy(float*) parameter 0"),)
    pair = (Kernel(401, 30, "axpy", "_Z4axpyPf"), Kernel(401, 20, "rescale", "_Z7rescalePf"))
    base = Report((Process("c.txt", True, pair),))
    fused = Report((Process("c.txt", True, (Kernel(401, 35, "fused", "_Z5fusedPf"),)),))
    runs = StateRuns(state_run(base, floats), state_run(base, floats), state_run(fused))
    assert state_times(runs, PAIR) == StateTimes(50, 50, 35, 401, True)
    ints = (Allocation(0, "7f00", 4096, "other", "axpy(int*) parameter 0"),)
    runs = StateRuns(state_run(base, ints), state_run(base, ints), state_run(fused))
    assert state_times(runs, PAIR) == StateTimes(50, 50, 35, 401, False)


def test_each_state_check_changes_inputs_by_a_salt_of_its_own(tmp_path: Path) -> None:
    """The changed inputs cannot be known in advance: every check draws its salt (the three runs
    of one check share one settings list, so they change alike)."""
    config = _config(tmp_path)
    salts = {
        line for _ in range(4) for line in _settings(config, SMOOTH, tmp_path) if "salt" in line
    }
    assert len(salts) == 4 and all(s.split()[1].isdigit() for s in salts)


def test_a_real_gain_with_a_benchmark_shortcut_on_top_keeps_the_share_that_holds() -> None:
    """2x for real, 4x on the benchmark's own input: the rule lets it pass (the changed inputs
    keep a quarter of the gain); 2 of the 3 ms the region saves are saved there too, so of the
    printed time saved 2/3 is kept: 2x (tests/test_verify_changed_credit.py runs it through
    `measure`)."""
    from nvcc_opt.verify.credited import CHANGED, capped, credited_speedup
    from nvcc_opt.verify.stats import compare

    both = state(4_000_000, 2_000_000)
    assert judged(4_000_000, 1_000_000, both) == ([], [])
    share = changed_input_share([4_000_000] * 9, [1_000_000] * 9, both)
    assert share == 0.666667  # against the faster of the original's two runs
    timed = compare([4.0 + i / 100 for i in range(12)], [1.0 + i / 200 for i in range(12)])
    assert timed is not None and timed.speedup > 3.9
    kept, said = capped(timed, credited_speedup(timed.speedup, share), by=CHANGED)
    assert kept.verdict == "faster" and 1.9 < kept.speedup < 2.0
    assert kept.ci_high <= kept.speedup and "capped at" in kept.reason
    assert said[0].startswith("speedup: the printed times say 3.9")
    assert "on the inputs nvcc-opt changed" in said[0] and said[0].endswith("x kept")


def test_a_record_run_slowed_by_the_run_before_it_earns_no_credit() -> None:
    """The record run follows a candidate run. A pure shortcut for the benchmark's input (4x
    timed, 1x on changed inputs) that leaves the GPU 30% slower for the next process made the
    original look 1.15x slower on changed inputs and its own noise 30%: the rule passed it and
    credited up to 2.5x. Now the original's runs that far apart are a caveat, not a pass."""
    slowed = StateTimes(5_200_000, 4_000_000, 4_000_000, 401, True)
    reasons, notes = judged(4_000_000, 1_000_000, slowed)
    assert reasons == [] and len(notes) == 1
    assert notes[0].startswith("unmeasured: ") and "more than 5% apart" in notes[0]
    assert changed_input_share([4_000_000] * 9, [1_000_000] * 9, slowed) == 0.0


def test_the_share_takes_the_faster_original_run_and_no_allowance() -> None:
    """A slower record run does not raise the credit, nor does the rule's noise allowance: the
    share is the candidate against the faster of the original's runs, as measured."""
    one_slow = StateTimes(4_160_000, 4_000_000, 2_000_000, 401, True)  # 4% apart
    assert changed_input_share([4_000_000] * 9, [1_000_000] * 9, one_slow) == 0.666667
    assert changed_input_share([4_000_000] * 9, [1_000_000] * 9, None) is None
    assert changed_input_share([4_000_000] * 9, [1_000_000] * 9, state(400_000, 1)) is None


def test_a_region_that_is_a_small_part_of_the_run_keeps_the_time_it_saves() -> None:
    """A 3x region that is 1.5 of 10 ms (printed 1.111x) and 2.85x on changed inputs (data or
    noise) keeps 97% of the time it saves: 1.108x, where a share of speedup ratios kept 1.056x,
    and a printed 1.05x nothing at all."""
    from nvcc_opt.verify.credited import credited_speedup

    region = StateTimes(3_000_000, 3_000_000, round(3_000_000 / 2.85), 401, True)
    share = changed_input_share([1_500_000] * 9, [500_000] * 9, region)
    assert share is not None and 0.97 < share < 0.98
    assert round(credited_speedup(10 / 9, share), 3) == 1.108
    assert credited_speedup(1.05, share) > 1.048
