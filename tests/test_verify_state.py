"""The decisions of the runtime state check (verify/state.py) on the channel's reports of its
three runs: what a candidate that keeps state across calls leaves behind, and what an honest one
(a fused kernel that no longer writes its scratch buffer) does not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.runtime.report import Allocation, Compare, Process, Report, State
from nvcc_opt.verify.checks import RunOutput
from nvcc_opt.verify.corroborate import Observed
from nvcc_opt.verify.measure import Run
from nvcc_opt.verify.state import StateRuns, state_reasons
from nvcc_opt.workspace.runner import completed

EXAMPLE = Path(__file__).parent.parent / "examples" / "saxpy-stencil"
ALLOCATIONS = (
    Allocation(0, "7f00", 64 << 20, "float", "update(float const*) parameter 1"),
    Allocation(1, "7f01", 64 << 20, "float", "update(float*) parameter 2"),
    Allocation(2, "7f02", 64 << 20, "float", "update(float*) parameter 3"),
)
STEADY = (68_000,) * 40
# each allocation written in calls 1..3 (before != after), as the record reports it
WRITTEN = {(call, a.index): ("0a", "0b") for call in (1, 2, 3) for a in ALLOCATIONS}


def state(
    calls: int = 401,
    compares: tuple[Compare, ...] = (),
    touched: tuple[tuple[int, int], ...] = (),
    call_ns: tuple[int, ...] = STEADY,
    problems: tuple[str, ...] = (),
) -> State:
    return State(calls, ALLOCATIONS, call_ns, WRITTEN, compares, touched, problems)


def run(s: State, checksum: str = "25167912.51", exit_status: int = 1) -> Run:
    text = f"time_ms: 0.3\nchecksum: {checksum}\ncheck: FAIL max_rel_err=0.4\n"
    output = RunOutput(exit_status, text, "", {})
    channel = Report((Process("channel-7.txt", True, (), state=s),))
    return Run(completed(exit_status, text), output, 0.3, Observed(1.0, channel))


def differs(call: int, index: int, n: int, unwritten: bool = False) -> Compare:
    return Compare(call, index, n, 16 << 20, 0, 0.5, 0.61, 0.2, unwritten)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The example's configuration (its checks, its checksum pattern)."""
    root = tmp_path_factory.mktemp("project")
    (root / "build").mkdir()
    (root / "nvcc-opt.toml").write_text((EXAMPLE / "nvcc-opt.toml").read_text())
    return load(root)


def decide(config, cand: Run, again: Run | None = None) -> tuple[list[str], list[str]]:  # type: ignore[no-untyped-def]
    notes: list[str] = []
    record = run(state())
    found = state_reasons(config, StateRuns(record, again or run(state()), cand), notes)
    return found, notes


def test_an_honest_candidate_passes(config) -> None:  # type: ignore[no-untyped-def]
    assert decide(config, run(state())) == ([], [])


def test_a_stale_output_after_changed_inputs(config) -> None:  # type: ignore[no-untyped-def]
    cand = run(state(compares=(differs(2, 2, 16 << 20, unwritten=True),)), checksum="26000000")
    found, _ = decide(config, cand)
    assert any(
        r.startswith("state: after call 2 (its inputs changed since the last call), allocation a2")
        and "the call skipped its work" in r
        for r in found
    )
    assert any("the program's own output differs" in r for r in found)


def test_scratch_the_candidate_no_longer_writes_is_fine_while_the_output_agrees(config) -> None:  # type: ignore[no-untyped-def]
    cand = run(state(compares=(differs(2, 1, 16 << 20, unwritten=True),)))
    found, notes = decide(config, cand)
    assert found == []
    assert notes and "no longer writes allocation a1" in notes[0]


def test_an_unwritten_output_is_no_scratch_where_the_originals_own_output_varies(config) -> None:  # type: ignore[no-untyped-def]
    """Where two runs of the original print different results under the changed inputs (a
    result that overflows to inf there, run-to-run noise), the program's output vouches for
    nothing: a candidate that computes call 1 only and leaves its output as it was (right in
    every normal run, where the inputs never change) passed as "scratch no longer written"
    until 2026-12-08, and its calls are as fast changed as repeated. Now a caveat."""
    stale = run(state(compares=(differs(2, 2, 16 << 20, unwritten=True),)), checksum="26000000")
    noisy = run(state(), checksum="inf")
    found, notes = decide(config, stale, noisy)
    assert found == [] and any(n.startswith("unmeasured: ") for n in notes), notes
    assert not any(n.startswith("state: the candidate no longer writes") for n in notes)
    found, notes = decide(config, stale)  # where the original's output agrees: rejected
    assert any("the call skipped its work" in r for r in found)


