"""The combined verdict: correct before timed, guards reject, big claims wait for a person."""

from __future__ import annotations

import json

import pytest

from nvcc_opt.verify.checks import CheckResult
from nvcc_opt.verify.stats import Comparison, compare
from nvcc_opt.verify.verdict import decide

PASSED = CheckResult(True, ())
FAILED = CheckResult(False, ("exit_status: 1", "missing: check: PASS"))
BASE = [1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00]


def timed(factor: float) -> Comparison:
    """A comparison whose candidate takes `factor` times the baseline's time, pair by pair."""
    return compare(BASE, [t * factor * (1 + 0.001 * (i % 3)) for i, t in enumerate(BASE)])


def test_a_faster_correct_candidate_is_improved() -> None:
    comparison = timed(1 / 1.2)
    verdict = decide(True, "", PASSED, comparison)
    assert (verdict.status, verdict.compiled, verdict.correct) == ("improved", True, True)
    assert verdict.comparison is comparison
    assert verdict.reasons == (comparison.reason,)


@pytest.mark.parametrize("factor, direction", [(1.0, "no difference"), (1.2, "slower")])
def test_no_difference_or_slower_is_no_improvement(factor: float, direction: str) -> None:
    comparison = timed(factor)
    assert comparison.verdict == direction
    verdict = decide(True, "", PASSED, comparison)
    assert verdict.status == "no improvement" and verdict.comparison is comparison
    assert verdict.reasons == (comparison.reason,)


def test_a_build_failure_is_rejected_without_a_speed() -> None:
    log = 'nvcc warning: something\nk.cu(12): error: identifier "x" is undefined\nmore\n'
    verdict = decide(False, log, None, timed(1 / 1.2))
    assert (verdict.status, verdict.compiled, verdict.correct) == ("rejected", False, False)
    assert verdict.comparison is None
    assert verdict.reasons == ('build_failed: k.cu(12): error: identifier "x" is undefined',)


@pytest.mark.parametrize(
    "log, reason",
    [
        ("", "build_failed: (no compiler output)"),
        ("\n  ptxas fatal: bad\n", "build_failed: ptxas fatal: bad"),
        ("error: " + "x" * 500, "build_failed: error: " + "x" * 193),
    ],
)
def test_build_failure_reason_is_one_short_line(log: str, reason: str) -> None:
    assert decide(False, log, None, None).reasons == (reason,)


def test_a_failed_check_is_rejected_without_a_speed() -> None:
    verdict = decide(True, "", FAILED, timed(1 / 1.2))
    assert (verdict.status, verdict.compiled, verdict.correct) == ("rejected", True, False)
    assert verdict.comparison is None
    assert verdict.reasons == FAILED.reasons


def test_a_failed_check_without_reasons_still_rejects() -> None:
    verdict = decide(True, "", CheckResult(False, ()), timed(1 / 1.2))
    assert verdict.status == "rejected" and verdict.reasons == ("check_failed: no reason given",)


def test_an_unchecked_candidate_is_rejected() -> None:
    verdict = decide(True, "", None, timed(1 / 1.2))
    assert verdict.status == "rejected" and verdict.comparison is None
    assert verdict.reasons == ("unchecked: no correctness check ran",)


def test_a_candidate_refused_before_its_check_says_why_first() -> None:
    """Guards and compiled-code lines refuse before any run: their reason is the verdict's first,
    not "unchecked" (a report that shows one reason showed only that, for every candidate of
    RAJAPerf's FIR, hiding that the allowlist could not read its region)."""
    refused = ["allowlist: the candidate cannot be preprocessed and read (its end is missing)"]
    verdict = decide(True, "", None, None, guard_reasons=refused)
    assert (verdict.status, verdict.correct) == ("rejected", False)
    assert verdict.reasons == tuple(refused)


def test_guard_reasons_reject_even_a_correct_faster_candidate() -> None:
    guards = ["guard: new stream", "guard: edit outside the region"]
    verdict = decide(True, "", PASSED, timed(1 / 1.2), guard_reasons=guards)
    assert (verdict.status, verdict.correct, verdict.comparison) == ("rejected", True, None)
    assert verdict.reasons == tuple(guards)


def test_every_rejection_reason_is_kept() -> None:
    verdict = decide(True, "", FAILED, None, guard_reasons=["guard: new stream"])
    assert verdict.reasons == (*FAILED.reasons, "guard: new stream")


def test_a_correct_untimed_candidate_is_no_improvement() -> None:
    verdict = decide(True, "", PASSED, None)
    assert (verdict.status, verdict.correct, verdict.comparison) == ("no improvement", True, None)
    assert verdict.reasons == ("untimed: no comparison was made",)


def test_a_speedup_above_the_ceiling_is_held_for_review() -> None:
    comparison = timed(1 / 12)
    verdict = decide(True, "", PASSED, comparison)
    assert verdict.status == "held for review" and verdict.comparison is comparison
    assert verdict.reasons[0].startswith("ceiling: 12.")
    assert "above the 10x sanity ceiling" in verdict.reasons[0]
    assert verdict.reasons[1] == comparison.reason
    assert decide(True, "", PASSED, comparison, ceiling=20.0).status == "improved"


def test_to_dict_is_plain_json_data() -> None:
    verdict = decide(True, "", PASSED, timed(1 / 1.2))
    data = verdict.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["status"] == "improved" and data["reasons"] == list(verdict.reasons)
    assert data["comparison"]["verdict"] == "faster"
    assert data["comparison"]["baseline"]["times"] == BASE
    assert decide(False, "", None, None).to_dict()["comparison"] is None
