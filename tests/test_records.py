"""Which verifications credit a speedup (records.unestablished), wherever speedups are counted:
bench reports here; training's rewards, collect and eval in their own tests."""

from __future__ import annotations

import doctest

import pytest

from nvcc_opt import records
from nvcc_opt.bench.results import KernelRun, classify, credited, paper_speedup
from nvcc_opt.records import CAVEATS, CREDIT_UNAVAILABLE, unestablished

SANITIZER_PARTIAL = (
    "unmeasured: compute-sanitizer racecheck passed the candidate over its first 8 launches"
)
NO_SANITIZER = "unavailable: compute-sanitizer did not run (it or a GPU is missing here)"


def test_every_caveat_withholds_credit_unless_the_operator_credits_the_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A candidate that can write outside its build tree could make a tool look missing, so by
    default what the machine lacks withholds credit too; an operator who knows it does (a
    CPU-only machine) says so, and then only the run's own caveats withhold it."""
    reasons = ("faster: 1.4x", SANITIZER_PARTIAL, NO_SANITIZER, "uncontained: subreaper")
    assert [r for r in reasons if r.startswith(CAVEATS)] == list(reasons[1:])
    monkeypatch.delenv(CREDIT_UNAVAILABLE, raising=False)
    assert unestablished(reasons) == reasons[1:]
    assert unestablished(("faster: 1.4x", NO_SANITIZER)) == (NO_SANITIZER,)
    assert not credited("proposed", ("faster: 1.4x", NO_SANITIZER))
    monkeypatch.setenv(CREDIT_UNAVAILABLE, "1")
    assert unestablished(reasons) == (SANITIZER_PARTIAL, "uncontained: subreaper")
    assert credited("proposed", ("faster: 1.4x", NO_SANITIZER))


def test_a_bench_report_credits_only_an_established_speedup() -> None:
    plain = ("faster: 1.4x",)
    assert credited("proposed", plain) and classify("proposed", plain) == "proposed"
    partial = (*plain, SANITIZER_PARTIAL)
    assert not credited("proposed", partial)
    assert classify("proposed", partial) == "held for review"
    run = KernelRun("app", "k.cu", "k", 1, "proposed", speedup=1.4, reasons=partial)
    assert paper_speedup(run) == 1.0  # correct as far as checked; its speedup not established
    assert paper_speedup(KernelRun("app", "k.cu", "k", 1, "proposed", 1.4, reasons=plain)) == 1.4


def test_the_doctests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CREDIT_UNAVAILABLE, raising=False)
    assert doctest.testmod(records).failed == 0