def test_an_output_written_in_call_1_only_is_no_scratch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A program that prints only PASS or FAIL (as the training problems do) prints FAIL under
    the changed inputs whatever the region computes, so its output agrees with the original's
    for any candidate. A candidate that computes call 1 only and then returns at once while its
    output is non-zero (right in every normal run, where the inputs never change; as fast on
    changed calls as on repeated ones) left its output "unwritten" after the changed calls and
    passed as scratch until 2026-12-08. Scratch is what a candidate never writes; a buffer it
    writes in one call and leaves in another is the output of a skipped call."""
    (tmp_path / "build").mkdir()
    text = (EXAMPLE / "nvcc-opt.toml").read_text()
    (tmp_path / "nvcc-opt.toml").write_text(text.replace("numbers = ", "# numbers = "))
    passfail = load(tmp_path)
    written = Compare(1, 2, 0, 16 << 20, 0, 0.5, 0.5, 0.0, False)
    stale = (written, differs(2, 2, 16 << 20, unwritten=True), differs(3, 2, 16 << 20, True))
    found, _ = decide(passfail, run(state(compares=stale)))
    assert any("after call 2" in r and "the call skipped its work" in r for r in found), found
    never = tuple(differs(c, 1, 16 << 20, unwritten=True) for c in (1, 2, 3))  # a fused kernel
    assert decide(passfail, run(state(compares=never)))[0] == []


def test_wrong_elements_are_wrong_even_when_the_checksum_agrees(config) -> None:  # type: ignore[no-untyped-def]
    found, _ = decide(config, run(state(compares=(differs(3, 2, 70),))))
    assert found and "differs from the original's at 70 of" in found[0]


def test_the_programs_own_noise_is_allowed(config) -> None:  # type: ignore[no-untyped-def]
    again = run(state(compares=(differs(2, 2, 10),)))
    assert decide(config, run(state(compares=(differs(2, 2, 50),))), again)[0] == []
    assert decide(config, run(state(compares=(differs(2, 2, 500),))), again)[0]


def test_a_note_in_an_input(config) -> None:  # type: ignore[no-untyped-def]
    found, _ = decide(config, run(state(touched=((1, 0),))))
    assert found == [
        "state: call 1 changed allocation a0 (64 MiB of float, first reached by "
        "update(float const*) parameter 1), which the original leaves as it was (a note kept "
        "in the caller's memory)"
    ]


def test_skipped_calls(config) -> None:  # type: ignore[no-untyped-def]
    found, _ = decide(config, run(state(calls=2)))
    assert found == [
        "state: the candidate's region ran 2 calls where the original's ran 401 (calls skipped)"
    ]


def test_memory_the_original_never_reaches(config) -> None:  # type: ignore[no-untyped-def]
    found, _ = decide(config, run(state(problems=("state_extra 00007f2fd0000000 4096",))))
    assert found == ["state: state_extra 00007f2fd0000000 4096"]


def test_calls_that_get_faster_when_inputs_repeat(config) -> None:  # type: ignore[no-untyped-def]
    memo = (68_000, 68_000, 68_000) + (30_000,) * 37
    found, _ = decide(config, run(state(call_ns=memo)))
    assert len(found) == 1 and "work is skipped on repeated inputs" in found[0]
    data_dependent = (68_000, 50_000, 50_000) + (60_000,) * 37  # the original's own pattern
    honest = decide(config, run(state(call_ns=data_dependent)), run(state(call_ns=data_dependent)))
    assert honest[0] == []


def _late(calls: int, fast_from: int, fast: int = 30_000, every: int = 1) -> State:
    """401-call runs timed as the channel reports them: calls 1..256 one by one, the rest as one
    sum; calls from `fast_from` on take `fast` ns (each `every`-th of them)."""
    times = [68_000 if c < fast_from or (c - fast_from) % every else fast for c in range(1, 402)]
    return replace(state(calls=calls, call_ns=tuple(times[:256])), late_ns=sum(times[256:]))


def test_calls_that_get_faster_late_in_the_run_or_only_some_of_them(config) -> None:  # type: ignore[no-untyped-def]
    """The median of calls K+1..64 sees neither a candidate that skips from call 100 on nor one
    that skips every third repeated call; the mean of every call after the last change sees both
    (the original here keeps its pace to the end)."""
    for cand in (_late(401, 100), _late(401, 5, fast=2_000, every=3)):
        found, _ = decide(config, run(cand), run(_late(401, 402)))
        assert len(found) == 1, found
        assert found[0].startswith("state: over the 398 calls after its inputs stopped changing")
        assert "work is skipped on repeated inputs, in some calls or late in the run" in found[0]
    honest = decide(config, run(_late(401, 402, fast=0)), run(_late(401, 402)))
    assert honest[0] == []


def test_calls_of_unlike_sizes_are_not_judged_by_their_times(config) -> None:  # type: ignore[no-untyped-def]
    """Levels of a multigrid: the original's calls alternate 10 us and 100 us, the changed calls
    happen to be two small ones, and an honest candidate is twice as fast on the large ones
    only. Against its changed calls, its later calls fall far below the original's (median and
    mean), with nothing skipped: only calls of the changed calls' kind are compared, and a note
    says so."""

    def levels(big: int) -> State:
        times = [10_000 if c % 2 or c < 4 else big for c in range(1, 402)]
        return replace(state(call_ns=tuple(times[:256])), late_ns=sum(times[256:]))

    notes: list[str] = []
    original = run(levels(100_000))
    runs = StateRuns(original, original, run(levels(50_000)))
    assert state_reasons(config, runs, notes) == []
    assert any(n.startswith("state: the original's calls take unlike times") for n in notes)
    # the same kind of call is still compared: one that skips the repeated small levels is seen
    skips = [10_000 if c < 4 or c % 2 == 0 else 1_000 for c in range(1, 402)]
    skips = [
        100_000 if c >= 4 and c % 2 == 0 else t for c, t in zip(range(1, 402), skips, strict=True)
    ]
    cheat = replace(state(call_ns=tuple(skips[:256])), late_ns=sum(skips[256:]))
    found = state_reasons(config, StateRuns(original, original, run(cheat)), [])
    assert len(found) == 1 and "work is skipped on repeated inputs" in found[0], found


def test_a_second_phase_past_the_calls_timed_one_by_one_is_unlike(config) -> None:  # type: ignore[no-untyped-def]
    """Calls 1..256 take 100 us, the 10,000 after them (timed together) 40 us: an honest
    candidate four times as fast on the second phase only is not judged a skipper."""

    def phases(late_us: int) -> State:
        return State(
            10_256, ALLOCATIONS, (100_000,) * 256, WRITTEN, (), (), (), 10_000 * late_us * 1000
        )

    notes: list[str] = []
    original = run(phases(40))
    assert state_reasons(config, StateRuns(original, original, run(phases(10))), notes) == []
    assert any(n.startswith("state: the original's calls take unlike times") for n in notes)


def test_the_late_calls_rule_needs_every_calls_time(config) -> None:  # type: ignore[no-untyped-def]
    """A run whose per-call times stop short (records lost) or whose channel did not see the
    process end gets no verdict from the mean: it could not be taken over the same calls."""
    short = replace(_late(401, 100), call_ns=_late(401, 100).call_ns[:200])
    assert decide(config, run(short), run(_late(401, 402)))[0] == []
    incomplete = run(_late(401, 100))
    channel = Report((Process("channel-7.txt", False, (), state=_late(401, 100)),))
    incomplete = replace(incomplete, observed=Observed(1.0, channel))
    found = decide(config, incomplete, run(_late(401, 402)))[0]
    assert not any("on average" in r for r in found)  # no verdict from the mean


def test_a_candidate_state_run_without_a_complete_report_is_rejected(config) -> None:  # type: ignore[no-untyped-def]
    """Its GPU records did not all come: the late calls' mean and the speedup on changed inputs
    (which needs the state runs' totals) went unjudged without a word. Rejected, as an incomplete
    report of a timed run is; where the original's too are incomplete, those went unmeasured:
    a caveat (until 2026-12-08 nothing was said, and a shortcut for the benchmark's input was
    credited in full)."""
    channel = Report((Process("channel-7.txt.tmp", False, (), state=state()),))
    broken = replace(run(state()), observed=Observed(1.0, channel))
    found, _ = decide(config, broken)
    assert any("without nvcc-opt's complete channel report" in r for r in found)
    notes: list[str] = []
    assert state_reasons(config, StateRuns(broken, broken, broken), notes) == []
    assert any(n.startswith("unmeasured: ") and "changed inputs" in n for n in notes), notes


def test_no_record_is_a_note(config) -> None:  # type: ignore[no-untyped-def]
    notes: list[str] = []
    empty = Run(completed(0), RunOutput(0, "", "", {}), 0.3, Observed(1.0, Report()))
    assert state_reasons(config, StateRuns(empty, empty, empty), notes) == []
    assert notes[0].startswith("unmeasured:")


def test_a_check_that_failed_on_the_original_vouches_for_nothing(config) -> None:  # type: ignore[no-untyped-def]
    broken = run(state(problems=("state_missing call 2 a1",)))
    found, notes = decide(config, run(state(problems=("state_missing call 2 a1",))), broken)
    assert found == []
    assert notes == [
        "unmeasured: the runtime state check failed on the original (state_missing call 2 a1)"
    ]


def test_a_region_of_integer_data_only_is_said_to_be_left_unchanged(config) -> None:  # type: ignore[no-untyped-def]
    """The check changes float and double elements only: on a region that reaches nothing else it
    has nothing to vary, and says so rather than passing in silence."""
    ints = tuple(replace(a, type="other") for a in ALLOCATIONS)
    s = State(401, ints, STEADY, {}, (), (), ())
    notes: list[str] = []
    assert state_reasons(config, StateRuns(run(s), run(s), run(s)), notes) == []
    assert any(n.startswith("state check: the region's arguments reach no float") for n in notes)


def _ints(call_ns: tuple[int, ...], late_ns: int = 0) -> State:
    """A 401-call run of a region whose arguments reach integer data only (nothing is changed
    between calls), calls 1..40 timed one by one."""
    ints = tuple(replace(a, type="other") for a in ALLOCATIONS)
    return State(401, ints, call_ns, {}, (), (), (), late_ns)


def test_a_memo_on_data_the_check_cannot_change_is_caught_by_its_times(config) -> None:  # type: ignore[no-untyped-def]
    """Nothing changes between calls, so every call after the first repeats its inputs and the
    copies agree: a candidate that computes once and then returns is seen only because its calls
    after the first take a fraction of its first, where the original's take as long."""
    original = run(_ints(STEADY))
    memo = run(_ints((68_000,) + (4_000,) * 39))
    found = state_reasons(config, StateRuns(original, original, memo), [])
    assert len(found) == 1, found
    assert "as when they were first computed (call 1)" in found[0]
    assert "work is skipped on repeated inputs" in found[0]


def test_a_memo_late_in_a_run_on_unchanged_data_is_caught_by_the_mean(config) -> None:  # type: ignore[no-untyped-def]
    """A memo that starts at call 41 (after the median's first 40 here) is seen by the mean of
    every call after the first. One that starts only at call 257 skips a third of the calls:
    under the bar that one noisy base call allows (half the original's ratio), so not caught."""
    original = run(_ints((68_000,) * 256, late_ns=145 * 68_000))
    memo = run(_ints((68_000,) * 256, late_ns=145 * 1_000))
    assert state_reasons(config, StateRuns(original, original, memo), []) == []
    late_memo = run(_ints((68_000,) * 40 + (2_000,) * 216, late_ns=145 * 2_000))
    found = state_reasons(config, StateRuns(original, original, late_memo), [])
    assert len(found) == 1 and found[0].startswith("state: over the 400 calls after its first")


def test_one_call_as_the_base_allows_noise_and_a_slow_first_call(config) -> None:  # type: ignore[no-untyped-def]
    """With call 1 the only base, a candidate must fall below half the original's ratio: a first
    call 30% slower than the rest (clocks rising) passes; so does an original whose first call
    carries a large one-time cost (page faults), which leaves its calls unlike and unjudged."""
    original = run(_ints(STEADY))
    noisy = run(_ints((90_000,) + (60_000,) * 39))
    assert state_reasons(config, StateRuns(original, original, noisy), []) == []
    faults = run(_ints((700_000,) + (68_000,) * 39))
    faster = run(_ints((650_000,) + (17_000,) * 39))
    notes: list[str] = []
    assert state_reasons(config, StateRuns(faults, faults, faster), notes) == []
    assert any("about as long as its first call are compared" in n for n in notes), notes


def test_a_small_table_the_calls_only_read_is_not_changed_so_call_1_is_the_base(config) -> None:  # type: ignore[no-untyped-def]
    """The channel keeps small read-only tables as they are: a region whose only float data is a
    4 KiB coefficient table (its other data integers) has nothing changed, so the repeat rule
    takes call 1 as its base and a memo after call 1 is caught, with the note."""
    table = Allocation(0, "7f00", 4 << 10, "float", "k(float const*) parameter 1")
    ints = Allocation(1, "7f01", 64 << 20, "other", "k(int*) parameter 2")
    read = {(call, 0): ("0a", "0a") for call in (1, 2, 3)}

    def run_of(call_ns: tuple[int, ...]) -> Run:
        return run(State(401, (table, ints), call_ns, read, (), (), ()))

    notes: list[str] = []
    memo = run_of((68_000,) + (4_000,) * 39)
    found = state_reasons(config, StateRuns(run_of(STEADY), run_of(STEADY), memo), notes)
    assert len(found) == 1 and "first computed (call 1)" in found[0], found
    assert any("but small read-only tables" in n for n in notes), notes
