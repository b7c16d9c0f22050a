"""A speedup must hold on inputs the candidate has never seen (verify/changed_inputs.py): a
candidate fast only on the benchmark's own input (a memo it trusts when it recognizes that input)
is rejected; honest rewrites, whose gain is the same on any input, are not; too few calls after
the state check's checked ones is a note, not a verdict. Also the wiring: the state check's call
times reach `FinalChecks.after_timing`, and a rejection there rejects the measurement."""

from __future__ import annotations

from pathlib import Path

from nvcc_opt.config import load
from nvcc_opt.runtime.report import Kernel, Process, Report
from nvcc_opt.verify.changed_inputs import CallTimes, changed_input_reasons, changed_speedup
from nvcc_opt.verify.corroborate import Observed
from nvcc_opt.verify.final import FinalChecks
from nvcc_opt.verify.kernels import RegionKernels
from nvcc_opt.workspace.runner import ScriptedRunner

EXAMPLE = Path(__file__).parent.parent / "examples" / "saxpy-stencil"
SMOOTH = RegionKernels(frozenset({"smooth"}), frozenset({"smooth"}), True)


def times(base_ns: int, cand_ns: int, calls: int = 60, checked: int = 3) -> CallTimes:
    """Call times of the three runs: the first `checked` calls slow (copies between them), the
    rest at the given per-call GPU times."""
    slow = (base_ns * 3,) * checked
    return CallTimes(
        (*slow, *(base_ns,) * (calls - checked)),
        (*slow, *(base_ns + 100,) * (calls - checked)),
        ((cand_ns * 3,) * checked + (cand_ns,) * (calls - checked)),
        checked,
    )


def judged(timed_base: int, timed_cand: int, t: CallTimes | None) -> tuple[list[str], list[str]]:
    return changed_input_reasons([timed_base] * 9, [timed_cand] * 9, t)


def test_an_honest_gain_holds_on_changed_inputs() -> None:
    assert judged(4_000_000, 2_000_000, times(10_000, 5_000)) == ([], [])


def test_a_gain_only_on_the_benchmarks_own_input_is_rejected() -> None:
    reasons, notes = judged(4_000_000, 1_000_000, times(10_000, 10_000))
    assert notes == []
    assert len(reasons) == 1 and reasons[0].startswith("state: ")
    assert "4.00x" in reasons[0] and "1.00x" in reasons[0] and "recognizing" in reasons[0]


def test_half_the_gain_on_changed_inputs_is_enough_and_less_is_not() -> None:
    # timed 2.0x: changed inputs must show at least 1.5x
    assert judged(2_000_000, 1_000_000, times(10_000, 6_500))[0] == []  # 1.54x
    assert judged(2_000_000, 1_000_000, times(10_000, 7_000))[0] != []  # 1.43x


def test_small_gains_are_judged_only_beyond_the_noise() -> None:
    # timed 1.08x, changed 1.0x: within 10% of each other
    assert judged(1_080_000, 1_000_000, times(10_000, 10_000)) == ([], [])
    # timed 1.25x, changed 0.98x: not noise
    assert judged(1_250_000, 1_000_000, times(10_000, 10_200))[0] != []


def test_the_allowances_widen_with_the_originals_own_noise() -> None:
    """On a GPU other work shares, every call's time moves: the original's two runs differ, and
    by as much the candidate's changed-input speedup may be off."""
    quiet = times(10_000, 8_000)  # 1.25x on changed inputs, the original's runs 1% apart
    assert judged(2_000_000, 1_000_000, quiet)[0] != []
    shared = CallTimes(quiet.record, tuple(int(t * 1.15) for t in quiet.again), quiet.candidate, 3)
    assert judged(2_000_000, 1_000_000, shared)[0] == []
    # a memo stays caught however noisy: 4x timed, 1x changed
    memo = CallTimes(shared.record, shared.again, (10_700,) * 60, 3)
    assert judged(4_000_000, 1_000_000, memo)[0] != []


def test_a_candidate_not_faster_in_the_timed_runs_is_not_judged() -> None:
    assert judged(1_000_000, 1_020_000, times(10_000, 30_000)) == ([], [])


def test_too_few_calls_after_the_checked_ones_is_a_note() -> None:
    reasons, notes = judged(4_000_000, 1_000_000, times(10_000, 10_000, calls=5))
    assert reasons == []
    assert notes and notes[0].startswith("unmeasured: ") and "2 timed calls" in notes[0]


def test_no_state_check_no_judgement() -> None:
    assert judged(4_000_000, 1_000_000, None) == ([], [])


def test_calls_without_a_time_in_any_run_are_left_out_and_the_checked_ones_never_count() -> None:
    t = CallTimes((9, 9, 9, 0, 10_000, 10_000, 10_000), (9, 9, 9, 10_000, 10_000, 10_000, 10_000),
                  (1, 1, 1, 5_000, 5_000, 5_000, 5_000), 3)  # fmt: skip
    assert changed_speedup(t) == (2.0, 3, 0.0)


def test_calls_too_short_to_time_are_not_judged() -> None:
    t = times(500, 500)
    assert changed_speedup(t)[0] is None


def observed(ns: int) -> Observed:
    kernels = (Kernel(401, ns, "smooth", "_Z6smoothPKfPf"),)
    return Observed(1.0, Report((Process("channel-1.txt", True, kernels),)))


def test_final_checks_judge_the_timed_runs_against_the_state_checks_call_times(
    tmp_path: Path,
) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "nvcc-opt.toml").write_text((EXAMPLE / "nvcc-opt.toml").read_text())
    notes: list[str] = []
    checks = FinalChecks(load(tmp_path), ScriptedRunner([]), "0", notes, None, SMOOTH)
    base = [observed(4_000_000) for _ in range(5)]
    memo = [observed(1_000_000) for _ in range(5)]
    assert checks.after_timing(base, memo) == []  # no state check ran: nothing to judge by
    checks.times.append(times(10_000, 10_000))
    assert checks.after_timing(base, memo)[0].startswith("state: ")
    checks.times.append(times(10_000, 2_500))
    assert checks.after_timing(base, memo) == []
    checks.times.append(times(10_000, 10_000, calls=4))
    assert checks.after_timing(base, memo) == [] and notes[0].startswith("unmeasured: ")


def test_each_state_check_changes_inputs_by_a_salt_of_its_own(tmp_path: Path) -> None:
    """The changed inputs cannot be known in advance: every check draws its salt (the three runs
    of one check share one settings list, so they change alike)."""
    from nvcc_opt.verify.state import _settings

    (tmp_path / "build").mkdir()
    (tmp_path / "nvcc-opt.toml").write_text((EXAMPLE / "nvcc-opt.toml").read_text())
    config = load(tmp_path)
    salts = {
        line for _ in range(4) for line in _settings(config, SMOOTH, tmp_path) if "salt" in line
    }
    assert len(salts) == 4 and all(s.split()[1].isdigit() for s in salts)
