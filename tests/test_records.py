"""Which verifications credit a speedup (records.unestablished), wherever speedups are counted:
bench reports here; training's rewards, collect and eval in their own tests."""

from __future__ import annotations

import doctest

from nvcc_opt import records
from nvcc_opt.bench.results import KernelRun, classify, credited, paper_speedup
from nvcc_opt.records import CAVEATS, unestablished

SANITIZER_PARTIAL = (
    "unmeasured: compute-sanitizer racecheck passed the candidate over its first 8 launches"
)
NO_SANITIZER = "unavailable: compute-sanitizer did not run (it or a GPU is missing here)"


def test_every_caveat_asks_review_for_force_and_run_caveats_withhold_credit() -> None:
    reasons = ("faster: 1.4x", SANITIZER_PARTIAL, NO_SANITIZER, "uncontained: subreaper")
    assert [r for r in reasons if r.startswith(CAVEATS)] == list(reasons[1:])
    assert unestablished(reasons) == (SANITIZER_PARTIAL, "uncontained: subreaper")
    assert unestablished(("faster: 1.4x", NO_SANITIZER)) == ()


def test_a_bench_report_credits_only_an_established_speedup() -> None:
    plain = ("faster: 1.4x",)
    assert credited("proposed", plain) and classify("proposed", plain) == "proposed"
    partial = (*plain, SANITIZER_PARTIAL)
    assert not credited("proposed", partial)
    assert classify("proposed", partial) == "held for review"
    run = KernelRun("app", "k.cu", "k", 1, "proposed", speedup=1.4, reasons=partial)
    assert paper_speedup(run) == 1.0  # correct as far as checked; its speedup not established
    assert paper_speedup(KernelRun("app", "k.cu", "k", 1, "proposed", 1.4, reasons=plain)) == 1.4
    assert credited("proposed", (*plain, NO_SANITIZER))  # the machine's lack: shown, not held


def test_the_doctests() -> None:
    assert doctest.testmod(records).failed == 0
